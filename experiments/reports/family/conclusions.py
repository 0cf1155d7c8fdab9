"""The family page's conclusions: each claim with its source, the records'
numbers and a verdict from :mod:`experiments.reports.verdicts`.

A claim is one the page makes or one of the methods' papers makes that the
records can test (:data:`SOURCES` says where each comes from).
:func:`conclusion_claims` builds them from the records grouped by
experiment (``family/<name>``: one folder per setup and configuration, e.g.
``interp16_pondernet_reverse_eps``), and :func:`conclusions` writes the
table ``family/conclusions.md``. The PonderNet folders of a setup vary one
factor at a time: ``pondernet_paper`` (the paper's KL, the eps stop on),
``pondernet_paper_noeps``, ``pondernet_reverse_eps`` and
``pondernet_reverse`` (reverse KL, eps stop off, as the public
reproductions train), and the prior's ``pondernet_lambda<l>``.
"""

from collections.abc import Callable, Mapping, Sequence
import statistics
from typing import Any, NamedTuple

from experiments.reports import records, verdicts, verify
from experiments.reports.family.summary import (
  PAPER,
  SOLVED,
  eval_vectors,
  parity_rows,
  runs_from_records,
  solved,
  solved_counts,
)

__all__ = [
    'SOURCES',
    'ADDING_SOLVED',
    'ACT_BINARY_STEP',
    'ACT_BINARY_ERROR',
    'EQUIVALENCE_MARGIN',
    'CHANCE',
    'CHANCE_BAND',
    'CONCLUSION_HEADER',
    'Claim',
    'PONDERNET_VARIANTS',
    'best_on_training_range',
    'conclusion_claims',
    'conclusions',
]

# Where each claim comes from: the papers' sections and figures (the notes
# on them: shared/papers/family.md, act_graves2016.md), or this page's own
# questions about the methods. PonderNet's halting steps growing with
# difficulty is the page's question: the notes on Banino et al. report no
# figure of it (their Sec. 3.1 reports which method solves which range).
SOURCES = {
    'page': 'this page',
    'act_parity': 'Graves 2016, Sec. 3.1, Fig. 4',
    'act_ponder': 'Graves 2016, Sec. 3.1, Fig. 6',
    'pondernet_parity': 'Banino et al. 2021, Sec. 3.1',
    'pondernet_sampling': 'Banino et al. 2021, inference by sampling (P5)',
    'pondernet_prior': 'Banino et al. 2021, the geometric prior '
                       'p_G(n) = lambda_p (1 - lambda_p)^(n-1), mean '
                       '1 / lambda_p',
    'repeat': 'Fojo et al. 2018, parity',
    'skip_adding': 'Campos et al. 2018, Sec. 4.1',
}
# The adding task is "solved" when the MSE is below this share of the mean
# predictor's (1/6): 95% of the target's variance explained, parity's 0.95
# in the adding task's unit. The notes on Skip-RNN give no threshold.
ADDING_SOLVED = 0.05
# ACT's own binary (docs/results/records/act/parity): the step at which a
# single typed run (the history appendix) passed 95% accuracy, and the
# sequence error a seed must be strictly below there. Written out, not
# ``1 - SOLVED``: that is 0.05000000000000004 in floating point, which
# would count a seed at exactly 5% as below it.
ACT_BINARY_STEP = 90_000
ACT_BINARY_ERROR = 0.05
# "As accurate as", "matches": the paired difference of accuracies within
# this margin (one accuracy point), :func:`verdicts.equivalent`.
EQUIVALENCE_MARGIN = 0.01
# Parity's chance accuracy, and how near it a configuration's mean accuracy
# on a range must be to count as at chance there. When every configuration
# of a setup, the plain RNN and Repeat-RNN included, is at chance on the
# test range, no claim about extrapolation is testable in that setup.
CHANCE = 0.5
CHANCE_BAND = 0.05
CHANCE_RULE = ('; not testable here when every configuration of the setup '
               'is at chance on the test range (its mean accuracy over all '
               f'its seeds within {CHANCE_BAND:g} of {CHANCE:g})')
CONCLUSION_HEADER = ('claim', 'source', 'here', 'verdict', 'criterion')


class Claim(NamedTuple):
  """One row of the conclusions: ``here`` are numbers the verdict's own
  evidence does not show ('' for none)."""
  claim: str
  source: str
  here: str
  verdict: verdicts.Verdict
  folders: tuple[str, ...] = ()

  def cells(self) -> list[str]:
    label, evidence, criterion = self.verdict.cells()
    here = f'{self.here}; {evidence}' if self.here else evidence
    return [self.claim, self.source, here, label, criterion]


