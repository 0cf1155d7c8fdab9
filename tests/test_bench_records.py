"""Benchmark records: written by the suite, read by ``python -m
experiments.results``, quoted by docs/performance.md."""

import json
import os
import re
import subprocess
import sys
from unittest import mock

from benchmarks import _record
from experiments.reports import bench_records, records, results
from tests import _binaries

REPO = _binaries.REPO
RUNS = {'unpinned': [[{'cell': 'gru', 'hidden': 16, 'ours/flax': 1.2,
                       'linen/flax': 1.0, 'ms_flax': 3.0}],
                     [{'cell': 'gru', 'hidden': 16, 'ours/flax': 1.4,
                       'linen/flax': 1.1, 'ms_flax': 3.2}]],
        'pinned': [[{'cell': 'gru', 'hidden': 16, 'ours/flax': 0.9,
                     'linen/flax': 1.0, 'ms_flax': 5.0}],
                   [{'cell': 'gru', 'hidden': 16, 'ours/flax': 1.0,
                     'linen/flax': 1.0, 'ms_flax': 5.5}]]}


def _make(quick=True, xla_flags=None):
  # The record keeps the run's XLA_FLAGS; the tests' own (conftest.py) are
  # not the benchmark's.
  env = {k: v for k, v in os.environ.items() if k != 'XLA_FLAGS'}
  if xla_flags:
    env['XLA_FLAGS'] = xla_flags
  with mock.patch.dict(os.environ, env, clear=True):
    return _record.make(
        'flax_rnn', RUNS, command='python -m benchmarks --only=flax_rnn',
        started='2025-01-02T03:04:05+00:00', seconds=12.34, machine='box',
        settings={'quick': quick, 'pinned_cpu': 0})


def test_record_holds_provenance_settings_and_aggregated_rows(tmp_path):
  record = _make()
  assert record['commit'] == 'unknown' or re.fullmatch(
      r'[0-9a-f]{40}', record['commit'])
  assert isinstance(record['dirty'], bool)
  assert record['machine']['name'] == 'box' and record['machine']['cores']
  assert {'python', 'jax', 'jaxlib', 'flax', 'optax'} <= set(
      record['versions'])
  assert record['settings'] == {
      'quick': True, 'repeats': 2, 'affinities': ['unpinned', 'pinned'],
      'pinned_cpu': 0, 'in_process': False, 'flags': []}
  assert record['machine']['device'].endswith('(cpu)')
  assert record['ratios'] == ['ours/flax', 'linen/flax']
  row, = record['rows']
  assert row['ours/flax']['unpinned'] == {'median': 1.3, 'min': 1.2,
                                          'max': 1.4, 'n': 2}
  path = _record.write(record, tmp_path / 'records')
  assert path.name == 'flax_rnn.json'
  text = path.read_text()
  # One line per measurement's statistics, the columns in their order.
  assert '"unpinned": {"median": 1.3, "min": 1.2, "max": 1.4, "n": 2}' in text
  assert bench_records.read_records(path.parent) == [
      {**json.loads(text), 'name': 'flax_rnn'}]
  assert list(json.loads(text)['rows'][0]) == list(RUNS['unpinned'][0][0])


def test_fragment_of_a_record(tmp_path):
  record = _make(quick=False)
  out, = results.outputs({}, [record])
  assert out.path == 'performance/flax_rnn.md'
  head, blank, header, rule, row, end = out.text.split('\n')[:6]
  assert head.startswith('**`benchmarks.flax_rnn`**: `python -m benchmarks '
                         '--only=flax_rnn` at commit ')
  assert 'on box (' in head and 'default settings' in head
  assert 'median (min–max) of 2 runs per affinity' in head
  assert header == ('| cell | hidden | ours/flax | pinned | linen/flax | '
                    'pinned | ms_flax | pinned |')
  assert row == ('| gru | 16 | 1.3× (1.2–1.4) | 0.95× (0.9–1) | '
                 '1.05× (1–1.1) | 1× | 3.1 (3–3.2) | 5.25 (5–5.5) |')
  # The page's block is filled with it, and left empty without a record.
  page = ('x\n<!-- generated: performance/flax_rnn begin -->\n'
          '<!-- generated: performance/flax_rnn end -->\n')
  filled = results.fill_blocks(page, results.fragments([out]))
  assert records.marked_blocks(filled) == {'performance/flax_rnn': out.text}
  assert results.fill_blocks(filled, {}) == page


