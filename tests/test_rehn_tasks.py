"""Tests of the EI-REHN experiments' helpers (seeds, early stopping, tables)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import rehn
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


def test_model_spec_holds_the_gate_open_and_sets_the_initial_bound():
  spec = rehn_tasks.ModelSpec('ei_rehn', 8, max_depth=4)
  open_spec = spec._replace(open_gate=True)
  inside = spec._replace(alpha_init=0.25)
  assert (spec.name, open_spec.name, inside.name) == (
      'ei_rehn8_rmax4', 'ei_rehn8_rmax4_open', 'ei_rehn8_rmax4_alpha0.25')
  key = jax.random.key(0)
  params = rehn_tasks.build_cell(open_spec).init(key, 3)
  assert 'elastic' not in params
  cell = rehn_tasks.build_cell(open_spec)
  x = jnp.ones((2, 3), jnp.float32)
  _, out = cell.apply(params, cell.initial_state(2), x)
  assert out.depth.tolist() == [4, 4]
  bound = rehn.depth_bound(rehn_tasks.build_cell(inside).init(key, 3))
  np.testing.assert_allclose(float(bound), 3.12, atol=0.01)   # Eq. 15
