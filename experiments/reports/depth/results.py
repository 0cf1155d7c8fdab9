r"""Adaptive depth's results, from its run records (``.../records/depth``).

The experiments (folders of records) this module reads are runs of ``python
-m experiments.depth_logic``: one shared Transformer block applied to an
adaptive depth on ACT's logic task as tokens (two bits, then a chain of
:math:`B = 1..10` gates), each run followed by the same command with
``--difficulty_report`` (its ``difficulty.csv``: per :math:`B` the held-out
error and the mean depth; per token also ``depth_0`` .. ``depth_10``, the
mean depth of each position index):

* ``depth/logic_per_example``: ``--halting=per_example`` (ACT over the
  pooled state of each example);
* ``depth/logic_per_token``: ``--halting=per_token`` (the Universal
  Transformer's per-position halting);
* ``depth/logic_per_token_pondernet``: ``--halting=per_token_pondernet``
  (PonderNet's halting distribution per position, its KL to a geometric
  prior);
* ``depth/logic_route_m7``: ``--halting=route --max_depth=7`` (Mixture-of-
  Recursions' capacity routing at about fixed depth 4's compute);
* ``depth/logic_fixed4``: ``--halting=fixed --depth=4``, about the
  per-example model's mean depth: the fixed-depth model of equal compute;
* ``depth/logic_fixed12``: ``--halting=fixed --depth=12``, the adaptive
  models' maximum depth: the fixed-depth model of more compute.

Another ``depth/logic_*`` folder gets a row in the tables and a line in the
figures, labelled from its flags; the claims read the six above.

:func:`outputs` gives the summary (``depth/summary.md``: each claim, its
source, and a verdict of :mod:`experiments.reports.verdicts` with its
criterion), the table per configuration with the commands that made it
(``depth/logic.md``), error and depth per chain length
(``depth/logic_difficulty.md``, ``depth/logic_difficulty.svg``) and the
per-token depth of each position in the longest chains
(``depth/logic_positions.svg``). No paper trains this task: the claims are
the Universal Transformer's (Dehghani et al. 2019) and ACT's (Graves 2016).

The same page's character language model (``python -m
experiments.depth_lm``, folders ``depth/lm_*``) has its own claims, tables
and figures, in :mod:`experiments.reports.depth.lm`; :func:`outputs` adds
them (``depth/lm_summary.md``, ``depth/lm.md``, ``depth/lm_classes.md``,
``depth/lm_pareto.svg``, ``depth/lm_classes.svg``), written with or without
records, so the page's includes always find them.
"""

from collections.abc import Callable, Mapping, Sequence
import statistics
from typing import Any

from experiments.reports import plots, records, verdicts, verify
from experiments.reports.depth import lm

__all__ = [
    'PAPER',
    'PREFIX',
    'PER_EXAMPLE',
    'PER_TOKEN',
    'FIXED_EQUAL',
    'FIXED_MAX',
    'PER_TOKEN_PONDERNET',
    'ROUTE',
    'GATES',
    'GROWTH_SLOPE',
    'EQUAL_COMPUTE',
    'nearest_fixed',
    'POSITION_SLOPE',
    'SUMMARY_HEADER',
    'label',
    'configurations',
    'difficulty_rows',
    'slope',
    'depth_slope',
    'position_depths',
    'position_slope',
    'summary_text',
    'logic_table',
    'difficulty_table',
    'difficulty_data',
    'positions_data',
    'draw_difficulty',
    'draw_positions',
    'pareto_data',
    'outputs',
]

