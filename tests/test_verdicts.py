"""Verdicts from records (experiments.reports.verdicts): each label follows
from its criterion."""

import statistics

import pytest

from experiments.reports import verdicts


def test_t_interval_matches_the_t_table():
  mean, lo, hi, n = verdicts.t_interval([1.0, 2.0, 3.0])
  # sd 1, n 3, t(2) = 4.303.
  assert (mean, n) == (2.0, 3)
  assert hi - mean == pytest.approx(4.303 / 3 ** 0.5)
  assert verdicts.t_interval([5.0]) == (5.0, 5.0, 5.0, 1)
  assert verdicts.t_quantile(1000) == pytest.approx(1.96, abs=1e-3)


def test_wilson_interval_decides_a_threshold_only_with_enough_vectors():
  lo, hi = verdicts.wilson_interval(955, 1000)
  assert lo < 0.95 < hi           # 0.955 on 1,000 vectors: not decided
  lo, _ = verdicts.wilson_interval(9650, 10000)
  assert lo > 0.95
  assert verdicts.wilson_interval(0, 10)[0] == 0.0


def test_below():
  v = verdicts.below([0.01, 0.012, 0.009], 0.05, what='error')
  assert v.label == 'reproduced' and 'n = 3' in v.evidence
  assert verdicts.below([0.01, 0.09, 0.03], 0.05, what='e').label == 'partly'
  assert verdicts.below([0.06] * 3, 0.05, what='e').label == 'not reproduced'
  assert verdicts.below([0.01, 0.01], 0.05, what='e').label == 'undecided'


def test_above_mirrors_below():
  assert verdicts.above([0.93, 0.94, 0.95], 0.9, what='a').label == (
      'reproduced')
  assert verdicts.above([0.8] * 3, 0.9, what='a').label == 'not reproduced'


def test_paired_needs_every_seed_and_an_interval_excluding_zero():
  a, b = [1.0, 1.1, 0.9], [1.5, 1.6, 1.45]
  assert verdicts.paired(a, b, claim='a beats b').label == 'holds'
  assert verdicts.paired(b, a, claim='b beats a').label == 'does not hold'
  assert verdicts.paired([1.0, 2.0, 1.0], [1.1, 1.0, 1.2],
                         claim='x').label == 'within noise'
  v = verdicts.paired([0.9, 0.95, 0.97], [0.8, 0.9, 0.9], claim='acc',
                      lower_is_better=False)
  assert v.label == 'holds' and 'better on 3 of 3' in v.evidence


def test_withheld_keeps_the_criterion_and_says_why():
  v = verdicts.paired([1.0, 1.1, 0.9], [1.5, 1.6, 1.45], claim='a beats b')
  w = verdicts.withheld(v, 'trained for different lengths')
  assert (w.label, w.criterion, w.evidence) == (
      'undecided', v.criterion, 'trained for different lengths')


def test_sign_every_seed():
  assert verdicts.sign_every_seed([0.2, 0.21, 0.22], claim='s').label == (
      'holds')
  # Every seed positive, but the interval reaches 0: not enough.
  assert verdicts.sign_every_seed([0.01, 0.5, 0.02], claim='s').label == (
      'partly')
  assert verdicts.sign_every_seed([0.5, -0.1, 0.2], claim='s').label == (
      'partly')
  assert verdicts.sign_every_seed([-0.5, -0.1, 0.2], claim='s').label == (
      'does not hold')
  assert verdicts.sign_every_seed([0.5, 0.6, 0.7], claim='s',
                                  minimum=1).label == 'does not hold'


def test_order_separates_noise_from_order():
  clear = [('A', [1.0, 1.01, 0.99]), ('B', [2.0, 2.01, 1.99])]
  assert verdicts.order(clear, what='mse').label == 'reproduced'
  noisy = [('A', [1.0, 1.5, 0.5]), ('B', [1.2, 1.7, 0.7])]
  assert statistics.fmean(noisy[0][1]) < statistics.fmean(noisy[1][1])
  assert verdicts.order(noisy, what='mse').label == 'within noise'
  assert verdicts.order(clear[::-1], what='mse').label == 'not reproduced'
  assert verdicts.order(clear[::-1], what='acc',
                        lower_is_better=False).label == 'reproduced'
  assert verdicts.order([('A', [1.0])], what='x').label == 'undecided'
