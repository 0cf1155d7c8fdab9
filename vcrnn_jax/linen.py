"""Thin ``flax.linen`` wrappers around the pure cells.

The modules hold params and call the pure functions; no maths lives here. They
implement ``flax.linen.RNNCellBase`` so they work inside ``flax.linen.RNN``::

  rnn = flax.linen.RNN(vcrnn_jax.linen.GRU(features=32))
  variables = rnn.init(key, xs)          # xs: [batch, time, in]
  ys = rnn.apply(variables, xs)

Each module holds one param, ``'cell'``, whose tree is exactly the pure cell's
params, so it can be passed to ``cell.apply`` directly (and vice versa). For a
module used on its own that is ``variables['params']['cell']``; inside
``flax.linen.RNN`` (or :class:`RNN`), which names its cell submodule
``'cell'`` too, it is ``variables['params']['cell']['cell']``.

A wrapper (:class:`ACT`, :class:`PonderNet`, :class:`Repeat`,
:class:`Skip`) takes the module it wraps as ``cell``, as the pure API and
:mod:`vcrnn_jax.nnx` do, and its params are the pure wrapper's, the wrapped
cell's under their ``'cell'`` entry. It only reads the wrapped module's
settings to build the pure cell (``make_cell()``) and never calls it, so it
keeps it as a reference, not as a child: Linen makes a module held in a
field a child named after the field, and a child ``'cell'`` beside the
param ``'cell'`` would be a ``flax.errors.NameInUseError``. ``module.cell``
answers for the module it refers to (its fields and methods).

Every module takes every option of its factory (initialisers, ``param_dtype``,
dropout, loop settings) as a field, with the factory's default (read from its
signature). :class:`Elman`, :class:`GRU` and :class:`LSTM` take the fields of
``flax.linen.SimpleCell``, ``GRUCell`` and ``LSTMCell`` in flax's order and
with flax's meaning (``dtype`` the computation dtype, ``gate_fn``,
``activation_fn``, ``recurrent_kernel_init``, ``carry_init``).

They follow ``flax.linen``'s cell conventions, so a module can replace a flax
cell in a flax model:

* **Width from the carry.** As in ``flax.linen.LSTMCell``, ``__call__`` takes
  the cell's width from the carry it is given; ``features`` only sizes the
  carry that :meth:`CellModule.initialize_carry` builds.
* **Any leading batch axes.** ``inputs`` may be ``[*batch, features]`` with
  any number of batch axes (none included); the carry then has the same
  leading axes. They are flattened into one for the pure cell and restored.
* **Carry order.** The LSTM carry is :class:`vcrnn_jax.cells.LSTMState`
  ``(c, h)``, flax's order.

``__call__(carry, inputs, context=None)`` forwards an optional
:class:`vcrnn_jax.core.Context` (training step, dropout key, active rows) to
the pure cell; ``flax.linen.RNN`` calls it without one, so it cannot tell an
adaptive cell which steps are padding. :class:`RNN` does: it runs any of these
modules over time with ``seq_lengths`` honoured as :func:`vcrnn_jax.unroll`
honours ``lengths``.

Beside the cells, :class:`PerTokenDepth` and :class:`PerExampleDepth` run
:mod:`vcrnn_jax.depth`'s adaptive depth around any Linen Transformer
block, and :class:`PerTokenRouting` :mod:`vcrnn_jax.routing`'s capacity
routing; their params are the pure params tree, ``{'block', 'halting'}``
(``{'block', 'router'}``).
"""

from collections.abc import Callable, Sequence
import functools
import inspect
import math
import types
from typing import Any

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp

from vcrnn_jax import (
  act,
  cells,
  depth,
  loops,
  ponder,
  registry,
  rehn,
  repeat,
  routing,
  skip,
  utils,
  vc,
)
from vcrnn_jax.core import Cell, Context, as_context, select_rows

__all__ = ['ACT', 'CellModule', 'EIREHN', 'Elman', 'GRU', 'LSTM',
           'PerExampleDepth', 'PerTokenDepth', 'PerTokenRouting',
           'PonderNet', 'RHN', 'RNN', 'Repeat', 'SREHN', 'SRHN', 'Skip',
           'Stack', 'VCGRU', 'VCRNN', 'call_with_context', 'check_block_call',
           'elman_params_from_flax',
           'elman_params_to_flax', 'factory_options', 'flatten_batch',
           'lstm_params_from_flax', 'lstm_params_to_flax',
           'lstm_state_from_flax', 'lstm_state_to_flax', 'module_for',
           'restore_batch', 'simple_cell']

Initializer = utils.Initializer
# The factories' defaults, read from their signatures (declared once).
_ELMAN = utils.defaults(cells.elman)
_GRU = utils.defaults(cells.gru)
_LSTM = utils.defaults(cells.lstm)
_RHN = utils.defaults(rehn.rhn)
_SREHN = utils.defaults(rehn.srehn)
_EIREHN = utils.defaults(rehn.ei_rehn)
_VCRNN = utils.defaults(vc.vcrnn)
_VCGRU = utils.defaults(vc.vcgru)
_STACK = utils.defaults(cells.stack)
_ACT = utils.defaults(act.adaptive)
_PONDERNET = utils.defaults(ponder.pondernet)
_SKIP = utils.defaults(skip.skip)
_PER_TOKEN = utils.defaults(depth.per_token)
_PER_EXAMPLE = utils.defaults(depth.per_example)
_ROUTING = utils.defaults(routing.per_token)


def flatten_batch(tree: Any, batch_ndim: int, size: int) -> Any:
  """Every leaf's ``batch_ndim`` leading axes flattened into one of ``size``.

  The modules take any number of batch axes (flax's convention); the pure
  cells take one. :func:`restore_batch` undoes it.

  Args:
    tree: a pytree of ``[*batch, ...]`` leaves.
    batch_ndim: the number of batch axes.
    size: their product.

  Returns:
    ``tree`` with ``[size, ...]`` leaves.
  """
  return jax.tree_util.tree_map(
      lambda a: a.reshape((size,) + a.shape[batch_ndim:]), tree)


def restore_batch(tree: Any, batch_shape: tuple) -> Any:
  """Every leaf's first axis split back into ``batch_shape``.

  Args:
    tree: a pytree of ``[size, ...]`` leaves, from :func:`flatten_batch`.
    batch_shape: the batch axes to restore.

  Returns:
    ``tree`` with ``[*batch_shape, ...]`` leaves.
  """
  return jax.tree_util.tree_map(
      lambda a: a.reshape(batch_shape + a.shape[1:]), tree)


def factory_options(module: Any, factory: Callable[..., Cell]) -> dict:
  """``factory``'s keyword options, read from ``module``'s attributes.

  Args:
    module: a Linen or NNX module holding one attribute per option.
    factory: the pure cell's factory (``cells.gru``, ``act.adaptive``).

  Returns:
    ``{option: value}`` for every keyword-only argument of ``factory``.
  """
  return {name: getattr(module, name)
          for name in utils.keyword_options(factory)}


def simple_cell(hidden_size: int, **options: Any) -> Cell:
  """:func:`vcrnn_jax.cells.elman` with flax ``SimpleCell``'s carry dtype.

  The pure cell keeps its state in the wider of ``dtype`` and
  ``param_dtype``. flax's ``SimpleCell`` (Linen and NNX) returns the
  activation in the computation ``dtype``: bfloat16 over float32 params
  gives a bfloat16 carry and output (unless ``residual`` adds the old,
  wider carry). This cell's state and output are in ``dtype`` there, so a
  scan keeps that carry type; a step widens its state for the pure cell and
  narrows the result back, both exact, since the pure cell rounds the
  activation to ``dtype`` before widening it. Otherwise (no ``dtype``,
  ``residual``, or a ``dtype`` at least as wide as the params) it is
  :func:`~vcrnn_jax.cells.elman` itself. :class:`Elman` and
  :class:`vcrnn_jax.nnx.Elman` compute it.

  Args:
    hidden_size: the width of the state.
    **options: :func:`~vcrnn_jax.cells.elman`'s keyword options.

  Returns:
    The cell; its params are :func:`~vcrnn_jax.cells.elman`'s.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from vcrnn_jax import linen
    >>> cell = linen.simple_cell(4, dtype=jnp.bfloat16)   # float32 params
    >>> params = cell.init(jax.random.key(0), 3)
    >>> state, y = cell.apply(params, cell.initial_state(2), jnp.ones((2, 3)))
    >>> params['input_kernel'].dtype, state.h.dtype, y.dtype
    (dtype('float32'), dtype(bfloat16), dtype(bfloat16))
  """
  cell = cells.elman(hidden_size, **options)
  dtype = options.get('dtype')
  param_dtype = options.get('param_dtype', _ELMAN.param_dtype)
  if (dtype is None or options.get('residual', _ELMAN.residual)
      or utils.carry_dtype(param_dtype, dtype) == dtype):
    return cell
  dtype = jnp.dtype(dtype)

  def initial_state(batch_size):
    return _cast(cell.initial_state(batch_size), dtype)

  def apply(params, state, x, context=None):
    # The pure cell's state: the wider of its params' dtype and ``dtype``.
    wide = utils.carry_dtype(params['input_kernel'].dtype, dtype)
    state, y = cell.apply(params, _cast(state, wide), x, context)
    return _cast(state, dtype), _cast(y, dtype)

  return Cell(cell.init, initial_state, apply)


