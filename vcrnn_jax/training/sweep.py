"""Resumable grids of training runs with CSV results: the generic machinery.

A sweep trains many runs one after the other in one process (each in its own
workdir under the sweep's), keeps one CSV row per run (and per difficulty),
keyed by the run's identity and replaced, never duplicated, and checks on
every invocation that the sweep's shared settings did not change
(``sweep.json``), so that one CSV never mixes runs of different models.
The papers' grids and seed tables (:mod:`vcrnn_jax.papers`) build on it.
"""

from collections.abc import Callable, Mapping, Sequence
import csv
import json
import pathlib
from typing import Any

import jax

from vcrnn_jax.files import atomic_write
from vcrnn_jax.training.checkpoint import Checkpointer
from vcrnn_jax.training.metric_writer import read_metrics

__all__ = [
    'MANIFEST_FILENAME',
    'RUN_INFO_FILENAME',
    'DIVERGED_FILENAME',
    'parse_ints',
    'check_manifest',
    'read_rows',
    'run_key',
    'upsert_rows',
    'enable_compilation_cache',
    'latest_step',
    'add_wall_seconds',
]

MANIFEST_FILENAME = 'sweep.json'
RUN_INFO_FILENAME = 'sweep_run.json'
DIVERGED_FILENAME = 'diverged.txt'
# The identity of a run in the CSVs (the ACT grid's; other sweeps pass theirs).


def parse_ints(name: str, text: str, low: int = 0) -> tuple[int, ...]:
  """Parses comma-separated integers and inclusive ranges (``0-19,25``).

  Args:
    name: what the integers are, for messages.
    text: the text, e.g. ``'0,1,2'`` or ``'0-19'``.
    low: the smallest allowed value.

  Returns:
    The sorted, de-duplicated integers.

  Raises:
    ValueError: an empty list, a bad number or range, or a value below
      ``low``; the message names the bad part.
  """
  values = set()
  for part in text.split(','):
    part = part.strip()
    first, sep, last = part.partition('-')
    try:
      lo = int(first)
      hi = int(last) if sep else lo
    except ValueError:
      raise ValueError(f'{name}: {part!r} is not an integer or a range a-b '
                       f'(e.g. 0,1,2 or 0-19).') from None
    if lo > hi:
      raise ValueError(f'{name}: range {part!r} is empty (a-b needs a <= b).')
    if lo < low:
      raise ValueError(f'{name} must be integers >= {low}, got {part!r}.')
    values.update(range(lo, hi + 1))
  return tuple(sorted(values))


def check_manifest(workdir, settings: Mapping[str, Any],
                   mutable: Sequence[str] = (), *, chief: bool = True) -> None:
  """Writes ``sweep.json``, or checks that ``settings`` match the one there.

  Args:
    workdir: the sweep's folder.
    settings: JSON-able settings every run shares.
    mutable: the settings that may change between invocations (a longer
      ``steps`` continues every run, evaluation settings change no number).
    chief: whether this process writes the file (in a run of several
      processes every process checks and process 0 alone writes).

  Raises:
    ValueError: a setting that changes the numbers (model, task, batch size,
      learning rate, ...) differs from the one the workdir was made with.
  """
  path = pathlib.Path(workdir) / MANIFEST_FILENAME
  current = json.loads(json.dumps(dict(settings)))
  if path.exists():
    try:
      saved = json.loads(path.read_text(encoding='utf-8'))
    except json.JSONDecodeError as e:
      raise ValueError(f'{path} is not valid JSON ({e.msg}); delete it to '
                       'accept the current settings.') from None
    diffs = [f'{k}={saved.get(k)!r} (now {current[k]!r})' for k in current
             if k not in mutable and saved.get(k) != current[k]]
    if diffs:
      raise ValueError(
          f'{path.parent} holds a sweep made with other settings: '
          f'{", ".join(diffs)}; use another workdir, or the same settings.')
  if chief:
    atomic_write(path, json.dumps(current, indent=2, sort_keys=True) + '\n')


# ----------------------------------------------------------------------------
# CSV files.


def _parse_bool(text: str) -> bool:
  lowered = str(text).strip().lower()
  if lowered in ('true', '1'):
    return True
  if lowered in ('false', '0'):
    return False
  raise ValueError(f'not a boolean: {text!r}')


def _parse_optional_float(text: str) -> float | None:
  return None if str(text).strip() in ('', 'None') else float(text)


_PARSERS: Mapping[str, Callable[[str], Any]] = {
    'task': str, 'act': _parse_bool, 'tau': _parse_optional_float,
    'seed': int, 'steps': int, 'difficulty': int, 'model': str, 'cell': str,
    'hidden_size': int, 'settings': str,
}


def _format(value: Any) -> str:
  if value is None:
    return ''
  if isinstance(value, bool):
    return 'true' if value else 'false'
  if isinstance(value, float):
    return repr(value)   # Shortest text that reads back as the same float.
  return str(value)


