"""The family comparisons' runs, collected into one table and one figure.

Each run of ``experiments/family_parity`` or ``experiments/family_adding``
writes a ``results.json``; :func:`read_runs` finds them under a directory,
:func:`parity_rows` and :func:`adding_rows` flatten them into one row per
run, :func:`aggregate` takes the mean and spread over seeds, and
:func:`markdown_table` formats the result for the docs. The adding task's
figure is :func:`vcrnn_jax.papers.family.plots.plot_error_vs_updates`.

The same rows come from run records (:mod:`vcrnn_jax.analysis.records`):
:func:`runs_from_records` reads the ``results.json`` each record carries,
and :func:`outputs` gives the results page's generated tables and figures
(``python -m experiments.results``), each table followed by its step caps
and verification status, and :func:`conclusions`: every claim the page
makes or tests, with a verdict from :mod:`vcrnn_jax.analysis.verdicts`
(a seed solves a range by :func:`solved`'s Wilson rule).

Example::

  runs = summary.read_runs('runs/family_adding')
  rows = summary.aggregate(summary.adding_rows(runs),
                           summary.ADDING_KEYS, summary.ADDING_VALUES)
  print(summary.markdown_table(rows, summary.ADDING_KEYS
                               + summary.ADDING_VALUES))
"""

from collections.abc import Callable, Mapping, Sequence
import json
import pathlib
import re
import statistics
from typing import Any, NamedTuple

from vcrnn_jax.analysis import records, verdicts, verify
from vcrnn_jax.papers.family import plots as family_plots

# A method "solves" a range at this accuracy; only then is its extrapolation
# judged (a method that did not learn its training range is reported so, not
# as failing to extrapolate). One seed's accuracy is a proportion of
# held-out vectors, so it is judged by its Wilson interval (:func:`solved`).
SOLVED = 0.95
# Held-out vectors per evaluation: ``experiments.family_parity``'s
# ``--eval_batch_size`` default, which no record's command overrides.
EVAL_VECTORS = 1000
SOLVED_STATES = ('solved', 'undecided', 'not solved')
# The parameters that make up each method's grid value (PonderNet Sec. 3.1
# grids the prior; ACT's paper grids tau; Fojo et al. compare rho).
GRID = {'rnn': (), 'act': ('tau',), 'repeat': ('rho',),
        'pondernet': ('kl', 'ponder_epsilon', 'lambda_p', 'beta')}
_SHORT = {'ponder_epsilon': 'eps'}
PARITY_KEYS = ('setup', 'method', 'grid')
PARITY_VALUES = ('training_range_accuracy', 'accuracy', 'steps',
                 'multiplications', 'seconds_per_update')
ADDING_KEYS = ('model', 'budget', 'vc_target')
ADDING_VALUES = ('mse', 'mse_over_baseline', 'update_fraction')


def read_runs(root) -> list[dict]:
  """Every ``results.json`` under ``root``, each with its ``run`` directory
  (relative to ``root``), in path order.

  Raises:
    ValueError: ``root`` holds none.
  """
  root = pathlib.Path(root)
  runs = []
  for path in sorted(root.glob('**/results.json')):
    with open(path, encoding='utf-8') as f:
      run = json.load(f)
    run['run'] = str(path.parent.relative_to(root))
    runs.append(run)
  if not runs:
    raise ValueError(f'no results.json under {root}; run '
                     'experiments.family_parity or family_adding there '
                     'first.')
  return runs


def solved(accuracy: float | None, vectors: int = EVAL_VECTORS) -> str:
  """One seed's state on a range, from its accuracy on ``vectors``
  held-out vectors: ``'solved'`` when the lower end of the Wilson 95%
  interval is above :data:`SOLVED`, ``'not solved'`` when its upper end is
  below, ``'undecided'`` otherwise (a seed at 0.955 of 1,000 vectors is
  not told apart from 0.95)."""
  if accuracy is None:
    return 'undecided'
  low, high = verdicts.wilson_interval(round(accuracy * vectors), vectors)
  return ('solved' if low > SOLVED else 'not solved' if high < SOLVED
          else 'undecided')


def solved_counts(states: Sequence[str]) -> str:
  """``'2 / 1 / 0'``: seeds solved / undecided / not solved."""
  return ' / '.join(str(sum(s == k for s in states)) for k in SOLVED_STATES)


def _train_accuracy(by_count: Sequence[Mapping[str, Any]]) -> float | None:
  """Mean accuracy over the counts of the training range."""
  values = [r['accuracy'] for r in by_count
            if r['split'] in ('train', 'both')]
  return statistics.fmean(values) if values else None