def _cast(tree: Any, dtype: Any) -> Any:
  return jax.tree_util.tree_map(lambda a: utils.cast(a, dtype), tree)


def _draw_carry(carry_init: Initializer | None, rng: jax.Array,
                state: Any) -> Any:
  """``state``'s leaves drawn from ``carry_init`` (``state`` if None).

  As ``flax.linen``'s cells draw theirs: one leaf from ``rng`` itself,
  several (the LSTM's ``c, h``) from ``jax.random.split(rng, n)`` in order.
  """
  if carry_init is None:
    return state
  leaves, treedef = jax.tree_util.tree_flatten(state)
  keys = [rng] if len(leaves) == 1 else list(jax.random.split(rng, len(leaves)))
  return jax.tree_util.tree_unflatten(
      treedef, [carry_init(k, a.shape, a.dtype) for k, a in zip(keys, leaves)])


class CellModule(nn.RNNCellBase):
  """Wraps any :class:`vcrnn_jax.Cell`; subclasses only build the cell."""

  def make_cell(self) -> Cell:
    raise NotImplementedError(
        f'{type(self).__name__} must override make_cell() to return the '
        'vcrnn_jax.Cell it wraps (see Elman, GRU, LSTM below).')

  @nn.nowrap
  def cell_for_carry(self, carry: Any) -> Cell:
    """The pure cell for ``carry`` (leaves ``[batch, ...]``).

    flax's rule: a module with ``features`` takes its width from the carry,
    so a carry ``W`` wide gives the cell of ``features=W``.
    """
    features = getattr(self, 'features', None)
    widths = {leaf.shape[-1] for leaf in jax.tree_util.tree_leaves(carry)
              if leaf.ndim == 2}
    if features is not None and len(widths) == 1 and widths != {features}:
      return self.clone(parent=None, features=widths.pop()).make_cell()
    return self.make_cell()

  @nn.compact
  def __call__(self, carry, inputs, context: Context | None = None):
    batch_shape = inputs.shape[:-1]
    size = math.prod(batch_shape)
    x = inputs.reshape((size, inputs.shape[-1]))
    carry = flatten_batch(carry, len(batch_shape), size)
    context = as_context(context)
    if context.active is not None:
      context = context._replace(
          active=jnp.broadcast_to(context.active, batch_shape).reshape(size))
    cell = self.cell_for_carry(carry)
    carry = self._check_carry(cell, carry, size)
    params = self.param('cell', lambda key: cell.init(key, x.shape[-1]))
    carry, y = cell.apply(params, carry, x, context)
    return restore_batch(carry, batch_shape), restore_batch(y, batch_shape)

  @nn.nowrap
  def _check_carry(self, cell: Cell, carry: Any, size: int) -> Any:
    """``carry`` in the cell's state type; a one-line error if it cannot be.

    A carry with the state's leaves in another container (flax's plain
    ``(c, h)`` tuple for an LSTM) is accepted and rebuilt as the state.
    """
    want = jax.eval_shape(lambda: cell.initial_state(size))
    leaves, treedef = jax.tree_util.tree_flatten(want)
    got = jax.tree_util.tree_leaves(carry)
    got_shapes = tuple(tuple(a.shape) for a in got)
    want_shapes = tuple(tuple(a.shape) for a in leaves)
    if got_shapes != want_shapes:
      raise ValueError(
          f'{type(self).__name__}: the carry has shapes {got_shapes} (batch '
          f'flattened) but features={getattr(self, "features", None)} makes '
          f'{want_shapes}; build it with initialize_carry.')
    return jax.tree_util.tree_unflatten(treedef, got)

  @nn.nowrap
  def _batch_shape(self, input_shape: tuple) -> tuple:
    if len(input_shape) < 1:
      raise ValueError(
          f'{type(self).__name__}.initialize_carry: input_shape must be '
          f'(*batch, features), got {tuple(input_shape)}.')
    return tuple(input_shape[:-1])

  @nn.nowrap
  def initialize_carry(self, rng, input_shape):
    """The carry for inputs of shape ``(*batch, features)``.

    Zeros; a module with a ``carry_init`` field (the Flax cells' ``Elman``,
    ``GRU``, ``LSTM``) draws each leaf from it, with ``rng`` as Flax's cells
    use it.
    """
    batch_shape = self._batch_shape(input_shape)
    state = self.make_cell().initial_state(max(math.prod(batch_shape), 1))
    return _draw_carry(getattr(self, 'carry_init', None), rng,
                       restore_batch(state, batch_shape))

  @property
  def num_feature_axes(self) -> int:
    return 1


class Elman(CellModule):
  """:func:`vcrnn_jax.cells.elman` as a flax module (VCRNN paper Eq. 3).

  A drop-in for ``flax.linen.SimpleCell``: its fields, in its order, with
  its meaning (``carry_init`` draws the carry of :meth:`initialize_carry`;
  with ``dtype`` the carry and output are in it, as there:
  :func:`simple_cell`); the defaults of :func:`~vcrnn_jax.cells.elman`.
  The params differ in layout; :func:`elman_params_to_flax` and
  :func:`elman_params_from_flax` convert them.
  """
  features: int
  activation_fn: Callable[[jax.Array], jax.Array] = _ELMAN.activation_fn
  kernel_init: Initializer = _ELMAN.kernel_init
  recurrent_kernel_init: Initializer = _ELMAN.recurrent_kernel_init
  bias_init: Initializer = _ELMAN.bias_init
  dtype: Any = _ELMAN.dtype
  param_dtype: Any = _ELMAN.param_dtype
  carry_init: Initializer = nn.initializers.zeros_init()
  residual: bool = _ELMAN.residual
  promote_dtype: Callable[..., Any] | None = _ELMAN.promote_dtype

  @nn.nowrap
  def make_cell(self) -> Cell:
    return simple_cell(self.features, **factory_options(self, cells.elman))


class GRU(CellModule):
  """:func:`vcrnn_jax.cells.gru` as a flax module (VCRNN paper Eq. 4-6).

  Takes ``flax.linen.GRUCell``'s fields, in its order, with its meaning
  (``carry_init`` draws the carry of :meth:`initialize_carry`); the
  defaults of :func:`~vcrnn_jax.cells.gru`. The maths are the paper's GRU,
  not Flax's (see :func:`~vcrnn_jax.cells.gru`).
  """
  features: int
  gate_fn: Callable[[jax.Array], jax.Array] = _GRU.gate_fn
  activation_fn: Callable[[jax.Array], jax.Array] = _GRU.activation_fn
  kernel_init: Initializer = _GRU.kernel_init
  recurrent_kernel_init: Initializer = _GRU.recurrent_kernel_init
  bias_init: Initializer = _GRU.bias_init
  dtype: Any = _GRU.dtype
  param_dtype: Any = _GRU.param_dtype
  carry_init: Initializer = nn.initializers.zeros_init()
  promote_dtype: Callable[..., Any] | None = _GRU.promote_dtype

  @nn.nowrap
  def make_cell(self) -> Cell:
    return cells.gru(self.features, **factory_options(self, cells.gru))