PAPER = 'depth'
PREFIX = 'depth/logic_'
PER_EXAMPLE = 'depth/logic_per_example'
PER_TOKEN = 'depth/logic_per_token'
FIXED_EQUAL = 'depth/logic_fixed4'
FIXED_MAX = 'depth/logic_fixed12'
# Capacity routing (Mixture-of-Recursions) at the fixed depth 4's compute:
# MoR's capacity schedule (M - r)/M over M = 7 steps sums to a mean depth
# of 4 before the floor of each step's top-k rounds it down.
ROUTE = 'depth/logic_route_m7'
# PonderNet's halting distribution per position (its prior lambda_p 0.2: a
# mean of 5 steps), the per-token kind with PonderNet's loss.
PER_TOKEN_PONDERNET = 'depth/logic_per_token_pondernet'
_ADAPTIVE = (PER_EXAMPLE, PER_TOKEN, PER_TOKEN_PONDERNET, ROUTE)
# The longest chain of the task (ACT Sec. 3.2: 1 to 10 gates).
GATES = 10
# "Depth grows with the chain": the longest chains (B = 10) take at least
# one more block application than the shortest (B = 1), 9 gates apart: a
# least-squares slope of 1/9 application per gate. Less than one
# application across the whole range is less than the smallest step one
# example's depth can take (a whole count); the ACT page asks the same of
# ponder (one more step across its difficulties). The task needs about one
# application per gate (a slope near 1): the summary prints each seed's
# slope beside the verdict.
GROWTH_SLOPE = 1 / (GATES - 1)
# Per token, the same along one chain: one more application from the first
# gate position to the last (positions 1..10 of chains of 10).
POSITION_SLOPE = 1 / (GATES - 1)
# The four folders in words, for a claim whose folder has no record yet.
_NAMES = {PER_EXAMPLE: 'per example', PER_TOKEN: 'per token',
          PER_TOKEN_PONDERNET: 'per token, PonderNet',
          ROUTE: 'routing, 7 steps', FIXED_EQUAL: 'fixed depth 4',
          FIXED_MAX: 'fixed depth 12'}
SUMMARY_HEADER = ['claim', 'the papers', 'verdict', 'here', 'criterion']

# Sources of the claims: no paper trains this task, these are the claims
# it tests (the Universal Transformer's halting is ACT's, per position).
_UT_PONDER = ('UT: ponder time longer on bAbI tasks that need more '
              'supporting facts (Dehghani et al. 2019, the bAbI analysis)')
_ACT_PONDER = 'ACT: ponder grows with difficulty (Graves 2016, Fig. 6)'
_UT_POSITION = ('UT: dynamic halting gives each position its own depth '
                '(Dehghani et al. 2019, Sec. 2.2)')
_UT_ACCURACY = ('UT: dynamic halting "improves accuracy on several tasks" '
                'against a fixed number of steps (Dehghani et al. 2019, '
                'abstract; bAbI results); neither paper compares at equal '
                'compute on this task')


def _depth(x: float) -> str:
  return f'{x:.2f}'


def _slope_fmt(x: float) -> str:
  return f'{x:.3f}'


# The shared formatting of the depth reports (records'), by short names.
_mean_std = records.mean_std_text
_by_seed = records.by_seed


def _interval(values: Sequence[float], fmt: Callable[[float], str]) -> str:
  rate = (0.0, 1.0) if fmt is verdicts.pct else None
  _, lo, hi, n = verdicts.interval(values, rate)
  return f'{fmt(lo)} to {fmt(hi)}' if n > 1 else '-'


# ----------------------------------------------------------------------------
# What a record holds.


def label(folder: str, runs: Sequence[Mapping[str, Any]]) -> str:
  """``'per example'``, ``'per token'``, ``'fixed depth 4'``: a folder's
  configuration in words, from its runs' flags (the folder's name when they
  have none)."""
  flags = (runs[0].get('flags') or {}) if runs else {}
  halting = flags.get('halting')
  if halting == 'fixed' and flags.get('depth') is not None:
    return f'fixed depth {flags["depth"]}'
  if halting in ('per_example', 'per_token'):
    return halting.replace('_', ' ')
  if halting == 'per_token_pondernet':
    return 'per token, PonderNet'
  if halting == 'route':
    return f'routing, {flags.get("max_depth")} steps'
  return _NAMES.get(folder, folder.removeprefix(PREFIX).replace('_', ' '))


def _order(folder: str, runs) -> tuple:
  # The adaptive kinds first, then the fixed depths ascending, then others.
  flags = (runs[0].get('flags') or {}) if runs else {}
  if folder in _ADAPTIVE:
    return (_ADAPTIVE.index(folder), 0, folder)
  if flags.get('halting') == 'fixed':
    return (2, flags.get('depth') or 0, folder)
  return (3, 0, folder)


def configurations(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                   ) -> list[tuple[str, str, list]]:
  """``(folder, label, runs)`` of every ``depth/logic_*`` folder: per
  example, per token, then the fixed depths ascending; runs by seed."""
  found = [(name, runs) for name, runs in groups.items()
           if name.startswith(PREFIX) and runs]
  return [(name, label(name, runs), _by_seed(runs))
          for name, runs in sorted(found, key=lambda g: _order(*g))]