def grid_label(method: str, model: Mapping[str, Any]) -> str:
  """The method's grid value, e.g. ``'tau=0.01'`` (``''`` for the RNN)."""
  return ' '.join(f'{_SHORT.get(k, k)}={model[k]:g}'
                  if isinstance(model.get(k), float)
                  else f'{_SHORT.get(k, k)}={model.get(k)}'
                  for k in GRID.get(method, ()) if k in model)


def setup_label(run: Mapping[str, Any]) -> str:
  """What every method of one comparison shares, e.g. ``'extrapolation, 16
  elements (train 1-8), random, gru 64, 50000 updates'``."""
  model = run.get('model', {})
  rows = run.get('by_count', [])
  train = [r['count'] for r in rows if r['split'] in ('train', 'both')]
  span = f' (train {min(train)}-{max(train)})' if (
      train and run.get('setting') == 'extrapolation') else ''
  return (f'{run["setting"]}, {run.get("bits")} elements{span}, '
          f'{run.get("layout", "random")}, {model.get("cell", "gru")} '
          f'{model.get("hidden_size", "")}, {run.get("updates")} updates')


def parity_rows(runs: Sequence[Mapping[str, Any]]) -> list[dict]:
  """One row per parity run (runs of the adding task are left out).

  ``setup`` (:func:`setup_label`) and ``grid`` (:func:`grid_label`) group
  the runs; ``training_range_accuracy`` is the held-out accuracy on the
  training range (the per-count mean for runs that lack it), ``accuracy``
  the test range's; ``steps`` the steps per input at inference,
  ``multiplications`` per input, and PonderNet's ``sample_accuracy`` and
  ``last_step_mass`` (None for the others); ``train_state`` and
  ``test_state`` (:func:`solved` on ``eval_vectors`` held-out vectors);
  ``train_steps`` (steps per input in training), ``train_cap`` and
  ``eval_cap`` (the most steps an input may take in each).
  """
  rows = []
  for run in runs:
    if 'method' not in run:
      continue
    train = run.get('training_range_accuracy')
    if train is None:
      train = _train_accuracy(run.get('by_count', []))
    vectors = run.get('eval_vectors', EVAL_VECTORS)
    rows.append({
        'run': run['run'], 'setup': setup_label(run),
        'setting': run['setting'], 'bits': run.get('bits'),
        'method': run['method'],
        'grid': grid_label(run['method'], run.get('model', {})),
        'seed': run.get('seed'), 'training_range_accuracy': train,
        **{k: run.get(k) for k in (
            'accuracy', 'ponder', 'steps', 'capped', 'multiplications',
            'seconds_per_update', 'sample_accuracy', 'last_step_mass')},
        'eval_vectors': vectors,
        'train_state': solved(train, vectors),
        'test_state': solved(run.get('accuracy'), vectors),
        'train_steps': (run.get('train') or {}).get('steps'),
        **_caps(run['method'], run.get('model', {}))})
  return rows


def _caps(method: str, model: Mapping[str, Any]) -> dict:
  """The most steps per input in training and at evaluation: ACT's and
  PonderNet's ``max_steps`` (PonderNet's ``eval_max_steps`` when set),
  Repeat-RNN's fixed rho, the RNN's one step."""
  if method == 'rnn':
    return {'train_cap': 1, 'eval_cap': 1}
  if method == 'repeat':
    return {'train_cap': model.get('rho'), 'eval_cap': model.get('rho')}
  cap = model.get('max_steps')
  return {'train_cap': cap, 'eval_cap': model.get('eval_max_steps') or cap}


def _num(x: float, digits: int, kilo: bool = False) -> str:
  if kilo:
    return f'{x / 1e3:.{digits}g}k'
  text = f'{x:.{digits}g}'
  # 1.4e+02 reads worse than 140; keep exponents for tiny values.
  return f'{x:.0f}' if 'e+' in text else text


def _mean_std(values, scale: float = 1.0) -> str:
  """``mean ± sample std`` of the values that are not None; thousands as
  ``k`` (the spread in the mean's unit)."""
  xs = [float(v) * scale for v in values if v is not None]
  if not xs:
    return '-'
  mean, spread, _ = records.mean_std(xs)
  kilo = abs(mean) >= 1e4
  if not spread:
    return _num(mean, 3, kilo)
  return f'{_num(mean, 3, kilo)} ± {_num(spread, 2, kilo)}'


