"""Plots of the family's comparisons.

:func:`plot_by_count` draws the rows of
:func:`vcrnn_jax.papers.family.parity.evaluate_by_count` of one or more runs:
steps and accuracy against the number of non-zero elements, with the test
range shaded (PonderNet Sec. 3.1, Fig. 3); :func:`plot_accuracy_vs_compute`
draws each method's accuracy against its multiplications per input.
:func:`plot_error_vs_updates`
draws the adding task's runs: held-out MSE against the fraction of the state
updated (Skip-RNN Sec. 4.1).

Example::

  rows = json.load(open('runs/.../results.json'))['by_count']
  plots.plot_by_count({'pondernet': rows}, 'ponder_by_count.png')
"""

from collections.abc import Mapping, Sequence
import pathlib
from typing import Any

from experiments.reports import plots

__all__ = [
    'BY_COUNT_PNG',
    'ERROR_VS_UPDATES_PNG',
    'plot_by_count',
    'plot_accuracy_vs_compute',
    'plot_error_vs_updates',
]

BY_COUNT_PNG = 'ponder_by_count.png'
ERROR_VS_UPDATES_PNG = 'error_vs_updates.png'


def plot_by_count(series: Mapping[str, Sequence[Mapping[str, Any]]], path, *,
                  title: str | None = None) -> pathlib.Path:
  """Steps and accuracy against the number of non-zero elements.

  Args:
    series: label -> per-count rows (``count``, ``split``, ``steps``,
      ``accuracy``), one line per label.
    path: the PNG to write.
    title: the figure title.

  Returns:
    ``path``.

  Raises:
    ValueError: ``series`` is empty or holds no rows.
  """
  if not series or not any(series.values()):
    raise ValueError('plot_by_count: no rows to plot.')
  fig = plots.new_figure((11.0, 4.2 + 0.2 * ((len(series) + 2) // 3)))
  axes = fig.subplots(1, 2)
  for label, rows in series.items():
    counts = [r['count'] for r in rows]
    for ax, key in zip(axes, ('steps', 'accuracy')):
      ax.plot(counts, [r[key] for r in rows], '-', label=label,
              marker='o' if len(counts) <= 20 else None, markersize=3)
  rows = next(r for r in series.values() if r)
  tested = [r['count'] for r in rows if r['split'] == 'test']
  trained = [r['count'] for r in rows if r['split'] in ('train', 'both')]
  for ax in axes:
    if tested:
      ax.axvspan(min(tested) - 0.5, max(tested) + 0.5, color='grey',
                 alpha=0.12, label=None)
    if trained and tested:
      ax.axvline(max(trained) + 0.5, color='grey', lw=0.8, ls='--')
  where = ('shaded: test range; dashed: end of the training range'
           if tested else 'trained and tested on every count')
  axes[0].set_ylabel('ponder steps at inference (mean)')
  axes[0].set_title(f'Steps ({where})', fontsize=9)
  axes[1].set_ylabel('accuracy')
  axes[1].set_title('Accuracy')
  axes[1].set_ylim(-0.02, 1.02)
  for ax in axes:
    ax.set_xlabel('number of non-zero elements')
    ax.grid(alpha=0.3)
  # Below the panels: the grid labels are long and the lines fill the axes.
  fig.legend(*axes[0].get_legend_handles_labels(),
             loc='outside lower center', ncol=3, fontsize=7, frameon=False)
  fig.suptitle(title or 'Parity: steps and accuracy per number of non-zero '
               'elements')
  return plots.save(fig, path)


_MARKERS = {'rnn': 's', 'act': 'o', 'repeat': '^', 'pondernet': 'D'}


def plot_accuracy_vs_compute(points: Sequence[Mapping[str, Any]], path, *,
                             title: str | None = None) -> pathlib.Path:
  """Accuracy against multiplications per input, one point per method and
  grid value (a Pareto plot: up and to the left is better).

  Args:
    points: :func:`experiments.reports.family.summary.pareto_points`
      (``label``, ``method``, ``multiplications``, ``accuracy`` on the
      training range, ``test_accuracy`` or None); test-range points are
      drawn hollow beside the filled training-range ones.
    path: the PNG or SVG to write.
    title: the figure title.

  Returns:
    ``path``.

  Raises:
    ValueError: ``points`` is empty.
  """
  if not points:
    raise ValueError('plot_accuracy_vs_compute: no points to plot.')
  fig = plots.new_figure((7.0, 4.8))
  ax = fig.subplots()
  for i, p in enumerate(points):
    color = f'C{i % 10}'
    marker = _MARKERS.get(p['method'], 'o')
    ax.plot(p['multiplications'], p['accuracy'], marker, color=color,
            label=p['label'])
    if p.get('test_accuracy') is not None:
      ax.plot(p['multiplications'], p['test_accuracy'], marker, color=color,
              markerfacecolor='none')
  ax.set_xscale('log')
  ax.set_xlabel('multiplications per input at inference (log)')
  ax.set_ylabel('accuracy (filled: training range; hollow: test range)')
  ax.set_ylim(0.4, 1.02)
  ax.grid(alpha=0.3, which='both')
  ax.legend(fontsize=7, loc='lower right')
  ax.set_title(title or 'Accuracy against compute', fontsize=9)
  return plots.save(fig, path)


def plot_error_vs_updates(rows: Sequence[Mapping[str, Any]], path, *,
                          title: str | None = None) -> pathlib.Path:
  """The adding task's error against computation, one point per run.

  Args:
    rows: :func:`experiments.reports.family.summary.adding_rows` (``model``,
      ``budget``, ``vc_target``, ``mse``, ``update_fraction``); a Skip
      model's points are labelled with their budget, VCGRU's with its
      target.
    path: the PNG to write.
    title: the figure title.

  Returns:
    ``path``.

  Raises:
    ValueError: no row has both an MSE and an update fraction.
  """
  rows = [r for r in rows if r.get('mse') is not None
          and r.get('update_fraction') is not None]
  if not rows:
    raise ValueError('plot_error_vs_updates: no rows to plot.')
  fig = plots.new_figure((6.4, 4.6))
  ax = fig.subplots()
  for model in dict.fromkeys(r['model'] for r in rows):
    mine = [r for r in rows if r['model'] == model]
    ax.plot([r['update_fraction'] for r in mine], [r['mse'] for r in mine],
            'o', label=model, alpha=0.8)
    for r in mine:
      label = next((f'{k} {r[k]:g}' for k in ('budget', 'vc_target')
                    if r.get(k) is not None), None)
      if label:
        ax.annotate(label, (r['update_fraction'], r['mse']),
                    textcoords='offset points', xytext=(4, 3), fontsize=7)
  ax.set_yscale('log')
  ax.set_xlabel('fraction of the state updated (Skip: steps; VC: dimensions)')
  ax.set_ylabel('held-out MSE')
  ax.grid(alpha=0.3, which='both')
  ax.legend(fontsize=8)
  ax.set_title(title or 'Adding task: error against computation')
  return plots.save(fig, path)
