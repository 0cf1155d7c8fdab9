"""Long short-term memory, as written in the EI-REHN paper."""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax.cells import _common
from vcrnn_jax.core import Cell, check_apply_args, check_positive_int


class LSTMState(NamedTuple):
  h: jax.Array  # [batch, hidden_size] hidden output
  c: jax.Array  # [batch, hidden_size] memory cell


def lstm(
    hidden_size: int,
    *,
    forget_bias: float = 1.0,
    kernel_init: _common.Initializer = _common.default_kernel_init,
    recurrent_init: _common.Initializer = _common.default_recurrent_init,
    param_dtype: Any = jnp.float32,
) -> Cell:
  r"""The standard LSTM (no peepholes), EI-REHN paper Eq. 3-5.

  .. math::

    (a_t, i_t, f_t, o_t) = (\tanh, \sigma, \sigma, \sigma)\,
        W_L [h_{t-1}; x_t; 1]                                   \quad (5)

    c_t = f_t \otimes c_{t-1} + i_t \otimes a_t                  \quad (4)

    h_t = o_t \otimes \tanh(c_t)                                 \quad (3)

  ``forget_bias`` is where the forget-gate bias is *initialised* (a common
  choice is 1, Jozefowicz et al. 2015); it is an ordinary trainable bias, so
  ``apply`` is exactly Eq. 5. Use ``forget_bias=0.0`` for an all-zero bias.

  Params (fused, gate order ``a, i, f, o`` as in Eq. 5; ``W_L`` split into its
  input, recurrent and bias columns):

  * ``input_kernel``: ``[input_size, 4 * hidden_size]``
  * ``recurrent_kernel``: ``[hidden_size, 4 * hidden_size]``
  * ``bias``: ``[4 * hidden_size]``

  State: :class:`LSTMState` ``(h, c)``; output ``y = h_t``.
  :func:`vcrnn_jax.linen.lstm_params_to_flax` converts the params to those of
  ``flax.linen.LSTMCell``.

  Example::

    cell = lstm(128)
    params = cell.init(jax.random.key(0), input_size=102)
    state, h = cell.apply(params, cell.initial_state(16), jnp.ones((16, 102)))

  References:
    Park & Yoo, Early Improving Recurrent Elastic Highway Network, 2017.
    Hochreiter & Schmidhuber, Long Short-Term Memory, 1997.
  """
  hidden_size = check_positive_int('hidden_size', hidden_size)

  def init(key, input_size):
    input_size = _common.check_input_size(input_size)
    k1, k2 = jax.random.split(key)
    bias = jnp.zeros((4 * hidden_size,), param_dtype)
    bias = bias.at[2 * hidden_size:3 * hidden_size].set(forget_bias)
    return {
        'input_kernel': _common.initialize(
            kernel_init, k1, (input_size, 4 * hidden_size), param_dtype),
        'recurrent_kernel': _common.stacked_recurrent_init(
            recurrent_init, k2, hidden_size, 4, param_dtype),
        'bias': bias,
    }

  def initial_state(batch_size):
    batch_size = _common.check_batch_size(batch_size)
    zeros = jnp.zeros((batch_size, hidden_size), param_dtype)
    return LSTMState(h=zeros, c=zeros)

  def apply(params, state, x, context=None):
    del context  # A fixed-computation cell uses no extras.
    x = check_apply_args('lstm', params['input_kernel'].shape[0], state, x,
                         params['input_kernel'].dtype)
    gates = (x @ params['input_kernel'] + state.h @ params['recurrent_kernel']
             + params['bias'])
    a, i, f, o = jnp.split(gates, 4, axis=-1)
    c = jax.nn.sigmoid(f) * state.c + jax.nn.sigmoid(i) * jnp.tanh(a)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return LSTMState(h=h, c=c), h

  return Cell(init, initial_state, apply)
