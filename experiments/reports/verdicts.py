r"""Verdicts from records: one symmetric scale, each by a criterion.

A results page never types a verdict: it calls one of the functions here on
the records' numbers, and prints the :class:`Verdict`'s ``label`` with its
``criterion`` (the rule, in words) and ``evidence`` (the numbers that
decided). Every claim, the paper's bounds and orders included, is judged on
one scale (:data:`LABELS`, explained once per page by :data:`LEGEND`):

* ``holds``: the 95% interval lies on the claim's side;
* ``within noise``: the interval reaches the other side (in either
  direction: the scale is symmetric); the evidence then gives the smallest
  effect the test could have detected at its n (:func:`detectable`);
* ``does not hold``: the interval lies on the other side;
* ``not testable here``: the records exist but the setup cannot show the
  claim (too few seeds that solve the task, an inert gate, every method at
  chance), with the reason;
* ``undecided``: records missing (fewer than :data:`MIN_SEEDS` seeds, or
  none).

Intervals are two-sided 95% and fit the quantity: Student's t for a mean
over seeds (:func:`t_interval`); for a rate in [0, 1] (an error rate, an
accuracy) Student's t on the logit scale, mapped back, so the interval stays
inside [0, 1] (:func:`rate_interval`); Wilson's for a proportion of held-out
vectors (:func:`wilson_interval`). A value printed with :func:`pct` is taken
to be a rate (``bounds`` overrides). Whether the records behind a verdict
are still computed by today's code is apart from the verdict: a record state
(:data:`RECORD_STATES`) marks the verdict cell (:func:`marked`).

Example::

  v = verdicts.below(errors, 0.05, what='sequence error', fmt=pct)
  v.label      # 'holds'
  v.criterion  # 'holds: the upper end of the 95% interval ... is below 5%'
"""

from collections.abc import Callable, Sequence
import math
import statistics
from typing import NamedTuple

__all__ = [
    'reading',
    'MIN_SEEDS',
    'LABELS',
    'LEGEND',
    'RECORD_STATES',
    'RATE_FLOOR',
    'pct',
    'Verdict',
    't_quantile',
    't_interval',
    'rate_interval',
    'positive_interval',
    'POSITIVE',
    'interval',
    'detectable',
    'wilson_interval',
    'mean_interval_text',
    'below',
    'above',
    'paired',
    'exceeds',
    'equivalent',
    'order',
    'claims_table',
    'not_recorded',
    'not_testable',
    'withheld',
    'mark_text',
    'marked',
]

MIN_SEEDS = 3
LABELS = ('holds', 'within noise', 'does not hold', 'not testable here',
          'undecided')
# Whether today's code still computes a record (experiments.verify); not a
# verdict, a mark beside one.
RECORD_STATES = ('current', 'stale', 'unverifiable')
# A rate of 0 or 1 has no logit: rates are held inside [RATE_FLOOR,
# 1 - RATE_FLOOR] (half a vector in a thousand) before the logit interval.
RATE_FLOOR = 5e-4
# Two-sided 95% quantiles of Student's t, by degrees of freedom.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
        2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093,
        2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)
# One-sided 80% quantiles of Student's t (80% power), by degrees of freedom.
_T80 = (1.376, 1.061, 0.978, 0.941, 0.920, 0.906, 0.896, 0.889, 0.883,
        0.879, 0.876, 0.873, 0.870, 0.868, 0.866, 0.865, 0.863, 0.862,
        0.861, 0.860, 0.859, 0.858, 0.858, 0.857, 0.856, 0.856, 0.855,
        0.855, 0.854, 0.854)
_Z95 = 1.959964
_Z80 = 0.841621

