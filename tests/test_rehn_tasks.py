"""Tests of the EI-REHN experiments' helpers (seeds, early stopping, tables)."""

import math

import pytest

from vcrnn_jax.papers.rehn import tasks as rehn_tasks
from vcrnn_jax.training import metric_writer


def _write_log(workdir, lines):
  with metric_writer.MetricsWriter(workdir) as writer:
    for step, metrics in lines:
      writer.write(step, metrics)


def test_at_best_validation_skips_diverged_evaluations(tmp_path):
  # A run that is best at step 2 and diverges (NaN, then huge) afterwards.
  _write_log(tmp_path, [(1, {'valid_mse': 0.5, 'test_mse': 0.6}),
                        (2, {'valid_mse': 0.2, 'test_mse': 0.25}),
                        (3, {'valid_mse': math.nan, 'test_mse': math.nan}),
                        (4, {'valid_mse': 9.0, 'test_mse': 9.5})])
  best = rehn_tasks.at_best_validation(tmp_path, 'valid_mse', ['test_mse'])
  assert best == {'best_step': 2, 'best_test_mse': 0.25}
  top = rehn_tasks.at_best_validation(tmp_path, 'valid_mse', ['test_mse'],
                                      mode='max')
  assert top['best_step'] == 4
  missing = rehn_tasks.at_best_validation(tmp_path / 'none', 'valid_mse',
                                          ['test_mse'])
  assert math.isnan(missing['best_step'])
  with pytest.raises(ValueError, match="'min' or 'max'"):
    rehn_tasks.at_best_validation(tmp_path, 'valid_mse', [], mode='best')


def test_results_table_shows_median_range_and_early_stopped_mean(tmp_path):
  from vcrnn_jax.training import sweep
  fields = ('model', 'cell', 'hidden_size', 'seed', 'params', 'test_mse_e3',
            'mean_depth', 'best_test_mse_e3')
  rows = [dict(model='rhn20_d5', cell='rhn', hidden_size=20, seed=s,
               params=4322, test_mse_e3=v, mean_depth=math.nan,
               best_test_mse_e3=b)
          for s, (v, b) in enumerate([(0.2, 0.2), (3.0, 0.4), (0.3, 0.3)])]
  path = tmp_path / 't.csv'
  sweep.upsert_rows(path, fields, rows, key=('model', 'seed'))
  table = rehn_tasks.results_table(path, rehn_tasks.TABLE1,
                                   metric='test_mse_e3', label='MSE',
                                   early_stopped='best_test_mse_e3')
  header, rule, line = table.splitlines()
  assert 'at best valid' in header and rule.count('---') == 7
  assert '| 4322 (4322) | 1.167 ± 1.297 (0.53 ± 0.02) |' in line
  assert '| 0.300 [0.200, 3.000] |' in line
  assert '| 0.300 ± 0.082 (3 of 3) | 3 | - |' in line
