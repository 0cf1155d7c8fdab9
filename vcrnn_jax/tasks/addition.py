"""The addition task of Graves (2016), Section 3.3.

Each sequence has 1 to ``max_len`` (5) input vectors of size ``10 * max_digits``
(50). Vector ``t`` holds a number of ``D_t`` digits, ``D_t`` uniform on
``1..max_digits`` and drawn per vector, each digit uniform on ``0..9`` (so
leading zeros occur, as in the paper); its first ``10 D_t`` elements are the
concatenated one-hot digits and the rest is zero. The target at step ``t`` is
the cumulative sum of the numbers of steps ``0..t``, as ``num_outputs`` (6)
simultaneous 11-way classifications: classes 0-9 are digits and class 10 is the
paper's '*' marker for "digits beyond the end of the target number". "There is
no target for the first vector in the sequence", so ``mask`` is 0 at step 0.
The loss is the joint cross-entropy of the 6 softmaxes at every target step.

Readings of the paper, as implemented:

* **Digit order: least significant digit first**, in the inputs and in the
  targets: chunk ``k`` of an input vector and target ``k`` both hold the
  ``10^k`` digit. The paper does not state the order. With this order, position
  ``k`` means the same place value in every input and every target, whatever
  the numbers' lengths, and the carry runs forwards through the positions like
  the written long-addition algorithm whose roughly linear ponder time the paper
  reports (Figures 14, 15). Most-significant-first vectors would left-align
  numbers of different lengths so that a position's place value depends on
  ``D``.
* The sum's digit count is its length without leading zeros (0 has one digit,
  '0'); targets beyond it are class 10.
* ``num_outputs`` is the number of digits of the largest possible sum,
  ``max_len * (10**max_digits - 1)``: 6 for the paper's 5 numbers of 5 digits.
  The network's ``output_size`` is ``11 * num_outputs`` (66): consecutive groups
  of 11 logits, the group ``k`` predicting target ``k``.
* ``difficulty`` is the largest digit count ``D_t`` in the sequence (the paper's
  Figure 14 forces every number to the same count, all sequences length 3:
  ``sample(key, n, difficulty=d, seq_len=3)``).

Example::

  task = vcrnn_jax.tasks.addition.task()
  batch = task.sample(jax.random.key(0), 32)     # inputs [32, 5, 50]
  batch.targets.shape                            # (32, 5, 6) int32 in 0..10
  fig14 = task.sample(jax.random.key(1), 1000, difficulty=4, seq_len=3)

References:
  Graves, A. Adaptive Computation Time for Recurrent Neural Networks. 2016,
  Section 3.3 and Figures 11-15.
"""

import functools

import jax
import jax.numpy as jnp

from vcrnn_jax.tasks import base

__all__ = [
    'NUM_CLASSES',
    'END_OF_NUMBER',
    'num_sum_digits',
    'cumulative_sum_classes',
    'task',
]

NUM_CLASSES = 11  # Ten digits and the end-of-number marker '*'.
END_OF_NUMBER = 10  # The class of target digits beyond the end of the sum.


def num_sum_digits(max_len: int, max_digits: int) -> int:
  """Digits in the largest cumulative sum, ``max_len * (10**max_digits - 1)``.

  Args:
    max_len: the most numbers in a sequence.
    max_digits: the most digits in a number.

  Returns:
    The number of target digits the task needs (6 for 5 and 5).
  """
  return len(str(max_len * (10**max_digits - 1)))


@functools.partial(jax.jit, static_argnums=1)
def cumulative_sum_classes(digits: jax.Array, num_outputs: int) -> jax.Array:
  """Targets of the addition task: cumulative sums as 11-way digit classes.

  Works on digits rather than integers, so it never overflows int32.

  Args:
    digits: ``[B, T, D]`` int, least significant digit first; unused digits of
      short numbers and padded steps must be 0.
    num_outputs: number of target digits; must be enough to hold every
      cumulative sum (see :func:`num_sum_digits`), or high digits are dropped.

  Returns:
    ``[B, T, num_outputs]`` int32: digit ``k`` (the ``10^k`` place, 0-9) of the
    sum of the numbers at steps ``0..t``, or ``END_OF_NUMBER`` (10) for places
    beyond its most significant non-zero digit (place 0 is always a digit).
  """
  digits = jnp.asarray(digits, jnp.int32)
  # Column sums first (each at most 9 * T), then one carry pass over places.
  place_sums = jnp.cumsum(digits, axis=1)
  carry = jnp.zeros(place_sums.shape[:2], jnp.int32)
  out = []
  for k in range(num_outputs):
    column = place_sums[..., k] if k < place_sums.shape[-1] else 0
    total = column + carry
    out.append(total % 10)
    carry = total // 10
  sum_digits = jnp.stack(out, axis=-1)  # [B, T, num_outputs]
  places = jnp.broadcast_to(jnp.arange(1, num_outputs + 1, dtype=jnp.int32),
                            sum_digits.shape)
  length = jnp.max(jnp.where(sum_digits != 0, places, 1), axis=-1,
                   keepdims=True)
  return jnp.where(places - 1 < length, sum_digits, END_OF_NUMBER)