def _g(x: float) -> str:
  return f'{x:.3g}'


def _claim(groups, *fields) -> Claim:
  """A :class:`Claim` with the folders read through ``groups`` since the
  last claim (a :class:`~experiments.reports.verify.Tracked`)."""
  take = getattr(groups, 'take', None)
  return Claim(*fields, folders=take() if take else ())


def _records(groups, name: str) -> list[Mapping[str, Any]]:
  return list(groups.get(f'{PAPER}/{name}', ()))


def _by_seed(groups, name: str, get: Callable[[Mapping], Any]
             ) -> dict[Any, float]:
  """Seed -> ``get(record)`` over the records of ``family/<name>`` (None
  values left out)."""
  out = {}
  for record in _records(groups, name):
    value = get(record)
    if value is not None:
      out[record.get('seed')] = value
  return out


def _result(key: str) -> Callable[[Mapping], Any]:
  return lambda record: records.value(record, f'results.{key}')


def _state(record: Mapping, key: str) -> str:
  return solved(records.value(record, f'results.{key}'),
                eval_vectors(record))


def _seed_text(name: str, record: Mapping, key: str) -> str:
  """``'name seed 1 at 0.906 (Wilson 0.900 to 0.912)'``: one seed's
  accuracy on the range ``key`` scores, with its Wilson 95% interval."""
  accuracy = records.value(record, f'results.{key}')
  seed = f'{name} seed {record.get("seed")}'
  if accuracy is None:
    return f'{seed} (no accuracy recorded)'
  vectors = eval_vectors(record)
  lo, hi = verdicts.wilson_interval(round(accuracy * vectors), vectors)
  return f'{seed} at {accuracy:.3f} (Wilson {lo:.3f} to {hi:.3f})'


def _every_seed(seeds: Sequence[tuple[str, Mapping]], key: str,
                want: bool) -> verdicts.Verdict:
  """A seed-level rule: every seed of ``seeds`` (``(name, record)``
  pairs) solved (``want``) or failed to solve the range ``key`` scores,
  each by the Wilson rule of :func:`solved`.

  holds: n >= 3 seeds, each in the wanted state; does not hold: some seed
  is in the other (a seed that fails, or one that solves); within noise:
  none is, but some seed is undecided. Not a mean over seeds: one seed
  that fails decides it."""
  goal, other = ('solved', 'not solved') if want else ('not solved',
                                                       'solved')
  wilson = 'the Wilson 95% interval of its accuracy on the held-out vectors'
  first, second = ((f'the lower end of {wilson} above', 'the upper end below')
                   if want else (f'the upper end of {wilson} below',
                                 'the lower end above'))
  criterion = (
      f'{"solved on every seed" if want else "solved on no seed"}, a '
      'seed-level rule (not a mean over seeds): holds when each of n ≥ '
      f'{verdicts.MIN_SEEDS} seeds {"solves" if want else "fails"} the '
      f'range ({first} {SOLVED:g}); does not hold when some seed '
      f'{"fails" if want else "solves"} it ({second} {SOLVED:g}); within '
      f'noise when none does but some seed\'s interval holds {SOLVED:g}')
  states = [(_state(r, key), name, r) for name, r in seeds]
  if len(states) < verdicts.MIN_SEEDS:
    return verdicts.Verdict('undecided', criterion, f'{len(states)} seeds: '
                            f'fewer than {verdicts.MIN_SEEDS}')
  counts = {k: [_seed_text(n, r, key) for s, n, r in states if s == k]
            for k in (goal, 'undecided', other)}
  label = ('holds' if len(counts[goal]) == len(states) else 'does not hold'
           if counts[other] else 'within noise')
  evidence = f'{len(counts[goal])} of {len(states)} seeds {goal}' + ''.join(
      f'; {k}: ' + ', '.join(v) for k, v in counts.items()
      if k != goal and v)
  if not want:
    return verdicts.Verdict(label, criterion, evidence)
  criterion += STILL_LEARNING_RULE
  failed = [(n, r) for s, n, r in states if s == other]
  rising = [_still_learning(n, r, key) for n, r in failed]
  if failed and all(rising):
    return verdicts.not_testable(criterion, (
        f'{evidence}; every seed that fails was still learning when its '
        'training stopped (' + ', '.join(rising) + '): the run is too '
        'short to say that it would not solve the range'))
  return verdicts.Verdict(label, criterion, evidence)