def parity_table(rows: Sequence[Mapping[str, Any]]) -> str:
  """The two-stage table of one setup's runs, one line per method and grid
  value, over its seeds.

  Stage one: the training range's accuracy and how many seeds solved it,
  are undecided or did not (:func:`solved`; methods in the order rnn, act,
  repeat, pondernet). Stage two, in the extrapolation setting: the test
  range's accuracy over the seeds that solved their training range only;
  with none, "not judged". Then the steps per input at inference, the
  multiplications per input, the seconds per update and, for PonderNet,
  the sampled rule's accuracy and the halting mass the step cap holds.
  """
  groups = _groups_of(rows)
  extrapolation = any(r['setting'] == 'extrapolation' for r in rows)
  header = ['method', 'grid', 'seeds', 'training range',
            f'solved / undecided / not (Wilson, {SOLVED:g})']
  header += ['test range (solved seeds)'] if extrapolation else []
  header += ['steps', 'mults / input', 'ms / update', 'sampled rule',
             'mass at cap']
  lines = []
  for (method, grid), members in groups.items():
    good = _solved_seeds(members)
    line = [method, grid or '-', len(members),
            _mean_std(m['training_range_accuracy'] for m in members),
            solved_counts([m['train_state'] for m in members])]
    if extrapolation:
      line.append(_mean_std(m['accuracy'] for m in good) if good
                  else 'not judged: training range not learned')
    line += [_mean_std(m['steps'] for m in members),
             _mean_std(m['multiplications'] for m in members),
             _mean_std((m['seconds_per_update'] for m in members), 1e3),
             _mean_std(m['sample_accuracy'] for m in members),
             _mean_std(m['last_step_mass'] for m in members)]
    lines.append(line)
  return records.table(header, lines)


def _solved_seeds(members: Sequence[Mapping[str, Any]]) -> list:
  return [m for m in members if m['train_state'] == 'solved']


def _groups_of(rows: Sequence[Mapping[str, Any]]) -> dict[tuple, list]:
  """The rows by method and grid value, methods in :data:`GRID`'s
  order."""
  groups: dict[tuple, list[Mapping[str, Any]]] = {}
  order = {m: i for i, m in enumerate(GRID)}
  for row in sorted(rows, key=lambda r: order.get(r['method'], len(order))):
    groups.setdefault((row['method'], row['grid']), []).append(row)
  return groups


def caps_table(rows: Sequence[Mapping[str, Any]]) -> str:
  """The steps each configuration of one setup may take and takes: the
  cap in training and at evaluation, the mean steps per input in training
  and at evaluation (the test range), and the share of evaluation inputs
  stopped at the cap. The methods' budgets of steps differ; this says by
  how much, from the records."""
  lines = []
  for (method, grid), members in _groups_of(rows).items():
    caps = {(m['train_cap'], m['eval_cap']) for m in members}
    train_cap, eval_cap = (', '.join(str(c[i]) for c in sorted(caps))
                           for i in (0, 1))
    train_steps = ([m['train_steps'] for m in members]
                   if method in ('act', 'pondernet')
                   else [m['train_cap'] for m in members])
    lines.append([method, grid or '-', train_cap, eval_cap,
                  _mean_std(train_steps),
                  _mean_std(m['steps'] for m in members),
                  _mean_std(m['capped'] for m in members)])
  return records.table(
      ['method', 'grid', 'step cap, training', 'step cap, evaluation',
       'steps / input, training', 'steps / input, evaluation',
       'share at the cap, evaluation'], lines)


def adding_rows(runs: Sequence[Mapping[str, Any]]) -> list[dict]:
  """One row per adding-task run (parity runs are left out); ``budget`` is
  None for the models without a Skip gate, ``vc_target`` (VCRNN Eq. 10's
  m-bar) for all but VCGRU."""
  rows = []
  for run in runs:
    if 'model' not in run or 'method' in run:
      continue
    spec = run.get('spec', {})
    valid = run.get('valid', {})
    is_skip = run['model'].startswith('skip_')
    rows.append({
        'run': run['run'], 'model': run['model'],
        'budget': spec.get('budget') if is_skip else None,
        'vc_target': spec.get('vc_target') if run['model'] == 'vcgru' else None,
        'seed': run.get('seed'), 'updates': run.get('updates'),
        'mse': valid.get('mse'),
        'mse_over_baseline': valid.get('mse_over_baseline'),
        'update_fraction': valid.get('update_fraction')})
  return rows


