r"""Run manifests: what a run was, read when it starts.

A binary appends one line to ``<workdir>/manifest.jsonl`` each time it
starts training (a resumed run has one line per segment), before the first
step. The recorder (``experiments.record``) copies those lines into the run's
record instead of reading its own environment, so a record says what trained
the run, not what recorded it.

============  ================================================================
key           what
============  ================================================================
``format``    :data:`FORMAT`
``started``   Unix time of the start
``command``   the exact command line, as a user types it
                (``python -m experiments.act_parity --tau=0.01``)
``argv``      the arguments after the program, as given
``commit``    HEAD of the source tree the binary ran from (None outside git)
``dirty``     whether tracked files differed from ``commit``
``versions``  Python and :data:`PACKAGES`
``device``    JAX's backend, device kind and count
``cpu``       CPU model, cores, memory and the instruction sets that change
              the code XLA emits (:data:`ISA_FLAGS` found in ``/proc/cpuinfo``)
``env``       the environment variables that change XLA's code or JAX's
              numerics (:data:`ENV_KEYS`), where set
``load``      the machine's load averages over 1, 5 and 15 minutes as the
              run starts (what else was running: a run that started at a
              load near 0 ran alone, as far as its start can tell; None
              where the system does not report it)
``data``      per data file the run reads: its path and sha256
``flags``     every flag value of the binary at that start, by name (the
              binaries add it; :func:`vcrnn_jax.papers.runs.load_run`
              rebuilds the run from it)
============  ================================================================

Example::

  line = manifest.capture(['--tau=0.01'], module='experiments.act_parity',
                          tree='.', data_paths=[])
  manifest.append('runs/act_parity/seed=0', line)
  manifest.read('runs/act_parity/seed=0')[0]['command']
"""

from collections.abc import Iterable, Mapping, Sequence
import hashlib
import importlib.metadata
import json
import os
import pathlib
import platform
import shlex
import subprocess
import time
from typing import Any

from vcrnn_jax.files import PathLike

__all__ = [
    'FORMAT',
    'FILE',
    'PACKAGES',
    'ISA_FLAGS',
    'ENV_KEYS',
    'data_digests',
    'cpu_info',
    'device_info',
    'load_average',
    'package_versions',
    'tree_commit',
    'source_tree',
    'command_line',
    'capture',
    'append',
    'read',
    'problems',
]

FORMAT = 1
FILE = 'manifest.jsonl'
# Packages whose versions can move a result (XLA's code generation is in
# jaxlib; the initialisers in flax; the optimizers in optax).
PACKAGES = ('jax', 'jaxlib', 'flax', 'optax', 'numpy', 'orbax-checkpoint')
# Instruction sets that change the kernels XLA:CPU emits (vector width,
# fused multiply-add, bf16 and int8 dot products, matrix tiles): two CPUs
# that differ in these can round differently.
ISA_FLAGS = ('sse4_2', 'avx', 'avx2', 'fma', 'f16c', 'avx512f', 'avx512bw',
             'avx512vl', 'avx512dq', 'avx512_bf16', 'avx512_vnni',
             'avx512_fp16', 'amx_tile', 'amx_bf16', 'amx_int8')
# Environment variables that change XLA's code or JAX's numerics.
ENV_KEYS = ('XLA_FLAGS', 'JAX_ENABLE_X64', 'JAX_DEFAULT_MATMUL_PRECISION',
            'JAX_PLATFORMS', 'CUDA_VISIBLE_DEVICES', 'OMP_NUM_THREADS')
_CHUNK = 1 << 20


def sha256_file(path: PathLike) -> str:
  h = hashlib.sha256()
  with open(path, 'rb') as f:
    for block in iter(lambda: f.read(_CHUNK), b''):
      h.update(block)
  return h.hexdigest()


def data_digests(paths: Iterable[PathLike]) -> list[dict]:
  """``{'path', 'sha256'}`` per file: each of ``paths`` that is a file, and
  every file under each that is a folder (sorted); missing paths skipped
  (the binary reports them itself)."""
  out = []
  for root in paths:
    root = pathlib.Path(root).expanduser()
    files = ([root] if root.is_file() else
             sorted(p for p in root.rglob('*') if p.is_file())
             if root.is_dir() else [])
    out += [{'path': str(p), 'sha256': sha256_file(p)} for p in files]
  return out


def cpu_info() -> dict:
  """The CPU model, cores, memory (GiB) and :data:`ISA_FLAGS` present."""
  model, flags = platform.processor() or platform.machine() or None, set()
  found = False
  try:
    with open('/proc/cpuinfo', encoding='utf-8') as f:
      for line in f:
        key, _, rest = line.partition(':')
        key = key.strip()
        if key == 'model name' and not found:
          model, found = rest.strip(), True
        elif key == 'flags' and not flags:
          flags = set(rest.split())
  except OSError:
    pass
  try:
    memory = round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
                   / 2**30, 1)
  except (AttributeError, ValueError, OSError):
    memory = None
  return {'model': model, 'cores': os.cpu_count(), 'memory_gib': memory,
          'isa': [f for f in ISA_FLAGS if f in flags]}