def read_rows(path) -> list[dict]:
  """Reads ``results.csv`` or ``difficulty.csv`` with typed values.

  ``act`` becomes a bool, ``tau`` a float (None for no-ACT rows), ``seed``,
  ``steps``, ``difficulty`` and ``hidden_size`` ints, ``model`` and ``cell``
  strings, every other column a float.

  Args:
    path: the CSV file.

  Returns:
    The rows as dicts, in file order; ``[]`` if the file does not exist.

  Raises:
    ValueError: a value that cannot be parsed (the message names the file and
      line).
  """
  path = pathlib.Path(path)
  if not path.exists():
    return []
  rows = []
  with open(path, newline='', encoding='utf-8') as f:
    for line, raw in enumerate(csv.DictReader(f), start=2):
      try:
        rows.append({k: _PARSERS.get(k, float)(v) for k, v in raw.items()})
      except (TypeError, ValueError) as e:
        raise ValueError(f'{path}: line {line}: {e}') from None
  return rows


def _sort_value(value: Any):
  # None (a no-ACT row's tau) sorts first; bools and numbers by value.
  return (0, 0.0) if value is None else (1, value)


def run_key(row: Mapping[str, Any], key: Sequence[str]) -> tuple:
  """The identity of a row or run: its values of the ``key`` columns."""
  return tuple(row[k] for k in key)


def upsert_rows(path, fields: Sequence[str], rows: Sequence[Mapping[str, Any]],
                *, key: Sequence[str], chief: bool = True) -> None:
  """Writes ``rows`` into the CSV ``path``, replacing the rows of their runs.

  Every existing row with the same ``key`` values as one of ``rows`` is
  dropped first (so a run's difficulty rows are replaced as a
  set), then the file is rewritten sorted by run (and difficulty).

  Args:
    path: the CSV file (created with a header if missing).
    fields: its columns, in order.
    rows: the new rows (dicts with at least ``fields``).
    key: the columns that identify a run (ACT's sweep: task, act, tau,
      seed; a paper's table: its model, settings and seed).
    chief: whether this process writes (False: return at once; in a run of
      several processes only process 0 writes).

  A file written before columns were appended to ``fields`` is extended:
  its rows get NaN in the new columns ('' in text columns). Any other
  difference of columns is an error.
  """
  if not chief:
    return
  path = pathlib.Path(path)
  existing = read_rows(path)
  if existing:
    old = list(existing[0])
    if old != list(fields)[:len(old)]:
      raise ValueError(f'{path} has columns {old}, expected {list(fields)}; '
                       'move it away to start a new file.')
    for r in existing:
      for k in fields[len(old):]:
        r[k] = '' if _PARSERS.get(k) is str else float('nan')
  replaced = {run_key(r, key) for r in rows}
  kept = [r for r in existing if run_key(r, key) not in replaced]
  order = tuple(key) + (('difficulty',) if 'difficulty' in fields else ())
  merged = sorted(kept + [dict(r) for r in rows],
                  key=lambda r: tuple(_sort_value(r.get(k)) for k in order))
  lines = [','.join(fields)]
  lines += [','.join(_format(r[k]) for k in fields) for r in merged]
  atomic_write(path, '\n'.join(lines) + '\n')


# ----------------------------------------------------------------------------
# Runs.


def enable_compilation_cache(directory, *, min_compile_seconds: float = 0.1
                             ) -> None:
  """Turns on JAX's persistent compilation cache in ``directory``.

  Every run of a sweep builds new closures, so JAX's in-memory caches never
  hit; but runs that differ only in their seed lower to the same XLA program
  (and ACT runs share their evaluation programs whatever their tau), which
  the persistent cache, keyed by the program's hash, compiles once. On a
  2-core CPU this takes a tiny run from ~15 s to ~1.5 s, and a rerun of the
  sweep compiles nothing.

  This sets global JAX options: call it once, before anything is compiled.

  Args:
    directory: the cache folder (created if missing).
    min_compile_seconds: programs faster to compile than this are not stored.
  """
  directory = pathlib.Path(directory)
  directory.mkdir(parents=True, exist_ok=True)
  jax.config.update('jax_compilation_cache_dir', str(directory))
  jax.config.update('jax_persistent_cache_min_compile_time_secs',
                    float(min_compile_seconds))


def latest_step(run_dir: pathlib.Path) -> int | None:
  """The run's latest complete checkpoint step (None: not started)."""
  ckpt_dir = run_dir / 'checkpoints'
  if not ckpt_dir.is_dir():   # Checkpointer would create it.
    return None
  checkpointer = Checkpointer(ckpt_dir)
  try:
    return checkpointer.latest_step()
  finally:
    checkpointer.close()


def read_wall_seconds(run_dir: pathlib.Path) -> float:
  path = run_dir / RUN_INFO_FILENAME
  if not path.exists():
    return 0.0
  try:
    return float(json.loads(path.read_text(encoding='utf-8'))['wall_seconds'])
  except (json.JSONDecodeError, KeyError, TypeError, ValueError):
    return 0.0   # A damaged side file only loses the timing.


def add_wall_seconds(run_dir: pathlib.Path, seconds: float, *,
                     chief: bool = True) -> None:
  """Adds ``seconds`` to the run's wall time if ``chief`` (process 0)."""
  if not chief:
    return
  run_dir.mkdir(parents=True, exist_ok=True)
  total = read_wall_seconds(run_dir) + seconds
  atomic_write(run_dir / RUN_INFO_FILENAME,
                json.dumps({'wall_seconds': total}) + '\n')


def final_metrics_from_log(run_dir: pathlib.Path, step: int
                            ) -> dict | None:
  try:
    records = read_metrics(run_dir)
  except (FileNotFoundError, ValueError):
    return None
  final = [r for r in records if r.get('step') == step]
  return final[-1] if final else None


