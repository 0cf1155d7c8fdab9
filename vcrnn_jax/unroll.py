"""Running a cell over time."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax.core import Cell, Context, as_context, select_rows

__all__ = ['unroll']


def _check_lengths(lengths, batch: int, time: int) -> jax.Array:
  lengths = jnp.asarray(lengths)
  if lengths.shape != (batch,):
    raise ValueError(
        f'unroll: lengths must have shape [batch]=({batch},), got '
        f'{tuple(lengths.shape)}.')
  if not jnp.issubdtype(lengths.dtype, jnp.integer):
    raise ValueError(
        f'unroll: lengths must be integers, got dtype {lengths.dtype}.')
  if not isinstance(lengths, jax.core.Tracer):
    values = np.asarray(lengths)
    if values.size and (values.min() < 0 or values.max() > time):
      raise ValueError(
          f'unroll: lengths must be in [0, {time}] (the time axis of xs), got '
          f'values from {values.min()} to {values.max()}.')
  return lengths


def unroll(
    cell: Cell,
    params: Any,
    state: Any,
    xs: jax.Array,
    lengths: jax.Array | None = None,
    *,
    context: Context | None = None,
) -> tuple[Any, Any]:
  """Applies ``cell`` to every time step of ``xs`` with ``lax.scan``.

  Args:
    cell: any :class:`vcrnn_jax.Cell`.
    params: the cell's params.
    state: the initial state, ``[batch, ...]`` leaves (e.g. from
      ``cell.initial_state(batch)``).
    xs: inputs ``[batch, time, input_size]`` (batch-major, as in
      ``flax.linen.RNN``).
    lengths: optional ``[batch]`` int sequence lengths in ``[0, time]``.
      Steps ``t >= lengths[b]`` are padding: they leave the state of row ``b``
      unchanged and their outputs are zero, so the returned state is the state
      after the last real step. The cell gets ``context.active = t <
      lengths`` on every step, so it can skip the work of padded rows (a
      padded ACT row takes one ponder step instead of pondering on zeros).
    context: the :class:`vcrnn_jax.core.Context` given to the cell at every
      step (``step``, ``key``; an ``active`` mask here is combined with the
      one from ``lengths``). The same key at every step means dropout masks
      shared over time.

  Returns:
    ``(final_state, ys)`` where every leaf of ``ys`` is ``[batch, time, ...]``.

  Raises:
    ValueError: ``xs`` is not ``[batch, time, features]`` with the state's
      batch (a time-major ``xs`` is named as such), or bad ``lengths``.

  Example:

    >>> import jax, jax.numpy as jnp, vcrnn_jax
    >>> cell = vcrnn_jax.cells.gru(32)
    >>> params = cell.init(jax.random.key(0), input_size=8)
    >>> xs = jnp.ones((4, 10, 8))                      # [batch, time, input]
    >>> lengths = jnp.array([10, 7, 3, 1])
    >>> final, ys = vcrnn_jax.unroll(cell, params, cell.initial_state(4), xs,
    ...                              lengths)
    >>> ys.shape
    (4, 10, 32)
    >>> bool(jnp.all(final.h[1] == ys[1, 6]))   # padding left row 1's state
    True
  """
  context = as_context(context)
  if xs.ndim != 3:
    raise ValueError(
        f'unroll: xs must have shape [batch, time, input_size], got shape '
        f'{tuple(xs.shape)}.')
  batch, time = xs.shape[0], xs.shape[1]
  state_batches = {leaf.shape[0] for leaf in jax.tree_util.tree_leaves(state)
                   if leaf.ndim}
  if state_batches and state_batches != {batch}:
    hint = (' xs looks time-major: unroll takes [batch, time, features] '
            '(use jnp.swapaxes(xs, 0, 1)).' if state_batches == {time} else '')
    raise ValueError(
        f'unroll: the state has batch {sorted(state_batches)} but xs '
        f'{tuple(xs.shape)} has batch {batch}.{hint}')
  if lengths is not None:
    lengths = _check_lengths(lengths, batch, time)
  xs_t = jnp.swapaxes(xs, 0, 1)

  if lengths is None:
    def step(carry, x):
      return cell.apply(params, carry, x, context)
    state, ys = jax.lax.scan(step, state, xs_t)
  else:
    def step(carry, inp):
      x, t = inp
      valid = t < lengths
      active = valid if context.active is None else valid & context.active
      new_state, y = cell.apply(params, carry, x,
                                context._replace(active=active))
      new_state = select_rows(valid, new_state, carry)
      y = select_rows(valid, y, jax.tree_util.tree_map(jnp.zeros_like, y))
      return new_state, y
    state, ys = jax.lax.scan(step, state, (xs_t, jnp.arange(time)))
  ys = jax.tree_util.tree_map(lambda a: jnp.swapaxes(a, 0, 1), ys)
  return state, ys
