"""The cell protocol: a recurrent cell is a triple of pure functions.

Like optax's ``GradientTransformation``, a :class:`Cell` is a ``NamedTuple`` of
pure functions produced by a factory that closes over the hyperparameters:

>>> import jax, jax.numpy as jnp, vcrnn_jax
>>> cell = vcrnn_jax.cells.gru(hidden_size=32)
>>> params = cell.init(jax.random.key(0), input_size=8)
>>> state = cell.initial_state(batch_size=4)
>>> state, y = cell.apply(params, state, jnp.ones((4, 8)))
>>> y.shape
(4, 32)

* ``init(key, input_size) -> params``: a pytree (nested dict) of arrays whose
  names and shapes each factory documents. Checkpoints depend on those names.
* ``initial_state(batch_size) -> state``: a NamedTuple of zero arrays
  ``[batch, ...]``.
* ``apply(params, state, x, context=None) -> (state, y)``: one time step, carry
  first as in ``lax.scan``; ``x`` is ``[batch, input_size]``.

**Extras in: the context.** What a caller knows besides params, state and input
reaches every cell the same way, as one optional :class:`Context` argument,
and a cell ignores the fields it does not use (as optax's
``GradientTransformationExtraArgs`` forwards extra keywords):

* ``active`` (``[batch]`` bool): rows whose results the caller discards, so the
  cell may do the least work for them. :func:`vcrnn_jax.unroll` sets it on
  padded steps; ACT halts those rows after one step and EI-REHN gives them no
  depth.
* ``step`` (int32 scalar): the training step, for step-dependent
  hyperparameters (VCRNN's sharpness schedule). It is an array, so a new step
  never recompiles.
* ``key`` (PRNG key): randomness of this sequence. A cell with dropout draws its
  masks from it; since the same key reaches every time step, the masks are
  shared over time (variational dropout). ``None`` means deterministic
  (evaluation). Wrappers and stacks that hold several cells give each its own
  stream with :func:`fold_in`.

Every cell of this library takes ``context`` and works with ``context=None``.
A cell written elsewhere with a three-argument ``apply`` joins the protocol
through :func:`ignore_context`.

**Extras out: structured outputs.** ``y`` is either an array ``[batch, F]``, or
a ``NamedTuple`` whose field ``output`` is that array and whose other fields
carry per-step extras (ACT's ponder, VC's ``m_t``, EI-REHN's realized depth).
Readouts, wrappers and :func:`vcrnn_jax.sequence_model` read ``y`` through
:func:`cell_output`, so any wrapper takes any cell, ACT around ACT included.

Every function is pure: no globals, no Python side effects, no hidden
randomness, so cells compose with ``jit``, ``vmap``, ``grad``, ``lax.scan`` and
sharding.

**Writing a cell.** The checks the library's cells run are public, so that a
cell written elsewhere fails as they do: :func:`check_apply_args` (one
``apply`` call's shapes and dtypes; its :class:`InputSizeError` is what
wrappers restate in their own terms), :func:`check_positive_int`,
:func:`check_bool`, :func:`check_dtype` and :func:`check_function` for a
factory's arguments, and :func:`shape_probe_context` for tracing a cell to
learn its output width. The pieces they are built from (initialisers, dtypes,
biases) are :mod:`vcrnn_jax.utils`'s.
"""

from collections.abc import Callable
import inspect
import operator
import re
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax.utils import broadcast_rows, cast

__all__ = [
    'field_docs',
    'Context',
    'Cell',
    'check_cell',
    'as_context',
    'shape_probe_context',
    'fold_in',
    'ignore_context',
    'cell_output',
    'select_rows',
    'check_bool',
    'check_positive_int',
    'check_function',
    'check_dtype',
    'param_dtype_of',
    'InputSizeError',
    'check_apply_args',
]

PyTree = Any
Params = Any
State = Any


