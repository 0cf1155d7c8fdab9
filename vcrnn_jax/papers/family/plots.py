"""Plots of the family's parity comparison (PonderNet Sec. 3.1, Fig. 3).

:func:`plot_by_count` draws the rows of
:func:`vcrnn_jax.papers.family.parity.evaluate_by_count` of one or more runs:
steps and accuracy against the number of non-zero elements, with the test
range shaded.

Example::

  rows = json.load(open('runs/.../results.json'))['by_count']
  plots.plot_by_count({'pondernet': rows}, 'ponder_by_count.png')
"""

from collections.abc import Mapping, Sequence
import pathlib
from typing import Any

from vcrnn_jax.analysis import plots

BY_COUNT_PNG = 'ponder_by_count.png'


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
  fig = plots.new_figure((11.0, 4.2))
  axes = fig.subplots(1, 2)
  for label, rows in series.items():
    counts = [r['count'] for r in rows]
    for ax, key in zip(axes, ('steps', 'accuracy')):
      ax.plot(counts, [r[key] for r in rows], '-', label=label,
              marker='o' if len(counts) <= 20 else None, markersize=3)
  rows = next(r for r in series.values() if r)
  tested = [r['count'] for r in rows if r['split'] in ('test', 'both')]
  if tested:
    for ax in axes:
      ax.axvspan(min(tested) - 0.5, max(tested) + 0.5, color='grey',
                 alpha=0.12, label=None)
  axes[0].set_ylabel('ponder steps at inference (mean)')
  axes[0].set_title('Steps (shaded: test range)')
  axes[1].set_ylabel('accuracy')
  axes[1].set_title('Accuracy')
  axes[1].set_ylim(-0.02, 1.02)
  for ax in axes:
    ax.set_xlabel('number of non-zero elements')
    ax.grid(alpha=0.3)
  axes[0].legend(fontsize=8)
  fig.suptitle(title or 'Parity: steps and accuracy per number of non-zero '
               'elements')
  return plots.save(fig, path)