def test_no_benchmark_records_no_tables(tmp_path):
  assert bench_records.read_records(tmp_path / 'missing') == []
  assert results.benchmark_outputs([]) == []
  (tmp_path / 'odd.json').write_text('{"format": 1}')
  try:
    bench_records.read_records(tmp_path)
  except ValueError as e:
    assert 'not a benchmark record' in str(e)
  else:
    raise AssertionError('a run record was read as a benchmark record')


def test_performance_page_quotes_the_benchmark_records():
  benchmarks = bench_records.read_records(REPO / results.BENCHMARK_RECORDS)
  fragments = results.fragments(results.benchmark_outputs(benchmarks))
  for path in results.PERFORMANCE:
    text = (REPO / path).read_text()
    blocks = records.marked_blocks(text)
    assert blocks and all(n.startswith('performance/') for n in blocks)
    assert results.fill_blocks(text, fragments) == text, (
        f'{path}: a benchmark table is stale; run python -m '
        'experiments.results')


def test_generator_writes_and_checks_benchmark_tables(tmp_path):
  _record.write(_make(), tmp_path / 'bench')
  (tmp_path / 'runs').mkdir()
  command = [sys.executable, '-m', 'experiments.results',
             f'--records={tmp_path / "runs"}',
             f'--benchmark_records={tmp_path / "bench"}',
             f'--out={tmp_path / "generated"}', '--noquote']
  subprocess.run(command, check=True, cwd=REPO, capture_output=True)
  fragment = tmp_path / 'generated' / 'performance' / 'flax_rnn.md'
  assert fragment.read_text().startswith('**`benchmarks.flax_rnn`**')
  subprocess.run(command + ['--check'], check=True, cwd=REPO,
                 capture_output=True)
  # Without records, nothing to write and nothing stale.
  (tmp_path / 'bench' / 'flax_rnn.json').unlink()
  done = subprocess.run(command[:-2] + [f'--out={tmp_path / "none"}',
                                        '--noquote', '--check'],
                        cwd=REPO, capture_output=True, text=True)
  assert done.returncode == 0, done.stdout + done.stderr


def test_provenance_names_a_gpu_and_the_flags_given():
  record = _make(quick=False)
  record['machine']['device'] = 'NVIDIA H200 (gpu)'
  record['settings']['flags'] = ['--sizes=256x64x100', '--dtypes=bfloat16']
  line = bench_records.provenance(record)
  assert 'on box (NVIDIA H200 (gpu); ' in line
  assert 'flags `--sizes=256x64x100 --dtypes=bfloat16`;' in line
  record['machine']['device'] = 'cpu (cpu)'
  record['settings']['flags'] = []
  line = bench_records.provenance(record)
  assert '(cpu)' not in line and 'default settings;' in line
  # XLA's own flags (command buffers) are part of what was measured.
  record['settings']['xla_flags'] = '--xla_gpu_enable_command_buffer=+WHILE'
  line = bench_records.provenance(record)
  assert ('default settings, XLA_FLAGS '
          '`--xla_gpu_enable_command_buffer=+WHILE`;') in line


def test_a_record_keeps_the_xla_flags_of_its_run():
  assert 'xla_flags' not in _make()['settings']
  flags = '--xla_gpu_enable_command_buffer=+WHILE'
  assert _make(xla_flags=flags)['settings']['xla_flags'] == flags


def test_records_of_another_machine_are_read_from_a_subfolder(tmp_path):
  record = _make()
  _record.write(record, tmp_path)
  _record.write(record, tmp_path / 'h200')
  names = [r['name'] for r in bench_records.read_records(tmp_path)]
  assert names == ['flax_rnn', 'h200/flax_rnn']
  outs = results.benchmark_outputs(bench_records.read_records(tmp_path))
  assert [o.path for o in outs] == ['performance/flax_rnn.md',
                                    'performance/h200/flax_rnn.md']
