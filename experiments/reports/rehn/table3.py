r"""EI-REHN's Table 3 at a width that trains on a CPU: PTB perplexity by depth.

The paper's Table 3 trains RHN at recurrence depths 2-5 and EI-REHN at
maximum depths :math:`R_{max}` 2-5, both at :math:`D_h = 1200`, and finds
EI-REHN better at every depth, best at :math:`R_{max} = 4` where RHN needs
depth 5. The records here are the same comparison at a small width, one
folder per model and depth, one record per seed:

* ``rehn/ptb<D>_<cell>_r<R>``: ``experiments.rehn_ptb --hidden_size=D``
  with ``--cell=rhn --depth=R`` or ``--cell=ei_rehn --max_depth=R``.

:func:`table` lists test perplexity per depth (:func:`draw_depths` draws
it, every seed a dot); :func:`rows` gives the
summary's claims: EI-REHN below RHN at each equal depth, and EI-REHN at its
best :math:`R_{max}` below RHN at its best depth, each paired by seed. "Best"
is chosen on the *validation* perplexity (mean over seeds), so that the test
split judges a choice it did not make, and only once both models have the
same depths with three seeds each: a best chosen among a sweep still
landing would move with it. The sweep is the paper's depths and those
both models have; a depth past the paper's that one model alone has (a
gate arm such as EI-REHN at R_max 12) stays out of it.

:func:`gate_table` and :func:`gate_rows` read every EI-REHN folder with the
gate arms beside it: the realized depth over training, and whether the
gate ends steps early where its Eq. 15 bound lets it.
"""

from collections.abc import Mapping, Sequence
import functools
import re
import statistics
from typing import Any

import jax

from experiments.reports import plots, records, verdicts, verify
from vcrnn_jax import rehn

__all__ = [
    'PREFIX',
    'parse',
    'by_depth',
    'best_depth',
    'table',
    'rows',
    'figure_data',
    'draw_depths',
    'parse_arm',
    'arms',
    'initial_bound',
    'gate_table',
    'gate_rows',
]

PREFIX = 'rehn/ptb'
_FOLDER = re.compile(r'^rehn/ptb(?P<width>\d+)_(?P<cell>rhn|ei_rehn)_r'
                     r'(?P<depth>\d+)$')
_NAMES = {'rhn': 'RHN', 'ei_rehn': 'EI-REHN'}
# EI-REHN's gate arms beside a Table 3 folder: the gate held open
# (``--gate=open``) or the Eq. 15 bound started inside the range
# (``--alpha_init=A``), at the same width and R_max.
_ARM = re.compile(r'^rehn/ptb(?P<width>\d+)_ei_rehn_r(?P<depth>\d+)'
                  r'_(?P<arm>open|alpha[0-9.]+)$')
ELASTIC = 'elastic'
# How far below R_max the mean realized depth must be for the gate to end
# steps early (in micro-layers per step).
EARLY_MARGIN = 0.5
# When a gate that never ended a step early could not have (the rule of
# the early-stop rows, printed with their criterion).
INERT_RULE = ('Not testable here when the Eq. 15 bound at initialisation '
              '(from the record\'s flags and the library\'s initialisation) '
              'is at or above R_max and the realized depth does not come '
              'below the margin: the gate never had a depth inside the range '
              'to stop at.')
_ARM_NAMES = {ELASTIC: 'elastic gate (the paper\'s)',
              'open': 'gate held open (`--gate=open`)'}


def parse_arm(folder: str) -> tuple[int, int, str] | None:
  """``'rehn/ptb100_ei_rehn_r8_open'`` -> ``(100, 8, 'open')``;
  ``'rehn/ptb100_ei_rehn_r4_alpha0.25'`` -> ``(100, 4, 'alpha0.25')``;
  None for any other folder."""
  match = _ARM.match(folder)
  if match is None:
    return None
  return int(match['width']), int(match['depth']), match['arm']


