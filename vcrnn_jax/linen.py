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

Every module takes every option of its factory (initialisers, ``param_dtype``,
dropout, loop settings) as a field, with the factory's default.

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
"""

from collections.abc import Callable, Sequence
import math
from typing import Any

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp

from vcrnn_jax import act, cells, loops, ponder, rehn, repeat, skip, vc
from vcrnn_jax.cells import _common
from vcrnn_jax.core import Cell, Context, as_context

Initializer = _common.Initializer


def _flatten_batch(tree: Any, batch_ndim: int, size: int) -> Any:
  return jax.tree_util.tree_map(
      lambda a: a.reshape((size,) + a.shape[batch_ndim:]), tree)


def _restore_batch(tree: Any, batch_shape: tuple) -> Any:
  return jax.tree_util.tree_map(
      lambda a: a.reshape(batch_shape + a.shape[1:]), tree)


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
    carry = _flatten_batch(carry, len(batch_shape), size)
    context = as_context(context)
    if context.active is not None:
      context = context._replace(
          active=jnp.broadcast_to(context.active, batch_shape).reshape(size))
    cell = self.cell_for_carry(carry)
    carry = self._check_carry(cell, carry, size)
    params = self.param('cell', lambda key: cell.init(key, x.shape[-1]))
    carry, y = cell.apply(params, carry, x, context)
    return _restore_batch(carry, batch_shape), _restore_batch(y, batch_shape)

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
  def initialize_carry(self, rng, input_shape):
    """Zero carry for inputs of shape ``(*batch, features)``."""
    del rng  # States start at zero (no learned or random initial state).
    if len(input_shape) < 1:
      raise ValueError(
          f'{type(self).__name__}.initialize_carry: input_shape must be '
          f'(*batch, features), got {tuple(input_shape)}.')
    batch_shape = tuple(input_shape[:-1])
    state = self.make_cell().initial_state(max(math.prod(batch_shape), 1))
    return _restore_batch(state, batch_shape)

  @property
  def num_feature_axes(self) -> int:
    return 1


class Elman(CellModule):
  """:func:`vcrnn_jax.cells.elman` as a flax module (VCRNN paper Eq. 3)."""
  features: int
  kernel_init: Initializer = _common.default_kernel_init
  recurrent_init: Initializer = _common.default_recurrent_init
  bias_init: Initializer = _common.default_bias_init
  param_dtype: Any = jnp.float32

  @nn.nowrap
  def make_cell(self) -> Cell:
    return cells.elman(
        self.features, kernel_init=self.kernel_init,
        recurrent_init=self.recurrent_init, bias_init=self.bias_init,
        param_dtype=self.param_dtype)


class GRU(CellModule):
  """:func:`vcrnn_jax.cells.gru` as a flax module (VCRNN paper Eq. 4-6)."""
  features: int
  kernel_init: Initializer = _common.default_kernel_init
  recurrent_init: Initializer = _common.default_recurrent_init
  bias_init: Initializer = _common.default_bias_init
  param_dtype: Any = jnp.float32

  @nn.nowrap
  def make_cell(self) -> Cell:
    return cells.gru(
        self.features, kernel_init=self.kernel_init,
        recurrent_init=self.recurrent_init, bias_init=self.bias_init,
        param_dtype=self.param_dtype)


class LSTM(CellModule):
  """:func:`vcrnn_jax.cells.lstm` as a flax module (EI-REHN paper Eq. 3-5).

  A drop-in for ``flax.linen.LSTMCell``: same default initialisation, carry
  ``(c, h)``, width from the carry. The params differ in layout (one fused
  kernel per input and recurrent side); :func:`lstm_params_to_flax` and
  :func:`lstm_params_from_flax` convert them.
  """
  features: int
  forget_bias: float = 0.0
  kernel_init: Initializer = _common.default_kernel_init
  recurrent_init: Initializer = _common.default_recurrent_init
  bias_init: Initializer = _common.default_bias_init
  param_dtype: Any = jnp.float32

  @nn.nowrap
  def make_cell(self) -> Cell:
    return cells.lstm(
        self.features, forget_bias=self.forget_bias,
        kernel_init=self.kernel_init, recurrent_init=self.recurrent_init,
        bias_init=self.bias_init, param_dtype=self.param_dtype)


class RHN(CellModule):
  """:func:`vcrnn_jax.rehn.rhn` (``shared=True``: :func:`~vcrnn_jax.rehn.srhn`)
  as a flax module (EI-REHN paper Eq. 6-8)."""
  features: int
  depth: int
  shared: bool = False
  coupled: bool = True
  transform_bias: float = -2.0
  input_dropout: float = 0.0
  state_dropout: float = 0.0
  kernel_init: Initializer = _common.default_kernel_init
  recurrent_init: Initializer = _common.default_recurrent_init
  param_dtype: Any = jnp.float32

  @nn.nowrap
  def make_cell(self) -> Cell:
    factory = rehn.srhn if self.shared else rehn.rhn
    return factory(
        self.features, self.depth, coupled=self.coupled,
        transform_bias=self.transform_bias, input_dropout=self.input_dropout,
        state_dropout=self.state_dropout, kernel_init=self.kernel_init,
        recurrent_init=self.recurrent_init, param_dtype=self.param_dtype)


class SREHN(CellModule):
  """:func:`vcrnn_jax.rehn.srehn` as a flax module (Eq. 9-15)."""
  features: int
  max_depth: int
  transform_bias: float = 0.0
  alpha_init: float = 0.1
  beta_init: float = 0.9
  rate_bias: float = -3.0
  input_dropout: float = 0.0
  state_dropout: float = 0.0
  loop: loops.LoopConfig | str = loops.LoopConfig()
  kernel_init: Initializer = _common.default_kernel_init
  recurrent_init: Initializer = _common.default_recurrent_init
  param_dtype: Any = jnp.float32

  @nn.nowrap
  def _options(self) -> dict:
    return dict(
        transform_bias=self.transform_bias, alpha_init=self.alpha_init,
        beta_init=self.beta_init, rate_bias=self.rate_bias,
        input_dropout=self.input_dropout, state_dropout=self.state_dropout,
        loop=self.loop, kernel_init=self.kernel_init,
        recurrent_init=self.recurrent_init, param_dtype=self.param_dtype)

  @nn.nowrap
  def make_cell(self) -> Cell:
    return rehn.srehn(self.features, self.max_depth, **self._options())


class EIREHN(SREHN):
  """:func:`vcrnn_jax.rehn.ei_rehn` as a flax module (Eq. 9-22).

  The per-step output is a :class:`vcrnn_jax.rehn.REHNOutput` (``output``,
  ``depth``); ``hyper_size`` None means ``ceil(features / 2)``.
  """
  hyper_size: int | None = None
  hyper_init: Initializer = jax.nn.initializers.normal(0.01)

  @nn.nowrap
  def make_cell(self) -> Cell:
    hyper = self.hyper_size or -(-self.features // 2)
    return rehn.ei_rehn(self.features, hyper, self.max_depth,
                        hyper_init=self.hyper_init, **self._options())


class VCRNN(CellModule):
  """:func:`vcrnn_jax.vc.vcrnn` as a flax module (VCRNN paper Eq. 7, 11-13).

  The per-step output is a :class:`vcrnn_jax.vc.VCOutput`; a ``sharpness``
  schedule reads ``context.step``.
  """
  features: int
  sharpness: Any = 1.0
  epsilon: float = 0.01
  scheduler_bias: float = 0.0
  scheduler_init: Initializer = jax.nn.initializers.zeros
  hard: bool = False
  block_sizes: Any = 8
  batch_groups: int = 1
  kernel_init: Initializer = _common.default_kernel_init
  recurrent_init: Initializer = _common.default_recurrent_init
  bias_init: Initializer = _common.default_bias_init
  param_dtype: Any = jnp.float32

  @nn.nowrap
  def _factory(self) -> Callable[..., Cell]:
    return vc.vcrnn

  @nn.nowrap
  def make_cell(self) -> Cell:
    return self._factory()(
        self.features, sharpness=self.sharpness, epsilon=self.epsilon,
        scheduler_bias=self.scheduler_bias,
        scheduler_init=self.scheduler_init, hard=self.hard,
        block_sizes=self.block_sizes, batch_groups=self.batch_groups,
        kernel_init=self.kernel_init, recurrent_init=self.recurrent_init,
        bias_init=self.bias_init, param_dtype=self.param_dtype)


class VCGRU(VCRNN):
  """:func:`vcrnn_jax.vc.vcgru` as a flax module (VCRNN paper Eq. 7, 14-17)."""

  @nn.nowrap
  def _factory(self) -> Callable[..., Cell]:
    return vc.vcgru


class Stack(CellModule):
  """:func:`vcrnn_jax.cells.stack` of other modules' cells as one module.

  ``layers`` are :class:`CellModule` s (bottom first) that hold no params of
  their own; they live in ``'cell'`` as ``layer_0``, ``layer_1``, ...
  """
  layers: Sequence[CellModule]
  dropout: float = 0.0

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


class _CarryOfInner(CellModule):
  """A wrapper of ``self.inner`` whose carry is the inner module's carry.

  Subclasses give ``_wrap(inner_cell) -> Cell``, the pure wrapper.
  """

  @nn.nowrap
  def _wrap(self, inner: Cell) -> Cell:
    raise NotImplementedError

  @nn.nowrap
  def make_cell(self) -> Cell:
    return self._wrap(self.inner.make_cell())

  @nn.nowrap
  def cell_for_carry(self, carry: Any) -> Cell:
    return self._wrap(self.inner.cell_for_carry(carry))

  @nn.nowrap
  def initialize_carry(self, rng, input_shape):
    return self.inner.initialize_carry(rng, input_shape)


class ACT(_CarryOfInner):
  """:func:`vcrnn_jax.act.adaptive` around another module's cell.

  ``inner`` is any :class:`CellModule` (its ``make_cell()`` gives the
  wrapped pure cell; it holds no params of its own, they live in the ACT
  params' ``'cell'`` entry); the other fields are ``adaptive``'s arguments.
  ``output_size=None`` (the default) adds no output layer: the output is the
  mean field of the inner cell's output (``h`` for Elman, GRU, LSTM). The
  per-step output is an :class:`vcrnn_jax.act.ACTOutput`; ``nn.RNN`` stacks it
  over time like any pytree. The carry is the inner cell's.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from flax import linen as nn
    >>> from vcrnn_jax import linen
    >>> rnn = nn.RNN(linen.ACT(linen.GRU(16), output_size=10, max_steps=20))
    >>> xs = jnp.ones((2, 5, 3))                  # [batch, time, in]
    >>> variables = rnn.init(jax.random.key(0), xs)
    >>> out = rnn.apply(variables, xs)
    >>> out.output.shape, out.ponder.shape
    ((2, 5, 10), (2, 5))
  """
  inner: CellModule
  output_size: int | None = None
  max_steps: int = 100
  epsilon: float = 0.01
  halting_bias: float = 1.0
  halt_features: Callable[[Any, jax.Array], jax.Array] | None = None
  loop: loops.LoopConfig | str = loops.LoopConfig()
  kernel_init: Initializer = _common.default_kernel_init
  param_dtype: Any = None

  @nn.nowrap
  def _wrap(self, inner: Cell) -> Cell:
    return act.adaptive(
        inner, self.output_size, max_steps=self.max_steps,
        epsilon=self.epsilon, halting_bias=self.halting_bias,
        halt_features=self.halt_features, loop=self.loop,
        kernel_init=self.kernel_init,
        param_dtype=self.param_dtype)


class PonderNet(_CarryOfInner):
  """:func:`vcrnn_jax.ponder.pondernet` around another module's cell.

  ``inner`` is any :class:`CellModule` (its ``make_cell()`` gives the
  wrapped pure cell; it holds no params of its own, they live in the
  PonderNet params' ``'cell'`` entry); the other fields are ``pondernet``'s
  arguments. The wrapped cell reads the input plus ACT's first-step flag, as
  in ACT. The per-step output is a :class:`vcrnn_jax.ponder.PonderOutput`;
  ``nn.RNN`` stacks it over time like any pytree. The carry is the inner
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
  inner: CellModule
  output_size: int = 1
  max_steps: int = 20
  epsilon: float = 0.05
  halting_bias: float = 0.0
  inference: str = 'train'
  loop: loops.LoopConfig | str = loops.LoopConfig()
  kernel_init: Initializer = _common.default_kernel_init
  param_dtype: Any = None

  @nn.nowrap
  def _wrap(self, inner: Cell) -> Cell:
    return ponder.pondernet(
        inner, self.output_size, max_steps=self.max_steps,
        epsilon=self.epsilon, halting_bias=self.halting_bias,
        inference=self.inference, loop=self.loop,
        kernel_init=self.kernel_init, param_dtype=self.param_dtype)


class Repeat(_CarryOfInner):
  """:func:`vcrnn_jax.repeat.repeat` around another module's cell.

  ``inner`` is any :class:`CellModule` (its ``make_cell()`` gives the
  wrapped pure cell; it holds no params of its own, they live in the Repeat
  params' ``'cell'`` entry); ``repetitions`` is ``repeat``'s. The wrapped
  cell reads the input plus ACT's first-step flag. The per-step output is the
  inner cell's after the last repetition; the carry is the inner cell's.

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
  inner: CellModule
  repetitions: int = 1

  @nn.nowrap
  def _wrap(self, inner: Cell) -> Cell:
    return repeat.repeat(inner, self.repetitions)


class Skip(CellModule):
  """:func:`vcrnn_jax.skip.skip` around another module's cell.

  ``inner`` is any :class:`CellModule` (its ``make_cell()`` gives the
  wrapped pure cell; it holds no params of its own, they live in the Skip
  params' ``'cell'`` entry); the other fields are ``skip``'s arguments
  (``features`` is the gate's feature function, not a width). The wrapped
  cell reads the input unchanged. The per-step output is a
  :class:`vcrnn_jax.skip.SkipOutput`; the carry is a
  :class:`vcrnn_jax.skip.SkipState` around the inner cell's carry (its
  width, as flax's, comes from that carry).

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
  inner: CellModule
  update_bias: float = 1.0
  features: Callable[[Any, jax.Array], jax.Array] | None = None
  hard: bool = False
  row_buckets: int = 1
  kernel_init: Initializer = _common.default_kernel_init
  param_dtype: Any = None

  @nn.nowrap
  def _wrap(self, inner: Cell) -> Cell:
    return skip.skip(
        inner, update_bias=self.update_bias, features=self.features,
        hard=self.hard, row_buckets=self.row_buckets,
        kernel_init=self.kernel_init, param_dtype=self.param_dtype)

  @nn.nowrap
  def make_cell(self) -> Cell:
    return self._wrap(self.inner.make_cell())

  @nn.nowrap
  def cell_for_carry(self, carry: Any) -> Cell:
    if not isinstance(carry, skip.SkipState):
      return self.make_cell()
    return self._wrap(self.inner.cell_for_carry(carry.cell))


def _select(pred: jax.Array, new: Any, old: Any) -> Any:
  def sel(a, b):
    return jnp.where(pred.reshape(pred.shape + (1,) * (a.ndim - 1)), a, b)
  return jax.tree_util.tree_map(sel, new, old)


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
      carry = _flatten_batch(initial_carry, len(batch_shape), size)
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
      y = _select(valid, y, jax.tree_util.tree_map(jnp.zeros_like, y))
      return _select(valid, new_carry, carry), y

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
    carry = _restore_batch(carry, batch_shape)
    return (carry, ys) if return_carry else ys


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


def lstm_state_to_flax(state: cells.LSTMState) -> tuple[jax.Array, jax.Array]:
  """``LSTMState(c, h)`` -> flax's ``(c, h)`` carry (a plain tuple)."""
  return (state.c, state.h)


def lstm_state_from_flax(carry: tuple[jax.Array, jax.Array]) -> cells.LSTMState:
  """flax's ``(c, h)`` carry -> :class:`vcrnn_jax.cells.LSTMState`."""
  c, h = carry
  return cells.LSTMState(c=c, h=h)
