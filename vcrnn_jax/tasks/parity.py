"""The parity task of Graves (2016), Section 3.1.

Each sequence is a single input vector and a single target (Figure 3). The input
has ``bits`` (64 in the paper) elements, "of which a random number from 1 to 64
were randomly set to 1 or -1 and the rest were set to 0. The corresponding
target was 1 if there was an odd number of ones and 0 if there was an even
number of ones." The network has one sigmoidal output unit trained with binary
cross-entropy.

Reading of the paper, as implemented:

* the number ``k`` of non-zero elements is uniform on ``1..bits``, and each
  non-zero element is +1 or -1 with probability 1/2, independently;
* "ones" means the elements equal to +1: the target is
  ``#{i : x_i = +1} mod 2``. The -1 entries still count towards the difficulty
  (they are among "the bits whose parity must be determined", Section 3.1) but
  not towards the parity. This is the literal reading ("ones", not "non-zero
  bits"); under the other reading the random signs would carry no information;
* ``difficulty`` is ``k``, the number of non-zero elements (Figure 6).

``min_count``/``max_count`` narrow the range of ``k`` (default ``1..bits``,
the ACT paper's task, with the same random stream). PonderNet's
extrapolation (Banino et al. 2021, Sec. 3.1; vcrnn_jax.papers.family) reads
as: vectors of 96 elements, training on ``k`` uniform on ``1..48`` and
testing on ``k`` uniform on ``49..96``, i.e. two tasks of the same ``bits``
that differ only in this range. With ``layout='prefix'`` the elements past
``max_count`` are then never non-zero in training, so their input weights are
never trained; the public PonderNet reproductions shuffle the non-zero
elements (``layout='random'``), under which every position is seen.

The text does not say *which* ``k`` elements are non-zero. Two layouts:

* ``layout='prefix'`` (the default): the first ``k``, i.e. a ``k``-bit vector
  zero-padded to ``bits``. Figure 6 calls the difficulty "the number of bits
  in the parity vectors", public reproductions build it this way, and it is
  the reading under which the paper's 64-bit results are reproduced here
  (ACT with tau=0.01 against the same network without ACT; the ACT results
  page gives the numbers). The ``bits``-bit task then contains every smaller
  one as its ``k <= b`` slice;
* ``layout='random'``: a uniformly random ``k``-subset of positions. At 64
  bits no run of this layout left chance level within the CPU budget (the
  ponder collapses to its minimum first); ACT solves it at 8 and 12 bits and
  reaches 5.9% at 16.

Example::

  task = vcrnn_jax.tasks.parity.task(bits=64)
  batch = task.sample(jax.random.key(0), 128)        # inputs [128, 1, 64]
  batch.targets.shape                                # (128, 1, 1) float32
  hard = task.sample(jax.random.key(1), 1000, difficulty=64)   # Fig. 6 points

References:
  Graves, A. Adaptive Computation Time for Recurrent Neural Networks. 2016,
  Section 3.1 and Figures 3-6.
"""

import functools

import jax
import jax.numpy as jnp

from vcrnn_jax.tasks import base

__all__ = ['parity_targets', 'LAYOUTS', 'task']


def parity_targets(x: jax.Array) -> jax.Array:
  """Parity of the number of +1 entries along the last axis, as float32.

  Args:
    x: ``[..., bits]`` array with entries in {-1, 0, +1}.

  Returns:
    ``[...]`` float32: 1.0 if the number of +1 entries is odd, else 0.0.
  """
  ones = jnp.sum(x > 0, axis=-1, dtype=jnp.int32)
  return (ones % 2).astype(jnp.float32)


