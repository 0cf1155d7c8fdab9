"""Each benchmark in fresh processes, unpinned and pinned, interleaved.

A run is ``python -m benchmarks.<name> [--quick] --json=FILE`` in a new
process. ``unpinned`` runs get the cores this process may use (XLA's thread
pool spreads one large matmul over all of them, as for a user);
``pinned`` runs are confined to one core from the start (the child calls
``os.sched_setaffinity`` before it imports JAX, so the thread pool XLA
creates at start-up inherits it). The two take turns (u, p, u, p, ...) so
that a change in the machine's load hits both alike.

Example::

  runs = repeat('vc_inference', quick=True, repeats=1,
                affinities=('unpinned', 'pinned'), cpu=pin_cpu())
  # {'unpinned': [rows], 'pinned': [rows]}
"""

import collections
from collections.abc import Sequence
import json
import os
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
# The benchmarks are written for JAX's default numerics (float32, numpy's
# promotion); a test run's environment asks for strict ones.
JAX_DEFAULTS = {'JAX_ENABLE_X64': '0',
                'JAX_NUMPY_DTYPE_PROMOTION': 'standard',
                'JAX_NUMPY_RANK_PROMOTION': 'allow'}
_TAIL_LINES = 20


def pin_cpu() -> int | None:
  """The core pinned runs use (the first this process may run on); None
  where the OS cannot pin a process (no ``os.sched_setaffinity``: macOS)."""
  if not hasattr(os, 'sched_setaffinity'):
    return None
  cpus = os.sched_getaffinity(0)
  return min(cpus) if cpus else None


def command(name: str, quick: bool, path, cpu: int | None = None,
            extra: Sequence[str] = ()) -> list[str]:
  """The child's command line: the benchmark with flags ``extra``, its rows
  to ``path``; with a ``cpu``, the child pins itself to it before it imports
  anything else."""
  args = [*extra, f'--json={path}'] + (['--quick'] if quick else [])
  if cpu is None:
    return [sys.executable, '-m', f'benchmarks.{name}', *args]
  return [sys.executable, '-c', _PINNED.format(cpu=cpu, name=name), *args]


# Pinning in the child, not in a preexec_fn: this process runs JAX's
# threads, and forking a threaded process can deadlock.
_PINNED = ('import os, runpy; os.sched_setaffinity(0, {{{cpu}}}); '
           "runpy.run_module('benchmarks.{name}', run_name='__main__', "
           'alter_sys=True)')


def run_once(name: str, quick: bool, cpu: int | None, path,
             extra: Sequence[str] = ()) -> list[dict]:
  """One run of benchmark ``name`` in a fresh process, pinned to ``cpu``
  (None: unpinned); its output goes to this process's stdout.

  Raises:
    RuntimeError: the run failed (with its last line of output).
  """
  env = {**os.environ, **JAX_DEFAULTS}
  tail = collections.deque(maxlen=_TAIL_LINES)
  with subprocess.Popen(command(name, quick, path, cpu, extra), cwd=REPO,
                        env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True) as child:
    for line in child.stdout:
      print(line, end='', flush=True)
      tail.append(line.rstrip())
  if child.returncode:
    last = next((t for t in reversed(tail) if t), '')
    raise RuntimeError(f'benchmarks.{name} failed (exit status '
                       f'{child.returncode}): {last}')
  return json.loads(pathlib.Path(path).read_text(encoding='utf-8'))


def repeat(name: str, *, quick: bool, repeats: int,
           affinities: tuple[str, ...], cpu: int | None,
           extra: Sequence[str] = ()) -> dict[str, list[list[dict]]]:
  """``repeats`` runs of ``name`` (with flags ``extra``) per affinity,
  taking turns; per affinity, the rows of each run."""
  runs = {a: [] for a in affinities}
  with tempfile.TemporaryDirectory(prefix='benchmarks_') as scratch:
    for r in range(repeats):
      for affinity in affinities:
        where = 'unpinned' if affinity == 'unpinned' else f'pinned to CPU {cpu}'
        print(f'\n--- {name}: {where}, run {r + 1} of {repeats} ---',
              flush=True)
        path = pathlib.Path(scratch, f'{affinity}_{r}.json')
        runs[affinity].append(run_once(
            name, quick, cpu if affinity == 'pinned' else None, path, extra))
  return runs
