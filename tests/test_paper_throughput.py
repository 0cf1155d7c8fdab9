"""benchmarks.paper_throughput: rates read off runs, provenance off their
manifests (the runs' machine, not the one that reads them)."""

import json

import pytest

from benchmarks import paper_throughput


def _workdir(tmp_path, rates=(10.0, 20.0, 30.0)):
  workdir = tmp_path / 'run'
  workdir.mkdir()
  rows = [{'step': 50 * (i + 1), 'train_ponder': 2.0 + i,
           'steps_per_sec': r} for i, r in enumerate(rates)]
  (workdir / 'metrics.jsonl').write_text(
      ''.join(json.dumps(r) + '\n' for r in rows))
  manifest = {'started': 1795736042.3, 'commit': 'a' * 40, 'dirty': False,
              'versions': {'jax': '0.11.2', 'python': '3.12.3'},
              'cpu': {'model': 'Xeon', 'cores': 16, 'memory_gib': 125.9},
              'device': {'kind': 'NVIDIA H200', 'platform': 'gpu',
                         'count': 1}}
  (workdir / 'manifest.jsonl').write_text(json.dumps(manifest) + '\n')
  return workdir


def test_the_last_window_gives_the_rate_and_the_projection(tmp_path):
  row, = paper_throughput.rows_of('act_sort', _workdir(tmp_path))
  assert row['steps_per_sec'] == 30.0 and row['step'] == 150
  assert row['adaptive'] == 'ponder' and row['adaptive_value'] == 4.0
  # The first window's rate (its batches still warming up) is left out.
  assert (row['min_window'], row['max_window']) == (20.0, 30.0)
  assert row['projected_h'] == round(16_000_000 / 30.0 / 3600, 2)


def test_the_record_names_the_runs_machine(tmp_path):
  workdir = _workdir(tmp_path)
  record = paper_throughput.make_record(
      [('act_sort', '=', str(workdir))], ['--runs=x'], 'H200')
  assert record['commit'] == 'a' * 40 and not record['dirty']
  assert record['machine']['device'] == 'NVIDIA H200 (gpu)'
  assert record['machine']['cpu'] == 'Xeon'
  assert record['versions']['jax'] == '0.11.2'
  assert record['started'].startswith('2026-11-26')


def test_a_run_without_rates_is_one_clear_error(tmp_path):
  workdir = _workdir(tmp_path, rates=())
  with pytest.raises(ValueError, match='no evaluation window'):
    paper_throughput.rows_of('vc_ptb', workdir)


def test_bad_runs_flag_exits_with_one_line(capsys):
  with pytest.raises(SystemExit):
    paper_throughput.main(['--runs=nope=/x'])
  assert '--runs takes BINARY=WORKDIR' in capsys.readouterr().err
