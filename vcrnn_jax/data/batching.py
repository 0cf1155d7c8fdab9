"""Batching shared by the binaries: BPTT streams, windows, shuffled batches.

Three layouts:

* :func:`bptt_batches`: the Zaremba et al. / RHN layout for evaluating or
  training on a whole stream with carried state. The stream is cut into
  ``batch_size`` contiguous rows; batch ``i`` is columns
  ``[i*bptt, (i+1)*bptt)`` and its targets are the same columns shifted by
  one, so row ``b`` of batch ``i+1`` continues row ``b`` of batch ``i`` (carry
  the hidden state across).
* :func:`random_windows`: ``[B, length + 1]`` windows at uniformly random
  offsets, a pure function of a JAX key (ACT's Wikipedia task: random
  500-byte sequences, state reset per sequence). Use
  ``jax.random.fold_in(key, step)`` to make step ``step``'s batch reproducible.
* :func:`shuffled_batches` / :func:`eval_batches`: fixed-shape batches of
  example arrays (UCI HAR). Training drops the last partial batch so every
  batch has the same shape (one ``jit`` trace) and each epoch reshuffles;
  evaluation pads the last batch and returns a mask so every example counts
  exactly once.
"""

from collections.abc import Iterator
import math

import jax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax.data.dataset import check_positive

__all__ = [
    'num_bptt_batches',
    'bptt_arrays',
    'bptt_batches',
    'random_windows',
    'shuffled_batches',
    'eval_batches',
]


def _check_stream(stream) -> int:
  if getattr(stream, 'ndim', None) != 1:
    raise ValueError(f'stream must be a 1-D array of ids, got shape '
                     f'{getattr(stream, "shape", type(stream))}.')
  return int(stream.shape[0])