# The arguments are checked (as Python ints) outside jit, in task().sample;
# the drawing is jitted with them static, so an eager call compiles once (not
# op by op) and tasks with equal settings share the compiled function.
@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4, 5))
def _draw(key: jax.Array, batch_size: int, difficulty: int | None,
          seq_len: int | None, max_len: int,
          max_digits: int) -> base.Batch:
  """Draws an addition batch from validated arguments (see :func:`task`)."""
  num_outputs = num_sum_digits(max_len, max_digits)
  shape = (batch_size, max_len)
  length_bits, count_bits, digit_bits = base.random_bits(
      key, batch_size, [(), (max_len,), (max_len, max_digits)])
  lengths = base.uniform_ints(length_bits, 1, max_len, seq_len)
  counts = base.uniform_ints(count_bits, 1, max_digits, difficulty)
  valid = base.length_mask(lengths, max_len)
  counts = jnp.where(valid, counts, 0)  # Padded steps hold no number.
  used = (jnp.arange(max_digits, dtype=jnp.int32)[None, None, :]
          < counts[..., None])
  digits = jnp.where(used, base.uniform_ints(digit_bits, 0, 9), 0)
  one_hot = (jax.nn.one_hot(digits, 10, dtype=jnp.float32)
             * used[..., None].astype(jnp.float32))
  # No target at the first step: no sum has been computed yet.
  has_target = valid & (jnp.arange(max_len) >= 1)[None, :]
  targets = cumulative_sum_classes(digits, num_outputs)
  return base.Batch(
      inputs=one_hot.reshape(shape + (10 * max_digits,)),
      targets=jnp.where(has_target[..., None], targets, 0),
      mask=has_target.astype(jnp.float32),
      difficulty=jnp.max(counts, axis=1))


def task(max_len: int = 5, max_digits: int = 5) -> base.Task:
  """Returns the addition task (Section 3.3).

  Args:
    max_len: the largest number of numbers in a sequence (5 in the paper);
      lengths are uniform on ``1..max_len``.
    max_digits: the largest number of digits in a number (5 in the paper).

  Returns:
    A :class:`~vcrnn_jax.tasks.base.Task` with ``input_size = 10 *
    max_digits``, ``output_size = 11 * num_sum_digits(max_len, max_digits)``
    (66 by default; groups of 11 logits, softmax cross-entropy) and
    ``max_len``. ``sample`` gives ``inputs [B, T, input_size]`` float32,
    ``targets [B, T, num_outputs]`` int32 in ``0..10`` (0 where ``mask`` is 0),
    ``mask [B, T]`` 1 on steps ``1..length-1`` and ``difficulty [B]`` the
    largest digit count in the sequence. ``difficulty=d`` gives every number
    ``d`` digits; ``seq_len=n`` makes every sequence ``n`` numbers long.

  Raises:
    ValueError: if ``max_len`` or ``max_digits`` is not a positive integer.

  Example::

    task = addition.task()
    batch = task.sample(jax.random.fold_in(key, step), 32)
    loss = jnp.mean(task.loss(logits, batch))      # logits [32, 5, 66]
  """
  max_len = base.check_int('max_len', max_len, 1)
  max_digits = base.check_int('max_digits', max_digits, 1)
  num_outputs = num_sum_digits(max_len, max_digits)
  output_size = NUM_CLASSES * num_outputs

  def sample(key: jax.Array, batch_size: int, *,
             difficulty: int | None = None,
             seq_len: int | None = None) -> base.Batch:
    """Checks the arguments and draws a Batch (see the factory's docstring)."""
    batch_size = base.check_int('batch_size', batch_size, 1)
    difficulty = base.check_optional_int('difficulty', difficulty, 1,
                                         max_digits)
    seq_len = base.check_optional_int('seq_len', seq_len, 1, max_len)
    return _draw(key, batch_size, difficulty, seq_len, max_len,
                 max_digits)

  loss, sequence_errors = base.make_metrics('addition', output_size, 'softmax')
  return base.Task(
      name='addition', input_size=10 * max_digits, output_size=output_size,
      max_len=max_len, sample=sample, loss=loss,
      sequence_errors=sequence_errors)
