"""The sort task of Graves (2016), Section 3.4.

A sequence of ``n`` numbers, ``n`` uniform on ``min_len..max_len`` (2..15),
drawn from a standard normal, is presented one number per step as size-2
vectors ``(value, end_flag)`` with ``end_flag = 1`` on the last number. Then
come ``n`` zero input vectors, during which the network outputs "the sequence
of indices into the number sequence placed in sorted order" (ascending), one
index per step, each a ``max_len``-way (15) softmax trained with cross-entropy
(Figure 16).

Readings of the paper, as implemented:

* **Target timing.** "No targets are present until after the sort sequence;
  thereafter ...": steps ``0..n-1`` carry the numbers and have no target; step
  ``n + j`` (the ``j``-th zero input, ``0 <= j < n``) has target ``i_j``, the
  0-based input index of the ``j``-th smallest number, so the outputs start at
  the first step after the end flag. Steps from ``2n`` on are padding (zero
  inputs, no target). The padded length is ``T = 2 * max_len``.
* Ties (probability zero for Gaussian samples) go to the lower index.
* ``difficulty`` is ``n`` (Figure 19). For this task the sequence length *is*
  the difficulty, so ``seq_len`` is the same override as ``difficulty``
  (the number of values to sort; the sequence then spans ``2 n`` steps) and
  both may be given only if equal. Forced values may be any ``n`` in
  ``1..max_len``.

Example::

  task = vcrnn_jax.tasks.sort.task()
  batch = task.sample(jax.random.key(0), 16)     # inputs [16, 30, 2]
  batch.targets.shape                            # (16, 30, 1) int32 in 0..14
  fig19 = task.sample(jax.random.key(1), 1000, difficulty=10)

References:
  Graves, A. Adaptive Computation Time for Recurrent Neural Networks. 2016,
  Section 3.4 and Figures 16-20.
"""

import functools

import jax
import jax.numpy as jnp

from vcrnn_jax.tasks import base

__all__ = ['sorted_index_targets', 'task']


@functools.partial(jax.jit, static_argnums=2)
def sorted_index_targets(values: jax.Array, lengths: jax.Array,
                         num_steps: int) -> tuple[jax.Array, jax.Array]:
  """Targets and mask of the sort task for given numbers.

  Args:
    values: ``[B, N]`` float, the numbers; entries at positions ``>= lengths``
      are ignored.
    lengths: ``[B]`` int in ``1..N``, how many numbers each row sorts.
    num_steps: ``T`` (at least ``2 N``), the padded sequence length.

  Returns:
    ``(targets, mask)``: ``[B, T]`` int32, ``targets[b, n + j]`` the index of
    the ``j``-th smallest of ``values[b, :n]`` for ``0 <= j < n = lengths[b]``
    and 0 elsewhere; ``[B, T]`` bool, True at those steps.
  """
  n_values = values.shape[-1]
  lengths = jnp.asarray(lengths, jnp.int32)
  index = jnp.arange(n_values, dtype=jnp.int32)[None, :]
  # Unused slots sort after every real number (stable argsort, so ties go to
  # the lower index).
  keys = jnp.where(index < lengths[:, None], values, jnp.inf)
  order = jnp.argsort(keys, axis=-1).astype(jnp.int32)  # [B, N]
  steps = jnp.arange(num_steps, dtype=jnp.int32)[None, :]
  rank = steps - lengths[:, None]  # j = t - n at output step t.
  mask = (rank >= 0) & (rank < lengths[:, None])
  picked = jnp.take_along_axis(order, jnp.clip(rank, 0, n_values - 1), axis=-1)
  return jnp.where(mask, picked, 0), mask


# The arguments are checked (as Python ints) outside jit, in task().sample;
# the drawing is jitted with them static, so an eager call compiles once (not
# op by op) and tasks with equal settings share the compiled function.
@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4))
def _draw(key: jax.Array, batch_size: int, num_values: int | None,
          min_len: int, max_len: int) -> base.Batch:
  """Draws a sort batch from validated arguments (see :func:`task`)."""
  num_steps = 2 * max_len
  key_len, key_values = jax.random.split(key)
  (length_bits,) = base.random_bits(key_len, batch_size, [()])
  lengths = base.uniform_ints(length_bits, min_len, max_len, num_values)
  values = jax.random.normal(key_values, (batch_size, max_len),
                             dtype=jnp.float32)
  is_input = base.length_mask(lengths, max_len)
  values = jnp.where(is_input, values, jnp.float32(0))
  position = jnp.arange(max_len, dtype=jnp.int32)[None, :]
  is_last = position == lengths[:, None] - 1
  inputs = jnp.stack([values, is_last.astype(jnp.float32)], axis=-1)
  # The n output steps get zero inputs, as does the padding after them.
  inputs = jnp.concatenate(
      [inputs, jnp.zeros((batch_size, num_steps - max_len, 2), jnp.float32)],
      axis=1)
  targets, mask = sorted_index_targets(values, lengths, num_steps)
  return base.Batch(
      inputs=inputs,
      targets=targets[..., None],
      mask=mask.astype(jnp.float32),
      difficulty=lengths)


def task(min_len: int = 2, max_len: int = 15) -> base.Task:
  """Returns the sort task (Section 3.4).

  Args:
    min_len: the fewest numbers to sort (2 in the paper), at least 1.
    max_len: the most numbers to sort (15 in the paper), at least ``min_len``.

  Returns:
    A :class:`~vcrnn_jax.tasks.base.Task` with ``input_size = 2``,
    ``output_size = max_len`` (a softmax over input indices) and ``max_len = 2 *
    max_len`` time steps. ``sample`` gives ``inputs [B, T, 2]`` float32,
    ``targets [B, T, 1]`` int32 (0 where ``mask`` is 0), ``mask [B, T]`` 1 on
    the ``n`` output steps and ``difficulty [B]`` = ``n``. ``difficulty=n`` (or
    ``seq_len=n``) sorts exactly ``n`` numbers, ``n`` in ``1..max_len``.

  Raises:
    ValueError: if ``min_len`` or ``max_len`` is out of range.

  Example::

    task = sort.task()
    batch = task.sample(jax.random.fold_in(key, step), 16)
    errors = task.sequence_errors(logits, batch)   # logits [16, 30, 15]
  """
  min_len = base.check_int('min_len', min_len, 1)
  max_len = base.check_int('max_len', max_len, 1)
  if max_len < min_len:
    raise ValueError(f'max_len must be an integer >= min_len={min_len}, got '
                     f'{max_len!r}.')
  num_steps = 2 * max_len

  def sample(key: jax.Array, batch_size: int, *,
             difficulty: int | None = None,
             seq_len: int | None = None) -> base.Batch:
    """Checks the arguments and draws a Batch (see the factory's docstring)."""
    batch_size = base.check_int('batch_size', batch_size, 1)
    difficulty = base.check_optional_int('difficulty', difficulty, 1, max_len)
    seq_len = base.check_optional_int('seq_len', seq_len, 1, max_len)
    if difficulty is not None and seq_len is not None and difficulty != seq_len:
      raise ValueError(
          'sort: seq_len and difficulty both set the number of values to sort; '
          f'they must be equal when both are given, got seq_len={seq_len} and '
          f'difficulty={difficulty}.')
    num_values = difficulty if difficulty is not None else seq_len
    return _draw(key, batch_size, num_values, min_len, max_len)

  loss, sequence_errors = base.make_metrics('sort', max_len, 'softmax')
  return base.Task(
      name='sort', input_size=2, output_size=max_len, max_len=num_steps,
      sample=sample, loss=loss, sequence_errors=sequence_errors)
