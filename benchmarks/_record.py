"""A benchmark record from a benchmark's runs (see
:mod:`experiments.reports.bench_records` for its layout).

Example::

  runs = _repeat.repeat('flax_rnn', quick=True, repeats=1,
                        affinities=('unpinned',), cpu=None)
  record = make('flax_rnn', runs, command='python -m benchmarks --quick',
                started=now(), seconds=30.0, machine='laptop',
                settings={'quick': True, 'repeats': 1,
                          'affinities': ('unpinned',), 'pinned_cpu': None})
  write(record, 'docs/performance/records')
"""

import datetime
import importlib
import os
import pathlib

from benchmarks import _cli
from experiments.reports import bench_records, manifest, records

REPO = pathlib.Path(__file__).resolve().parents[1]


def now() -> str:
  """The time now, UTC, ISO 8601 to the second."""
  return datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')


def cores() -> int | None:
  """The cores this process may run on (all of the machine's unless
  restricted, as by ``taskset``)."""
  if hasattr(os, 'sched_getaffinity'):
    return len(os.sched_getaffinity(0))
  return os.cpu_count()


def device() -> str:
  """The device the benchmarks run on: its kind and backend (``NVIDIA H200
  (gpu)``); the CPU's model is the machine's ``cpu``."""
  import jax  # pylint: disable=g-import-not-at-top
  return f'{jax.devices()[0].device_kind} ({jax.default_backend()})'


def versions() -> dict:
  """Python's version and those of jax, jaxlib, flax, optax and the other
  packages :func:`experiments.reports.manifest.package_versions` lists."""
  return manifest.package_versions()


def _commit(record_dir) -> tuple[str, bool]:
  try:
    return manifest.tree_commit(REPO, exclude=[record_dir] if record_dir
                               else [])
  except ValueError:
    return 'unknown', False


def make(name: str, runs: dict, *, command: str, started: str,
         seconds: float, settings: dict, machine: str,
         record_dir: str = '') -> dict:
  """The record of benchmark ``name``'s ``runs`` (per affinity, the rows of
  each run), its ratio and time columns read off the module's ``RATIOS``
  and ``TIMES``. Its ``dirty`` ignores ``record_dir``, where the suite
  writes the records of the benchmarks before it."""
  module = importlib.import_module(f'benchmarks.{name}')
  ratios, times = tuple(module.RATIOS), tuple(module.TIMES)
  commit, dirty = _commit(record_dir)
  info = records.machine(machine)
  info['usable_cores'] = cores()
  info['device'] = device()
  return _cli.json_ready({
      'format': bench_records.FORMAT, 'benchmark': name,
      'command': command, 'commit': commit, 'dirty': dirty,
      'machine': info, 'versions': versions(), 'started': started,
      'seconds': round(seconds, 1),
      'settings': {'quick': settings['quick'],
                   'repeats': max(len(r) for r in runs.values()),
                   'affinities': [a for a in runs if runs[a]],
                   'pinned_cpu': settings.get('pinned_cpu'),
                   'in_process': settings.get('in_process', False),
                   'flags': list(settings.get('flags', {}).get(name, [])),
                   # XLA's own flags change what is measured (command
                   # buffers, say): kept where the run had any.
                   **({'xla_flags': os.environ['XLA_FLAGS']}
                      if os.environ.get('XLA_FLAGS') else {})},
      'ratios': list(ratios), 'times': list(times),
      'rows': bench_records.aggregate(_cli.json_ready(runs), ratios, times)})


def write(record: dict, folder) -> pathlib.Path:
  """Writes ``record`` to ``<folder>/<benchmark>.json``; returns the path."""
  path = pathlib.Path(folder) / f'{record["benchmark"]}.json'
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(bench_records.record_text(record), encoding='utf-8')
  return path
