r"""VC's central claim as a frontier: held-out likelihood against computation.

Sec. 5 asks whether a VC network "lead[s] to lower perplexity than a
constant computation counterpart which performs as many or more
operations"; Table 1 (music), Table 3 (PTB) and Fig. 4 (Europarl) answer it
with a few points of likelihood against computation. Here every width of the
constant-computation network and every setting of the VC network is a
folder of records, one record per seed:

* ``vc/frontier_<corpus>_<model>``: ``corpus`` is ``ptb``
  (``experiments.vc_ptb --level=char``: bits per character), ``ptb1024``
  (the same binary at Table 3's own width, D up to 1024, trained on a GPU:
  a frontier of its own, since its budget differs) or ``music``
  (``experiments.vc_music``: perplexity); ``model`` is the cell and width,
  ``elman128``, ``gru192``, and for a VC cell its target
  :math:`\bar m` too, ``vcrnn256_m0.3``; ``_guided`` marks Sec. 5.2.2's
  guide setting (``--boundary_target=1.0``: :math:`\bar m = 1` on word
  boundaries, the target elsewhere), judged against the same frontier but
  drawn apart and left out of the learned scheduler's where-computation-goes
  rows.

Computation is RNN-d, Table 3's measure: the width of the Elman network that
runs as many multiplications per step (for a VC cell, from the dimensions
the hard path updates; for a fixed cell, its own equivalent width), beside
the multiplications per step themselves.

The verdict compares a VC setting with the frontier of its constant
counterpart (VCRNN with Elman, VCGRU with GRU) *at the VC run's own RNN-d*,
seed by seed: the counterpart's held-out metric of the same seed at that
RNN-d, minus the VC run's. The counterpart's frontier is its *lower
envelope* (:func:`envelope`): at each width, the best metric that seed
reaches with at most that RNN-d, a running minimum over increasing RNN-d.
A wider network that ends worse than a narrower one (on music, one that
overfits its 1,600 tunes) does not raise the frontier: whoever can afford
its computation can run the narrower one. The envelope is taken per seed,
not on the means, because the verdict pairs each VC seed with the
counterpart's runs of the same seed and judges the interval of those
per-seed gains; where two widths lie within noise of each other the
per-seed minimum picks the lower of the two, which can only lower the
counterpart's metric and so errs against the VC claim, never for it.
:func:`experiments.reports.verdicts.exceeds` decides on the gains; a VC
run whose RNN-d lies outside the widths trained has no interpolated
counterpart and does not count (the envelope is not extrapolated).
Between two widths the envelope is interpolated twice, linearly in RNN-d
and linearly in log RNN-d: if the true frontier there falls and is convex
(each width buys less than the last), the straight chord lies above it and
favours VC, and the log fit lies below the chord. The verdict is the one
both fits give, or within noise when they differ (:func:`frontier_verdict`).
Where the envelope is flat, both fits are the same. The figure draws the
envelope of the means under both fits.

A VC setting's computation is what its scheduler reached, not its target
:math:`\bar m`: each row gives the mean :math:`m_t` beside the target, and
the claim is judged at the RNN-d reached. A setting planned with fewer
seeds than a verdict needs (``docs/results/plans/vc.toml``) says so in its
row, which stays undecided.
"""

from collections.abc import Mapping, Sequence
import math
import pathlib
import re
from typing import Any, NamedTuple

from experiments.reports import plan, plots, records, verdicts, verify

__all__ = [
    'planned_seeds',
    'FRONTIER',
    'CORPORA',
    'COUNTERPART',
    'Model',
    'parse',
    'models',
    'FITS',
    'fixed',
    'envelope',
    'interpolate',
    'gains',
    'frontier_verdict',
    'frontier_table',
    'frontier_rows',
    'frontier_data',
    'draw_frontier',
    'outputs',
]

FRONTIER = 'vc/frontier_'
# corpus -> (the held-out metric, its name, what the paper's claim is from).
CORPORA = {
    'ptb': ('bpc', 'test bits per character', 'Table 3, Sec. 5.2.1'),
    'ptb1024': ('bpc', 'test bits per character', 'Table 3, Sec. 5.2.1'),
    'music': ('perplexity', 'test perplexity', 'Table 1, Sec. 5.1'),
}
# The figures' titles.
_TITLES = {'ptb': 'Character PTB', 'ptb1024': 'Character PTB at D 1024',
           'music': 'Irish tunes'}
