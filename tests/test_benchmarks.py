"""Smoke test of the benchmark suite, ``python -m benchmarks --quick``.

Every benchmark runs at its tiny settings in one process; no timing is
asserted, only that each reports finite, positive times and the structure
that docs/performance.md reads.
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


def test_quick_suite_writes_every_benchmark(tmp_path, capsys, float32):
  results = suite.main(['--quick', f'--out={tmp_path}'])
  written = json.loads((tmp_path / 'benchmarks.json').read_text())
  assert list(written['benchmarks']) == list(suite.SUITE)
  assert written['quick'] and written['versions']['jax']
  bench = {k: v['rows'] for k, v in results['benchmarks'].items()}
  # ACT: one M at --quick, every row pondering the forced N = 3; then the
  # tail case (rows ponder N of mean 3.55) at M = 100, not compacted.
  act_rows = bench['act_loop']
  assert [(r['M'], r['case'], round(r['N'], 2)) for r in act_rows] == [
      (10, 'uniform', 3.0), (100, 'tail', 3.55)]
  assert act_rows[1]['compact_rows'] is None
  assert _positive(act_rows[0], ('while/oracle', 'scan/while'))
  assert _positive(act_rows[1], ('while/oracle',))
  # EI-REHN: the while loop realizes the forced depth.
  assert [(r['D_h'], r['R_max'], r['R']) for r in bench['rehn_depth']] == [
      (8, 4, 3)]
  assert _positive(bench['rehn_depth'][0], ('while/oracle', 'while/srhn'))
  # VC: the spread rows need fewer dimensions than the full width.
  spread = [r for r in bench['vc_inference'] if r['rows'] == 'spread']
  assert spread and min(r['mean_d'] for r in spread) < 32
  # Skip: the gate's bias forces the update fractions exactly (20 steps);
  # rows in step update together, phased rows make the cell run more often.
  skip = bench['skip_inference']
  assert [(r['batch'], r['rows']) for r in skip] == [
      (1, 'same'), (1, 'same'), (4, 'same'), (4, 'same'), (4, 'phased')]
  assert [round(r['fraction'], 3) for r in skip] == [0.1, 1.0, 0.1, 1.0, 0.1]
  assert skip[2]['runs'] == 0.1 and skip[4]['runs'] == 0.4
  assert all(_positive(r, ('hard/soft', 'grouped/soft', 'hard/plain'))
             for r in skip)
  # Compile time: one fresh process per binary, the corpus a stand-in.
  compiled = bench['compile_time']
  assert [(r['binary'], r['data']) for r in compiled] == [
      ('family_adding', 'none'), ('vc_ptb', 'stand-in')]
  assert [r.get('error') for r in compiled] == [None, None]
  assert all(_positive(r, ('params', 'lower_s', 'compile_s', 'total_s'))
             for r in compiled)
  # flax.linen.RNN: Elman and LSTM compute flax's maths (losses checked).
  rnn = bench['flax_rnn']
  assert [(r['cell'], r['maths']) for r in rnn] == [
      ('elman', 'same'), ('gru', 'differs'), ('lstm', 'same')]
  assert all(_positive(r, ('ms_ours', 'ms_linen', 'ms_flax', 'ours/flax',
                           'linen/flax')) for r in rnn)
  table = (tmp_path / 'benchmarks.md').read_text()
  for name in suite.SUITE:
    assert f'## {name} (' in table
  assert '| hidden | batch | rows |' in table
  assert '| binary | data | params | lower_s |' in table
  assert '| cell | hidden | batch | T | maths |' in table
  assert 'hard/soft' in capsys.readouterr().out


def test_unknown_benchmark_is_a_one_line_error(capsys):
  try:
    suite.main(['--only=act_loop,nope'])
  except SystemExit as e:
    assert e.code == 2
  else:
    raise AssertionError('--only=nope was accepted')
  assert '--only takes names of act_loop' in capsys.readouterr().err
