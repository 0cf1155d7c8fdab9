"""The family comparisons' runs, collected into one table and one figure.

Each run of ``experiments/family_parity`` or ``experiments/family_adding``
writes a ``results.json``; :func:`read_runs` finds them under a directory,
:func:`parity_rows` and :func:`adding_rows` flatten them into one row per
run, :func:`aggregate` takes the mean and spread over seeds, and
:func:`markdown_table` formats the result for the docs. The adding task's
figure is :func:`experiments.reports.family.plots.plot_error_vs_updates`.

The same rows come from run records (:mod:`experiments.reports.records`):
:func:`runs_from_records` reads the ``results.json`` each record carries,
and :func:`outputs` gives the results page's generated tables and figures
(``python -m experiments.results``), each table followed by its step caps
and verification status, and :func:`conclusions`: every claim the page
makes or tests, with a verdict from :mod:`experiments.reports.verdicts`
(a seed solves a range by :func:`solved`'s Wilson rule).

Example::

  runs = summary.read_runs('runs/family_adding')
  rows = summary.aggregate(summary.adding_rows(runs),
                           summary.ADDING_KEYS, summary.ADDING_VALUES)
  print(summary.markdown_table(rows, summary.ADDING_KEYS
                               + summary.ADDING_VALUES))
"""

from collections.abc import Mapping, Sequence
import json
import pathlib
import re
import statistics
from typing import Any

from experiments.reports import records, verdicts, verify
from experiments.reports.family import plots as family_plots

__all__ = [
    'SOLVED',
    'EVAL_VECTORS',
    'SOLVED_STATES',
    'GRID',
    'PARITY_KEYS',
    'PARITY_VALUES',
    'ADDING_KEYS',
    'ADDING_VALUES',
    'read_runs',
    'solved',
    'solved_counts',
    'grid_label',
    'setup_label',
    'parity_rows',
    'compute_budget',
    'equal_compute',
    'parity_table',
    'caps_table',
    'adding_rows',
    'by_count_means',
    'pareto_points',
    'setup_slug',
    'PAPER',
    'eval_vectors',
    'runs_from_records',
    'status_lines',
    'parity_outputs',
    'adding_outputs',
]

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
  ``eval_cap`` (the most steps an input may take in each); ``updates`` and
  ``curve`` (the record's evaluations, for :func:`equal_compute`).
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
        'updates': run.get('updates'), 'curve': run.get('curve') or [],
        **_caps(run['method'], run.get('model', {}))})
  return rows


def _steps_per_update(row: Mapping[str, Any]) -> float | None:
  """Steps per training input: the RNN's one, Repeat-RNN's rho, what ACT
  and PonderNet took in training (their last interval's mean)."""
  if row['method'] in ('act', 'pondernet'):
    return row.get('train_steps')
  return row.get('train_cap')


def compute_budget(rows: Sequence[Mapping[str, Any]]) -> float | None:
  """The smallest training compute, in steps per input times updates,
  that any configuration of an adaptive method spent in one setup (the
  mean over its seeds): every method is compared at this budget too."""
  totals = []
  for (method, _), members in _groups_of(rows).items():
    costs = [_steps_per_update(m) * m['updates'] for m in members
             if method != 'rnn' and _steps_per_update(m) and m['updates']]
    if costs:
      totals.append(statistics.fmean(costs))
  return min(totals) if totals else None


def equal_compute(row: Mapping[str, Any], budget: float) -> float | None:
  """The training-range accuracy at the last evaluation whose compute
  (step times the run's steps per training input, taken as constant) is
  within ``budget``; None when the first evaluation is past it."""
  cost = _steps_per_update(row)
  if not cost:
    return None
  within = [p for p in row['curve'] if p['step'] * cost <= budget
            and p.get('training_range_accuracy') is not None]
  return within[-1]['training_range_accuracy'] if within else None


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
  Beside the training range, its accuracy at equal compute
  (:func:`equal_compute` at :func:`compute_budget`).
  """
  groups = _groups_of(rows)
  extrapolation = any(r['setting'] == 'extrapolation' for r in rows)
  budget = compute_budget(rows)
  header = ['method', 'grid', 'seeds', 'training range',
            f'solved / undecided / not (Wilson, {SOLVED:g})']
  if budget:
    header.append(f'training range at equal compute ({budget / 1e3:.0f}k '
                  'updates x steps per input)')
  header += ['test range (solved seeds)'] if extrapolation else []
  header += ['steps', 'mults / input', 'ms / update', 'sampled rule',
             'mass at cap']
  lines = []
  for (method, grid), members in groups.items():
    good = _solved_seeds(members)
    line = [method, grid or '-', len(members),
            _mean_std(m['training_range_accuracy'] for m in members),
            solved_counts([m['train_state'] for m in members])]
    if budget:
      line.append(_mean_std(equal_compute(m, budget) for m in members))
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
  :func:`experiments.reports.family.plots.plot_by_count`."""
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
  :func:`experiments.reports.family.plots.plot_accuracy_vs_compute`.

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


def eval_vectors(record: Mapping[str, Any]) -> int:
  """The held-out vectors of the record's evaluation: its command's
  ``--eval_batch_size``, else the binary's default."""
  found = _EVAL_FLAG.search(record.get('command') or '')
  return int(found.group(1)) if found else EVAL_VECTORS


def runs_from_records(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                      ) -> list[dict]:
  """The ``results.json`` of every family record, as :func:`read_runs`
  gives them (``run``: the record's path; ``group``: its experiment;
  ``eval_vectors``: :func:`eval_vectors`), in path order."""
  runs = []
  for name in sorted(groups):
    if name.split('/')[0] != PAPER:
      continue
    for record in groups[name]:
      if record.get('results'):
        runs.append({**record['results'], 'run': record['path'],
                     'group': name, 'eval_vectors': eval_vectors(record),
                     'curve': record.get('curve') or []})
  return runs


def _records_of(groups, runs) -> list[Mapping[str, Any]]:
  paths = {r['run'] for r in runs}
  return [r for name, rs in sorted(groups.items()) for r in rs
          if r['path'] in paths]


def status_lines(groups: Mapping[str, Sequence[Mapping[str, Any]]],
                 names: Sequence[str],
                 statuses: Mapping[str, Mapping[str, Any]]) -> str:
  """Whether today's code still computes the records of the experiments
  ``names``: :func:`experiments.reports.verify.status_line` once per
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


def parity_outputs(groups, runs, statuses) -> list[records.Output]:
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


def adding_outputs(groups, runs, statuses) -> list[records.Output]:
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
