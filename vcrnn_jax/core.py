"""The cell protocol: a recurrent cell is a triple of pure functions.

Like optax's ``GradientTransformation``, a :class:`Cell` is a ``NamedTuple`` of
pure functions produced by a factory that closes over the hyperparameters::

  cell = vcrnn_jax.cells.gru(hidden_size=32)
  params = cell.init(jax.random.key(0), input_size=8)
  state = cell.initial_state(batch_size=4)
  state, y = cell.apply(params, state, x)        # x: [4, 8]

* ``init(key, input_size) -> params``: a pytree (nested dict) of arrays whose names
  and shapes each factory documents. Checkpoints depend on those names.
* ``initial_state(batch_size) -> state``: a NamedTuple of zero arrays ``[batch, ...]``.
* ``apply(params, state, x) -> (state, y)``: one time step, carry first as in
  ``lax.scan``; ``x`` is ``[batch, input_size]``. Per-step extras of adaptive cells
  (ponder, depth, computation used) come back inside ``y`` as a NamedTuple.
  A cell with data-dependent work may also take an optional keyword
  ``active`` (``[batch]`` bool): rows whose results the caller discards, so
  the cell may do the least work for them. ``unroll`` passes it for padded
  steps; ACT uses it to stop padded rows from pondering.

Every function is pure: no globals, no Python side effects, no hidden randomness,
so cells compose with ``jit``, ``vmap``, ``grad``, ``lax.scan`` and sharding.
"""

from typing import Any, Callable, NamedTuple

import jax

PyTree = Any
Params = Any
State = Any


class Cell(NamedTuple):
  """A recurrent cell as pure functions (see module docstring)."""

  init: Callable[[jax.Array, int], Params]
  initial_state: Callable[[int], State]
  apply: Callable[[Params, State, jax.Array], tuple[State, Any]]


def check_positive_int(name: str, value: Any) -> int:
  """Returns ``value`` as an int, or raises ``ValueError`` naming the argument."""
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    raise ValueError(f'{name} must be a positive integer, got {value!r}.')
  return value


def check_input(x: jax.Array, input_size: int, cell_name: str) -> None:
  """Raises ``ValueError`` unless ``x`` is ``[batch, input_size]``."""
  if x.ndim != 2 or x.shape[-1] != input_size:
    raise ValueError(
        f'{cell_name}.apply: x must have shape [batch, {input_size}] (the '
        f'input_size given to init), got shape {tuple(x.shape)}.')