class LSTM(CellModule):
  """:func:`vcrnn_jax.cells.lstm` as a flax module (EI-REHN paper Eq. 3-5).

  A drop-in for ``flax.linen.LSTMCell``: its fields, in its order, with its
  meaning (``carry_init`` draws the carry of :meth:`initialize_carry`), then
  ``forget_bias``; the defaults of :func:`~vcrnn_jax.cells.lstm`; carry
  ``(c, h)``, width from the carry. The params differ in layout (one fused
  kernel per input and recurrent side); :func:`lstm_params_to_flax` and
  :func:`lstm_params_from_flax` convert them.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from vcrnn_jax import linen
    >>> cell = linen.LSTM(8, dtype=jnp.bfloat16)   # float32 params
    >>> carry = cell.initialize_carry(jax.random.key(0), (2, 3))
    >>> variables = cell.init(jax.random.key(1), carry, jnp.ones((2, 3)))
    >>> (c, h), y = cell.apply(variables, carry, jnp.ones((2, 3)))
    >>> variables['params']['cell']['input_kernel'].dtype, y.dtype
    (dtype('float32'), dtype('float32'))
  """
  features: int
  gate_fn: Callable[[jax.Array], jax.Array] = _LSTM.gate_fn
  activation_fn: Callable[[jax.Array], jax.Array] = _LSTM.activation_fn
  kernel_init: Initializer = _LSTM.kernel_init
  recurrent_kernel_init: Initializer = _LSTM.recurrent_kernel_init
  bias_init: Initializer = _LSTM.bias_init
  dtype: Any = _LSTM.dtype
  param_dtype: Any = _LSTM.param_dtype
  carry_init: Initializer = nn.initializers.zeros_init()
  forget_bias: float = _LSTM.forget_bias
  promote_dtype: Callable[..., Any] | None = _LSTM.promote_dtype

  @nn.nowrap
  def make_cell(self) -> Cell:
    return cells.lstm(self.features, **factory_options(self, cells.lstm))


class RHN(CellModule):
  """:func:`vcrnn_jax.rehn.rhn` (``shared=True``: :func:`~vcrnn_jax.rehn.srhn`)
  as a flax module (EI-REHN paper Eq. 6-8)."""
  features: int
  depth: int
  shared: bool = False
  coupled: bool = _RHN.coupled
  transform_bias: float = _RHN.transform_bias
  input_dropout: float = _RHN.input_dropout
  state_dropout: float = _RHN.state_dropout
  kernel_init: Initializer = _RHN.kernel_init
  recurrent_kernel_init: Initializer = _RHN.recurrent_kernel_init
  param_dtype: Any = _RHN.param_dtype

  @nn.nowrap
  def make_cell(self) -> Cell:
    factory = rehn.srhn if self.shared else rehn.rhn
    return factory(self.features, self.depth, **factory_options(self, factory))


class SRHN(RHN):
  """:func:`vcrnn_jax.rehn.srhn` as a flax module: :class:`RHN` with one
  layer's weights shared by every micro-layer (``shared`` is True here), as
  :class:`vcrnn_jax.nnx.SRHN`."""
  shared: bool = True


class SREHN(CellModule):
  """:func:`vcrnn_jax.rehn.srehn` as a flax module (Eq. 9-15)."""
  features: int
  max_depth: int
  transform_bias: float = _SREHN.transform_bias
  alpha_init: float = _SREHN.alpha_init
  beta_init: float = _SREHN.beta_init
  rate_bias: float = _SREHN.rate_bias
  input_dropout: float = _SREHN.input_dropout
  state_dropout: float = _SREHN.state_dropout
  loop: loops.LoopConfig | str = _SREHN.loop
  kernel_init: Initializer = _SREHN.kernel_init
  recurrent_kernel_init: Initializer = _SREHN.recurrent_kernel_init
  param_dtype: Any = _SREHN.param_dtype
  open_gate: bool = _SREHN.open_gate

  @nn.nowrap
  def make_cell(self) -> Cell:
    return rehn.srehn(self.features, self.max_depth,
                      **factory_options(self, rehn.srehn))


