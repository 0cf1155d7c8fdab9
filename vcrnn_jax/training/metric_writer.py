"""Training metrics log: a JSON-lines file plus TensorBoard scalars.

:class:`MetricsWriter` appends one JSON object per call to
``<workdir>/metrics.jsonl``::

  {"step": 100, "time": 1767225600.12, "loss": 0.6931, "steps_per_sec": null}

and writes the same values as TensorBoard scalars under
``<workdir>/tensorboard/`` with tensorboardX (no TensorFlow needed).

JSON has no NaN or infinity: NaN (a value that could not be measured, such
as the rate of a one-step interval) is written as ``null``, and infinities as
the strings ``"inf"`` and ``"-inf"``, so every line is strict JSON;
:func:`read_metrics` turns them back into floats (and reads the ``"nan"``
strings of older files).

Each line is flushed to disk as it is written, and so are its TensorBoard
events: a killed run leaves every evaluation it logged in both.
"""

from __future__ import annotations

from collections.abc import Mapping
import json
import math
import os
import pathlib
import time
from typing import Any

import numpy as np

from vcrnn_jax.files import atomic_write

__all__ = ['MetricsWriter', 'read_metrics']

METRICS_FILENAME = 'metrics.jsonl'
TENSORBOARD_DIRNAME = 'tensorboard'

_RESERVED_KEYS = ('step', 'time')
_NON_FINITE = {'nan': math.nan, 'inf': math.inf, '-inf': -math.inf}


def _to_float(name: str, value: Any) -> float:
  """Converts a Python, numpy or jax scalar to a plain float."""
  try:
    array = np.asarray(value)
  except Exception as e:  # jax raises various types for odd inputs.
    raise ValueError(
        f'metric {name!r} must be a real scalar, got {value!r}') from e
  if array.size != 1 or array.dtype.kind not in 'biuf':
    raise ValueError(
        f'metric {name!r} must be a real scalar (Python, numpy or jax), got '
        f'{type(value).__name__} with shape {array.shape} and dtype '
        f'{array.dtype}')
  return float(array.reshape(()))


def _encode(value: float) -> float | str | None:
  if math.isfinite(value):
    return value
  if math.isnan(value):
    return None
  return 'inf' if value > 0 else '-inf'


def _decode(value: Any) -> Any:
  if value is None:
    return math.nan
  if isinstance(value, str) and value in _NON_FINITE:
    return _NON_FINITE[value]
  return value


def _metrics_path(path: str | os.PathLike[str]) -> pathlib.Path:
  path = pathlib.Path(path)
  return path / METRICS_FILENAME if path.is_dir() else path


