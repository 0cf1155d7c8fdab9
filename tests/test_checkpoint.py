"""Tests for vcrnn_jax.training.checkpoint."""

import logging
import os
import pathlib
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from vcrnn_jax.training.checkpoint import Checkpointer

_LOGGER = 'vcrnn_jax.training.checkpoint'


def _state(offset: float = 0.0):
  params = {
      'w': jnp.arange(12, dtype=jnp.float32).reshape(3, 4) + offset,
      'b': jnp.array([0.5, np.nan, -0.0, np.inf], dtype=jnp.float32),
  }
  opt_state = optax.adam(1e-3).init(params)
  return {
      'params': params,
      'opt': opt_state,
      'step': 7,
      'lr': 0.25,
      'rng': jax.random.PRNGKey(3),  # uint32[2]
      'typed_rng': jax.random.split(jax.random.key(1), 2),
      'counts': np.array([1, 2, 3], dtype=np.int32),
  }


def _assert_bit_identical(restored, expected):
  assert jax.tree.structure(restored) == jax.tree.structure(expected)
  for got, want in zip(jax.tree.leaves(restored), jax.tree.leaves(expected)):
    if isinstance(want, (int, float)):
      assert type(got) is type(want) and got == want
      continue
    if jax.dtypes.issubdtype(want.dtype, jax.dtypes.prng_key):
      assert got.dtype == want.dtype
      got, want = jax.random.key_data(got), jax.random.key_data(want)
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def _unreadable_warnings(caplog):
  return [r for r in caplog.records
          if r.name == _LOGGER and r.levelno == logging.WARNING]


def test_empty_directory(tmp_path):
  ckpt = Checkpointer(tmp_path / 'checkpoints')
  assert (tmp_path / 'checkpoints').is_dir()
  assert ckpt.latest_step() is None
  assert ckpt.all_steps() == []
  assert ckpt.restore_latest(_state()) is None
  ckpt.close()


def test_round_trip_is_bit_identical_and_quiet(tmp_path, capfd):
  state = _state()
  with Checkpointer(tmp_path) as ckpt:
    ckpt.save(10, state)
    step, restored = ckpt.restore_latest(state)
  assert step == 10
  _assert_bit_identical(restored, state)
  # Optax's NamedTuple states come back as NamedTuples.
  assert type(restored['opt'][0]) is type(state['opt'][0])
  assert isinstance(restored['params']['w'], np.ndarray)
  out, err = capfd.readouterr()
  assert out == '' and err == '', 'Orbax logging should be silenced'


def test_restore_with_abstract_target_in_new_checkpointer(tmp_path):
  state = _state()
  with Checkpointer(tmp_path) as ckpt:
    ckpt.save(3, state)
  abstract = jax.tree.map(
      lambda x: x if isinstance(x, (int, float)) else jax.ShapeDtypeStruct(
          np.shape(x), x.dtype), state)
  with Checkpointer(tmp_path) as ckpt:
    step, restored = ckpt.restore_latest(abstract)
  assert step == 3
  _assert_bit_identical(restored, state)


def test_unusual_leaves(tmp_path):
  # bfloat16 (an ml_dtypes type), empty arrays (which Orbax refuses to
  # write), numpy scalars and bools.
  state = {
      'half': jnp.arange(5, dtype=jnp.bfloat16) / 3,
      'empty': jnp.zeros((0, 3), jnp.float32),
      'scalar': np.float32(2.5),
      'flag': True,
  }
  with Checkpointer(tmp_path) as ckpt:
    ckpt.save(1, state)
    _, restored = ckpt.restore_latest(state)
    assert restored['empty'].shape == (0, 3)
    _assert_bit_identical(restored, state)
    ckpt.save(2, {'only_empty': np.zeros(0, np.int32)})
    step, restored = ckpt.restore_latest({'only_empty': np.zeros(0, np.int32)})
    assert step == 2 and restored['only_empty'].dtype == np.int32


def test_restore_casts_to_target_dtype(tmp_path):
  with Checkpointer(tmp_path) as ckpt:
    ckpt.save(1, {'x': np.array([1.5, 2.5], np.float32)})
    _, restored = ckpt.restore_latest(
        {'x': jax.ShapeDtypeStruct((2,), np.float64)})
  assert restored['x'].dtype == np.float64
  np.testing.assert_array_equal(restored['x'], [1.5, 2.5])


def test_keeps_last_max_to_keep(tmp_path):
  with Checkpointer(tmp_path, max_to_keep=2) as ckpt:
    for step in (100, 200, 300, 400):
      ckpt.save(step, _state(step))
    assert ckpt.all_steps() == [300, 400]
    assert ckpt.latest_step() == 400
  with Checkpointer(tmp_path, max_to_keep=2) as ckpt:
    assert ckpt.all_steps() == [300, 400]
    step, restored = ckpt.restore_latest(_state())
  assert step == 400
  _assert_bit_identical(restored, _state(400))
  assert sorted(os.listdir(tmp_path)) == ['300', '400']


