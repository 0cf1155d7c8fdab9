r"""Row compaction: compute only the rows that need it, in a few static sizes.

Three computations of this library leave some rows of a batch idle: the rows
that have halted while others still ponder (ACT, PonderNet, EI-REHN's depth,
:func:`vcrnn_jax.loops.halting_loop`), the rows that skip a Skip-RNN step
(:func:`vcrnn_jax.skip.skip`, ``hard=True``) and the rows of a VC step that
need no part of a weight shell (:func:`vcrnn_jax.vc.vcrnn`, ``hard=True``).
Running the computation on the rows that need it alone saves their work, but
under ``jit`` every shape is static. So the rows that compute are

1. **partitioned** (:func:`order_rows`): a stable permutation that puts
   them first, by a running count rather than a sort;
2. **gathered** (:func:`take`) into a batch of one of a few static
   **bucket** sizes, the smallest that holds them (:func:`bucket_index`);
3. **computed** there, each bucket size a branch of a ``lax.switch`` or a
   stage behind a ``lax.cond``;
4. **scattered** back (:func:`put`) into the batch, whose other rows keep
   what they had.

Rows that a bucket takes in but that do not compute ride along; the caller's
computation must leave them as they were. Since every row is computed by the
same operations either way, values and gradients are those of the whole
batch (the last bit of a product may differ where a backend's kernel depends
on the number of rows).

One option, ``compact_rows``, says how small a bucket gets, everywhere: the
:class:`vcrnn_jax.loops.LoopConfig` field (ACT, PonderNet, EI-REHN), the
``compact_rows`` argument of :func:`vcrnn_jax.skip.skip`,
:func:`vcrnn_jax.vc.vcrnn` and :func:`vcrnn_jax.vc.vcgru`, and the ACT
binaries' ``--compact_rows``. ``None`` (the default) computes the whole batch.
An int ``m`` gives the bucket sizes, from one of two ladders:

* :func:`bucket_sizes`, the multiples of ``m`` up to the batch: for a choice
  made afresh at every step among any number of rows (Skip-RNN's updating
  rows, VC's rows per shell), one ``lax.switch`` branch per size;
* :func:`halving_sizes`, the batch halved down to ``m``: for a set of rows
  that only shrinks (rows halt and never restart), visited in order, one
  loop stage per size; halving keeps the stages few.

>>> import jax.numpy as jnp
>>> from vcrnn_jax import compaction
>>> compaction.bucket_sizes(10, 4), compaction.halving_sizes(24, 2)
((4, 8, 10), (24, 12, 6, 3, 2))
>>> mask = jnp.array([False, True, False, True, True])
>>> order = compaction.order_rows(mask)
>>> order.tolist()                       # computing rows first, in order
[1, 3, 4, 0, 2]
>>> sizes = compaction.bucket_sizes(5, 2)
>>> int(compaction.bucket_index(jnp.sum(mask), sizes))   # 3 rows: bucket 4
2
"""

from typing import Any

import jax
import jax.numpy as jnp

from vcrnn_jax.core import check_positive_int

__all__ = [
    'check_compact_rows',
    'bucket_sizes',
    'halving_sizes',
    'bucket_index',
    'order_rows',
    'take',
    'put',
    'switch_rows',
]

PyTree = Any


def check_compact_rows(compact_rows: Any) -> int | None:
  """``compact_rows`` validated: None, or a positive int.

  Every reader of the option (:class:`vcrnn_jax.loops.LoopConfig`,
  :func:`vcrnn_jax.skip.skip`, :func:`vcrnn_jax.vc.vcrnn`) checks it here,
  so all refuse the same values with the same message.

  Raises:
    ValueError: anything else, naming the value.
  """
  if compact_rows is None:
    return None
  return check_positive_int('compact_rows', compact_rows)


