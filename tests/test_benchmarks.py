"""Smoke test of the benchmark suite, ``python -m benchmarks --quick``.

Each benchmark of the suite runs at its tiny settings through the suite's
``main`` (``--only=<name>``), one test each so that they spread over the
test workers; no timing is asserted, only that each reports finite,
positive times and the structure that docs/performance.md reads.
"""

import json
import math

import jax
import pytest

from benchmarks import __main__ as suite


@pytest.fixture
def float32():
  """JAX's default settings, as a user runs the benchmarks: float32, and
  numpy's promotion (tests/conftest.py turns on x64 and strict promotion for
  the library's own code)."""
  settings = {'jax_enable_x64': False,
              'jax_numpy_dtype_promotion': 'standard',
              'jax_numpy_rank_promotion': 'allow'}
  previous = {k: getattr(jax.config, k) for k in settings}
  for k, v in settings.items():
    jax.config.update(k, v)
  try:
    yield
  finally:
    for k, v in previous.items():
      jax.config.update(k, v)


def _positive(row, keys):
  return all(row[k] is not None and math.isfinite(row[k]) and row[k] > 0
             for k in keys)


def _check_act_loop(rows):
  # One M at --quick, every row pondering the forced N = 3; then the tail
  # case (rows ponder N of mean 3.55) at M = 100, not compacted.
  assert [(r['M'], r['case'], round(r['N'], 2)) for r in rows] == [
      (10, 'uniform', 3.0), (100, 'tail', 3.55)]
  assert rows[1]['compact_rows'] is None
  assert _positive(rows[0], ('while/oracle', 'default/oracle', 'floor/oracle',
                            'scan/while'))
  assert _positive(rows[1], ('while/oracle', 'default/oracle'))


def _check_rehn_depth(rows):
  # The while loop realizes the forced depth.
  assert [(r['D_h'], r['R_max'], r['R']) for r in rows] == [(8, 4, 3)]
  assert _positive(rows[0], ('while/oracle', 'while/srhn'))


def _check_depth_cost(rows):
  # One M at --quick, per example, every example at the forced depth 3;
  # routing at the capacity whose token-steps first reach depth 3's (the
  # lengths 8, 7, 6, 5: k = 6, 5, 5, 4 per step at c = 0.834, 4 steps, 26
  # real tokens); then the tail case at M = 4 (depths capped there), not
  # compacted.
  assert [(r['mode'], r['case'], r['M']) for r in rows] == [
      ('per_example', 'uniform', 4), ('route', 'uniform', 4),
      ('per_example', 'tail', 4)]
  assert [rows[0]['depth'], rows[2]['depth']] == [3.0, 4.0]
  assert rows[1]['capacity'] == 0.834
  assert rows[1]['depth'] == pytest.approx(4 * 20 / 26)
  assert rows[2]['compact_rows'] is None
  assert all(_positive(r, ('while/oracle', 'scan/oracle', 'anchor/oracle'))
             for r in rows if r['mode'] != 'route')
  assert _positive(rows[1], ('while/oracle', 'scan/oracle', 'route/oracle'))


def _check_vc_inference(rows):
  # The spread rows need fewer dimensions than the full width.
  spread = [r for r in rows if r['rows'] == 'spread']
  assert spread and min(r['mean_d'] for r in spread) < 32


def _check_skip_inference(rows):
  # The gate's bias forces the update fractions exactly (20 steps); rows in
  # step update together, phased rows make the cell run more often.
  assert [(r['batch'], r['rows']) for r in rows] == [
      (1, 'same'), (1, 'same'), (4, 'same'), (4, 'same'), (4, 'phased')]
  assert [round(r['fraction'], 3) for r in rows] == [0.1, 1.0, 0.1, 1.0, 0.1]
  assert rows[2]['runs'] == 0.1 and rows[4]['runs'] == 0.4
  assert all(_positive(r, ('hard/soft', 'grouped/soft', 'hard/plain'))
             for r in rows)


