"""Shared test configuration.

float64 is enabled for the whole suite (as equinox's tests do) so gradient
checks can run in double precision; library code always states its dtypes
explicitly, and the float32 paths are tested by passing float32 inputs.

Promotion is strict, as in equinox's tests: mixing dtypes (``float32 +
float64``, ``int32 + float32`` arrays) or broadcasting arrays of different
ranks implicitly is an error, so library code says what it means. The
environment variables carry both settings into the binaries the tests run
as subprocesses.

Tests marked ``slow`` start Python processes (setup.cfg); ``-m "not slow"``
is the quick suite.
"""

import atexit
import functools
import gc
import os
import pathlib
import shutil
import tempfile

os.environ.setdefault('JAX_NUMPY_DTYPE_PROMOTION', 'strict')
os.environ.setdefault('JAX_NUMPY_RANK_PROMOTION', 'raise')
# The tests compile hundreds of tiny programs and run each a few times, so
# their time is mostly XLA's: its CPU backend without LLVM's optimisations
# compiles them 20-35% faster. The numbers are the same maths (every golden
# and reference comparison holds); the binaries the tests start as
# processes inherit it, except where a test sets XLA_FLAGS itself.
os.environ['XLA_FLAGS'] = ' '.join(
    [os.environ.get('XLA_FLAGS', '')]
    + [f for f in ('--xla_backend_optimization_level=0',
                   '--xla_llvm_disable_expensive_passes=true')
       if f not in os.environ.get('XLA_FLAGS', '')]).strip()

# One XLA compilation cache for the run, shared by the binaries the tests
# start (they inherit the environment): a resumed or
# second-process binary loads the train step its first run compiled instead
# of compiling it again (two of the binary tests: 137 s -> 87 s on 2 cores).
# The cache writes entries non-atomically, so a process that reads one while
# another writes it warns and compiles; the warning is silenced so that the
# binaries' one-line errors stay one line.
if 'JAX_COMPILATION_CACHE_DIR' not in os.environ:
  _cache = tempfile.mkdtemp(prefix='vcrnn_jax_xla_cache_')
  atexit.register(functools.partial(shutil.rmtree, _cache, True))
  os.environ['JAX_COMPILATION_CACHE_DIR'] = _cache
  os.environ.setdefault('JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS', '0.2')
  os.environ['PYTHONWARNINGS'] = ','.join(
      w for w in (os.environ.get('PYTHONWARNINGS'), 'ignore:Error reading '
                  'persistent compilation cache entry') if w)

import jax  # pylint: disable=g-import-not-at-top
import pytest  # pylint: disable=g-import-not-at-top

jax.config.update('jax_enable_x64', True)
# The cache above is for the binaries: the test processes themselves neither
# read nor write it. Serializing an executable for it crashed an xdist
# worker (SIGSEGV in ``executable.serialize()``, jaxlib 0.10.2, in a test
# that passes alone); without it the suite took 23 min instead of 18.7 on
# 2 cores.
jax.config.update('jax_enable_compilation_cache', False)
jax.config.update('jax_numpy_dtype_promotion', 'strict')
jax.config.update('jax_numpy_rank_promotion', 'raise')

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = pathlib.Path(
    os.environ.get('VCRNN_JAX_SHARED_DATA',
                   REPO_ROOT.parent / 'shared' / 'data'))


@pytest.fixture(scope='session')
def shared_data_dir() -> pathlib.Path:
  """``../shared/data`` (the real corpora); skips the test when it is absent."""
  if not SHARED_DATA.is_dir():
    pytest.skip(f'real corpora not found at {SHARED_DATA}')
  return SHARED_DATA


@pytest.fixture(scope='session')
def repo_root() -> pathlib.Path:
  return REPO_ROOT


@pytest.fixture(autouse=True, scope='module')
def _release_compiled_programs():
  """Drops JAX's compiled programs after each test module.

  An xdist worker lives for the whole suite, and every jitted function a
  module compiles stays in JAX's caches: over the suite a worker grew to
  about 6 GB by mid-run on 2 cores. Programs are rarely shared across
  modules, so clearing costs little compile time (the linen, nnx and cells
  modules: 2.5 GB peak before, 1.9 GB after, no slower).
  """
  yield
  jax.clear_caches()
  gc.collect()
