"""Plot helpers every paper's figures share (matplotlib's object API, Agg).

* :func:`new_figure` and :func:`save`: a figure on the Agg canvas directly
  (no ``pyplot``), so the caller's backend and global figure list are left
  alone; :func:`matplotlib_api` the classes, with a clear error if matplotlib
  is missing;
* :func:`byte_labels` and :func:`symbol_labels`: readable tick labels for
  bytes and symbols (spaces, newlines and tabs shown, undrawable glyphs
  escaped);
* :func:`plot_over_text`: a per-symbol value along a text, rows of symbols
  (ACT's ponder, VCRNN's m_t);
* :func:`check_layers`, :func:`label_stride` and :func:`layer_offsets`: the
  per-layer values and axes of per-step plots.

matplotlib is imported only when a function is called, so that a binary
that draws nothing does not load it. The papers' figures are in the pages'
packages beside this module (``act.plots``, ``rehn.plots``, ``vc.plots``,
``family.plots``).
"""

from collections.abc import Mapping, Sequence
import logging
import math
import pathlib
from typing import Any
import unicodedata

import numpy as np

from vcrnn_jax.core import check_positive_int

__all__ = [
    'matplotlib_api',
    'new_figure',
    'legible',
    'save',
    'byte_labels',
    'symbol_labels',
    'plot_over_text',
    'check_layers',
    'label_stride',
    'layer_offsets',
]


def matplotlib_api():
  """Imports matplotlib's object API, with a clear error if it is missing."""
  # matplotlib logs "generated new fontManager" at INFO the first time it
  # builds its font cache; the console belongs to the binaries' own lines.
  logging.getLogger('matplotlib.font_manager').setLevel(logging.WARNING)
  try:
    # pylint: disable=g-import-not-at-top
    from matplotlib import cm, colors
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
  except ImportError as e:
    raise ImportError(
        'experiments.reports.plots needs matplotlib, an install requirement '
        'of vcrnn_jax: pip install matplotlib.') from e
  return Figure, FigureCanvasAgg, colors, cm


def ticker():
  matplotlib_api()   # The error message if matplotlib is missing.
  from matplotlib import ticker  # pylint: disable=g-import-not-at-top
  return ticker


def new_figure(figsize):
  figure_cls, canvas_cls, _, _ = matplotlib_api()
  fig = figure_cls(figsize=figsize, layout='constrained')
  canvas_cls(fig)   # The Agg canvas: PNG output with no GUI backend.
  return fig


# The docs show a figure at their column width, about 7 inches: a wider
# figure is scaled down, and its text with it. Legends, titles and axis
# labels are raised to read as at least 8 points there (tick labels are
# left alone: some figures have one per character and would overlap).
_COLUMN_INCHES = 7.0
_MIN_POINTS = 8.0


def legible(fig) -> None:
  """Raises ``fig``'s legend, title and axis-label text to a size that
  reads as at least 8 points at the docs' column width."""
  floor = _MIN_POINTS * max(1.0, fig.get_figwidth() / _COLUMN_INCHES)
  texts = [t for legend in fig.legends for t in legend.get_texts()]
  for ax in fig.axes:
    texts += [ax.title, ax.xaxis.label, ax.yaxis.label]
    if ax.get_legend() is not None:
      texts += ax.get_legend().get_texts()
  for text in texts:
    if text.get_text() and text.get_fontsize() < floor:
      text.set_fontsize(floor)


def save(fig, path) -> pathlib.Path:
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  legible(fig)
  fig.savefig(path, dpi=120)
  return path



# ----------------------------------------------------------------------------
# Figure 23.

_SPECIAL = {ord(' '): '␣', ord('\n'): '↵', ord('\t'): '⇥'}


def byte_labels(text_bytes: bytes) -> list[str]:
  """One printable tick label per byte of ``text_bytes``.

  A UTF-8 character's label goes on its first byte and ``''`` on its
  continuation bytes; a space is ``␣``, a newline ``↵``, a tab ``⇥``, and
  other control bytes and invalid UTF-8 are ``·``.
  """
  labels = []
  i = 0
  while i < len(text_bytes):
    b = text_bytes[i]
    if b in _SPECIAL:
      labels.append(_SPECIAL[b])
      i += 1
      continue
    if b < 0x80:
      labels.append(chr(b) if 0x20 <= b < 0x7f else '·')
      i += 1
      continue
    # A multi-byte UTF-8 character: its length from the lead byte's top bits.
    width = 2 if b >> 5 == 0b110 else 3 if b >> 4 == 0b1110 else (
        4 if b >> 3 == 0b11110 else 0)
    try:
      char = bytes(text_bytes[i:i + width]).decode('utf-8') if width else None
    except UnicodeDecodeError:
      char = None
    if char is None or unicodedata.category(char).startswith('C'):
      labels.append('·')
      i += 1
      continue
    labels.extend([char] + [''] * (width - 1))
    i += width
  return labels