def difficulty_rows(run: Mapping[str, Any]) -> list[dict]:
  """The run's difficulty report (one row per chain length ``gates``), in
  ``gates`` order; empty without one."""
  rows = (run.get('tables') or {}).get('difficulty') or []
  return sorted(rows, key=lambda d: d['gates'])


def slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
  """The least-squares slope of ``ys`` against ``xs``; None for fewer than
  two points or no spread in ``xs``."""
  if len(xs) < 2:
    return None
  mx, my = statistics.fmean(xs), statistics.fmean(ys)
  sxx = sum((x - mx) ** 2 for x in xs)
  if sxx == 0:
    return None
  return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def depth_slope(run: Mapping[str, Any]) -> float | None:
  """Mean depth against the chain length ``B`` over the run's difficulty
  report (applications per gate); None without one."""
  rows = difficulty_rows(run)
  return slope([d['gates'] for d in rows], [d['depth'] for d in rows])


def position_depths(run: Mapping[str, Any]) -> list[tuple[int, float]]:
  """``(i, mean depth of position i)`` for the gate positions ``i = 1..B``
  of the longest chains of the run's report (the per-token runs' ``depth_i``
  columns); empty for a run without them. Position 0 (the two bits) has no
  target, and shorter chains lack the later positions, so the longest
  chains alone give depth against position at one chain length."""
  rows = difficulty_rows(run)
  if not rows:
    return []
  longest = rows[-1]
  out = []
  for i in range(1, longest['gates'] + 1):
    value = longest.get(f'depth_{i}')
    if isinstance(value, (int, float)):
      out.append((i, float(value)))
  return out


def position_slope(run: Mapping[str, Any]) -> float | None:
  """Per-token depth against the position index in the longest chains
  (applications per position); None without ``depth_i`` columns."""
  points = position_depths(run)
  return slope([i for i, _ in points], [d for _, d in points])


def _final(run: Mapping[str, Any], key: str) -> float | None:
  value = (run.get('final') or {}).get(key)
  return None if value is None else float(value)


# ----------------------------------------------------------------------------
# The summary: one row per claim.


def _growth_row(runs) -> list[str]:
  """(a): per example, depth against the chain length."""
  claim = '(a) depth grows with the chain length, per example'
  source = f'{_ACT_PONDER}; {_UT_PONDER}'
  if not runs:
    return [claim, source, *verdicts.not_recorded(
        f'no record in {PER_EXAMPLE}').cells()]
  slopes = [s for s in map(depth_slope, runs) if s is not None]
  v = verdicts.exceeds(
      slopes, claim='the per-example depth grows with the chain length B '
      '(least-squares slope of mean depth against B over each seed\'s '
      'difficulty report, applications per gate; the minimum is one more '
      'application from B = 1 to 10)', minimum=GROWTH_SLOPE, fmt=_slope_fmt)
  return [claim, source, v.cell,
          _ends_text(runs) + _slopes_text(slopes) + _inert_text(runs)
          + v.evidence, v.criterion]


# A per-example depth that moves less than this across the chain lengths
# is the same for every input: that seed's halting unit is inert.
INERT_DEPTH = 0.05


def _inert_text(runs) -> str:
  """``'seed 1 inert (the same depth at every B); '`` for the seeds whose
  halting unit gives every chain length the same depth."""
  inert = [r['seed'] for r in runs if difficulty_rows(r) and (
      max(d['depth'] for d in difficulty_rows(r))
      - min(d['depth'] for d in difficulty_rows(r)) < INERT_DEPTH)]
  if not inert:
    return ''
  return ('seed' + ('s ' if len(inert) > 1 else ' ')
          + ', '.join(map(str, inert)) + ' inert (the same depth at every '
          'B); ')


def _slopes_text(slopes: Sequence[float]) -> str:
  return ('slope per seed ' + ' / '.join(map(_slope_fmt, slopes)) + '; '
          if slopes else '')


