"""Atomic, verified training checkpoints on top of Orbax.

A :class:`Checkpointer` keeps the last ``max_to_keep`` checkpoints of a training
state (any pytree of arrays: parameters, optax states, an integer step, a PRNG
key) under ``<workdir>/checkpoints/<step>/``. Each checkpoint holds two Orbax
items:

* ``state``: the leaves of the pytree as a flat dict of host (numpy) arrays,
  written with ``orbax.checkpoint.args.StandardSave``;
* ``meta``: a JSON manifest (``orbax.checkpoint.args.JsonSave``) with, for each
  leaf, its key path, shape, dtype and CRC-32 checksum.

Design notes:

* Atomicity comes from Orbax: a checkpoint is written to
  ``<step>.orbax-checkpoint-tmp*/`` and renamed to ``<step>/`` only when
  complete (the rename refuses to replace an existing directory), and Orbax
  lists only finalized step directories. A process killed mid-save therefore
  leaves a temporary directory that is never restored (and is removed the
  next time a :class:`Checkpointer` opens the directory).
* Orbax does not checksum data, and it may silently restore a subset of the
  leaves when the target has a different structure. The manifest closes both
  gaps: a structure mismatch raises ``ValueError`` and a checksum mismatch
  marks the checkpoint as corrupt, so restored values are bit-identical to the
  saved ones or not returned at all.
* Leaves are fetched to the host before saving, so a checkpoint records no
  device sharding and restores in a process with any number of devices.
  Restored leaves are numpy arrays (or Python scalars / PRNG key arrays, to
  match the target); the caller places them on devices.
* The target's tree structure is the one returned, so NamedTuples (optax
  states) and custom pytree nodes come back as they went in.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
import contextlib
import gc
import logging
import math
import os
import pathlib
import sys
import time
from typing import Any
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from vcrnn_jax.core import check_positive_int

__all__ = ['Checkpointer']

_LOG = logging.getLogger(__name__)

_STATE_ITEM = 'state'
_META_ITEM = 'meta'
_FORMAT = 'vcrnn_jax.checkpoint/1'
# Suffix for checkpoints found unreadable when an older one could be restored;
# Orbax only lists all-digit directory names, so renamed ones are ignored but
# kept on disk for inspection.
_UNREADABLE_SUFFIX = '.unreadable'
_MAX_REASON_CHARS = 160

# Leaf kinds recorded in the manifest.
_ARRAY = 'array'
_SCALAR = 'scalar'  # A Python bool/int/float leaf.
_KEY = 'key'  # A typed PRNG key array (jax.random.key), saved as its key data.


class _OrbaxQuietFilter(logging.Filter):
  """Drops Orbax's INFO/WARNING records logged through absl.

  Orbax logs every save and restore step; the console belongs to the progress
  bar. Errors still get through.
  """

  def filter(self, record: logging.LogRecord) -> bool:
    if record.levelno >= logging.ERROR:
      return True
    path = record.pathname.replace(os.sep, '/')
    return '/orbax/' not in path


_QUIET_FILTER = _OrbaxQuietFilter()


def _quiet_orbax_logging() -> None:
  # absl routes all its records through the 'absl' Python logger (and its
  # handler), so a filter there silences Orbax without touching other users
  # of absl logging.
  for name in ('absl', 'orbax'):
    logger = logging.getLogger(name)
    if _QUIET_FILTER not in logger.filters:
      logger.addFilter(_QUIET_FILTER)


class _AsyncNoiseFilter(logging.Filter):
  """Drops asyncio's 'Task exception was never retrieved' reports."""

  def filter(self, record: logging.LogRecord) -> bool:
    return 'exception was never retrieved' not in str(record.msg)


