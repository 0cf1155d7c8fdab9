"""The ACT paper's figures, drawn from the rows of a sweep's CSV files.

Each function takes rows (dicts, as :func:`vcrnn_jax.training.sweep.read_rows`
returns them or as ``csv.DictReader`` reads them: ``act`` may be a bool or
``'true'``/``'false'``, ``tau`` a float, ``''`` or None for the no-ACT
baseline) and writes one PNG:

* :func:`plot_error_by_tau`: final sequence error per tau, mean +- standard
  error over seeds, baseline dashed (Graves 2016, Figs 4/8/12/17);
* :func:`plot_error_vs_ponder`: error against ponder, one small marker per run
  and a large one per tau mean (Fig. 5 right, Figs 9/13/18 right);
* :func:`plot_by_difficulty`: ponder and error against difficulty, a line per
  tau and the baseline (Figs 6/10/14/19);
* :func:`plot_ponder_over_text`: ponder per character along a text (Fig. 23);
* :func:`plot_sweep`: the first three for one sweep folder.

Example::

  rows = sweep.read_rows('runs/sweep_parity/results.csv')
  plots.plot_error_by_tau(rows, 'runs/sweep_parity/error_by_tau.png')
"""

from collections.abc import Iterable, Mapping, Sequence
import math
import pathlib
from typing import Any

import numpy as np

from experiments.reports import plots
from experiments.reports.plots import byte_labels, plot_over_text, symbol_labels

__all__ = [
    'ERROR_BY_TAU_PNG',
    'ERROR_VS_PONDER_PNG',
    'BY_DIFFICULTY_PNG',
    'plot_error_by_tau',
    'plot_error_vs_ponder',
    'plot_by_difficulty',
    'DIFFICULTY_LABELS',
    'plot_sweep',
    'plot_ponder_over_text',
]

ERROR_BY_TAU_PNG = 'error_by_tau.png'
ERROR_VS_PONDER_PNG = 'error_vs_ponder.png'
BY_DIFFICULTY_PNG = 'by_difficulty.png'

_BASELINE_LABEL = 'no ACT'
# Above this many tau values a colour bar replaces the legend.
_MAX_LEGEND_TAUS = 8

# ----------------------------------------------------------------------------
# Rows.


def _as_bool(value: Any) -> bool:
  if isinstance(value, str):
    lowered = value.strip().lower()
    if lowered in ('true', '1'):
      return True
    if lowered in ('false', '0'):
      return False
    raise ValueError(f'act must be true or false, got {value!r}.')
  return bool(value)


def _as_tau(value: Any) -> float | None:
  if value is None:
    return None
  if isinstance(value, str) and value.strip() in ('', 'None'):
    return None
  return float(value)


def _normalise(rows: Iterable[Mapping[str, Any]], value_keys: Sequence[str]
               ) -> list[dict]:
  """Typed copies of ``rows``; ``ValueError`` naming a missing column."""
  out = []
  for i, row in enumerate(rows):
    missing = [k for k in ('act', *value_keys) if k not in row]
    if missing:
      raise ValueError(f'row {i} lacks column(s) {missing}: {dict(row)}')
    act = _as_bool(row['act'])
    tau = _as_tau(row.get('tau')) if act else None
    if act and tau is None:
      raise ValueError(f'row {i} is an ACT row without a tau: {dict(row)}')
    typed = {'act': act, 'tau': tau, 'seed': row.get('seed')}
    typed.update({k: float(row[k]) for k in value_keys})
    out.append(typed)
  return out


def _mean_se(values: Sequence[float]) -> tuple[float, float]:
  """Mean and standard error of the mean (0 for a single value)."""
  values = np.asarray(values, np.float64)
  if values.size < 2:
    return float(values.mean()), 0.0
  se = values.std(ddof=1) / math.sqrt(values.size)
  return float(values.mean()), float(se)


def _by_tau(rows: list[dict]) -> dict:
  groups: dict = {}
  for row in rows:
    if row['act']:
      groups.setdefault(row['tau'], []).append(row)
  return dict(sorted(groups.items()))


def _one_two_five(value: float, _) -> str:
  if value <= 0:
    return ''
  mantissa = value / 10 ** math.floor(math.log10(value) + 1e-9)
  return f'{value:g}' if round(mantissa) in (1, 2, 5) else ''


def _tau_label(tau: float) -> str:
  return f'τ={tau:g}'


