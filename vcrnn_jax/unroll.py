"""Running a cell over time."""

import inspect
from typing import Any, Optional

import jax
import jax.numpy as jnp

from vcrnn_jax.core import Cell


def _select(pred: jax.Array, new: Any, old: Any) -> Any:
  """``where(pred, new, old)`` over two pytrees, ``pred`` broadcast from [batch]."""
  def sel(a, b):
    p = pred.reshape(pred.shape + (1,) * (a.ndim - pred.ndim))
    return jnp.where(p, a, b)
  return jax.tree_util.tree_map(sel, new, old)


def accepts_active(cell: Cell) -> bool:
  """Whether ``cell.apply`` takes the optional ``active`` row mask."""
  try:
    return 'active' in inspect.signature(cell.apply).parameters
  except (TypeError, ValueError):   # Not introspectable: assume not.
    return False


def unroll(
    cell: Cell,
    params: Any,
    state: Any,
    xs: jax.Array,
    lengths: Optional[jax.Array] = None,
) -> tuple[Any, Any]:
  """Applies ``cell`` to every time step of ``xs`` with ``lax.scan``.

  Args:
    cell: any :class:`vcrnn_jax.Cell`.
    params: the cell's params.
    state: the initial state, ``[batch, ...]`` leaves (e.g. from
      ``cell.initial_state(batch)``).
    xs: inputs ``[batch, time, input_size]`` (batch-major, as in
      ``flax.linen.RNN``).
    lengths: optional ``[batch]`` int sequence lengths. Steps ``t >= lengths[b]``
      are padding: they leave the state of row ``b`` unchanged and their
      outputs are zero, so the returned state is the state after the last real
      step. A cell whose ``apply`` takes an ``active`` keyword (``[batch]``
      bool; ACT does) gets ``active=t < lengths``, so it can skip the work of
      padded rows; a padded ACT row takes one ponder step instead of
      pondering on zeros.

  Returns:
    ``(final_state, ys)`` where every leaf of ``ys`` is ``[batch, time, ...]``.

  Example::

    cell = vcrnn_jax.cells.gru(32)
    params = cell.init(key, input_size=8)
    state, ys = unroll(cell, params, cell.initial_state(4), xs)  # xs [4, T, 8]
  """
  if xs.ndim < 3:
    raise ValueError(
        f'unroll: xs must have shape [batch, time, input_size], got shape '
        f'{tuple(xs.shape)}.')
  batch, time = xs.shape[0], xs.shape[1]
  if lengths is not None:
    lengths = jnp.asarray(lengths)
    if lengths.shape != (batch,):
      raise ValueError(
          f'unroll: lengths must have shape [batch]=({batch},), got '
          f'{tuple(lengths.shape)}.')
  xs_t = jnp.swapaxes(xs, 0, 1)

  if lengths is None:
    def step(carry, x):
      return cell.apply(params, carry, x)
    state, ys = jax.lax.scan(step, state, xs_t)
  else:
    # Cells that take ``active`` (e.g. ACT) skip the work of padded rows.
    pass_active = accepts_active(cell)

    def step(carry, inp):
      x, t = inp
      valid = t < lengths
      if pass_active:
        new_state, y = cell.apply(params, carry, x, active=valid)
      else:
        new_state, y = cell.apply(params, carry, x)
      new_state = _select(valid, new_state, carry)
      y = _select(valid, y, jax.tree_util.tree_map(jnp.zeros_like, y))
      return new_state, y
    state, ys = jax.lax.scan(step, state, (xs_t, jnp.arange(time)))
  ys = jax.tree_util.tree_map(lambda a: jnp.swapaxes(a, 0, 1), ys)
  return state, ys