def _ends_text(runs) -> str:
  """``'depth 1.26 at B = 1, 7.82 at B = 10 (mean over 3 seeds); '``: the
  depth of the shortest and the longest chains."""
  reports = [difficulty_rows(r) for r in runs if difficulty_rows(r)]
  if not reports:
    return ''
  first = statistics.fmean(rows[0]['depth'] for rows in reports)
  last = statistics.fmean(rows[-1]['depth'] for rows in reports)
  return (f'depth {_depth(first)} at B = {reports[0][0]["gates"]}, '
          f'{_depth(last)} at B = {reports[0][-1]["gates"]} (mean over '
          f'{len(reports)} seed{"s" if len(reports) != 1 else ""}); ')


def _position_row(runs) -> list[str]:
  """(b): per token, depth against the position index in one chain."""
  claim = ('(b) depth grows along the chain, per token: later gate '
           'positions of the longest chains take more applications')
  source = f'{_UT_POSITION}; {_UT_PONDER}'
  slopes = [s for s in map(position_slope, runs) if s is not None]
  if not slopes:
    return [claim, source, *verdicts.not_recorded(
        f'no per-position depths in {PER_TOKEN}').cells()]
  v = verdicts.exceeds(
      slopes, claim='the per-token depth grows with the position index '
      '(least-squares slope of mean depth against positions 1-10 in chains '
      'of 10, applications per position; the minimum is one more '
      'application from the first gate to the last)',
      minimum=POSITION_SLOPE, fmt=_slope_fmt)
  points = [position_depths(r) for r in runs if position_depths(r)]
  # The mean over seeds per position: its ends, and its deepest position
  # (a chain's last positions may not be learnt yet and stay shallow).
  mean = [(i, statistics.fmean(p[j][1] for p in points if len(p) > j))
          for j, (i, _) in enumerate(points[0])]
  deepest = max(mean, key=lambda m: m[1])
  here = (f'depth {_depth(mean[0][1])} at position {mean[0][0]}, '
          f'{_depth(mean[-1][1])} at position {mean[-1][0]}, the most '
          f'{_depth(deepest[1])} at position {deepest[0]} (mean over '
          f'{len(points)} seed{"s" if len(points) != 1 else ""}); ')
  return [claim, source, v.cell,
          here + _slopes_text(slopes) + v.evidence, v.criterion]


def _paired_errors(a_runs, b_runs) -> tuple[list[float], list[float]]:
  """Final errors of the seeds both groups have, seed by seed."""
  b = {r['seed']: _final(r, 'error') for r in b_runs}
  shared = [r for r in _by_seed(a_runs) if b.get(r['seed']) is not None
            and _final(r, 'error') is not None]
  return ([_final(r, 'error') for r in shared],
          [b[r['seed']] for r in shared])


def _compare_row(groups, adaptive: str, fixed: str, tag: str, *,
                 criterion_claim: str | None = None) -> list[str]:
  """(c) or (d): an adaptive configuration's final error against a fixed
  depth's, paired by seed, with each one's mean depth (its compute);
  ``criterion_claim`` replaces the claim the criterion states."""
  a_runs, b_runs = groups.get(adaptive, []), groups.get(fixed, [])
  a_name, b_name = label(adaptive, a_runs), label(fixed, b_runs)
  claim = f'{tag}: {a_name} against {b_name}'
  if not a_runs or not b_runs:
    missing = ' and '.join(f for f, runs in ((adaptive, a_runs),
                                             (fixed, b_runs)) if not runs)
    return [claim, _UT_ACCURACY, *verdicts.not_recorded(
        f'no record in {missing}').cells()]
  a, b = _paired_errors(a_runs, b_runs)
  v = verdicts.paired(a, b, claim=criterion_claim or (
      f'{a_name} ends below {b_name} in final error on the held-out '
      'examples'), fmt=verdicts.pct)
  compute, fixed_depth = _values(a_runs, 'depth'), _values(b_runs, 'depth')
  pct = verdicts.pct
  here = f'error {_mean_std(a, pct)} against {_mean_std(b, pct)}; ' if a else ''
  if compute and fixed_depth:
    here += (f'compute (mean depth) {_mean_std(compute, _depth)} against '
             f'{_mean_std(fixed_depth, _depth)}; ')
  return [claim, _UT_ACCURACY, v.cell, here + v.evidence,
          v.criterion]


# "Equal compute": the recorded fixed depth nearest an adaptive kind's mean
# depth, at most this far from it (relative to the fixed depth). The fixed
# depths are whole applications: one application is a third of depth 3 and
# a seventh of depth 7, so within 15% no other whole depth is nearer, and a
# kind further than that from every recorded depth has no fixed model of
# its compute (an error gap would be the compute's as much as the method's).
EQUAL_COMPUTE = 0.15


