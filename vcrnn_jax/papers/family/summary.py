"""The family comparisons' runs, collected into one table and one figure.

Each run of ``experiments/family_parity`` or ``experiments/family_adding``
writes a ``results.json``; :func:`read_runs` finds them under a directory,
:func:`parity_rows` and :func:`adding_rows` flatten them into one row per
run, :func:`aggregate` takes the mean and spread over seeds, and
:func:`markdown_table` formats the result for the docs. The adding task's
figure is :func:`vcrnn_jax.papers.family.plots.plot_error_vs_updates`.

Example::

  runs = summary.read_runs('runs/family_adding')
  rows = summary.aggregate(summary.adding_rows(runs),
                           summary.ADDING_KEYS, summary.ADDING_VALUES)
  print(summary.markdown_table(rows, summary.ADDING_KEYS
                               + summary.ADDING_VALUES))
"""

from collections.abc import Mapping, Sequence
import json
import math
import pathlib
import statistics
from typing import Any

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


def aggregate(rows: Sequence[Mapping[str, Any]], keys: Sequence[str],
              values: Sequence[str]) -> list[dict]:
  """Rows grouped by ``keys``: per value its mean over the group
  (``<value>``), the sample standard deviation (``<value>_std``, None for
  one run) and the group's size (``runs``), in first-seen order."""
  groups: dict[tuple, list[Mapping[str, Any]]] = {}
  for row in rows:
    groups.setdefault(tuple(row[k] for k in keys), []).append(row)
  out = []
  for key, members in groups.items():
    row = dict(zip(keys, key), runs=len(members))
    for v in values:
      xs = [m[v] for m in members if m.get(v) is not None]
      row[v] = statistics.fmean(xs) if xs else None
      row[f'{v}_std'] = statistics.stdev(xs) if len(xs) > 1 else None
    out.append(row)
  return out


def _cell(value: Any, measured: bool, spread: Any = None) -> str:
  if value is None:
    return '-'
  if not isinstance(value, float):
    return str(value)
  if not measured:        # a setting (a budget, a bit count): as given
    return f'{value:g}'
  text = f'{value:.2e}' if abs(value) < 1e-2 or abs(value) >= 1e3 else (
      f'{value:.3f}')
  if spread is not None and math.isfinite(spread):
    text += f' ± {spread:.2g}'
  return text


def markdown_table(rows: Sequence[Mapping[str, Any]],
                   columns: Sequence[str]) -> str:
  """A Markdown table of ``columns``; a column with a ``<name>_std`` in the
  rows is a measurement, written ``mean ± std`` to three figures, the others
  as given; a ``runs`` column is added when the rows have one."""
  if rows and 'runs' in rows[0] and 'runs' not in columns:
    columns = [*columns, 'runs']
  lines = ['| ' + ' | '.join(columns) + ' |',
           '|' + ' --- |' * len(columns)]
  for row in rows:
    lines.append('| ' + ' | '.join(
        _cell(row.get(c), f'{c}_std' in row, row.get(f'{c}_std'))
        for c in columns) + ' |')
  return '\n'.join(lines) + '\n'


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