def field_docs(cls):
  """Class decorator: gives each field of a ``NamedTuple`` the text its
  class docstring's ``Attributes:`` section gives it, so ``help()`` and
  Sphinx show what a field holds instead of "Alias for field number 1"."""
  lines = (cls.__doc__ or '').splitlines()
  docs: dict[str, list[str]] = {}
  name, inside = None, False
  for line in lines:
    text = line.strip()
    if text == 'Attributes:':
      inside = True
      continue
    if not inside:
      continue
    if not text:
      break
    match = re.match(r'(\w+):\s*(.*)', text)
    if match and match.group(1) in cls._fields:
      name = match.group(1)
      docs[name] = [match.group(2)]
    elif name is not None:
      docs[name].append(text)
  for field, words in docs.items():
    getattr(cls, field).__doc__ = ' '.join(words)
  return cls


@field_docs
class Context(NamedTuple):
  """Optional extras a caller passes to ``Cell.apply`` (see module docstring).

  A ``NamedTuple`` of arrays (``None`` fields are empty pytrees), so it passes
  through ``jit``, ``vmap`` and ``lax.scan`` like any other argument.

  Attributes:
    active: ``[batch]`` bool: False rows are discarded.
    step: int32 scalar: the training step.
    key: PRNG key of this sequence; None: no noise.
  """
  active: jax.Array | None = None
  step: jax.Array | None = None
  key: jax.Array | None = None


class Cell(NamedTuple):
  """A recurrent cell as pure functions (see module docstring)."""

  init: Callable[[jax.Array, int], Params]
  initial_state: Callable[[int], State]
  apply: Callable[..., tuple[State, Any]]  # (params, state, x, context=None)


def check_cell(owner: str, cell: Any) -> Cell:
  """``cell`` if it is a :class:`Cell`; else a one-line ``ValueError``.

  The message names the usual mistakes: a factory passed uncalled
  (``cells.gru`` for ``cells.gru(8)``) and a Flax module passed where its
  pure cell belongs.
  """
  if isinstance(cell, Cell):
    return cell
  got = f' (e.g. vcrnn_jax.cells.gru(8)); got {type(cell).__name__}'
  if hasattr(cell, 'make_cell'):
    got = (f'; got the Flax module {type(cell).__name__}: pass its '
           'make_cell(), or use the wrapper module of vcrnn_jax.linen or '
           'vcrnn_jax.nnx')
  elif callable(cell) and hasattr(cell, '__name__'):
    module = getattr(cell, '__module__', None) or ''
    parts = module.split('.')[1:] if module.startswith('vcrnn_jax.') else []
    if parts and parts[-1] == cell.__name__:
      parts = parts[:-1]  # cells.gru, not cells.gru.gru
    name = '.'.join(parts + [cell.__name__])
    try:
      first = next(iter(inspect.signature(cell).parameters), None)
    except (TypeError, ValueError):
      first = None
    if first == 'hidden_size':
      got = f'; got the factory {name}: call it, e.g. {name}(8)'
    elif parts:
      got = f'; got the function {name}: call it to build the cell'
    else:
      got = f' (e.g. vcrnn_jax.cells.gru(8)); got the function {name}'
  raise ValueError(f'{owner}: cell must be a vcrnn_jax.Cell{got}.')


def as_context(context: Context | None) -> Context:
  """``context``, or an empty :class:`Context` for ``None``."""
  if context is None:
    return Context()
  if not isinstance(context, Context):
    raise ValueError(
        'context must be a vcrnn_jax.core.Context or None, got '
        f'{type(context).__name__}.')
  return context


def shape_probe_context() -> Context:
  """The context of a shape probe (``jax.eval_shape`` of ``apply``).

  Wrappers and models trace a cell once to learn its output size; a cell
  with a step-dependent hyperparameter (VCRNN's sharpness schedule) needs a
  step even then, so probes pass step 0. Only shapes come out of a probe.
  """
  return Context(step=jnp.zeros((), jnp.int32))


