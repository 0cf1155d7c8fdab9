r"""The adding problem as Skip-RNN uses it (Campos et al. 2018, Sec. 4.1).

Each example is a sequence of ``seq_len`` pairs ``(value, marker)``: values
uniform in ``[-0.5, 0.5)``, markers 0 except at two steps, one among the first
10% of the sequence and one among its last 50%. The target is the sum of the
two marked values, read after the last step. Predicting the mean (0) scores
the variance of that sum, ``2 / 12 = 1/6`` (:data:`BASELINE_MSE`); a model
that solves the task is well below it.

The marker positions follow the authors' code (``01_adding_task.py``): the
first uniform on ``[0, floor(0.1 T) - 1]``, the second on
``[floor(0.5 T), T - 1]``. Their reported "MSE" is ``tf.nn.l2_loss / batch``,
half the mean squared error; :func:`squared_errors` is the plain one.

>>> import jax
>>> from vcrnn_jax.tasks import adding
>>> batch = adding.sample(jax.random.key(0), 4)
>>> batch.inputs.shape, batch.targets.shape
((4, 50, 2), (4, 1))
>>> [int(n) for n in batch.inputs[..., 1].sum(axis=1)]     # two markers each
[2, 2, 2, 2]
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax.core import check_positive_int

__all__ = [
    'BASELINE_MSE',
    'FIRST_FRACTION',
    'SECOND_FRACTION',
    'AddingBatch',
    'sample',
    'squared_errors',
]

BASELINE_MSE = 1.0 / 6.0   # Var(a + b) for a, b ~ U(-0.5, 0.5)
FIRST_FRACTION = 0.1       # the first marker lies in the first 10%
SECOND_FRACTION = 0.5      # the second in the last 50%


class AddingBatch(NamedTuple):
  """A batch of the adding problem."""
  inputs: jax.Array    # [B, T, 2] float32: (value, marker) per step
  targets: jax.Array   # [B, 1] float32: the sum of the two marked values


@functools.partial(jax.jit, static_argnums=(1, 2))
def _draw(key: jax.Array, batch_size: int, seq_len: int) -> AddingBatch:
  k_values, k_first, k_second = jax.random.split(key, 3)
  values = jax.random.uniform(k_values, (batch_size, seq_len),
                              jnp.float32, -0.5, 0.5)
  first = jax.random.randint(k_first, (batch_size,), 0,
                             int(seq_len * FIRST_FRACTION), jnp.int32)
  second = jax.random.randint(k_second, (batch_size,),
                              int(seq_len * SECOND_FRACTION), seq_len,
                              jnp.int32)
  t = jnp.arange(seq_len, dtype=jnp.int32)[None, :]
  markers = ((t == first[:, None]) | (t == second[:, None])).astype(
      jnp.float32)
  targets = jnp.sum(values * markers, axis=1, keepdims=True)
  return AddingBatch(jnp.stack([values, markers], axis=-1), targets)


def sample(key: jax.Array, batch_size: int, seq_len: int = 50
           ) -> AddingBatch:
  """A batch of ``batch_size`` sequences of length ``seq_len`` (paper: 50).

  Raises:
    ValueError: ``batch_size`` is not positive, or ``seq_len`` is below 10
      (the first 10% must hold a step).
  """
  batch_size = check_positive_int('batch_size', batch_size)
  seq_len = check_positive_int('seq_len', seq_len)
  if int(seq_len * FIRST_FRACTION) < 1:
    raise ValueError(f'seq_len must be at least 10 (the first marker lies in '
                     f'the first 10% of the steps), got {seq_len}.')
  return _draw(key, batch_size, seq_len)


def squared_errors(predictions: jax.Array, batch: AddingBatch) -> jax.Array:
  """``[B]`` squared error of ``[B, 1]`` predictions against the targets."""
  return jnp.sum((predictions - batch.targets) ** 2, axis=-1)