# The table helpers are the records layer's, under their earlier names.
aggregate = records.aggregate
markdown_table = records.markdown_table


def _label(row: Mapping[str, Any]) -> str:
  return row['method'] + (f' {row["grid"]}' if row['grid'] else '')


def by_count_means(runs: Sequence[Mapping[str, Any]], setup: str
                   ) -> dict[str, list[dict]]:
  """Per method and grid value, the per-count rows of one ``setup``'s
  (:func:`setup_label`) parity runs averaged over seeds: the series of
  :func:`vcrnn_jax.papers.family.plots.plot_by_count`."""
  series: dict[str, list[list[Mapping[str, Any]]]] = {}
  for run, row in zip([r for r in runs if 'method' in r], parity_rows(runs)):
    if row['setup'] != setup or not run.get('by_count'):
      continue
    series.setdefault(_label(row), []).append(run['by_count'])
  out = {}
  for label, seeds in series.items():
    out[label] = [
        {'count': rows[0]['count'], 'split': rows[0]['split'],
         **{k: statistics.fmean(r[k] for r in rows)
            for k in ('accuracy', 'ponder', 'steps')}}
        for rows in zip(*seeds)]
  return out


def pareto_points(rows: Sequence[Mapping[str, Any]]) -> list[dict]:
  """Per method and grid value of one setup, the mean multiplications per
  input and accuracies over seeds: the points of
  :func:`vcrnn_jax.papers.family.plots.plot_accuracy_vs_compute`.

  ``accuracy`` is the training range's; ``test_accuracy`` the test range's
  over the seeds that solved the training range (:func:`solved`; None
  with none, or in the interpolation setting, where the two ranges are
  one).
  """
  groups: dict[str, list[Mapping[str, Any]]] = {}
  for row in rows:
    groups.setdefault(_label(row), []).append(row)

  def mean(members, key):
    xs = [m[key] for m in members if m.get(key) is not None]
    return statistics.fmean(xs) if xs else None

  points = []
  for label, members in groups.items():
    solved = _solved_seeds(members)
    extrapolation = members[0]['setting'] == 'extrapolation'
    point = {'label': label, 'method': members[0]['method'],
             'multiplications': mean(members, 'multiplications'),
             'accuracy': mean(members, 'training_range_accuracy'),
             'test_accuracy': (mean(solved, 'accuracy') if extrapolation
                               else None)}
    if point['multiplications'] is not None and point['accuracy'] is not None:
      points.append(point)
  return points


def setup_slug(row: Mapping[str, Any]) -> str:
  """A file-name form of a row's setup, e.g. ``'extrapolation_16_random'``
  plus the cell: ``'extrapolation_16_random_gru64'``."""
  parts = row['setup'].split(', ')
  cell = parts[3].replace(' ', '')
  bits = row['bits']
  return f'{row["setting"]}_{bits}_{parts[2]}_{cell}'


# ----------------------------------------------------------------------------
# From run records (docs/results/records/family/<experiment>/<run>.json).

PAPER = 'family'
_EVAL_FLAG = re.compile(r'--eval_batch_size[= ](\d+)')


def _eval_vectors(record: Mapping[str, Any]) -> int:
  """The held-out vectors of the record's evaluation: its command's
  ``--eval_batch_size``, else the binary's default."""
  found = _EVAL_FLAG.search(record.get('command') or '')
  return int(found.group(1)) if found else EVAL_VECTORS


def runs_from_records(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                      ) -> list[dict]:
  """The ``results.json`` of every family record, as :func:`read_runs`
  gives them (``run``: the record's path; ``group``: its experiment;
  ``eval_vectors``: :func:`_eval_vectors`), in path order."""
  runs = []
  for name in sorted(groups):
    if name.split('/')[0] != PAPER:
      continue
    for record in groups[name]:
      if record.get('results'):
        runs.append({**record['results'], 'run': record['path'],
                     'group': name, 'eval_vectors': _eval_vectors(record)})
  return runs


def _records_of(groups, runs) -> list[Mapping[str, Any]]:
  paths = {r['run'] for r in runs}
  return [r for name, rs in sorted(groups.items()) for r in rs
          if r['path'] in paths]


