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


def test_rate_interval_stays_inside_zero_and_one():
  # Three seeds of an error rate, one failing: Student's t on the raw
  # scale runs below 0; the logit interval does not.
  errors = [0.004, 0.05, 0.635]
  assert verdicts.t_interval(errors)[1] < 0
  mean, lo, hi, n = verdicts.rate_interval(errors)
  assert 0 <= lo <= mean <= hi <= 1 and n == 3
  for xs in ([0.0, 0.0, 0.0], [1.0, 1.0, 0.99], [0.0, 1.0, 0.5]):
    _, lo, hi, _ = verdicts.rate_interval(xs)
    assert 0 <= lo <= hi <= 1
  assert verdicts.interval(errors, (0.0, 1.0)) == verdicts.rate_interval(
      errors)
  # A difference of rates is clipped to [-1, 1].
  _, lo, hi, _ = verdicts.interval([0.9, -0.9, 0.95], (-1.0, 1.0))
  assert -1 <= lo and hi <= 1
  with pytest.raises(ValueError, match='rates'):
    verdicts.rate_interval([0.5, 1.5])
  # A percentage is a rate: its printed interval never goes negative.
  text = verdicts.mean_interval_text(errors, verdicts.pct)
  assert '-' not in text.split('CI')[1]


def test_detectable_is_the_t_test_power_formula():
  xs = [1.0, 2.0, 3.0]
  assert verdicts.detectable(xs) == pytest.approx(
      (4.303 + 1.061) * 1.0 / 3 ** 0.5)
  assert verdicts.detectable([1.0]) is None


def test_below():
  v = verdicts.below([0.01, 0.012, 0.009], 0.05, what='error')
  assert v.label == 'holds' and 'n = 3' in v.evidence
  v = verdicts.below([0.01, 0.09, 0.03], 0.05, what='e')
  assert v.label == 'within noise' and 'smallest effect' in v.evidence
  assert verdicts.below([0.06] * 3, 0.05, what='e').label == 'does not hold'
  assert verdicts.below([0.01, 0.01], 0.05, what='e').label == 'undecided'


def test_below_is_symmetric_about_the_bound():
  # Mirror images about the bound get mirror verdicts; an interval that
  # holds the bound is within noise from either side.
  low, high = [0.02, 0.09, 0.04], [0.08, 0.01, 0.06]
  assert verdicts.below(low, 0.05, what='e').label == 'within noise'
  assert verdicts.below(high, 0.05, what='e').label == 'within noise'
  assert verdicts.below([0.01, 0.011, 0.012], 0.05, what='e').label == (
      'holds')
  assert verdicts.below([0.09, 0.089, 0.088], 0.05, what='e').label == (
      'does not hold')


def test_above_mirrors_below():
  assert verdicts.above([0.93, 0.94, 0.95], 0.9, what='a').label == 'holds'
  assert verdicts.above([0.8] * 3, 0.9, what='a').label == 'does not hold'


def test_paired_is_symmetric():
  a, b = [1.0, 1.1, 0.9], [1.5, 1.6, 1.45]
  assert verdicts.paired(a, b, claim='a beats b').label == 'holds'
  assert verdicts.paired(b, a, claim='b beats a').label == 'does not hold'
  v = verdicts.paired([1.0, 2.0, 1.0], [1.1, 1.0, 1.2], claim='x')
  assert v.label == 'within noise' and 'smallest effect' in v.evidence
  w = verdicts.paired([1.1, 1.0, 1.2], [1.0, 2.0, 1.0], claim='x')
  assert w.label == 'within noise'
  v = verdicts.paired([0.9, 0.95, 0.97], [0.8, 0.9, 0.9], claim='acc',
                      lower_is_better=False)
  assert v.label == 'holds' and 'better on 3 of 3' in v.evidence


def test_paired_rates_stay_inside_minus_one_and_one():
  v = verdicts.paired([0.0, 0.9, 0.0], [0.9, 0.0, 0.95], claim='x',
                      fmt=verdicts.pct)
  lo, hi = v.evidence.split('CI ')[1].split(')')[0].split(' to ')
  assert -100 <= float(lo.rstrip('%')) and float(hi.rstrip('%')) <= 100