def fold_in(context: Context | None, data: int) -> Context:
  """``context`` with its key replaced by ``fold_in(key, data)`` (if any).

  Gives each of several cells that share a context (the layers of a stack,
  the parts of a wrapper) its own random stream.
  """
  context = as_context(context)
  if context.key is None:
    return context
  return context._replace(key=jax.random.fold_in(context.key, data))


def ignore_context(cell: Cell) -> Cell:
  """Adapts a cell whose ``apply(params, state, x)`` has no ``context``.

  The adapted cell takes and ignores ``context`` (it then always does the full
  work for padded rows, as :func:`vcrnn_jax.unroll` discards them anyway).
  """
  apply = cell.apply

  def apply_with_context(params, state, x, context=None):
    del context  # The wrapped cell uses none of it.
    return apply(params, state, x)

  return cell._replace(apply=apply_with_context)


def cell_output(y: Any) -> jax.Array:
  """The array that readouts and wrappers read from a per-step output ``y``.

  ``y`` itself when it is an array; ``y.output`` when it is a structured
  output (see module docstring).

  Raises:
    ValueError: ``y`` is neither an array nor has an ``output`` array.
  """
  if isinstance(y, (jax.Array, np.ndarray)) or hasattr(y, 'shape'):
    return y
  out = getattr(y, 'output', None)
  if out is None or not hasattr(out, 'shape'):
    raise ValueError(
        'a cell\'s per-step output must be an array or a NamedTuple with an '
        f'`output` array field (vcrnn_jax.core), got {type(y).__name__}.')
  return out


def select_rows(mask: jax.Array | None, new: Any, old: Any) -> Any:
  """``new`` on the rows where ``mask`` holds, ``old`` on the others.

  Over two pytrees of the same structure; ``mask`` (bool, e.g. ``[batch]``
  or a scalar) has the leading axes of every leaf and is broadcast over the
  rest. ``mask=None`` selects ``new`` everywhere. A select, not a blend: a
  row of ``old`` comes back bit for bit, whatever ``new`` holds there (NaN
  included), and no gradient reaches the side not selected.

  >>> import jax.numpy as jnp
  >>> from vcrnn_jax.core import select_rows
  >>> select_rows(jnp.array([True, False]), jnp.ones((2, 3)),
  ...             jnp.zeros((2, 3))).tolist()
  [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
  """
  if mask is None:
    return new
  mask = jnp.asarray(mask, bool)

  def select(a, b):
    return jnp.where(broadcast_rows(mask, a), a, b)

  return jax.tree_util.tree_map(select, new, old)


def check_bool(name: str, value: Any) -> bool:
  """Returns ``value`` as a Python bool, or raises ``ValueError`` naming the
  argument. Python and NumPy booleans are accepted (``np.True_``); ints,
  strings and arrays are not."""
  if not isinstance(value, (bool, np.bool_)):
    raise ValueError(f'{name} must be a bool, got {value!r}.')
  return bool(value)


def check_positive_int(name: str, value: Any) -> int:
  """Returns ``value`` as an int, or raises ``ValueError`` naming the argument.

  Python, NumPy and concrete JAX integers are accepted (``np.int64(8)``);
  booleans, floats and non-positive values are not.
  """
  if isinstance(value, (bool, np.bool_)):
    raise ValueError(f'{name} must be a positive integer, got {value!r}.')
  try:
    as_int = operator.index(value)
  except TypeError:
    raise ValueError(
        f'{name} must be a positive integer, got {value!r}.') from None
  if as_int < 1:
    raise ValueError(f'{name} must be a positive integer, got {value!r}.')
  return as_int


def check_function(name: str, value: Any) -> Callable:
  """Returns ``value`` if it is callable, or raises ``ValueError`` naming the
  argument (a cell's ``gate_fn``, ``activation_fn``)."""
  if not callable(value):
    raise ValueError(f'{name} must be a function, got {value!r}.')
  return value