class EIREHN(CellModule):
  """:func:`vcrnn_jax.rehn.ei_rehn` as a flax module (Eq. 9-22).

  The per-step output is a :class:`vcrnn_jax.rehn.REHNOutput` (``output``,
  ``depth``); ``hyper_size`` None means ``ceil(features / 2)``.
  """
  features: int
  max_depth: int
  transform_bias: float = _EIREHN.transform_bias
  alpha_init: float = _EIREHN.alpha_init
  beta_init: float = _EIREHN.beta_init
  rate_bias: float = _EIREHN.rate_bias
  input_dropout: float = _EIREHN.input_dropout
  state_dropout: float = _EIREHN.state_dropout
  loop: loops.LoopConfig | str = _EIREHN.loop
  kernel_init: Initializer = _EIREHN.kernel_init
  recurrent_kernel_init: Initializer = _EIREHN.recurrent_kernel_init
  param_dtype: Any = _EIREHN.param_dtype
  hyper_size: int | None = None
  hyper_init: Initializer = _EIREHN.hyper_init
  open_gate: bool = _EIREHN.open_gate

  @nn.nowrap
  def make_cell(self) -> Cell:
    hyper = self.hyper_size or -(-self.features // 2)
    return rehn.ei_rehn(self.features, hyper, self.max_depth,
                        **factory_options(self, rehn.ei_rehn))


class VCRNN(CellModule):
  """:func:`vcrnn_jax.vc.vcrnn` as a flax module (VCRNN paper Eq. 7, 11-13).

  The per-step output is a :class:`vcrnn_jax.vc.VCOutput`; a ``sharpness``
  schedule reads ``context.step``.
  """
  features: int
  sharpness: Any = _VCRNN.sharpness
  epsilon: float = _VCRNN.epsilon
  scheduler_bias: float = _VCRNN.scheduler_bias
  scheduler_init: Initializer = _VCRNN.scheduler_init
  hard: bool = _VCRNN.hard
  block_sizes: Any = _VCRNN.block_sizes
  compact_rows: int | None = _VCRNN.compact_rows
  kernel_init: Initializer = _VCRNN.kernel_init
  recurrent_kernel_init: Initializer = _VCRNN.recurrent_kernel_init
  bias_init: Initializer = _VCRNN.bias_init
  param_dtype: Any = _VCRNN.param_dtype

  @nn.nowrap
  def make_cell(self) -> Cell:
    return vc.vcrnn(self.features, **factory_options(self, vc.vcrnn))


class VCGRU(CellModule):
  """:func:`vcrnn_jax.vc.vcgru` as a flax module (VCRNN paper Eq. 7, 14-17);
  the same fields and output as :class:`VCRNN`."""
  features: int
  sharpness: Any = _VCGRU.sharpness
  epsilon: float = _VCGRU.epsilon
  scheduler_bias: float = _VCGRU.scheduler_bias
  scheduler_init: Initializer = _VCGRU.scheduler_init
  hard: bool = _VCGRU.hard
  block_sizes: Any = _VCGRU.block_sizes
  compact_rows: int | None = _VCGRU.compact_rows
  kernel_init: Initializer = _VCGRU.kernel_init
  recurrent_kernel_init: Initializer = _VCGRU.recurrent_kernel_init
  bias_init: Initializer = _VCGRU.bias_init
  param_dtype: Any = _VCGRU.param_dtype

  @nn.nowrap
  def make_cell(self) -> Cell:
    return vc.vcgru(self.features, **factory_options(self, vc.vcgru))


class Stack(CellModule):
  """:func:`vcrnn_jax.cells.stack` of other modules' cells as one module.

  ``layers`` are :class:`CellModule` s (bottom first) that hold no params of
  their own; they live in ``'cell'`` as ``layer_0``, ``layer_1``, ...; the
  carry is the tuple of the layers' carries, each from its own
  ``initialize_carry``.
  """
  layers: Sequence[CellModule]
  dropout: float = _STACK.dropout

  @nn.nowrap
  def make_cell(self) -> Cell:
    return cells.stack([m.make_cell() for m in self.layers],
                       dropout=self.dropout)

  @nn.nowrap
  def cell_for_carry(self, carry: Any) -> Cell:
    if not isinstance(carry, tuple) or len(carry) != len(self.layers):
      return self.make_cell()
    return cells.stack([m.cell_for_carry(c)
                        for m, c in zip(self.layers, carry)],
                       dropout=self.dropout)

  @nn.nowrap
  def initialize_carry(self, rng, input_shape):
    batch_shape = self._batch_shape(input_shape)
    keys = jax.random.split(rng, len(self.layers))
    return tuple(m.initialize_carry(k, batch_shape + (input_shape[-1],))
                 for m, k in zip(self.layers, keys))


class _Reference:
  """A wrapper's reference to the module it wraps, which answers for it.

  Linen makes every module held in a field a child named after the field;
  a wrapper's field ``cell`` would then be a child ``'cell'`` beside its
  param ``'cell'`` (a ``flax.errors.NameInUseError``). A wrapper only
  builds the pure cell from the module's settings and never calls it, so
  it holds this instead, which Linen leaves alone: attributes (fields,
  ``make_cell``, ``initialize_carry``), equality, hash and repr are the
  module's.
  """

  __slots__ = ('module',)

  def __init__(self, module: 'CellModule'):
    object.__setattr__(self, 'module', module)

  def __getattr__(self, name: str) -> Any:
    if name.startswith('__'):   # copy and pickle protocols: this object's
      raise AttributeError(name)
    return getattr(self.module, name)

  def __setattr__(self, name: str, value: Any) -> None:
    raise AttributeError(f'{name}: a wrapped module is frozen.')

  def __eq__(self, other: Any) -> bool:
    if isinstance(other, _Reference):
      other = other.module
    return self.module == other

  def __hash__(self) -> int:
    return hash(self.module)

  def __repr__(self) -> str:
    return repr(self.module)


class _Wrapper(CellModule):
  """A module around the module ``cell`` (held as a :class:`_Reference`)."""
  cell: CellModule

  def __post_init__(self):
    # Before Linen registers the fields (super().__post_init__), which
    # would adopt a module held in one.
    if not isinstance(self.cell, _Reference):
      if not isinstance(self.cell, CellModule):
        raise ValueError(
            f'{type(self).__name__} wraps a vcrnn_jax.linen module, got '
            f'{type(self.cell).__name__}.')
      object.__setattr__(self, 'cell', _Reference(self.cell))
    super().__post_init__()

  @nn.nowrap
  def _wrap(self, cell: Cell) -> Cell:
    """The pure wrapper around the pure ``cell``."""
    raise NotImplementedError

  @nn.nowrap
  def make_cell(self) -> Cell:
    return self._wrap(self.cell.make_cell())


class _CarryOfCell(_Wrapper):
  """A wrapper whose carry is the wrapped module's carry."""

  @nn.nowrap
  def cell_for_carry(self, carry: Any) -> Cell:
    return self._wrap(self.cell.cell_for_carry(carry))

  @nn.nowrap
  def initialize_carry(self, rng, input_shape):
    return self.cell.initialize_carry(rng, input_shape)


class ACT(_CarryOfCell):
  """:func:`vcrnn_jax.act.adaptive` around another module's cell.

  ``cell`` is any :class:`CellModule` (its ``make_cell()`` gives the
  wrapped pure cell; it holds no params of its own, they live in the ACT
  params' ``'cell'`` entry); the other fields are ``adaptive``'s. The
  wrapped cell reads the input plus ACT's first-step flag (Eq. 3), one
  feature more than the module is given; a Linen module takes its input
  width from the input, so nothing is sized by hand.
  ``output_size=None`` (the default) adds no output layer: the output is the
  mean field of the wrapped cell's output (``h`` for Elman, GRU, LSTM). The
  per-step output is an :class:`vcrnn_jax.act.ACTOutput`; ``nn.RNN`` stacks
  it over time like any pytree. The carry is the wrapped cell's.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from flax import linen as nn
    >>> from vcrnn_jax import linen
    >>> rnn = nn.RNN(linen.ACT(cell=linen.GRU(16), output_size=10,
    ...                        max_steps=20))
    >>> xs = jnp.ones((2, 5, 3))                  # [batch, time, in]
    >>> variables = rnn.init(jax.random.key(0), xs)
    >>> out = rnn.apply(variables, xs)
    >>> out.output.shape, out.ponder.shape
    ((2, 5, 10), (2, 5))
    >>> sorted(variables['params']['cell']['cell'])   # the pure ACT params
    ['cell', 'halting', 'output']
  """
  output_size: int | None = None
  max_steps: int = _ACT.max_steps
  epsilon: float = _ACT.epsilon
  halting_bias: float = _ACT.halting_bias
  halt_features: Callable[[Any, jax.Array], jax.Array] | None = (
      _ACT.halt_features)
  loop: loops.LoopConfig | str = _ACT.loop
  kernel_init: Initializer = _ACT.kernel_init
  param_dtype: Any = _ACT.param_dtype

  @nn.nowrap
  def _wrap(self, cell: Cell) -> Cell:
    return act.adaptive(cell, self.output_size,
                        **factory_options(self, act.adaptive))


class PonderNet(_CarryOfCell):
  """:func:`vcrnn_jax.ponder.pondernet` around another module's cell.

  ``cell`` is any :class:`CellModule` (its ``make_cell()`` gives the
  wrapped pure cell; it holds no params of its own, they live in the
  PonderNet params' ``'cell'`` entry); the other fields are ``pondernet``'s
  arguments. The wrapped cell reads the input plus ACT's first-step flag, as
  in ACT. The per-step output is a :class:`vcrnn_jax.ponder.PonderOutput`;
  ``nn.RNN`` stacks it over time like any pytree. The carry is the wrapped
  cell's.

  ``inference='sample'`` draws the halting from ``context.key``, which
  ``flax.linen.RNN`` cannot pass: call the module with a
  :class:`vcrnn_jax.core.Context` carrying a key, as for dropout (for
  example ``linen.RNN(...)(xs, context=Context(key=key))``); ``'train'``
  and ``'median'`` need none.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from flax import linen as nn
    >>> from vcrnn_jax import linen
    >>> rnn = nn.RNN(linen.PonderNet(linen.GRU(16), output_size=1,
    ...                              max_steps=5))
    >>> xs = jnp.ones((2, 3, 4))                  # [batch, time, in]
    >>> variables = rnn.init(jax.random.key(0), xs)
    >>> out = rnn.apply(variables, xs)
    >>> out.output.shape, out.probs.shape
    ((2, 3, 1), (2, 3, 5))
  """
  output_size: int = 1
  max_steps: int = _PONDERNET.max_steps
  epsilon: float = _PONDERNET.epsilon
  halting_bias: float = _PONDERNET.halting_bias
  inference: str = _PONDERNET.inference
  loop: loops.LoopConfig | str = _PONDERNET.loop
  kernel_init: Initializer = _PONDERNET.kernel_init
  param_dtype: Any = _PONDERNET.param_dtype

  @nn.nowrap
  def _wrap(self, cell: Cell) -> Cell:
    return ponder.pondernet(cell, self.output_size,
                            **factory_options(self, ponder.pondernet))


class Repeat(_CarryOfCell):
  """:func:`vcrnn_jax.repeat.repeat` around another module's cell.

  ``cell`` is any :class:`CellModule` (its ``make_cell()`` gives the
  wrapped pure cell; it holds no params of its own, they live in the Repeat
  params' ``'cell'`` entry); ``repetitions`` is ``repeat``'s. The wrapped
  cell reads the input plus ACT's first-step flag. The per-step output is the
  wrapped cell's after the last repetition; the carry is the wrapped cell's.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from flax import linen as nn
    >>> from vcrnn_jax import linen
    >>> rnn = nn.RNN(linen.Repeat(linen.GRU(16), repetitions=3))
    >>> xs = jnp.ones((2, 5, 3))                  # [batch, time, in]
    >>> variables = rnn.init(jax.random.key(0), xs)
    >>> rnn.apply(variables, xs).shape
    (2, 5, 16)
  """
  repetitions: int = 1

  @nn.nowrap
  def _wrap(self, cell: Cell) -> Cell:
    return repeat.repeat(cell, self.repetitions)


class Skip(_Wrapper):
  """:func:`vcrnn_jax.skip.skip` around another module's cell.

  ``cell`` is any :class:`CellModule` (its ``make_cell()`` gives the
  wrapped pure cell; it holds no params of its own, they live in the Skip
  params' ``'cell'`` entry); the other fields are ``skip``'s arguments
  (``features`` is the gate's feature function, not a width). The wrapped
  cell reads the input unchanged. The per-step output is a
  :class:`vcrnn_jax.skip.SkipOutput`; the carry is a
  :class:`vcrnn_jax.skip.SkipState` around the wrapped cell's carry (its
  width, as flax's, comes from that carry; its initial value from the
  wrapped module's ``initialize_carry``).

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from flax import linen as nn
    >>> from vcrnn_jax import linen
    >>> rnn = nn.RNN(linen.Skip(linen.LSTM(16)))
    >>> xs = jnp.ones((2, 5, 3))                  # [batch, time, in]
    >>> variables = rnn.init(jax.random.key(0), xs)
    >>> out = rnn.apply(variables, xs)
    >>> out.output.shape, out.update.shape
    ((2, 5, 16), (2, 5))
  """
  update_bias: float = _SKIP.update_bias
  features: Callable[[Any, jax.Array], jax.Array] | None = _SKIP.features
  hard: bool = _SKIP.hard
  compact_rows: int | None = _SKIP.compact_rows
  kernel_init: Initializer = _SKIP.kernel_init
  param_dtype: Any = _SKIP.param_dtype

  @nn.nowrap
  def _wrap(self, cell: Cell) -> Cell:
    return skip.skip(cell, **factory_options(self, skip.skip))

  @nn.nowrap
  def cell_for_carry(self, carry: Any) -> Cell:
    if not isinstance(carry, skip.SkipState):
      return self.make_cell()
    return self._wrap(self.cell.cell_for_carry(carry.cell))

  @nn.nowrap
  def initialize_carry(self, rng, input_shape):
    state = super().initialize_carry(rng, input_shape)
    return state._replace(cell=self.cell.initialize_carry(rng, input_shape))


class _Made(_Wrapper):
  """The base of the modules :func:`module_for` makes from a registry row.

  The carry is the wrapped module's (its ``carry_init`` and width rule
  included) when the pure wrapper keeps its cell's state, as ACT, PonderNet
  and Repeat-RNN do (the wrapper's ``initial_state`` is the cell's); else
  the pure wrapper's initial state.
  """

  @nn.nowrap
  def _keeps_cell_carry(self) -> bool:
    inner = self.cell.make_cell()
    return self._wrap(inner).initial_state is inner.initial_state

  @nn.nowrap
  def cell_for_carry(self, carry: Any) -> Cell:
    if self._keeps_cell_carry():
      return self._wrap(self.cell.cell_for_carry(carry))
    return self.make_cell()

  @nn.nowrap
  def initialize_carry(self, rng, input_shape):
    if self._keeps_cell_carry():
      return self.cell.initialize_carry(rng, input_shape)
    return super().initialize_carry(rng, input_shape)


def module_for(entry: 'registry.Entry | str') -> type[CellModule]:
  """The Linen module of a row of :data:`vcrnn_jax.registry.METHODS`.

  The module the row names when this file has it (written here, or made at
  import for a row of the table); otherwise, for a wrapper (the factory
  takes ``cell`` first), a module made from the factory: a
  :class:`CellModule` whose fields are ``cell`` (the module it wraps, as
  for :class:`ACT`) and the factory's other arguments, in its order, with
  its defaults (:class:`vcrnn_jax.registry.Entry`'s rule), and whose
  params are the pure wrapper's. So a new wrapper needs no Linen code: its
  row is its module. The module feeds the wrapped module's cell to the
  factory and calls the pure wrapper; the carry is the wrapped module's
  when the pure wrapper keeps its cell's state.

  Args:
    entry: a row (in the table or not) or the name of one in the table.

  Returns:
    The module class, named ``entry.module``.

  Raises:
    ValueError: a row with no module here that is not a wrapper.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from vcrnn_jax import linen, registry
    >>> module = linen.module_for('act')              # written here: linen.ACT
    >>> module is linen.ACT
    True
    >>> row = registry.Entry(registry.METHODS['repeat'].factory, 'wrapper',
    ...                      'Repeat-RNN again', 'MyRepeat', flagged=True)
    >>> MyRepeat = linen.module_for(row)              # made from the factory
    >>> cell = MyRepeat(linen.GRU(8), repetitions=2)
    >>> carry = cell.initialize_carry(jax.random.key(0), (2, 3))
    >>> variables = cell.init(jax.random.key(1), carry, jnp.ones((2, 3)))
    >>> cell.apply(variables, carry, jnp.ones((2, 3)))[1].shape
    (2, 8)
  """
  if isinstance(entry, str):
    entry = _table_row(entry)
  row = next((e for e in registry.METHODS.values()
              if e.module == entry.module), None)
  if row is not None and row.factory is entry.factory:
    return globals()[entry.module]
  return _make_module(entry)


def _table_row(name: str) -> 'registry.Entry':
  if name not in registry.METHODS:
    raise ValueError(f'module_for: entry must be a registry.Entry or one of '
                     f'{sorted(registry.METHODS)}, got {name!r}.')
  return registry.METHODS[name]


def _make_module(entry: 'registry.Entry') -> type[CellModule]:
  """A :class:`_Made` module for the wrapper row ``entry`` (see
  :func:`module_for`)."""
  factory = entry.factory
  rest, positional = registry.wrapper_arguments(entry, 'linen.module_for')
  name = f'{factory.__module__}.{factory.__qualname__}'
  annotations, namespace = {}, {}
  for p in rest:
    annotations[p.name] = (Any if p.annotation is inspect.Parameter.empty
                           else p.annotation)
    if p.default is not inspect.Parameter.empty:
      namespace[p.name] = p.default

  def _wrap(self, cell: Cell) -> Cell:
    return factory(cell, *(getattr(self, n) for n in positional),
                   **factory_options(self, factory))

  namespace.update(
      __annotations__=annotations, __module__=__name__,
      __qualname__=entry.module, _wrap=nn.nowrap(_wrap),
      __doc__=(f':func:`{name}` around another module\'s cell (made from its '
               'registry row by :func:`module_for`): the fields are '
               '``cell`` and the factory\'s arguments, with its defaults.'))
  return types.new_class(entry.module, (_Made,), {},
                         lambda ns: ns.update(namespace))


class RNN(nn.Module):
  """Runs a :class:`CellModule` over time, honouring ``seq_lengths``.

  The counterpart of ``flax.linen.RNN`` for this library's cells, with the
  same call signature, scan options (``unroll``, ``variable_axes``,
  ``variable_broadcast``, ``variable_carry``, ``split_rngs``) and params tree
  (``{'cell': {'cell': ...}}``), so the two can be swapped; ``reverse`` is
  not offered. The difference is padding: ``flax.linen.RNN`` computes
  every step of every row and uses ``seq_lengths`` only to pick the returned
  carry, so an ACT cell ponders fully on padded steps. Here, as in
  :func:`vcrnn_jax.unroll` with ``lengths``, steps ``t >= seq_lengths[b]``
  are padding: the cell is told (``context.active`` False, so ACT takes one
  step and EI-REHN no micro-layer), row ``b``'s carry is kept unchanged and
  its outputs are zero. The returned carry is the one after each row's last
  real step.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from vcrnn_jax import linen
    >>> rnn = linen.RNN(linen.ACT(linen.LSTM(16)))
    >>> xs, lengths = jnp.ones((2, 5, 3)), jnp.array([5, 2])
    >>> variables = rnn.init(jax.random.key(0), xs, seq_lengths=lengths)
    >>> ys = rnn.apply(variables, xs, seq_lengths=lengths)
    >>> ys.ponder[1, 2:]                          # row 1 is padding from t=2
    Array([0., 0., 0.], dtype=float32)
  """
  cell: CellModule
  time_major: bool = False
  return_carry: bool = False
  unroll: int = 1
  variable_axes: Any = flax.core.FrozenDict()
  variable_broadcast: Any = 'params'
  variable_carry: Any = False
  split_rngs: Any = flax.core.FrozenDict({'params': False})

  @nn.compact
  def __call__(self, inputs: jax.Array, *, initial_carry: Any = None,
               init_key: jax.Array | None = None,
               seq_lengths: jax.Array | None = None,
               return_carry: bool | None = None,
               context: Context | None = None):
    """Applies the cell to every step of ``inputs``.

    Args:
      inputs: ``[*batch, time, features]`` (``[time, *batch, features]``
        with ``time_major``).
      initial_carry: the carry to start from (leaves ``[*batch, ...]``);
        default the cell's ``initialize_carry``.
      init_key: passed to ``initialize_carry``.
      seq_lengths: optional ``[*batch]`` integer lengths in ``[0, time]``.
      return_carry: return ``(carry, outputs)``; default ``self.return_carry``.
      context: a :class:`vcrnn_jax.core.Context` given to the cell at every
        step (``step``, dropout ``key``; an ``active`` mask is combined with
        the one from ``seq_lengths``).

    Returns:
      ``outputs`` (leaves ``[*batch, time, ...]``, or time first with
      ``time_major``), or ``(carry, outputs)``.
    """
    if return_carry is None:
      return_carry = self.return_carry
    if inputs.ndim < 2:
      raise ValueError(
          f'RNN: inputs must be [*batch, time, features], got shape '
          f'{tuple(inputs.shape)}.')
    if self.time_major:
      inputs = jnp.moveaxis(inputs, 0, -2)
    batch_shape = inputs.shape[:-2]
    time, features = inputs.shape[-2:]
    size = math.prod(batch_shape)
    xs = inputs.reshape((size, time, features))
    if initial_carry is None:
      carry = self.cell.initialize_carry(
          jax.random.key(0) if init_key is None else init_key,
          (size, features))
    else:
      carry = flatten_batch(initial_carry, len(batch_shape), size)
    context = as_context(context)
    if context.active is not None:
      context = context._replace(
          active=jnp.broadcast_to(context.active, batch_shape).reshape(size))
    masked = seq_lengths is not None
    if masked:
      lengths = jnp.asarray(seq_lengths)
      if (tuple(lengths.shape) != tuple(batch_shape)
          or not jnp.issubdtype(lengths.dtype, jnp.integer)):
        raise ValueError(
            f'RNN: seq_lengths must be integers of shape [*batch]='
            f'{tuple(batch_shape)}, got {lengths.dtype} '
            f'{tuple(lengths.shape)}.')
      lengths = lengths.reshape(size)
    else:
      lengths = jnp.zeros((size,), jnp.int32)

    def step(cell, carry, x, t, lengths, context):
      if not masked:
        return cell(carry, x, context)
      valid = t < lengths
      active = valid if context.active is None else valid & context.active
      new_carry, y = cell(carry, x, context._replace(active=active))
      y = select_rows(valid, y, jax.tree_util.tree_map(jnp.zeros_like, y))
      return select_rows(valid, new_carry, carry), y

    scan = nn.scan(step, variable_axes=self.variable_axes,
                   variable_broadcast=self.variable_broadcast,
                   variable_carry=self.variable_carry,
                   split_rngs=self.split_rngs, unroll=self.unroll,
                   in_axes=(0, 0, nn.broadcast, nn.broadcast), out_axes=0)
    carry, ys = scan(self.cell, carry, jnp.swapaxes(xs, 0, 1),
                     jnp.arange(time), lengths, context)
    if self.time_major:
      ys = jax.tree_util.tree_map(
          lambda a: a.reshape((time,) + batch_shape + a.shape[2:]), ys)
    else:
      ys = jax.tree_util.tree_map(
          lambda a: jnp.swapaxes(a, 0, 1).reshape(
              batch_shape + (time,) + a.shape[2:]), ys)
    carry = restore_batch(carry, batch_shape)
    return (carry, ys) if return_carry else ys


# ----------------------------------------------------------------------------
# Adaptive depth around a Transformer block (vcrnn_jax.depth).


def call_with_context(fn: Callable[..., Any], h: Any,
                      context: depth.BlockContext) -> Any:
  """``fn(h, context=context)`` if ``fn`` has a parameter ``context``, else
  ``fn(h)``.

  How :class:`PerTokenDepth`, :class:`PerExampleDepth` and their
  :mod:`vcrnn_jax.nnx` counterparts call a block's ``__call__`` and a
  readout. A block that mixes positions names a ``context`` parameter and
  is given the :class:`vcrnn_jax.depth.BlockContext` of the depth step
  (padding ``mask``, ``step``, ``key``, ``extra``); one that takes ``h``
  alone is called with ``h`` alone. The rule goes by the name, not the
  position, so a layer whose second argument means something else (the
  ``inputs_k`` of ``flax.linen.MultiHeadDotProductAttention``) is never
  handed the context by accident.

  Args:
    fn: a bound method (or any function) taking ``h`` first.
    h: ``[batch, time, features]``.
    context: the depth step's :class:`~vcrnn_jax.depth.BlockContext`.

  Returns:
    What ``fn`` returns.
  """
  if 'context' in inspect.signature(fn).parameters:
    return fn(h, context=context)
  return fn(h)


def check_block_call(owner: str, fn: Callable[..., Any], name: str) -> None:
  """A one-line ``ValueError`` unless :func:`call_with_context` can call ``fn``.

  ``fn`` is called with ``h`` alone, or with ``context=`` too when it has a
  parameter of that name: any other parameter without a default (a block
  written as ``__call__(self, h, mask)``) would be a bare ``TypeError``
  inside the loop. The message names the fix: call the second parameter
  ``context`` and read ``context.mask``.

  Args:
    owner: the module or function the error names (``'PerTokenDepth'``).
    fn: the block's bound ``__call__`` or readout.
    name: what ``fn`` is, for the message (``'Block.__call__'``).

  Raises:
    ValueError: ``fn`` needs an argument the depth loop does not give.
  """
  params = list(inspect.signature(fn).parameters.values())
  needed = [p.name for p in params[1:]
            if p.default is inspect.Parameter.empty and p.name != 'context'
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL,
                               inspect.Parameter.VAR_KEYWORD)]
  if not params:
    raise ValueError(f'{owner}: {name}() must take h, the state '
                     '[batch, time, features].')
  if needed:
    taken = ', '.join(p.name for p in params)
    raise ValueError(
        f'{owner}: {name}({taken}) cannot be called as the depth loop calls '
        f'it, with h alone, or with context= when it has a parameter of '
        f'that name (a depth.BlockContext: mask, step, key, extra); name '
        f'its parameter {needed[0]!r} context and read context.mask.')