def _drawable(labels: list[str]) -> list[str]:
  """``labels`` with characters the monospace font lacks replaced by ``?``."""
  matplotlib_api()
  # pylint: disable=g-import-not-at-top
  from matplotlib import font_manager, ft2font
  font = ft2font.FT2Font(font_manager.findfont('monospace'))
  # Index 0 is the font's 'missing glyph': matplotlib would warn and draw a box.
  return [l if not l or all(font.get_char_index(ord(c)) for c in l) else '?'
          for l in labels]


def symbol_labels(symbols: Sequence[Any]) -> list[str]:
  """One printable tick label per symbol (a str, or a byte as an int).

  Spaces show as ``␣``, newlines as ``↵``, tabs as ``⇥``; multi-character
  symbols (words, music tokens) are kept as they are.
  """
  labels = []
  for sym in symbols:
    if isinstance(sym, (int, np.integer)):
      labels.extend(byte_labels(bytes([int(sym)])) or ['·'])
    elif len(str(sym)) == 1 and ord(str(sym)) in _SPECIAL:
      labels.append(_SPECIAL[ord(str(sym))])
    else:
      text = str(sym)
      labels.append(text if text.isprintable() else '·')
  return labels


def plot_over_text(labels: Sequence[str], values: Sequence[float], path, *,
                   ylabel: str, title: str, xlabel: str = 'input symbol',
                   chars_per_row: int = 80,
                   base: float | None = None) -> pathlib.Path:
  """A value per symbol along a text: a bar above each symbol's label.

  The text runs along the x axis, wrapped into rows of ``chars_per_row``
  symbols that share one y scale. ACT's ponder (Fig. 23) and VCRNN's
  computation ``m_t`` (Fig. 3/5) are drawn with it.

  Args:
    labels: one tick label per value (see :func:`byte_labels`,
      :func:`symbol_labels`).
    values: one finite number per label.
    path: the PNG to write.
    ylabel, title, xlabel: the figure's texts.
    chars_per_row: symbols per row.
    base: where the bars start (default: ``min(0, min(values))``).

  Returns:
    ``path``.

  Raises:
    ValueError: empty labels, a length mismatch, a non-finite value or a bad
      ``chars_per_row``.
  """
  values = np.asarray(values, np.float64).reshape(-1)
  if not len(labels):
    raise ValueError('the text is empty; nothing to plot.')
  if values.size != len(labels):
    raise ValueError(f'got {values.size} values for {len(labels)} symbols; '
                     'give one value per symbol.')
  if not np.all(np.isfinite(values)):
    raise ValueError('the values contain NaN or infinite entries.')
  check_positive_int('chars_per_row', chars_per_row)
  labels = _drawable(list(labels))
  n = len(labels)
  n_rows = -(-n // chars_per_row)
  width = min(n, chars_per_row)
  fig = new_figure((max(6.5, 1.2 + 0.14 * width), 0.6 + 1.5 * n_rows))
  axes = fig.subplots(n_rows, 1, squeeze=False)[:, 0]
  base = min(0.0, float(values.min())) if base is None else base
  top = float(values.max())
  top = top + 0.08 * max(top - base, 1e-3)
  for row, ax in enumerate(axes):
    lo, hi = row * chars_per_row, min((row + 1) * chars_per_row, n)
    x = np.arange(hi - lo)
    ax.bar(x, values[lo:hi] - base, bottom=base, width=0.85, color='tab:blue')
    ax.set_xlim(-0.6, width - 0.4)   # Rows share one x scale.
    ax.set_ylim(base, top)
    ax.set_xticks(x)
    ax.set_xticklabels(labels[lo:hi], fontfamily='monospace', fontsize=8,
                       parse_math=False)
    ax.tick_params(axis='x', length=0)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.grid(axis='y', alpha=0.3)
    for spine in ('top', 'right'):
      ax.spines[spine].set_visible(False)
  axes[-1].set_xlabel(xlabel)
  fig.suptitle(title)
  return save(fig, path)



def check_layers(values: Mapping[str, Any], what: str) -> dict:
  if not values:
    raise ValueError(f'{what}: no values to plot.')
  out = {str(k): np.asarray(v, np.float64).reshape(-1)
         for k, v in values.items()}
  for k, v in out.items():
    if not v.size or not np.all(np.isfinite(v)):
      raise ValueError(f'{what}: {k!r} is empty or not finite.')
  return out




def label_stride(count: int, width_inches: float,
                 per_inch: float = 6.0) -> int:
  """Label every k-th of ``count`` ticks: at most ``per_inch`` per inch.

  Upright 7-point labels (rotated 90 degrees) need about 1/6 inch each;
  denser labels overlap into an unreadable band.
  """
  return max(1, math.ceil(count / max(1.0, per_inch * width_inches)))


def layer_offsets(count: int, step: float = 0.06) -> list:
  """Vertical shifts that keep ``count`` equal lines apart (the first: 0).

  Two layers with the same realized depth at every step would draw one
  line over the other; shifted by ``step`` each, both stay visible (the
  legend says by how much).
  """
  return [step * k for k in range(count)]