def arms(groups) -> dict[tuple[int, int], dict[str, list]]:
  """``{(width, R_max): {arm: runs}}`` for every EI-REHN width and R_max:
  the Table 3 folder as arm :data:`ELASTIC` and the gate arms beside it,
  in order of width and R_max."""
  out: dict = {}
  for width, cells in by_depth(groups).items():
    for depth, runs in cells.get('ei_rehn', {}).items():
      out.setdefault((width, depth), {})[ELASTIC] = list(runs)
  for folder, runs in sorted(groups.items()):
    parsed = parse_arm(folder)
    if parsed:
      width, depth, arm = parsed
      out.setdefault((width, depth), {})[arm] = list(runs)
  return dict(sorted(out.items()))


@functools.cache
def _bound_at_init(alpha_init: float | None) -> float:
  kwargs = {} if alpha_init is None else {'alpha_init': alpha_init}
  params = rehn.ei_rehn(1, 1, 1, **kwargs).init(jax.random.key(0), 1)
  return float(rehn.depth_bound(params))


def initial_bound(run: Mapping[str, Any]) -> float:
  """The Eq. 15 bound on the depth at initialisation, in micro-layers:
  the library's initialisation with the record's ``--alpha_init`` (records
  made before the flag existed used the default).

  It cannot be read from the curves: the first evaluation comes after an
  epoch of training, when the bound has moved."""
  return _bound_at_init(run.get('flags', {}).get('alpha_init'))


def _elastic_arms(found: Mapping[str, list]) -> list[str]:
  """The arms whose gate is free to end steps early (not held open)."""
  return [a for a in sorted(found, key=lambda a: (a != ELASTIC, a))
          if a == ELASTIC or a.startswith('alpha')]


def _arm_name(arm: str) -> str:
  if arm.startswith('alpha'):
    return f'bound started inside the range (`--alpha_init={arm[5:]}`)'
  return _ARM_NAMES[arm]


def _course(runs) -> str:
  """The realized depth at each evaluation, the mean over seeds."""
  curves = [[p.get('depth') for p in r.get('curve', [])] for r in runs]
  n = min((len(c) for c in curves), default=0)
  means = [statistics.fmean(c[i] for c in curves) for i in range(n)
           if all(c[i] is not None for c in curves)]
  return ' → '.join(f'{x:.2f}' for x in means) or '-'


def gate_table(groups, statuses=None) -> str:
  """Per EI-REHN width and R_max: each arm's test perplexity
  (mean ± std, per seed) and its realized depth at the end and over
  training (mean over seeds at each evaluation, one per epoch)."""
  body, every, status = [], [], []
  for (width, depth), found in arms(groups).items():
    for arm in sorted(found, key=lambda a: (a != ELASTIC, a)):
      runs = sorted(found[arm], key=lambda r: r['seed'])
      test = [_metric(r, 'test') for r in runs]
      mean, std, _ = records.mean_std(test)
      real = [records.value(r, 'results.test.depth') for r in runs]
      body.append([
          _arm_name(arm), f'{width}', str(depth),
          f'{mean:.1f}' + ('' if std is None else f' ± {std:.1f}'),
          ' / '.join(f'{x:.1f}' for x in test),
          '-' if arm == 'open' else
          f'{max(initial_bound(r) for r in runs):.2f}',
          '-' if None in real else f'{records.mean_std(real)[0]:.2f}',
          _course(runs), records.seeds_text(runs)])
      every += runs
      folder = (f'{PREFIX}{width}_ei_rehn_r{depth}' if arm == ELASTIC
                else f'{PREFIX}{width}_ei_rehn_r{depth}_{arm}')
      status.append(f'- {folder}: ' + verify.status_line(
          folder, runs, statuses or {}))
  if not body:
    return 'No record of a gate arm yet.\n'
  return (records.table(['EI-REHN', '$D_h$', '$R_{max}$', 'test perplexity',
                         'per seed', 'Eq. 15 bound at init',
                         'realized depth (test)',
                         'realized depth per epoch (valid)', 'seeds'], body)
          + '\n' + records.provenance(every) + '\n\n' + '\n'.join(status)
          + '\n')


