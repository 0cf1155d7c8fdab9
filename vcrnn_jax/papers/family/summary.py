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
(``python -m experiments.results``).

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
import statistics
from typing import Any

from vcrnn_jax.analysis import records
from vcrnn_jax.papers.family import plots as family_plots

# The knob that varies within a method's grid (PonderNet Sec. 3.1 grids the
# prior; ACT's paper grids tau; Fojo et al. compare rho).
KNOB = {'rnn': None, 'act': 'tau', 'repeat': 'rho', 'pondernet': 'lambda_p'}
PARITY_KEYS = ('setting', 'bits', 'method', 'knob')
PARITY_VALUES = ('accuracy', 'train_accuracy', 'ponder',
                 'seconds_per_update')
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


def _train_accuracy(by_count: Sequence[Mapping[str, Any]]) -> float | None:
  """Mean accuracy over the counts of the training range."""
  values = [r['accuracy'] for r in by_count
            if r['split'] in ('train', 'both')]
  return statistics.fmean(values) if values else None


def parity_rows(runs: Sequence[Mapping[str, Any]]) -> list[dict]:
  """One row per parity run (runs of the adding task are left out).

  ``knob`` is the value of the method's grid parameter (``KNOB``); the
  accuracy is the held-out one of the test range, ``train_accuracy`` the
  mean over the training range's counts of the final per-count report.
  """
  rows = []
  for run in runs:
    if 'method' not in run:
      continue
    model = run.get('model', {})
    knob = KNOB.get(run['method'])
    rows.append({
        'run': run['run'], 'setting': run['setting'], 'bits': run.get('bits'),
        'method': run['method'],
        'knob': None if knob is None else f'{knob}={model.get(knob)}',
        'seed': run.get('seed'), 'accuracy': run.get('accuracy'),
        'train_accuracy': _train_accuracy(run.get('by_count', [])),
        'ponder': run.get('ponder'),
        'seconds_per_update': run.get('seconds_per_update')})
  return rows


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


def by_count_means(runs: Sequence[Mapping[str, Any]], setting: str
                   ) -> dict[str, list[dict]]:
  """Per ``method`` (and grid value), the per-count rows of the ``setting``'s
  parity runs averaged over seeds: the series of
  :func:`vcrnn_jax.papers.family.plots.plot_by_count`."""
  series: dict[str, list[list[Mapping[str, Any]]]] = {}
  for run, row in zip([r for r in runs if 'method' in r], parity_rows(runs)):
    if row['setting'] != setting or not run.get('by_count'):
      continue
    label = row['method'] + (f' {row["knob"]}' if row['knob'] else '')
    series.setdefault(label, []).append(run['by_count'])
  out = {}
  for label, seeds in series.items():
    out[label] = [
        {'count': rows[0]['count'], 'split': rows[0]['split'],
         **{k: statistics.fmean(r[k] for r in rows)
            for k in ('accuracy', 'ponder', 'steps')}}
        for rows in zip(*seeds)]
  return out


# ----------------------------------------------------------------------------
# From run records (docs/results/records/family/<experiment>/<run>.json).

PAPER = 'family'


def runs_from_records(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                      ) -> list[dict]:
  """The ``results.json`` of every family record, as :func:`read_runs`
  gives them (``run``: the record's path), in path order."""
  runs = []
  for name in sorted(groups):
    if name.split('/')[0] != PAPER:
      continue
    for record in groups[name]:
      if record.get('results'):
        runs.append({**record['results'], 'run': record['path']})
  return runs


def _records_of(groups, runs) -> list[Mapping[str, Any]]:
  paths = {r['run'] for r in runs}
  return [r for name, rs in sorted(groups.items()) for r in rs
          if r['path'] in paths]


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]]
            ) -> list[records.Output]:
  """The family page's generated files: per setting, the parity table
  (``family/parity_<setting>.md``, mean ± std over seeds) and the per-count
  figure (``family/by_count_<setting>.svg``); the adding task's table and
  figure when it has records."""
  runs = runs_from_records(groups)
  out = []
  parity = parity_rows(runs)
  for setting in dict.fromkeys(r['setting'] for r in parity):
    rows = [r for r in parity if r['setting'] == setting]
    mine = [run for run in runs if run.get('setting') == setting]
    text = (markdown_table(aggregate(rows, PARITY_KEYS, PARITY_VALUES),
                           PARITY_KEYS + PARITY_VALUES)
            + '\n' + records.provenance(_records_of(groups, mine)) + '\n')
    out.append(records.Output(f'family/parity_{setting}.md', text))
    series = by_count_means(runs, setting)
    if series:
      out.append(records.Output(
          f'family/by_count_{setting}.svg', data=series,
          draw=lambda p, s=series, t=setting: family_plots.plot_by_count(
              s, p, title=f'Parity, {t}: mean over seeds')))
  adding = adding_rows(runs)
  if adding:
    mine = [run for run in runs if 'method' not in run]
    text = (markdown_table(aggregate(adding, ADDING_KEYS, ADDING_VALUES),
                           ADDING_KEYS + ADDING_VALUES)
            + '\n' + records.provenance(_records_of(groups, mine)) + '\n')
    data = [{k: r[k] for k in ('model', 'budget', 'vc_target', 'mse',
                               'update_fraction')} for r in adding]
    out += [records.Output('family/adding.md', text),
            records.Output('family/error_vs_updates.svg', data=data,
                           draw=lambda p: family_plots.plot_error_vs_updates(
                               data, p))]
  return out