# A failing seed whose accuracy still rises says its run was too short,
# not that the method cannot solve the range.
STILL_LEARNING_RULE = (
    '; not testable here when every seed that fails was still learning when '
    'training stopped: the Wilson 95% interval of its last evaluation lies '
    'above that of its evaluation at half the run')


def _still_learning(name: str, record: Mapping, key: str) -> str | None:
  """``'name seed 1 0.663 at 50,000 -> 0.795 at 100,000'`` when the seed's
  accuracy on the range ``key`` scores rose beyond noise over the second
  half of its run (:data:`STILL_LEARNING_RULE`), else None."""
  curve = [p for p in record.get('curve') or () if p.get(key) is not None]
  if len(curve) < 2:
    return None
  last = curve[-1]
  half = [p for p in curve if p['step'] <= last['step'] / 2]
  if not half:
    return None
  mid, vectors = half[-1], eval_vectors(record)

  def interval(point):
    return verdicts.wilson_interval(round(point[key] * vectors), vectors)
  if interval(last)[0] <= interval(mid)[1]:
    return None
  return (f'{name} seed {record.get("seed")} {mid[key]:.3f} at '
          f'{mid["step"]:,} -> {last[key]:.3f} at {last["step"]:,}')


def _at_chance(groups, setup: str) -> str | None:
  """Why no claim about the test range of ``setup`` can be tested: every
  configuration of the setup (``family/<setup>_*``) has its mean accuracy
  on the test range, over all its seeds, within :data:`CHANCE_BAND` of
  :data:`CHANCE`. None when some configuration is off chance, or none has
  records."""
  prefix = f'{PAPER}/{setup}_'
  means = {}
  for group in sorted(groups):
    if group.startswith(prefix):
      name = group[len(PAPER) + 1:]
      xs = list(_by_seed(groups, name, _result('accuracy')).values())
      if xs:
        means[name] = statistics.fmean(xs)
  if not means or any(abs(m - CHANCE) > CHANCE_BAND
                      for m in means.values()):
    return None
  return (f'every configuration of {setup} ({len(means)}) is at chance on '
          f'the test range, its mean accuracy within {CHANCE_BAND:g} of '
          f'{CHANCE:g}: ' + ', '.join(f'{n} {m:.3f}'
                                      for n, m in means.items())
          + '; the setup cannot tell a method that extrapolates from one '
          'that does not')


def _chance_checked(groups, verdict: verdicts.Verdict,
                    setup: str | None) -> verdicts.Verdict:
  """``verdict`` of a claim about the test range of ``setup``, with
  :data:`CHANCE_RULE` in its criterion, made ``not testable here`` when
  every configuration of the setup is at chance there (:func:`_at_chance`);
  ``verdict`` itself when ``setup`` is None."""
  if setup is None:
    return verdict
  criterion = verdict.criterion + CHANCE_RULE
  reason = _at_chance(groups, setup)
  return (verdicts.not_testable(criterion, reason) if reason
          else verdict._replace(criterion=criterion))


def _solved_claim(groups, names: Sequence[str], claim: str, source: str, *,
                  key: str = 'training_range_accuracy', want: bool = True,
                  only_solved: bool = False, chance: str | None = None
                  ) -> Claim:
  """Whether every seed of ``names`` solved (``want``) or failed to solve
  the range ``key`` scores, seed by seed (:func:`_every_seed`).
  ``only_solved``: only the seeds that solved their training range (stage
  two). ``chance``: the setup whose configurations all at chance on the
  test range make the claim not testable (:func:`_chance_checked`)."""
  seeds, parts = [], []
  for name in names:
    members = [r for r in _records(groups, name) if not only_solved
               or _state(r, 'training_range_accuracy') == 'solved']
    parts.append(f'{name}: {solved_counts([_state(r, key) for r in members])}')
    seeds += [(name, r) for r in members]
  here = ('seeds solved / undecided / not: ' + ', '.join(parts)
          + (' (seeds that solved their training range)' if only_solved
             else ''))
  verdict = _chance_checked(groups, _every_seed(seeds, key, want), chance)
  return _claim(groups, claim, source, here, verdict)


def _slope(record: Mapping) -> float | None:
  """The least-squares slope of steps per input against the number of
  non-zero elements, over the run's per-count report."""
  rows = records.value(record, 'results.by_count') or []
  if len(rows) < 2:
    return None
  return statistics.linear_regression([r['count'] for r in rows],
                                      [r['steps'] for r in rows]).slope


