r"""Shared types, losses and argument checks for the ACT synthetic tasks.

A task is a :class:`Task`: a ``NamedTuple`` of static sizes and three pure
functions, produced by a factory that closes over the task's hyperparameters (as
optax's ``GradientTransformation``)::

  task = vcrnn_jax.tasks.get('parity')
  batch = task.sample(jax.random.fold_in(key, step), 128)
  logits = model(batch.inputs)         # [128, task.max_len, task.output_size]
  loss = jnp.mean(task.loss(logits, batch))      # per-sequence losses, [128]
  error_rate = jnp.mean(task.sequence_errors(logits, batch))

All four tasks of Graves (2016), Section 3, are supervised problems with
discrete targets and a cross-entropy loss; their performance metric is the
*sequence error rate*, "the fraction of examples where *any* mistakes were
made in the complete output sequence" (Section 3, opening paragraphs). Two
kinds of output layer are used and both are implemented here:

* sigmoid (parity, logic): one logit per target bit, binary cross-entropy

  .. math::
     \ell(z, y) = \log(1 + e^{z}) - y z, \qquad \hat y = [z > 0];

* softmax (addition, sort): ``G`` groups of ``C`` logits per step (addition has
  ``G = 6`` digits of ``C = 11`` classes; sort ``G = 1`` of 15), each group a
  softmax with cross-entropy ``-log softmax(z)_y`` and prediction ``argmax z``.

Per-step losses are summed over target groups and over the steps whose ``mask``
is 1, giving one loss per sequence.

References:
  Graves, A. Adaptive Computation Time for Recurrent Neural Networks. 2016.
  arXiv:1603.08983.
"""

from collections.abc import Callable, Sequence
import math
import numbers
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

__all__ = [
    'Batch',
    'Task',
    'check_int',
    'check_optional_int',
    'random_bits',
    'uniform_ints',
    'length_mask',
    'sigmoid_loss',
    'sigmoid_sequence_errors',
    'softmax_loss',
    'softmax_sequence_errors',
    'make_metrics',
]


class Batch(NamedTuple):
  """A minibatch of a task; variable-length sequences are left-aligned.

  ``G`` is the number of targets per step: 1, except 6 digits for addition.
  """

  inputs: jax.Array  # [B, T, input_size] float32; zero after the sequence ends.
  targets: jax.Array  # [B, T, G] float32 (sigmoid tasks) or int32 (softmax).
  mask: jax.Array  # [B, T] float32, 1.0 where the step has a target.
  difficulty: jax.Array  # [B] int32, the paper's difficulty (Figs 6/10/14/19).


class Task(NamedTuple):
  """A synthetic task: static sizes and pure sampling, loss and error functions.

  Attributes:
    name: the task's name, as accepted by ``vcrnn_jax.tasks.get``.
    input_size: size of each input vector.
    output_size: size of the network's per-step output layer (logits).
    max_len: ``T``, the padded number of time steps of every batch.
    sample: ``sample(key, batch_size, *, difficulty=None, seq_len=None) ->
      Batch``; a pure JAX function of ``key`` (``batch_size``, ``difficulty``
      and ``seq_len`` are Python ints, static under ``jit``).
    loss: ``loss(logits, batch) -> [B]``, cross-entropy summed over the target
      steps of each sequence; ``logits`` is ``[B, T, output_size]``.
    sequence_errors: ``sequence_errors(logits, batch) -> [B]`` bool, True where
      any target of the sequence is predicted wrongly.
  """

  name: str
  input_size: int
  output_size: int
  max_len: int
  sample: Callable[..., Batch]
  loss: Callable[[jax.Array, Batch], jax.Array]
  sequence_errors: Callable[[jax.Array, Batch], jax.Array]


# ----------------------------------------------------------------------------
# Argument checks. Messages name the argument, its value and what is allowed.