def test_save_step_order(tmp_path):
  with Checkpointer(tmp_path) as ckpt:
    ckpt.save(200, _state(1.0))
    # Re-saving an existing step keeps the first (immutable) checkpoint.
    ckpt.save(200, _state(2.0))
    _, restored = ckpt.restore_latest(_state())
    _assert_bit_identical(restored, _state(1.0))
    with pytest.raises(ValueError, match='step must be larger.*200.*got 100'):
      ckpt.save(100, _state())


def test_invalid_arguments(tmp_path):
  with pytest.raises(ValueError, match='max_to_keep.*got 0'):
    Checkpointer(tmp_path, max_to_keep=0)
  with Checkpointer(tmp_path) as ckpt:
    with pytest.raises(ValueError, match='step.*got -1'):
      ckpt.save(-1, _state())
    with pytest.raises(ValueError, match=r"\['name'\].*unsupported type str"):
      ckpt.save(1, {'name': 'abc'})
  with pytest.raises(ValueError, match='closed'):
    ckpt.save(2, _state())


def test_structure_mismatch_raises_without_fallback(tmp_path):
  with Checkpointer(tmp_path) as ckpt:
    ckpt.save(1, _state())
    ckpt.save(2, _state())
    target = dict(_state(), extra=np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"does not match.*\['extra'\]"):
      ckpt.restore_latest(target)
    bad_shape = dict(_state(), counts=np.zeros(4, np.int32))
    with pytest.raises(ValueError, match=r"\['counts'\] has shape \(4,\)"):
      ckpt.restore_latest(bad_shape)
    assert ckpt.all_steps() == [1, 2]


def _files(step_dir: pathlib.Path, item: str):
  return sorted(p for p in (step_dir / item).rglob('*') if p.is_file())