def gate_rows(groups) -> list[tuple]:
  """Summary rows ``(claim, the paper, here, verdict)`` for the gate: at
  each EI-REHN R_max, for each arm whose gate is free (the paper's
  initialisation and any ``--alpha_init`` arm), the realized depth below
  R_max (the gate ends steps early); and the elastic gate below the same
  cell with the gate held open, paired by seed (elasticity judged apart
  from the hypernetwork's weights).

  A gate whose Eq. 15 bound starts above R_max and whose realized depth
  never leaves R_max was never inside the range it could end a step in:
  its setup cannot show the claim, "not testable here", rather than a
  failure of the paper's gate. A gate that does end steps early there
  still holds."""
  out = []
  for (width, depth), found in arms(groups).items():
    early = {}
    for arm in _elastic_arms(found):
      early[arm] = _early_row(width, depth, arm, found[arm])
      out.append(early[arm])
    if 'open' in found and ELASTIC in found:
      a, b = _pair(found[ELASTIC], found['open'])
      v = verdicts.paired(a, b, claim='the elastic gate below the gate held '
                          'open in test perplexity', fmt=_fmt)
      if early[ELASTIC][3].label == 'not testable here':
        v = verdicts.not_testable(v.criterion, 'the elastic gate runs '
                                  f'R_max = {depth} micro-layers like the '
                                  'open one: ' + early[ELASTIC][3].evidence)
      out.append(_row(f'Table 3: the elastic gate below the gate held open '
                      f'at $R_{{max}}$ = {depth}, $D_h = {width}$',
                      'elasticity improves on the hypernetwork\'s weights '
                      'alone (Sec. 3.2, Table 3)', a, b, v))
  return out


def _early_row(width: int, depth: int, arm: str, runs) -> tuple:
  """The row "the gate ends steps early" for one free-gate arm."""
  real = [x for x in (records.value(r, 'results.test.depth') for r in runs)
          if x is not None]
  # A gate that cuts a few hundredths of a step is not one that ends
  # steps early: the claim needs half a step below R_max on average.
  v = verdicts.below(real, depth - EARLY_MARGIN,
                     what='realized depth on the test split',
                     fmt=lambda x: f'{x:.2f}', bounds=(1.0, float(depth)))
  v = v._replace(criterion=v.criterion.rstrip('.') + '. ' + INERT_RULE)
  bound = max((initial_bound(r) for r in runs), default=0.0)
  if v.label in ('does not hold', 'within noise') and bound >= depth:
    v = verdicts.not_testable(v.criterion, (
        f'the Eq. 15 bound starts at {bound:.2f} micro-layers, above '
        f'R_max = {depth}, and the realized depth stays at '
        f'{statistics.fmean(real):.2f}: the gate never had a depth inside '
        'the range to end a step at'))
  where = '' if arm == ELASTIC else f', {_arm_name(arm)}'
  return (f'Table 3: EI-REHN\'s gate ends steps early (by at least '
          f'{EARLY_MARGIN} of a micro-layer on average) at '
          f'$R_{{max}}$ = {depth}, $D_h = {width}${where}',
          'elastic depth: each step stops at its bound (Eq. 15, '
          'Sec. 3.2)', None, v)


def parse(folder: str) -> tuple[int, str, int] | None:
  """``'rehn/ptb100_ei_rehn_r3'`` -> ``(100, 'ei_rehn', 3)``; None for a
  folder of another experiment."""
  match = _FOLDER.match(folder)
  if match is None:
    return None
  return int(match['width']), match['cell'], int(match['depth'])


def by_depth(groups: Mapping[str, Sequence[Mapping[str, Any]]]
             ) -> dict[int, dict[str, dict[int, list]]]:
  """``{width: {cell: {depth: runs}}}`` of every Table 3 folder."""
  out: dict = {}
  for folder, runs in sorted(groups.items()):
    parsed = parse(folder)
    if parsed:
      width, cell, depth = parsed
      out.setdefault(width, {}).setdefault(cell, {})[depth] = list(runs)
  return out


def _metric(run, split: str) -> float | None:
  return records.value(run, f'results.{split}.perplexity')


def _mean(runs, split: str) -> float:
  return records.mean_std(_metric(r, split) for r in runs)[0]


def best_depth(depths: Mapping[int, list]) -> int:
  """The depth of least mean *validation* perplexity."""
  return min(depths, key=lambda d: _mean(depths[d], 'valid'))