def _check_compile_time(rows):
  # One fresh process per binary, the corpus a stand-in.
  assert [(r['binary'], r['data']) for r in rows] == [
      ('family_adding', 'none'), ('vc_ptb', 'stand-in')]
  assert [r.get('error') for r in rows] == [None, None]
  assert all(_positive(r, ('params', 'lower_s', 'compile_s', 'total_s'))
             for r in rows)


def _check_flax_rnn(rows):
  # Elman and LSTM compute flax's maths (losses checked), in float32 and in
  # bfloat16 (--quick times both).
  assert [(r['cell'], r['dtype'], r['maths']) for r in rows] == [
      (c, d, m) for c, m in (('elman', 'same'), ('gru', 'differs'),
                             ('lstm', 'same'))
      for d in ('float32', 'bfloat16')]
  assert all(_positive(r, ('ms_ours', 'ms_linen', 'ms_flax', 'ours/flax',
                           'linen/flax')) for r in rows)


CHECKS = {'act_loop': _check_act_loop, 'rehn_depth': _check_rehn_depth,
          'depth_cost': _check_depth_cost,
          'vc_inference': _check_vc_inference,
          'skip_inference': _check_skip_inference,
          'compile_time': _check_compile_time, 'flax_rnn': _check_flax_rnn}
# The table headers docs/performance.md reads.
HEADERS = {'skip_inference': '| hidden | batch | rows |',
           'compile_time': '| binary | data | params | lower_s |',
           'flax_rnn': '| cell | hidden | batch | T | dtype | maths |'}


def test_every_benchmark_of_the_suite_is_checked():
  assert sorted(CHECKS) == sorted(suite.SUITE)


# compile_time measures each binary in a fresh Python process.
@pytest.mark.parametrize('name', [
    pytest.param(n, marks=pytest.mark.slow) if n == 'compile_time' else n
    for n in suite.SUITE])
def test_quick_suite_writes_the_benchmark(name, tmp_path, capsys, float32):
  # In process: the checks read each benchmark's own rows; the suite's
  # default of fresh processes, unpinned and pinned, is
  # tests/test_bench_harness.py's.
  results = suite.main(['--quick', '--in_process', f'--only={name}',
                        f'--out={tmp_path}'])
  written = json.loads((tmp_path / 'benchmarks.json').read_text())
  assert list(written['benchmarks']) == [name]
  assert written['quick'] and written['versions']['jax']
  CHECKS[name](results['benchmarks'][name]['rows'])
  table = (tmp_path / 'benchmarks.md').read_text()
  assert f'## {name} (' in table
  assert HEADERS.get(name, '|') in table
  if name == 'skip_inference':
    assert 'hard/soft' in capsys.readouterr().out


def test_unknown_benchmark_is_a_one_line_error(capsys):
  try:
    suite.main(['--only=act_loop,nope'])
  except SystemExit as e:
    assert e.code == 2
  else:
    raise AssertionError('--only=nope was accepted')
  assert '--only takes names of act_loop' in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize('name,argv,depth_key', [
    ('act_loop', ['--tail=8'], 'N'),
    ('rehn_depth', [], 'R'),
    ('depth_cost', ['--modes=per_example', '--tail=4'], 'depth')])
def test_unroll_reaches_the_loops_and_changes_no_depth(name, argv, depth_key,
                                                      float32):
  # The GPU measurement of LoopConfig(unroll=k) reads these rows: each
  # records its unroll, and the realized depths are the plain loop's.
  module = __import__(f'benchmarks.{name}', fromlist=['main'])
  plain = module.main(['--quick', *argv])
  unrolled = module.main(['--quick', *argv, '--unroll=3'])
  assert [r['unroll'] for r in unrolled] == [3] * len(plain)
  assert ([r[depth_key] for r in unrolled]
          == [r[depth_key] for r in plain])


@pytest.mark.slow
def test_a_seed_population_trains_each_seed_as_a_run_alone(float32):
  from benchmarks import seed_population
  rows = seed_population.main(['--quick'])
  assert [r['P'] for r in rows] == [2]
  # Seed 0 of the population is the single run: same seed, key and batch.
  assert rows[0]['loss_diff'] < 1e-5 and rows[0]['grad_norm_diff'] < 1e-5
  assert _positive(rows[0], ('per_seed/single', 'ms_single', 'ponder'))