@contextlib.contextmanager
def _quiet_failed_reads() -> Iterator[None]:
  """Silences the side effects of Orbax restores that fail midway.

  When one TensorStore read fails, Orbax's event loop closes while sibling
  reads are still in flight; their completions then report 'Event loop is
  closed' through ``sys.unraisablehook``, and asyncio logs each abandoned task
  when it is collected: pages of tracebacks for one unreadable checkpoint.
  Only those two reports are swallowed, and only inside this context; call
  :func:`_settle_failed_reads` after a failure, inside it.
  """
  previous_hook = sys.unraisablehook

  def hook(unraisable):
    exc = unraisable.exc_value
    if isinstance(exc, RuntimeError) and 'Event loop is closed' in str(exc):
      return
    previous_hook(unraisable)

  asyncio_logger = logging.getLogger('asyncio')
  noise_filter = _AsyncNoiseFilter()
  sys.unraisablehook = hook
  asyncio_logger.addFilter(noise_filter)
  try:
    yield
  finally:
    sys.unraisablehook = previous_hook
    asyncio_logger.removeFilter(noise_filter)


def _settle_failed_reads() -> None:
  # Lets the in-flight reads of a failed restore complete, and the abandoned
  # tasks be collected, while _quiet_failed_reads' filters are in place.
  gc.collect()
  time.sleep(0.05)
  gc.collect()


class _StructureMismatchError(ValueError):
  """The checkpoint is readable but does not fit the target (a caller error)."""


def _crc32(array: np.ndarray) -> int:
  flat = np.ascontiguousarray(array).reshape(-1)
  return zlib.crc32(flat.view(np.uint8))


def _is_key(x: Any) -> bool:
  dtype = getattr(x, 'dtype', None)
  return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _is_py_scalar(x: Any) -> bool:
  return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def _short(exc: BaseException) -> str:
  text = str(exc).strip().splitlines()
  reason = f'{type(exc).__name__}: {text[0]}' if text else type(exc).__name__
  if len(reason) > _MAX_REASON_CHARS:
    reason = reason[:_MAX_REASON_CHARS - 3] + '...'
  return reason


def _positions(manifest: Sequence[dict[str, Any]],
               paths: Sequence[str]) -> list[int]:
  """For each target path, the index of the saved leaf of that path.

  The identity when the order matches, or when the saved paths are not a
  reordering of the target's (the structure check then reports it).
  """
  saved = [e['path'] for e in manifest]
  if saved == list(paths) or sorted(saved) != sorted(paths) or len(
      set(saved)) != len(saved):
    return list(range(len(manifest)))
  index = {path: j for j, path in enumerate(saved)}
  return [index[path] for path in paths]


def _leaf_name(index: int) -> str:
  # Zero-padded so the on-disk order follows the flattening order.
  return f'{index:05d}'