def status_lines(groups: Mapping[str, Sequence[Mapping[str, Any]]],
                 names: Sequence[str],
                 statuses: Mapping[str, Mapping[str, Any]]) -> str:
  """Whether today's code still computes the records of the experiments
  ``names``: :func:`vcrnn_jax.analysis.verify.status_line` once per
  distinct sentence, after the experiments it describes (a setup's
  experiments usually share one).

  Example (none verified)::

    Verification: interp16_rnn, interp16_act_tau1e-2: Not verified ...
  """
  by_line: dict[str, list[str]] = {}
  for name in names:
    line = verify.status_line(name, groups[name], statuses)
    by_line.setdefault(line, []).append(name.split('/', 1)[-1])
  return '\n\n'.join(f'Verification of {", ".join(n)}: {line}'
                     for line, n in by_line.items()) + '\n'


def _parity_outputs(groups, runs, statuses) -> list[records.Output]:
  """Per setup: the two-stage table, the step caps, the verification
  status, the per-count figure and the accuracy-against-compute figure."""
  out = []
  parity = parity_rows(runs)
  for setup in dict.fromkeys(r['setup'] for r in parity):
    rows = [r for r in parity if r['setup'] == setup]
    slug = setup_slug(rows[0])
    paths = {r['run'] for r in rows}
    mine = [run for run in runs if run['run'] in paths]
    names = list(dict.fromkeys(run['group'] for run in mine))
    vectors = sorted({r['eval_vectors'] for r in rows})
    text = (f'Setup: {setup}; {", ".join(map(str, vectors))} held-out '
            'vectors per range and seed.\n\n' + parity_table(rows) + '\n'
            + records.provenance(_records_of(groups, mine)) + '\n\n'
            + 'Steps per input, as the records show them (the caps '
            'differ between methods):\n\n' + caps_table(rows) + '\n'
            + status_lines(groups, names, statuses))
    out.append(records.Output(f'family/parity_{slug}.md', text))
    series = by_count_means(runs, setup)
    if series:
      out.append(records.Output(
          f'family/by_count_{slug}.svg', data=series,
          draw=lambda p, s=series, t=setup: family_plots.plot_by_count(
              s, p, title=f'Parity, {t}: mean over seeds')))
    points = pareto_points(rows)
    if points:
      out.append(records.Output(
          f'family/compute_{slug}.svg', data=points,
          draw=lambda p, d=points, t=setup:
          family_plots.plot_accuracy_vs_compute(d, p,
                                                title=f'Parity, {t}')))
  return out


def _adding_outputs(groups, runs, statuses) -> list[records.Output]:
  """The adding task's table, verification status and figure."""
  adding = adding_rows(runs)
  if not adding:
    return []
  mine = [run for run in runs if 'method' not in run]
  names = list(dict.fromkeys(run['group'] for run in mine))
  text = (markdown_table(aggregate(adding, ADDING_KEYS, ADDING_VALUES),
                         ADDING_KEYS + ADDING_VALUES)
          + '\n' + records.provenance(_records_of(groups, mine)) + '\n\n'
          + status_lines(groups, names, statuses))
  data = [{k: r[k] for k in ('model', 'budget', 'vc_target', 'mse',
                             'update_fraction')} for r in adding]
  return [records.Output('family/adding.md', text),
          records.Output('family/error_vs_updates.svg', data=data,
                         draw=lambda p: family_plots.plot_error_vs_updates(
                             data, p))]


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            statuses: Mapping[str, Mapping[str, Any]] | None = None
            ) -> list[records.Output]:
  """The family page's generated files: the conclusions
  (``family/conclusions.md``, :func:`conclusions`); per parity setup
  (:func:`setup_slug`) the two-stage table with the step caps and the
  verification status (``family/parity_<slug>.md``), the per-count figure
  (``family/by_count_<slug>.svg``) and accuracy against compute
  (``family/compute_<slug>.svg``); the adding task's table and figure when
  it has records. ``statuses``: experiment -> its verification (None:
  none).
  """
  statuses = statuses or {}
  runs = runs_from_records(groups)
  out = [records.Output('family/conclusions.md', conclusions(groups))]
  return (out + _parity_outputs(groups, runs, statuses)
          + _adding_outputs(groups, runs, statuses))


# ----------------------------------------------------------------------------
# Conclusions: each claim with its source, the records' numbers and a
# verdict from vcrnn_jax.analysis.verdicts.