def _slope_claim(groups, name: str, claim: str, source: str) -> Claim:
  slopes = list(_by_seed(groups, name, _slope).values())
  return _claim(groups, claim, source, f'{name}, steps per element',
               verdicts.exceeds(
                   slopes, fmt=_g, claim='steps per input rise with the '
                   'number of non-zero elements (least-squares slope over '
                   'the per-count report above 0)'))


# The range of each quantity the claims read (verdicts.interval): an
# accuracy or a share in [0, 1], a count of steps or multiplications and an
# MSE ratio positive; a slope has none.
RATE = (0.0, 1.0)
# The margin in words, for the claims' text.
_POINTS = (f'{EQUIVALENCE_MARGIN * 100:g} accuracy point'
           + ('' if EQUIVALENCE_MARGIN == 0.01 else 's'))


def _means_text(groups, names: Sequence[str], get,
                bounds: verdicts.Bounds = None) -> str:
  """``name mean (95% CI; n)`` per experiment, the interval inside
  ``bounds`` (the quantity's range)."""
  parts = []
  for name in names:
    xs = list(_by_seed(groups, name, get).values())
    parts.append(f'{name} ' + (verdicts.mean_interval_text(xs, _g, bounds)
                               if xs else 'no records'))
  return '; '.join(parts)


def _paired_claim(groups, a: str, b: str, get, claim: str, source: str, *,
                  lower_is_better: bool, what: str, only_solved=False,
                  note: str = '', bounds: verdicts.Bounds = None,
                  margin: float | None = None, chance: str | None = None
                  ) -> Claim:
  """``a`` better than ``b`` on ``get``, over the seeds both share (and,
  with ``only_solved``, both solved their training range on); with
  ``margin``, ``a`` as good as ``b`` within it
  (:func:`verdicts.equivalent`). ``bounds``: the quantity's range (a
  rate's paired difference stays in [-1, 1]). ``chance``: the setup whose
  configurations all at chance on the test range make the claim not
  testable (:func:`_chance_checked`)."""
  def keep(record):
    return (not only_solved or _state(record, 'training_range_accuracy')
            == 'solved')
  def kept(record):
    return get(record) if keep(record) else None
  xa, xb = (_by_seed(groups, n, kept) for n in (a, b))
  seeds = sorted(set(xa) & set(xb), key=str)
  pa, pb = [xa[s] for s in seeds], [xb[s] for s in seeds]
  rate = bounds if bounds == RATE else None
  verdict = (verdicts.equivalent(pa, pb, margin, claim=f'{a} {what} {b}',
                                 fmt=_g, bounds=rate) if margin is not None
             else verdicts.paired(pa, pb, claim=f'{a} {what} than {b}',
                                  fmt=_g, lower_is_better=lower_is_better,
                                  bounds=rate))
  verdict = _chance_checked(groups, verdict, chance)
  here = _means_text(groups, (a, b), kept, bounds)
  return _claim(groups, claim, source,
                here + (f'; {note}' if note else ''), verdict)


def _cap_note(groups, names: Sequence[str]) -> str:
  """The evaluation step caps of ``names``, from their records: one cap
  when they share it, each one when they differ."""
  caps = {}
  for name in names:
    rows = parity_rows(runs_from_records(
        {f'{PAPER}/{name}': _records(groups, name)}))
    caps[name] = ', '.join(sorted({str(r['eval_cap']) for r in rows}))
  if not caps:
    return ''
  if len(set(caps.values())) == 1:
    return (f'the same cap: each may take up to {next(iter(caps.values()))} '
            'steps at evaluation')
  return 'the caps differ: ' + '; '.join(
      f'{name} may take up to {cap} steps at evaluation'
      for name, cap in caps.items())


def _accuracy(record):
  return records.value(record, 'results.training_range_accuracy')