def _tau_colours(taus: Sequence[float]):
  """A colour per tau (log scale) and the ScalarMappable for a colour bar."""
  _, _, colors, cm = plots.matplotlib_api()
  positive = [t for t in taus if t > 0]
  lo = min(positive) if positive else 1e-4
  hi = max(positive) if positive else 1.0
  if hi <= lo:
    lo, hi = lo / 10, hi * 10   # One tau: any non-empty range will do.
  norm = colors.LogNorm(vmin=lo, vmax=hi)
  # viridis without its palest yellows, which vanish on a white background.
  cmap = colors.ListedColormap(
      cm.ScalarMappable(cmap='viridis').to_rgba(np.linspace(0, 0.85, 256)),
      name='viridis_dark')
  mappable = cm.ScalarMappable(norm=norm, cmap=cmap)
  return {t: mappable.to_rgba(max(t, lo)) for t in taus}, mappable


def _tau_key(fig, axes, mappable, n_taus: int) -> None:
  """A legend for a few taus, a log colour bar for many."""
  if n_taus <= _MAX_LEGEND_TAUS:
    axes[0].legend(fontsize=8)
  else:
    fig.colorbar(mappable, ax=axes, label='time penalty τ', pad=0.01)


def _check_rows(rows: list[dict], what: str) -> None:
  if not rows:
    raise ValueError(f'no rows to plot for {what}.')


# ----------------------------------------------------------------------------
# Figures 4/8/12/17, 5/9/13/18 (right) and 6/10/14/19.


def plot_error_by_tau(rows: Iterable[Mapping[str, Any]], path, *,
                      title: str | None = None) -> pathlib.Path:
  """Bar chart of the final sequence error per tau (ACT Figs 4/8/12/17).

  Bar height is the mean over seeds, the error bar the standard error of the
  mean, on a log tau axis; the mean of the no-ACT rows is a dashed line.

  Args:
    rows: ``results.csv`` rows (``act``, ``tau``, ``sequence_error``).
    path: the PNG to write.
    title: the figure title (default: 'Sequence error rate per time penalty').

  Returns:
    ``path``.
  """
  rows = _normalise(rows, ('sequence_error',))
  _check_rows(rows, 'the error-per-tau plot')
  groups = _by_tau(rows)
  baseline = [r['sequence_error'] for r in rows if not r['act']]
  fig = plots.new_figure((7.5, 4.2))
  ax = fig.add_subplot()
  if groups:
    taus = np.array(list(groups))
    stats = [_mean_se([r['sequence_error'] for r in g])
             for g in groups.values()]
    means, ses = np.array(stats).T
    # Equal bar widths in log space: a fraction of the closest pair's gap.
    positive = taus[taus > 0]
    logs = np.log10(positive) if positive.size else np.zeros(1)
    gap = np.min(np.diff(logs)) if logs.size > 1 else 0.5
    half = min(0.35 * gap, 0.15)
    x = np.where(taus > 0, taus, 10 ** (logs.min() - 4 * half))
    left, right = x * 10 ** -half, x * 10 ** half
    colours, _ = _tau_colours(list(taus))
    ax.bar(left, means, width=right - left, align='edge',
           color=[colours[t] for t in taus], edgecolor='black',
           linewidth=0.5, label='ACT (mean over seeds)')
    ax.errorbar(x, means, yerr=ses, fmt='none', ecolor='black', capsize=2,
                linewidth=1, label='± standard error')
    ax.set_xscale('log')
    ax.set_xlim(left.min() / 10 ** (2 * half), right.max() * 10 ** (2 * half))
    seeds = max(len(g) for g in groups.values())
    ax.set_xlabel('time penalty τ (log scale)')
  else:
    seeds = len(baseline)
    ax.set_xticks([])
  if baseline:
    mean, se = _mean_se(baseline)
    ax.axhline(mean, color='black', linestyle='--', linewidth=1.2,
               label=f'{_BASELINE_LABEL} (mean {mean:.3f} ± {se:.3f})')
  top = max([r['sequence_error'] for r in rows] + [0.05])
  ax.set_ylim(0, min(1.0, top * 1.15) if top < 0.9 else 1.02)
  ax.set_ylabel('sequence error rate')
  ax.set_title(title or 'Sequence error rate per time penalty '
               f'(up to {seeds} seeds per bar)')
  ax.grid(axis='y', alpha=0.3)
  ax.legend(fontsize=8, loc='best')
  return plots.save(fig, path)