# The arguments are checked (as Python ints) outside jit, in task().sample;
# the drawing is jitted with them static, so an eager call compiles once (not
# op by op) and tasks with equal settings share the compiled function.
@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4, 5, 6))
def _draw(key: jax.Array, batch_size: int, difficulty: int | None,
          bits: int, layout: str, min_count: int,
          max_count: int) -> base.Batch:
  """Draws a parity batch from validated arguments (see :func:`task`)."""
  count_bits, noise, sign_bits = base.random_bits(
      key, batch_size, [(), (bits,), (bits,)])
  count = base.uniform_ints(count_bits, min_count, max_count,
                          difficulty)
  # argsort of i.i.d. uniforms is a uniformly random permutation, so the
  # positions whose permuted index is < count are a uniform count-subset
  # (ties among 32-bit noise are negligible and still give a valid subset).
  if layout == 'prefix':
    # The noise is still drawn so both layouts use the same random stream.
    del noise
    positions = jnp.broadcast_to(jnp.arange(bits, dtype=jnp.int32),
                                 (batch_size, bits))
  else:
    positions = jnp.argsort(noise, axis=-1).astype(jnp.int32)
  nonzero = positions < count[:, None]
  positive = base.uniform_ints(sign_bits, 0, 1) == 1
  signs = jnp.where(positive, jnp.float32(1), jnp.float32(-1))
  x = jnp.where(nonzero, signs, jnp.float32(0))
  return base.Batch(
      inputs=x[:, None, :],
      targets=parity_targets(x)[:, None, None],
      mask=jnp.ones((batch_size, 1), dtype=jnp.float32),
      difficulty=count)


LAYOUTS = ('random', 'prefix')


def task(bits: int = 64, layout: str = 'prefix', *, min_count: int = 1,
         max_count: int | None = None) -> base.Task:
  """Returns the parity task (Section 3.1) on input vectors of size ``bits``.

  Args:
    bits: size of the input vector (64 in the paper).
    layout: which ``k`` elements are non-zero: 'prefix' (the first ``k``, the
      default) or 'random' (a uniformly random ``k``-subset); see the module
      docstring.
    min_count: the fewest non-zero elements drawn (default 1).
    max_count: the most non-zero elements drawn (default ``bits``): ``k`` is
      uniform on ``min_count..max_count`` (PonderNet's extrapolation trains
      on ``1..48`` and tests on ``49..96`` of 96; module docstring).

  Returns:
    A :class:`~vcrnn_jax.tasks.base.Task` with ``input_size=bits``,
    ``output_size=1`` (one logit, sigmoid cross-entropy) and ``max_len=1``.
    ``sample`` gives ``inputs [B, 1, bits]`` float32 in {-1, 0, 1},
    ``targets [B, 1, 1]`` float32, ``mask`` all ones and ``difficulty [B]`` the
    number of non-zero bits. ``sample(..., difficulty=k)`` forces ``k`` non-zero
    bits in every vector, any ``k`` in ``1..bits`` (also outside
    ``min_count..max_count``, to probe a model beyond its training range);
    ``seq_len`` may only be 1.

  Raises:
    ValueError: if ``bits`` is not a positive integer, ``layout`` is unknown,
      or not ``1 <= min_count <= max_count <= bits``.

  Example::

    task = parity.task()
    batch = task.sample(jax.random.key(0), 128)
    errors = task.sequence_errors(logits, batch)   # logits [128, 1, 1]
  """
  bits = base.check_int('bits', bits, 1)
  if layout not in LAYOUTS:
    raise ValueError(f'layout must be one of {list(LAYOUTS)}, got {layout!r}.')
  max_count = base.check_int('max_count', bits if max_count is None
                             else max_count, 1, bits)
  min_count = base.check_int('min_count', min_count, 1, max_count)

  def sample(key: jax.Array, batch_size: int, *,
             difficulty: int | None = None,
             seq_len: int | None = None) -> base.Batch:
    """Checks the arguments and draws a Batch (see the factory's docstring)."""
    batch_size = base.check_int('batch_size', batch_size, 1)
    difficulty = base.check_optional_int('difficulty', difficulty, 1, bits)
    # Every parity sequence is one step long (Section 3.1).
    base.check_optional_int('seq_len', seq_len, 1, 1)
    return _draw(key, batch_size, difficulty, bits, layout,
                 min_count, max_count)

  loss, sequence_errors = base.make_metrics('parity', 1, 'sigmoid')
  return base.Task(
      name='parity', input_size=bits, output_size=1, max_len=1, sample=sample,
      loss=loss, sequence_errors=sequence_errors)