# Each VC cell and the constant-computation cell it is compared with.
COUNTERPART = {'vcrnn': 'elman', 'vcgru': 'gru'}
_NAMES = {'elman': 'Elman', 'gru': 'GRU', 'vcrnn': 'VCRNN', 'vcgru': 'VCGRU',
          'vcrnn_guided': 'VCRNN (guided)'}
# Where a guided setting's claim is from: the paper guides on Europarl only.
_GUIDE_SOURCE = 'Sec. 5.2.2, the guide (Fig. 4 uses it on Europarl)'
_MODEL = re.compile(r'^(?P<cell>[a-z]+?)(?P<width>\d+)'
                    r'(?:_m(?P<target>[\d.]+))?(?:_w(?P<weight>[\d.]+))?'
                    r'(?P<guided>_guided)?$')


# The two curves through the counterpart's lower envelope: linear in RNN-d
# (the chord, above a convex frontier) and linear in log RNN-d (below it).
FITS = {False: 'linear in RNN-d', True: 'linear in log RNN-d'}
# Where the seeds each folder is planned with are written.
PLAN = (pathlib.Path(__file__).resolve().parents[3]
        / 'docs/results/plans/vc.toml')


def fixed(digits: int) -> verdicts.Format:
  """``digits`` decimals, more where a value that is not 0 would print
  as 0 (``-0.0002``, never ``-0.000``), so that a printed interval touches
  0 only when it does."""
  def fmt(x: float) -> str:
    x = float(x) + 0.0                  # no negative zero
    for d in range(digits, digits + 7):
      text = f'{x:.{d}f}'
      if x == 0 or float(text) != 0:
        return text
    return f'{x:.1e}'
  return fmt


class Model(NamedTuple):
  """A folder's model: its cell, width D and (VC cells) target m̄, with the
  penalty weight where the folder names one (``_w1``: another weight than
  the frontier's common ``--penalty_weight``), and whether the scheduler
  is guided to the word boundaries (``_guided``)."""
  cell: str
  width: int
  target: float | None
  weight: float | None = None
  guided: bool = False

  @property
  def label(self) -> str:
    """``'VCRNN-256 (m̄ 0.3)'``, ``'VCRNN-256 (m̄ 0.6, Ω weight 1)'``,
    ``'VCRNN-256 (m̄ 0.5, guided)'``, ``'Elman-128'``."""
    base = f'{_NAMES.get(self.cell, self.cell)}-{self.width}'
    if self.target is None:
      return base
    weight = '' if self.weight is None else f', Ω weight {self.weight:g}'
    guided = ', guided' if self.guided else ''
    return f'{base} (m̄ {self.target:g}{weight}{guided})'


def parse(model: str) -> Model:
  """``'vcrnn256_m0.3'`` -> ``Model('vcrnn', 256, 0.3)``;
  ``'vcrnn256_m0.6_w1'`` -> ``Model('vcrnn', 256, 0.6, 1.0)``;
  ``'vcrnn256_m0.5_guided'`` -> ``Model('vcrnn', 256, 0.5, guided=True)``."""
  match = _MODEL.match(model)
  if match is None:
    raise ValueError(f'not a frontier model name: {model!r} (expected '
                     'e.g. elman128 or vcrnn256_m0.3)')
  target, weight = match['target'], match['weight']
  if (weight is not None or match['guided']) and target is None:
    raise ValueError(f'not a frontier model name: {model!r} (a penalty '
                     'weight or the guide needs a target, e.g. '
                     'vcrnn256_m0.6_w1, vcrnn256_m0.5_guided)')
  return Model(match['cell'], int(match['width']),
               None if target is None else float(target),
               None if weight is None else float(weight),
               bool(match['guided']))


def models(groups: Mapping[str, Sequence[Mapping[str, Any]]], corpus: str
           ) -> dict[Model, list]:
  """The corpus's folders, by model, widest computation last."""
  prefix = f'{FRONTIER}{corpus}_'
  found = {parse(name[len(prefix):]): list(runs)
           for name, runs in groups.items() if name.startswith(prefix)}
  return dict(sorted(found.items(),
                     key=lambda kv: (kv[0].cell, kv[0].width,
                                     kv[0].target or 0.0,
                                     kv[0].weight or 0.0, kv[0].guided)))


def _test(run: Mapping[str, Any], key: str) -> float | None:
  return records.value(run, f'results.test.{key}')


def envelope(points: Sequence[tuple[float, float]]
             ) -> list[tuple[float, float]]:
  """The lower envelope of ``points`` (x, y), by increasing x: at each x,
  the lowest y of any point at or below it (a running minimum), so that a
  wider network that ends worse than a narrower one does not raise the
  frontier."""
  out, best = [], math.inf
  for x, y in sorted(points):
    best = min(best, y)
    out.append((x, best))
  return out