def plot_error_vs_ponder(rows: Iterable[Mapping[str, Any]], path, *,
                         title: str | None = None) -> pathlib.Path:
  """Sequence error against ponder (ACT Fig. 5 right).

  Small markers are runs, large ones the mean per tau, with standard-error
  bars in both directions (the paper's ellipses); colour encodes tau on a log
  scale. The no-ACT mean error is a black dotted line.

  Args:
    rows: ``results.csv`` rows (``act``, ``tau``, ``sequence_error``,
      ``ponder``).
    path: the PNG to write.
    title: the figure title.

  Returns:
    ``path``.
  """
  rows = _normalise(rows, ('sequence_error', 'ponder'))
  _check_rows(rows, 'the error-versus-ponder plot')
  groups = _by_tau(rows)
  fig = plots.new_figure((7.0, 4.6))
  ax = fig.add_subplot()
  colours, mappable = _tau_colours(list(groups) or [1.0])
  for tau, group in groups.items():
    colour = colours[tau]
    ax.scatter([r['ponder'] for r in group],
               [r['sequence_error'] for r in group], s=14, color=colour,
               alpha=0.55, linewidths=0)
    (px, sx), (py, sy) = (_mean_se([r['ponder'] for r in group]),
                          _mean_se([r['sequence_error'] for r in group]))
    ax.errorbar(px, py, xerr=sx, yerr=sy, fmt='none', ecolor=colour,
                elinewidth=1, alpha=0.9)
    ax.scatter([px], [py], s=110, color=colour, edgecolors='black',
               linewidths=0.8, label=_tau_label(tau), zorder=3)
  baseline = [r['sequence_error'] for r in rows if not r['act']]
  if baseline:
    ax.axhline(np.mean(baseline), color='black', linestyle=':', linewidth=1.5,
               label=f'{_BASELINE_LABEL} (mean error)')
  ponders = [r['ponder'] for r in rows if r['act']] or [1.0]
  if min(ponders) > 0 and max(ponders) / min(ponders) > 10:
    ax.set_xscale('log')
    # Plain numbers at 1, 2, 5 x 10^k (not 2x10^0): ponder is a step count.
    plain = plots.ticker().FuncFormatter(_one_two_five)
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(plain)
  ax.set_xlabel('ponder (mean computation steps per input step)')
  ax.set_ylabel('sequence error rate')
  ax.set_ylim(bottom=0)
  ax.set_title(title or 'Error rate versus ponder time '
               '(small: runs, large: mean per τ)')
  ax.grid(alpha=0.3)
  if len(groups) <= _MAX_LEGEND_TAUS:
    ax.legend(fontsize=8, loc='best')
  else:
    fig.colorbar(mappable, ax=ax, label='time penalty τ', pad=0.01)
    if baseline:
      ax.legend(handles=ax.get_lines()[-1:], fontsize=8, loc='best')
  return plots.save(fig, path)


def plot_by_difficulty(rows: Iterable[Mapping[str, Any]], path, *,
                       title: str | None = None,
                       difficulty_label: str = 'difficulty') -> pathlib.Path:
  """Ponder and sequence error against difficulty (ACT Figs 6/10/14/19).

  Two panels (ponder left, error right), one line per tau (the mean over
  seeds, coloured by tau on a log scale) and the no-ACT baseline (black,
  dashed).

  Args:
    rows: ``difficulty.csv`` rows (``act``, ``tau``, ``difficulty``,
      ``sequence_error``, ``ponder``).
    path: the PNG to write.
    title: the figure title.
    difficulty_label: the x-axis label (e.g. 'number of bits').

  Returns:
    ``path``.
  """
  rows = _normalise(rows, ('difficulty', 'sequence_error', 'ponder'))
  _check_rows(rows, 'the difficulty plot')
  groups = _by_tau(rows)
  baseline = [r for r in rows if not r['act']]
  fig = plots.new_figure((11.0, 4.2))
  axes = fig.subplots(1, 2)
  colours, mappable = _tau_colours(list(groups) or [1.0])
  series = [(_tau_label(t), colours[t], '-', g) for t, g in groups.items()]
  if baseline:
    series.append((_BASELINE_LABEL, 'black', '--', baseline))
  for label, colour, style, group in series:
    difficulties = sorted({r['difficulty'] for r in group})
    for ax, key in zip(axes, ('ponder', 'sequence_error')):
      means = [np.mean([r[key] for r in group if r['difficulty'] == d])
               for d in difficulties]
      ax.plot(difficulties, means, style, color=colour, label=label,
              linewidth=1.6 if style == '--' else 1.2,
              marker='o' if len(difficulties) <= 20 else None, markersize=3)
  axes[0].set_ylabel('ponder (mean steps per input step)')
  axes[0].set_title('Ponder time')
  axes[1].set_ylabel('sequence error rate')
  axes[1].set_title('Sequence error rate')
  axes[1].set_ylim(-0.02, 1.02)
  for ax in axes:
    ax.set_xlabel(difficulty_label)
    ax.grid(alpha=0.3)
  if len(groups) <= _MAX_LEGEND_TAUS:
    axes[0].legend(fontsize=8)
  else:
    fig.colorbar(mappable, ax=list(axes), label='time penalty τ', pad=0.01)
    if baseline:
      axes[0].legend(handles=[axes[0].get_lines()[-1]], fontsize=8)
  fig.suptitle(title or 'Ponder and error versus difficulty (mean over seeds)')
  return plots.save(fig, path)