def table(groups, statuses=None) -> str:
  """Per width: test perplexity (mean ± std, per seed) and, for EI-REHN,
  the realized mean depth, by cell and depth; then each folder's
  verification status."""
  found = by_depth(groups)
  parts = []
  for width, cells in found.items():
    body = []
    for cell in ('rhn', 'ei_rehn'):
      for depth, runs in sorted(cells.get(cell, {}).items()):
        runs = sorted(runs, key=lambda r: r['seed'])
        test = [_metric(r, 'test') for r in runs]
        mean, std, _ = records.mean_std(test)
        real = [records.value(r, 'results.test.depth') for r in runs]
        body.append([
            _NAMES[cell], str(depth),
            f'{records.value(runs[0], "results.parameters"):,}',
            f'{_mean(runs, "valid"):.1f}',
            f'{mean:.1f}' + ('' if std is None else f' ± {std:.1f}'),
            ' / '.join(f'{x:.1f}' for x in test),
            '-' if cell == 'rhn' or None in real else
            f'{records.mean_std(real)[0]:.2f}',
            records.seeds_text(runs),
            ', '.join(f'{s:,}' for s in sorted({r['steps'] for r in runs}))])
    every = [r for c in cells.values() for rs in c.values() for r in rs]
    status = '\n'.join(
        f'- {_NAMES[cell]} depth {depth}: ' + verify.status_line(
            f'{PREFIX}{width}_{cell}_r{depth}', runs, statuses or {})
        for cell, depths in cells.items() for depth, runs in
        sorted(depths.items()))
    parts.append(
        f'$D_h = {width}$:\n\n' + records.table(
            ['model', 'depth (RHN) or $R_{max}$', 'params', 'valid '
             'perplexity', 'test perplexity', 'per seed', 'realized depth',
             'seeds', 'updates'], body)
        + '\n' + records.provenance(every) + '\n\n' + status + '\n')
  return '\n'.join(parts)


def _pair(a_runs, b_runs) -> tuple[list, list]:
  a = {r['seed']: _metric(r, 'test') for r in a_runs}
  b = {r['seed']: _metric(r, 'test') for r in b_runs}
  seeds = sorted(a.keys() & b.keys())
  return [a[s] for s in seeds], [b[s] for s in seeds]


def _fmt(x: float) -> str:
  return f'{x:.1f}'


def rows(groups, paper_rhn: Mapping[int, float],
         paper_ei: Mapping[int, float]) -> list[tuple]:
  """Summary rows ``(claim, the paper, here, verdict)`` (``here`` None
  without paired seeds): per width, EI-REHN against RHN at each depth both
  have, and best against best. ``paper_*``: the paper's test perplexity by
  depth (Table 3)."""
  out = []
  for width, cells in by_depth(groups).items():
    rhn, ei = cells.get('rhn', {}), cells.get('ei_rehn', {})
    # The sweep of the best-against-best row: the paper's depths and those
    # both models have. A depth past the paper's that one model alone has
    # (EI-REHN at R_max 12, a gate arm) is not one the other will get.
    sweep = set(paper_rhn) | set(paper_ei) | (rhn.keys() & ei.keys())
    rhn = {d: runs for d, runs in rhn.items() if d in sweep}
    ei = {d: runs for d, runs in ei.items() if d in sweep}
    for depth in sorted(rhn.keys() & ei.keys()):
      claim = (f'EI-REHN ($R_{{max}}$ = {depth}) below RHN (depth {depth}) '
               f'in test perplexity at $D_h = {width}$')
      a, b = _pair(ei[depth], rhn[depth])
      v = verdicts.paired(a, b, claim='EI-REHN below RHN at the same depth '
                          'in test perplexity', fmt=_fmt)
      paper = (f'{paper_ei[depth]:.1f} against {paper_rhn[depth]:.1f} at '
               '$D_h$ = 1200 (Table 3)' if depth in paper_ei
               and depth in paper_rhn else
               f'not in Table 3 (depths {records.span_text(paper_ei)})')
      out.append(_row(f'Table 3: {claim}', paper, a, b, v))
    if rhn and ei:
      r_best, e_best = best_depth(rhn), best_depth(ei)
      claim = (f'EI-REHN at its best $R_{{max}}$ ({e_best}) below RHN at '
               f'its best depth ({r_best}) of depths '
               f'{records.span_text([*rhn, *ei])} at '
               f'$D_h = {width}$, best by validation perplexity')
      a, b = _pair(ei[e_best], rhn[r_best])
      v = verdicts.paired(a, b, claim='EI-REHN at its best depth below RHN '
                          'at its best depth in test perplexity', fmt=_fmt)
      short = _incomplete(rhn, ei)
      if short:
        # A best chosen among depths that are not all in yet can move
        # when they land: no verdict until every depth has its seeds.
        v = verdicts.withheld(v, short)
      pe = min(paper_ei, key=paper_ei.get)
      pr = min(paper_rhn, key=paper_rhn.get)
      out.append(_row(f'Table 3: {claim}',
                      f'EI-REHN best at $R_{{max}}$ = {pe} '
                      f'({paper_ei[pe]:.1f}), RHN at depth {pr} '
                      f'({paper_rhn[pr]:.1f}) (Table 3)', a, b, v))
  return out