def _bound(module: Any, method: str | Callable[..., Any]) -> Callable:
  """``module``'s method ``method`` (a name), or ``method`` bound to
  ``module`` (a function ``(module, h, ...)``, as Linen's ``method=``)."""
  if isinstance(method, str):
    return getattr(module, method)
  return functools.partial(method, module)


def _first_context(caller: str, h: jax.Array, mask: Any, extra: Any,
                  key: jax.Array | None) -> depth.BlockContext:
  """The :class:`~vcrnn_jax.depth.BlockContext` of depth step 0.

  What :class:`PerTokenDepth` and :class:`PerExampleDepth` initialise
  their block with (the pure ``apply`` checks its arguments only after
  the block exists, so the shapes are checked here, in one line each).

  Args:
    caller: the function the errors name.
    h: ``[batch, time, features]``.
    mask: ``[batch, time]`` bool, or None (no padding).
    extra: the ``extra`` of the call.
    key: the call's key for the block, or None; step 0 gets
      ``fold_in(key, 0)``, as in the loop.

  Returns:
    The context.
  """
  if h.ndim != 3:
    raise ValueError(f'{caller}: h must be [batch, time, features], got '
                     f'shape {tuple(h.shape)}.')
  if mask is None:
    mask = jnp.ones(h.shape[:2], bool)
  elif tuple(jnp.shape(mask)) != h.shape[:2]:
    raise ValueError(f'{caller}: mask must be [batch, time] = '
                     f'{h.shape[:2]}, got shape {tuple(jnp.shape(mask))}.')
  key = None if key is None else jax.random.fold_in(key, 0)
  return depth.BlockContext(mask=jnp.asarray(mask, bool),
                            step=jnp.zeros((), jnp.int32), key=key,
                            extra=extra)


