"""Long short-term memory, as written in the EI-REHN paper."""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax import utils
from vcrnn_jax.core import (
  Cell,
  check_apply_args,
  check_dtype,
  check_function,
  check_positive_int,
  field_docs,
)

__all__ = ['LSTMState', 'lstm']


@field_docs
class LSTMState(NamedTuple):
  """The LSTM carry, in ``flax.linen.LSTMCell``'s order: ``c, h = state``.

  Attributes:
    c: [batch, hidden_size] memory cell
    h: [batch, hidden_size] hidden output
  """
  c: jax.Array
  h: jax.Array


def lstm(
    hidden_size: int,
    *,
    gate_fn: Callable[[jax.Array], jax.Array] = jax.nn.sigmoid,
    activation_fn: Callable[[jax.Array], jax.Array] = jnp.tanh,
    kernel_init: utils.Initializer = utils.default_kernel_init,
    recurrent_kernel_init: utils.Initializer = (
        utils.default_recurrent_kernel_init),
    bias_init: utils.Initializer = utils.default_bias_init,
    dtype: Any = None,
    param_dtype: Any = jnp.float32,
    promote_dtype: Callable[..., Any] | None = None,
    forget_bias: float = 0.0,
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
  exactly Eq. 5. The other arguments are those of ``flax.nnx.LSTMCell`` with
  their meaning: ``gate_fn`` replaces :math:`\sigma` and ``activation_fn``
  both ``tanh`` of Eq. 3 and 5.

  Args:
    hidden_size: ``H``, the width of ``h`` and ``c``.
    gate_fn: the nonlinearity of ``i, f, o`` (:math:`\sigma`).
    activation_fn: the nonlinearity of ``a`` and of ``c_t`` in Eq. 3
      (``tanh``).
    kernel_init: initialiser of each gate's input block ``[input_size, H]``.
    recurrent_kernel_init: initialiser of each gate's recurrent block
      ``[H, H]``.
    bias_init: initialiser of each gate's bias ``[H]``.
    dtype: the computation dtype: inputs, params and the state are cast to
      it for the gates (flax's meaning); None computes in the params' dtype.
    param_dtype: dtype of the params. The state is in the wider of
      ``param_dtype`` and ``dtype``, and Eq. 3-4 combine the gates with it
      there, as flax's cell does.
    promote_dtype: None, or ``flax.nnx.Linear``'s hook (see
      :func:`vcrnn_jax.cells.elman`).
    forget_bias: added to the initial forget-gate bias.

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
  gate_fn = check_function('gate_fn', gate_fn)
  activation_fn = check_function('activation_fn', activation_fn)
  dtype = check_dtype('dtype', dtype, optional=True)
  param_dtype = check_dtype('param_dtype', param_dtype)

  def init(key, input_size):
    input_size = check_positive_int('input_size', input_size)
    k1, k2, k3 = jax.random.split(key, 3)
    bias = jnp.concatenate(
        [utils.initialize(bias_init, k, (hidden_size,), param_dtype)
         for k in jax.random.split(k3, 4)])
    bias = bias.at[2 * hidden_size:3 * hidden_size].add(
        jnp.asarray(forget_bias, param_dtype))
    return {
        'input_kernel': utils.stacked_init(
            kernel_init, k1, input_size, hidden_size, 4, param_dtype),
        'recurrent_kernel': utils.stacked_init(
            recurrent_kernel_init, k2, hidden_size, hidden_size, 4,
            param_dtype),
        'bias': bias,
    }

  def initial_state(batch_size):
    batch_size = check_positive_int('batch_size', batch_size)
    zeros = jnp.zeros((batch_size, hidden_size),
                      utils.carry_dtype(param_dtype, dtype))
    return LSTMState(c=zeros, h=zeros)

  def apply(params, state, x, context=None):
    del context  # A fixed-computation cell uses no extras.
    w_in = params['input_kernel']
    state_dtype = utils.carry_dtype(w_in.dtype, dtype)
    check_apply_args('lstm', w_in.shape[0], state, x, state_dtype,
                     width=hidden_size)
    x, h, w_in, w_h, b = utils.promote(
        (x, state.h, w_in, params['recurrent_kernel'], params['bias']),
        dtype, w_in.dtype, promote_dtype)
    gates = utils.add_bias(x @ w_in + h @ w_h, b)
    a, i, f, o = jnp.split(gates, 4, axis=-1)
    # Eq. 4 and 3 mix the gates with the cell state in the wider dtype of
    # the two, as flax's cell does (``f * c + i * g``).
    f, c_prev = utils.widen(gate_fn(f), state.c)
    c = f * c_prev + utils.cast(gate_fn(i) * activation_fn(a), c_prev.dtype)
    o, c = utils.widen(gate_fn(o), c)
    h = o * activation_fn(c)
    c, h = utils.cast(c, state_dtype), utils.cast(h, state_dtype)
    return LSTMState(c=c, h=h), h

  return Cell(init, initial_state, apply)
