"""The EI-REHN paper's figures: where the elastic depth goes.

* :func:`plot_depth_along_sequence`: the realized depth R_t along one
  sequence, a line per layer (equal layers drawn apart);
* :func:`plot_depth_histograms`: the distribution of R_t per group (words,
  activities), a panel per layer;
* :func:`plot_depth_by_class`: R_t per activity of UCI HAR (Table 2's
  models).
"""

from collections.abc import Mapping, Sequence
import pathlib
from typing import Any

import numpy as np

from experiments.reports import plots
from experiments.reports.plots import (
  check_layers,
  label_stride,
  layer_offsets,
  symbol_labels,
)

__all__ = [
    'plot_depth_along_sequence',
    'plot_depth_histograms',
    'plot_depth_by_class',
]


def plot_depth_along_sequence(depths: Mapping[str, Sequence[float]], path, *,
                              title: str, ylabel: str = 'realized depth R_t',
                              labels: Sequence[str] | None = None
                              ) -> pathlib.Path:
  """A per-step value along one sequence, one line per layer (EI-REHN R_t).

  Args:
    depths: layer name -> ``[T]`` values (e.g. ``{'depth_0': ..., 'depth_1':
      ...}``).
    path: the PNG to write.
    title: the figure title.
    ylabel: the y axis label.
    labels: optional ``[T]`` tick labels (the input symbols).
  """
  depths = check_layers(depths, 'plot_depth_along_sequence')
  length = max(v.size for v in depths.values())
  width = max(6.5, min(30.0, 0.12 * length + 2))
  fig = plots.new_figure((width, 3.0 if labels is None else 3.8))
  ax = fig.subplots()
  shifts = layer_offsets(len(depths))
  for (name, v), shift, style in zip(depths.items(), shifts,
                                     ('-', '--', ':', '-.') * len(depths)):
    ax.step(np.arange(v.size), v + shift, where='mid', linestyle=style,
            label=name if not shift else f'{name} (drawn {shift:+.2f})')
  if labels is not None:
    every = label_stride(len(labels), width)
    ticks = np.arange(0, len(labels), every)
    ax.set_xticks(ticks)
    ax.set_xticklabels(symbol_labels([labels[i] for i in ticks]),
                       fontfamily='monospace', fontsize=7, parse_math=False,
                       rotation=90)
  ax.set_xlabel('time step t')
  ax.set_ylabel(ylabel)
  ax.grid(alpha=0.3)
  if len(depths) > 1:
    ax.legend(fontsize=8)
  fig.suptitle(title)
  return plots.save(fig, path)




def plot_depth_histograms(depths: Mapping[str, Sequence[float]],
                          groups: Sequence[int], group_names: Sequence[str],
                          path, *, title: str,
                          xlabel: str = 'realized depth R_t') -> pathlib.Path:
  """The distribution of a per-step integer value in each group, per layer.

  EI-REHN's realized depth per activity class (HAR) or per word (PTB): one
  panel per layer, one bar group per depth value, one bar per group (the
  fraction of that group's steps at that depth), and the group's mean in the
  legend.

  Args:
    depths: layer name -> per-step values, flattened (``[N]``).
    groups: ``[N]`` group index of each step, in ``[0, len(group_names))``.
    group_names: the legend names of the groups.
    path: the PNG to write.
    title: the figure title.
    xlabel: the x axis label.
  """
  depths = check_layers(depths, 'plot_depth_histograms')
  groups = np.asarray(groups).reshape(-1)
  for k, v in depths.items():
    if v.size != groups.size:
      raise ValueError(f'plot_depth_histograms: {k!r} has {v.size} values '
                       f'but groups has {groups.size}.')
  if groups.size and (groups.min() < 0 or groups.max() >= len(group_names)):
    raise ValueError('plot_depth_histograms: groups must index group_names.')
  top = int(max(v.max() for v in depths.values()))
  values = np.arange(top + 1)
  n = len(group_names)
  fig = plots.new_figure((max(6.5, 0.5 * (top + 1) * max(n, 2) / 3 + 2),
                     2.8 * len(depths)))
  axes = fig.subplots(len(depths), 1, squeeze=False)[:, 0]
  width = 0.8 / max(n, 1)
  for ax, (name, v) in zip(axes, depths.items()):
    for g, gname in enumerate(group_names):
      sel = v[groups == g]
      if not sel.size:
        continue
      freq = np.array([(np.round(sel) == d).mean() for d in values])
      ax.bar(values + (g - (n - 1) / 2) * width, freq, width=width,
             label=f'{gname} (mean {sel.mean():.2f})')
    ax.set_xticks(values)
    ax.set_ylabel(f'{name}: fraction')
    ax.grid(axis='y', alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
  axes[-1].set_xlabel(xlabel)
  fig.suptitle(title)
  return plots.save(fig, path)


def plot_depth_by_class(stats: Mapping[str, Any], labels: Sequence[int],
                        class_names: Sequence[str], path) -> pathlib.Path:
  """Realized depth per class (EI-REHN on HAR): ``stats`` are ``[N, T]``."""
  labels = np.asarray(labels).reshape(-1)
  flat = {k: np.asarray(v).reshape(-1) for k, v in stats.items()
          if k.startswith('depth')}
  if not flat:
    raise ValueError('plot_depth_by_class: no depth statistics (an elastic '
                     'cell records them).')
  steps = np.asarray(next(iter(stats.values()))).shape[1]
  return plot_depth_histograms(
      flat, np.repeat(labels, steps), list(class_names), path,
      title='Realized depth per step, by activity (test windows)')