def _incomplete(rhn: Mapping[int, list], ei: Mapping[int, list]) -> str:
  """Why a best-against-best comparison is not yet decidable ('' when
  it is): both models need the same depths, each with
  :data:`~experiments.reports.verdicts.MIN_SEEDS` seeds."""
  lacking = [f'{_NAMES[cell]} depth {d} has {len(runs)} seed'
             + ('s' if len(runs) != 1 else '')
             for cell, depths in (('rhn', rhn), ('ei_rehn', ei))
             for d, runs in sorted(depths.items())
             if len(runs) < verdicts.MIN_SEEDS]
  missing = [f'{_NAMES[cell]} has no record at depth {d}'
             for cell, mine, other in (('rhn', rhn, ei), ('ei_rehn', ei, rhn))
             for d in sorted(other.keys() - mine.keys())]
  if not lacking and not missing:
    return ''
  return ('; '.join(lacking + missing) + f': the best depth waits for '
          f'{verdicts.MIN_SEEDS} seeds at every depth of both models')


def _row(claim: str, paper: str, a, b, v: verdicts.Verdict) -> tuple:
  here = (f'{verdicts.mean_interval_text(a, _fmt, verdicts.POSITIVE)} '
          f'against {verdicts.mean_interval_text(b, _fmt, verdicts.POSITIVE)}'
          if a and b else None)
  return claim, paper, here, v


def figure_data(groups) -> dict:
  """What :func:`draw_depths` draws: per width and cell, ``(depth, seed,
  test perplexity)`` per run."""
  return {str(width): {cell: sorted(
      (depth, r['seed'], _metric(r, 'test'))
      for depth, runs in depths.items() for r in runs)
      for cell, depths in cells.items()}
      for width, cells in by_depth(groups).items()}


def draw_depths(data: Mapping[str, Any], path):
  """Test perplexity against depth (RHN) or :math:`R_{max}` (EI-REHN), one
  panel per width: every seed a dot, each model's means joined."""
  fig = plots.new_figure((6.0 * len(data), 4.0))
  axes = fig.subplots(1, len(data), squeeze=False)[0]
  colours = {'rhn': 'C0', 'ei_rehn': 'C1'}
  for ax, (width, cells) in zip(axes, data.items()):
    for i, (cell, runs) in enumerate(sorted(cells.items(), reverse=True)):
      # A small sideways shift keeps the two models' dots apart.
      shift = 0.06 * (2 * i - 1)
      runs = [(d, y) for d, _, y in runs if y is not None]
      ax.scatter([d + shift for d, _ in runs], [y for _, y in runs], s=14,
                 color=colours[cell], alpha=0.5)
      depths = sorted({d for d, _ in runs})
      means = [statistics.fmean(y for d2, y in runs if d2 == d)
               for d in depths]
      ax.plot([d + shift for d in depths], means, '-o', markersize=3,
              color=colours[cell], label=_NAMES[cell])
    ax.set_xticks(sorted({d for runs in cells.values() for d, _, _ in runs}))
    ax.set_xlabel('depth (RHN) or $R_{max}$ (EI-REHN)')
    ax.set_ylabel('test perplexity')
    ax.set_title(f'PTB words, $D_h = {width}$: test perplexity by depth\n'
                 '(dots: seeds; lines: means)', fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
  return records.save_svg(fig, path)