def read_metrics(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
  """Parses a metrics file written by :class:`MetricsWriter`.

  Args:
    path: the ``metrics.jsonl`` file, or the workdir that contains it.

  Returns:
    One dict per line, in file order: ``step`` (int), ``time`` (float, Unix
    seconds) and the metrics as floats (NaN and infinities restored). A last
    line cut short by a killed process is ignored.

  Raises:
    ValueError: if a line other than a truncated last one is not valid JSON.
  """
  path = _metrics_path(path)
  text = path.read_text(encoding='utf-8')
  lines = text.split('\n')
  records = []
  for number, line in enumerate(lines, start=1):
    if not line.strip():
      continue
    try:
      record = json.loads(line)
    except json.JSONDecodeError as e:
      # Only the last line can be partial (no trailing newline yet).
      if number == len(lines):
        break
      raise ValueError(
          f'{path}: line {number} is not valid JSON ({e.msg}); each line must '
          'be one JSON object') from e
    records.append({k: _decode(v) for k, v in record.items()})
  return records


def _keep_through_step(path: pathlib.Path, resume_step: int) -> int:
  """Rewrites ``path`` keeping lines with step <= ``resume_step``.

  Returns:
    How many lines were dropped.
  """
  kept = []
  dropped = 0
  for line in path.read_text(encoding='utf-8').split('\n'):
    if not line.strip():
      continue
    try:
      keep = json.loads(line)['step'] <= resume_step
    except (json.JSONDecodeError, KeyError, TypeError):
      # A partial line from a killed process: not a consistent record.
      keep = False
    if keep:
      kept.append(line)
    else:
      dropped += 1
  if dropped:
    # Write-then-rename so a crash here cannot lose the kept lines.
    atomic_write(path, ''.join(line + '\n' for line in kept))
  return dropped


class MetricsWriter:
  """Appends metrics to ``metrics.jsonl`` and TensorBoard.

  Example::

    writer = MetricsWriter(workdir, resume_step=restored_step)
    writer.write(step, {'loss': loss, 'error': error})
    writer.close()
  """

  def __init__(self, workdir: str | os.PathLike[str], *,
               resume_step: int | None = None):
    """Opens the metrics log of a run.

    Args:
      workdir: the run's directory (created if missing).
      resume_step: the step of the checkpoint the run resumes from. Lines of
        an earlier attempt with a larger step (logged after that checkpoint,
        and about to be logged again) are removed from ``metrics.jsonl``, and
        TensorBoard is told to discard its events after this step. None for
        a run that does not resume: existing lines are kept and appended to.

    Raises:
      ValueError: if ``resume_step`` is not a non-negative integer or None.
    """
    if resume_step is not None:
      if (isinstance(resume_step, bool)
          or not isinstance(resume_step, (int, np.integer))
          or resume_step < 0):
        raise ValueError(
            'resume_step must be a non-negative integer or None, got '
            f'{resume_step!r}')
      resume_step = int(resume_step)
    self._workdir = pathlib.Path(workdir)
    self._workdir.mkdir(parents=True, exist_ok=True)
    self._path = self._workdir / METRICS_FILENAME
    if self._path.exists():
      if resume_step is not None:
        _keep_through_step(self._path, resume_step)
      _drop_partial_last_line(self._path)
    self._file = open(self._path, 'a', encoding='utf-8')

    self._tb = _EventFile(self._workdir / TENSORBOARD_DIRNAME,
                          purge_step=None if resume_step is None
                          else resume_step + 1)
    self._closed = False

  @property
  def path(self) -> pathlib.Path:
    """The ``metrics.jsonl`` file."""
    return self._path

  def write(self, step: int, metrics: Mapping[str, Any]) -> None:
    """Logs ``metrics`` at ``step``.

    Args:
      step: the training step (a non-negative integer).
      metrics: metric name to value: a Python, numpy or jax real scalar (NaN
        and infinities allowed). The names ``step`` and ``time`` are reserved.

    Raises:
      ValueError: if the writer is closed, ``step`` is not a non-negative
        integer, or a metric has a reserved name or a non-scalar value.
    """
    if self._closed:
      raise ValueError(f'MetricsWriter for {self._path} is closed')
    if (isinstance(step, bool) or not isinstance(step, (int, np.integer))
        or step < 0):
      raise ValueError(f'step must be a non-negative integer, got {step!r}')
    step = int(step)
    values = {}
    for name, value in metrics.items():
      if not isinstance(name, str) or name in _RESERVED_KEYS:
        raise ValueError(
            f'metric names must be strings other than {_RESERVED_KEYS}, got '
            f'{name!r}')
      values[name] = _to_float(name, value)
    now = time.time()
    record = {'step': step, 'time': now}
    record.update((k, _encode(v)) for k, v in values.items())
    self._file.write(json.dumps(record, allow_nan=False) + '\n')
    # Flushed per line: the file is what a crashed run leaves behind. The
    # TensorBoard events too, or a killed run's evaluations since the last
    # timed flush are in metrics.jsonl but not in TensorBoard.
    self._file.flush()
    self._tb.write_scalars(step, now, values)

  def flush(self) -> None:
    """Pushes buffered TensorBoard events to disk."""
    if not self._closed:
      self._file.flush()
      self._tb.flush()

  def close(self) -> None:
    """Flushes and closes both outputs; further writes raise."""
    if self._closed:
      return
    self._closed = True
    self._file.close()
    self._tb.close()

  def __enter__(self) -> MetricsWriter:
    return self

  def __exit__(self, *exc_info) -> None:
    self.close()


class _EventFile:
  """TensorBoard scalars, written and flushed synchronously.

  tensorboardX's ``SummaryWriter`` queues events for a background thread,
  and its ``flush()`` does not wait for that queue: a process killed right
  after logging loses those events. Writing on the caller's thread, then
  flushing, puts every logged scalar on disk before :meth:`write` returns.
  """

  def __init__(self, logdir: pathlib.Path, *, purge_step: int | None):
    # Imported here: tensorboardX pulls in protobuf, which only writers need.
    # pylint: disable=g-import-not-at-top
    from tensorboardX import event_file_writer, summary
    from tensorboardX.proto import event_pb2
    # pylint: enable=g-import-not-at-top
    self._summary = summary
    self._event_pb2 = event_pb2
    logdir.mkdir(parents=True, exist_ok=True)
    self._writer = event_file_writer.EventsWriter(str(logdir / 'events'))
    if purge_step is not None:
      # A START session log at a step makes TensorBoard drop the earlier
      # attempt's events from that step on (as SummaryWriter(purge_step=)).
      self._writer.write_event(event_pb2.Event(
          step=purge_step, session_log=event_pb2.SessionLog(
              status=event_pb2.SessionLog.START)))
    self._writer.flush()

  def write_scalars(self, step: int, wall_time: float,
                    values: Mapping[str, float]) -> None:
    for name, value in values.items():
      self._writer.write_event(self._event_pb2.Event(
          wall_time=wall_time, step=step,
          summary=self._summary.scalar(name, value)))
    self._writer.flush()

  def flush(self) -> None:
    self._writer.flush()

  def close(self) -> None:
    self._writer.close()


def _drop_partial_last_line(path: pathlib.Path) -> None:
  # A killed process can leave a partial last line; appending right after it
  # would glue it to the next record.
  data = path.read_bytes()
  if data and not data.endswith(b'\n'):
    with open(path, 'rb+') as f:
      f.truncate(data.rfind(b'\n') + 1)
