r"""Adaptive depth in a character language model, from its run records.

The experiments (folders of records) this module reads are runs of ``python
-m experiments.depth_lm``: a causal character-level Transformer language
model on Penn Treebank characters whose one shared block runs at an
adaptive depth, each run followed by the same command with
``--class_report``. That report's ``classes.csv`` (per character class:
``count``, mean ``depth``, ``ponder`` and ``bpc``) is kept by
``experiments.record`` as the record's ``tables['classes']``, as every small
CSV of a run is kept under its stem; ``results['by_class']`` holds the same
rows (the binary's ``results.json``), read when the table is absent:

* ``depth/lm_fixed3``, ``depth/lm_fixed6``: ``--mode=fixed --depth=3`` and
  ``--depth=6``: no unit, the fixed depths every adaptive model is set
  against;
* ``depth/lm_per_token``: ``--mode=per_token``, ACT per character (the
  Universal Transformer's dynamic halting), at most 6 applications;
* ``depth/lm_per_token_pondernet``: ``--mode=per_token_pondernet``,
  PonderNet's halting distribution per character;
* ``depth/lm_route_m5``: ``--mode=route --max_depth=5``, Mixture-of-
  Recursions' capacity routing over 5 steps, trained by top-k and evaluated
  by its causal threshold rule (top-k's numbers beside it, for reference).

Another ``depth/lm_*`` folder gets a row in the tables and a point in the
figures, labelled from its flags; the claims read the three adaptive
folders above, each against the recorded fixed depth nearest its compute.

:func:`outputs` gives the claims (``depth/lm_summary.md``: each claim, the
papers it comes from, a verdict of :mod:`experiments.reports.verdicts` with
its criterion), the table per configuration with the commands that made it
(``depth/lm.md``), depth and bpc per character class (``depth/lm_classes.md``,
``depth/lm_classes.svg``) and held-out bpc against compute and against
measured time (``depth/lm_pareto.svg``). The fragments and figures are
written with or without records (the page includes them): without, they say
so and every claim is undecided.

The claims (no paper trains this model; these are the claims it tests):

* (e) an adaptive model ends below the fixed depth of equal compute in
  held-out bpc (the Universal Transformer, Dehghani et al. 2019; Mixture-of-
  Recursions, Bae et al. 2025): against the recorded fixed depth nearest in
  multiply-adds per character, within :data:`COMPUTE_TOLERANCE`;
* (f) routing's saving shows on the clock (Mixture-of-Recursions): its
  measured updates per second against the fixed depth of its training
  compute and against ACT per token;
* (g) more depth at spaces and word starts than inside words (ACT, Graves
  2016, Sec. 3.5), unless the halting or routing unit is inert
  (:data:`INERT_MARGIN`).

Example::

  groups = records.read_records('docs/results/records')
  print(lm.summary_text(groups))
"""

from collections.abc import Callable, Mapping, Sequence
import math
import statistics
from typing import Any, NamedTuple

from experiments.reports import plots, records, verdicts, verify
from vcrnn_jax.papers.depth import lm as depth_lm

__all__ = [
    'PREFIX',
    'FIXED_SHALLOW',
    'FIXED_DEEP',
    'PER_TOKEN',
    'PER_TOKEN_PONDERNET',
    'ROUTE',
    'ADAPTIVE',
    'COMPUTE_TOLERANCE',
    'INERT_MARGIN',
    'LOAD_ALONE',
    'SUMMARY_HEADER',
    'label',
    'mode',
    'configurations',
    'class_rows',
    'class_depth',
    'nearest_fixed',
    'inert_seeds',
    'load_text',
    'summary_text',
    'lm_table',
    'classes_table',
    'pareto_data',
    'classes_data',
    'ParetoAxes',
    'draw_pareto',
    'draw_classes',
    'outputs',
]

PREFIX = 'depth/lm_'
# The planned fixed depths: 3, the compute of route at M = 5 (a mean depth
# of 3 by MoR's schedule), and 6, the adaptive models' most applications.
FIXED_SHALLOW = 'depth/lm_fixed3'
FIXED_DEEP = 'depth/lm_fixed6'
PER_TOKEN = 'depth/lm_per_token'
PER_TOKEN_PONDERNET = 'depth/lm_per_token_pondernet'
ROUTE = 'depth/lm_route_m5'
ADAPTIVE = (PER_TOKEN, PER_TOKEN_PONDERNET, ROUTE)
# "Equal compute": an adaptive model's multiply-adds per character within
# 15% of the fixed depth's. One application is a third of fixed depth 3's
# compute, so within 15% (under half of that step) no other whole fixed
# depth is nearer; at fixed depth 6 it is less than one application. Further
# apart, a difference in bpc would be the compute's as much as the
# method's: the verdict is "not testable here". The same tolerance matches
# routing's training depth to a fixed depth for the clock (f), and bounds
# how much slower routing may run there: a model with up to 15% more
# compute may take up to 15% longer with no overhead of its own.
COMPUTE_TOLERANCE = 0.15
# An inert unit: depths are whole applications per character, so a class
# whose mean depth is within 0.05 of the floor (or of the cap) has at most
# one character in twenty off it; when every class is, the unit sets the
# depth of almost no character and a difference between classes measures
# those few, not a halting pattern (the logic page's INERT_DEPTH is the
# same 0.05).
INERT_MARGIN = 0.05
# Below this 1-minute load average at its start, a run on the 2-core CPU-2
# had the machine to itself (the run itself has not loaded it yet); the
# ACT page reads the manifests' load the same way.
LOAD_ALONE = 0.5
SUMMARY_HEADER = ['claim', 'the papers', 'verdict', 'here', 'criterion']
# The classes the claims (g) compare, from the binary's own list.
_SPACE, _WORD_START, _INSIDE = depth_lm.CLASSES[:3]
# The planned folders in words, for a claim whose folder has no record yet.
_NAMES = {PER_TOKEN: 'per token', PER_TOKEN_PONDERNET: 'per token, PonderNet',
          ROUTE: 'routing, 5 steps', FIXED_SHALLOW: 'fixed depth 3',
          FIXED_DEEP: 'fixed depth 6'}