class _Depth(nn.Module):
  """Adaptive depth around the Linen module ``block``.

  The block is held as a :class:`_Reference`, not as a child: it is only
  ever applied functionally inside the pure loop (a child would be called
  bound, which Linen refuses inside a ``jax`` transformation, and its name
  would clash with the param ``'block'``).
  """
  block: nn.Module
  # The pure params' entry beside 'block': the halting unit (depth) or the
  # routers (routing).
  _unit = 'halting'

  def __post_init__(self):
    owner = type(self).__name__
    if not isinstance(self.block, _Reference):
      if not isinstance(self.block, nn.Module):
        raise ValueError(f'{owner}: block must be a flax.linen Module, got '
                         f'{type(self.block).__name__}.')
      object.__setattr__(self, 'block', _Reference(self.block))
    super().__post_init__()
    kind = type(self.block.module).__name__
    for method in self._methods():
      if isinstance(method, str) and not callable(
          getattr(self.block.module, method, None)):
        raise ValueError(f'{owner}: the block {kind} has no method '
                         f'{method!r}.')
      label = method if isinstance(method, str) else method.__name__
      check_block_call(owner, _bound(self.block.module, method),
                       f'{kind}.{label}')
    self.make_depth()   # the settings' one-line errors, at construction

  @nn.nowrap
  def _methods(self) -> tuple:
    """The block's methods the loop calls: ``__call__`` (and a readout)."""
    return ('__call__',)

  @nn.nowrap
  def _make(self, block: Callable, readout: Callable | None) -> depth.Depth:
    raise NotImplementedError

  @nn.nowrap
  def make_depth(self, deterministic: bool = False) -> depth.Depth:
    """The pure :class:`vcrnn_jax.depth.Depth` this module computes (a
    :class:`vcrnn_jax.routing.Routing` for :class:`PerTokenRouting`).

    Its ``apply(variables['params'], h, mask, key=..., extra=...)`` is the
    module's ``apply`` with the same arguments; the block is applied with
    ``block.apply({'params': ...}, h, context=..., rngs={'dropout':
    context.key})`` (no ``rngs`` without a key).

    Args:
      deterministic: give the block no key (``context.key`` None), whatever
        key ``apply`` gets (PonderNet's sampled exits still read it).
    """
    block = self.block.module

    def pure(method):
      def run(module, h, context):
        return call_with_context(_bound(module, method), h, context)

      def fn(params, h, context):
        if deterministic:
          context = context._replace(key=None)
        rngs = None if context.key is None else {'dropout': context.key}
        return block.apply({'params': params}, h, context, method=run,
                           rngs=rngs)
      return fn

    methods = [pure(m) for m in self._methods()]
    return self._make(methods[0], methods[1] if len(methods) > 1 else None)

  @nn.nowrap
  def _init_block(self, rng: jax.Array,
                  context: depth.BlockContext, h: jax.Array) -> Any:
    """The block's params, from ``block.init`` on step 0 of this call."""
    methods = self._methods()

    def run_all(module, h, context):
      # A readout may own params the block's __call__ never touches.
      for method in methods:
        call_with_context(_bound(module, method), h, context)

    rngs = {'params': rng}
    if context.key is not None:
      rngs['dropout'] = context.key
    variables = self.block.init(rngs, h, context, method=run_all)
    others = sorted(set(variables) - {'params'})
    if others:
      raise ValueError(
          f'{type(self).__name__}: the block has variables {others} besides '
          "its 'params'; only params are supported (no mutable state such "
          'as batch statistics).')
    return variables.get('params', {})

  @nn.compact
  def __call__(self, h: jax.Array, mask: jax.Array | None = None, *,
               extra: Any = None, key: jax.Array | None = None,
               deterministic: bool = True) -> tuple[jax.Array, Any]:
    """Runs the block to each position's (or example's) depth.

    Args:
      h: ``[batch, time, features]``.
      mask: ``[batch, time]`` bool, the real positions; None: no padding.
      extra: a pytree of ``[batch, ...]`` leaves handed to the block in its
        context (an encoder's output for cross-attention).
      key: the key the block's per-step keys are folded from and PonderNet's
        sampled exits drawn from; None: ``self.make_rng('dropout')`` unless
        ``deterministic``.
      deterministic: give the block no key (no dropout).

    Returns:
      ``(h, output)`` as the pure ``apply``.
    """
    h = jnp.asarray(h)
    caller = (f'{type(self).__name__}.'
              f'{"init" if self.is_initializing() else "apply"}')
    self._check_width(caller, h)
    if key is None and not deterministic:
      key = self.make_rng('dropout')
    model = self.make_depth(deterministic)
    first = lambda: self._first_context(caller, h, mask, extra,
                                        None if deterministic else key)
    block_params = self.param(
        'block', lambda rng: self._init_block(rng, first(), h))
    unit = self.param(self._unit, lambda rng: model.init(
        rng, h.shape[-1], block_params)[self._unit])
    return model.apply({'block': block_params, self._unit: unit}, h, mask,
                       key=key, extra=extra, caller=caller)

  @nn.nowrap
  def _first_context(self, caller: str, h: jax.Array, mask: Any, extra: Any,
                     key: jax.Array | None) -> Any:
    """The context of step 0 that the block is initialised with."""
    return _first_context(caller, h, mask, extra, key)

  @nn.nowrap
  def _check_width(self, caller: str, h: jax.Array) -> None:
    """A one-line error where ``h`` is not as wide as the params' ``h``
    (before Flax compares the block's params with their initialiser's)."""
    if h.ndim != 3 or not self.has_variable('params', self._unit):
      return
    width = self.get_variable('params', self._unit)['kernel'].shape[0]
    if h.shape[-1] != width:
      raise ValueError(
          f'{caller}: h has {h.shape[-1]} features, the params were '
          f'initialised for {width}; call it with h of {width} features, '
          f'or init it on h of {h.shape[-1]}.')


