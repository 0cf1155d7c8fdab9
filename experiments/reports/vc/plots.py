r"""The VCRNN paper's figures (Jernite et al. 2017): where the scheduler
computes.

* :func:`plot_m_over_text`: :math:`m_t` per symbol along a text (Fig. 3, 5);
* :func:`plot_bit_computation`: the use of the highest dimensions per bit,
  characters marked, buffer bits shaded (Fig. 2);
* :func:`plot_mean_by_class`: mean :math:`m_t` per symbol class (word
  boundary vs inside a word; bar lines, rests, note lengths: Sec. 5.1 and
  Table 2), a bar per class with its count.

matplotlib is imported on use (as in :mod:`experiments.reports.plots`, whose
Agg-only drawing these share).

Example::

  per = task.per_step(params, ds.valid[:301], step)
  vc_plots.plot_m_over_text(ds.vocab.decode(ds.valid[:300]), per['m'],
                            'm_over_text.png')
"""

from collections.abc import Mapping, Sequence
import pathlib
from typing import Any

import numpy as np

from experiments.reports import plots

__all__ = ['plot_m_over_text', 'plot_bit_computation', 'plot_mean_by_class']


def plot_m_over_text(symbols: Sequence[Any], m: Sequence[float], path, *,
                     title: str | None = None, chars_per_row: int = 80,
                     ylabel: str = 'm_t') -> pathlib.Path:
  """:math:`m_t` at every input symbol along a text (Fig. 3 and 5).

  Args:
    symbols: the input symbols (characters or tokens), one per value.
    m: ``[T]`` scheduler outputs at those inputs.
    path: the PNG to write.
    title: the figure title (default names the mean).
    chars_per_row: symbols per row.
    ylabel: the y axis label.

  Returns:
    ``path``.
  """
  m = np.asarray(m, np.float64).reshape(-1)
  labels = plots.symbol_labels(list(symbols))
  title = title or (f'Per-symbol computation m_t ({len(labels)} symbols, '
                    f'mean {m.mean():.3f})' if m.size else 'm_t')
  return plots.plot_over_text(labels, m, path, ylabel=ylabel, title=title,
                              xlabel='input symbol (␣ space, ↵ newline)',
                              chars_per_row=chars_per_row, base=0.0)


def plot_bit_computation(bits: Sequence[int], usage: Sequence[float],
                         positions: Sequence[int], chars: Sequence[str],
                         path, *, title: str | None = None,
                         bits_per_row: int = 96) -> pathlib.Path:
  """Per-bit use of the highest dimensions (Fig. 2).

  Args:
    bits: ``[T]`` input bits (0/1), the tick labels.
    usage: ``[T]`` mean mask over the highest dimensions
      (:func:`vcrnn_jax.papers.vc.lm.top_dims_usage`).
    positions: ``[T]`` bit position in its character (0 = first, -1 =
      buffer bit), as ``load('ptb_bit').meta['bit_position']``.
    chars: one label per character (bits with position 0), written above
      the character's first bit.
    path: the PNG to write.
    title: the figure title.
    bits_per_row: bits per row of the figure.

  Returns:
    ``path``.
  """
  usage = np.asarray(usage, np.float64).reshape(-1)
  positions = np.asarray(positions).reshape(-1)
  bits = np.asarray(bits).reshape(-1)
  n = usage.size
  if not n or bits.size != n or positions.size != n:
    raise ValueError(f'plot_bit_computation: got {n} values, {bits.size} bits '
                     f'and {positions.size} positions; give one of each per '
                     'step.')
  starts = np.flatnonzero(positions == 0)
  chars = [plots.symbol_labels([c])[0] for c in chars]
  if len(chars) < starts.size:
    raise ValueError(f'plot_bit_computation: {starts.size} characters start '
                     f'in the bits but only {len(chars)} labels.')
  n_rows = -(-n // bits_per_row)
  fig = plots.new_figure((max(6.5, 1.2 + 0.12 * min(n, bits_per_row)),
                           0.8 + 1.6 * n_rows))
  axes = fig.subplots(n_rows, 1, squeeze=False)[:, 0]
  char_of = {int(s): chars[i] for i, s in enumerate(starts)}
  for row, ax in enumerate(axes):
    lo, hi = row * bits_per_row, min((row + 1) * bits_per_row, n)
    x = np.arange(hi - lo)
    colours = np.where(positions[lo:hi] < 0, 'tab:gray', 'tab:blue')
    ax.bar(x, usage[lo:hi], width=0.85, color=colours)
    for i in range(lo, hi):
      if i in char_of:
        ax.axvline(i - lo - 0.5, color='k', lw=0.5, alpha=0.5)
        ax.text(i - lo - 0.4, 1.02, char_of[i], fontsize=8,
                fontfamily='monospace', va='bottom')
    ax.set_xlim(-0.6, min(n, bits_per_row) - 0.4)
    ax.set_ylim(0, 1.15)
    ax.set_xticks(x)
    ax.set_xticklabels([str(int(b)) for b in bits[lo:hi]], fontsize=6,
                       fontfamily='monospace')
    ax.tick_params(axis='x', length=0)
    ax.set_ylabel('top dims\nupdated', fontsize=8)
    for spine in ('top', 'right'):
      ax.spines[spine].set_visible(False)
  axes[-1].set_xlabel('input bit (grey: buffer bits; a line starts each '
                      'character)')
  fig.suptitle(title or 'Per-bit computation of the highest dimensions')
  return plots.save(fig, path)


def plot_mean_by_class(groups: Mapping[str, Mapping[str, Mapping[str, float]]],
                       path, *, title: str,
                       ylabel: str = 'mean m_t') -> pathlib.Path:
  """Mean :math:`m_t` per symbol class: one panel per grouping.

  Args:
    groups: panel name -> (class -> ``{'mean', 'count'}``), as
      :func:`vcrnn_jax.papers.vc.lm.mean_by_class` returns for each
      grouping (e.g. ``{'symbol kind': ..., 'note length': ...}``).
    path: the PNG to write.
    title: the figure title.
    ylabel: the y axis label.

  Returns:
    ``path``.
  """
  groups = {k: v for k, v in groups.items() if v}
  if not groups:
    raise ValueError('plot_mean_by_class: no classes to plot.')
  widths = [max(2, len(v)) for v in groups.values()]
  fig = plots.new_figure((max(5.0, 0.7 * sum(widths) + 1.5), 3.2))
  axes = fig.subplots(1, len(groups), squeeze=False,
                      width_ratios=widths)[0]
  for ax, (name, classes) in zip(axes, groups.items()):
    names = list(classes)
    means = [classes[c]['mean'] for c in names]
    x = np.arange(len(names))
    ax.bar(x, means, width=0.7, color='tab:blue')
    for xi, c in zip(x, names):
      ax.text(xi, classes[c]['mean'], f"{classes[c]['mean']:.2f}\n"
              f"n={classes[c]['count']}", ha='center', va='bottom',
              fontsize=7)
    ax.set_xticks(x)
    ax.set_xticklabels([str(c) for c in names], fontsize=8, rotation=30,
                       parse_math=False)
    ax.set_ylim(0, max(1.0, max(means) * 1.25))
    ax.set_title(name, fontsize=9)
    ax.grid(axis='y', alpha=0.3)
  axes[0].set_ylabel(ylabel)
  fig.suptitle(title)
  return plots.save(fig, path)