def interpolate(points: Sequence[tuple[float, float]], x: float,
                log: bool = False) -> float | None:
  """The piecewise-linear curve through ``points`` (x, y) at ``x``, in
  ``x`` or (``log``) in ``log x``; None outside their range (a frontier is
  not extrapolated)."""
  pts = sorted(points)
  if not pts or x < pts[0][0] or x > pts[-1][0]:
    return None
  if log and (x <= 0 or pts[0][0] <= 0):
    raise ValueError(f'log interpolation needs x > 0, got {x} and '
                     f'{pts[0][0]}.')
  f = math.log if log else float
  for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
    if x0 <= x <= x1:
      return y0 if x1 == x0 else y0 + (y1 - y0) * (f(x) - f(x0)) / (
          f(x1) - f(x0))
  return pts[0][1]                      # a single point, x equal to it


def gains(vc_runs: Sequence[Mapping[str, Any]],
          base: Mapping[Model, Sequence[Mapping[str, Any]]], metric: str,
          log: bool = False) -> dict[int, float]:
  """Per seed: the counterpart's lower envelope (:func:`envelope`, from
  its runs of that seed) interpolated at the VC run's RNN-d (``log``: in
  log RNN-d), minus the VC run's metric. Positive: the VC run is better
  at its computation. Seeds whose RNN-d lies outside the counterpart's
  widths, or with fewer than two widths, are left out."""
  out = {}
  for run in vc_runs:
    seed = run['seed']
    points = [(_test(r, 'rnn_d'), _test(r, metric))
              for runs in base.values() for r in runs if r['seed'] == seed]
    points = [p for p in points if None not in p]
    x, y = _test(run, 'rnn_d'), _test(run, metric)
    if len(points) < 2 or x is None or y is None:
      continue
    at = interpolate(envelope(points), x, log)
    if at is not None:
      out[seed] = at - y
  return out


def _ms(values, digits: int) -> str:
  mean, std, _ = records.mean_std(values)
  return f'{mean:.{digits}f}' + ('' if std is None else f' ± {std:.{digits}f}')


def frontier_table(groups, corpus: str, statuses=None) -> str:
  """Every model of the corpus: RNN-d, multiplications per step and the
  held-out metric over seeds (every seed listed), then each folder's
  verification status."""
  found = models(groups, corpus)
  if not found:
    return ''
  metric, what, _ = CORPORA[corpus]
  rows = []
  for model, runs in found.items():
    values = [_test(r, metric) for r in sorted(runs, key=lambda r: r['seed'])]
    rows.append([
        model.label, _ms([_test(r, 'rnn_d') for r in runs], 1),
        f'{records.mean_std(_test(r, "cost") for r in runs)[0]:,.0f}',
        _ms([_test(r, 'm') for r in runs], 3), _ms(values, 4),
        ' / '.join(f'{v:.4f}' for v in values), records.seeds_text(runs),
        ', '.join(f'{s:,}' for s in sorted({r['steps'] for r in runs}))])
  every = [r for runs in found.values() for r in runs]
  status = '\n'.join(
      f'- {m.label}: '
      + verify.status_line(f'{FRONTIER}{corpus}_{_folder(m)}', runs,
                           statuses or {}) for m, runs in found.items())
  return (records.table(
      ['model', 'RNN-d', 'multiplications per step', 'mean m_t', what,
       'per seed', 'seeds', 'updates'], rows)
          + f'\nRNN-d and mean $m_t$ on the test split; {what} of the final '
          'parameters. ' + _norm_note(found) + records.provenance(every)
          + '\n\n' + status + '\n')


# The scheduler's share of the training gradient's norm, as the VC
# binaries log it at the end of a run (the curves do not log it).
_SCHEDULER_NORM = 'train_grad_norm_scheduler'


def _finite(value) -> bool:
  try:
    return math.isfinite(float(value))
  except (TypeError, ValueError):
    return False