# Sources of the claims: no paper trains this model.
_UT_EQUAL = ('UT: dynamic halting "improves accuracy on several tasks" '
             'against a fixed number of steps (Dehghani et al. 2019, '
             'abstract); MoR: lower validation perplexity than vanilla and '
             'recursive baselines at equal training FLOPs (Bae et al. 2025, '
             'abstract); ACT on Wikipedia characters: no large gain (Graves '
             '2016, Sec. 3.5)')
_MOR_CLOCK = ('MoR: higher throughput than vanilla and recursive baselines '
              '(Bae et al. 2025, abstract; measured at inference there, in '
              'training here); per-position halting runs the block until '
              'the last position halts (Dehghani et al. 2019, Sec. 2.2)')
_ACT_SPACES = ('ACT: more ponder at spaces between words and at boundary '
               'characters (Graves 2016, Sec. 3.5, Fig. 23)')


def _bpc(x: float) -> str:
  return f'{x:.3f}'


def _depth(x: float) -> str:
  return f'{x:.2f}'


def _mults(x: float) -> str:
  return f'{x / 1e3:,.0f}k'


def _rate(x: float) -> str:
  return f'{x:.2f}'


def _ratio(x: float) -> str:
  return f'{x:.2f}×'


def _share(x: float) -> str:
  return f'{100 * x:.0f}%'


# The shared formatting of the depth reports (records'), by short names.
_mean_std = records.mean_std_text
_by_seed = records.by_seed


def _plural(n: int, word: str) -> str:
  return f'{n} {word}' + ('' if n == 1 else 's')


# ----------------------------------------------------------------------------
# What a record holds.


def _flags(runs) -> dict:
  return (runs[0].get('flags') or {}) if runs else {}


def mode(runs: Sequence[Mapping[str, Any]]) -> str | None:
  """The ``--mode`` of a folder's runs (their flags); None without."""
  return _flags(runs).get('mode')


def label(folder: str, runs: Sequence[Mapping[str, Any]]) -> str:
  """``'fixed depth 3'``, ``'per token'``, ``'per token, PonderNet'``,
  ``'routing, 5 steps'``: a folder's configuration in words, from its runs'
  flags (the folder's name when they have none)."""
  flags = _flags(runs)
  kind = flags.get('mode')
  if kind == 'fixed' and flags.get('depth') is not None:
    return f'fixed depth {flags["depth"]}'
  if kind == 'per_token':
    return 'per token'
  if kind == 'per_token_pondernet':
    return 'per token, PonderNet'
  if kind == 'route':
    return f'routing, {flags.get("max_depth")} steps'
  return _NAMES.get(folder, folder.removeprefix(PREFIX).replace('_', ' '))


def _order(folder: str, runs) -> tuple:
  # The adaptive kinds first, then the fixed depths ascending, then others.
  if folder in ADAPTIVE:
    return (0, ADAPTIVE.index(folder), folder)
  if mode(runs) == 'fixed':
    return (1, _flags(runs).get('depth') or 0, folder)
  return (2, 0, folder)


def configurations(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                   ) -> list[tuple[str, str, list]]:
  """``(folder, label, runs)`` of every ``depth/lm_*`` folder: the three
  adaptive ones, the fixed depths ascending, then others; runs by seed."""
  found = [(name, runs) for name, runs in groups.items()
           if name.startswith(PREFIX) and runs]
  return [(name, label(name, runs), _by_seed(runs))
          for name, runs in sorted(found, key=lambda g: _order(*g))]


def _final(run: Mapping[str, Any], key: str) -> float | None:
  value = (run.get('final') or {}).get(key)
  if value is None and key == 'steps_per_sec':
    value = (run.get('results') or {}).get(key)
  return None if value is None else float(value)


def _values(runs, key: str) -> list[float]:
  return [v for v in (_final(r, key) for r in runs) if v is not None]


def _mean(runs, key: str) -> float | None:
  values = _values(runs, key)
  return statistics.fmean(values) if values else None


