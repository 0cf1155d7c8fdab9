"""Long short-term memory, as written in the EI-REHN paper."""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax.cells import _common
from vcrnn_jax.core import Cell, check_apply_args, check_positive_int


class LSTMState(NamedTuple):
  """The LSTM carry, in ``flax.linen.LSTMCell``'s order: ``c, h = state``."""
  c: jax.Array  # [batch, hidden_size] memory cell
  h: jax.Array  # [batch, hidden_size] hidden output


def lstm(
    hidden_size: int,
    *,
    forget_bias: float = 0.0,
    kernel_init: _common.Initializer = _common.default_kernel_init,
    recurrent_init: _common.Initializer = _common.default_recurrent_init,
    bias_init: _common.Initializer = _common.default_bias_init,
    param_dtype: Any = jnp.float32,
) -> Cell:
  r"""The standard LSTM (no peepholes), EI-REHN paper Eq. 3-5.

  .. math::

    (a_t, i_t, f_t, o_t) = (\tanh, \sigma, \sigma, \sigma)\,
        W_L [h_{t-1}; x_t; 1]                                   \quad (5)

    c_t = f_t \otimes c_{t-1} + i_t \otimes a_t                  \quad (4)

    h_t = o_t \otimes \tanh(c_t)                                 \quad (3)

  The defaults initialise as ``flax.linen.LSTMCell`` does: each gate's
  ``[input_size, H]`` input block LeCun-normal and each ``[H, H]`` recurrent
  block orthogonal, on its own; zero biases. ``forget_bias`` is added to the
  forget gate's initial bias (0 as in flax; 1 is the common alternative of
  Jozefowicz et al. 2015); it is an ordinary trainable bias, so ``apply`` is
  exactly Eq. 5.

  Args:
    hidden_size: ``H``, the width of ``h`` and ``c``.
    forget_bias: added to the initial forget-gate bias.
    kernel_init: initialiser of each gate's input block ``[input_size, H]``.
    recurrent_init: initialiser of each gate's recurrent block ``[H, H]``.
    bias_init: initialiser of each gate's bias ``[H]``.
    param_dtype: dtype of the params and the state.

  Params (fused, gate order ``a, i, f, o`` as in Eq. 5; ``W_L`` split into its
  input, recurrent and bias columns):

  * ``input_kernel``: ``[input_size, 4 * hidden_size]``
  * ``recurrent_kernel``: ``[hidden_size, 4 * hidden_size]``
  * ``bias``: ``[4 * hidden_size]``

  State: :class:`LSTMState` ``(c, h)``, flax's carry order; output
  ``y = h_t``.
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
    k1, k2, k3 = jax.random.split(key, 3)
    bias = jnp.concatenate(
        [_common.initialize(bias_init, k, (hidden_size,), param_dtype)
         for k in jax.random.split(k3, 4)])
    bias = bias.at[2 * hidden_size:3 * hidden_size].add(
        jnp.asarray(forget_bias, param_dtype))
    return {
        'input_kernel': _common.stacked_init(
            kernel_init, k1, input_size, hidden_size, 4, param_dtype),
        'recurrent_kernel': _common.stacked_recurrent_init(
            recurrent_init, k2, hidden_size, 4, param_dtype),
        'bias': bias,
    }

  def initial_state(batch_size):
    batch_size = _common.check_batch_size(batch_size)
    zeros = jnp.zeros((batch_size, hidden_size), param_dtype)
    return LSTMState(c=zeros, h=zeros)

  def apply(params, state, x, context=None):
    del context  # A fixed-computation cell uses no extras.
    x = check_apply_args('lstm', params['input_kernel'].shape[0], state, x,
                         params['input_kernel'].dtype, width=hidden_size)
    gates = _common.add_bias(
        x @ params['input_kernel'] + state.h @ params['recurrent_kernel'],
        params['bias'])
    a, i, f, o = jnp.split(gates, 4, axis=-1)
    c = jax.nn.sigmoid(f) * state.c + jax.nn.sigmoid(i) * jnp.tanh(a)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return LSTMState(c=c, h=h), h

  return Cell(init, initial_state, apply)