def check_dtype(name: str, value: Any, optional: bool = False) -> Any:
  """Returns ``value`` as a floating dtype (``None`` stays ``None`` where
  ``optional``), or raises ``ValueError`` naming the argument."""
  if value is None and optional:
    return None
  try:
    # jnp.dtype(None) is NumPy's default float, not a refusal.
    dtype = None if value is None else jnp.dtype(value)
  except TypeError:
    dtype = None
  if dtype is None or not jnp.issubdtype(dtype, jnp.floating):
    allowed = 'a floating dtype or None' if optional else 'a floating dtype'
    raise ValueError(f'{name} must be {allowed}, got {value!r}.')
  return dtype


def param_dtype_of(params: Params) -> Any:
  """The dtype of the first floating-point leaf of ``params`` (float32 if
  none)."""
  for leaf in jax.tree_util.tree_leaves(params):
    if jnp.issubdtype(leaf.dtype, jnp.floating):
      return leaf.dtype
  return jnp.dtype(jnp.float32)


class InputSizeError(ValueError):
  """A cell's ``apply`` got an ``x`` of the wrong shape.

  Carries what a wrapping cell needs to restate the error in its own terms
  (ACT feeds its cell one extra input feature).
  """

  def __init__(self, message: str, name: str, input_size: int):
    super().__init__(message)
    self.name = name                # the cell the message names
    self.input_size = input_size    # the input width its params expect


def check_apply_args(name: str, input_size: int, state: State,
                     x: jax.Array, dtype: Any,
                     width: int | None = None) -> jax.Array:
  """Checks one ``apply`` call's shapes and dtypes; returns ``x`` in ``dtype``.

  Every cell of the library computes in its params' ``dtype``: ``x`` is cast
  to it (as ``flax.linen`` promotes inputs to the param dtype), while a state
  of another floating dtype is an error, since ``lax.scan`` needs a carry that
  keeps its type.

  Args:
    name: the cell, as error messages name it.
    input_size: the input width the params were made for.
    state: the carried state.
    x: one step's input.
    dtype: the params' dtype.
    width: when given, the width every ``[batch, features]`` state leaf must
      have (the cell's ``hidden_size``).

  Raises:
    InputSizeError: (a ``ValueError``) ``x`` is not ``[batch, input_size]``.
    ValueError: a state leaf's batch
      differs from ``x``'s, a ``[batch, features]`` state leaf is not
      ``width`` wide, or a floating state leaf is not ``dtype``.
  """
  if x.ndim != 2 or x.shape[-1] != input_size:
    hint = (' (unroll runs a cell over a [batch, time, features] sequence)'
            if x.ndim == 3 else '')
    raise InputSizeError(
        f'{name}.apply: x must have shape [batch, {input_size}] (input_size '
        f'from the params), got shape {tuple(x.shape)}{hint}.', name,
        input_size)
  for leaf in jax.tree_util.tree_leaves(state):
    if leaf.ndim < 1 or leaf.shape[0] != x.shape[0]:
      raise ValueError(
          f'{name}.apply: the state has batch {leaf.shape[:1]} but x has '
          f'batch {x.shape[0]}; build it with initial_state({x.shape[0]}).')
    if width is not None and leaf.ndim == 2 and leaf.shape[1] != width:
      raise ValueError(
          f'{name}.apply: the state has width {leaf.shape[1]} but the cell has '
          f'hidden_size {width}; build it with the cell\'s initial_state.')
    if (jnp.issubdtype(leaf.dtype, jnp.floating)
        and leaf.dtype != jnp.dtype(dtype)):
      raise ValueError(
          f'{name}.apply: the state is {leaf.dtype} but the params are '
          f'{jnp.dtype(dtype)}; build the state with the cell\'s '
          'initial_state (or cast it).')
  return cast(x, dtype)