def test_equivalent_reads_a_margin_both_ways():
  # Accuracies within a point of each other on every seed: holds; a
  # point and a half apart on every seed: does not hold, either way round.
  a, b = [0.990, 0.992, 0.991], [0.993, 0.994, 0.995]
  v = verdicts.equivalent(a, b, 0.01, claim='a as accurate as b',
                          bounds=(0.0, 1.0))
  assert v.label == 'holds' and 'margin ±0.01' in v.evidence
  far = [x - 0.015 for x in b]
  assert verdicts.equivalent(far, b, 0.01, claim='x').label == (
      'does not hold')
  assert verdicts.equivalent(b, far, 0.01, claim='x').label == (
      'does not hold')
  # A difference whose interval reaches across the margin: within noise.
  v = verdicts.equivalent([0.96, 0.99, 0.97], [0.99, 0.99, 0.99], 0.01,
                          claim='x')
  assert v.label == 'within noise' and 'smallest effect' in v.evidence
  # A difference of rates stays inside [-1, 1].
  v = verdicts.equivalent([0.0, 0.9, 0.0], [0.9, 0.0, 0.95], 0.01,
                          claim='x', fmt=verdicts.pct)
  lo, hi = v.evidence.split('CI ')[1].split(';')[0].split(' to ')
  assert -100 <= float(lo.rstrip('%')) and float(hi.rstrip('%')) <= 100
  assert verdicts.equivalent([1.0], [1.0], 0.01, claim='x').label == (
      'undecided')


def test_withheld_keeps_the_criterion_and_says_why():
  v = verdicts.paired([1.0, 1.1, 0.9], [1.5, 1.6, 1.45], claim='a beats b')
  w = verdicts.withheld(v, 'trained for different lengths')
  assert (w.label, w.criterion, w.evidence) == (
      'undecided', v.criterion, 'trained for different lengths')


def test_exceeds_is_symmetric():
  assert verdicts.exceeds([0.2, 0.21, 0.22], claim='s').label == 'holds'
  # Every seed positive, but the interval reaches 0: within noise.
  assert verdicts.exceeds([0.01, 0.5, 0.02], claim='s').label == (
      'within noise')
  assert verdicts.exceeds([-0.01, -0.5, -0.02], claim='s').label == (
      'within noise')
  assert verdicts.exceeds([-0.2, -0.21, -0.22], claim='s').label == (
      'does not hold')
  assert verdicts.exceeds([0.5, 0.6, 0.7], claim='s',
                          minimum=1).label == 'does not hold'


def test_order_separates_noise_from_order():
  clear = [('A', [1.0, 1.01, 0.99]), ('B', [2.0, 2.01, 1.99])]
  assert verdicts.order(clear, what='mse').label == 'holds'
  noisy = [('A', [1.0, 1.5, 0.5]), ('B', [1.2, 1.7, 0.7])]
  assert statistics.fmean(noisy[0][1]) < statistics.fmean(noisy[1][1])
  assert verdicts.order(noisy, what='mse').label == 'within noise'
  assert verdicts.order(noisy[::-1], what='mse').label == 'within noise'
  assert verdicts.order(clear[::-1], what='mse').label == 'does not hold'
  assert verdicts.order(clear[::-1], what='acc',
                        lower_is_better=False).label == 'holds'
  assert verdicts.order([('A', [1.0])], what='x').label == 'undecided'


def test_order_writes_the_datas_relation_not_the_papers():
  v = verdicts.order([('A', [2.0, 2.01, 1.99]), ('B', [1.0, 1.01, 0.99])],
                     what='mse')
  assert 'A 2 ± 0.01 > B 1 ± 0.01' == v.evidence
  assert v.label == 'does not hold'


def test_one_scale():
  assert set(verdicts.LABELS) == {'holds', 'within noise', 'does not hold',
                                  'not testable here', 'undecided'}
  assert verdicts.not_recorded('no run').label == 'undecided'
  v = verdicts.not_testable('c', '1 of 3 seeds solve')
  assert v.label == 'not testable here' and v.evidence == '1 of 3 seeds solve'
  for label in verdicts.LABELS:
    assert f'**{label}**' in verdicts.LEGEND


def test_marked_puts_the_record_state_in_the_verdict_cell():
  v = verdicts.paired([1.0, 1.1, 0.9], [1.5, 1.6, 1.45], claim='a beats b')
  assert v.cell == '**holds**'
  stale = verdicts.marked(v, ['current', 'stale', 'unverifiable'])
  assert stale.label == 'holds' and stale.records == 'stale'
  assert stale.cell == '**holds** *stale records*'
  assert stale.cells()[0] == stale.cell
  assert verdicts.marked(v, ['unverifiable']).cell.endswith(
      '*unverifiable records*')
  assert verdicts.marked(v, ['current']) == v