def _interpolation_claims(groups) -> list[Claim]:
  """16-element interpolation, random positions, GRU 64."""
  src = SOURCES
  act, pn, rev = 'interp16_act_tau1e-3', 'interp16_pondernet_paper', (
      'interp16_pondernet_reverse')
  mults = _result('multiplications')
  return [
      _solved_claim(groups, ('interp16_act_tau1e-3', 'interp16_act_tau1e-4',
                             pn, rev, 'interp16_repeat_rho2',
                             'interp16_repeat_rho3'),
                    'Interpolation, 16 elements: every adaptive method '
                    'solves the range on every seed (ACT at tau 1e-3 and '
                    '1e-4, both PonderNet losses, Repeat-RNN rho 2 and 3)',
                    src['page']),
      _solved_claim(groups, (act,), 'ACT solves parity interpolation '
                    '(here tau 1e-3, 16 elements; the papers: 64)',
                    f'{src["act_parity"]}; {src["pondernet_parity"]}'),
      _solved_claim(groups, ('interp16_act_tau1e-2',), 'ACT at tau 1e-2 '
                    'does not solve 16-element interpolation', src['page'],
                    want=False),
      _slope_claim(groups, act, 'ACT\'s steps per input grow with the '
                   'number of non-zero elements (interpolation)',
                   src['act_ponder']),
      _slope_claim(groups, pn, 'PonderNet\'s halting steps grow with '
                   'difficulty: the paper\'s KL with its eps stop '
                   '(interpolation)', src['page']),
      _slope_claim(groups, rev, 'PonderNet\'s halting steps grow with '
                   'difficulty: reverse KL, eps stop off (interpolation)',
                   src['page']),
      _paired_claim(groups, 'interp16_repeat_rho2', act, _accuracy,
                    'Repeat-RNN with a small rho (rho 2) matches ACT\'s '
                    f'accuracy (tau 1e-3), within {_POINTS}', src['repeat'],
                    lower_is_better=False, what='as accurate as',
                    bounds=RATE, margin=EQUIVALENCE_MARGIN),
      _paired_claim(groups, 'interp16_repeat_rho2', act, mults,
                    'Repeat-RNN (rho 2) needs fewer multiplications per '
                    'input than ACT (tau 1e-3)', src['page'],
                    lower_is_better=True, what='fewer multiplications',
                    bounds=verdicts.POSITIVE),
      _paired_claim(groups, 'interp16_repeat_rho2', pn, mults,
                    'Repeat-RNN (rho 2) needs fewer multiplications per '
                    'input than PonderNet (paper\'s KL)', src['page'],
                    lower_is_better=True, what='fewer multiplications',
                    bounds=verdicts.POSITIVE),
      *(_sampled_claim(groups, name) for name in (pn, rev)),
      *_one_factor_claims(groups, 'interp16'),
      *_lambda_claims(groups, 'interp16'),
  ]


def _variant_text(name: str) -> str:
  """``'interp16_pondernet_paper: the paper's KL, eps stop on'``: a
  PonderNet folder and what its variant is."""
  for (kl, eps), variant in PONDERNET_VARIANTS.items():
    if name.endswith(f'_{variant}'):
      kl_text = 'the paper\'s KL' if kl == 'paper' else 'reverse KL'
      return f'{name}: {kl_text}, eps stop {"on" if eps else "off"}'
  return name


def _sampled_claim(groups, name: str) -> Claim:
  """PonderNet's sampled halting rule as accurate as its median rule,
  within :data:`EQUIVALENCE_MARGIN` (:func:`verdicts.equivalent`)."""
  median = _by_seed(groups, name, _accuracy)
  sample = _by_seed(groups, name, _result('sample_accuracy'))
  seeds = sorted(set(median) & set(sample), key=str)
  verdict = verdicts.equivalent(
      [sample[s] for s in seeds], [median[s] for s in seeds],
      EQUIVALENCE_MARGIN, fmt=_g, bounds=RATE,
      claim='the sampled rule as accurate as the median rule')
  here = (f'{name}: sampled '
          + (verdicts.mean_interval_text([sample[s] for s in seeds], _g,
                                         RATE)
             if seeds else 'no records') + ', median '
          + (verdicts.mean_interval_text([median[s] for s in seeds], _g,
                                         RATE)
             if seeds else 'no records'))
  return _claim(groups, 'PonderNet\'s sampled halting rule is as accurate '
               f'as its median rule, within {_POINTS} '
               f'({_variant_text(name)})', SOURCES['pondernet_sampling'],
               here, verdict)


# The PonderNet variants of a setup, by (KL direction, eps stop on).
PONDERNET_VARIANTS = {('paper', True): 'pondernet_paper',
                      ('paper', False): 'pondernet_paper_noeps',
                      ('reverse', True): 'pondernet_reverse_eps',
                      ('reverse', False): 'pondernet_reverse'}


def _factor_claim(groups, setup: str, steeper: tuple, flatter: tuple,
                  factor: str) -> Claim:
  """One factor of PonderNet's slope (the KL direction, or the eps stop)
  changed with the other held: does ``steeper`` give halting steps that
  grow faster with difficulty than ``flatter``, paired by seed?"""
  a = f'{setup}_{PONDERNET_VARIANTS[steeper]}'
  b = f'{setup}_{PONDERNET_VARIANTS[flatter]}'
  return _paired_claim(
      groups, a, b, _slope, f'{setup}: {factor} steepens PonderNet\'s '
      'halting steps against the number of non-zero elements (one factor '
      'changed, the other held)', SOURCES['page'], lower_is_better=False,
      what='a steeper slope of steps per element')