class PerTokenDepth(_Depth):
  """:func:`vcrnn_jax.depth.per_token` around a Linen block: Universal
  Transformer halting, ACT per position (or PonderNet's halting per
  position, ``halting='pondernet'``).

  ``block`` is any ``flax.linen.Module`` whose ``__call__`` maps ``h``
  ``[batch, time, features]`` to the same shape and dtype; it is given the
  depth step's :class:`vcrnn_jax.depth.BlockContext` as ``context=`` when
  its ``__call__`` has a parameter of that name, and ``h`` alone otherwise
  (:func:`call_with_context`): a block that attends should take it and mask
  its keys with ``context.mask``. The other fields are ``per_token``'s.

  **Call.** ``module.apply(variables, h, mask=None, *, extra=None,
  key=None, deterministic=True)``, ``h`` ``[batch, time, features]``,
  ``mask`` ``[batch, time]`` bool (None: no padding), ``extra`` a pytree
  of ``[batch, ...]`` leaves for the block's context, returns ``(h,
  output)`` as the pure ``apply`` (a
  :class:`~vcrnn_jax.depth.TokenDepthOutput` here; with
  ``halting='pondernet'`` its ``probs`` give the KL to the geometric prior,
  and ``inference='sample'`` draws the exits from ``key=``).

  **Params.** ``variables['params']`` is the pure params tree, ``{'block':
  the block's params, 'halting': {'kernel', 'bias'}}``, so the pure
  function takes it as it is: ``module.make_depth().apply(
  variables['params'], h, mask)`` is the module's result. The block is
  applied functionally (``block.apply``) at every depth step inside the
  pure loop; it is not a child of this module, and only its ``'params'``
  are supported (no mutable collections such as ``batch_stats``).

  **Dropout.** With ``deterministic=False`` the module draws one key per
  call from its ``'dropout'`` rng stream (or takes ``key=``); the block's
  step ``n`` gets ``fold_in(key, n)`` as ``context.key`` and as its own
  ``'dropout'`` stream, so a ``flax.linen.Dropout`` inside it needs only
  ``deterministic=context.key is None``. With ``deterministic=True`` (the
  default) the block gets no key.

  **Widths, dtypes, errors.** The params are made for the width of the
  ``h`` given to ``init``; another width is a one-line error before Flax
  compares the block's params. It computes in ``dtype`` (None: the halting
  unit's param dtype, which follows the block's, with a warning when ``h``
  is another float; ``per_token``'s ``dtype``). A block's ``__call__`` that
  needs an argument other than ``h`` and ``context`` is refused when the
  module is built (:func:`check_block_call`). Errors and warnings name the
  call, ``PerTokenDepth.init`` or ``PerTokenDepth.apply``.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> from vcrnn_jax import depth, linen
    >>> class Block(nn.Module):
    ...   @nn.compact
    ...   def __call__(self, h, context):       # a depth.BlockContext
    ...     mask = nn.make_attention_mask(context.mask, context.mask)
    ...     return h + nn.MultiHeadDotProductAttention(num_heads=2)(
    ...         h, mask=mask)
    >>> ut = linen.PerTokenDepth(Block(), max_depth=4)
    >>> h = jnp.ones((2, 3, 8))                   # [batch, time, features]
    >>> mask = jnp.array([[True, True, True], [True, True, False]])
    >>> variables = ut.init(jax.random.key(0), h, mask)
    >>> out_h, out = ut.apply(variables, h, mask)
    >>> sorted(variables['params']), out_h.shape, out.steps[1, 2].item()
    (['block', 'halting'], (2, 3, 8), 0)
    >>> loss = jnp.mean(out_h ** 2) + 0.01 * depth.mean_ponder(out)
  """
  max_depth: int
  halting: str = _PER_TOKEN.halting
  epsilon: float | None = _PER_TOKEN.epsilon
  halting_bias: float | None = _PER_TOKEN.halting_bias
  inference: str = _PER_TOKEN.inference
  halting_reads: str | None = _PER_TOKEN.halting_reads
  loop: loops.LoopConfig | str = _PER_TOKEN.loop
  kernel_init: Initializer = _PER_TOKEN.kernel_init
  param_dtype: Any = _PER_TOKEN.param_dtype
  dtype: Any = _PER_TOKEN.dtype

  @nn.nowrap
  def _make(self, block: Callable, readout: Callable | None) -> depth.Depth:
    del readout
    return depth.per_token(block,
                           **factory_options(self, depth.per_token))