def nearest_fixed(groups: Mapping[str, Sequence[Mapping[str, Any]]],
                  depth: float) -> tuple[str, float, float] | None:
  """``(folder, its depth, relative gap)``: the recorded fixed-depth folder
  nearest ``depth`` (in applications), and ``|depth - fixed| / fixed``;
  None without one."""
  best = None
  for folder, _, runs in configurations(groups):
    flags = (runs[0].get('flags') or {}) if runs else {}
    value = flags.get('depth') if flags.get('halting') == 'fixed' else None
    # Nearest in applications; the gap relative to the fixed depth.
    if value and (best is None or abs(depth - value) < abs(depth - best[1])):
      best = (folder, float(value), abs(depth - value) / value)
  return best


def _equal_row(groups, adaptive: str) -> list[str]:
  """(c): an adaptive kind's final error against the recorded fixed depth
  nearest its mean depth, paired by seed; not testable when none is within
  ``EQUAL_COMPUTE`` of it."""
  runs = groups.get(adaptive, [])
  name = label(adaptive, runs)
  claim = f'(c) against the fixed depth of equal compute: {name}'
  what = (f'{name} ends below the recorded fixed depth nearest its mean '
          'depth in final error on the held-out examples, the two depths '
          f'within {EQUAL_COMPUTE:.0%} (further apart: not testable here)')
  criterion = verdicts.paired([], [], claim=what,
                              fmt=verdicts.pct).criterion
  depths = _values(runs, 'depth')
  if not runs or not depths:
    return [claim, _UT_ACCURACY, *verdicts.not_recorded(
        f'no record in {adaptive}').cells()]
  compute = statistics.fmean(depths)
  nearest = nearest_fixed(groups, compute)
  if nearest is None:
    return [claim, _UT_ACCURACY, *verdicts.not_recorded(
        f'no record of a fixed depth ({PREFIX}fixed*)').cells()]
  fixed, fixed_depth, gap = nearest
  fixed_name = label(fixed, groups[fixed])
  match = (f'against {fixed_name}, the nearest recorded: mean depth '
           f'{_depth(compute)}, {gap:.0%} apart')
  if gap > EQUAL_COMPUTE:
    v = verdicts.not_testable(
        criterion, f'{match}, more than {EQUAL_COMPUTE:.0%}: no recorded '
        'fixed depth has its compute')
    return [claim.replace(f': {name}', f': {name} against {fixed_name}'),
            _UT_ACCURACY, *v.cells()]
  row = _compare_row(groups, adaptive, fixed, '(c) against the fixed depth '
                     'of equal compute', criterion_claim=what)
  row[3] = f'{match}; ' + row[3]
  return row