def _one_factor_claims(groups, setup: str) -> list[Claim]:
  """The page's question "the KL direction or the eps stop sets the
  slope", answered one factor at a time: each direction with the stop on
  and off, and each stop setting under both directions."""
  if not all(_records(groups, f'{setup}_{v}')
             for v in PONDERNET_VARIANTS.values()):
    return [_claim(groups, f'{setup}: the KL direction, not the eps stop, '
                  'sets the slope of PonderNet\'s halting steps',
                  SOURCES['page'], '', verdicts.not_recorded(
                      'needs the four variants (each KL direction with the '
                      'eps stop on and off)'))]
  return [
      _factor_claim(groups, setup, ('reverse', True), ('paper', True),
                    'reversing the KL (eps stop on)'),
      _factor_claim(groups, setup, ('reverse', False), ('paper', False),
                    'reversing the KL (eps stop off)'),
      _factor_claim(groups, setup, ('paper', False), ('paper', True),
                    'turning the eps stop off (the paper\'s KL)'),
      _factor_claim(groups, setup, ('reverse', False), ('reverse', True),
                    'turning the eps stop off (reverse KL)'),
  ]


# PonderNet's lambda_p grid of a setup: (smaller, larger) pairs, each the
# paper's KL with its eps stop, only lambda_p changed.
LAMBDA_PAIRS = (('pondernet_lambda0.1', 'pondernet_paper'),
                ('pondernet_paper', 'pondernet_lambda0.4'))
_LAMBDA = {'pondernet_lambda0.1': '0.1', 'pondernet_paper': '0.2',
           'pondernet_lambda0.4': '0.4'}


def _lambda_claims(groups, setup: str) -> list[Claim]:
  """The prior's one factor: does a smaller lambda_p (a prior with more
  expected steps) make PonderNet halt later, paired by seed?"""
  if not all(_records(groups, f'{setup}_{n}') for n in _LAMBDA):
    return [_claim(groups, f'{setup}: a smaller lambda_p gives PonderNet '
                  'more halting steps', SOURCES['pondernet_prior'], '',
                  verdicts.not_recorded('needs lambda_p 0.1, 0.2 and 0.4'))]
  return [_paired_claim(
      groups, f'{setup}_{a}', f'{setup}_{b}', _result('steps'),
      f'{setup}: lambda_p {_LAMBDA[a]} instead of {_LAMBDA[b]} (the prior\'s '
      'mean 1 / lambda_p larger) gives PonderNet more halting steps per '
      'input (one factor changed)', SOURCES['pondernet_prior'],
      lower_is_better=False, what='more steps per input',
      bounds=verdicts.POSITIVE)
          for a, b in LAMBDA_PAIRS]


def best_on_training_range(groups, setup: str, method: str) -> str | None:
  """The experiment of ``method`` in ``setup`` whose mean training-range
  accuracy is highest: a grid value chosen before the test range is looked
  at. None when the setup has none of it."""
  prefix = f'{PAPER}/{setup}_'
  names = [g[len(f'{PAPER}/'):] for g in groups if g.startswith(prefix)
           and groups[g] and records.value(groups[g][0], 'results.method')
           == method]
  scored = [(statistics.fmean(v), n) for n in names
            if (v := list(_by_seed(groups, n, _accuracy).values()))]
  return max(scored)[1] if scored else None


def _chosen_claim(groups) -> Claim:
  """PonderNet against ACT in extrapolation, each at the grid value that
  did best on the training range."""
  pn = best_on_training_range(groups, 'extrap16', 'pondernet')
  act = best_on_training_range(groups, 'extrap16', 'act')
  claim = ('PonderNet extrapolates better than ACT, each at the grid value '
           'best on the training range (test-range accuracy, seeds that '
           'solved their training range)')
  if pn is None or act is None:
    return _claim(groups, claim, SOURCES['pondernet_parity'], '',
                 verdicts.not_recorded('no PonderNet or ACT records'))
  return _paired_claim(groups, pn, act, _result('accuracy'), claim,
                       SOURCES['pondernet_parity'], lower_is_better=False,
                       what='more accurate on the test range',
                       only_solved=True, bounds=RATE, chance='extrap16',
                       note=f'chosen: {pn}, {act}; '
                       + _cap_note(groups, (pn, act)))


