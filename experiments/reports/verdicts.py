r"""Verdicts from records: each by a criterion written beside it.

A results page never types "reproduced" or "holds": it calls one of the
functions here on the records' numbers, and prints the :class:`Verdict`'s
``label`` with its ``criterion`` (the rule, in words) and ``evidence`` (the
numbers that decided). Every function needs at least :data:`MIN_SEEDS`
seeds; with fewer the verdict is ``undecided``.

Intervals are two-sided 95%: Student's t for a mean over seeds
(:func:`t_interval`), Wilson's for a proportion of held-out vectors
(:func:`wilson_interval`).

Example::

  v = verdicts.below(errors, 0.05, what='sequence error', fmt=pct)
  v.label      # 'reproduced'
  v.criterion  # 'reproduced: the mean over n >= 3 seeds is below 5.0%, ...'
"""

from collections.abc import Callable, Sequence
import math
import statistics
from typing import NamedTuple

__all__ = [
    'MIN_SEEDS',
    'pct',
    'Verdict',
    't_quantile',
    't_interval',
    'wilson_interval',
    'mean_interval_text',
    'below',
    'above',
    'paired',
    'sign_every_seed',
    'order',
    'not_recorded',
    'withheld',
]

MIN_SEEDS = 3
# Two-sided 95% quantiles of Student's t, by degrees of freedom.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
        2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093,
        2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)
_Z95 = 1.959964

Format = Callable[[float], str]


def _g(x: float) -> str:
  return f'{x:.4g}'


def pct(x: float) -> str:
  """A fraction as a percentage, 2 decimals."""
  return f'{100 * x:.2f}%'


class Verdict(NamedTuple):
  """What a criterion decided: ``label`` (a word a reader scans for),
  ``criterion`` (the rule) and ``evidence`` (the numbers)."""
  label: str
  criterion: str
  evidence: str

  def cells(self) -> list[str]:
    """``[**label**, evidence, criterion]`` for a table row."""
    return [f'**{self.label}**', self.evidence, self.criterion]


def t_quantile(df: int) -> float:
  """The two-sided 95% quantile of Student's t with ``df`` degrees of
  freedom (the normal's beyond the table)."""
  if df < 1:
    raise ValueError(f'df must be >= 1, got {df}.')
  return _T95[df - 1] if df <= len(_T95) else _Z95


