"""The checkpoint slots of ``bounded_while_loop``: fixed buffers, thinned.

The forward pass saves what the backward pass needs in ``K`` slots, each leaf
a ``[K, ...]`` buffer: the carry before every ``stride``-th step (and, with
saved residuals, that step's residuals). While the loop fits, ``stride`` is 1
and step ``n`` fills slot ``n``. When the ``K`` slots are full and the loop
goes on, :func:`thin` moves slot ``2 i`` to slot ``i`` in place and the
stride doubles, so ``K`` slots always cover the steps taken and memory never
depends on ``max_steps``. Writes are :func:`write` at the hot stride 1 and
:func:`masked_write` (a branch-free conditional write) once thinned.
"""

from typing import Any

import jax
from jax import lax
import jax.numpy as jnp

__all__ = ['empty', 'index', 'write', 'masked_write', 'thin']

PyTree = Any


def empty(slots: int, like: PyTree) -> PyTree:
  """``[slots, ...]`` buffers for leaves shaped as ``like``'s (arrays or
  ``jax.ShapeDtypeStruct``).

  Slots are read only after being written; ``lax.empty`` skips the zero
  fill on GPU and TPU (it lowers to zeros on CPU).
  """
  def buffer(x):
    shape = (slots,) + tuple(x.shape)
    if hasattr(lax, 'empty'):
      return lax.empty(shape, x.dtype)
    return jnp.zeros(shape, x.dtype)

  return jax.tree_util.tree_map(buffer, like)


def index(buffers: PyTree, j) -> PyTree:
  """Slot ``j`` of every buffer."""
  return jax.tree_util.tree_map(
      lambda b: lax.dynamic_index_in_dim(b, j, 0, keepdims=False), buffers)


def write(buffers: PyTree, values: PyTree, j) -> PyTree:
  """``values`` written to slot ``j``."""
  return jax.tree_util.tree_map(
      lambda b, x: lax.dynamic_update_index_in_dim(b, x, j, 0), buffers,
      values)


def masked_write(buffers: PyTree, values: PyTree, j, do_write) -> PyTree:
  """``values`` written to slot ``j`` where ``do_write``, without a branch.

  A ``lax.cond`` would become a select of the whole buffer under ``vmap``.
  """
  def write_leaf(b, x):
    old = lax.dynamic_index_in_dim(b, j, 0, keepdims=False)
    return lax.dynamic_update_index_in_dim(b, jnp.where(do_write, x, old), j,
                                           0)

  return jax.tree_util.tree_map(write_leaf, buffers, values)


def thin(buffers: PyTree, slots: int) -> PyTree:
  """Moves slot ``2 i`` to slot ``i``, to save every ``2 * stride`` steps.

  A loop of in-place slot copies rather than a gather, so that no second copy
  of the buffers is ever live. Slot ``2 i`` is read before any write reaches
  it, since writes go to slots ``< i``.
  """

  def move(i, buffers):
    return write(buffers, index(buffers, 2 * i), i)

  return lax.fori_loop(1, (slots + 1) // 2, move, buffers)