# Where each claim comes from: the papers' sections and figures (the notes
# on them: shared/papers/family.md, act_graves2016.md), or this page, whose
# earlier text typed them from the same records.
SOURCES = {
    'page': 'this page (earlier text)',
    'act_parity': 'Graves 2016, Sec. 3.1, Fig. 4',
    'act_ponder': 'Graves 2016, Sec. 3.1, Fig. 6',
    'pondernet_parity': 'Banino et al. 2021, Sec. 3.1',
    'pondernet_steps': 'Banino et al. 2021, Fig. 3 (as this page cited it)',
    'pondernet_sampling': 'Banino et al. 2021, inference by sampling (P5)',
    'repeat': 'Fojo et al. 2018, parity',
    'skip_adding': 'Campos et al. 2018, Sec. 4.1',
}
# The adding task is "solved" when the MSE is below this share of the mean
# predictor's (1/6): 95% of the target's variance explained, parity's 0.95
# in the adding task's unit. The notes on Skip-RNN give no threshold.
ADDING_SOLVED = 0.05
# ACT's own binary (docs/results/records/act/parity): the step at which an
# earlier version of this page said one run passed 95% accuracy.
ACT_BINARY_STEP = 90_000
CONCLUSION_HEADER = ('claim', 'source', 'here', 'verdict', 'criterion')


class Claim(NamedTuple):
  """One row of the conclusions: ``here`` are numbers the verdict's own
  evidence does not show ('' for none)."""
  claim: str
  source: str
  here: str
  verdict: verdicts.Verdict

  def cells(self) -> list[str]:
    label, evidence, criterion = self.verdict.cells()
    here = f'{self.here}; {evidence}' if self.here else evidence
    return [self.claim, self.source, here, label, criterion]


def _g(x: float) -> str:
  return f'{x:.3g}'


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
                _eval_vectors(record))


def _wilson_end(record: Mapping, key: str, low: bool) -> float | None:
  accuracy = records.value(record, f'results.{key}')
  if accuracy is None:
    return None
  vectors = _eval_vectors(record)
  ends = verdicts.wilson_interval(round(accuracy * vectors), vectors)
  return ends[0] if low else ends[1]


def _solved_claim(groups, names: Sequence[str], claim: str, source: str, *,
                  key: str = 'training_range_accuracy', want: bool = True,
                  only_solved: bool = False) -> Claim:
  """Whether every seed of ``names`` solved (``want``) or failed to solve
  the range ``key`` scores, seed by seed (:func:`solved`).
  ``only_solved``: only the seeds that solved their training range (stage
  two)."""
  ends, parts = [], []
  for name in names:
    members = [r for r in _records(groups, name) if not only_solved
               or _state(r, 'training_range_accuracy') == 'solved']
    states = [_state(r, key) for r in members]
    parts.append(f'{name}: {solved_counts(states)}')
    for r in members:
      end = _wilson_end(r, key, low=want)
      ends.append(None if end is None else end if want else SOLVED - end)
  what = ('solved on every seed: the lower end of the Wilson 95% interval '
          'of its accuracy on the held-out vectors is above '
          f'{SOLVED:g} (evidence: those lower ends)' if want else
          f'not solved on any seed: {SOLVED:g} less the upper end of the '
          'Wilson 95% interval of its accuracy on the held-out vectors is '
          'above 0 (evidence: those margins)')
  here = ('seeds solved / undecided / not: ' + ', '.join(parts)
          + (' (seeds that solved their training range)' if only_solved
             else ''))
  return Claim(claim, source, here, verdicts.sign_every_seed(
      ends, claim=what, fmt=_g, minimum=SOLVED if want else 0.0))


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
  return Claim(claim, source, f'{name}, steps per element',
               verdicts.sign_every_seed(
                   slopes, fmt=_g, claim='steps per input rise with the '
                   'number of non-zero elements (least-squares slope over '
                   'the per-count report above 0)'))


def _means_text(groups, names: Sequence[str], get) -> str:
  """``name mean (95% CI; n)`` per experiment."""
  parts = []
  for name in names:
    xs = list(_by_seed(groups, name, get).values())
    parts.append(f'{name} ' + (verdicts.mean_interval_text(xs, _g) if xs
                               else 'no records'))
  return '; '.join(parts)


def _paired_claim(groups, a: str, b: str, get, claim: str, source: str, *,
                  lower_is_better: bool, what: str, only_solved=False,
                  note: str = '') -> Claim:
  """``a`` better than ``b`` on ``get``, over the seeds both share (and,
  with ``only_solved``, both solved their training range on)."""
  def keep(record):
    return (not only_solved or _state(record, 'training_range_accuracy')
            == 'solved')
  def kept(record):
    return get(record) if keep(record) else None
  xa, xb = (_by_seed(groups, n, kept) for n in (a, b))
  seeds = sorted(set(xa) & set(xb), key=str)
  verdict = verdicts.paired([xa[s] for s in seeds], [xb[s] for s in seeds],
                            claim=f'{a} {what} than {b}', fmt=_g,
                            lower_is_better=lower_is_better)
  here = _means_text(groups, (a, b), kept)
  return Claim(claim, source, here + (f'; {note}' if note else ''), verdict)


