"""Running an experiment binary from a test: in this process, or as a user.

:func:`run` runs ``experiments.<module>`` with ``args`` and returns its exit
status and what it printed. By default in this process: the binary's module
is imported afresh, its flags parsed from ``args`` and its ``main`` run by
``experiments._common.run_in_process``, the code ``python -m`` runs after
absl's start-up, so flags, one-line errors, resume and the files a run
leaves are those of the command line, without the seconds a new Python
process spends importing JAX. ``process=True`` starts ``python -m
experiments.<module>`` instead, for what only a process shows (a smoke run
of each binary, SIGKILL, several processes or devices); :func:`start` does
so without waiting.
"""

import contextlib
import dataclasses
import importlib
import io
import os
import pathlib
import subprocess
import sys

from absl import app
from absl.testing import flagsaver
import jax

REPO = pathlib.Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class Result:
  """How a binary ended: its exit status and its two streams."""
  returncode: int
  stdout: str
  stderr: str


def environment(env=None) -> dict:
  """The environment of a binary's process: this one's, and ``env``."""
  full = dict(os.environ)
  full.update(env or {})
  full['PYTHONPATH'] = os.pathsep.join(
      [str(REPO)] + [p for p in [full.get('PYTHONPATH')] if p])
  return full


def start(module: str, args, *, cwd=REPO, env=None,
          **popen) -> subprocess.Popen:
  """Starts ``python -m experiments.<module> *args``; returns the process."""
  return subprocess.Popen(
      [sys.executable, '-m', f'experiments.{module}', *map(str, args)],
      cwd=cwd, env=environment(env), **popen)


def run(module: str, args, *, cwd=None, env=None, process: bool = False,
        timeout: float = 300) -> Result:
  """Runs binary ``module`` with ``args`` to its end (see module docstring).

  Args:
    module: the binary, e.g. ``'act_parity'``.
    args: its command-line arguments.
    cwd: the working directory (default: the repository's root).
    env: environment variables to set for the run.
    process: start a Python process, as a user does.
    timeout: seconds a process may take (``process=True``).
  """
  args = [str(a) for a in args]
  if process:
    proc = start(module, args, cwd=cwd or REPO, env=env,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
      out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
      proc.kill()
      proc.communicate()
      raise
    return Result(proc.returncode, out, err)
  return _in_process(module, args, cwd=cwd or REPO, env=env)


@contextlib.contextmanager
def _environ(env):
  saved = dict(os.environ)
  os.environ.update(env or {})
  try:
    yield
  finally:
    os.environ.clear()
    os.environ.update(saved)


def _forget_binaries() -> None:
  # The next import defines the binary's flags again, with their defaults.
  # The results machinery defines no flag: it stays, as the library does.
  for name in [m for m in sys.modules
               if (m == 'experiments' or m.startswith('experiments.'))
               and not m.startswith('experiments.reports')]:
    del sys.modules[name]


@contextlib.contextmanager
def _attributes(obj, **values):
  saved = {k: getattr(obj, k) for k in values}
  for k, v in values.items():
    setattr(obj, k, v)
  try:
    yield
  finally:
    for k, v in saved.items():
      setattr(obj, k, v)


@contextlib.contextmanager
def _main_module(binary):
  # --help prints the docstring of __main__, the binary under python -m.
  saved = sys.modules['__main__']
  sys.modules['__main__'] = binary
  try:
    yield
  finally:
    sys.modules['__main__'] = saved


@contextlib.contextmanager
def _jax_defaults():
  # A binary runs under JAX's defaults: float32 (the suite turns on x64 for
  # its own gradient checks; the golden metrics were recorded without it).
  saved = jax.config.jax_enable_x64
  jax.config.update('jax_enable_x64', False)
  try:
    yield
  finally:
    jax.config.update('jax_enable_x64', saved)


def _in_process(module: str, args, *, cwd, env) -> Result:
  name = f'experiments.{module}'
  app.define_help_flags()       # --help and friends, as absl's app defines
  out, err = io.StringIO(), io.StringIO()
  with contextlib.ExitStack() as stack:
    # Undoes everything below: the binary's flags are deleted (flagsaver
    # removes flags defined meanwhile) and its modules forgotten.
    stack.enter_context(flagsaver.flagsaver())
    stack.callback(_forget_binaries)
    _forget_binaries()
    stack.enter_context(_environ(env))
    stack.enter_context(contextlib.chdir(cwd))
    # absl names the flags of the main module by sys.argv[0]: imported, the
    # binary is the module of that name.
    stack.enter_context(_attributes(sys, argv=[name, *args]))
    stack.enter_context(_jax_defaults())
    binary = importlib.import_module(name)
    common = importlib.import_module('experiments._common')
    stack.enter_context(_main_module(binary))
    stack.enter_context(contextlib.redirect_stdout(out))
    stack.enter_context(contextlib.redirect_stderr(err))
    try:
      common.run_in_process(binary.main, [name, *args])
      status = 0
    except SystemExit as e:
      status = (0 if e.code is None else e.code if isinstance(e.code, int)
                else 1)
  return Result(status, out.getvalue(), err.getvalue())
