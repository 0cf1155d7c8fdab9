"""Gated recurrent unit, exactly as written in the VCRNN paper."""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax.cells import _common
from vcrnn_jax.core import Cell, check_apply_args, check_positive_int


class GRUState(NamedTuple):
  h: jax.Array  # [batch, hidden_size]


def gru(
    hidden_size: int,
    *,
    kernel_init: _common.Initializer = _common.default_kernel_init,
    recurrent_init: _common.Initializer = _common.default_recurrent_init,
    bias_init: _common.Initializer = _common.default_bias_init,
    param_dtype: Any = jnp.float32,
) -> Cell:
  r"""The GRU of the VCRNN paper, Eq. 4-6.

  .. math::

    r_t = \sigma(U_r h_{t-1} + V_r x_t + b_r), \quad
    z_t = \sigma(U_z h_{t-1} + V_z x_t + b_z)                  \quad (4)

    \tilde h_t = \tanh(U (r_t \odot h_{t-1}) + V x_t + b_h)     \quad (5)

    h_t = z_t \odot \tilde h_t + (1 - z_t) \odot h_{t-1}        \quad (6)

  The reset gate multiplies ``h_{t-1}`` *before* the recurrent matmul (Eq. 5),
  as in Cho et al. 2014; cuDNN-style GRUs apply it after. ``z_t`` weights the
  *new* state (Eq. 6), the opposite convention to ``flax.linen.GRUCell``.
  The paper writes no biases; they are included (zero-initialised) as in every
  published GRU.

  Params (fused per gate, order ``r, z, h``):

  * ``input_kernel``: ``[input_size, 3 * hidden_size]`` (``V_r, V_z, V``)
  * ``recurrent_gates_kernel``: ``[hidden_size, 2 * hidden_size]``
    (``U_r, U_z``)
  * ``recurrent_kernel``: ``[hidden_size, hidden_size]`` (``U``)
  * ``bias``: ``[3 * hidden_size]`` (``b_r, b_z, b_h``)

  State: :class:`GRUState` ``(h,)``; output ``y = h_t``.

  Example::

    cell = gru(64)
    params = cell.init(jax.random.key(0), input_size=10)
    state, h = cell.apply(params, cell.initial_state(2), jnp.ones((2, 10)))

  References:
    Jernite et al., Variable Computation in Recurrent Neural Networks, 2017.
    Cho et al., Learning Phrase Representations using RNN Encoder-Decoder, 2014.
  """
  hidden_size = check_positive_int('hidden_size', hidden_size)

  def init(key, input_size):
    input_size = _common.check_input_size(input_size)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return {
        'input_kernel': _common.stacked_init(
            kernel_init, k1, input_size, hidden_size, 3, param_dtype),
        'recurrent_gates_kernel': _common.stacked_recurrent_init(
            recurrent_init, k2, hidden_size, 2, param_dtype),
        'recurrent_kernel': _common.initialize(
            recurrent_init, k3, (hidden_size, hidden_size), param_dtype),
        'bias': _common.initialize(
            bias_init, k4, (3 * hidden_size,), param_dtype),
    }

  def initial_state(batch_size):
    batch_size = _common.check_batch_size(batch_size)
    return GRUState(h=jnp.zeros((batch_size, hidden_size), param_dtype))

  def apply(params, state, x, context=None):
    del context  # A fixed-computation cell uses no extras.
    x = check_apply_args('gru', params['input_kernel'].shape[0], state, x,
                         params['input_kernel'].dtype, width=hidden_size)
    h_prev = state.h
    xi = _common.add_bias(x @ params['input_kernel'], params['bias'])
    x_r, x_z, x_h = jnp.split(xi, 3, axis=-1)
    g_r, g_z = jnp.split(h_prev @ params['recurrent_gates_kernel'], 2, axis=-1)
    r = jax.nn.sigmoid(x_r + g_r)
    z = jax.nn.sigmoid(x_z + g_z)
    h_tilde = jnp.tanh((r * h_prev) @ params['recurrent_kernel'] + x_h)
    h = z * h_tilde + (1.0 - z) * h_prev
    return GRUState(h=h), h

  return Cell(init, initial_state, apply)
