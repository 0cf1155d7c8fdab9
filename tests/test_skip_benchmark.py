"""Smoke test of benchmarks/skip_inference.py (no timing is asserted)."""

import math


def test_skip_inference_benchmark_quick_runs_and_reports_ratios(capsys):
  from benchmarks import skip_inference
  rows = skip_inference.main(['--quick'])
  # --quick: hidden 32, batches 1 and 4, fractions 0.1 and 1.0, plus the
  # out-of-phase rows at batch 4.
  assert [(r['batch'], r['rows']) for r in rows] == [
      (1, 'same'), (1, 'same'), (4, 'same'), (4, 'same'), (4, 'phased')]
  for r in rows:
    assert set(r) == set(skip_inference.KEYS)
    assert all(math.isfinite(r[k]) and r[k] > 0 for k in
               ('ms_soft', 'ms_hard', 'ms_grouped', 'ms_plain', 'hard/soft',
                'grouped/soft', 'hard/plain'))
  # The gate's bias forces the update fractions exactly (20 steps).
  assert [round(r['fraction'], 3) for r in rows] == [0.1, 1.0, 0.1, 1.0, 0.1]
  # Same rows update together; phased rows make the cell run more often.
  assert rows[2]['runs'] == 0.1 and rows[4]['runs'] == 0.4
  out = capsys.readouterr().out
  assert 'hard/soft' in out and 'grp/soft' in out and 'hard/plain' in out
