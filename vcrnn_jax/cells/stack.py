"""Stacked recurrent layers as one cell."""

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax.core import (
  Cell,
  as_context,
  cell_output,
  check_cell,
  check_positive_int,
  field_docs,
  fold_in,
  param_dtype_of,
  shape_probe_context,
)

__all__ = ['StackOutput', 'stack', 'layer_outputs']


@field_docs
class StackOutput(NamedTuple):
  """Per-step output of :func:`stack`.

  Attributes:
    output: ``[batch, F]``: the top layer's output.
    layers: each layer's own per-step output (extras included).
  """
  output: jax.Array
  layers: tuple


def stack(layers: Sequence[Cell], *, dropout: float = 0.0) -> Cell:
  r"""Layers of cells, each reading the output of the one below, as one cell.

  .. math::

    (s^l_t, y^l_t) = \mathrm{cell}_l(s^l_{t-1}, \mathrm{out}(y^{l-1}_t)),
    \quad y^0_t = x_t

  The EI-REHN paper's HAR models are two such layers (Sec. 4.2). Any cells
  stack, adaptive ones included: each layer's structured output (ACT's
  ponder, EI-REHN's depth) is kept in :class:`StackOutput` ``.layers``, and
  each layer gets its own key from the context (:func:`vcrnn_jax.core.fold_in`)
  and the same ``active`` rows.

  Args:
    layers: the cells, bottom first (at least one).
    dropout: variational dropout between layers (one mask per sequence and
      layer, shared over time, drawn from ``context.key``; none without a
      key).

  Params: ``{'layer_0': ..., 'layer_1': ..., ...}``; state: a tuple of the
  layers' states.

  Example::

    cell = stack([cells.lstm(32), cells.lstm(32)])
    params = cell.init(jax.random.key(0), input_size=9)
    state, out = cell.apply(params, cell.initial_state(4), x)  # out.output
  """
  layers = tuple(layers)
  for i, layer in enumerate(layers):
    if callable(layer) or hasattr(layer, 'make_cell'):
      check_cell(f'cells.stack (layer {i})', layer)
  if not layers or not all(isinstance(c, Cell) for c in layers):
    raise ValueError('stack needs a non-empty sequence of vcrnn_jax Cells, got '
                     f'{layers!r}.')
  if not 0.0 <= dropout < 1.0:
    raise ValueError(f'dropout must be in [0, 1), got {dropout!r}.')
  names = [f'layer_{i}' for i in range(len(layers))]

  def init(key, input_size):
    size = check_positive_int('input_size', input_size)
    params = {}
    for i, (name, cell) in enumerate(zip(names, layers)):
      params[name] = cell.init(jax.random.fold_in(key, i), size)
      x = jnp.zeros((1, size), param_dtype_of(params[name]))
      _, y = jax.eval_shape(cell.apply, params[name], cell.initial_state(1), x,
                            shape_probe_context())
      size = cell_output(y).shape[-1]
    return params

  def initial_state(batch_size):
    return tuple(cell.initial_state(batch_size) for cell in layers)

  def apply(params, state, x, context=None):
    context = as_context(context)
    new_states, outputs = [], []
    for i, (name, cell) in enumerate(zip(names, layers)):
      if i and dropout and context.key is not None:
        keep = jax.random.bernoulli(
            jax.random.fold_in(fold_in(context, i).key, 1 << 20),
            1.0 - dropout, x.shape)
        x = x * keep.astype(x.dtype) / jnp.asarray(1.0 - dropout, x.dtype)
      s, y = cell.apply(params[name], state[i], x, fold_in(context, i))
      new_states.append(s)
      outputs.append(y)
      x = cell_output(y)
    return tuple(new_states), StackOutput(output=x, layers=tuple(outputs))

  return Cell(init, initial_state, apply)


def layer_outputs(out: Any) -> tuple:
  """The per-layer outputs of a :class:`StackOutput` (or ``(out,)``)."""
  return out.layers if isinstance(out, StackOutput) else (out,)