def _norm_note(found: Mapping[Model, Sequence[Mapping[str, Any]]]) -> str:
  """Which runs end with the scheduler's training gradient norm not finite
  (logged as ``inf``), and which with it finite: only the final value is
  recorded. Empty when no run logs it or every one is finite."""
  finite, not_finite = [], []
  for model, runs in found.items():
    for run in sorted(runs, key=lambda r: r['seed']):
      value = run.get('final', {}).get(_SCHEDULER_NORM)
      if value is not None:
        (finite if _finite(value) else not_finite).append(
            f'{model.label} seed {run["seed"]}')
  if not not_finite:
    return ''
  return (f'The final `{_SCHEDULER_NORM}` (only the last value is '
          'recorded; the curves do not log it) is not finite (`inf`) for '
          + ', '.join(not_finite)
          + ('; finite for ' + ', '.join(finite) if finite else '') + '. ')


def _folder(model: Model) -> str:
  base = f'{model.cell}{model.width}'
  if model.target is not None:
    base += f'_m{model.target:g}'
  if model.weight is not None:
    base += f'_w{model.weight:g}'
  return f'{base}_guided' if model.guided else base


def _fmt(corpus: str) -> verdicts.Format:
  return fixed(4 if corpus.startswith('ptb') else 3)


def frontier_verdict(by_fit: Mapping[bool, Mapping[int, float]], *,
                     claim: str, fmt) -> verdicts.Verdict:
  """The frontier claim from the per-seed gains under each of
  :data:`FITS` (``{log: {seed: gain}}``): each fit's verdict by
  :func:`~experiments.reports.verdicts.exceeds`; the label both give, or
  ``within noise`` when they differ (``undecided`` when either is)."""
  each = {log: verdicts.exceeds([g[s] for s in sorted(g)], claim=claim,
                                fmt=fmt) for log, g in by_fit.items()}
  labels = {v.label for v in each.values()}
  label = (labels.pop() if len(labels) == 1 else 'undecided'
           if 'undecided' in labels else 'within noise')
  first = next(iter(each.values()))
  criterion = (first.criterion + '; the counterpart is its lower '
               'envelope (per seed, the best metric of any width at or '
               'below the RNN-d: a running minimum), interpolated '
               + ' and '.join(FITS[log] for log in each) + ': the verdict '
               'both give, within noise when they differ')
  evidence = '; '.join(f'{FITS[log]}: {v.evidence}'
                       for log, v in each.items())
  return verdicts.Verdict(label, criterion, evidence)


def planned_seeds(folder: str, path=PLAN) -> tuple[int, ...] | None:
  """The seeds ``folder`` is planned with in the VC plan (None: not
  planned there, or no plan file at hand)."""
  try:
    entries = plan.read_plan(path)
  except (OSError, ValueError):
    return None
  return next((e.seeds for e in entries if e.folder == folder), None)


def _by_design(folder: str, runs, path=PLAN) -> str:
  """Why a setting stays undecided for good: planned with fewer seeds
  than a verdict needs, every planned seed recorded (empty otherwise)."""
  seeds = planned_seeds(folder, path)
  if seeds is None or len(seeds) >= verdicts.MIN_SEEDS or not (
      set(seeds) <= {r['seed'] for r in runs}):
    return ''
  n = len(seeds)
  return (f'; planned with {"one seed" if n == 1 else f"{n} seeds"} by '
          'design (`docs/results/plans/vc.toml`), so this row stays '
          'undecided')


def _target_text(model: Model, runs) -> str:
  """Mean :math:`m_t` reached against the target the setting asked for."""
  target = f'm̄ {model.target:g}' + (' (1 on word boundaries)'
                                     if model.guided else '')
  return (f'mean m_t {_ms([_test(r, "m") for r in runs], 3)} against the '
          f'target {target}')


def frontier_rows(groups, corpus: str, plan_path=PLAN) -> list[list[str]]:
  """One summary row (claim, the paper, here, verdict, criterion) per VC
  setting of the corpus: its metric against its counterpart's lower
  envelope at the RNN-d the run reached (whatever its target: the row
  gives the mean :math:`m_t` beside the target)."""
  found = models(groups, corpus)
  metric, what, source = CORPORA[corpus]
  fmt = _fmt(corpus)
  rows = []
  for model, runs in found.items():
    base_cell = COUNTERPART.get(model.cell)
    if base_cell is None:
      continue
    base = {m: r for m, r in found.items() if m.cell == base_cell}
    by_fit = {log: gains(runs, base, metric, log) for log in FITS}
    by_seed = by_fit[False]
    claim = (f'{model.label} below the {_NAMES[base_cell]} frontier in '
             f'{what} at the RNN-d it reaches (not at its target m̄)')
    where = _GUIDE_SOURCE if model.guided else source
    verdict = frontier_verdict(
        by_fit, fmt=fmt, claim=f'{what} below the {_NAMES[base_cell]} '
        'frontier at the RNN-d of the run (gain per seed)')
    span = [_test(r, 'rnn_d') for rs in base.values() for r in rs]
    span = [x for x in span if x is not None]
    inside = (f'RNN-d {min(span):.0f}-{max(span):.0f}' if span
              else 'no record')
    here = (f'RNN-d {_ms([_test(r, "rnn_d") for r in runs], 1)}; '
            f'{_target_text(model, runs)}; '
            f'{_ms([_test(r, metric) for r in runs], 4)}; '
            f'{len(by_seed)} of {len(runs)} seeds inside the '
            f'{_NAMES[base_cell]} frontier ({inside})')
    label, evidence, criterion = verdict.cells()
    evidence += _by_design(f'{FRONTIER}{corpus}_{_folder(model)}', runs,
                           plan_path)
    rows.append([f'{where}: {claim}',
                 f'lower {what} than the constant-computation network at '
                 f'as many or more operations ({where})',
                 f'{here}; {evidence}', label, criterion])
  return rows


