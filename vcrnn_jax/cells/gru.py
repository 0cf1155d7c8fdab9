"""Gated recurrent unit, exactly as written in the VCRNN paper."""

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

__all__ = ['GRUState', 'gru']


@field_docs
class GRUState(NamedTuple):
  """The GRU carry.

  Attributes:
    h: ``[batch, hidden_size]`` the hidden state, which is also the output.
  """
  h: jax.Array


def gru(
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
  published GRU. ``flax.nnx.GRUCell`` computes
  ``n = \tanh(W_n x + b_n + r \odot (U_n h_{t-1}))`` (``flax.linen.GRUCell``
  also adds a bias inside the product) and ``h_t = (1 - z) n + z h_{t-1}``;
  this is the one GRU whose maths differ from Flax's, beyond the layout.

  The arguments are those of ``flax.nnx.GRUCell`` with their meaning
  (``gate_fn`` replaces :math:`\sigma`, ``activation_fn`` the ``tanh``).

  Args:
    hidden_size: the width of ``h``.
    gate_fn: the gates' nonlinearity (:math:`\sigma` in Eq. 4).
    activation_fn: the candidate's nonlinearity (``tanh`` in Eq. 5).
    kernel_init: initialiser of each gate's input block ``[input_size, H]``.
    recurrent_kernel_init: initialiser of each recurrent block ``[H, H]``.
    bias_init: initialiser of each gate's bias ``[H]``.
    dtype: the computation dtype: inputs, params and the state are cast to
      it for the step (flax's meaning); None computes in the params' dtype.
    param_dtype: dtype of the params. The state is in the wider of
      ``param_dtype`` and ``dtype``.
    promote_dtype: None, or ``flax.nnx.Linear``'s hook (see
      :func:`vcrnn_jax.cells.elman`).

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
  gate_fn = check_function('gate_fn', gate_fn)
  activation_fn = check_function('activation_fn', activation_fn)
  dtype = check_dtype('dtype', dtype, optional=True)
  param_dtype = check_dtype('param_dtype', param_dtype)

  def init(key, input_size):
    input_size = check_positive_int('input_size', input_size)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return {
        'input_kernel': utils.stacked_init(
            kernel_init, k1, input_size, hidden_size, 3, param_dtype),
        'recurrent_gates_kernel': utils.stacked_init(
            recurrent_kernel_init, k2, hidden_size, hidden_size, 2,
            param_dtype),
        'recurrent_kernel': utils.initialize(
            recurrent_kernel_init, k3, (hidden_size, hidden_size),
            param_dtype),
        'bias': utils.initialize(
            bias_init, k4, (3 * hidden_size,), param_dtype),
    }

  def initial_state(batch_size):
    batch_size = check_positive_int('batch_size', batch_size)
    return GRUState(h=jnp.zeros((batch_size, hidden_size),
                                utils.carry_dtype(param_dtype, dtype)))

  def apply(params, state, x, context=None):
    del context  # A fixed-computation cell uses no extras.
    w_in = params['input_kernel']
    state_dtype = utils.carry_dtype(w_in.dtype, dtype)
    check_apply_args('gru', w_in.shape[0], state, x, state_dtype,
                     width=hidden_size)
    x, h_prev, w_in, w_gates, w_h, b = utils.promote(
        (x, state.h, w_in, params['recurrent_gates_kernel'],
         params['recurrent_kernel'], params['bias']),
        dtype, w_in.dtype, promote_dtype)
    xi = utils.add_bias(x @ w_in, b)
    x_r, x_z, x_h = jnp.split(xi, 3, axis=-1)
    g_r, g_z = jnp.split(h_prev @ w_gates, 2, axis=-1)
    r = gate_fn(x_r + g_r)
    z = gate_fn(x_z + g_z)
    h_tilde = activation_fn((r * h_prev) @ w_h + x_h)
    # The terms with the old state in its own dtype (the wider one), as
    # flax's cells mix them.
    keep, old = utils.widen(1.0 - z, state.h)
    h = utils.cast(z * h_tilde, keep.dtype) + keep * old
    h = utils.cast(h, state_dtype)
    return GRUState(h=h), h

  return Cell(init, initial_state, apply)