def num_bptt_batches(stream_length: int, batch_size: int, bptt: int) -> int:
  """Number of batches :func:`bptt_batches` yields.

    >>> num_bptt_batches(100, 4, 5)
    4
  """
  return max((stream_length // batch_size - 1) // bptt, 0)


def _rows(stream, batch_size, bptt) -> tuple[np.ndarray, int]:
  """The stream as ``batch_size`` contiguous int32 rows, and the batch count."""
  batch_size = check_positive('batch_size', batch_size)
  bptt = check_positive('bptt', bptt)
  n = _check_stream(stream)
  num = num_bptt_batches(n, batch_size, bptt)
  if num == 0:
    raise ValueError(
        f'a stream of {n} ids is too short for batch_size={batch_size} and '
        f'bptt={bptt}: each of the {batch_size} rows needs at least '
        f'{bptt + 1} ids.')
  row_len = n // batch_size
  rows = np.asarray(stream[:batch_size * row_len], dtype=np.int32)
  return rows.reshape(batch_size, row_len), num


def bptt_arrays(stream: np.ndarray, batch_size: int,
                bptt: int) -> tuple[np.ndarray, np.ndarray]:
  """All BPTT batches stacked: ``(inputs, targets)``, ``[N, B, bptt]``.

  The same batches as :func:`bptt_batches`, as two arrays, e.g. to
  ``lax.scan`` over an epoch. The tail that does not fill a whole
  ``bptt`` window is dropped, as in Zaremba et al.'s reader.

    >>> x, y = bptt_arrays(np.arange(20), batch_size=2, bptt=3)
    >>> x[0].tolist(), y[0].tolist()
    ([[0, 1, 2], [10, 11, 12]], [[1, 2, 3], [11, 12, 13]])
    >>> x[1].tolist()
    [[3, 4, 5], [13, 14, 15]]
  """
  rows, num = _rows(stream, batch_size, bptt)
  used = num * bptt
  shape = (rows.shape[0], num, bptt)
  inputs = rows[:, :used].reshape(shape).transpose(1, 0, 2)
  targets = rows[:, 1:used + 1].reshape(shape).transpose(1, 0, 2)
  return np.ascontiguousarray(inputs), np.ascontiguousarray(targets)


def bptt_batches(stream: np.ndarray, batch_size: int,
                 bptt: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
  """Yields ``(inputs, targets)``, each int32 ``[batch_size, bptt]``, in order.

  Zaremba-style: the stream is cut into ``batch_size`` contiguous rows and read
  left to right ``bptt`` columns at a time; targets are inputs shifted by one.
  ``num_bptt_batches(len(stream), batch_size, bptt)`` batches are yielded.
  Arguments are checked when the generator is created.

    >>> [x.tolist() for x, _ in bptt_batches(np.arange(12), 2, 2)]
    [[[0, 1], [6, 7]], [[2, 3], [8, 9]]]
  """
  rows, num = _rows(stream, batch_size, bptt)

  def batches():
    for i in range(num):
      start = i * bptt
      yield rows[:, start:start + bptt], rows[:, start + 1:start + bptt + 1]

  return batches()


def random_windows(key: jax.Array, stream, batch_size: int, length: int,
                   starts: np.ndarray | None = None):
  """``[batch_size, length + 1]`` int32 windows of ``stream`` at random offsets.

  Inputs are ``w[:, :-1]`` and targets ``w[:, 1:]``. Offsets are drawn with
  ``jax.random`` from ``key``, uniformly over every offset whose window fits
  (or, with ``starts``, uniformly over those of the given segment starts whose
  window fits, e.g. ``meta['tune_starts']``), so the batch is a pure function
  of the key. A numpy ``stream`` is gathered on the host (the corpus need not
  live on the device) and a numpy array comes back; a ``jax.Array`` stream is
  gathered with ``jnp`` and the function can then be ``jit``-ed (with
  ``batch_size`` and ``length`` static).

  Args:
    key: a JAX PRNG key, e.g. ``jax.random.fold_in(key, step)``.
    stream: 1-D ids (numpy or JAX).
    batch_size: number of windows.
    length: inputs per window (the window holds ``length + 1`` ids).
    starts: optional allowed offsets (int array).

  Example:

    >>> w = random_windows(jax.random.key(0), np.arange(100), 4, 9)
    >>> w.shape, bool((np.diff(w, axis=1) == 1).all())
    ((4, 10), True)
  """
  batch_size = check_positive('batch_size', batch_size)
  length = check_positive('length', length)
  n = _check_stream(stream)
  if n < length + 1:
    raise ValueError(
        f'stream of {n} ids is shorter than a window of length + 1 = '
        f'{length + 1}.')
  if starts is None:
    offsets = jax.random.randint(key, (batch_size,), 0, n - length)
  else:
    starts = np.asarray(starts)
    fit = starts[(starts >= 0) & (starts + length + 1 <= n)]
    if fit.size == 0:
      raise ValueError(
          f'no start in starts (of {starts.size}) leaves room for a '
          f'window of {length + 1} ids in a stream of {n}.')
    pick = jax.random.randint(key, (batch_size,), 0, fit.size)
    offsets = jnp.asarray(fit)[pick]
  if isinstance(stream, np.ndarray):
    idx = np.asarray(offsets)[:, None] + np.arange(length + 1)
    return stream[idx].astype(np.int32, copy=False)
  idx = offsets[:, None] + jnp.arange(length + 1)[None, :]
  return jnp.take(stream, idx).astype(jnp.int32)


def shuffled_batches(key: jax.Array, inputs: np.ndarray, labels: np.ndarray,
                     batch_size: int,
                     epoch: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
  """Yields ``(inputs[idx], labels[idx])`` batches of one shuffled epoch.

  The order is ``jax.random.permutation(fold_in(key, epoch), N)``, so each
  epoch is reproducible from ``(key, epoch)``. The last partial batch is
  dropped so every batch is ``[batch_size, ...]`` (one compiled shape); each
  epoch drops different examples, so none is left out for good. ``N //
  batch_size`` batches are yielded. Use :func:`eval_batches` to see every
  example exactly once.

  Example:

    >>> x, y = np.arange(10)[:, None], np.arange(10)
    >>> batches = list(shuffled_batches(jax.random.key(0), x, y, 4, epoch=0))
    >>> len(batches), batches[0][0].shape
    (2, (4, 1))
  """
  batch_size = check_positive('batch_size', batch_size)
  n = len(inputs)
  if len(labels) != n:
    raise ValueError(f'inputs has {n} examples but labels has {len(labels)}.')
  if n < batch_size:
    raise ValueError(
        f'{n} examples are fewer than batch_size={batch_size}; every '
        'batch would be dropped.')
  perm = np.asarray(jax.random.permutation(jax.random.fold_in(key, epoch), n))

  def batches():
    for i in range(n // batch_size):
      idx = perm[i * batch_size:(i + 1) * batch_size]
      yield inputs[idx], labels[idx]

  return batches()


def eval_batches(
    inputs: np.ndarray, labels: np.ndarray,
    batch_size: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
  """Yields ``(inputs, labels, mask)`` in order; the last batch is zero-padded.

  Every batch is ``[batch_size, ...]``; ``mask`` (bool ``[batch_size]``) is
  False on padding rows, so ``sum(loss * mask) / sum(mask)`` over all batches
  counts each example exactly once.

    >>> batches = eval_batches(np.zeros((5, 2)), np.zeros(5), 3)
    >>> [m.tolist() for _, _, m in batches]
    [[True, True, True], [True, True, False]]
  """
  batch_size = check_positive('batch_size', batch_size)
  n = len(inputs)
  if len(labels) != n:
    raise ValueError(f'inputs has {n} examples but labels has {len(labels)}.')
  def pad(a, k):
    return np.concatenate([a, np.zeros((k,) + a.shape[1:], a.dtype)])

  def batches():
    for i in range(math.ceil(n / batch_size)):
      x = inputs[i * batch_size:(i + 1) * batch_size]
      y = labels[i * batch_size:(i + 1) * batch_size]
      k = batch_size - len(x)
      mask = np.arange(batch_size) < len(x)
      yield (pad(x, k), pad(y, k), mask) if k else (x, y, mask)

  return batches()
