"""vcrnn_jax.papers.family.summary and experiments/family_summary."""

import csv
import json
import math

import _binaries
import pytest

from vcrnn_jax.papers.family import summary


def _by_count(acc_train, acc_test, steps):
  return [{'count': 1, 'split': 'train', 'accuracy': acc_train,
           'ponder': steps, 'steps': steps},
          {'count': 2, 'split': 'test', 'accuracy': acc_test,
           'ponder': steps + 1, 'steps': steps + 1}]


def _write_runs(root):
  """Two PonderNet seeds, one ACT run, two adding-task runs."""
  runs = {
      'par/pn_s0': {'method': 'pondernet', 'setting': 'extrapolation',
                    'seed': 0, 'bits': 2, 'model': {'lambda_p': 0.2},
                    'accuracy': 0.6, 'ponder': 4.0,
                    'seconds_per_update': 0.01,
                    'by_count': _by_count(1.0, 0.6, 4.0)},
      'par/pn_s1': {'method': 'pondernet', 'setting': 'extrapolation',
                    'seed': 1, 'bits': 2, 'model': {'lambda_p': 0.2},
                    'accuracy': 0.8, 'ponder': 6.0,
                    'seconds_per_update': 0.03,
                    'by_count': _by_count(0.8, 0.8, 6.0)},
      'par/act_s0': {'method': 'act', 'setting': 'extrapolation', 'seed': 0,
                     'bits': 2, 'model': {'tau': 0.01}, 'accuracy': 0.5,
                     'ponder': 2.0, 'seconds_per_update': 0.002,
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
  assert [(r['method'], r['knob'], r['train_accuracy']) for r in parity] == [
      ('act', 'tau=0.01', 0.5), ('pondernet', 'lambda_p=0.2', 1.0),
      ('pondernet', 'lambda_p=0.2', 0.8)]
  adding = summary.adding_rows(runs)
  # A plain LSTM has no budget, whatever its spec says.
  assert [(r['model'], r['budget'], r['vc_target']) for r in adding] == [
      ('lstm', None, None), ('skip_lstm', 1e-3, None)]
  rows = summary.aggregate(parity, summary.PARITY_KEYS,
                           summary.PARITY_VALUES)
  pn = rows[1]
  assert pn['runs'] == 2 and pn['accuracy'] == pytest.approx(0.7)
  assert pn['accuracy_std'] == pytest.approx(math.sqrt(0.02))
  assert rows[0]['runs'] == 1 and rows[0]['accuracy_std'] is None
  table = summary.markdown_table(rows, ('method', 'knob', 'accuracy'))
  lines = table.splitlines()
  assert lines[0] == '| method | knob | accuracy | runs |'
  assert lines[2] == '| act | tau=0.01 | 0.500 | 1 |'
  assert lines[3] == '| pondernet | lambda_p=0.2 | 0.700 ± 0.14 | 2 |'


def test_by_count_means_average_the_seeds(tmp_path):
  _write_runs(tmp_path)
  series = summary.by_count_means(summary.read_runs(tmp_path),
                                  'extrapolation')
  assert list(series) == ['act tau=0.01', 'pondernet lambda_p=0.2']
  pn = series['pondernet lambda_p=0.2']
  assert [r['split'] for r in pn] == ['train', 'test']
  assert pn[0]['accuracy'] == pytest.approx(0.9)
  assert pn[1]['steps'] == pytest.approx(6.0)
  assert summary.by_count_means(summary.read_runs(tmp_path),
                                'interpolation') == {}


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
  for png in ('error_vs_updates.png', 'by_count_extrapolation.png'):
    assert (out / png).stat().st_size > 0
  # A directory that does not exist: one line, status 2.
  proc = _binaries.run('family_summary',
                              [f'--runs={tmp_path / "missing"}'])
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines() == [
      f'family_summary: error: --runs: no such directory: '
      f'{tmp_path / "missing"}']