LEGEND = (
    '**Verdicts.** Every claim is judged on one scale, from the seeds\' '
    'numbers, by its criterion (each claims table lists its criteria once, '
    'under the table, and each row names its own: C1, C2, ...): '
    '**holds** when the 95% '
    'interval lies on the claim\'s side (of a bound, of zero for a paired '
    'difference, of the next model for an order); **within noise** when '
    'the interval reaches the other side, in either direction (the evidence '
    'then gives the smallest effect the test could have detected at its '
    'number of seeds, at 80% power); **does not hold** when the interval '
    'lies on the other side; **not testable here** when the records exist '
    'but the setup cannot show the claim (the reason is given: too few '
    'seeds that solve the task, a gate that stays inert, every method at '
    'chance); **undecided** when records are missing (fewer than '
    f'{MIN_SEEDS} seeds, or none). A paper\'s bound or order is its claim: '
    '"holds" is what reproducing it means here. Intervals fit the '
    'quantity: Student\'s t over seeds, on the logit scale for an error '
    'rate or an accuracy (so it stays inside 0-100%), paired by seed where '
    'two models share seeds. A verdict whose records today\'s code no '
    'longer computes (`python -m experiments.verify`) carries the mark '
    '*stale records* or *unverifiable records* in its cell.')

Format = Callable[[float], str]
# The bounds of a quantity that is positive by nature (perplexity, MSE):
# its interval is taken on the log scale (:func:`positive_interval`).
POSITIVE = (0.0, math.inf)
Bounds = tuple[float, float] | None


def _g(x: float) -> str:
  return f'{x:.4g}'


def pct(x: float) -> str:
  """A fraction as a percentage, 2 decimals."""
  return f'{100 * x:.2f}%'


class Verdict(NamedTuple):
  """What a criterion decided: ``label`` (one of :data:`LABELS`),
  ``criterion`` (the rule), ``evidence`` (the numbers) and ``records``
  (the record state behind it, :data:`RECORD_STATES`)."""
  label: str
  criterion: str
  evidence: str
  records: str = 'current'

  @property
  def cell(self) -> str:
    """The verdict cell: the bold label, and the record state when the
    records are not current."""
    return f'**{self.label}**{mark_text([self.records])}'

  def cells(self) -> list[str]:
    """``[verdict cell, evidence, criterion]`` for a table row."""
    return [self.cell, self.evidence, self.criterion]


def t_quantile(df: int, power: bool = False) -> float:
  """The two-sided 95% quantile of Student's t with ``df`` degrees of
  freedom (the normal's beyond the table); with ``power``, the one-sided
  80% quantile instead."""
  if df < 1:
    raise ValueError(f'df must be >= 1, got {df}.')
  table, z = (_T80, _Z80) if power else (_T95, _Z95)
  return table[df - 1] if df <= len(table) else z


def _values(values: Sequence[float | None]) -> list[float]:
  return [float(v) for v in values if v is not None]


