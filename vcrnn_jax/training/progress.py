"""Training progress on top of tqdm, and an end-of-run summary table.

On a terminal, or in a notebook, :class:`Progress` is a tqdm bar redrawn in
place::

  train:  60%|██████    | 600/1000 [00:14<00:09, 41.70step/s, loss=0.6931]

When the stream is not a terminal (CI, a log file), redrawing would fill the
log with carriage returns, so tqdm only formats the line and it is printed as
a plain line when progress crosses a 10% mark or ``20 * min_interval`` seconds
have passed since the last one, so logs stay short.

Both start the clock at the first update, so the rate and the ETA leave out
the first step, which includes JIT compilation.
"""

from __future__ import annotations

from collections.abc import Mapping
import io
import math
import os
import shutil
import sys
import time
from typing import Any, TextIO

__all__ = ['Progress', 'summary_table']

_UNIT = 'step'
# Fraction of the run between two plain (non-terminal) lines.
_PLAIN_FRACTION = 0.1
# A plain line is also printed after this many min_intervals without one.
_PLAIN_HEARTBEAT = 20


def _monotonic() -> float:
  # Indirection so tests can drive the clock.
  return time.monotonic()


def _redraws(stream: TextIO) -> bool:
  """Whether ``stream`` shows a bar redrawn in place."""
  if stream is sys.stdout and 'ipykernel' in sys.modules:
    # A notebook's stdout is no terminal, but it renders tqdm's bar.
    return True
  try:
    return bool(stream.isatty())
  except (AttributeError, ValueError, io.UnsupportedOperation):
    return False


def _zero_width(stream: TextIO) -> bool:
  """Whether ``stream`` is a terminal that reports a width of 0 columns."""
  try:
    return os.get_terminal_size(stream.fileno()).columns == 0
  except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
    return False


def _format_value(value: Any, float_format: str = '.4g') -> str:
  """Formats scalars compactly; numpy/jax scalars are unwrapped first."""
  if hasattr(value, 'item') and getattr(value, 'size', 1) == 1:
    try:
      value = value.item()
    except (TypeError, ValueError):
      pass
  if isinstance(value, bool) or value is None:
    return str(value)
  if isinstance(value, float):
    return format(value, float_format)
  return str(value)