def check_int(name: str, value: Any, low: int,
              high: int | None = None) -> int:
  """Returns ``value`` as an int in ``[low, high]``, or raises ``ValueError``.

  Args:
    name: the argument's name, for the message.
    value: the value to check; Python or NumPy integers (not bools) are allowed.
    low: the smallest allowed value.
    high: the largest allowed value, or None for no upper bound.

  Returns:
    ``value`` as a Python ``int``.

  Raises:
    ValueError: if ``value`` is not an integer in range.
  """
  allowed = (f'an integer in [{low}, {high}]' if high is not None else
             f'an integer >= {low}')
  # bool is an Integral, but True as a batch size is always a mistake.
  if isinstance(value, bool) or not isinstance(value, numbers.Integral):
    raise ValueError(f'{name} must be {allowed} (a Python int, static under '
                     f'jit), got {value!r}.')
  if value < low or (high is not None and value > high):
    raise ValueError(f'{name} must be {allowed}, got {value!r}.')
  return int(value)


def check_optional_int(name: str, value: Any, low: int,
                       high: int) -> int | None:
  """Like :func:`check_int`, but None (meaning 'sample it') passes through."""
  if value is None:
    return None
  return check_int(name, value, low, high)


# ----------------------------------------------------------------------------
# Sampling helpers.


def random_bits(key: jax.Array, batch_size: int,
                shapes: Sequence[tuple[int, ...]]) -> list[jax.Array]:
  """Uniform uint32 arrays ``[batch_size, *shape]``, one per shape in
  ``shapes``.

  All of them come from a single ``jax.random.bits`` call that is then sliced:
  every random call site adds a threefry block to the compiled program, and
  one call compiles several times faster than one per array (or than
  ``jax.random.randint``, which makes two calls).

  Args:
    key: a PRNG key.
    batch_size: leading dimension of every array.
    shapes: per-row shapes of the arrays.

  Returns:
    A list of uint32 arrays.
  """
  sizes = [math.prod(shape) for shape in shapes]
  bits = jax.random.bits(key, (batch_size, sum(sizes)), jnp.uint32)
  out, start = [], 0
  for shape, size in zip(shapes, sizes):
    out.append(bits[:, start:start + size].reshape((batch_size,) + shape))
    start += size
  return out


def uniform_ints(bits: jax.Array, low: int, high: int,
                 forced: int | None = None) -> jax.Array:
  """Int32 uniform on ``[low, high]`` (inclusive) from uint32 ``bits``.

  Uses ``bits mod (high - low + 1)``, whose bias (at most ``(high - low + 1) /
  2**32``, below 1e-7 at the paper's settings) is far below sampling noise.

  Args:
    bits: uniform uint32 array (see :func:`random_bits`).
    low: the smallest value.
    high: the largest value.
    forced: if not None, return this value everywhere instead.

  Returns:
    An int32 array shaped like ``bits``.
  """
  if forced is not None:
    return jnp.full(bits.shape, forced, dtype=jnp.int32)
  span = jnp.uint32(high - low + 1)
  return (bits % span).astype(jnp.int32) + jnp.int32(low)


def length_mask(lengths: jax.Array, max_len: int) -> jax.Array:
  """``[B, max_len]`` bool, True on the first ``lengths[b]`` steps of row b."""
  return jnp.arange(max_len, dtype=jnp.int32)[None, :] < lengths[:, None]


# ----------------------------------------------------------------------------
# Losses and sequence errors. The metric functions are jitted so that eager
# calls (evaluation loops, tests) compile once rather than op by op; inside a
# caller's jit they are simply inlined.


def _check_logits(logits: jax.Array, batch: Batch, output_size: int,
                  task_name: str) -> None:
  """Raises ``ValueError`` unless ``logits`` is ``[B, T, output_size]``."""
  expected = tuple(batch.mask.shape) + (output_size,)
  if tuple(logits.shape) != expected:
    raise ValueError(
        f'{task_name}: logits must have shape [batch, max_len, output_size] = '
        f'{expected} to match the batch, got shape {tuple(logits.shape)}.')
  if not jnp.issubdtype(logits.dtype, jnp.floating):
    raise ValueError(f'{task_name}: logits must be floating point, got dtype '
                     f'{logits.dtype}.')


def _masked_sum(per_step: jax.Array, mask: jax.Array) -> jax.Array:
  """Sums ``[B, T]`` per-step values over the steps with a target."""
  return jnp.sum(per_step * mask.astype(per_step.dtype), axis=1)


