"""What the cell factories share: initialisers, checks, biases, dtypes."""

from collections.abc import Callable
import inspect
import types
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


def defaults(factory: Callable[..., Any]) -> types.SimpleNamespace:
  """The defaults of ``factory``'s arguments, as attributes of their names.

  A factory's signature is the one place its settings are declared; the Flax
  modules read their defaults from it (``_LSTM.forget_bias``) rather than
  restating them.
  """
  return types.SimpleNamespace(**{
      name: p.default
      for name, p in inspect.signature(factory).parameters.items()
      if p.default is not inspect.Parameter.empty})


def keyword_options(factory: Callable[..., Any]) -> tuple[str, ...]:
  """The names of ``factory``'s keyword-only arguments, its options."""
  return tuple(name for name, p in inspect.signature(factory).parameters.items()
               if p.kind is inspect.Parameter.KEYWORD_ONLY)


def check_function(name: str, value: Any) -> Callable:
  if not callable(value):
    raise ValueError(f'{name} must be a function, got {value!r}.')
  return value


def check_dtype(name: str, value: Any, optional: bool = False) -> Any:
  """``value`` as a floating dtype (or None where ``optional``)."""
  if value is None and optional:
    return None
  try:
    # jnp.dtype(None) is NumPy's default float, not a refusal.
    dtype = None if value is None else jnp.dtype(value)
  except TypeError:
    dtype = None
  if dtype is None or not jnp.issubdtype(dtype, jnp.floating):
    allowed = 'a floating dtype or None' if optional else 'a floating dtype'
    raise ValueError(f'{name} must be {allowed}, got {value!r}.')
  return dtype


def wider(*dtypes: Any) -> jnp.dtype:
  """The dtype standard promotion gives ``dtypes`` (bfloat16, float32: float32).

  Asked for explicitly, as in :func:`at_least_float32`, since strict
  promotion has no path between two float types.
  """
  with jax.numpy_dtype_promotion('standard'):
    return jnp.dtype(jnp.result_type(*dtypes))


def carry_dtype(param_dtype: Any, dtype: Any) -> jnp.dtype:
  """The state's dtype: the params', or the wider of them and ``dtype``.

  It is the carry ``flax``'s LSTM and GRU cells hold after one step (the
  update mixes the new gates, in ``dtype``, with the old carry), so a
  ``lax.scan`` over the cell keeps one carry type.
  """
  if dtype is None:
    return jnp.dtype(param_dtype)
  return wider(param_dtype, dtype)


def cast(a: jax.Array, dtype: Any) -> jax.Array:
  return a if a.dtype == dtype else a.astype(dtype)


def widen(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
  """``a`` and ``b`` in their common dtype, as standard promotion mixes them.

  A gate in the computation dtype times a carry in the params' dtype is
  computed in the wider of the two, as ``flax``'s cells compute it.
  """
  dtype = wider(a.dtype, b.dtype)
  return cast(a, dtype), cast(b, dtype)


def promote(arrays: tuple, dtype: Any, weight_dtype: Any,
            promote_dtype: Callable | None) -> tuple:
  """The inputs and params of one step, in the computation dtype.

  ``promote_dtype`` None: every array cast to ``dtype``, or to the params'
  ``weight_dtype`` when ``dtype`` is None. Otherwise ``promote_dtype(arrays,
  dtype=dtype)``, the hook of ``flax.nnx.Linear`` (its default,
  ``flax.nnx.nn.dtypes.promote_dtype``, infers a common dtype when ``dtype``
  is None).
  """
  if promote_dtype is None:
    target = weight_dtype if dtype is None else dtype
    return tuple(cast(a, target) for a in arrays)
  return tuple(promote_dtype(tuple(arrays), dtype=dtype))


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
