"""Helpers shared by the cell factories: initialisers, checks, biases."""

from typing import Any

import jax
import jax.numpy as jnp

from vcrnn_jax.core import check_positive_int

Initializer = Any

# flax.linen's defaults (``nn.Dense``, ``nn.LSTMCell``, ``nn.GRUCell``): LeCun
# normal input kernels, orthogonal recurrent kernels, zero biases.
default_kernel_init = jax.nn.initializers.lecun_normal()
default_recurrent_init = jax.nn.initializers.orthogonal()
default_bias_init = jax.nn.initializers.zeros


def check_input_size(input_size: Any) -> int:
  return check_positive_int('input_size', input_size)


def check_batch_size(batch_size: Any) -> int:
  return check_positive_int('batch_size', batch_size)


def initialize(init: Initializer, key: jax.Array, shape: tuple,
               dtype: Any) -> jax.Array:
  """``init(key, shape, dtype)``, drawn in float32 for 16-bit dtypes.

  The orthogonal initialiser needs a QR decomposition, which XLA's CPU backend
  has no bfloat16 or float16 kernel for; drawing in float32 and casting gives
  the same distribution on every backend.
  """
  dtype = jnp.dtype(dtype)
  if jnp.issubdtype(dtype, jnp.floating) and dtype.itemsize < 4:
    return init(key, shape, jnp.float32).astype(dtype)
  return init(key, shape, dtype)


def stacked_init(init: Initializer, key: jax.Array, rows: int,
                 hidden_size: int, num_blocks: int, dtype: Any) -> jax.Array:
  """``num_blocks`` independently initialised ``[rows, H]`` blocks side by side.

  A fused kernel ``[rows, k*H]`` holds one ``[rows, H]`` kernel per gate.
  Initialising the fused matrix as one would change what the initialiser
  means (an orthogonal ``[H, k*H]`` couples the gates; a fan-average scale
  such as Glorot's counts ``k*H`` outputs), so each gate's block is drawn on
  its own, exactly as ``flax.linen``'s one-``Dense``-per-gate cells do.
  """
  keys = jax.random.split(key, num_blocks)
  return jnp.concatenate(
      [initialize(init, k, (rows, hidden_size), dtype) for k in keys],
      axis=-1)


def stacked_recurrent_init(init: Initializer, key: jax.Array, hidden_size: int,
                           num_blocks: int, dtype: Any) -> jax.Array:
  """``num_blocks`` independently initialised ``[H, H]`` blocks side by side."""
  return stacked_init(init, key, hidden_size, hidden_size, num_blocks, dtype)


def at_least_float32(dtype: Any) -> jnp.dtype:
  """``dtype`` promoted to at least float32 (16-bit floats and ints: float32).

  It is ``jnp.promote_types(dtype, jnp.float32)`` on the standard lattice,
  asked for explicitly: under ``jax_numpy_dtype_promotion='strict'``,
  ``promote_types`` has no path between two float types at all.
  """
  with jax.numpy_dtype_promotion('standard'):
    return jnp.promote_types(dtype, jnp.float32)


def add_bias(y: jax.Array, b: jax.Array) -> jax.Array:
  """``y + b`` for ``y`` ``[*batch, F]`` and ``b`` ``[F]`` (or ``[..., F]``).

  ``b``'s missing leading axes are added explicitly (as ``flax.linen.Dense``
  does), so the sum is also valid under ``jax_numpy_rank_promotion='raise'``;
  the result is the one implicit broadcasting gives.
  """
  return y + jnp.reshape(b, (1,) * (y.ndim - b.ndim) + b.shape)
