"""Thin ``flax.linen`` wrappers around the pure cells.

The modules hold params and call the pure functions; no maths lives here. They
implement ``flax.linen.RNNCellBase`` so they work inside ``flax.linen.RNN``::

  rnn = flax.linen.RNN(vcrnn_jax.linen.GRU(features=32))
  variables = rnn.init(key, xs)          # xs: [batch, time, in]
  ys = rnn.apply(variables, xs)

Each module holds one param, ``'cell'``, whose tree is exactly the pure cell's
params, so it can be passed to ``cell.apply`` directly (and vice versa). For a
module used on its own that is ``variables['params']['cell']``; inside
``flax.linen.RNN``, which names its cell submodule ``'cell'`` too, it is
``variables['params']['cell']['cell']``.

``__call__(carry, inputs, context=None)`` forwards an optional
:class:`vcrnn_jax.core.Context` (training step, dropout key, active rows) to
the pure cell; ``flax.linen.RNN`` calls it without one.
"""

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from vcrnn_jax import act
from vcrnn_jax import cells
from vcrnn_jax import rehn
from vcrnn_jax.core import Cell


class CellModule(nn.RNNCellBase):
  """Wraps any :class:`vcrnn_jax.Cell`; subclasses only build the cell."""

  def make_cell(self) -> Cell:
    raise NotImplementedError(
        f'{type(self).__name__} must override make_cell() to return the '
        'vcrnn_jax.Cell it wraps (see Elman, GRU, LSTM below).')

  @nn.compact
  def __call__(self, carry, inputs, context=None):
    cell = self.make_cell()
    params = self.param('cell', lambda key: cell.init(key, inputs.shape[-1]))
    return cell.apply(params, carry, inputs, context)

  @nn.nowrap
  def initialize_carry(self, rng, input_shape):
    del rng  # States start at zero (no learned or random initial state).
    if len(input_shape) != 2:
      raise ValueError(
          f'{type(self).__name__}.initialize_carry: input_shape must be '
          f'(batch, features), got {tuple(input_shape)}.')
    return self.make_cell().initial_state(input_shape[0])

  @property
  def num_feature_axes(self) -> int:
    return 1


class Elman(CellModule):
  """:func:`vcrnn_jax.cells.elman` as a flax module."""
  features: int

  @nn.nowrap
  def make_cell(self) -> Cell:
    return cells.elman(self.features)


class GRU(CellModule):
  """:func:`vcrnn_jax.cells.gru` as a flax module (VCRNN paper Eq. 4-6)."""
  features: int

  @nn.nowrap
  def make_cell(self) -> Cell:
    return cells.gru(self.features)


class LSTM(CellModule):
  """:func:`vcrnn_jax.cells.lstm` as a flax module (EI-REHN paper Eq. 3-5)."""
  features: int
  forget_bias: float = 1.0

  @nn.nowrap
  def make_cell(self) -> Cell:
    return cells.lstm(self.features, forget_bias=self.forget_bias)


class RHN(CellModule):
  """:func:`vcrnn_jax.rehn.rhn` (``shared=True``: :func:`~vcrnn_jax.rehn.srhn`)
  as a flax module (EI-REHN paper Eq. 6-8)."""
  features: int
  depth: int
  shared: bool = False
  coupled: bool = True
  transform_bias: float = -2.0

  @nn.nowrap
  def make_cell(self) -> Cell:
    factory = rehn.srhn if self.shared else rehn.rhn
    return factory(self.features, self.depth, coupled=self.coupled,
                   transform_bias=self.transform_bias)


class SREHN(CellModule):
  """:func:`vcrnn_jax.rehn.srehn` as a flax module (Eq. 9-15)."""
  features: int
  max_depth: int

  @nn.nowrap
  def make_cell(self) -> Cell:
    return rehn.srehn(self.features, self.max_depth)


class EIREHN(CellModule):
  """:func:`vcrnn_jax.rehn.ei_rehn` as a flax module (Eq. 9-22).

  The per-step output is a :class:`vcrnn_jax.rehn.REHNOutput` (``output``,
  ``depth``); ``hyper_size`` None means ``ceil(features / 2)``.
  """
  features: int
  max_depth: int
  hyper_size: Any = None

  @nn.nowrap
  def make_cell(self) -> Cell:
    hyper = self.hyper_size or -(-self.features // 2)
    return rehn.ei_rehn(self.features, hyper, self.max_depth)


class ACT(CellModule):
  """:func:`vcrnn_jax.act.adaptive` around another module's cell.

  ``inner`` is any :class:`CellModule` (its ``make_cell()`` gives the
  wrapped pure cell; it holds no params of its own, they live in the ACT
  params' ``'cell'`` entry); the other fields are ``adaptive``'s arguments. The per-step
  output is an :class:`vcrnn_jax.act.ACTOutput`; ``nn.RNN`` stacks it over
  time like any pytree.

  Example::

    rnn = nn.RNN(linen.ACT(linen.GRU(64), output_size=10, max_steps=20))
    variables = rnn.init(key, xs)                # xs: [batch, time, in]
    out = rnn.apply(variables, xs)               # out.output: [B, T, 10]
  """
  inner: CellModule
  output_size: int
  max_steps: int = 100
  epsilon: float = 0.01
  halting_bias: float = 1.0
  loop: str = 'while'
  checkpoints: int = 8
  save_residuals: bool = False
  compact_rows: Any = None

  @nn.nowrap
  def make_cell(self) -> Cell:
    return act.adaptive(
        self.inner.make_cell(), self.output_size, max_steps=self.max_steps,
        epsilon=self.epsilon, halting_bias=self.halting_bias, loop=self.loop,
        checkpoints=self.checkpoints, save_residuals=self.save_residuals,
        compact_rows=self.compact_rows)


def lstm_params_to_flax(params: Any) -> dict:
  """Converts :func:`vcrnn_jax.cells.lstm` params to ``flax.linen.LSTMCell``'s.

  flax's cell computes ``i, f, g, o`` from separate dense layers: input
  kernels ``ii, if, ig, io`` (no bias) and recurrent kernels ``hi, hf, hg, ho``
  (with bias). Our fused gate order is ``a(=g), i, f, o``. The flax carry is
  ``(c, h)``; ours is ``LSTMState(h, c)``.
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
  """``LSTMState(h, c)`` -> flax's ``(c, h)`` carry."""
  return (state.c, state.h)