def class_rows(run: Mapping[str, Any]) -> list[dict]:
  """The run's class report (one row per character class: ``class``,
  ``count``, ``depth``, ``ponder``, ``bpc``) in the binary's class order;
  empty without one."""
  rows = ((run.get('tables') or {}).get('classes')
          or (run.get('results') or {}).get('by_class') or [])
  order = {name: i for i, name in enumerate(depth_lm.CLASSES)}
  return sorted(rows, key=lambda d: order.get(d['class'], len(order)))


def class_depth(run: Mapping[str, Any], name: str,
                key: str = 'depth') -> float | None:
  """The mean ``key`` (``depth``, ``ponder``, ``bpc``) at characters of
  class ``name`` in the run's class report; None without it."""
  row = next((d for d in class_rows(run) if d['class'] == name), None)
  value = None if row is None else row.get(key)
  return float(value) if isinstance(value, (int, float)) else None


def _paired(a_runs, b_runs, a_key: str, b_key: str | None = None
            ) -> tuple[list[float], list[float]]:
  """``a_key`` of ``a_runs`` and ``b_key`` of ``b_runs`` (default the
  same) over the seeds both have, seed by seed."""
  b = {r['seed']: _final(r, b_key or a_key) for r in b_runs}
  shared = [r for r in _by_seed(a_runs) if b.get(r['seed']) is not None
            and _final(r, a_key) is not None]
  return ([_final(r, a_key) for r in shared],
          [b[r['seed']] for r in shared])


def nearest_fixed(groups: Mapping[str, Sequence[Mapping[str, Any]]],
                  target: float, key: str
                  ) -> tuple[str, float, float] | None:
  """``(folder, mean, gap)``: the recorded fixed-depth folder whose mean
  ``key`` over seeds (``mults``, ``depth``) is nearest ``target``, that
  mean, and the relative gap ``|target - mean| / mean``; None without a
  fixed depth that records ``key``."""
  best = None
  for folder, _, runs in configurations(groups):
    value = _mean(runs, key) if mode(runs) == 'fixed' else None
    # Nearest in absolute terms (a relative gap would favour the deeper
    # of two depths); the gap relative to the fixed depth's.
    if value and (best is None or abs(target - value) < abs(target - best[1])):
      best = (folder, value, abs(target - value) / value)
  return best


def _floor_cap(run: Mapping[str, Any]) -> tuple[int, int | None]:
  """The fewest and the most applications a character can take: a halting
  unit applies the block at least once; route's threshold rule may run no
  step at all (a router that says ``z <= 0`` at the first); the cap is
  ``--max_depth``."""
  flags = run.get('flags') or {}
  cap = flags.get('max_depth')
  if cap is None:
    cap = ((run.get('results') or {}).get('model') or {}).get('max_depth')
  return (0 if flags.get('mode') == 'route' else 1), cap


def inert_seeds(runs: Sequence[Mapping[str, Any]]) -> list:
  """The seeds whose unit is inert: every class's mean depth within
  :data:`INERT_MARGIN` of the floor, or every one within it of the cap
  (:func:`_floor_cap`); runs without a class report are not counted."""
  out = []
  for run in _by_seed(runs):
    depths = [d['depth'] for d in class_rows(run)]
    if not depths:
      continue
    floor, cap = _floor_cap(run)
    if (all(abs(d - floor) <= INERT_MARGIN for d in depths)
        or (cap is not None
            and all(abs(cap - d) <= INERT_MARGIN for d in depths))):
      out.append(run.get('seed'))
  return out


def load_text(runs: Sequence[Mapping[str, Any]]) -> str:
  """Whether the runs trained alone, from the 1-minute load average each
  training start recorded (``load`` in its manifest; the class report's
  start is left out: it times nothing)."""
  starts = [s for r in runs for s in r.get('starts') or []
            if '--class_report' not in (s.get('command') or '')]
  if not runs:
    return ''
  known = [s['load'][0] for s in starts if s.get('load')]
  if not starts or len(known) < len(starts):
    return (f'{len(starts) - len(known)} of {_plural(len(starts), "start")} '
            'recorded no load average, so whether those runs trained alone '
            'is unknown')
  if max(known) < LOAD_ALONE:
    return (f'every run started alone (a 1-minute load average below '
            f'{LOAD_ALONE} at each start)')
  return (f'runs started beside other jobs (a 1-minute load average of '
          f'{min(known):.1f} to {max(known):.1f} at their starts)')


# ----------------------------------------------------------------------------
# The summary: one row per claim.