class Checkpointer:
  """Saves and restores training states; keeps the last ``max_to_keep``.

  Example::

    ckpt = Checkpointer(workdir / 'checkpoints', max_to_keep=3)
    restored = ckpt.restore_latest(state)
    if restored is not None:
      step, state = restored
    ...
    ckpt.save(step, state)
    ckpt.close()

  In a run of several processes (``jax.distributed``) every process opens
  the same directory (a filesystem they all share) and calls ``save`` and
  ``restore_latest`` at the same points, as Orbax's multi-process protocol
  requires: process 0 writes the (host, replicated) arrays and finalizes the
  checkpoint, the others wait at Orbax's barriers, and all of them read it.
  """

  def __init__(self, directory: str | os.PathLike[str], *,
               max_to_keep: int = 3):
    """Opens (creating if missing) a checkpoint directory.

    Args:
      directory: the checkpoint directory, typically ``<workdir>/checkpoints``.
      max_to_keep: how many of the most recent checkpoints to keep (>= 1).

    Raises:
      ValueError: if ``max_to_keep`` is not a positive integer.
    """
    max_to_keep = check_positive_int('max_to_keep', max_to_keep)
    _quiet_orbax_logging()
    self._directory = pathlib.Path(directory).absolute()
    self._directory.mkdir(parents=True, exist_ok=True)
    options = ocp.CheckpointManagerOptions(
        max_to_keep=max_to_keep,
        create=True,
        # save() must return only once the checkpoint is final; a synchronous
        # save avoids leaving a background thread writing at interpreter exit.
        enable_async_checkpointing=False,
        # Removes temporary directories left by a process killed mid-save.
        cleanup_tmp_directories=True,
    )
    self._manager = ocp.CheckpointManager(
        self._directory, options=options, item_names=(_STATE_ITEM, _META_ITEM))
    # Orbax removes those temporary directories on a background thread and
    # waits for it only before its next save; waiting here makes "opened"
    # mean "clean" (a restore or a listing right after open sees no debris).
    # The method is private, so newer Orbax versions without it just skip.
    await_cleanup = getattr(self._manager,
                            '_maybe_await_cleanup_tmp_directory', None)
    if await_cleanup is not None:
      await_cleanup()
    self._closed = False

  @property
  def directory(self) -> pathlib.Path:
    """The checkpoint directory."""
    return self._directory

  def all_steps(self) -> list[int]:
    """Steps of the complete checkpoints on disk, in increasing order."""
    return sorted(int(s) for s in self._manager.all_steps())

  def latest_step(self) -> int | None:
    """The most recent checkpointed step, or None when there is none."""
    steps = self.all_steps()
    return steps[-1] if steps else None

  def save(self, step: int, state: Any) -> None:
    """Writes a checkpoint of ``state`` and waits until it is complete.

    Checkpoints are immutable: saving a step that is already on disk is a
    no-op (this makes a final save right after resuming from that step
    harmless), and the oldest checkpoints beyond ``max_to_keep`` are deleted
    only after the new one is complete.

    Args:
      step: the training step (a non-negative integer), larger than every
        step already saved.
      state: a pytree whose leaves are arrays (jax or numpy; typed PRNG key
        arrays included) or Python bool/int/float scalars.

    Raises:
      ValueError: if ``step`` is negative, not an integer, or smaller than the
        latest saved step, or if a leaf of ``state`` is of an unsupported type.
    """
    self._check_open()
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
      raise ValueError(f'step must be a non-negative integer, got {step!r}')
    step = int(step)
    if step < 0:
      raise ValueError(f'step must be a non-negative integer, got {step}')
    steps = self.all_steps()
    if step in steps:
      _LOG.info('checkpoint for step %d already exists; not rewritten', step)
      return
    if steps and step < steps[-1]:
      raise ValueError(
          f'step must be larger than the latest checkpointed step {steps[-1]} '
          f'in {self._directory}, got {step}; use a fresh directory to start '
          'a new run')

    path_leaves, _ = jax.tree_util.tree_flatten_with_path(state)
    paths = [jax.tree_util.keystr(p) for p, _ in path_leaves]
    leaves = [leaf for _, leaf in path_leaves]
    # One device_get for all leaves lets the transfers overlap.
    host_leaves = jax.device_get(
        [jax.random.key_data(x) if _is_key(x) else x for x in leaves])

    flat = {}
    manifest = []
    for i, (path, leaf, host) in enumerate(zip(paths, leaves, host_leaves)):
      entry = {'path': path}
      if _is_key(leaf):
        entry.update(kind=_KEY, impl=str(jax.random.key_impl(leaf)),
                     key_shape=list(np.shape(leaf)))
      elif _is_py_scalar(leaf):
        entry.update(kind=_SCALAR, type=type(leaf).__name__)
      elif isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
        entry.update(kind=_ARRAY)
      else:
        raise ValueError(
            f'state leaf {path} has unsupported type {type(leaf).__name__}; '
            'allowed: jax/numpy arrays, typed PRNG key arrays, Python '
            'bool/int/float')
      host = np.asarray(host)
      # kind 'V' alone would also reject ml_dtypes' bfloat16 and float8s.
      if host.dtype.kind in 'OUSM' or host.dtype.fields is not None:
        raise ValueError(
            f'state leaf {path} has unsupported dtype {host.dtype}; allowed: '
            'numeric and boolean dtypes')
      entry.update(shape=list(host.shape), dtype=host.dtype.name,
                   crc32=_crc32(host))
      if host.size:
        flat[_leaf_name(i)] = host
      # else: Orbax refuses empty arrays; the manifest alone rebuilds them.
      manifest.append(entry)

    meta = {'format': _FORMAT, 'step': step, 'leaves': manifest}
    items = {_META_ITEM: ocp.args.JsonSave(meta)}
    if flat:  # Orbax refuses an empty pytree (a state of empty arrays only).
      items[_STATE_ITEM] = ocp.args.StandardSave(flat)
    self._manager.save(step, args=ocp.args.Composite(**items), force=True)
    self._manager.wait_until_finished()
    if step not in self.all_steps():
      raise RuntimeError(
          f'Orbax did not write the checkpoint for step {step} in '
          f'{self._directory}')

  def restore_latest(self, target: Any) -> tuple[int, Any] | None:
    """Restores the most recent readable checkpoint.

    A checkpoint that cannot be read or fails its checksums is reported in one
    warning line and skipped for the next older one; once an older one has
    been restored, the skipped ones are renamed to ``<step>.unreadable`` so
    that the resumed run can save those steps again.

    Args:
      target: a pytree with the structure of the saved state whose leaves
        (arrays, ``jax.ShapeDtypeStruct``, Python scalars or PRNG key arrays)
        give the shapes and dtypes to return.

    Returns:
      ``(step, state)`` with ``state`` in the structure of ``target``: numpy
      arrays (cast to the target's dtype when it differs from the saved one),
      Python scalars where the target has them, and typed PRNG key arrays
      where the target has them. None when the directory has no checkpoint.

    Raises:
      ValueError: if checkpoints exist but none is readable, or if the
        latest readable checkpoint does not match the structure or shapes of
        ``target``.
    """
    self._check_open()
    self._manager.reload()
    steps = self.all_steps()
    if not steps:
      return None
    path_leaves, treedef = jax.tree_util.tree_flatten_with_path(target)
    paths = [jax.tree_util.keystr(p) for p, _ in path_leaves]
    target_leaves = [leaf for _, leaf in path_leaves]

    failures: list[tuple[int, str]] = []
    last_error: BaseException | None = None
    with _quiet_failed_reads():
      for step in reversed(steps):
        try:
          leaves = self._restore_step(step, paths, target_leaves)
        except _StructureMismatchError:
          raise
        except Exception as e:  # pylint: disable=broad-exception-caught
          # Any failure to read (missing or truncated files, bad checksums,
          # decoding errors from Orbax or TensorStore) means "unreadable".
          failures.append((step, _short(e)))
          # Without its traceback the error no longer keeps Orbax's abandoned
          # tasks alive, so _settle_failed_reads can collect them.
          last_error = e.with_traceback(None)
          _settle_failed_reads()
          continue
        for bad_step, reason in failures:
          _LOG.warning(
              'checkpoint at step %d is unreadable (%s); falling '
              'back to step %d', bad_step, reason, step)
          self._set_aside(bad_step)
        if failures:
          self._manager.reload()
        return step, jax.tree_util.tree_unflatten(treedef, leaves)

    details = '; '.join(f'step {s}: {r}' for s, r in failures)
    raise ValueError(
        f'no readable checkpoint in {self._directory} ({details})'
    ) from last_error

  def close(self) -> None:
    """Waits for pending writes and releases Orbax's resources."""
    if self._closed:
      return
    self._closed = True
    self._manager.wait_until_finished()
    self._manager.close()

  def __enter__(self) -> Checkpointer:
    return self

  def __exit__(self, *exc_info) -> None:
    self.close()

  def _check_open(self) -> None:
    if self._closed:
      raise ValueError(f'Checkpointer for {self._directory} is closed')

  def _restore_step(self, step: int, paths: Sequence[str],
                    target_leaves: Sequence[Any]) -> list[Any]:
    """Reads, verifies and converts one checkpoint; raises if unreadable."""
    meta = self._manager.restore(
        step, args=ocp.args.Composite(**{_META_ITEM: ocp.args.JsonRestore()})
    )[_META_ITEM]
    if not isinstance(meta, dict) or meta.get('format') != _FORMAT:
      raise OSError(
          f'manifest is missing or has an unknown format: {meta!r:.80}')
    manifest = meta['leaves']
    # Leaves are matched by their key path, so a checkpoint whose leaves
    # were saved in another order (a NamedTuple whose fields were reordered,
    # such as LSTMState(h, c) -> (c, h)) restores each leaf by name.
    where = _positions(manifest, paths)
    self._check_structure(step, [manifest[j] for j in where], paths,
                          target_leaves)

    # jnp.dtype also knows the ml_dtypes names (e.g. bfloat16).
    abstract = {
        _leaf_name(i): jax.ShapeDtypeStruct(tuple(e['shape']),
                                            jnp.dtype(e['dtype']))
        for i, e in enumerate(manifest) if math.prod(e['shape'])
    }
    flat = {}
    if abstract:
      flat = self._manager.restore(
          step,
          args=ocp.args.Composite(
              **{_STATE_ITEM: ocp.args.StandardRestore(abstract)})
      )[_STATE_ITEM]

    leaves = []
    for i, target in zip(where, target_leaves):
      entry = manifest[i]
      if math.prod(entry['shape']):
        # np.asarray also covers Orbax versions that hand back jax arrays.
        value = np.asarray(flat[_leaf_name(i)])
      else:
        value = np.zeros(entry['shape'], jnp.dtype(entry['dtype']))
      if (list(value.shape) != entry['shape']
          or value.dtype.name != entry['dtype']
          or _crc32(value) != entry['crc32']):
        raise OSError(f'checksum mismatch for leaf {entry["path"]}')
      leaves.append(_to_target(value, entry, target))
    return leaves

  def _check_structure(self, step: int, manifest: Sequence[dict[str, Any]],
                       paths: Sequence[str],
                       target_leaves: Sequence[Any]) -> None:
    saved_paths = [e['path'] for e in manifest]
    if saved_paths != list(paths):
      missing = sorted(set(saved_paths) - set(paths))[:3]
      extra = sorted(set(paths) - set(saved_paths))[:3]
      raise _StructureMismatchError(
          f'target does not match the structure of the checkpoint at step '
          f'{step} in {self._directory}: {len(saved_paths)} saved leaves vs '
          f'{len(paths)} in the target (only saved: {missing}, only in '
          f'target: {extra})')
    for entry, target in zip(manifest, target_leaves):
      if entry['kind'] == _KEY:
        saved_shape = tuple(entry['key_shape'])
      else:
        saved_shape = tuple(entry['shape'])
      if _is_py_scalar(target):
        target_shape = ()
      else:
        target_shape = tuple(np.shape(target))
      if saved_shape != target_shape:
        raise _StructureMismatchError(
            f'target leaf {entry["path"]} has shape {target_shape}, but the '
            f'checkpoint at step {step} in {self._directory} has '
            f'{saved_shape}')
      if (entry['kind'] == _KEY) != _is_key(target):
        raise _StructureMismatchError(
            f'target leaf {entry["path"]} is '
            f'{"a" if _is_key(target) else "not a"} PRNG key array, but the '
            f'checkpoint at step {step} in {self._directory} has '
            f'{"a key array" if entry["kind"] == _KEY else "plain data"}')

  def _set_aside(self, step: int) -> None:
    src = self._directory / str(step)
    # One process renames, for all (the others skipped the same checkpoint).
    if jax.process_index() != 0 or not src.exists():
      return
    dst = src.with_name(src.name + _UNREADABLE_SUFFIX)
    n = 1
    while dst.exists():
      dst = src.with_name(f'{src.name}{_UNREADABLE_SUFFIX}-{n}')
      n += 1
    try:
      src.rename(dst)
    except OSError as e:
      _LOG.warning('could not rename unreadable checkpoint %s (%s)',
                   src, _short(e))


def _to_target(value: np.ndarray, entry: dict[str, Any], target: Any) -> Any:
  """Converts a verified saved leaf to the form of its target leaf."""
  if entry['kind'] == _KEY:
    return jax.random.wrap_key_data(value, impl=entry['impl'])
  if _is_py_scalar(target):
    return type(target)(value.item())
  dtype = getattr(target, 'dtype', None)
  if dtype is not None and np.dtype(dtype) != value.dtype:
    return value.astype(dtype)
  return value