def _extrapolation_claims(groups) -> list[Claim]:
  """16 elements, trained on 1-8, tested on 9-16."""
  src = SOURCES
  act, pn = 'extrap16_act_tau1e-3', 'extrap16_pondernet_paper'
  test = _result('accuracy')
  return [
      _solved_claim(groups, (act, pn, 'extrap16_pondernet_reverse',
                             'extrap16_repeat_rho2', 'extrap16_repeat_rho3'),
                    'Extrapolation, stage one: every method but the RNN '
                    'solves the training range 1-8 (ACT at tau 1e-3)',
                    src['page']),
      _solved_claim(groups, (pn, 'extrap16_pondernet_reverse'),
                    'PonderNet extrapolates: it solves the test range '
                    '(here 9-16 of 16; the paper: 49-96 of 96)',
                    src['pondernet_parity'], key='accuracy',
                    only_solved=True, chance='extrap16'),
      _solved_claim(groups, (act,), 'ACT does not extrapolate: it does not '
                    'solve the test range (here 9-16 of 16)',
                    src['pondernet_parity'], key='accuracy', want=False,
                    only_solved=True, chance='extrap16'),
      _paired_claim(groups, pn, act, test, 'PonderNet extrapolates better '
                    'than ACT (test-range accuracy, seeds that solved the '
                    'training range)', src['pondernet_parity'],
                    lower_is_better=False, what='more accurate on the test '
                    'range', only_solved=True, bounds=RATE,
                    chance='extrap16', note=_cap_note(groups, (pn, act))),
      _slope_claim(groups, pn, 'PonderNet\'s halting steps grow with '
                   'difficulty: the paper\'s KL (extrapolation, counts '
                   '1-16)', src['page']),
      _slope_claim(groups, 'extrap16_pondernet_reverse', 'PonderNet\'s '
                   'halting steps grow with difficulty: reverse KL, eps '
                   'stop off (extrapolation, counts 1-16)', src['page']),
      _chosen_claim(groups),
      *_one_factor_claims(groups, 'extrap16'),
      *_lambda_claims(groups, 'extrap16'),
  ]


def _act_setting_claims(groups) -> list[Claim]:
  """ACT's own setting: Elman 128, prefix layout, M = 100."""
  src = SOURCES

  def ranking():      # read where its claim is made: the claim's records
    return [(name, list(_by_seed(groups, name, _accuracy).values()))
            for name in ('actset64_repeat_rho3', 'actset64_pondernet_paper',
                         'actset64_act_tau1e-2', 'actset64_rnn')]
  return [
      _solved_claim(groups, tuple(
          f'actset16_{m}' for m in ('rnn', 'act_tau1e-2', 'act_tau1e-3',
                                    'repeat_rho3', 'pondernet_paper')),
          'Prefix layout, 16 elements: every configuration, the one-step '
          'RNN included, solves the range', src['page']),
      _solved_claim(groups, ('actset64_act_tau1e-2',), 'ACT with its tau '
                    '0.01 solves parity in its own setting (64 elements, '
                    'prefix layout, 100,000 updates here)',
                    src['act_parity']),
      _solved_claim(groups, ('actset64_pondernet_paper',), 'PonderNet '
                    'solves ACT\'s setting at 64 elements',
                    src['pondernet_parity']),
      _claim(groups, 'Repeat-RNN (rho 3) is the most accurate method in '
             'ACT\'s setting at 64 elements, then PonderNet, ACT, the RNN',
             f'{src["page"]}; {src["repeat"]}', '',
             verdicts.order(ranking(), what='training-range accuracy', fmt=_g,
                           lower_is_better=False)),
      _act_binary_claim(groups),
  ]


def _act_binary_claim(groups) -> Claim:
  """The claim of a single typed run (the history appendix): ACT's own
  binary below :data:`ACT_BINARY_ERROR` sequence error at
  :data:`ACT_BINARY_STEP`, judged on its seeds (a seed exactly at the bound
  is not below it)."""
  errors = {record.get('seed'): point.get('sequence_error')
            for record in groups.get('act/parity', ())
            for point in record.get('curve') or ()
            if point.get('step') == ACT_BINARY_STEP}
  bound = ACT_BINARY_ERROR

  def seeds(keep) -> str:
    return ', '.join(f'seed {s} at {verdicts.pct(e)}'
                     for s, e in errors.items()
                     if e is not None and keep(e))
  below = sum(e is not None and e < bound for e in errors.values())
  at = seeds(lambda e: e == bound)
  here = (f'{below} of {len(errors)} seeds strictly below '
          f'{verdicts.pct(bound)} sequence error'
          + (f' ({seeds(lambda e: e < bound)})' if below else '')
          + (f'; at it, not below: {at}' if at else ''))
  return _claim(
      groups,
      f'ACT\'s own binary (experiments.act_parity --tau=0.01) passes '
      f'{1 - bound:.0%} accuracy at {ACT_BINARY_STEP:,} steps',
      'one typed run (history appendix); records act/parity', here,
      verdicts.below(list(errors.values()), bound, fmt=verdicts.pct,
                     what=f'sequence error at step {ACT_BINARY_STEP:,}'))