@jax.jit
def sigmoid_loss(logits: jax.Array, batch: Batch) -> jax.Array:
  """Binary cross-entropy of sigmoid outputs, summed over target steps: ``[B]``.

  Args:
    logits: ``[B, T, G]`` pre-sigmoid outputs.
    batch: a :class:`Batch` with float ``targets`` in {0, 1} of the same shape.

  Returns:
    ``[B]`` losses in the dtype of ``logits``.
  """
  z = logits
  y = batch.targets.astype(z.dtype)
  # log(1 + e^z) - y z == -[y log s(z) + (1 - y) log(1 - s(z))], without
  # computing log(sigmoid) (which underflows for large |z|).
  per_target = jnp.logaddexp(jnp.zeros((), z.dtype), z) - y * z
  return _masked_sum(jnp.sum(per_target, axis=-1), batch.mask)


@jax.jit
def sigmoid_sequence_errors(logits: jax.Array, batch: Batch) -> jax.Array:
  """``[B]`` bool: any target step where ``[logit > 0] != target``."""
  wrong = (logits > 0) != (batch.targets > 0.5)
  wrong_step = jnp.any(wrong, axis=-1) & (batch.mask > 0)
  return jnp.any(wrong_step, axis=1)


def _grouped(logits: jax.Array, batch: Batch) -> jax.Array:
  """Reshapes ``[B, T, G * C]`` logits to ``[B, T, G, C]``, G from targets."""
  groups = batch.targets.shape[-1]
  classes = logits.shape[-1] // groups
  return logits.reshape(logits.shape[:-1] + (groups, classes))


@jax.jit
def softmax_loss(logits: jax.Array, batch: Batch) -> jax.Array:
  """Softmax cross-entropy summed over groups and target steps: ``[B]``.

  Args:
    logits: ``[B, T, G * C]``: ``G`` consecutive groups of ``C`` class logits.
    batch: a :class:`Batch` with int ``targets`` ``[B, T, G]`` in ``[0, C)``.

  Returns:
    ``[B]`` losses in the dtype of ``logits``.
  """
  log_probs = jax.nn.log_softmax(_grouped(logits, batch), axis=-1)
  targets = batch.targets.astype(jnp.int32)[..., None]
  nll = -jnp.take_along_axis(log_probs, targets, axis=-1)[..., 0]  # [B, T, G]
  return _masked_sum(jnp.sum(nll, axis=-1), batch.mask)


@jax.jit
def softmax_sequence_errors(logits: jax.Array, batch: Batch) -> jax.Array:
  """``[B]`` bool: any target step where some group's argmax != its target."""
  predictions = jnp.argmax(_grouped(logits, batch), axis=-1)
  wrong = predictions != batch.targets.astype(predictions.dtype)
  wrong_step = jnp.any(wrong, axis=-1) & (batch.mask > 0)
  return jnp.any(wrong_step, axis=1)


def make_metrics(task_name: str, output_size: int, kind: str):
  """Returns ``(loss, sequence_errors)`` for a task, with logits shape checks.

  Args:
    task_name: used in error messages.
    output_size: the last dimension the logits must have.
    kind: 'sigmoid' or 'softmax'.

  Returns:
    A pair of functions ``(logits, batch) -> [B]``.
  """
  if kind == 'sigmoid':
    loss_fn, errors_fn = sigmoid_loss, sigmoid_sequence_errors
  elif kind == 'softmax':
    loss_fn, errors_fn = softmax_loss, softmax_sequence_errors
  else:
    raise ValueError(f"kind must be 'sigmoid' or 'softmax', got {kind!r}.")

  def loss(logits: jax.Array, batch: Batch) -> jax.Array:
    _check_logits(logits, batch, output_size, task_name)
    return loss_fn(logits, batch)

  def sequence_errors(logits: jax.Array, batch: Batch) -> jax.Array:
    _check_logits(logits, batch, output_size, task_name)
    return errors_fn(logits, batch)

  loss.__doc__ = (
      f'{task_name}: {kind} cross-entropy per sequence, summed over target '
      'steps; (logits [B, T, output_size], batch) -> [B].')
  sequence_errors.__doc__ = (
      f'{task_name}: [B] bool, True if any target step of the sequence is '
      'predicted wrongly.')
  return loss, sequence_errors