def _equal_compute_row(groups, adaptive: str) -> list[str]:
  """(e): an adaptive model's held-out bpc against the fixed depth nearest
  its multiply-adds per character, paired by seed."""
  runs = groups.get(adaptive, [])
  name = label(adaptive, runs)
  claim = f'(e) {name} ends below the fixed depth of equal compute in bpc'
  what = ('an adaptive model ends below the recorded fixed depth nearest '
          'its multiply-adds per character (mults, means over seeds) in '
          'held-out bits per character, the two within '
          f'{_share(COMPUTE_TOLERANCE)} in mults (further apart: not '
          'testable here)')
  criterion = verdicts.paired([], [], claim=what).criterion
  if not runs:
    return [claim, _UT_EQUAL, *verdicts.not_recorded(
        f'no record in {adaptive}').cells()]
  compute = _mean(runs, 'mults')
  if compute is None:
    return [claim, _UT_EQUAL, *verdicts.not_recorded(
        f'no mults in the records of {adaptive}').cells()]
  nearest = nearest_fixed(groups, compute, 'mults')
  if nearest is None:
    return [claim, _UT_EQUAL, *verdicts.not_recorded(
        f'no record of a fixed depth ({PREFIX}fixed*)').cells()]
  fixed, fixed_compute, gap = nearest
  fixed_runs = groups[fixed]
  fixed_name = label(fixed, fixed_runs)
  match = (f'against {fixed_name}, nearest in mults: {_mults(compute)} '
           f'against {_mults(fixed_compute)} per character, '
           f'{_share(gap)} apart')
  if gap > COMPUTE_TOLERANCE:
    v = verdicts.not_testable(
        criterion, f'{match}, more than {_share(COMPUTE_TOLERANCE)}: no '
        'recorded fixed depth has its compute, and a difference in bpc '
        'would be the compute\'s as much as the method\'s')
    return [claim, _UT_EQUAL, *v.cells()]
  a, b = _paired(runs, fixed_runs, 'bpc')
  v = verdicts.paired(a, b, claim=what, fmt=_bpc)
  here = f'{match}; '
  if a:
    here += f'bpc {_mean_std(a, _bpc)} against {_mean_std(b, _bpc)}; '
  return [claim, _UT_EQUAL, v.cell, here + v.evidence, v.criterion]


def _speed_ratios(a_runs, b_runs) -> list[float]:
  """Per seed both have, ``a``'s updates per second over ``b``'s."""
  a, b = _paired(a_runs, b_runs, 'steps_per_sec')
  return [x / y for x, y in zip(a, b) if y > 0]


def _rates_text(a_runs, b_runs, a_name: str, b_name: str) -> str:
  a, b = _values(a_runs, 'steps_per_sec'), _values(b_runs, 'steps_per_sec')
  if not a or not b:
    return ''
  return (f'updates/s {_mean_std(a, _rate)} ({a_name}) against '
          f'{_mean_std(b, _rate)} ({b_name}); ')


def _clock_fixed_row(groups) -> list[str]:
  """(f): routing's updates per second against the fixed depth of its
  training compute (top-k's depth), as a ratio paired by seed."""
  runs = groups.get(ROUTE, [])
  name = label(ROUTE, runs)
  claim = f'(f) {name} trains as fast as the fixed depth of its compute'
  tolerance = _share(COMPUTE_TOLERANCE)
  what = ('per seed, routing\'s updates per second over those of the '
          'recorded fixed depth nearest its training depth (top-k\'s; '
          f'within {tolerance}, else not testable here): routing keeps the '
          f'fixed depth\'s clock, less the {tolerance} by which its compute '
          'may exceed the fixed depth\'s')
  criterion = verdicts.exceeds([], claim=what, fmt=_ratio,
                               minimum=1 - COMPUTE_TOLERANCE).criterion
  if not runs:
    return [claim, _MOR_CLOCK, *verdicts.not_recorded(
        f'no record in {ROUTE}').cells()]
  # The clock times training updates, and route trains by top-k: its
  # training compute is top-k's depth, not the threshold rule's that (e)
  # reads.
  depth = _mean(runs, 'depth_top_k')
  if depth is None:
    return [claim, _MOR_CLOCK, *verdicts.not_recorded(
        f'no depth_top_k in the records of {ROUTE}').cells()]
  nearest = nearest_fixed(groups, depth, 'depth')
  if nearest is None:
    return [claim, _MOR_CLOCK, *verdicts.not_recorded(
        f'no record of a fixed depth ({PREFIX}fixed*)').cells()]
  fixed, fixed_depth, gap = nearest
  fixed_name = label(fixed, groups[fixed])
  match = (f'against {fixed_name}, nearest in training depth: '
           f'{_depth(depth)} (top-k) against {_depth(fixed_depth)}, '
           f'{_share(gap)} apart')
  if gap > COMPUTE_TOLERANCE:
    v = verdicts.not_testable(
        criterion, f'{match}, more than {_share(COMPUTE_TOLERANCE)}: no '
        'recorded fixed depth trains at its compute')
    return [claim, _MOR_CLOCK, *v.cells()]
  v = verdicts.exceeds(_speed_ratios(runs, groups[fixed]), claim=what,
                       fmt=_ratio, minimum=1 - COMPUTE_TOLERANCE,
                       bounds=verdicts.POSITIVE)
  return [claim, _MOR_CLOCK, v.cell,
          f'{match}; ' + _rates_text(runs, groups[fixed], name, fixed_name)
          + v.evidence, v.criterion]


