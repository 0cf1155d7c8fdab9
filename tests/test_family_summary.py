"""vcrnn_jax.papers.family.summary and experiments/family_summary."""

import csv
import json

import _binaries
import pytest

from vcrnn_jax.papers.family import summary


def _by_count(acc_train, acc_test, steps):
  return [{'count': 1, 'split': 'train', 'accuracy': acc_train,
           'ponder': steps, 'steps': steps},
          {'count': 2, 'split': 'test', 'accuracy': acc_test,
           'ponder': steps + 1, 'steps': steps + 1}]


_PN = {'cell': 'gru', 'hidden_size': 8, 'kl': 'paper',
       'ponder_epsilon': 0.05, 'lambda_p': 0.2, 'beta': 0.01}
_SETUP = dict(setting='extrapolation', bits=2, layout='random', updates=100)


def _write_runs(root):
  """Two PonderNet seeds (one solves its training range), one ACT run,
  two adding-task runs."""
  runs = {
      'par/pn_s0': {'method': 'pondernet', **_SETUP, 'seed': 0,
                    'model': _PN, 'accuracy': 0.6, 'ponder': 4.0,
                    'steps': 4.0, 'multiplications': 400.0,
                    'training_range_accuracy': 1.0,
                    'sample_accuracy': 0.5, 'last_step_mass': 0.1,
                    'seconds_per_update': 0.01,
                    'by_count': _by_count(1.0, 0.6, 4.0)},
      'par/pn_s1': {'method': 'pondernet', **_SETUP, 'seed': 1,
                    'model': _PN, 'accuracy': 0.8, 'ponder': 6.0,
                    'steps': 6.0, 'multiplications': 600.0,
                    'training_range_accuracy': 0.8,
                    'sample_accuracy': 0.7, 'last_step_mass': 0.3,
                    'seconds_per_update': 0.03,
                    'by_count': _by_count(0.8, 0.8, 6.0)},
      # An older run without training_range_accuracy: the per-count mean.
      'par/act_s0': {'method': 'act', **_SETUP, 'seed': 0,
                     'model': {'cell': 'gru', 'hidden_size': 8, 'tau': 0.01},
                     'accuracy': 0.5, 'ponder': 2.0, 'steps': 1.0,
                     'multiplications': 100.0, 'seconds_per_update': 0.002,
                     'by_count': _by_count(0.5, 0.5, 2.0)},
      'add/skip': {'model': 'skip_lstm', 'seed': 0, 'updates': 10,
                   'spec': {'budget': 1e-3},
                   'valid': {'mse': 2e-3, 'mse_over_baseline': 0.012,
                             'update_fraction': 0.4}},
      'add/lstm': {'model': 'lstm', 'seed': 0, 'updates': 10,
                   'spec': {'budget': 1e-4},
                   'valid': {'mse': 1e-3, 'mse_over_baseline': 0.006,
                             'update_fraction': 1.0}},
  }
  for name, results in runs.items():
    (root / name).mkdir(parents=True)
    (root / name / 'results.json').write_text(json.dumps(results))
  return runs


def test_rows_aggregate_and_table(tmp_path):
  _write_runs(tmp_path)
  runs = summary.read_runs(tmp_path)
  assert [r['run'] for r in runs] == ['add/lstm', 'add/skip', 'par/act_s0',
                                      'par/pn_s0', 'par/pn_s1']
  parity = summary.parity_rows(runs)
  pn_grid = 'kl=paper eps=0.05 lambda_p=0.2 beta=0.01'
  assert [(r['method'], r['grid'], r['training_range_accuracy'])
          for r in parity] == [('act', 'tau=0.01', 0.5),
                               ('pondernet', pn_grid, 1.0),
                               ('pondernet', pn_grid, 0.8)]
  setup = 'extrapolation, 2 elements (train 1-1), random, gru 8, 100 updates'
  assert {r['setup'] for r in parity} == {setup}
  assert summary.setup_slug(parity[0]) == 'extrapolation_2_random_gru8'
  adding = summary.adding_rows(runs)
  # A plain LSTM has no budget, whatever its spec says.
  assert [(r['model'], r['budget'], r['vc_target']) for r in adding] == [
      ('lstm', None, None), ('skip_lstm', 1e-3, None)]
  lines = summary.parity_table(parity).splitlines()
  assert lines[0].startswith('| method | grid | seeds | training range | '
                             'solved (>= 0.95) | test range (solved seeds) | '
                             'steps | mults / input | ms / update |')
  # Stage two only for the seeds that solved the training range: ACT none
  # (not judged), PonderNet seed 0 alone (0.6, not the mean 0.7).
  assert lines[2] == ('| act | tau=0.01 | 1 | 0.5 | 0/1 | not judged: '
                      'training range not learned | 1 | 100 | 2 | - | - |')
  assert lines[3] == (f'| pondernet | {pn_grid} | 2 | 0.9 ± 0.14 | 1/2 | '
                      '0.6 | 5 ± 1.4 | 500 ± 141 | 20 ± 14 | '
                      '0.6 ± 0.14 | 0.2 ± 0.14 |')
  points = summary.pareto_points(parity)
  assert points[1] == {'label': f'pondernet {pn_grid}', 'method': 'pondernet',
                       'multiplications': 500.0, 'accuracy': 0.9,
                       'test_accuracy': 0.6}
  assert points[0]['test_accuracy'] is None


def test_by_count_means_average_the_seeds(tmp_path):
  _write_runs(tmp_path)
  runs = summary.read_runs(tmp_path)
  setup = summary.parity_rows(runs)[0]['setup']
  series = summary.by_count_means(runs, setup)
  pn_label = 'pondernet kl=paper eps=0.05 lambda_p=0.2 beta=0.01'
  assert list(series) == ['act tau=0.01', pn_label]
  pn = series[pn_label]
  assert [r['split'] for r in pn] == ['train', 'test']
  assert pn[0]['accuracy'] == pytest.approx(0.9)
  assert pn[1]['steps'] == pytest.approx(6.0)
  assert summary.by_count_means(runs, 'another setup') == {}


def test_read_runs_refuses_an_empty_directory(tmp_path):
  with pytest.raises(ValueError, match='no results.json under'):
    summary.read_runs(tmp_path)


def test_binary_writes_tables_and_figures(tmp_path):
  _write_runs(tmp_path / 'runs')
  out = tmp_path / 'out'
  proc = _binaries.run('family_summary', [
      f'--runs={tmp_path / "runs"}', f'--out={out}'])
  assert proc.returncode == 0, proc.stderr
  with open(out / 'adding_runs.csv', encoding='utf-8') as f:
    rows = list(csv.DictReader(f))
  assert [(r['model'], r['update_fraction']) for r in rows] == [
      ('lstm', '1.0'), ('skip_lstm', '0.4')]
  with open(out / 'parity_runs.csv', encoding='utf-8') as f:
    assert len(list(csv.DictReader(f))) == 3
  text = (out / 'summary.md').read_text()
  assert '## Parity' in text and '## Adding task' in text
  assert '| skip_lstm | 0.001 | - | 2.00e-03 |' in text
  for png in ('error_vs_updates.png',
              'by_count_extrapolation_2_random_gru8.png',
              'compute_extrapolation_2_random_gru8.png'):
    assert (out / png).stat().st_size > 0
  # A directory that does not exist: one line, status 2.
  proc = _binaries.run('family_summary',
                              [f'--runs={tmp_path / "missing"}'])
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines() == [
      f'family_summary: error: --runs: no such directory: '
      f'{tmp_path / "missing"}']
