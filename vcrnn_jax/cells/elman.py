"""Elman (simple tanh) recurrent cell."""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax import utils
from vcrnn_jax.core import (
  Cell,
  check_apply_args,
  check_bool,
  check_dtype,
  check_function,
  check_positive_int,
  field_docs,
)

__all__ = ['ElmanState', 'elman']


@field_docs
class ElmanState(NamedTuple):
  """The Elman carry.

  Attributes:
    h: ``[batch, hidden_size]`` the hidden state, which is also the output.
  """
  h: jax.Array


def elman(
    hidden_size: int,
    *,
    activation_fn: Callable[[jax.Array], jax.Array] = jnp.tanh,
    residual: bool = False,
    kernel_init: utils.Initializer = utils.default_kernel_init,
    recurrent_kernel_init: utils.Initializer = (
        utils.default_recurrent_kernel_init),
    bias_init: utils.Initializer = utils.default_bias_init,
    dtype: Any = None,
    param_dtype: Any = jnp.float32,
    promote_dtype: Callable[..., Any] | None = None,
) -> Cell:
  r"""The Elman unit, VCRNN paper Eq. 3 (with a bias, as in ACT Eq. 1).

  .. math::

    h_t = \tanh(U h_{t-1} + V x_t + b)          \quad (3)

  The arguments are those of ``flax.nnx.SimpleCell`` with their meaning
  (``residual=True`` adds ``h_{t-1}`` inside the activation, as there);
  the defaults compute Eq. 3.

  Args:
    hidden_size: the width of ``h``.
    activation_fn: the nonlinearity (``tanh`` in Eq. 3).
    residual: add ``h_{t-1}`` to the pre-activation.
    kernel_init: initialiser of ``input_kernel``.
    recurrent_kernel_init: initialiser of ``recurrent_kernel``.
    bias_init: initialiser of ``bias``.
    dtype: the computation dtype: inputs, params and the state are cast to
      it for the step (flax's meaning); None computes in the params' dtype.
    param_dtype: dtype of the params. The state is in the wider of
      ``param_dtype`` and ``dtype``.
    promote_dtype: None, or ``flax.nnx.Linear``'s hook: ``promote_dtype(
      arrays, dtype=dtype)`` returns the step's inputs, state and params
      ready for the computation.

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
  activation_fn = check_function('activation_fn', activation_fn)
  residual = check_bool('residual', residual)
  dtype = check_dtype('dtype', dtype, optional=True)
  param_dtype = check_dtype('param_dtype', param_dtype)

  def init(key, input_size):
    input_size = check_positive_int('input_size', input_size)
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        'input_kernel': utils.initialize(
            kernel_init, k1, (input_size, hidden_size), param_dtype),
        'recurrent_kernel': utils.initialize(
            recurrent_kernel_init, k2, (hidden_size, hidden_size),
            param_dtype),
        'bias': utils.initialize(
            bias_init, k3, (hidden_size,), param_dtype),
    }

  def initial_state(batch_size):
    batch_size = check_positive_int('batch_size', batch_size)
    return ElmanState(h=jnp.zeros((batch_size, hidden_size),
                                  utils.carry_dtype(param_dtype, dtype)))

  def apply(params, state, x, context=None):
    del context  # A fixed-computation cell uses no extras.
    w_in = params['input_kernel']
    state_dtype = utils.carry_dtype(w_in.dtype, dtype)
    check_apply_args('elman', w_in.shape[0], state, x, state_dtype,
                     width=hidden_size)
    x, h, w_in, w_h, b = utils.promote(
        (x, state.h, w_in, params['recurrent_kernel'], params['bias']),
        dtype, w_in.dtype, promote_dtype)
    pre = utils.add_bias(x @ w_in + h @ w_h, b)
    if residual:
      pre, h_prev = utils.widen(pre, state.h)
      pre = pre + h_prev
    h = utils.cast(activation_fn(pre), state_dtype)
    return ElmanState(h=h), h

  return Cell(init, initial_state, apply)