def t_interval(values: Sequence[float]) -> tuple[float, float, float, int]:
  """``(mean, low, high, n)``: the mean over seeds with its two-sided 95%
  Student-t interval (``low == high == mean`` for one value)."""
  xs = [float(v) for v in values if v is not None]
  if not xs:
    raise ValueError('no values.')
  mean = statistics.fmean(xs)
  if len(xs) < 2:
    return mean, mean, mean, 1
  half = t_quantile(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
  return mean, mean - half, mean + half, len(xs)


def wilson_interval(successes: int, n: int) -> tuple[float, float]:
  """Wilson's two-sided 95% interval of a proportion."""
  if n < 1:
    raise ValueError(f'n must be >= 1, got {n}.')
  p = successes / n
  z2 = _Z95 ** 2
  centre = (p + z2 / (2 * n)) / (1 + z2 / n)
  half = (_Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
          / (1 + z2 / n))
  return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval_text(values: Sequence[float], fmt: Format = _g) -> str:
  """``'1.23 (95% CI 1.01-1.45; n = 5)'``."""
  mean, lo, hi, n = t_interval(values)
  if n < 2:
    return f'{fmt(mean)} (n = 1)'
  return f'{fmt(mean)} (95% CI {fmt(lo)} to {fmt(hi)}; n = {n})'


def _undecided(criterion: str, n: int) -> Verdict:
  return Verdict('undecided', criterion,
                 f'{n} seed{"s" if n != 1 else ""}: fewer than {MIN_SEEDS}')


def _bound(values: Sequence[float], bound: float, *, what: str, fmt: Format,
           under: bool) -> Verdict:
  """:func:`below` (``under``) or :func:`above`: the same criterion with the
  interval's near end and the comparison mirrored."""
  side, end = ('below', 'upper') if under else ('above', 'lower')
  criterion = (f'reproduced: over n ≥ {MIN_SEEDS} seeds the mean {what} '
               f'and the {end} end of its 95% interval are {side} '
               f'{fmt(bound)}; partly: the mean is {side}, the interval '
               f'is not; not reproduced: the mean is not {side}')
  xs = [v for v in values if v is not None]
  if len(xs) < MIN_SEEDS:
    return _undecided(criterion, len(xs))
  mean, lo, hi, _ = t_interval(xs)
  beyond = (lambda x: x < bound) if under else (lambda x: x > bound)
  label = ('reproduced' if beyond(hi if under else lo) else 'partly'
           if beyond(mean) else 'not reproduced')
  return Verdict(label, criterion, mean_interval_text(xs, fmt))


def below(values: Sequence[float], bound: float, *, what: str,
          fmt: Format = _g) -> Verdict:
  """A bound the paper claims the metric stays under.

  reproduced: n >= 3 and the upper end of the mean's 95% interval is
  below ``bound``; partly: the mean is below but the interval reaches it;
  not reproduced: the mean is at or above it.
  """
  return _bound(values, bound, what=what, fmt=fmt, under=True)


def above(values: Sequence[float], bound: float, *, what: str,
          fmt: Format = _g) -> Verdict:
  """A bound the paper claims the metric stays over (an accuracy):
  :func:`below` mirrored."""
  return _bound(values, bound, what=what, fmt=fmt, under=False)


def paired(a: Sequence[float], b: Sequence[float], *, claim: str,
           fmt: Format = _g, lower_is_better: bool = True) -> Verdict:
  """The paper's claim that ``a`` beats ``b``, paired by seed (``a[i]``
  and ``b[i]`` share a seed).

  holds: n >= 3, ``a`` is better on every seed and the 95% interval of the
  paired difference excludes 0; within noise: the interval includes 0;
  does not hold: ``a`` is worse on average and the interval excludes 0.
  """
  criterion = (f'{claim}, paired by seed: holds when over n ≥ {MIN_SEEDS} '
               'seeds it is better on every seed and the 95% interval of '
               'the paired difference excludes 0; within noise when the '
               'interval includes 0; does not hold when it is worse and '
               'the interval excludes 0')
  pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
  if len(pairs) < MIN_SEEDS:
    return _undecided(criterion, len(pairs))
  sign = 1.0 if lower_is_better else -1.0
  gains = [sign * (y - x) for x, y in pairs]     # > 0: a is better
  mean, lo, hi, n = t_interval(gains)
  better = sum(g > 0 for g in gains)
  evidence = (f'better on {better} of {n} seeds; mean gain {fmt(mean)} '
              f'(95% CI {fmt(lo)} to {fmt(hi)})')
  if lo > 0 and better == n:
    label = 'holds'
  elif hi < 0:
    label = 'does not hold'
  elif lo > 0:
    label = 'partly'     # better on average, not on every seed
  else:
    label = 'within noise'
  return Verdict(label, criterion, evidence)


def sign_every_seed(values: Sequence[float], *, claim: str,
                    fmt: Format = _g, minimum: float = 0.0) -> Verdict:
  """A direction the paper claims (a slope, a gain), per seed.

  holds: n >= 3, every seed's value exceeds ``minimum`` and so does the
  lower end of the mean's 95% interval (three seeds of one sign happen by
  chance one time in four); partly: the mean exceeds it; does not hold:
  the mean does not.
  """
  criterion = (f'{claim}: holds when every one of n ≥ {MIN_SEEDS} seeds '
               f'and the lower end of the mean\'s 95% interval exceed '
               f'{fmt(minimum)}; partly when the mean does; does not hold '
               'otherwise')
  xs = [v for v in values if v is not None]
  if len(xs) < MIN_SEEDS:
    return _undecided(criterion, len(xs))
  mean, lo, _, _ = t_interval(xs)
  over = sum(x > minimum for x in xs)
  label = ('holds' if over == len(xs) and lo > minimum else 'partly'
           if mean > minimum else 'does not hold')
  return Verdict(label, criterion,
                 f'{over} of {len(xs)} seeds; ' + mean_interval_text(xs, fmt))


def order(groups: Sequence[tuple[str, Sequence[float]]], *, what: str,
          fmt: Format = _g, lower_is_better: bool = True) -> Verdict:
  """The paper's ranking of several models, best first.

  reproduced: n >= 3 seeds each, and each adjacent pair is in the paper's
  order with a gap between means larger than the sum of their standard
  deviations; same order, within noise: the means are in order but a gap
  is not; not reproduced: the means are out of order.
  """
  criterion = (f'{what}, the paper\'s order best first: reproduced when '
               f'each model has n ≥ {MIN_SEEDS} seeds and each adjacent '
               'pair is in order by more than the sum of their standard '
               'deviations; within noise when the means are in order but a '
               'gap is smaller; not reproduced when the means are out of '
               'order')
  stats = []
  for name, values in groups:
    xs = [v for v in values if v is not None]
    if len(xs) < MIN_SEEDS:
      return _undecided(criterion, len(xs))
    stats.append((name, statistics.fmean(xs), statistics.stdev(xs)))
  sign = 1.0 if lower_is_better else -1.0
  in_order, clear = True, True
  for (_, m1, s1), (_, m2, s2) in zip(stats, stats[1:]):
    gap = sign * (m2 - m1)
    in_order &= gap > 0
    clear &= gap > s1 + s2
  evidence = ' < '.join if lower_is_better else ' > '.join
  text = evidence(f'{n} {fmt(m)} ± {fmt(s)}' for n, m, s in stats)
  label = ('reproduced' if in_order and clear else
           'within noise' if in_order else 'not reproduced')
  return Verdict(label, criterion, text)


def not_recorded(reason: str) -> Verdict:
  """A claim with no record behind it: no verdict."""
  return Verdict('not recorded', 'a verdict needs recorded runs', reason)


def withheld(verdict: Verdict, why: str) -> Verdict:
  """``verdict`` made ``undecided`` for a reason its criterion cannot see
  (runs of unequal training, a sweep not yet complete): the criterion
  stays, ``why`` replaces the evidence."""
  return verdict._replace(label='undecided', evidence=why)