def _clock_act_row(groups) -> list[str]:
  """(f): routing's updates per second against ACT per token's, as a
  ratio paired by seed."""
  runs, act = groups.get(ROUTE, []), groups.get(PER_TOKEN, [])
  name, act_name = label(ROUTE, runs), label(PER_TOKEN, act)
  claim = f'(f) {name} trains faster than {act_name}'
  what = ('routing trains more updates per second than ACT per token: the '
          'ratio of updates per second, paired by seed')
  if not runs or not act:
    missing = ' and '.join(f for f, r in ((ROUTE, runs), (PER_TOKEN, act))
                           if not r)
    return [claim, _MOR_CLOCK, *verdicts.not_recorded(
        f'no record in {missing}').cells()]
  v = verdicts.exceeds(_speed_ratios(runs, act), claim=what, fmt=_ratio,
                       minimum=1.0, bounds=verdicts.POSITIVE)
  here = _rates_text(runs, act, name, act_name)
  depths = [_mean(runs, 'depth_top_k'), _mean(act, 'depth')]
  if None not in depths:
    here += (f'mean depth {_depth(depths[0])} (top-k, as it trains) against '
             f'{_depth(depths[1])}; ')
  return [claim, _MOR_CLOCK, v.cell, here + v.evidence, v.criterion]


def _classes_text(runs) -> str:
  """``'depth space 2.10, word start 1.80, ... (mean over 3 seeds); '``."""
  reports = [r for r in runs if class_rows(r)]
  if not reports:
    return ''
  parts = []
  for name in depth_lm.CLASSES:
    values = [v for v in (class_depth(r, name) for r in reports)
              if v is not None]
    if values:
      parts.append(f'{name} {_depth(statistics.fmean(values))}')
  return (f'depth {", ".join(parts)} (mean over '
          f'{_plural(len(reports), "seed")}); ')


def _inert_text(seeds: Sequence, runs) -> str:
  floor, cap = _floor_cap(runs[0])
  return (('seeds ' if len(seeds) > 1 else 'seed ')
          + ', '.join(map(str, seeds)) + ' inert (every class within '
          f'{INERT_MARGIN} of the floor {floor} or of the cap {cap})')


def _class_row(groups, adaptive: str, where: str) -> list[str]:
  """(g): the mean depth at characters of class ``where`` (spaces, word
  starts) against inside words, paired by seed."""
  runs = groups.get(adaptive, [])
  name = label(adaptive, runs)
  places = {_SPACE: 'spaces', _WORD_START: 'word starts'}[where]
  claim = f'(g) {name}: deeper at {places} than inside words'
  what = (f'a halting or routing model\'s mean depth at {places} (the input '
          'character\'s class) exceeds its mean depth inside words; not '
          f'testable here when fewer than {verdicts.MIN_SEEDS} seeds are left '
          'once the inert ones are left out (a seed is inert when every '
          f'class is within {INERT_MARGIN} applications of the floor, or '
          'every class of the cap)')
  criterion = verdicts.paired([], [], claim=what).criterion
  if not runs:
    return [claim, _ACT_SPACES, *verdicts.not_recorded(
        f'no record in {adaptive}').cells()]
  reports = [r for r in _by_seed(runs) if class_rows(r)]
  if not reports:
    return [claim, _ACT_SPACES, *verdicts.not_recorded(
        f'no class report (--class_report) in {adaptive}').cells()]
  inert = inert_seeds(reports)
  live = [r for r in reports if r.get('seed') not in inert]
  here = _classes_text(reports)
  if inert and len(live) < verdicts.MIN_SEEDS:
    v = verdicts.not_testable(
        criterion, here + _inert_text(inert, reports) + f'; '
        f'{_plural(len(live), "seed")} left, fewer than {verdicts.MIN_SEEDS}')
    return [claim, _ACT_SPACES, *v.cells()]
  a = [class_depth(r, where) for r in live]
  b = [class_depth(r, _INSIDE) for r in live]
  v = verdicts.paired(a, b, claim=what, fmt=_depth, lower_is_better=False)
  if inert:
    here += _inert_text(inert, reports) + ', left out; '
  return [claim, _ACT_SPACES, v.cell, here + v.evidence, v.criterion]