def bucket_sizes(batch: int, compact_rows: int | None) -> tuple[int, ...]:
  """The multiples of ``compact_rows`` up to ``batch``, ascending.

  ``(batch,)`` when ``compact_rows`` is None or at least ``batch``: one
  bucket, the whole batch.
  """
  batch = check_positive_int('batch', batch)
  compact_rows = check_compact_rows(compact_rows)
  if compact_rows is None or compact_rows >= batch:
    return (batch,)
  return tuple(min(b * compact_rows, batch)
               for b in range(1, -(-batch // compact_rows) + 1))


def halving_sizes(batch: int, compact_rows: int | None) -> tuple[int, ...]:
  """``batch`` halved (rounding up) down to ``compact_rows``, descending.

  A size is added only while halving still shrinks the batch, so every
  ``compact_rows >= 1`` ends (``compact_rows=1`` halves down to one row).
  ``(batch,)`` when ``compact_rows`` is None.
  """
  batch = check_positive_int('batch', batch)
  compact_rows = check_compact_rows(compact_rows)
  sizes = [batch]
  if compact_rows is None:
    return tuple(sizes)
  while ((sizes[-1] + 1) // 2 >= compact_rows
         and (sizes[-1] + 1) // 2 < sizes[-1]):
    sizes.append((sizes[-1] + 1) // 2)
  return tuple(sizes)


def bucket_index(count: jax.Array, sizes: tuple[int, ...]) -> jax.Array:
  """0 where ``count`` is 0, else 1 + the index of the smallest size that
  holds ``count`` rows (``sizes`` ascending; any shape of ``count``).

  The branch index of a ``lax.switch`` whose branch 0 computes nothing and
  whose branch ``k`` computes ``sizes[k - 1]`` rows.
  """
  bounds = jnp.asarray((0,) + tuple(sizes[:-1]), jnp.int32)
  count = jnp.asarray(count, jnp.int32)
  bounds = bounds.reshape((1,) * count.ndim + bounds.shape)
  return jnp.sum(count[..., None] > bounds, axis=-1, dtype=jnp.int32)


def order_rows(rank: jax.Array, levels: int = 2) -> jax.Array:
  """Row indices sorted by ``rank``, largest first, ties in row order.

  ``rank`` is ``[batch]``: a bool mask (the rows that compute come first)
  or ints in ``[0, levels)``. A stable counting sort, not a sort (XLA's CPU
  sort costs tens of microseconds even for a hundred rows): each row's
  place is the rows of higher rank plus those of its rank before it.
  """
  rank = rank.astype(jnp.int32)
  batch = rank.shape[0]
  rows = jnp.arange(batch, dtype=jnp.int32)
  if levels == 2:
    before = jnp.cumsum(rank, dtype=jnp.int32) - rank
    count = before[-1] + rank[-1]
    place = jnp.where(rank > 0, before, count + rows - before)
  else:
    one_hot = (rank[:, None] == jnp.arange(levels, dtype=jnp.int32)[None, :]
               ).astype(jnp.int32)
    before = jnp.cumsum(one_hot, axis=0, dtype=jnp.int32) - one_hot
    counts = before[-1] + one_hot[-1]
    higher = jnp.cumsum(counts[::-1], dtype=jnp.int32)[::-1] - counts
    place = higher[rank] + jnp.take_along_axis(before, rank[:, None],
                                               axis=1)[:, 0]
  return jnp.zeros_like(rows).at[place].set(
      rows, mode='promise_in_bounds', unique_indices=True)


def take(tree: PyTree, rows: jax.Array) -> PyTree:
  """The ``rows`` of every leaf (``[batch, ...]``), in that order."""
  return jax.tree_util.tree_map(
      lambda a: a.at[rows].get(mode='promise_in_bounds',
                               unique_indices=True), tree)


def put(tree: PyTree, rows: jax.Array, values: PyTree) -> PyTree:
  """``tree`` with its ``rows`` replaced by ``values`` (the inverse of
  :func:`take` on those rows; the other rows are kept)."""
  return jax.tree_util.tree_map(
      lambda a, b: a.at[rows].set(b, mode='promise_in_bounds',
                                  unique_indices=True), tree, values)


def switch_rows(fun, idle, operands: PyTree, compute: jax.Array,
                compact_rows: int | None) -> PyTree:
  """``fun`` on a bucket that holds every row of ``compute``; ``idle``
  when none computes.

  One ``lax.switch``: branch 0 is ``idle(operands)``; branch ``k`` gathers
  the first ``sizes[k - 1]`` rows of :func:`order_rows` (``compute`` first)
  and scatters ``fun`` of them into ``idle(operands)``; the whole batch
  needs no gather. Outside ``vmap`` only the chosen branch runs.

  Args:
    fun: ``operands -> out``, per-row results (leaves ``[rows, ...]``) for
      operands of any number of rows. A row of the bucket that does not
      compute must come out as ``idle`` gives it.
    idle: ``operands -> out`` of the whole batch: what no computation
      gives (a copy of the state, say).
    operands: pytree of ``[batch, ...]`` leaves.
    compute: ``[batch]`` bool, the rows that need ``fun``.
    compact_rows: the smallest bucket (:func:`bucket_sizes`); None: the
      whole batch whenever any row computes.

  Returns:
    ``out`` for the whole batch.
  """
  batch = compute.shape[0]
  sizes = bucket_sizes(batch, compact_rows)
  order = order_rows(compute) if len(sizes) > 1 else None

  def on(size):
    def run(operands):
      if size == batch:
        return fun(operands)
      rows = order[:size]
      return put(idle(operands), rows, fun(take(operands, rows)))
    return run

  index = bucket_index(jnp.sum(compute, dtype=jnp.int32), sizes)
  return jax.lax.switch(index, [idle] + [on(s) for s in sizes], operands)