def summary_text(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
  """The page's summary: each claim with its source, ours from the records,
  and the verdict with its criterion."""
  rows = [_growth_row(groups.get(PER_EXAMPLE, [])),
          _position_row(groups.get(PER_TOKEN, []))]
  rows += [_equal_row(groups, adaptive) for adaptive in _ADAPTIVE]
  rows += [_compare_row(groups, adaptive, FIXED_MAX, '(d) against the fixed '
                        'depth at the maximum depth')
           for adaptive in _ADAPTIVE]
  every = [r for _, _, runs in configurations(groups) for r in runs]
  return (verdicts.claims_table(SUMMARY_HEADER, rows)
          + '\n"here": means over seeds; errors are the share of held-out '
          'examples whose final result is wrong, depth the block '
          'applications per position (per example: every position of an '
          'example alike; fixed: the depth). (c) asks whether adaptive '
          'depth ends below the recorded fixed depth nearest its compute '
          '(not testable where none is near enough); within '
          'noise says the seeds cannot tell the two apart (the evidence '
          'gives the smallest difference they could have detected), not '
          'that adaptive depth matches it. (d) compares with the most '
          'compute the adaptive models may spend; "here" gives how much '
          'less they spent. ' + (records.provenance(every) if every else '')
          + '\n')


# ----------------------------------------------------------------------------
# The tables.


def _steps(runs) -> str:
  return ' / '.join(f'{s:,}' for s in sorted({r['steps'] for r in runs}))


def _values(runs, key: str) -> list[float]:
  return [v for v in (_final(r, key) for r in runs) if v is not None]


def _wall(runs) -> str:
  walls = [r['wall_s'] for r in runs if r.get('wall_s') is not None]
  return _mean_std(walls, lambda x: f'{x:.0f} s') if walls else '-'


def logic_table(groups: Mapping[str, Sequence[Mapping[str, Any]]],
                statuses: Mapping[str, Mapping[str, Any]] | None = None
                ) -> str:
  """Per configuration: seeds, steps, final error (mean ± std, its 95%
  interval, per seed), per-gate error, mean depth (compute) and wall time;
  then the commands, the provenance and each folder's verification."""
  configs = configurations(groups)
  if not configs:
    return ''
  rows = []
  for _, name, runs in configs:
    errors = _values(runs, 'error')
    rows.append([
        name, records.seeds_text(runs), _steps(runs),
        _mean_std(errors, verdicts.pct) if errors else '-',
        _interval(errors, verdicts.pct) if errors else '-',
        ' / '.join(verdicts.pct(e) for e in errors) or '-',
        _mean_std(_values(runs, 'token_error'), verdicts.pct)
        if _values(runs, 'token_error') else '-',
        _mean_std(_values(runs, 'depth'), _depth)
        if _values(runs, 'depth') else '-', _wall(runs)])
  table = records.table(
      ['configuration', 'seeds', 'steps', 'error', '95% interval',
       'per seed', 'per-gate error', 'mean depth', 'wall'], rows)
  command_lines = '\n'.join(
      f'- {name}: ' + ', then '.join(f'`{c}`' for c in
                                    records.commands(runs))
      for _, name, runs in configs)
  status_lines = '\n'.join(
      f'- {name}: {verify.status_line(folder, runs, statuses or {})}'
      for folder, name, runs in configs)
  every = [r for _, _, runs in configs for r in runs]
  return (table + '\n"error": the share of held-out examples whose final '
          'result is wrong (mean ± standard deviation over seeds, the 95% '
          'Student-t interval of the mean, every seed); "per-gate error": '
          'the share of gate positions wrong; "mean depth": block '
          'applications per position, the compute; "wall": training time '
          'a seed, compilation included.\n\nCommands (S: the seed):\n\n'
          + command_lines + '\n\n' + records.provenance(every) + '\n\n'
          + status_lines + '\n')


def _mean_rows(reports: Sequence[Sequence[Mapping[str, Any]]]
               ) -> list[list[float]]:
  """``[B, error, depth]`` per chain length, each the mean over the
  reports that have that ``B``."""
  by_gates: dict[int, list] = {}
  for rows in reports:
    for d in rows:
      by_gates.setdefault(d['gates'], []).append(d)
  return [[b, statistics.fmean(d['error'] for d in ds),
           statistics.fmean(d['depth'] for d in ds)]
          for b, ds in sorted(by_gates.items())]


def difficulty_data(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                    ) -> dict:
  """Per configuration with a difficulty report: ``mean`` (``[B, error,
  depth]`` over seeds) and each seed's rows (``seeds``)."""
  out = {}
  for _, name, runs in configurations(groups):
    reports = {f'seed {r["seed"]}': difficulty_rows(r) for r in runs
               if difficulty_rows(r)}
    if reports:
      out[name] = {
          'mean': _mean_rows(list(reports.values())),
          'seeds': {s: [[d['gates'], d['error'], d['depth']] for d in rows]
                    for s, rows in reports.items()}}
  return out


def _positions_table(points: Sequence[Sequence[tuple[int, float]]]) -> str:
  """Per gate position: the per-token depth, mean ± std and per seed."""
  rows = []
  for j, (i, _) in enumerate(points[0]):
    values = [p[j][1] for p in points if len(p) > j]
    rows.append([i, _mean_std(values, _depth),
                 ' / '.join(_depth(v) for v in values)])
  return records.table(['position', 'per-token depth', 'per seed'], rows)


def difficulty_table(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                     ) -> str:
  """Error and mean depth per chain length ``B`` for every configuration
  (means over the seeds with a report), then the per-token depth of each
  position in the longest chains; empty without a report."""
  data = difficulty_data(groups)
  if not data:
    return ''
  gates = sorted({row[0] for d in data.values() for row in d['mean']})
  names = list(data)
  rows = []
  for b in gates:
    at = {n: next((r for r in data[n]['mean'] if r[0] == b), None)
          for n in names}
    rows.append([b] + ['-' if at[n] is None else verdicts.pct(at[n][1])
                       for n in names]
                + ['-' if at[n] is None else _depth(at[n][2])
                   for n in names])
  header = (['B'] + [f'error, {n}' for n in names]
            + [f'depth, {n}' for n in names])
  seeds = '; '.join(f'{n}: n = {len(d["seeds"])}' for n, d in data.items())
  every = [r for _, _, runs in configurations(groups) for r in runs
           if difficulty_rows(r)]
  text = (records.table(header, rows) + '\nMeans over the seeds with a '
          f'difficulty report ({seeds}); each B on its own fresh held-out '
          'examples (`--difficulty_report`, `--eval_batch_size` of them per '
          'B). Error: the final result wrong; depth: block applications '
          'per position.\n')
  points = [position_depths(r) for r in _by_seed(groups.get(PER_TOKEN, []))]
  points = [p for p in points if p]
  if points:
    text += (f'\nPer token, the mean depth of each gate position in chains '
             f'of {points[0][-1][0]}:\n\n' + _positions_table(points))
  return text + '\n' + records.provenance(every) + '\n'


def positions_data(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                   ) -> dict:
  """The per-token depth of each gate position in the longest chains, per
  seed and its mean, and the per-example depth of those chains (every
  position alike); empty without per-token ``depth_i`` columns."""
  runs = _by_seed(groups.get(PER_TOKEN, []))
  seeds = {f'seed {r["seed"]}': [list(p) for p in position_depths(r)]
           for r in runs if position_depths(r)}
  if not seeds:
    return {}
  first = next(iter(seeds.values()))
  mean = [[i, statistics.fmean(p[j][1] for p in seeds.values()
                               if len(p) > j)]
          for j, (i, _) in enumerate(first)]
  gates = first[-1][0]
  per_example = [d['depth'] for r in groups.get(PER_EXAMPLE, [])
                 for d in difficulty_rows(r) if d['gates'] == gates]
  return {'gates': gates, 'seeds': seeds, 'mean': mean,
          'per_example': (statistics.fmean(per_example) if per_example
                          else None)}


# ----------------------------------------------------------------------------
# The figures.


# One colour per configuration in every figure, whichever are recorded.
_COLOURS = {name: f'C{k}' for k, name in enumerate(_NAMES.values())}
# The error axis's ticks, in percent, as plain numbers (not powers of ten).
_ERROR_TICKS = (0, 0.5, 1, 2, 5, 10, 20, 50, 100)


def draw_difficulty(data: Mapping[str, Any], path):
  """Error and mean depth against the chain length: per configuration its
  mean over seeds (thick, dots) and each seed (thin)."""
  fig = plots.new_figure((7.0, 3.6))
  left, right = fig.subplots(1, 2)
  for k, (name, d) in enumerate(data.items()):
    colour = _COLOURS.get(name, f'C{(len(_COLOURS) + k) % 10}')
    for rows in d['seeds'].values():
      for ax, col, scale in ((left, 1, 100.0), (right, 2, 1.0)):
        ax.plot([r[0] for r in rows], [scale * r[col] for r in rows],
                color=colour, linewidth=0.7, alpha=0.35)
    for ax, col, scale in ((left, 1, 100.0), (right, 2, 1.0)):
      ax.plot([r[0] for r in d['mean']], [scale * r[col] for r in d['mean']],
              color=colour, linewidth=1.8, marker='o', markersize=3,
              label=name)
  # Symmetric log: errors of a fraction of a percent and of tens of
  # percent on one axis, a seed at 0% still drawn.
  left.set_yscale('symlog', linthresh=1.0, linscale=0.5)
  top = max([100 * r[1] for d in data.values() for r in d['mean']] + [1.0])
  ticks = [y for y in _ERROR_TICKS if y <= 2 * top]
  left.set_yticks(ticks, [f'{y:g}' for y in ticks])
  left.set_ylabel('error on the final result, %\n(log scale above 1%)')
  left.set_title('Error per chain length')
  right.set_ylabel('mean depth (block applications)')
  right.set_title('Depth per chain length')
  for ax in (left, right):
    ax.set_xlabel('gates in the chain, B')
    ax.set_xticks(sorted({r[0] for d in data.values() for r in d['mean']}))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
  # Below both panels: inside either it would hide a line.
  fig.legend(*right.get_legend_handles_labels(), loc='outside lower center',
             ncol=min(4, len(data)), fontsize=8)
  return records.save_svg(fig, path)


def draw_positions(data: Mapping[str, Any], path):
  """Per-token depth against the gate position in the longest chains: the
  mean (thick), each seed (thin), one application per gate (dotted) and
  the per-example depth of those chains (dashed)."""
  fig = plots.new_figure((5.0, 3.3))
  ax = fig.subplots()
  for rows in data['seeds'].values():
    ax.plot([r[0] for r in rows], [r[1] for r in rows],
            color=_COLOURS['per token'], linewidth=0.7, alpha=0.4)
  ax.plot([r[0] for r in data['mean']], [r[1] for r in data['mean']],
          color=_COLOURS['per token'], linewidth=1.8, marker='o', markersize=3,
          label='per token, mean over seeds')
  positions = [r[0] for r in data['mean']]
  ax.plot(positions, positions, ':', color='black', linewidth=0.9,
          label='one application per gate')
  if data.get('per_example') is not None:
    ax.axhline(data['per_example'], color=_COLOURS['per example'],
               linestyle='--', linewidth=1.0,
               label='per example (every position)')
  ax.set_xlabel('gate position i')
  ax.set_ylabel('mean depth (block applications)')
  ax.set_title(f'Depth per position, chains of {data["gates"]}')
  ax.set_xticks(positions)
  ax.set_ylim(bottom=0)
  ax.grid(alpha=0.3)
  ax.legend(fontsize=8)
  return records.save_svg(fig, path)


def pareto_data(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict:
  """Per configuration: ``mode`` ('fixed' or the halting kind), each
  seed's ``[seed, mean depth, seconds per update, error]`` (None where a
  record lacks one) and their ``mean`` ``[depth, seconds per update,
  error]``: the layout of :func:`experiments.reports.depth.lm.pareto_data`,
  with the mean depth as the compute (the same block at every depth)."""
  out = {}
  for _, name, runs in configurations(groups):
    points = []
    for r in runs:
      rate = _final(r, 'steps_per_sec')
      points.append([r.get('seed'), _final(r, 'depth'),
                     1.0 / rate if rate else None, _final(r, 'error')])
    means = []
    for i in (1, 2, 3):
      values = [p[i] for p in points if p[i] is not None]
      means.append(statistics.fmean(values) if values else None)
    halting = ((runs[0].get('flags') or {}).get('halting') if runs else None)
    out[name] = {'mode': halting, 'seeds': points, 'mean': means}
  return out


# The logic task's axes on the language model's Pareto figure.
_LOGIC_PARETO = lm.ParetoAxes(
    quality='held-out error (%)',
    compute='block applications per position (mean depth)',
    compute_scale=1.0, quality_scale=100.0, title='error',
    empty='error against depth and time')


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            statuses: Mapping[str, Mapping[str, Any]] | None = None
            ) -> list[records.Output]:
  """Every generated file of the adaptive-depth page, from the records
  grouped by experiment (the logic task's, then the character language
  model's, :func:`experiments.reports.depth.lm.outputs`); none without a
  ``depth/...`` folder."""
  if not any(name.split('/')[0] == PAPER for name in groups):
    return []
  # The page includes both fragments: a folder not recorded yet says so.
  out = [records.Output('depth/summary.md', summary_text(groups)),
         records.Output('depth/logic.md', logic_table(groups, statuses)
                        or 'No record yet.\n'),
         records.Output('depth/logic_difficulty.md',
                        difficulty_table(groups) or 'No record yet.\n')]
  data = difficulty_data(groups)
  if data:
    out.append(records.Output('depth/logic_difficulty.svg', data=data,
                              draw=lambda p: draw_difficulty(data, p)))
  positions = positions_data(groups)
  if positions:
    out.append(records.Output('depth/logic_positions.svg', data=positions,
                              draw=lambda p: draw_positions(positions, p)))
  pareto = pareto_data(groups)
  if pareto:
    out.append(records.Output(
        'depth/logic_pareto.svg', data=pareto,
        draw=lambda p: lm.draw_pareto(pareto, p, _LOGIC_PARETO)))
  return out + lm.outputs(groups, statuses)