def frontier_data(groups, corpus: str) -> dict:
  """What the figure draws: per model, (seed, RNN-d, metric) per run; a
  guided setting is a cell of its own, so that its mean is not joined to
  the learned scheduler's."""
  metric = CORPORA[corpus][0]
  return {'corpus': corpus, 'metric': CORPORA[corpus][1], 'models': {
      m.label: {'cell': f'{m.cell}_guided' if m.guided else m.cell, 'runs': [
          (r['seed'], _test(r, 'rnn_d'), _test(r, metric)) for r in runs]}
      for m, runs in models(groups, corpus).items()}}


def draw_frontier(data: Mapping[str, Any], path):
  """Held-out metric against RNN-d: every seed a dot, each model's mean a
  cross, each cell's means joined in order of computation (solid) and, for
  the constant cells the verdicts compare with, the lower envelope of
  their means (:func:`envelope`) straight in RNN-d (dotted) and straight
  in log RNN-d (dashed): the two fits of the verdicts."""
  fig = plots.new_figure((7.0, 4.5))
  ax = fig.subplots()
  colours = {'elman': 'C0', 'vcrnn': 'C1', 'gru': 'C2', 'vcgru': 'C3',
             'vcrnn_guided': 'C4'}
  means = {}
  for entry in data['models'].values():
    runs = [(x, y) for _, x, y in entry['runs'] if None not in (x, y)]
    if not runs:
      continue
    colour = colours.get(entry['cell'], 'C4')
    ax.scatter([x for x, _ in runs], [y for _, y in runs], s=14,
               color=colour, alpha=0.5)
    mx = sum(x for x, _ in runs) / len(runs)
    my = sum(y for _, y in runs) / len(runs)
    ax.plot([mx], [my], 'x', color=colour, markersize=8)
    means.setdefault(entry['cell'], []).append((mx, my))
  for cell, pts in means.items():
    pts.sort()
    ax.plot([x for x, _ in pts], [y for _, y in pts], '-',
            color=colours.get(cell, 'C4'), label=_NAMES.get(cell, cell))
    if cell in COUNTERPART.values() and len(pts) > 1 and pts[0][0] > 0:
      low = envelope(pts)
      xs = [pts[0][0] * (pts[-1][0] / pts[0][0]) ** (i / 64)
            for i in range(65)]
      for log, style in ((False, ':'), (True, '--')):
        ax.plot(xs, [interpolate(low, x, log=log) for x in xs], style,
                color=colours.get(cell, 'C4'), linewidth=1,
                label=f'{_NAMES.get(cell, cell)} envelope, {FITS[log]}')
  ax.set_xlabel('RNN-d (equivalent Elman width; computation per step)')
  ax.set_ylabel(data['metric'])
  title = _TITLES.get(data['corpus'], data['corpus'])
  ax.set_title(f'{title}: {data["metric"]} against '
               'computation\n(dots: seeds; crosses: means)', fontsize=10)
  ax.grid(alpha=0.3)
  ax.legend(fontsize=8)
  return records.save_svg(fig, path)


def outputs(groups, statuses=None) -> list[records.Output]:
  """Per corpus with frontier records: its table and figure."""
  out = []
  for corpus in CORPORA:
    if not models(groups, corpus):
      continue
    data = frontier_data(groups, corpus)
    out += [records.Output(f'vc/frontier_{corpus}.md',
                           frontier_table(groups, corpus, statuses)),
            records.Output(f'vc/frontier_{corpus}.svg', data=data,
                           draw=lambda p, d=data: draw_frontier(d, p))]
  return out
