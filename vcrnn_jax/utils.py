"""The shared toolbox for writing cells: initialisers, dtypes, biases, rows.

What the cells of the library use besides their own equations, public so
that a cell written elsewhere (a new paper's) is built from the same pieces
and behaves as the library's do: flax's initialisers by default, each gate's
block of a fused kernel drawn on its own, params drawn in float32 and cast,
explicit casts between float types (the tests run under
``jax_numpy_dtype_promotion='strict'``), biases and per-row values broadcast
explicitly (``jax_numpy_rank_promotion='raise'``).

>>> import jax, jax.numpy as jnp
>>> from vcrnn_jax import utils
>>> kernel = utils.stacked_init(utils.default_recurrent_kernel_init,
...                             jax.random.key(0), 4, 4, 3, jnp.bfloat16)
>>> kernel.shape, kernel.dtype        # three orthogonal [4, 4] gate blocks
((4, 12), dtype(bfloat16))
>>> utils.add_bias(jnp.zeros((2, 3)), jnp.arange(3.0)).tolist()
[[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]

Every factory of the library defaults to flax.linen's initialisers
(``nn.Dense``, ``nn.LSTMCell``, ``nn.GRUCell``): ``default_kernel_init``
(LeCun normal) for input kernels, ``default_recurrent_kernel_init``
(orthogonal) for recurrent kernels, ``default_bias_init`` (zeros) for biases.

The argument checks (``check_positive_int``, ``check_dtype``, ...) are
:mod:`vcrnn_jax.core`'s, beside the protocol. This module is below it: it
imports nothing else of the package, and ``core`` uses its :func:`cast` and
:func:`broadcast_rows`.
"""

from collections.abc import Callable
import inspect
import types
from typing import Any

import jax
import jax.numpy as jnp

__all__ = [
    'add_bias',
    'at_least_float32',
    'broadcast_rows',
    'carry_dtype',
    'cast',
    'defaults',
    'initialize',
    'keyword_options',
    'promote',
    'stacked_init',
    'wider',
    'widen',
]

# A jax.nn.initializers function: (key, shape, dtype) -> array.
Initializer = Any

# flax.linen's defaults: LeCun normal input kernels, orthogonal recurrent
# kernels, zero biases. Not in __all__: they are jax's functions (the
# module docstring names them).
default_kernel_init = jax.nn.initializers.lecun_normal()
default_recurrent_kernel_init = jax.nn.initializers.orthogonal()
default_bias_init = jax.nn.initializers.zeros


def defaults(factory: Callable[..., Any]) -> types.SimpleNamespace:
  """The defaults of ``factory``'s arguments, as attributes of their names.

  A factory's signature is the one place its settings are declared; the Flax
  modules read their defaults from it rather than restating them.

  >>> from vcrnn_jax import cells, utils
  >>> utils.defaults(cells.lstm).forget_bias
  0.0
  """
  return types.SimpleNamespace(**{
      name: p.default
      for name, p in inspect.signature(factory).parameters.items()
      if p.default is not inspect.Parameter.empty})


def keyword_options(factory: Callable[..., Any]) -> tuple[str, ...]:
  """The names of ``factory``'s keyword-only arguments, its options."""
  return tuple(name for name, p in inspect.signature(factory).parameters.items()
               if p.kind is inspect.Parameter.KEYWORD_ONLY)


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
  """``a`` in ``dtype``: ``a`` itself when it already is, else ``astype``.

  The one spelling of a float-to-float conversion whose source may already
  be the target (``.astype`` alone changes a kind: a mask or a count to a
  float).
  """
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


def at_least_float32(dtype: Any) -> jnp.dtype:
  """``dtype`` promoted to at least float32 (16-bit floats and ints: float32).

  It is ``jnp.promote_types(dtype, jnp.float32)`` on the standard lattice,
  asked for explicitly: under ``jax_numpy_dtype_promotion='strict'``,
  ``promote_types`` has no path between two float types at all.
  """
  with jax.numpy_dtype_promotion('standard'):
    return jnp.promote_types(dtype, jnp.float32)


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

  A fused kernel ``[rows, k*H]`` holds one ``[rows, H]`` kernel per gate
  (a recurrent one: ``rows=H``). Initialising the fused matrix as one would
  change what the initialiser means (an orthogonal ``[H, k*H]`` couples the
  gates; a fan-average scale such as Glorot's counts ``k*H`` outputs), so
  each gate's block is drawn on its own, exactly as ``flax.linen``'s
  one-``Dense``-per-gate cells do.
  """
  keys = jax.random.split(key, num_blocks)
  return jnp.concatenate(
      [initialize(init, k, (rows, hidden_size), dtype) for k in keys],
      axis=-1)


def add_bias(y: jax.Array, b: jax.Array) -> jax.Array:
  """``y + b`` for ``y`` ``[*batch, F]`` and ``b`` ``[F]`` (or ``[..., F]``).

  ``b``'s missing leading axes are added explicitly (as ``flax.linen.Dense``
  does), so the sum is also valid under ``jax_numpy_rank_promotion='raise'``;
  the result is the one implicit broadcasting gives.
  """
  return y + jnp.reshape(b, (1,) * (y.ndim - b.ndim) + b.shape)


def broadcast_rows(v: jax.Array, like: jax.Array) -> jax.Array:
  """``v`` ``[batch]`` with trailing unit axes, to broadcast against ``like``.

  A per-row value (a mask, a halting weight, a gate) meeting a per-row leaf
  ``[batch, ...]`` of any rank: ``v``'s axes are ``like``'s leading ones, and
  the missing ones are added explicitly, so the product is also valid under
  ``jax_numpy_rank_promotion='raise'``.

  >>> import jax.numpy as jnp
  >>> from vcrnn_jax import utils
  >>> utils.broadcast_rows(jnp.ones(4), jnp.ones((4, 2, 3))).shape
  (4, 1, 1)
  """
  return jnp.reshape(v, v.shape + (1,) * (like.ndim - v.ndim))