def summary_text(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
  """The character language model's claims: each with its source, ours
  from the records, and the verdict with its criterion; every claim
  undecided (records missing) while its folders have no record."""
  rows = [_equal_compute_row(groups, a) for a in ADAPTIVE]
  rows += [_clock_fixed_row(groups), _clock_act_row(groups)]
  rows += [_class_row(groups, a, where) for a in ADAPTIVE
           for where in (_SPACE, _WORD_START)]
  every = [r for _, _, runs in configurations(groups) for r in runs]
  # The runs whose clock (f) reads: routing, ACT and the fixed depths.
  timed = [r for folder, _, runs in configurations(groups) for r in runs
           if folder in (ROUTE, PER_TOKEN) or mode(runs) == 'fixed']
  clock = ''
  if timed:
    machines = sorted({str((r.get('machine') or {}).get('name'))
                       for r in timed})
    clock = (f' Updates per second were measured on {" / ".join(machines)}: '
             f'{load_text(timed)}. Other jobs on the machine slow a run by '
             'however much they take, and pairing by seed does not pair the '
             'machine\'s load, so (f) carries that noise in its interval.')
  return (verdicts.claims_table(SUMMARY_HEADER, rows)
          + '\n"here": means over seeds; bpc is held-out bits per character, '
          'depth the block applications per character, mults the '
          'multiply-adds per character at the depth each character took '
          '(what an implementation that skips the halted characters would '
          'cost; the table gives what this one computes, mults run). (e) '
          'sets each adaptive model against the recorded fixed depth whose '
          'mults is nearest its own; within noise says the seeds cannot '
          'tell the two apart (the evidence gives the smallest difference '
          'they could have detected), not that they match. (f) reads '
          'updates per second over each run\'s last evaluation interval '
          '(compilation and evaluation excluded); route trains by top-k, so '
          'its training depth is top-k\'s.' + clock + ' (g) reads the class '
          'report: the depth at characters whose input is a space, the '
          'first letter of a word, or inside a word. '
          + (records.provenance(every) if every else 'No record yet.')
          + '\n')


# ----------------------------------------------------------------------------
# The tables.


def _steps(runs) -> str:
  steps = sorted({r['steps'] for r in runs if r.get('steps') is not None})
  return ' / '.join(f'{s:,}' for s in steps) or '-'


def _interval(values: Sequence[float], fmt: Callable[[float], str]) -> str:
  _, lo, hi, n = verdicts.interval(values)
  return f'{fmt(lo)} to {fmt(hi)}' if n > 1 else '-'


def _cell(runs, key: str, fmt: Callable[[float], str]) -> str:
  values = _values(runs, key)
  return _mean_std(values, fmt) if values else '-'


def _wall(runs) -> str:
  walls = [r['wall_s'] for r in runs if r.get('wall_s') is not None]
  return _mean_std(walls, lambda x: f'{x:.0f} s') if walls else '-'


def lm_table(groups: Mapping[str, Sequence[Mapping[str, Any]]],
             statuses: Mapping[str, Mapping[str, Any]] | None = None) -> str:
  """Per configuration: seeds, updates, held-out bpc (mean ± std, its 95%
  interval, per seed), mean depth, mults and mults run per character,
  updates per second and wall time; then route's top-k numbers, the
  commands, the provenance and each folder's verification. Empty without
  a record."""
  configs = configurations(groups)
  if not configs:
    return ''
  rows = []
  for _, name, runs in configs:
    bpc = _values(runs, 'bpc')
    rows.append([
        name, records.seeds_text(runs), _steps(runs),
        _mean_std(bpc, _bpc) if bpc else '-',
        _interval(bpc, _bpc) if bpc else '-',
        ' / '.join(map(_bpc, bpc)) or '-', _cell(runs, 'depth', _depth),
        _cell(runs, 'mults', _mults), _cell(runs, 'mults_run', _mults),
        _cell(runs, 'steps_per_sec', _rate), _wall(runs)])
  table = records.table(
      ['configuration', 'seeds', 'updates', 'bpc', '95% interval',
       'per seed', 'mean depth', 'mults', 'mults run', 'updates/s', 'wall'],
      rows)
  top_k = [f'- {name}: bpc {_cell(runs, "bpc_top_k", _bpc)}, depth '
           f'{_cell(runs, "depth_top_k", _depth)}'
           for _, name, runs in configs if _values(runs, 'bpc_top_k')]
  command_lines = '\n'.join(
      f'- {name}: ' + ', then '.join(f'`{c}`' for c in
                                    records.commands(runs))
      for _, name, runs in configs)
  status_lines = '\n'.join(
      f'- {name}: {verify.status_line(folder, runs, statuses or {})}'
      for folder, name, runs in configs)
  every = [r for _, _, runs in configs for r in runs]
  text = (table + '\n"bpc": held-out bits per character at the end of '
          'training (mean ± standard deviation over seeds, the 95% '
          'Student-t interval of the mean, every seed); "mean depth": block '
          'applications per character; "mults": multiply-adds per '
          'character at the depth each character took, "mults run": what '
          'this implementation computes (ACT runs the whole batch until its '
          'deepest character halts, the threshold rule every step on every '
          'character); "updates/s": over the last evaluation interval, '
          'compilation and evaluation excluded; "wall": training time a '
          'seed, compilation and evaluations included. Routing\'s numbers '
          'are its causal threshold rule\'s.\n')
  if top_k:
    text += ('\nBy top-k, which ranks a character against the later ones '
             'of its window (reads the future: for reference only, not a '
             'language model\'s numbers):\n\n' + '\n'.join(top_k) + '\n')
  return (text + '\nCommands (S: the seed):\n\n' + command_lines + '\n\n'
          + records.provenance(every) + '\n\n' + status_lines + '\n')


def classes_data(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict:
  """Per configuration with a class report: its ``mode``, ``mean`` (per
  class ``[class, share of characters, depth, bpc]``, means over seeds)
  and each seed's ``[class, depth, bpc]`` rows (``seeds``)."""
  out = {}
  for _, name, runs in configurations(groups):
    reports = [r for r in runs if class_rows(r)]
    if not reports:
      continue
    total = sum(d['count'] for d in class_rows(reports[0])) or 1
    counts = {d['class']: d['count'] for d in class_rows(reports[0])}
    mean = []
    for cls in [c for c in depth_lm.CLASSES if c in counts]:
      depths = [class_depth(r, cls) for r in reports]
      bpcs = [class_depth(r, cls, 'bpc') for r in reports]
      depths = [d for d in depths if d is not None]
      bpcs = [b for b in bpcs if b is not None]
      mean.append([cls, counts[cls] / total,
                   statistics.fmean(depths) if depths else None,
                   statistics.fmean(bpcs) if bpcs else None])
    out[name] = {
        'mode': mode(runs), 'mean': mean,
        'seeds': {f'seed {r["seed"]}': [[d['class'], d['depth'], d['bpc']]
                                        for d in class_rows(r)]
                  for r in reports}}
  return out


def classes_table(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
  """Per character class: its share of the held-out characters, then the
  mean depth and bpc of every configuration with a class report (means
  over seeds); empty without a report."""
  data = classes_data(groups)
  if not data:
    return ''
  names = list(data)
  classes = list(dict.fromkeys(row[0] for d in data.values()
                               for row in d['mean']))
  rows = []
  for cls in classes:
    at = {n: next((r for r in data[n]['mean'] if r[0] == cls), None)
          for n in names}
    share = next(r[1] for r in at.values() if r is not None)
    cell = lambda r, i, fmt: '-' if r is None or r[i] is None else fmt(r[i])
    rows.append([cls, _share(share)]
                + [cell(at[n], 2, _depth) for n in names]
                + [cell(at[n], 3, _bpc) for n in names])
  header = (['class', 'share'] + [f'depth, {n}' for n in names]
            + [f'bpc, {n}' for n in names])
  seeds = '; '.join(f'{n}: n = {len(d["seeds"])}' for n, d in data.items())
  every = [r for _, _, runs in configurations(groups) for r in runs
           if class_rows(r)]
  return (records.table(header, rows) + '\nMeans over the seeds with a '
          f'class report ({seeds}), on the held-out characters of the '
          'evaluation (`--class_report`); a character\'s class is that of '
          'its input character: a space (`_` in the PTB files), the first '
          'character of a word, inside a word, or punctuation and the line '
          'end. Depth: block applications at that character (routing: its '
          'threshold rule); bpc: bits of the next character predicted '
          'there. The share is of the characters evaluated.\n\n'
          + records.provenance(every) + '\n')


def pareto_data(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict:
  """Per configuration: ``mode``, each seed's ``[seed, mults, seconds per
  update, bpc]`` (None where a record lacks one) and their ``mean``
  ``[mults, seconds per update, bpc]`` (over the seeds that have each)."""
  out = {}
  for _, name, runs in configurations(groups):
    points = []
    for r in runs:
      rate = _final(r, 'steps_per_sec')
      points.append([r.get('seed'), _final(r, 'mults'),
                     1.0 / rate if rate else None, _final(r, 'bpc')])
    means = []
    for i in (1, 2, 3):
      values = [p[i] for p in points if p[i] is not None]
      means.append(statistics.fmean(values) if values else None)
    out[name] = {'mode': mode(runs), 'seeds': points, 'mean': means}
  return out


# ----------------------------------------------------------------------------
# The figures.


# One colour per planned configuration in every figure, whichever are
# recorded; others take the next ones.
_COLOURS = {name: f'C{k}' for k, name in enumerate(_NAMES.values())}


def _colour(name: str, k: int) -> str:
  return _COLOURS.get(name, f'C{(len(_COLOURS) + k) % 10}')


def _no_record(path, what: str):
  """A figure that says its records are missing (the page includes it)."""
  fig = plots.new_figure((6.0, 1.6))
  ax = fig.subplots()
  ax.axis('off')
  ax.text(0.5, 0.5, f'No record yet: {what} appears once runs of '
          'python -m experiments.depth_lm are recorded.',
          ha='center', va='center', wrap=True, fontsize=9)
  return records.save_svg(fig, path)


class ParetoAxes(NamedTuple):
  """What :func:`draw_pareto` writes on its axes (the data's units)."""
  quality: str = 'held-out bits per character'
  compute: str = 'multiply-adds per character (thousands)'
  compute_scale: float = 1e-3     # the data's compute times this is drawn
  quality_scale: float = 1.0
  title: str = 'bpc'
  empty: str = 'bpc against compute and time'


def draw_pareto(data: Mapping[str, Any], path,
                axes: ParetoAxes | None = None):
  """Held-out quality (bpc by default) against compute (multiply-adds per
  character by default) on the left and against measured seconds per
  update on the right: per configuration each seed (small, faint) and the
  mean (large); the fixed depths' means joined (dashed). ``data`` is
  :func:`pareto_data`'s layout, whatever the task."""
  axes = axes or ParetoAxes()
  if not data:
    return _no_record(path, axes.empty)
  cs, qs = axes.compute_scale, axes.quality_scale
  fig = plots.new_figure((7.0, 3.6))
  left, right = fig.subplots(1, 2, sharey=True)
  for k, (name, d) in enumerate(data.items()):
    colour = _colour(name, k)
    marker = 's' if d.get('mode') == 'fixed' else 'o'
    for ax, i, scale in ((left, 1, cs), (right, 2, 1.0)):
      seeds = [p for p in d['seeds'] if p[i] is not None and p[3] is not None]
      ax.scatter([scale * p[i] for p in seeds], [qs * p[3] for p in seeds],
                 color=colour, marker=marker, s=14, alpha=0.35)
      if d['mean'][i - 1] is not None and d['mean'][2] is not None:
        ax.scatter([scale * d['mean'][i - 1]], [qs * d['mean'][2]],
                   color=colour,
                   marker=marker, s=48, edgecolors='black', linewidths=0.6,
                   label=name if ax is left else None, zorder=3)
  fixed = sorted((d['mean'] for d in data.values()
                  if d.get('mode') == 'fixed' and None not in d['mean']),
                 key=lambda m: m[0])
  if len(fixed) > 1:
    for ax, i, scale in ((left, 0, cs), (right, 1, 1.0)):
      ax.plot([scale * m[i] for m in fixed], [qs * m[2] for m in fixed],
              '--', color='grey', linewidth=0.9, zorder=1)
  left.set_xlabel(axes.compute)
  right.set_xlabel('seconds per update (measured)')
  left.set_ylabel(axes.quality)
  left.set_title(f'{axes.title} against compute')
  right.set_title(f'{axes.title} against time')
  for ax in (left, right):
    ax.grid(alpha=0.3)
  # Below both panels: inside either it would hide a point.
  fig.legend(*left.get_legend_handles_labels(), loc='outside lower center',
             ncol=min(5, len(data)), fontsize=8)
  return records.save_svg(fig, path)


def draw_classes(data: Mapping[str, Any], path):
  """Mean depth (left) and bpc (right) per character class: per
  configuration a bar (the mean over seeds) and each seed (dots); a fixed
  depth's depth, the same at every class, as a dotted line."""
  if not data:
    return _no_record(path, 'depth per character class')
  fig = plots.new_figure((7.0, 3.6))
  left, right = fig.subplots(1, 2)
  classes = list(dict.fromkeys(r[0] for d in data.values()
                               for r in d['mean']))
  adaptive = [n for n, d in data.items() if d.get('mode') != 'fixed']
  names = list(data)
  for k, name in enumerate(names):
    d, colour = data[name], _colour(name, k)
    for ax, col, seed_col, bars in ((left, 2, 1, adaptive),
                                    (right, 3, 2, names)):
      if name not in bars:
        if ax is left:   # a fixed depth: one line across the classes
          depths = [r[2] for r in d['mean'] if r[2] is not None]
          if depths:
            ax.axhline(statistics.fmean(depths), color=colour,
                       linestyle=':', linewidth=1.2, label=name)
        continue
      width = 0.8 / len(bars)
      offset = (bars.index(name) - (len(bars) - 1) / 2) * width
      xs = [classes.index(r[0]) + offset for r in d['mean']]
      ax.bar(xs, [r[col] if r[col] is not None else math.nan
                  for r in d['mean']], width=width, color=colour, alpha=0.8,
             label=name if ax is left else None)
      for rows in d['seeds'].values():
        ax.plot([classes.index(r[0]) + offset for r in rows],
                [r[seed_col] for r in rows], '.', color='black',
                markersize=3)
  left.set_ylabel('mean depth (block applications)')
  left.set_title('Depth per class')
  right.set_ylabel('bits of the next character')
  right.set_title('bpc per class')
  for ax in (left, right):
    # One word a line: the class names side by side would overlap.
    ax.set_xticks(range(len(classes)),
                  [c.replace(' / ', '/\n').replace(' ', '\n')
                   for c in classes], fontsize=7)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3, axis='y')
  # In the configurations' order (matplotlib lists lines before bars).
  found = dict(zip(*reversed(left.get_legend_handles_labels())))
  labels = [n for n in names if n in found]
  handles = [found[n] for n in labels]
  fig.legend(handles, labels, loc='outside lower center',
             ncol=min(5, len(labels)) or 1, fontsize=8)
  return records.save_svg(fig, path)


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            statuses: Mapping[str, Mapping[str, Any]] | None = None
            ) -> list[records.Output]:
  """The character language model's fragments and figures, with or
  without records: the page includes every one, so a folder not recorded
  yet says so (``No record yet.``, every claim undecided, a figure that
  says it)."""
  pareto, classes = pareto_data(groups), classes_data(groups)
  return [
      records.Output('depth/lm_summary.md', summary_text(groups)),
      records.Output('depth/lm.md', lm_table(groups, statuses)
                     or 'No record yet.\n'),
      records.Output('depth/lm_classes.md', classes_table(groups)
                     or 'No record yet.\n'),
      records.Output('depth/lm_pareto.svg', data=pareto,
                     draw=lambda p: draw_pareto(pareto, p)),
      records.Output('depth/lm_classes.svg', data=classes,
                     draw=lambda p: draw_classes(classes, p))]