class PerExampleDepth(_Depth):
  """:func:`vcrnn_jax.depth.per_example` around a Linen block: PonderNet's
  (or ACT's) halting per example.

  ``block`` as in :class:`PerTokenDepth` (its params, dropout and context
  likewise); the other fields are ``per_example``'s, except ``readout``:
  the name of a method of the block (or a function ``(block, h, ...)``, as
  Linen's ``method=``) that maps the state to each step's prediction ``y
  [batch, ...]``, given ``context=`` by the same rule as the block. Its
  params are the block's, so the block defines the layers both use in
  ``setup`` (Linen allows one ``nn.compact`` method per module). None: no
  readout.

  The call is :class:`PerTokenDepth`'s; its output an
  :class:`~vcrnn_jax.depth.ExampleDepthOutput`. ``inference='sample'``
  draws the exits from ``key``: pass ``key=`` (it reaches the block only
  when ``deterministic=False``).

  Example:

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> from vcrnn_jax import depth, linen
    >>> class Block(nn.Module):
    ...   def setup(self):
    ...     self.mix = nn.Dense(4)
    ...     self.head = nn.Dense(2)
    ...   def __call__(self, h):                # no context: no attention
    ...     return h + jnp.tanh(self.mix(h))
    ...   def readout(self, h, context):
    ...     return self.head(depth.masked_mean(h, context.mask))
    >>> exit_ = linen.PerExampleDepth(Block(), max_depth=3, readout='readout')
    >>> h = jnp.ones((2, 5, 4))
    >>> variables = exit_.init(jax.random.key(0), h)
    >>> _, out = exit_.apply(variables, h)
    >>> out.output.shape, out.outputs.shape, out.probs.shape
    ((2, 2), (2, 3, 2), (2, 3))
  """
  max_depth: int
  halting: str = _PER_EXAMPLE.halting
  epsilon: float | None = _PER_EXAMPLE.epsilon
  halting_bias: float | None = _PER_EXAMPLE.halting_bias
  inference: str = _PER_EXAMPLE.inference
  halting_reads: str = _PER_EXAMPLE.halting_reads
  readout: str | Callable[..., Any] | None = None
  loop: loops.LoopConfig | str = _PER_EXAMPLE.loop
  kernel_init: Initializer = _PER_EXAMPLE.kernel_init
  param_dtype: Any = _PER_EXAMPLE.param_dtype
  dtype: Any = _PER_EXAMPLE.dtype

  @nn.nowrap
  def _methods(self) -> tuple:
    if self.readout is None:
      return ('__call__',)
    return ('__call__', self.readout)

  @nn.nowrap
  def _make(self, block: Callable, readout: Callable | None) -> depth.Depth:
    options = factory_options(self, depth.per_example)
    return depth.per_example(block, **{**options, 'readout': readout})


class PerTokenRouting(_Depth):
  """:func:`vcrnn_jax.routing.per_token` around a Linen block: Mixture-of-
  Recursions capacity routing over the block's recursion steps.

  ``block`` as in :class:`PerTokenDepth` (its params, dropout and context
  likewise), applied at step ``r`` to the ``k_r`` gathered tokens of each
  sequence ``[batch, k_r, features]``; the context is a
  :class:`vcrnn_jax.routing.RouteContext`, whose ``mask`` marks the
  filler slots and whose ``positions`` are the gathered tokens' original
  positions (a causal block masks by them). The other fields are
  ``per_token``'s.

  The call is :class:`PerTokenDepth`'s; its output a
  :class:`~vcrnn_jax.routing.RoutingOutput`. The params are the pure
  tree, ``{'block': the block's params, 'router': {'kernel': [features,
  max_depth], 'bias': [max_depth]}}``, and ``module.make_depth().apply(
  variables['params'], h, mask)`` is the module's result.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> from vcrnn_jax import linen, routing
    >>> class Block(nn.Module):
    ...   @nn.compact
    ...   def __call__(self, h, context):       # a routing.RouteContext
    ...     mask = nn.make_attention_mask(context.mask, context.mask)
    ...     return h + nn.MultiHeadDotProductAttention(num_heads=2)(
    ...         h, mask=mask)
    >>> mor = linen.PerTokenRouting(Block(), max_depth=3)
    >>> h = jnp.ones((2, 6, 8))                   # [batch, time, features]
    >>> variables = mor.init(jax.random.key(0), h)
    >>> out_h, out = mor.apply(variables, h)
    >>> sorted(variables['params']), routing.block_tokens(out).tolist()
    (['block', 'router'], [12, 12])
    >>> loss = jnp.mean(out_h ** 2) + 0.001 * routing.aux_loss(out)
  """
  max_depth: int
  capacity: float | tuple[float, ...] | None = _ROUTING.capacity
  gate: str = _ROUTING.gate
  gate_scale: float | None = _ROUTING.gate_scale
  selection: str = _ROUTING.selection
  router_bias: float = _ROUTING.router_bias
  kernel_init: Initializer = _ROUTING.kernel_init
  param_dtype: Any = _ROUTING.param_dtype
  dtype: Any = _ROUTING.dtype
  _unit = 'router'

  @nn.nowrap
  def _make(self, block: Callable,
            readout: Callable | None) -> routing.Routing:
    del readout
    return routing.per_token(block,
                             **factory_options(self, routing.per_token))

  @nn.nowrap
  def _first_context(self, caller: str, h: jax.Array, mask: Any, extra: Any,
                     key: jax.Array | None) -> routing.RouteContext:
    first = _first_context(caller, h, mask, extra, key)
    positions = jnp.broadcast_to(
        jnp.arange(h.shape[1], dtype=jnp.int32), h.shape[:2])
    return routing.RouteContext(*first, positions=positions)

def lstm_params_to_flax(params: Any) -> dict:
  """Converts :func:`vcrnn_jax.cells.lstm` params to ``flax.linen.LSTMCell``'s.

  flax's cell computes ``i, f, g, o`` from separate dense layers: input
  kernels ``ii, if, ig, io`` (no bias) and recurrent kernels ``hi, hf, hg, ho``
  (with bias). Our fused gate order is ``a(=g), i, f, o``. Both carries are
  ``(c, h)``.
  """
  wi = jnp.split(params['input_kernel'], 4, axis=-1)
  wh = jnp.split(params['recurrent_kernel'], 4, axis=-1)
  b = jnp.split(params['bias'], 4, axis=-1)
  out = {}
  for idx, gate in enumerate('gifo'):
    out['i' + gate] = {'kernel': wi[idx]}
    out['h' + gate] = {'kernel': wh[idx], 'bias': b[idx]}
  return out


def lstm_params_from_flax(flax_params: Any) -> dict:
  """Inverse of :func:`lstm_params_to_flax`."""
  gates = 'gifo'
  return {
      'input_kernel': jnp.concatenate(
          [flax_params['i' + g]['kernel'] for g in gates], axis=-1),
      'recurrent_kernel': jnp.concatenate(
          [flax_params['h' + g]['kernel'] for g in gates], axis=-1),
      'bias': jnp.concatenate(
          [flax_params['h' + g]['bias'] for g in gates], axis=-1),
  }


def elman_params_to_flax(params: Any) -> dict:
  """Converts :func:`vcrnn_jax.cells.elman` params to
  ``flax.linen.SimpleCell``'s: ``i`` (input kernel and the bias) and ``h``
  (recurrent kernel, no bias)."""
  return {'i': {'kernel': params['input_kernel'], 'bias': params['bias']},
          'h': {'kernel': params['recurrent_kernel']}}


def elman_params_from_flax(flax_params: Any) -> dict:
  """Inverse of :func:`elman_params_to_flax`."""
  return {'input_kernel': flax_params['i']['kernel'],
          'recurrent_kernel': flax_params['h']['kernel'],
          'bias': flax_params['i']['bias']}


def lstm_state_to_flax(state: cells.LSTMState) -> tuple[jax.Array, jax.Array]:
  """``LSTMState(c, h)`` -> flax's ``(c, h)`` carry (a plain tuple)."""
  return (state.c, state.h)


def lstm_state_from_flax(carry: tuple[jax.Array, jax.Array]) -> cells.LSTMState:
  """flax's ``(c, h)`` carry -> :class:`vcrnn_jax.cells.LSTMState`."""
  c, h = carry
  return cells.LSTMState(c=c, h=h)


# The table's wrappers that have no module written above: made from their
# rows, so that ``linen.<module>`` is every row's module.
for _row in registry.METHODS.values():
  if _row.module not in globals():
    globals()[_row.module] = _make_module(_row)
    __all__.append(_row.module)
del _row