class Progress:
  """A tqdm progress bar with rate, ETA and live values, short in logs.

  Example::

    progress = Progress(num_steps, initial=start_step, desc='train')
    for step in range(start_step + 1, num_steps + 1):
      ...
      progress.update(step, loss=loss)
      if step % eval_every == 0:
        progress.write(f'step {step}: eval error {error:.3f}')
    progress.close()
  """

  def __init__(self, total: int, *, initial: int = 0,
               stream: TextIO | None = None, desc: str = '',
               min_interval: float = 0.5):
    """Creates the bar; nothing is drawn before the first update.

    Args:
      total: the step at which the run ends (>= 0).
      initial: the step the run starts from (e.g. a resumed checkpoint's), in
        ``[0, total]``.
      stream: where to draw; defaults to ``sys.stdout``.
      desc: a label shown before the bar.
      min_interval: the minimum number of seconds between two redraws on a
        terminal (>= 0); off a terminal, a plain line is printed at least
        every ``20 * min_interval`` seconds while progress is made.

    Raises:
      ValueError: if ``total``, ``initial`` or ``min_interval`` is out of
        range.
    """
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
      raise ValueError(f'total must be a non-negative integer, got {total!r}')
    if (isinstance(initial, bool) or not isinstance(initial, int)
        or not 0 <= initial <= total):
      raise ValueError(
          f'initial must be an integer in [0, total={total}], got {initial!r}')
    if not isinstance(min_interval, (int, float)) or not min_interval >= 0:
      raise ValueError(
          f'min_interval must be a non-negative number of seconds, got '
          f'{min_interval!r}')
    self._total = total
    self._stream = sys.stdout if stream is None else stream
    self._desc = desc
    self._min_interval = float(min_interval)
    self._redraw = _redraws(self._stream)
    self._step = initial
    self._postfix: dict[str, str] = {}
    # (time, step) of the first update: the rate leaves out what came before.
    self._ref: tuple[float, int] | None = None
    self._bar = None  # The tqdm bar, when redrawing, from the first update.
    self._last_plain = (_monotonic(), initial)  # (time, step) of a plain line.
    self._closed = False

  @property
  def rate(self) -> float | None:
    """Steps per second since the first update, or None before it is known."""
    if self._ref is None:
      return None
    ref_time, ref_step = self._ref
    elapsed = _monotonic() - ref_time
    if elapsed <= 0 or self._step <= ref_step:
      return None
    return (self._step - ref_step) / elapsed

  def update(self, step: int, **postfix: Any) -> None:
    """Records that ``step`` is done and redraws when due.

    Args:
      step: the last completed step (it may go back, e.g. after a rollback).
      **postfix: values to show after the bar, e.g. ``loss=0.693``; they
        replace the previous ones.
    """
    if self._closed:
      return
    restart = self._ref is None or step < self._step
    self._step = step
    self._postfix = {k: _format_value(v) for k, v in postfix.items()}
    done = step >= self._total
    if restart:
      # First update, or a rollback: the clock (re)starts here.
      self._ref = (_monotonic(), step)
    if self._redraw:
      if restart:
        self._new_bar()
      else:
        self._bar.set_postfix(self._postfix, refresh=False)
        self._bar.update(step - self._bar.n)
        if done:
          self._bar.refresh()
    elif done or self._plain_due():
      self._print_plain()

  def write(self, line: str) -> None:
    """Prints ``line`` above the bar (the bar is redrawn below it)."""
    if self._bar is not None and not self._closed:
      self._bar.write(line, file=self._stream)
    else:
      self._stream.write(f'{line}\n')
    self._stream.flush()

  def close(self) -> None:
    """Draws the final state and ends the bar's line."""
    if self._closed:
      return
    if self._bar is not None:
      self._bar.close()
    elif self._ref is not None and self._last_plain[1] != self._step:
      self._print_plain()
    self._closed = True
    self._stream.flush()

  def __enter__(self) -> Progress:
    return self

  def __exit__(self, *exc_info) -> None:
    self.close()

  def format_line(self) -> str:
    """The current state as one plain line (tqdm's format, ASCII bar)."""
    from tqdm import tqdm  # pylint: disable=g-import-not-at-top (import time)
    ref_time, ref_step = self._ref or (_monotonic(), self._step)
    postfix = ', '.join(f'{k}={v}' for k, v in self._postfix.items())
    return tqdm.format_meter(
        self._step, self._total, _monotonic() - ref_time, prefix=self._desc,
        ascii=True, unit=_UNIT, initial=ref_step, postfix=postfix or None)

  def _new_bar(self) -> None:
    from tqdm.auto import tqdm  # pylint: disable=g-import-not-at-top
    if self._bar is not None:
      self._bar.close()
    # tqdm draws nothing on a terminal of size 0 (a pty without a window, as
    # under `script` or some CI runners); shutil falls back to 80 x 24.
    ncols, nrows = (shutil.get_terminal_size() if _zero_width(self._stream)
                    else (None, None))
    # smoothing=0: the mean rate since the first update, like `rate`; tqdm's
    # moving average would drop at every evaluation pause.
    # miniters=1: redraws are paced by min_interval alone.
    self._bar = tqdm(
        total=self._total, initial=self._step, desc=self._desc,
        file=self._stream, unit=_UNIT, mininterval=self._min_interval,
        miniters=1, smoothing=0, ncols=ncols, nrows=nrows,
        dynamic_ncols=ncols is None, postfix=self._postfix)

  def _plain_due(self) -> bool:
    last_time, last_step = self._last_plain
    step_gap = max(1, math.ceil(self._total * _PLAIN_FRACTION))
    # Crossing a 10% mark (not just moving 10% since the last line) keeps the
    # lines at round percentages.
    if self._step // step_gap > last_step // step_gap:
      return True
    return (self._step != last_step and _monotonic() - last_time >=
            _PLAIN_HEARTBEAT * self._min_interval)

  def _print_plain(self) -> None:
    self._stream.write(self.format_line() + '\n')
    self._stream.flush()
    self._last_plain = (_monotonic(), self._step)


def summary_table(rows: Mapping[str, Any], title: str = '') -> str:
  """Formats ``rows`` as an aligned two-column table.

  Example::

    >>> print(summary_table({'steps': 1000, 'test error': 0.04123}, 'Done'))
    Done
    -------------------
    steps       1000
    test error  0.04123
    -------------------

  Args:
    rows: label to value; floats are shown with 6 significant digits, numpy
      and jax scalars are unwrapped, anything else goes through ``str``.
    title: an optional heading line.

  Returns:
    The table, without a trailing newline.
  """
  labels = [str(k) for k in rows]
  values = [_format_value(v, '.6g').split('\n') for v in rows.values()]
  label_width = max((len(k) for k in labels), default=0)
  lines = []
  for label, value_lines in zip(labels, values):
    lines.append(f'{label:<{label_width}}  {value_lines[0]}'.rstrip())
    # Continuation lines of multi-line values stay in the value column.
    lines += [f'{"":<{label_width}}  {v}'.rstrip() for v in value_lines[1:]]
  if not lines:
    return title
  width = max([len(line) for line in lines] + [len(title)])
  rule = '-' * width
  header = [title, rule] if title else [rule]
  return '\n'.join(header + lines + [rule])
