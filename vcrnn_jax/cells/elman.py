"""Elman (simple tanh) recurrent cell."""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax.cells import _common
from vcrnn_jax.core import Cell, check_apply_args, check_positive_int


class ElmanState(NamedTuple):
  h: jax.Array  # [batch, hidden_size]


def elman(
    hidden_size: int,
    *,
    kernel_init: _common.Initializer = _common.default_kernel_init,
    recurrent_init: _common.Initializer = _common.default_recurrent_init,
    bias_init: _common.Initializer = _common.default_bias_init,
    param_dtype: Any = jnp.float32,
) -> Cell:
  r"""The Elman unit, VCRNN paper Eq. 3 (with a bias, as in ACT Eq. 1).

  .. math::

    h_t = \tanh(U h_{t-1} + V x_t + b)          \quad (3)

  Params (names are part of the checkpoint format):

  * ``input_kernel``: ``[input_size, hidden_size]`` (``V^T``)
  * ``recurrent_kernel``: ``[hidden_size, hidden_size]`` (``U^T``)
  * ``bias``: ``[hidden_size]``

  State: :class:`ElmanState` ``(h,)``; output ``y = h_t``.

  Example::

    cell = elman(128)
    params = cell.init(jax.random.key(0), input_size=64)
    state, h = cell.apply(params, cell.initial_state(8), jnp.ones((8, 64)))

  References:
    Jernite et al., Variable Computation in Recurrent Neural Networks, 2017.
    Elman, Finding structure in time, 1990.
  """
  hidden_size = check_positive_int('hidden_size', hidden_size)

  def init(key, input_size):
    input_size = _common.check_input_size(input_size)
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        'input_kernel': _common.initialize(
            kernel_init, k1, (input_size, hidden_size), param_dtype),
        'recurrent_kernel': _common.initialize(
            recurrent_init, k2, (hidden_size, hidden_size), param_dtype),
        'bias': _common.initialize(
            bias_init, k3, (hidden_size,), param_dtype),
    }

  def initial_state(batch_size):
    batch_size = _common.check_batch_size(batch_size)
    return ElmanState(h=jnp.zeros((batch_size, hidden_size), param_dtype))

  def apply(params, state, x, context=None):
    del context  # A fixed-computation cell uses no extras.
    x = check_apply_args('elman', params['input_kernel'].shape[0], state, x,
                         params['input_kernel'].dtype, width=hidden_size)
    h = jnp.tanh(_common.add_bias(
        x @ params['input_kernel'] + state.h @ params['recurrent_kernel'],
        params['bias']))
    return ElmanState(h=h), h

  return Cell(init, initial_state, apply)