def t_interval(values: Sequence[float]) -> tuple[float, float, float, int]:
  """``(mean, low, high, n)``: the mean over seeds with its two-sided 95%
  Student-t interval (``low == high == mean`` for one value)."""
  xs = _values(values)
  if not xs:
    raise ValueError('no values.')
  mean = statistics.fmean(xs)
  if len(xs) < 2:
    return mean, mean, mean, 1
  half = t_quantile(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
  return mean, mean - half, mean + half, len(xs)


def _logit(p: float) -> float:
  p = min(max(p, RATE_FLOOR), 1 - RATE_FLOOR)
  return math.log(p / (1 - p))


def _expit(x: float) -> float:
  return 1 / (1 + math.exp(-x))


def rate_interval(values: Sequence[float]
                  ) -> tuple[float, float, float, int]:
  """``(mean, low, high, n)`` for rates in [0, 1] (an error rate, an
  accuracy): the arithmetic mean, and the Student-t interval of the mean
  logit mapped back (rates held inside ``RATE_FLOOR``), widened to hold the
  mean. The interval stays inside [0, 1] whatever the spread."""
  xs = _values(values)
  if not xs:
    raise ValueError('no values.')
  if any(not 0 <= x <= 1 for x in xs):
    raise ValueError(f'rates must lie in [0, 1], got {xs}.')
  mean = statistics.fmean(xs)
  if len(xs) < 2:
    return mean, mean, mean, 1
  _, lo, hi, n = t_interval([_logit(x) for x in xs])
  lo, hi = _expit(lo), _expit(hi)
  return mean, min(lo, mean), max(hi, mean), n


def positive_interval(values: Sequence[float]
                      ) -> tuple[float, float, float, int]:
  """``(mean, low, high, n)`` for a quantity that is positive by nature (a
  perplexity, an MSE): the arithmetic mean, and the Student-t interval of
  the mean log mapped back, widened to hold the mean. The interval stays
  above 0 whatever the spread."""
  xs = _values(values)
  if not xs or any(x <= 0 for x in xs):
    raise ValueError(f'values must be positive, got {xs}.')
  mean = statistics.fmean(xs)
  if len(xs) < 2:
    return mean, mean, mean, 1
  _, lo, hi, n = t_interval([math.log(x) for x in xs])
  return mean, min(math.exp(lo), mean), max(math.exp(hi), mean), n


def interval(values: Sequence[float], bounds: Bounds = None
             ) -> tuple[float, float, float, int]:
  """``(mean, low, high, n)``: :func:`rate_interval` for ``bounds ==
  (0, 1)``, :func:`positive_interval` for :data:`POSITIVE`, else
  :func:`t_interval` clipped to ``bounds`` (a difference of two rates lies
  in [-1, 1])."""
  if bounds == (0.0, 1.0):
    return rate_interval(values)
  if bounds == POSITIVE:
    return positive_interval(values)
  mean, lo, hi, n = t_interval(values)
  if bounds is not None:
    lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
  return mean, lo, hi, n


def detectable(values: Sequence[float]) -> float | None:
  """The smallest true effect (distance of the mean from the criterion's
  bound or from 0) that a two-sided 95% t-test over these seeds detects
  with 80% power, at their spread and their n: ``(t_{0.975} + t_{0.80}) *
  sd / sqrt(n)``. None with fewer than two values."""
  xs = _values(values)
  if len(xs) < 2:
    return None
  df = len(xs) - 1
  return ((t_quantile(df) + t_quantile(df, power=True))
          * statistics.stdev(xs) / math.sqrt(len(xs)))


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


def _rate_bounds(fmt: Format, bounds: Bounds) -> Bounds:
  """A value printed as a percentage is a rate in [0, 1]."""
  return bounds if bounds is not None else (0.0, 1.0) if fmt is pct else None


def mean_interval_text(values: Sequence[float], fmt: Format = _g,
                       bounds: Bounds = None) -> str:
  """``'1.23 (95% CI 1.01 to 1.45; n = 5)'`` (:func:`interval`)."""
  mean, lo, hi, n = interval(values, _rate_bounds(fmt, bounds))
  if n < 2:
    return f'{fmt(mean)} (n = 1)'
  return f'{fmt(mean)} (95% CI {fmt(lo)} to {fmt(hi)}; n = {n})'


def _undecided(criterion: str, n: int) -> Verdict:
  return Verdict('undecided', criterion,
                 f'{n} seed{"s" if n != 1 else ""}: fewer than {MIN_SEEDS}')


def _side(lo: float, hi: float, bound: float) -> str:
  """The one scale for an interval against ``bound``, the claim being that
  the quantity exceeds it."""
  return ('holds' if lo > bound else 'does not hold' if hi < bound
          else 'within noise')


def _noise(label: str, values: Sequence[float], fmt: Format) -> str:
  d = detectable(values)
  if label != 'within noise' or d is None:
    return ''
  return (f'; smallest effect detectable at n = {len(_values(values))} '
          f'(80% power): {fmt(d)}')


_SCALE = ('{what} {beyond} {bound}: holds when the {side} end of its 95% '
          'interval is {beyond} {bound}; does not hold when the {other} end '
          'is {not_beyond} it; within noise when the interval holds it '
          '(n ≥ {n} seeds)')


def _bound(values: Sequence[float], bound: float, *, what: str, fmt: Format,
           under: bool, bounds: Bounds) -> Verdict:
  """:func:`below` (``under``) or :func:`above`: the same criterion with
  the interval's ends and the comparison mirrored."""
  criterion = _SCALE.format(
      what=f'the mean {what}', side='upper' if under else 'lower',
      beyond='below' if under else 'above', bound=fmt(bound),
      other='lower' if under else 'upper',
      not_beyond='above' if under else 'below', n=MIN_SEEDS)
  xs = _values(values)
  if len(xs) < MIN_SEEDS:
    return _undecided(criterion, len(xs))
  _, lo, hi, _ = interval(xs, _rate_bounds(fmt, bounds))
  label = _side(-hi, -lo, -bound) if under else _side(lo, hi, bound)
  return Verdict(label, criterion,
                 mean_interval_text(xs, fmt, bounds) + _noise(label, xs, fmt))


def below(values: Sequence[float], bound: float, *, what: str,
          fmt: Format = _g, bounds: Bounds = None) -> Verdict:
  """A bound the paper claims the metric stays under.

  holds: n >= 3 and the upper end of the mean's 95% interval is below
  ``bound``; does not hold: the lower end is above it; within noise: the
  interval holds ``bound``. ``bounds``: the range of the metric ((0, 1)
  for a rate, the default when ``fmt`` is :func:`pct`).
  """
  return _bound(values, bound, what=what, fmt=fmt, under=True, bounds=bounds)


def above(values: Sequence[float], bound: float, *, what: str,
          fmt: Format = _g, bounds: Bounds = None) -> Verdict:
  """A bound the paper claims the metric stays over (an accuracy):
  :func:`below` mirrored."""
  return _bound(values, bound, what=what, fmt=fmt, under=False,
                bounds=bounds)


def paired(a: Sequence[float], b: Sequence[float], *, claim: str,
           fmt: Format = _g, lower_is_better: bool = True,
           bounds: Bounds = None) -> Verdict:
  """The paper's claim that ``a`` beats ``b``, paired by seed (``a[i]``
  and ``b[i]`` share a seed).

  holds: n >= 3 and the 95% interval of the paired gain (``a`` better:
  positive) lies above 0; does not hold: below 0; within noise: it holds 0.
  A gain of two rates (``fmt`` :func:`pct`) stays inside [-1, 1].
  """
  criterion = (f'{claim}, paired by seed: holds when over n ≥ {MIN_SEEDS} '
               'seeds the 95% interval of the paired gain lies above 0; '
               'does not hold when it lies below 0; within noise when it '
               'holds 0')
  pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
  if len(pairs) < MIN_SEEDS:
    return _undecided(criterion, len(pairs))
  sign = 1.0 if lower_is_better else -1.0
  gains = [sign * (y - x) for x, y in pairs]     # > 0: a is better
  rate = _rate_bounds(fmt, bounds) is not None
  mean, lo, hi, n = interval(gains, (-1.0, 1.0) if rate else None)
  label = _side(lo, hi, 0.0)
  better = sum(g > 0 for g in gains)
  evidence = (f'better on {better} of {n} seeds; mean gain {fmt(mean)} '
              f'(95% CI {fmt(lo)} to {fmt(hi)})'
              + _noise(label, gains, fmt))
  return Verdict(label, criterion, evidence)


def exceeds(values: Sequence[float], *, claim: str, fmt: Format = _g,
            minimum: float = 0.0, bounds: Bounds = None) -> Verdict:
  """A direction the paper claims (a slope, a gain), one value per seed.

  holds: n >= 3 and the lower end of the mean's 95% interval exceeds
  ``minimum``; does not hold: the upper end is below it; within noise: the
  interval holds it. The evidence counts the seeds above ``minimum``.
  """
  criterion = (f'{claim}: holds when the lower end of the 95% interval of '
               f'the mean over n ≥ {MIN_SEEDS} seeds exceeds {fmt(minimum)}; '
               'does not hold when its upper end is below it; within noise '
               'when the interval holds it')
  xs = _values(values)
  if len(xs) < MIN_SEEDS:
    return _undecided(criterion, len(xs))
  _, lo, hi, _ = interval(xs, _rate_bounds(fmt, bounds))
  label = _side(lo, hi, minimum)
  over = sum(x > minimum for x in xs)
  return Verdict(label, criterion,
                 f'{over} of {len(xs)} seeds above {fmt(minimum)}; '
                 + mean_interval_text(xs, fmt, bounds)
                 + _noise(label, xs, fmt))


def equivalent(a: Sequence[float], b: Sequence[float], margin: float, *,
               claim: str, fmt: Format = _g, bounds: Bounds = None
               ) -> Verdict:
  """The claim that ``a`` is as good as ``b`` ("as accurate as",
  "matches"), within ``margin``, paired by seed (``a[i]`` and ``b[i]``
  share a seed).

  holds: n >= 3 and the 95% interval of the paired difference ``a - b``
  lies inside ``(-margin, margin)``; does not hold: it lies wholly beyond
  ``margin`` on one side; within noise: it reaches across ``-margin`` or
  ``margin``. A difference of two rates (``fmt`` :func:`pct`, or
  ``bounds`` (0, 1)) stays inside [-1, 1].
  """
  m = fmt(margin)
  criterion = (f'{claim}, paired by seed, within a margin of {m}: holds '
               f'when over n ≥ {MIN_SEEDS} seeds the 95% interval of the '
               f'paired difference lies inside ±{m}; does not hold when it '
               f'lies wholly above {m} or wholly below -{m}; within noise '
               'when it reaches across either end of the margin')
  pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
  if len(pairs) < MIN_SEEDS:
    return _undecided(criterion, len(pairs))
  diffs = [x - y for x, y in pairs]
  rate = _rate_bounds(fmt, bounds) is not None
  mean, lo, hi, n = interval(diffs, (-1.0, 1.0) if rate else None)
  label = ('holds' if -margin < lo and hi < margin else 'does not hold'
           if lo > margin or hi < -margin else 'within noise')
  evidence = (f'mean difference {fmt(mean)} (95% CI {fmt(lo)} to '
              f'{fmt(hi)}; n = {n}), margin ±{m}'
              + _noise(label, diffs, fmt))
  return Verdict(label, criterion, evidence)


def order(groups: Sequence[tuple[str, Sequence[float]]], *, what: str,
          fmt: Format = _g, lower_is_better: bool = True) -> Verdict:
  """The paper's ranking of several models, best first.

  holds: n >= 3 seeds each, and each adjacent pair is in the paper's order
  with a gap between means larger than the sum of their standard
  deviations; does not hold: some adjacent pair is in the reverse order by
  such a gap; within noise: neither. The evidence writes the data's
  relation between neighbours (``<``, ``>`` or ``=``), never the paper's.
  """
  better = 'lower' if lower_is_better else 'higher'
  criterion = (f'{what}, in the paper\'s order, each {better} than the '
               f'next: holds when each model has n ≥ {MIN_SEEDS} seeds and '
               'each neighbour is in that order by more than the sum of '
               'their standard deviations; does not hold when some '
               'neighbour is in the reverse order by more than that sum; '
               'within noise otherwise')
  stats = []
  for name, values in groups:
    xs = _values(values)
    if len(xs) < MIN_SEEDS:
      return _undecided(criterion, len(xs))
    stats.append((name, statistics.fmean(xs), statistics.stdev(xs)))
  sign = 1.0 if lower_is_better else -1.0
  clear, reversed_ = True, False
  text = f'{stats[0][0]} {fmt(stats[0][1])} ± {fmt(stats[0][2])}'
  for (_, m1, s1), (n2, m2, s2) in zip(stats, stats[1:]):
    gap = sign * (m2 - m1)
    clear &= gap > s1 + s2
    reversed_ |= -gap > s1 + s2
    rel = '<' if m1 < m2 else '>' if m1 > m2 else '='
    text += f' {rel} {n2} {fmt(m2)} ± {fmt(s2)}'
  label = ('holds' if clear else 'does not hold' if reversed_
           else 'within noise')
  return Verdict(label, criterion, text)


def not_recorded(reason: str) -> Verdict:
  """A claim with no record behind it: ``undecided``, records missing."""
  return Verdict('undecided', 'records missing: a verdict needs recorded '
                 'runs', reason)


def not_testable(criterion: str, reason: str) -> Verdict:
  """A claim whose records cannot show it (too few seeds solve the task,
  an inert gate, every method at chance): ``reason`` says which."""
  return Verdict('not testable here', criterion, reason)


def withheld(verdict: Verdict, why: str) -> Verdict:
  """``verdict`` made ``undecided`` for a reason its criterion cannot see
  (runs of unequal training, a sweep not yet complete): the criterion
  stays, ``why`` replaces the evidence."""
  return verdict._replace(label='undecided', evidence=why)


def _worst(states: Sequence[str]) -> str:
  for state in ('stale', 'unverifiable'):
    if state in states:
      return state
  return 'current'


def mark_text(states: Sequence[str]) -> str:
  """The mark a verdict cell carries for the worst of ``states``:
  ``' *stale records*'``, ``' *unverifiable records*'`` or ``''``."""
  worst = _worst(states)
  return '' if worst == 'current' else f' *{worst} records*'


def marked(verdict: Verdict, states: Sequence[str]) -> Verdict:
  """``verdict`` with the worst record state of the records behind it
  (``stale`` before ``unverifiable`` before ``current``; unknown states are
  ignored)."""
  worst = _worst(states)
  return verdict if worst == 'current' else verdict._replace(records=worst)


# The columns a page's claims table may name, in the order it prints them.
_PAPER_COLUMNS = ('the paper', 'the papers', 'source')
_EVIDENCE_COLUMNS = ('here', 'evidence')


def _column(header: Sequence[str], names: Sequence[str]) -> int | None:
  for i, name in enumerate(header):
    if name in names:
      return i
  return None


def claims_table(header: Sequence[str], rows: Sequence[Sequence[str]],
                 sections: Sequence[tuple[str, str]] = ()) -> str:
  """A page's claims table: claim, the paper, verdict, evidence and a link
  to the section that shows the data, one row per claim, then a paragraph
  that reads it (:func:`reading`), then the criteria
  once each, numbered (``C1``, ``C2``, ...), each row naming its own in
  its ``criterion`` column; a criterion shared by several claims is listed
  once.

  ``header`` names the columns of ``rows``: ``claim``, ``verdict`` and
  ``criterion``, one of :data:`_PAPER_COLUMNS` and one of
  :data:`_EVIDENCE_COLUMNS`. ``sections`` maps claims to sections as
  ``(prefix, link)`` pairs: a row whose claim starts with ``prefix`` links
  to ``link`` (a Markdown link); the first match wins, and a table without
  ``sections`` has no section column.
  """
  header = list(header)
  need = {'claim': _column(header, ('claim',)),
          'the paper': _column(header, _PAPER_COLUMNS),
          'verdict': _column(header, ('verdict',)),
          'evidence': _column(header, _EVIDENCE_COLUMNS),
          'criterion': _column(header, ('criterion',))}
  missing = [name for name, i in need.items() if i is None]
  if missing:
    raise ValueError(f'claims_table: header {header} lacks {missing}.')
  criteria: dict[str, int] = {}
  out = []
  for row in rows:
    rule = row[need['criterion']]
    key = criteria.setdefault(rule, len(criteria) + 1)
    cells = [row[need['claim']], row[need['the paper']],
             row[need['verdict']], row[need['evidence']], f'C{key}']
    if sections:
      cells.append(next((link for prefix, link in sections
                         if row[need['claim']].startswith(prefix)), ''))
    out.append(cells)
  names = ['claim', header[need['the paper']], 'verdict', 'evidence',
           'criterion']
  names += ['data'] if sections else []
  lines = ['| ' + ' | '.join(names) + ' |', '|' + ' --- |' * len(names)]
  lines += ['| ' + ' | '.join(str(c) for c in cells) + ' |' for cells in out]
  listed = [f'- **C{key}**: {rule}' for rule, key in criteria.items()]
  return ('\n'.join(lines) + '\n\n'
          + reading([(row[need['claim']], row[need['verdict']])
                     for row in rows])
          + '\n\n**Criteria.**\n\n' + '\n'.join(listed) + '\n')


def _plain_label(cell: str) -> str:
  return next((label for label in LABELS if cell.startswith(f'**{label}**')),
              cell)


def reading(claims: Sequence[tuple[str, str]]) -> str:
  """One paragraph that reads a claims table: how many claims each
  verdict has, and which claims hold, do not hold or cannot be tested
  here. ``claims`` holds ``(claim, verdict cell)`` pairs."""
  by_label: dict[str, list[str]] = {}
  for claim, cell in claims:
    by_label.setdefault(_plain_label(cell), []).append(claim)
  counts = ', '.join(f'{label} {len(by_label[label])}' for label in LABELS
                     if label in by_label)
  text = f'**Reading.** {len(claims)} claims; verdicts: {counts}.'
  for label in ('holds', 'does not hold', 'not testable here'):
    if label in by_label:
      text += f' *{label.capitalize()}*: ' + '; '.join(by_label[label]) + '.'
  return text