# Words for the x axes of the paper's difficulty figures.
DIFFICULTY_LABELS = {
    'parity': 'difficulty: number of non-zero bits',
    'logic': 'difficulty: logic gates per input (sequences of length 5)',
    'addition': 'difficulty: digits per number (sequences of length 3)',
    'sort': 'difficulty: numbers to sort',
}


def plot_sweep(results: Sequence[Mapping[str, Any]],
               difficulty: Sequence[Mapping[str, Any]], workdir, *,
               task: str = '') -> list[pathlib.Path]:
  """Writes the three sweep figures into ``workdir``.

  Args:
    results: ``results.csv`` rows of one task.
    difficulty: ``difficulty.csv`` rows of that task (may be empty: no
      difficulty figure then).
    workdir: where the PNGs go (:data:`ERROR_BY_TAU_PNG`,
      :data:`ERROR_VS_PONDER_PNG`, :data:`BY_DIFFICULTY_PNG`).
    task: the task's name, for titles and the difficulty axis.

  Returns:
    The paths written.
  """
  workdir = pathlib.Path(workdir)
  name = task.capitalize() + ': ' if task else ''
  n_seeds = len({r.get('seed') for r in results})
  paths = [
      plot_error_by_tau(
          results, workdir / ERROR_BY_TAU_PNG,
          title=f'{name}sequence error rate per τ '
                f'(mean ± s.e. over {n_seeds} seeds)'),
      plot_error_vs_ponder(
          results, workdir / ERROR_VS_PONDER_PNG,
          title=f'{name}error versus ponder (small: runs, large: mean per τ)'),
  ]
  if difficulty:
    paths.append(plot_by_difficulty(
        difficulty, workdir / BY_DIFFICULTY_PNG,
        title=f'{name}ponder and error versus difficulty (mean over seeds)',
        difficulty_label=DIFFICULTY_LABELS.get(task, 'difficulty')))
  return paths



def plot_ponder_over_text(text_bytes: bytes | str | Sequence[int],
                          ponder: Sequence[float], path, *,
                          chars_per_row: int = 80,
                          title: str | None = None) -> pathlib.Path:
  """Ponder time per character along a text (ACT Fig. 23).

  The text runs along the x axis (wrapped into rows of ``chars_per_row``
  bytes), one character per input step, and the ponder of each step is a bar
  above its character; all rows share one y scale. Spaces show as ``␣`` and
  newlines as ``↵`` so that pauses at word boundaries are visible.

  Args:
    text_bytes: the input bytes (a ``str`` is encoded as UTF-8; ints must be
      in 0..255); one ponder value per byte, as the byte-level model reads it.
      A list of ``str`` symbols (a character model) gets one value per
      symbol.
    ponder: ``rho_t = N(t) + R(t)`` per byte (ACT Eq. 10), same length.
    path: the PNG to write.
    chars_per_row: bytes per row of the figure.
    title: the figure title.

  Returns:
    ``path``.

  Raises:
    ValueError: empty text, a length mismatch, a non-finite ponder or a bad
      ``chars_per_row``.
  """
  if isinstance(text_bytes, (list, tuple)) and text_bytes and all(
      isinstance(t, str) for t in text_bytes):
    labels, unit = symbol_labels(text_bytes), 'symbols'
  else:
    if isinstance(text_bytes, str):
      text_bytes = text_bytes.encode('utf-8')
    try:
      data = bytes(text_bytes)
    except (TypeError, ValueError) as e:
      raise ValueError('text_bytes must be bytes, a str or ints in 0..255, '
                       f'got {type(text_bytes).__name__}: {e}') from None
    labels, unit = byte_labels(data), 'bytes'
  values = np.asarray(ponder, np.float64).reshape(-1)
  if labels and values.size != len(labels):
    raise ValueError(f'ponder has {values.size} values but text_bytes has '
                     f'{len(labels)} {unit}; give one ponder value per '
                     f'{unit[:-1]}.')
  mean = float(values.mean()) if values.size else float('nan')
  # Ponder is >= 1 for ACT; starting the bars at 1 shows the extra steps.
  return plot_over_text(
      labels, values, path, ylabel='ponder',
      xlabel=f'input {unit[:-1]} (␣ space, ↵ newline)',
      chars_per_row=chars_per_row,
      base=min(1.0, float(values.min())) if values.size else None,
      title=title or 'Ponder time during a text sequence '
      f'({len(labels)} {unit}, mean ponder {mean:.3f})')