def _truncate_data(step_dir):
  for path in _files(step_dir, 'state/d'):
    with open(path, 'r+b') as f:
      f.truncate(path.stat().st_size // 2)


def _garbage_data(step_dir):
  rng = np.random.default_rng(0)
  for path in _files(step_dir, 'state/d'):
    path.write_bytes(rng.bytes(path.stat().st_size))


def _delete_manifest(step_dir):
  (step_dir / 'state' / 'manifest.ocdbt').unlink()


def _garbage_meta(step_dir):
  for path in _files(step_dir, 'meta'):
    path.write_bytes(b'{"format": "vcrnn_jax.checkp')


@pytest.mark.parametrize('corrupt', [
    _truncate_data, _garbage_data, _delete_manifest, _garbage_meta
])
def test_corrupt_latest_falls_back(tmp_path, caplog, capfd, corrupt):
  with Checkpointer(tmp_path) as ckpt:
    ckpt.save(200, _state(200))
    ckpt.save(400, _state(400))
  assert _files(tmp_path / '400', 'state/d')
  corrupt(tmp_path / '400')

  with caplog.at_level(logging.WARNING), Checkpointer(tmp_path) as ckpt:
    step, restored = ckpt.restore_latest(_state())
    assert step == 200
    _assert_bit_identical(restored, _state(200))
    [record] = _unreadable_warnings(caplog)
    message = record.getMessage()
    assert 'step 400 is unreadable' in message
    assert 'falling back to step 200' in message
    assert '\n' not in message
    # The bad checkpoint is set aside so the resumed run can save step 400.
    assert ckpt.all_steps() == [200]
    assert (tmp_path / '400.unreadable').is_dir()
    ckpt.save(400, _state(401))
    assert ckpt.all_steps() == [200, 400]
    _, restored = ckpt.restore_latest(_state())
    _assert_bit_identical(restored, _state(401))
  # Orbax's failed reads leave no tracebacks on the console.
  _, err = capfd.readouterr()
  assert 'Traceback' not in err and 'Event loop is closed' not in err


def test_single_bit_flip_is_caught_by_checksum(tmp_path, caplog):
  # Large random data is stored as raw chunks that TensorStore decodes without
  # complaint after a bit flip; only the manifest's CRC-32 notices.
  x = np.random.default_rng(0).standard_normal(100_000).astype(np.float32)
  with Checkpointer(tmp_path) as ckpt:
    ckpt.save(1, {'x': x})
    ckpt.save(2, {'x': x + 1})
  files = [p for p in (tmp_path / '2' / 'state').rglob('*') if p.is_file()]
  largest = max(files, key=lambda p: p.stat().st_size)
  data = bytearray(largest.read_bytes())
  data[len(data) // 2] ^= 0x01
  largest.write_bytes(bytes(data))
  with caplog.at_level(logging.WARNING), Checkpointer(tmp_path) as ckpt:
    step, restored = ckpt.restore_latest({'x': x})
  assert step == 1
  np.testing.assert_array_equal(restored['x'], x)
  [record] = _unreadable_warnings(caplog)
  assert 'checksum mismatch' in record.getMessage()


def test_none_readable_raises_naming_directory(tmp_path):
  with Checkpointer(tmp_path) as ckpt:
    ckpt.save(1, _state())
    ckpt.save(2, _state())
  _truncate_data(tmp_path / '1')
  _delete_manifest(tmp_path / '2')
  with Checkpointer(tmp_path) as ckpt:
    with pytest.raises(ValueError, match='no readable checkpoint in .*step 2'):
      ckpt.restore_latest(_state())
    # Nothing is renamed when no checkpoint could be read.
    assert ckpt.all_steps() == [1, 2]


def _run_python(code: str, *args: str, env=None):
  env = dict(os.environ, **(env or {}))
  root = pathlib.Path(__file__).resolve().parents[1]
  env['PYTHONPATH'] = os.pathsep.join(
      [str(root)] + [p for p in [env.get('PYTHONPATH')] if p])
  return subprocess.run(
      [sys.executable, '-c', textwrap.dedent(code), *args],
      env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_killed_before_commit_is_never_restored(tmp_path):
  # The child writes step 200 completely and dies just before Orbax renames
  # the temporary directory to its final name (the commit point).
  code = """
      import os, sys
      import numpy as np
      from vcrnn_jax.training.checkpoint import Checkpointer
      ckpt = Checkpointer(sys.argv[1], max_to_keep=1)
      ckpt.save(100, {'x': np.arange(4, dtype=np.float32)})
      real_rename = os.rename
      def rename(src, dst, **kwargs):
        if os.path.basename(os.fspath(dst)) == '200':
          os._exit(3)
        return real_rename(src, dst, **kwargs)
      os.rename = rename
      ckpt.save(200, {'x': np.arange(4, dtype=np.float32) + 1})
      """
  proc = _run_python(code, str(tmp_path))
  assert proc.returncode == 3, proc.stderr
  leftovers = [n for n in os.listdir(tmp_path) if n.startswith('200')]
  assert leftovers and all('tmp' in n for n in leftovers), leftovers

  with Checkpointer(tmp_path, max_to_keep=1) as ckpt:
    assert ckpt.all_steps() == [100]
    step, restored = ckpt.restore_latest({'x': np.zeros(4, np.float32)})
  assert step == 100
  np.testing.assert_array_equal(restored['x'], np.arange(4))
  # Incomplete temporary directories are cleaned up on open.
  assert os.listdir(tmp_path) == ['100']


@pytest.mark.slow
def test_restores_in_one_device_process_what_eight_devices_saved(tmp_path):
  code = """
      import sys
      import jax, jax.numpy as jnp, numpy as np
      from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
      from vcrnn_jax.training.checkpoint import Checkpointer
      assert jax.device_count() == 8, jax.devices()
      mesh = Mesh(np.array(jax.devices()), ('data',))
      w = jax.device_put(jnp.arange(32, dtype=jnp.float32).reshape(8, 4),
                         NamedSharding(mesh, P('data')))
      b = jax.device_put(jnp.ones(3, jnp.float32), NamedSharding(mesh, P()))
      with Checkpointer(sys.argv[1]) as ckpt:
        ckpt.save(5, {'w': w, 'b': b, 'step': 5})
      """
  proc = _run_python(
      code, str(tmp_path),
      env={'XLA_FLAGS': '--xla_force_host_platform_device_count=8',
           'JAX_PLATFORMS': 'cpu'})
  assert proc.returncode == 0, proc.stderr

  target = {'w': jax.ShapeDtypeStruct((8, 4), jnp.float32),
            'b': jax.ShapeDtypeStruct((3,), jnp.float32), 'step': 0}
  with Checkpointer(tmp_path) as ckpt:
    step, restored = ckpt.restore_latest(target)
  assert step == 5 and restored['step'] == 5
  np.testing.assert_array_equal(restored['w'], np.arange(32).reshape(8, 4))
  np.testing.assert_array_equal(restored['b'], np.ones(3))
  # Host arrays: the caller decides where they go.
  assert isinstance(restored['w'], np.ndarray)


def test_reordered_namedtuple_fields_restore_by_name(tmp_path):
  # LSTMState was (h, c) and is (c, h): a checkpoint holding a carried LSTM
  # state restores each field by its name, not by its position.
  from typing import NamedTuple  # pylint: disable=g-import-not-at-top

  class Old(NamedTuple):
    h: np.ndarray
    c: np.ndarray

  class New(NamedTuple):
    c: np.ndarray
    h: np.ndarray

  h, c = np.full((2, 3), 1.5, np.float32), np.full((2, 3), -2.0, np.float32)
  with Checkpointer(tmp_path) as ckpt:
    ckpt.save(1, {'carry': Old(h=h, c=c), 'step': np.int32(1)})
  target = {'carry': New(c=np.zeros((2, 3), np.float32),
                         h=np.zeros((2, 3), np.float32)),
            'step': np.int32(0)}
  with Checkpointer(tmp_path) as ckpt:
    step, state = ckpt.restore_latest(target)
  assert step == 1 and isinstance(state['carry'], New)
  np.testing.assert_array_equal(state['carry'].h, h)
  np.testing.assert_array_equal(state['carry'].c, c)
  # Leaves of other names are still a structure mismatch.
  class Other(NamedTuple):
    a: np.ndarray
    b: np.ndarray
  with Checkpointer(tmp_path) as ckpt, pytest.raises(ValueError,
                                                     match='structure'):
    ckpt.restore_latest({'carry': Other(h, c), 'step': np.int32(0)})
