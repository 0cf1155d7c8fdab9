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
landing would move with it.
"""

from collections.abc import Mapping, Sequence
import re
import statistics
from typing import Any

from experiments.reports import plots, records, verdicts, verify

__all__ = [
    'PREFIX',
    'parse',
    'by_depth',
    'best_depth',
    'table',
    'rows',
    'figure_data',
    'draw_depths',
]

PREFIX = 'rehn/ptb'
_FOLDER = re.compile(r'^rehn/ptb(?P<width>\d+)_(?P<cell>rhn|ei_rehn)_r'
                     r'(?P<depth>\d+)$')
_NAMES = {'rhn': 'RHN', 'ei_rehn': 'EI-REHN'}


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
    for depth in sorted(rhn.keys() & ei.keys()):
      claim = (f'EI-REHN ($R_{{max}}$ = {depth}) below RHN (depth {depth}) '
               f'in test perplexity at $D_h = {width}$')
      a, b = _pair(ei[depth], rhn[depth])
      v = verdicts.paired(a, b, claim=claim, fmt=_fmt)
      out.append(_row(f'Table 3: {claim}', f'{paper_ei[depth]:.1f} against '
                      f'{paper_rhn[depth]:.1f} at $D_h$ = 1200 (Table 3)',
                      a, b, v))
    if rhn and ei:
      r_best, e_best = best_depth(rhn), best_depth(ei)
      claim = (f'EI-REHN at its best $R_{{max}}$ ({e_best}) below RHN at '
               f'its best depth ({r_best}) of depths '
               f'{records.span_text([*rhn, *ei])} at '
               f'$D_h = {width}$, best by validation perplexity')
      a, b = _pair(ei[e_best], rhn[r_best])
      v = verdicts.paired(a, b, claim=claim, fmt=_fmt)
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
  here = (f'{verdicts.mean_interval_text(a, _fmt)} against '
          f'{verdicts.mean_interval_text(b, _fmt)}' if a and b else None)
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
