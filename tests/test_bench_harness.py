"""The benchmark suite's protocol: repeats joined into medians and ranges,
unpinned and pinned, each run in a fresh process."""

import json
import os
import subprocess
import sys

import pytest

from benchmarks import __main__ as suite
from benchmarks import _repeat
from experiments.reports import bench_records

RUNS = {
    'unpinned': [
        [{'case': 'a', 'M': 10, 'N': 3.0, 'x/y': 1.0, 'ms': 2.0},
         {'case': 'b', 'M': 10, 'N': 3.5, 'x/y': 2.0, 'ms': 4.0},
         {'case': 'b', 'M': 20, 'N': 3.5, 'x/y': 3.0, 'ms': 6.0}],
        # The same rows in another order, the two 'b' rows by position.
        [{'case': 'b', 'M': 10, 'N': 3.5, 'x/y': 2.4, 'ms': 4.4},
         {'case': 'a', 'M': 10, 'N': 3.0, 'x/y': 1.2, 'ms': 2.2},
         {'case': 'b', 'M': 20, 'N': 3.5, 'x/y': 3.6, 'ms': 6.6}],
        [{'case': 'a', 'M': 10, 'N': 3.0, 'x/y': 1.1, 'ms': 2.1},
         {'case': 'b', 'M': 10, 'N': 3.5, 'x/y': 2.2, 'ms': 4.2},
         {'case': 'b', 'M': 20, 'N': 3.5, 'x/y': float('nan'), 'ms': 6.3}]],
    'pinned': [
        [{'case': 'a', 'M': 10, 'N': 3.0, 'x/y': 0.9, 'ms': 3.0},
         {'case': 'b', 'M': 10, 'N': 3.5, 'x/y': 1.9, 'ms': 5.0},
         {'case': 'b', 'M': 20, 'N': 3.5, 'x/y': 2.9, 'ms': 7.0}]],
}


def test_aggregate_matches_rows_and_takes_median_and_range():
  rows = bench_records.aggregate(RUNS, ratios=('x/*',), times=('ms',))
  assert [(r['case'], r['M'], r['N']) for r in rows] == [
      ('a', 10, 3.0), ('b', 10, 3.5), ('b', 20, 3.5)]
  assert rows[0]['x/y'] == {
      'unpinned': {'median': 1.1, 'min': 1.0, 'max': 1.2, 'n': 3},
      'pinned': {'median': 0.9, 'min': 0.9, 'max': 0.9, 'n': 1}}
  # Matched by position among the 'b' rows, whatever the order; a NaN is
  # left out of the statistics.
  assert rows[1]['ms']['unpinned']['median'] == 4.2
  assert rows[2]['x/y']['unpinned'] == {'median': 3.3, 'min': 3.0,
                                        'max': 3.6, 'n': 2}
  assert bench_records.headline(rows)[2] == {
      'case': 'b', 'M': 20, 'N': 3.5, 'x/y': 3.3, 'ms': 6.3}


def test_a_varying_unnamed_column_is_measured_a_constant_one_a_setting():
  runs = {'unpinned': [[{'k': 'a', 'n': 2, 'mem': 5.0, 't': 1.0}],
                       [{'k': 'a', 'n': 2, 'mem': 5.0, 't': 1.5}]]}
  row, = bench_records.aggregate(runs)
  assert (row['n'], row['mem']) == (2, 5.0)
  assert row['t']['unpinned']['n'] == 2
  # A named ratio is a measurement even when one run gives it.
  row, = bench_records.aggregate({'unpinned': runs['unpinned'][:1]},
                                 ratios=('mem',))
  assert row['mem'] == {'unpinned': {'median': 5.0, 'min': 5.0, 'max': 5.0,
                                     'n': 1}}


def test_aggregate_refuses_repeats_with_other_rows():
  runs = {'unpinned': [[{'case': 'a', 'r': 1.0}]],
          'pinned': [[{'case': 'b', 'r': 1.0}]]}
  with pytest.raises(ValueError, match='pinned repeats give other rows'):
    bench_records.aggregate(runs)
  with pytest.raises(ValueError, match='at least one repeat'):
    bench_records.aggregate({'unpinned': []})


def _record(runs, affinities=('unpinned', 'pinned')):
  return {'benchmark': 'demo', 'ratios': ['x/*'], 'times': ['ms'],
          'settings': {'affinities': list(affinities)},
          'rows': bench_records.aggregate(runs, ('x/*',), ('ms',))}


def test_table_gives_unpinned_headline_and_pinned_beside():
  lines = bench_records.markdown_table(_record(RUNS)).splitlines()
  assert lines[0] == '| case | M | N | x/y | pinned | ms | pinned |'
  assert lines[2] == ('| a | 10 | 3 | 1.1× (1–1.2) | 0.9× | 2.1 (2–2.2) '
                      '| 3 |')
  only = {'pinned': RUNS['pinned']}
  table = bench_records.markdown_table(_record(only, ('pinned',)))
  assert table.splitlines()[0] == (
      '| case | M | N | x/y (pinned) | ms (pinned) |')


def test_pinned_child_pins_itself_before_anything_else(tmp_path):
  cpu = _repeat.pin_cpu()
  if cpu is None:
    pytest.skip('this OS cannot pin a process')
  argv = _repeat.command('act_loop', True, tmp_path / 'rows.json', cpu)
  assert argv[-2:] == [f'--json={tmp_path / "rows.json"}', '--quick']
  # The child's code up to the benchmark, then a probe instead of it.
  code = argv[2].split('runpy.run_module')[0] + (
      'print(sorted(os.sched_getaffinity(0)))')
  out = subprocess.run([sys.executable, '-c', code], check=True,
                       capture_output=True, text=True).stdout
  assert json.loads(out) == [cpu]
  assert _repeat.command('act_loop', False, 'r.json')[1:3] == [
      '-m', 'benchmarks.act_loop']


def test_bad_repeats_and_in_process_with_records_are_one_line_errors(capsys):
  for argv, message in ((['--repeats=0'], '--repeats must be >= 1'),
                        (['--in_process', '--record_dir=r'],
                         '--in_process runs each benchmark once')):
    with pytest.raises(SystemExit):
      suite.main(argv)
    assert message in capsys.readouterr().err


# Two fresh processes, each importing JAX and compiling: 30-40 s when
# loaded.
@pytest.mark.slow
def test_suite_runs_a_benchmark_unpinned_and_pinned(tmp_path, capsys):
  results = suite.main(['--quick', '--only=rehn_depth', '--repeats=1',
                        f'--out={tmp_path}',
                        f'--record_dir={tmp_path / "records"}'])
  out = capsys.readouterr().out
  bench = results['benchmarks']['rehn_depth']
  affinities = ['unpinned'] + (['pinned'] if _repeat.pin_cpu() is not None
                               else [])
  assert bench['record']['settings']['affinities'] == affinities
  assert out.count('--- rehn_depth: ') == len(affinities)
  row, = bench['record']['rows']
  assert (row['D_h'], row['R_max'], row['R']) == (8, 4, 3)
  assert set(row['while/oracle']) == set(affinities)
  assert bench['rows'][0]['while/oracle'] > 0
  record, = bench_records.read_records(tmp_path / 'records')
  assert record == {**json.loads(json.dumps(bench['record'])),
                    'name': 'rehn_depth'}
  assert '| while/oracle | pinned |' in (tmp_path / 'benchmarks.md'
                                          ).read_text()
  assert os.path.isfile(tmp_path / 'benchmarks.json')