def _adding_claims(groups) -> list[Claim]:
  """The adding task, 1,000 updates."""
  ratio = _result('valid.mse_over_baseline')
  fraction = _result('valid.update_fraction')
  out = []
  for name in ('adding_lstm', 'adding_gru', 'adding_skip_lstm',
               'adding_skip_gru'):
    out.append(_claim(
        groups,
        f'{name}: at (nearly) full computation it solves the adding task '
        'in 1,000 updates', SOURCES['page'],
        'update fraction ' + _means_text(groups, (name,), fraction, RATE),
        verdicts.below(list(_by_seed(groups, name, ratio).values()),
                       ADDING_SOLVED, fmt=_g, bounds=verdicts.POSITIVE,
                       what='MSE over the mean predictor\'s')))
  skip = 'adding_skip_lstm_budget1e-2'
  # The paper's claim is of a model trained to convergence: 1,000 updates
  # cannot show it either way, so the row reports what they measured.
  measured = verdicts.below(list(_by_seed(groups, skip, ratio).values()),
                            ADDING_SOLVED, fmt=_g, bounds=verdicts.POSITIVE,
                            what='MSE over the mean predictor\'s')
  out += [
      _paired_claim(groups, 'adding_lstm', 'adding_skip_lstm_budget1e-3',
                    ratio, 'Skipping costs accuracy at this budget of '
                    'updates: LSTM below Skip-LSTM (lambda 1e-3) in MSE',
                    SOURCES['page'], lower_is_better=True,
                    what='lower MSE over the mean predictor\'s',
                    bounds=verdicts.POSITIVE),
      _claim(groups, 'Skip-LSTM solves the adding task with most updates '
            'skipped (here lambda 1e-2, 1,000 updates; the paper trains to '
            'convergence)', SOURCES['skip_adding'],
            'update fraction ' + _means_text(groups, (skip,), fraction,
                                             RATE),
            verdicts.not_testable(
                measured.criterion + '; not testable here for a claim of '
                'a model trained to convergence, at 1,000 updates',
                '1,000 updates here, far below the '
                'paper\'s training to convergence: a run this short cannot '
                'show what the converged model does (measured at 1,000 '
                f'updates: {measured.evidence})')),
  ]
  return out


def _not_run_claims() -> list[Claim]:
  """The papers' claims at sizes no record has."""
  return [
      Claim('PonderNet extrapolates at its size (96 elements, trained on '
            '1-48) where ACT does not', SOURCES['pondernet_parity'], '',
            verdicts.not_recorded('not run: the paper\'s size and its '
                                  'number of updates do not fit this '
                                  'machine\'s budget')),
      Claim('Skip-RNN solves the adding task trained to convergence',
            SOURCES['skip_adding'], '',
            verdicts.not_recorded('not run: 1,000 updates per run here')),
  ]


def conclusion_claims(groups: Mapping[str, Sequence[Mapping[str, Any]]],
                      statuses: Mapping[str, Mapping[str, Any]] | None = None
                      ) -> list[Claim]:
  """Every claim the family page makes, and every claim of the methods'
  papers it tests, with its verdict from the records; a verdict resting on
  a folder ``statuses`` calls stale or unverifiable carries the mark
  (:func:`~experiments.reports.verdicts.marked`)."""
  groups = verify.Tracked(groups)
  claims = (_interpolation_claims(groups) + _extrapolation_claims(groups)
          + _act_setting_claims(groups) + _adding_claims(groups)
          + _not_run_claims())
  return [c._replace(verdict=verdicts.marked(
      c.verdict, verify.states(c.folders, statuses or {}))) for c in claims]


def conclusions(groups: Mapping[str, Sequence[Mapping[str, Any]]],
                statuses: Mapping[str, Mapping[str, Any]] | None = None
                ) -> str:
  """The conclusions table (``family/conclusions.md``): claim, source,
  the records' numbers, verdict and criterion per row."""
  return verdicts.claims_table(
      CONCLUSION_HEADER,
      [c.cells() for c in conclusion_claims(groups, statuses)])