def device_info() -> dict:
  """JAX's default backend, its first device's kind and the device count."""
  import jax  # pylint: disable=g-import-not-at-top
  devices = jax.devices()
  return {'platform': devices[0].platform,
          'kind': devices[0].device_kind, 'count': len(devices)}


def package_versions() -> dict:
  """Python's version and those of :data:`PACKAGES` installed here."""
  out = {'python': platform.python_version()}
  for name in PACKAGES:
    try:
      out[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      out[name] = None
  return out


def tree_commit(tree, exclude=()) -> tuple[str, bool]:
  """``(commit, dirty)`` of the git tree at ``tree``: HEAD's full hash and
  whether tracked files differ from it, outside the folders ``exclude``
  (paths inside ``tree``: a run's own output folder, whose records it
  rewrites as it goes).

  Raises:
    ValueError: ``tree`` is not in a git work tree.
  """
  def git(*args):
    return subprocess.run(['git', '-C', str(tree), *args], check=True,
                          capture_output=True, text=True).stdout.strip()
  root = pathlib.Path(tree).resolve()
  skip = []
  for path in (pathlib.Path(p).resolve() for p in exclude):
    if path.is_relative_to(root):
      skip.append(f':(exclude){path.relative_to(root)}')
  try:
    commit = git('rev-parse', 'HEAD')
    dirty = bool(git('status', '--porcelain', '--untracked-files=no',
                     '--', '.', *skip))
  except (OSError, subprocess.CalledProcessError) as e:
    raise ValueError(f'{tree} is not a git work tree (git: '
                     f'{getattr(e, "stderr", e)!s}'.strip() + ')') from None
  return commit, dirty


def source_tree(tree: PathLike) -> tuple[str | None, bool | None]:
  """``(commit, dirty)`` of the git work tree holding ``tree``
  (:func:`tree_commit`); ``(None, None)``
  outside git (an installed package)."""
  try:
    return tree_commit(tree)
  except ValueError:
    return None, None


def command_line(module: str, argv: Sequence[str]) -> str:
  """``python -m <module> <argv...>``, quoted as a shell reads it."""
  return shlex.join(['python', '-m', module, *argv])


def capture(argv: Sequence[str], *, module: str, tree: PathLike,
            data_paths: Iterable[PathLike] = (),
            versions: Mapping[str, Any] | None = None) -> dict:
  """The manifest line of a run starting now (see the module doc).

  Args:
    argv: the command's arguments after the program.
    module: the binary's module (``experiments.act_parity``).
    tree: the root of the source tree the binary runs from (its dirty
      state covers every tracked file under it).
    data_paths: the data files or folders the run reads.
    versions: Python's and the packages' versions (default: this
      interpreter's, :func:`package_versions`).
  """
  commit, dirty = source_tree(tree)
  env = {k: os.environ[k] for k in ENV_KEYS if k in os.environ}
  return {'format': FORMAT, 'started': round(time.time(), 1),
          'command': command_line(module, argv), 'argv': list(argv),
          'commit': commit, 'dirty': dirty,
          'versions': dict(versions or package_versions()),
          'device': device_info(), 'cpu': cpu_info(), 'env': env,
          'load': load_average(), 'data': data_digests(data_paths)}


def load_average() -> list[float] | None:
  """The load averages over 1, 5 and 15 minutes, rounded; None where the
  system does not report them."""
  try:
    return [round(x, 2) for x in os.getloadavg()]
  except (AttributeError, OSError):
    return None


def append(workdir: PathLike, line: Mapping[str, Any]) -> pathlib.Path:
  """Adds ``line`` to ``<workdir>/manifest.jsonl`` (one line per start)."""
  path = pathlib.Path(workdir) / FILE
  with open(path, 'a', encoding='utf-8') as f:
    f.write(json.dumps(line, sort_keys=True, allow_nan=False) + '\n')
  return path


def read(workdir: PathLike) -> list[dict]:
  """The run's starts, oldest first; ``[]`` when it has no manifest."""
  path = pathlib.Path(workdir) / FILE
  if not path.is_file():
    return []
  return [json.loads(line) for line in path.read_text().splitlines()
          if line.strip()]


def problems(starts: Sequence[Mapping[str, Any]]) -> list[str]:
  """Why the starts of one run do not make a clean record: none at all, a
  dirty tree, no commit, or segments on other code, machines or versions."""
  if not starts:
    return [f'no {FILE}: the run was not started by a binary that writes '
            'one, so what trained it is unknown']
  out = []
  first = starts[0]
  for i, s in enumerate(starts):
    where = f'start {i + 1} of {len(starts)}'
    if s.get('commit') is None:
      out.append(f'{where} ran outside a git tree (no commit)')
    elif s.get('dirty'):
      out.append(f'{where} ran from a tree with uncommitted changes '
                 f'(commit {s["commit"][:7]})')
    for key in ('commit', 'versions', 'cpu', 'device', 'env'):
      if i and s.get(key) != first.get(key):
        out.append(f'{where} differs from the first in its {key}')
  return out