def _cap_note(groups, names: Sequence[str]) -> str:
  """The evaluation step caps of ``names``, from their records."""
  caps = []
  for name in names:
    rows = parity_rows(runs_from_records(
        {f'{PAPER}/{name}': _records(groups, name)}))
    caps.append(f'{name} may take up to '
                + ', '.join(sorted({str(r['eval_cap']) for r in rows}))
                + ' steps at evaluation')
  return ('the caps differ: ' + '; '.join(caps)) if caps else ''


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
                   '(interpolation)', src['pondernet_steps']),
      _slope_claim(groups, rev, 'PonderNet\'s halting steps grow with '
                   'difficulty: reverse KL, eps stop off (interpolation)',
                   src['pondernet_steps']),
      _paired_claim(groups, 'interp16_repeat_rho2', act, _accuracy,
                    'Repeat-RNN with a small rho matches ACT\'s accuracy '
                    '(tested as: more accurate)', src['repeat'],
                    lower_is_better=False, what='more accurate'),
      _paired_claim(groups, 'interp16_repeat_rho2', act, mults,
                    'Repeat-RNN (rho 2) needs fewer multiplications per '
                    'input than ACT (tau 1e-3)', src['page'],
                    lower_is_better=True, what='fewer multiplications'),
      _paired_claim(groups, 'interp16_repeat_rho2', pn, mults,
                    'Repeat-RNN (rho 2) needs fewer multiplications per '
                    'input than PonderNet (paper\'s KL)', src['page'],
                    lower_is_better=True, what='fewer multiplications'),
      *(_sampled_claim(groups, name) for name in (pn, rev)),
  ]


def _sampled_claim(groups, name: str) -> Claim:
  """PonderNet's sampled halting rule against its median rule."""
  median = _by_seed(groups, name, _accuracy)
  sample = _by_seed(groups, name, _result('sample_accuracy'))
  seeds = sorted(set(median) & set(sample), key=str)
  verdict = verdicts.paired(
      [sample[s] for s in seeds], [median[s] for s in seeds], fmt=_g,
      claim='the sampled rule more accurate than the median rule',
      lower_is_better=False)
  here = (f'{name}: sampled '
          + (verdicts.mean_interval_text([sample[s] for s in seeds], _g)
             if seeds else 'no records') + ', median '
          + (verdicts.mean_interval_text([median[s] for s in seeds], _g)
             if seeds else 'no records'))
  return Claim('PonderNet\'s sampled halting rule is as accurate as the '
               'median rule (tested as: more accurate)',
               SOURCES['pondernet_sampling'], here, verdict)


def _confounded_claim(groups) -> Claim:
  """The page's "the KL direction sets the slope": the two variants differ
  in the KL direction and in the eps stop, so no verdict."""
  parts = []
  for setup in ('interp16', 'extrap16'):
    paper = _by_seed(groups, f'{setup}_pondernet_paper', _slope)
    reverse = _by_seed(groups, f'{setup}_pondernet_reverse', _slope)
    seeds = sorted(set(paper) & set(reverse), key=str)
    gaps = [reverse[s] - paper[s] for s in seeds]
    parts.append(f'{setup}: reverse less paper slope, paired by seed, '
                 + (verdicts.mean_interval_text(gaps, _g) if gaps
                    else 'no records'))
  return Claim(
      'The KL direction, not the method, sets the slope of PonderNet\'s '
      'halting steps', SOURCES['page'], '; '.join(parts),
      verdicts.not_recorded(
          'two factors changed at once: the reverse-KL runs also turn the '
          'eps stop off (--ponder_epsilon=0), so either may set the slope; '
          'a verdict needs the one-factor runs (reverse KL with the eps '
          'stop, the paper\'s KL without it)'))


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
                    only_solved=True),
      _solved_claim(groups, (act,), 'ACT does not extrapolate: it does not '
                    'solve the test range (here 9-16 of 16)',
                    src['pondernet_parity'], key='accuracy', want=False,
                    only_solved=True),
      _paired_claim(groups, pn, act, test, 'PonderNet extrapolates better '
                    'than ACT (test-range accuracy, seeds that solved the '
                    'training range)', src['pondernet_parity'],
                    lower_is_better=False, what='more accurate on the test '
                    'range', only_solved=True,
                    note=_cap_note(groups, (pn, act))),
      _slope_claim(groups, pn, 'PonderNet\'s halting steps grow with '
                   'difficulty: the paper\'s KL (extrapolation, counts '
                   '1-16)', src['pondernet_steps']),
      _slope_claim(groups, 'extrap16_pondernet_reverse', 'PonderNet\'s '
                   'halting steps grow with difficulty: reverse KL, eps '
                   'stop off (extrapolation, counts 1-16)',
                   src['pondernet_steps']),
      _confounded_claim(groups),
  ]


