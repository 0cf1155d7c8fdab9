r"""The logic task of Graves (2016), Section 3.2, Table 1 and Equation (21).

Each sequence has 1 to ``max_len`` (10) input vectors of size ``2 + 10 *
num_gates`` (102): two bits, then ``num_gates`` (10) chunks of size 10. In each
vector the first ``B`` chunks (``B`` uniform on ``1..num_gates``, drawn per
vector) are one-hot indices of logic gates drawn uniformly from the 10 gates of
Table 1, in the table's order

  0 NOR, 1 Xq, 2 ABJ, 3 XOR, 4 NAND, 5 AND, 6 XNOR, 7 if/then, 8 then/if, 9 OR

(the paper numbers them 1 to 10; chunk element ``j`` stands for gate ``j + 1``),
and the remaining chunks are zero. The target of the vector is ``b_{B+1}``,
obtained from the two bits by Equation (21):

.. math::
   b_{i+1} = T_i(b_i, b_{i-1}), \qquad 1 \le i \le B,  \qquad (21)

where ``T_i`` is the truth table of chunk ``i``. In the first vector ``b_0``
and ``b_1`` are random and are the first two input elements; in later vectors
``b_1`` is random while ``b_0`` is the previous vector's target, "but was
always set to zero in the input vector", so the network must carry it across
time steps.
Output: one sigmoid unit with binary cross-entropy at every step.

Readings of the paper, as implemented:

* **P and Q.** Table 1 lists each gate as a function of ``(P, Q)`` and Eq. (21)
  writes ``T_i(b_i, b_{i-1})``; we read the arguments in order, so **P = b_i**
  (the newer bit; ``b_1`` for the first gate) and **Q = b_{i-1}** (the older
  bit; ``b_0`` for the first gate). E.g. the first gate Xq ("not P and Q") of a
  vector with ``b_0 = 0, b_1 = 1`` gives ``b_2 = 0``; under the other reading
  it would give 1. Since the 10 gates are closed under swapping P and Q (Xq <->
  ABJ, if/then <-> then/if, the others symmetric), the other reading only
  relabels gates: the task's distribution and difficulty are the same.
* **Table 1 as extracted.** The text extraction of Table 1 prints the then/if
  column as T, T, T, T (a constant, not a binary gate). The 10 gates of Table 1
  are exactly the 10 two-input Boolean functions that depend on both inputs,
  and the only one the extraction lacks is ``not P or Q``, which differs from
  the printed column in one cell (row P=T, Q=F). We use ``then/if = not P or
  Q`` and keep the printed ``if/then = P or not Q``. :data:`TRUTH_TABLES`
  holds all 10 tables.
* ``difficulty`` is the largest number of gates in any vector of the sequence
  (the paper's Figure 10 forces every vector of a length-5 sequence to the same
  number: ``sample(key, n, difficulty=k, seq_len=5)``).

Example::

  task = vcrnn_jax.tasks.logic.task()
  batch = task.sample(jax.random.key(0), 16)     # inputs [16, 10, 102]
  batch.targets.shape                            # (16, 10, 1) float32
  fig10 = task.sample(jax.random.key(1), 1000, difficulty=7, seq_len=5)

References:
  Graves, A. Adaptive Computation Time for Recurrent Neural Networks. 2016,
  Section 3.2, Table 1, Equation (21) and Figures 7-10.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax.tasks import base

__all__ = ['GATE_NAMES', 'NUM_GATE_TYPES', 'TRUTH_TABLES', 'evaluate', 'task']

GATE_NAMES = ('NOR', 'Xq', 'ABJ', 'XOR', 'NAND', 'AND', 'XNOR', 'if/then',
              'then/if', 'OR')
NUM_GATE_TYPES = len(GATE_NAMES)  # The size of each one-hot gate chunk.

# Table 1, one row per gate, columns (P, Q) = (T, T), (T, F), (F, T), (F, F) as
# in the paper. then/if is corrected from the extracted (T, T, T, T); see the
# module docstring.
_TABLE_1 = (
    (0, 0, 0, 1),  # NOR      not (P or Q)
    (0, 0, 1, 0),  # Xq       not P and Q
    (0, 1, 0, 0),  # ABJ      P and not Q
    (0, 1, 1, 0),  # XOR      P != Q
    (0, 1, 1, 1),  # NAND     not (P and Q)
    (1, 0, 0, 0),  # AND      P and Q
    (1, 0, 0, 1),  # XNOR     P == Q
    (1, 1, 0, 1),  # if/then  P or not Q
    (1, 0, 1, 1),  # then/if  not P or Q
    (1, 1, 1, 0),  # OR       P or Q
)

# TRUTH_TABLES[g, p, q] = T_g(P=p, Q=q), int32, shape [10, 2, 2].
TRUTH_TABLES = np.zeros((NUM_GATE_TYPES, 2, 2), dtype=np.int32)
for _g, (_tt, _tf, _ft, _ff) in enumerate(_TABLE_1):
  TRUTH_TABLES[_g] = ((_ff, _ft), (_tf, _tt))
del _g, _tt, _tf, _ft, _ff

# The same tables as 4-bit codes: bit 2 p + q of _GATE_CODES[g] is T_g(p, q).
_GATE_CODES = np.array(
    [sum(int(t[p, q]) << (2 * p + q) for p in (0, 1) for q in (0, 1))
     for t in TRUTH_TABLES], dtype=np.int32)


@jax.jit
def evaluate(b0: jax.Array, b1: jax.Array, gates: jax.Array,
             num_gates: jax.Array) -> jax.Array:
  """Targets of a logic sequence by Equation (21), carrying b_0 across steps.

  Each gate is applied as ``b_{i+1} = T_i(P=b_i, Q=b_{i-1})`` (see the module
  docstring for this reading of Table 1 and Eq. 21).

  Args:
    b0: ``[B]`` int, the bit ``b_0`` of the first vector (later vectors use the
      previous vector's target).
    b1: ``[B, T]`` int, the bit ``b_1`` of every vector.
    gates: ``[B, T, G]`` int in ``0..9``, gate indices into :data:`GATE_NAMES`.
    num_gates: ``[B, T]`` int in ``0..G``: vector ``t`` applies
      ``gates[:, t, :num_gates]`` and ignores the rest.

  Returns:
    ``[B, T]`` int32: the target ``b_{n+1}`` of every vector, where
    ``n = num_gates[b, t]``.
  """
  b0 = jnp.asarray(b0, jnp.int32)
  b1 = jnp.asarray(b1, jnp.int32)
  gates = jnp.asarray(gates, jnp.int32)
  max_gates = gates.shape[-1]
  active = (jnp.broadcast_to(jnp.arange(max_gates, dtype=jnp.int32),
                             gates.shape)
            < jnp.asarray(num_gates, jnp.int32)[..., None])
  # Bit 2 p + q of a gate's code is T(P=p, Q=q): one gather up front, then
  # the gate loop is elementwise shifts and selects.
  codes = jnp.asarray(_GATE_CODES)[gates]  # [B, T, G]
  # Evaluate every vector for both possible values of its b_0 at once (the
  # last axis), vectorised over time; only picking the branch needs a scan.
  older = jnp.broadcast_to(jnp.arange(2, dtype=jnp.int32), b1.shape + (2,))
  newer = jnp.broadcast_to(b1[..., None], b1.shape + (2,))
  for i in range(max_gates):  # G is small and static: unrolled.
    # Eq. (21): b_{i+1} = T_i(P=b_i, Q=b_{i-1}).
    result = (codes[..., i, None] >> (2 * newer + older)) & 1
    # Inactive gates come after the active ones and freeze (older, newer).
    on = active[..., i, None]
    older, newer = jnp.where(on, newer, older), jnp.where(on, result, newer)

  def step(prev_target, outcomes):  # outcomes[b, c]: target if b_0 were c.
    target = jnp.where(prev_target == 1, outcomes[:, 1], outcomes[:, 0])
    return target, target

  _, targets = jax.lax.scan(step, b0, jnp.swapaxes(newer, 0, 1))
  return targets.T


# The arguments are checked (as Python ints) outside jit, in task().sample;
# the drawing is jitted with them static, so an eager call compiles once (not
# op by op) and tasks with equal settings share the compiled function.
@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4, 5))
def _draw(key: jax.Array, batch_size: int, difficulty: int | None,
          seq_len: int | None, max_len: int, num_gates: int) -> base.Batch:
  """Draws a logic batch from validated arguments (see :func:`task`)."""
  shape = (batch_size, max_len)
  length_bits, count_bits, gate_bits, bit_bits = base.random_bits(
      key, batch_size, [(), (max_len,), (max_len, num_gates), (max_len, 2)])
  lengths = base.uniform_ints(length_bits, 1, max_len, seq_len)
  counts = base.uniform_ints(count_bits, 1, num_gates, difficulty)
  gates = base.uniform_ints(gate_bits, 0, NUM_GATE_TYPES - 1)
  bits = base.uniform_ints(bit_bits, 0, 1)
  b0, b1 = bits[:, 0, 0], bits[:, :, 1]
  targets = evaluate(b0, b1, gates, counts)

  valid = base.length_mask(lengths, max_len)
  active = (jnp.arange(num_gates, dtype=jnp.int32)[None, None, :]
            < counts[..., None])
  chunks = (jax.nn.one_hot(gates, NUM_GATE_TYPES, dtype=jnp.float32)
            * active[..., None].astype(jnp.float32))
  # b_0 is only shown at the first step; later it is the carried target.
  first = (jnp.arange(max_len) == 0)[None, :]
  b0_input = jnp.where(first, b0[:, None], 0)
  inputs = jnp.concatenate(
      [b0_input[..., None].astype(jnp.float32),
       b1[..., None].astype(jnp.float32),
       chunks.reshape(shape + (NUM_GATE_TYPES * num_gates,))], axis=-1)
  inputs = inputs * valid[..., None].astype(jnp.float32)
  return base.Batch(
      inputs=inputs,
      targets=jnp.where(valid, targets, 0).astype(jnp.float32)[..., None],
      mask=valid.astype(jnp.float32),
      difficulty=jnp.max(jnp.where(valid, counts, 0), axis=1))


def task(max_len: int = 10, num_gates: int = 10) -> base.Task:
  """Returns the logic task (Section 3.2).

  Args:
    max_len: the largest number of vectors in a sequence (10 in the paper);
      lengths are uniform on ``1..max_len``.
    num_gates: the number of gate chunks per vector, which is the largest number
      of gates a vector applies (10 in the paper); each chunk has size 10 (the
      gates of Table 1).

  Returns:
    A :class:`~vcrnn_jax.tasks.base.Task` with ``input_size = 2 + 10 *
    num_gates``, ``output_size = 1`` (one logit, sigmoid cross-entropy) and
    ``max_len``. ``sample`` gives ``inputs [B, T, input_size]`` float32,
    ``targets [B, T, 1]`` float32 in {0, 1} (0 at padded steps), ``mask [B,
    T]`` 1 on the sequence's steps and ``difficulty [B]`` the largest number of
    gates in any of its vectors. ``difficulty=k`` puts exactly ``k`` gates in
    every vector; ``seq_len=n`` makes every sequence ``n`` vectors long.

  Raises:
    ValueError: if ``max_len`` or ``num_gates`` is not a positive integer.

  Example::

    task = logic.task()
    batch = task.sample(jax.random.fold_in(key, step), 16)
    loss = jnp.mean(task.loss(logits, batch))      # logits [16, 10, 1]
  """
  max_len = base.check_int('max_len', max_len, 1)
  num_gates = base.check_int('num_gates', num_gates, 1)
  input_size = 2 + NUM_GATE_TYPES * num_gates

  def sample(key: jax.Array, batch_size: int, *,
             difficulty: int | None = None,
             seq_len: int | None = None) -> base.Batch:
    """Checks the arguments and draws a Batch (see the factory's docstring)."""
    batch_size = base.check_int('batch_size', batch_size, 1)
    difficulty = base.check_optional_int('difficulty', difficulty, 1, num_gates)
    seq_len = base.check_optional_int('seq_len', seq_len, 1, max_len)
    return _draw(key, batch_size, difficulty, seq_len, max_len, num_gates)

  loss, sequence_errors = base.make_metrics('logic', 1, 'sigmoid')
  return base.Task(
      name='logic', input_size=input_size, output_size=1, max_len=max_len,
      sample=sample, loss=loss, sequence_errors=sequence_errors)
