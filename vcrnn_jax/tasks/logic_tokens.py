r"""ACT's logic task (Graves 2016, Sec. 3.2) as token sequences, for depth.

One example is one logic vector of :mod:`vcrnn_jax.tasks.logic` (two bits
``b_0, b_1``, then a chain of ``B`` gates, ``B`` uniform on
``1..num_gates``) written as ``num_gates + 1`` tokens:

* position 0: the two bits, token ``2 b_0 + b_1`` (ids 0-3);
* position ``i`` in ``1..B``: gate ``g_i``, token ``BITS + g_i`` (ids 4-13,
  in the gate order of :data:`vcrnn_jax.tasks.logic.GATE_NAMES`);
* positions ``B+1..num_gates``: :data:`PAD`, ``mask`` False.

Targets (Eq. 21, ``b_{i+1} = T_i(b_i, b_{i-1})``, by
:func:`vcrnn_jax.tasks.logic.evaluate`, so its truth tables and its reading
of ``P = b_i, Q = b_{i-1}``): at every gate position ``i`` the prefix result
``b_{i+1}`` (``targets``, where ``target_mask``), and per example the final
result ``b_{B+1}`` (``final``), the logic task's own target. ``gates`` is
``B``, the difficulty: computing ``b_{i+1}`` needs ``b_i``, so the work per
example grows with the chain, and a shared block applied again and again
needs about ``i`` applications to resolve position ``i``.

The examples are drawn by the logic task itself (one vector per sequence,
``seq_len=1``), so they have its distribution and its difficulty forcing::

  batch = logic_tokens.sample(jax.random.key(0), 128)   # B ~ U(1, 10)
  hard = logic_tokens.sample(jax.random.key(1), 100, difficulty=10)
  batch.tokens.shape, batch.final.shape                  # (128, 11), (128,)
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax.tasks import base, logic

__all__ = ['BITS', 'NUM_GATES', 'PAD', 'TokenBatch', 'encode',
           'from_vectors', 'sample', 'vocab_size']

NUM_GATES = 10   # The paper's longest chain.
BITS = 4         # Token ids 0-3: the two bits as 2 b_0 + b_1.
PAD = BITS + logic.NUM_GATE_TYPES   # 14; after it, ids end.


def vocab_size() -> int:
  """The number of token ids: the bits, the 10 gates and the padding."""
  return PAD + 1


class TokenBatch(NamedTuple):
  """A batch of logic vectors as tokens (``T = num_gates + 1``).

  Attributes:
    tokens: [batch, T] int32, bits at 0, gates at ``1..B``, PAD after.
    mask: [batch, T] bool, the real positions ``0..B``.
    targets: [batch, T] float32, ``b_{i+1}`` at gate position ``i``
      (0 elsewhere).
    target_mask: [batch, T] bool, the gate positions ``1..B``.
    final: [batch] float32, ``b_{B+1}``.
    gates: [batch] int32, ``B`` (the difficulty).
  """
  tokens: jax.Array
  mask: jax.Array
  targets: jax.Array
  target_mask: jax.Array
  final: jax.Array
  gates: jax.Array


def encode(b0: jax.Array, b1: jax.Array, gates: jax.Array,
           num_gates: jax.Array) -> TokenBatch:
  """The tokens and targets of logic vectors given by their bits and gates.

  Args:
    b0: [batch] int, ``b_0``.
    b1: [batch] int, ``b_1``.
    gates: [batch, G] int in ``0..9``, gate indices (past ``num_gates``
      ignored).
    num_gates: [batch] int in ``1..G``, ``B``.

  Returns:
    A :class:`TokenBatch` with ``T = G + 1``.
  """
  b0, b1, gates, num_gates = (jnp.asarray(x, jnp.int32)
                              for x in (b0, b1, gates, num_gates))
  n, g = gates.shape
  # Every prefix k = 1..G of every example as a one-vector sequence of its
  # own, so that logic.evaluate (which carries b_0 across a sequence's
  # vectors) gives b_{k+1} for each.
  k = jnp.arange(1, g + 1, dtype=jnp.int32)
  prefix = logic.evaluate(
      jnp.repeat(b0, g), jnp.repeat(b1, g)[:, None],
      jnp.repeat(gates, g, axis=0)[:, None], jnp.tile(k, n)[:, None])
  prefix = prefix.reshape(n, g)                                 # b_{k+1}
  on = k[None, :] <= num_gates[:, None]                         # [n, G]
  tokens = jnp.concatenate(
      [(2 * b0 + b1)[:, None], jnp.where(on, BITS + gates, PAD)], axis=1)
  ones = jnp.ones((n, 1), bool)
  zero = jnp.zeros((n, 1), prefix.dtype)
  return TokenBatch(
      tokens=tokens,
      mask=jnp.concatenate([ones, on], axis=1),
      targets=jnp.concatenate([zero, jnp.where(on, prefix, 0)],
                              axis=1).astype(jnp.float32),
      target_mask=jnp.concatenate([~ones, on], axis=1),
      final=jnp.take_along_axis(prefix, num_gates[:, None] - 1,
                                axis=1)[:, 0].astype(jnp.float32),
      gates=num_gates)


def from_vectors(batch: base.Batch) -> TokenBatch:
  """The token form of a batch of :func:`vcrnn_jax.tasks.logic.task`.

  Args:
    batch: a logic batch of one vector per sequence (``seq_len=1``), whose
      first vector shows ``b_0`` and ``b_1``.

  Returns:
    Its :class:`TokenBatch`; ``final`` equals the batch's target.
  """
  x = batch.inputs[:, 0]                                   # [n, 2 + 10 G]
  chunks = x[:, 2:].reshape(x.shape[0], -1, logic.NUM_GATE_TYPES)
  return encode(x[:, 0].astype(jnp.int32), x[:, 1].astype(jnp.int32),
                jnp.argmax(chunks, axis=-1), batch.difficulty)


@functools.partial(jax.jit, static_argnames=('batch_size', 'num_gates',
                                             'difficulty'))
def _sample(key, batch_size, num_gates, difficulty):
  vectors = logic.task(max_len=1, num_gates=num_gates).sample(
      key, batch_size, difficulty=difficulty, seq_len=1)
  return from_vectors(vectors)


def sample(key: jax.Array, batch_size: int, *, num_gates: int = NUM_GATES,
           difficulty: int | None = None) -> TokenBatch:
  """Draws ``batch_size`` logic vectors as tokens.

  Args:
    key: a PRNG key.
    batch_size: examples (a Python int).
    num_gates: the longest chain ``G``; sequences have ``G + 1`` tokens.
    difficulty: every example ``difficulty`` gates; None: ``B`` uniform on
      ``1..num_gates``.

  Returns:
    A :class:`TokenBatch`.

  Raises:
    ValueError: a bad size or difficulty.
  """
  batch_size = base.check_int('batch_size', batch_size, 1)
  num_gates = base.check_int('num_gates', num_gates, 1)
  difficulty = base.check_optional_int('difficulty', difficulty, 1,
                                       num_gates)
  return _sample(key, batch_size, num_gates, difficulty)