def _act_setting_claims(groups) -> list[Claim]:
  """ACT's own setting: Elman 128, prefix layout, M = 100."""
  src = SOURCES
  ranking = [(name, list(_by_seed(groups, name, _accuracy).values()))
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
      Claim('Repeat-RNN (rho 3) is the most accurate method in ACT\'s '
            'setting at 64 elements, then PonderNet, ACT, the RNN',
            f'{src["page"]}; {src["repeat"]}', '',
            verdicts.order(ranking, what='training-range accuracy', fmt=_g,
                           lower_is_better=False)),
      _act_binary_claim(groups),
  ]


def _act_binary_claim(groups) -> Claim:
  """The claim an earlier version of this page typed from one run: ACT's
  own binary below 5% error at :data:`ACT_BINARY_STEP`."""
  errors = [point.get('sequence_error')
            for record in groups.get('act/parity', ())
            for point in record.get('curve') or ()
            if point.get('step') == ACT_BINARY_STEP]
  below = sum(e is not None and e < 1 - SOLVED for e in errors)
  return Claim(
      f'ACT\'s own binary (experiments.act_parity --tau=0.01) passes '
      f'{SOLVED:.0%} accuracy at {ACT_BINARY_STEP:,} steps',
      'this page (earlier text, one run); records act/parity',
      f'{below} of {len(errors)} seeds below {1 - SOLVED:.0%} sequence '
      'error', verdicts.below(errors, 1 - SOLVED, fmt=verdicts.pct,
                              what=f'sequence error at step '
                              f'{ACT_BINARY_STEP:,}'))


def _adding_claims(groups) -> list[Claim]:
  """The adding task, 1,000 updates."""
  ratio = _result('valid.mse_over_baseline')
  fraction = _result('valid.update_fraction')
  out = []
  for name in ('adding_lstm', 'adding_gru', 'adding_skip_lstm',
               'adding_skip_gru'):
    out.append(Claim(
        f'{name}: at (nearly) full computation it solves the adding task '
        'in 1,000 updates', SOURCES['page'],
        'update fraction ' + _means_text(groups, (name,), fraction),
        verdicts.below(list(_by_seed(groups, name, ratio).values()),
                       ADDING_SOLVED, fmt=_g, what='MSE over the mean '
                       'predictor\'s')))
  skip = 'adding_skip_lstm_budget1e-2'
  out += [
      _paired_claim(groups, 'adding_lstm', 'adding_skip_lstm_budget1e-3',
                    ratio, 'Skipping costs accuracy at this budget of '
                    'updates: LSTM below Skip-LSTM (lambda 1e-3) in MSE',
                    SOURCES['page'], lower_is_better=True,
                    what='lower MSE over the mean predictor\'s'),
      Claim('Skip-LSTM solves the adding task with most updates skipped '
            '(here lambda 1e-2, 1,000 updates; the paper trains to '
            'convergence)', SOURCES['skip_adding'],
            'update fraction ' + _means_text(groups, (skip,), fraction),
            verdicts.below(list(_by_seed(groups, skip, ratio).values()),
                           ADDING_SOLVED, fmt=_g, what='MSE over the mean '
                           'predictor\'s')),
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


def conclusion_claims(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                      ) -> list[Claim]:
  """Every claim the family page makes, and every claim of the methods'
  papers it tests, with its verdict from the records."""
  return (_interpolation_claims(groups) + _extrapolation_claims(groups)
          + _act_setting_claims(groups) + _adding_claims(groups)
          + _not_run_claims())


def conclusions(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
  """The conclusions table (``family/conclusions.md``): claim, source,
  the records' numbers, verdict and criterion per row."""
  return records.table(CONCLUSION_HEADER,
                       [c.cells() for c in conclusion_claims(groups)])
