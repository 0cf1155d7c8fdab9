"""Tests for vcrnn_jax.tasks: the ACT synthetic tasks (Graves 2016, Section 3).

Targets are checked three ways: on hand-worked examples, against slow NumPy
oracles that decode the sampled inputs and recompute the targets from the
paper's definitions (written independently of the library's tables), and
through the distributions of the sampled difficulties and lengths.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import tasks
from vcrnn_jax.tasks import addition, base, logic, parity, sort

KEY = jax.random.key(0)

# Compiling the samplers dominates the run time, so the tests share the paper's
# default configurations and one batch size, and take larger samples as
# several batches from the same compiled sampler.
B = 256
TASKS = {name: tasks.get(name) for name in tasks.NAMES}


def _np(batch):
  return base.Batch(*(np.asarray(x) for x in batch))


def _sample(name, seed=0, **kwargs):
  return _np(TASKS[name].sample(jax.random.key(seed), B, **kwargs))


def _samples(name, num_batches):
  """num_batches batches of B, concatenated along the batch axis."""
  batches = [_sample(name, seed) for seed in range(num_batches)]
  return base.Batch(*(np.concatenate(xs) for xs in zip(*batches)))


# ----------------------------------------------------------------------------
# The interface.


@pytest.mark.parametrize('name', tasks.NAMES)
def test_default_sizes_match_the_paper(name):
  task = tasks.get(name)
  expected = {  # (input_size, output_size, max_len), Section 3.1-3.4.
      'parity': (64, 1, 1),
      'logic': (102, 1, 10),
      'addition': (50, 66, 5),
      'sort': (2, 15, 30),
  }[name]
  assert task.name == name
  assert (task.input_size, task.output_size, task.max_len) == expected


@pytest.mark.parametrize('name', tasks.NAMES)
def test_shapes_and_dtypes(name):
  task = TASKS[name]
  batch = task.sample(KEY, B)
  groups = {'parity': 1, 'logic': 1, 'addition': 6, 'sort': 1}[name]
  target_dtype = jnp.float32 if name in ('parity', 'logic') else jnp.int32
  b, t = B, task.max_len
  assert isinstance(batch, tasks.Batch)
  assert batch.inputs.shape == (b, t, task.input_size)
  assert batch.inputs.dtype == jnp.float32
  assert batch.targets.shape == (b, t, groups)
  assert batch.targets.dtype == target_dtype
  assert batch.mask.shape == (b, t) and batch.mask.dtype == jnp.float32
  assert batch.difficulty.shape == (b,) and batch.difficulty.dtype == jnp.int32
  assert set(np.unique(batch.mask)) <= {0.0, 1.0}
  logits = jnp.zeros((b, t, task.output_size), jnp.float32)
  loss = task.loss(logits, batch)
  errors = task.sequence_errors(logits, batch)
  assert loss.shape == (b,) and loss.dtype == jnp.float32
  assert errors.shape == (b,) and errors.dtype == jnp.bool_


def test_get_builds_each_task_and_passes_kwargs():
  assert tasks.get('parity', bits=16).input_size == 16
  assert tasks.get('logic', num_gates=3).input_size == 32
  assert tasks.get('addition', max_len=2, max_digits=3).output_size == 11 * 4
  assert tasks.get('sort', max_len=7).max_len == 14
  assert tasks.get('sort', max_len=7).output_size == 7


# ----------------------------------------------------------------------------
# Parity (Section 3.1).


def test_parity_targets_count_plus_ones_only():
  x = jnp.array([
      [1, 0, 0, 0, 0, 0],     # one +1: odd
      [1, 1, 0, 0, 0, 0],     # two +1: even
      [-1, 0, 0, 0, 0, 0],    # no +1 (one -1): even
      [1, -1, -1, 0, 0, 0],   # one +1, two -1: odd
      [1, 1, 1, -1, 0, 1],    # four +1: even
      [-1, -1, -1, 1, 1, 1],  # three +1: odd
  ], jnp.float32)
  np.testing.assert_array_equal(parity.parity_targets(x), [1, 0, 0, 1, 0, 1])
  assert parity.parity_targets(x).dtype == jnp.float32


def test_parity_samples_match_the_definition():
  batch = _sample('parity')
  x = batch.inputs[:, 0, :]
  assert set(np.unique(x)) <= {-1.0, 0.0, 1.0}
  np.testing.assert_array_equal(batch.targets[:, 0, 0], np.sum(x == 1, -1) % 2)
  np.testing.assert_array_equal(batch.difficulty, np.sum(x != 0, -1))
  np.testing.assert_array_equal(batch.mask, 1.0)


@pytest.mark.parametrize('layout', ['random', 'prefix'])
def test_parity_distributions(layout):
  bits, n = 64, 25 * B
  task = parity.task(bits=bits, layout=layout)
  batch = base.Batch(*(np.concatenate(xs) for xs in zip(*[
      _np(task.sample(jax.random.key(seed), B)) for seed in range(25)])))
  counts = np.bincount(batch.difficulty, minlength=bits + 1)
  assert counts[0] == 0 and counts.sum() == n
  # Uniform on 1..64: 100 expected per value, standard deviation about 10.
  assert counts[1:].min() > 55 and counts[1:].max() < 150, counts
  x = batch.inputs[:, 0, :]
  per_position = np.mean(x != 0, axis=0)
  if layout == 'random':
    # Uniform positions: each position equally often non-zero.
    assert np.all(np.abs(per_position - per_position.mean()) < 0.05)
  else:
    # Position i is non-zero iff k > i: probability (bits - i) / bits.
    expected = (bits - np.arange(bits)) / bits
    assert np.all(np.abs(per_position - expected) < 0.05)
  # Signs are fair and so, for every difficulty >= 1, is the parity.
  assert abs(np.mean(x[x != 0] > 0) - 0.5) < 0.02
  assert abs(np.mean(batch.targets) - 0.5) < 0.03


def test_parity_prefix_layout_is_a_padded_k_bit_vector():
  random_task = parity.task(bits=16, layout='random')
  prefix_task = parity.task(bits=16)
  key = jax.random.key(3)
  r, p = random_task.sample(key, 500), prefix_task.sample(key, 500)
  x = np.asarray(p.inputs[:, 0, :])
  k = np.asarray(p.difficulty)
  # The non-zero elements are exactly the first k.
  np.testing.assert_array_equal(x != 0, np.arange(16)[None, :] < k[:, None])
  np.testing.assert_array_equal(p.targets[:, 0, 0], np.sum(x == 1, -1) % 2)
  # The same random stream draws the same k; only the positions differ.
  np.testing.assert_array_equal(k, r.difficulty)
  assert not np.array_equal(x, np.asarray(r.inputs[:, 0, :]))
  # Signs stay fair, so the parity stays balanced.
  assert abs(np.mean(x[x != 0] > 0) - 0.5) < 0.05
  forced = prefix_task.sample(key, 8, difficulty=5).inputs[:, 0, :]
  np.testing.assert_array_equal(np.asarray(forced) != 0,
                                np.broadcast_to(np.arange(16) < 5, (8, 16)))
  with pytest.raises(ValueError, match="layout must be one of"):
    parity.task(layout='suffix')


# ----------------------------------------------------------------------------
# Logic (Section 3.2, Table 1, Eq. 21).

# Standard definitions of the 10 gates as functions of (P, Q), independent of
# the library's table.
_GATES = {
    'NOR': lambda p, q: not (p or q),
    'Xq': lambda p, q: (not p) and q,
    'ABJ': lambda p, q: p and not q,
    'XOR': lambda p, q: p != q,
    'NAND': lambda p, q: not (p and q),
    'AND': lambda p, q: p and q,
    'XNOR': lambda p, q: p == q,
    'if/then': lambda p, q: p or not q,
    'then/if': lambda p, q: (not p) or q,
    'OR': lambda p, q: p or q,
}


def test_logic_truth_tables_match_table_1():
  assert logic.GATE_NAMES == tuple(_GATES)
  for g, name in enumerate(logic.GATE_NAMES):
    for p in (0, 1):
      for q in (0, 1):
        assert logic.TRUTH_TABLES[g, p, q] == int(_GATES[name](p, q)), name
  # Table 1 as printed in the extracted paper, columns (P,Q) = TT, TF, FT, FF.
  printed = {
      'NOR': 'FFFT', 'Xq': 'FFTF', 'ABJ': 'FTFF', 'XOR': 'FTTF',
      'NAND': 'FTTT', 'AND': 'TFFF', 'XNOR': 'TFFT', 'if/then': 'TTFT',
      'then/if': 'TTTT', 'OR': 'TTTF'}
  for g, name in enumerate(logic.GATE_NAMES):
    ours = ''.join('TF'[1 - logic.TRUTH_TABLES[g, p, q]]
                   for p, q in ((1, 1), (1, 0), (0, 1), (0, 0)))
    # The only difference: the extraction's constant then/if (see logic.py).
    assert ours == printed[name] or (name, ours) == ('then/if', 'TFTT')
  # The 10 tables are exactly the 10 functions that depend on both inputs.
  flat = {tuple(t.ravel()) for t in logic.TRUTH_TABLES}
  assert len(flat) == 10
  for t in logic.TRUTH_TABLES:
    assert not np.all(t[0] == t[1]) and not np.all(t[:, 0] == t[:, 1])


def test_logic_figure_7_style_example_by_hand():
  # Three vectors of two gates each from {NOR, Xq, ABJ}, as in Figure 7.
  # Eq. (21) with P = b_i, Q = b_{i-1}:
  #   v1: b0=0, b1=1, [NOR, Xq]: b2 = NOR(1, 0) = 0, b3 = Xq(0, 1) = 1 -> 1
  #   v2: b0=1 (carried), b1=0, [ABJ, NOR]: b2 = ABJ(0, 1) = 0,
  #       b3 = NOR(0, 0) = 1 -> 1
  #   v3: b0=1 (carried), b1=1, [Xq, ABJ]: b2 = Xq(1, 1) = 0,
  #       b3 = ABJ(0, 1) = 0 -> 0
  nor, xq, abj = (logic.GATE_NAMES.index(g) for g in ('NOR', 'Xq', 'ABJ'))
  gates = jnp.array([[[nor, xq, 0], [abj, nor, 0], [xq, abj, 0]]], jnp.int32)
  targets = logic.evaluate(
      b0=jnp.array([0]), b1=jnp.array([[1, 0, 1]]), gates=gates,
      num_gates=jnp.array([[2, 2, 2]]))
  np.testing.assert_array_equal(targets, [[1, 1, 0]])
  # Reading Eq. (21) as T(b_{i-1}, b_i) instead would give v1 -> 0.
  one_gate = logic.evaluate(jnp.array([0]), jnp.array([[1]]),
                            jnp.array([[[xq]]]), jnp.array([[1]]))
  np.testing.assert_array_equal(one_gate, [[0]])  # Xq(P=b1=1, Q=b0=0) = 0.


def test_logic_variable_gate_counts_by_hand():
  and_, or_, xor = (logic.GATE_NAMES.index(g) for g in ('AND', 'OR', 'XOR'))
  gates = jnp.array([[[xor, and_, or_], [or_, xor, xor]]], jnp.int32)
  # v1: b0=1, b1=1, [XOR]: b2 = 0 -> 0. v2: b0=0 (carried), b1=1, 3 gates:
  #   b2 = OR(1, 0) = 1, b3 = XOR(1, 1) = 0, b4 = XOR(0, 1) = 1 -> 1.
  targets = logic.evaluate(jnp.array([1]), jnp.array([[1, 1]]), gates,
                           jnp.array([[1, 3]]))
  np.testing.assert_array_equal(targets, [[0, 1]])


def _logic_oracle(inputs, mask, num_gates):
  """Decodes sampled logic inputs and recomputes the targets with _GATES."""
  names = tuple(_GATES)
  targets = np.zeros(mask.shape, np.float32)
  difficulty = np.zeros(mask.shape[0], np.int32)
  for b in range(mask.shape[0]):
    carried = None
    for t in range(int(mask[b].sum())):
      v = inputs[b, t]
      older = v[0] if t == 0 else carried
      newer = v[1]
      chunks = v[2:].reshape(num_gates, 10)
      used = chunks.sum(-1)
      count = int(used.sum())
      assert set(used) <= {0.0, 1.0} and np.all(used[:count] == 1)
      for chunk in chunks[:count]:
        gate = _GATES[names[int(chunk.argmax())]]
        older, newer = newer, float(gate(newer, older))  # P = b_i, Q = b_{i-1}
      targets[b, t] = carried = newer
      difficulty[b] = max(difficulty[b], count)
  return targets, difficulty


def test_logic_samples_match_the_oracle():
  batch = _sample('logic', 1)
  lengths = batch.mask.sum(1).astype(int)
  assert np.all(batch.mask == (np.arange(10)[None] < lengths[:, None]))
  targets, difficulty = _logic_oracle(batch.inputs, batch.mask, 10)
  np.testing.assert_array_equal(batch.targets[..., 0], targets)
  np.testing.assert_array_equal(batch.difficulty, difficulty)
  # b_0 is only in the input of the first vector; padding is all zero.
  assert np.all(batch.inputs[:, 1:, 0] == 0)
  assert np.all(batch.inputs[batch.mask == 0] == 0)
  assert set(np.unique(batch.inputs[:, :, :2])) <= {0.0, 1.0}


def test_logic_distributions():
  batch = _samples('logic', 2)
  lengths = batch.mask.sum(1).astype(int)
  assert set(lengths) == set(range(1, 11))
  chunks = batch.inputs[..., 2:].reshape(2 * B, 10, 10, 10)
  counts = chunks.sum((-1, -2))[batch.mask == 1]
  assert set(counts.astype(int)) == set(range(1, 11))
  used = chunks.sum(-1) == 1
  gate_hist = np.bincount(chunks.argmax(-1)[used], minlength=10)
  assert gate_hist.min() > 0.8 * gate_hist.mean()
  assert abs(batch.targets[batch.mask == 1].mean() - 0.5) < 0.05


# ----------------------------------------------------------------------------
# Addition (Section 3.3).


def _classes(value, num_outputs):
  """Least-significant-first digit classes of value, '*' (10) past its end."""
  digits = [int(c) for c in reversed(str(value))]
  return digits + [10] * (num_outputs - len(digits))


def test_addition_example_with_carries_by_hand():
  # 95 + 7 = 102 (two carries), + 999 = 1101 (three carries), + 0 = 1101.
  digits = jnp.array([[[5, 9, 0], [7, 0, 0], [9, 9, 9], [0, 0, 0]]], jnp.int32)
  classes = addition.cumulative_sum_classes(digits, num_outputs=5)
  np.testing.assert_array_equal(classes, [[
      [5, 9, 10, 10, 10],   # 95
      [2, 0, 1, 10, 10],    # 102
      [1, 0, 1, 1, 10],     # 1101
      [1, 0, 1, 1, 10],     # 1101
  ]])
  zero = addition.cumulative_sum_classes(jnp.zeros((1, 1, 2), jnp.int32), 3)
  np.testing.assert_array_equal(zero, [[[0, 10, 10]]])  # 0 is the digit '0'.
  # The largest sum of the paper's task, 5 * 99999 = 499995, fills 6 digits.
  nines = jnp.full((1, 5, 5), 9, jnp.int32)
  classes = addition.cumulative_sum_classes(nines,
                                            addition.num_sum_digits(5, 5))
  np.testing.assert_array_equal(classes[0, -1], [5, 9, 9, 9, 9, 4])
  assert addition.num_sum_digits(5, 5) == 6


def test_addition_samples_match_the_oracle():
  batch = _sample('addition', 1)
  chunks = batch.inputs.reshape(B, 5, 5, 10)
  used = chunks.sum(-1)
  assert set(np.unique(used)) <= {0.0, 1.0}
  lengths = (used.sum(-1) > 0).sum(1)
  for b in range(B):
    total = 0
    for t in range(5):
      count = int(used[b, t].sum())
      assert np.all(used[b, t, :count] == 1) and np.all(used[b, t, count:] == 0)
      # Least significant digit first.
      total += sum(int(chunks[b, t, k].argmax()) * 10**k for k in range(count))
      has_target = 1 <= t < lengths[b]
      assert batch.mask[b, t] == float(has_target)
      if has_target:
        np.testing.assert_array_equal(batch.targets[b, t], _classes(total, 6))
      else:
        assert np.all(batch.targets[b, t] == 0)
    assert batch.difficulty[b] == used[b].sum(-1).max()


def test_addition_distributions():
  batch = _samples('addition', 2)
  used = batch.inputs.reshape(2 * B, 5, 5, 10).sum(-1)
  lengths = (used.sum(-1) > 0).sum(1)
  assert set(lengths) == set(range(1, 6))
  assert np.all(batch.mask.sum(1) == lengths - 1)
  counts = used.sum(-1)[used.sum(-1) > 0]
  assert set(counts.astype(int)) == set(range(1, 6))
  assert np.all(batch.targets >= 0) and np.all(batch.targets <= 10)


# ----------------------------------------------------------------------------
# Sort (Section 3.4).


def test_sort_example_by_hand():
  values = jnp.array([[0.3, -1.2, 2.0, 0.1, 0.0]], jnp.float32)
  targets, mask = sort.sorted_index_targets(values, jnp.array([3]), 10)
  # Only the first 3 values count: -1.2 (index 1) < 0.3 (0) < 2.0 (2); the
  # outputs fill the 3 steps after the 3 inputs.
  np.testing.assert_array_equal(targets, [[0, 0, 0, 1, 0, 2, 0, 0, 0, 0]])
  np.testing.assert_array_equal(mask, [[0, 0, 0, 1, 1, 1, 0, 0, 0, 0]])


def test_sort_samples_match_the_oracle():
  batch = _sample('sort', 1)
  for b in range(B):
    flags = batch.inputs[b, :, 1]
    assert flags.sum() == 1
    n = int(np.argmax(flags)) + 1
    assert batch.difficulty[b] == n
    assert np.all(batch.inputs[b, n:] == 0)
    expected_mask = np.zeros(30)
    expected_mask[n:2 * n] = 1
    np.testing.assert_array_equal(batch.mask[b], expected_mask)
    np.testing.assert_array_equal(batch.targets[b, n:2 * n, 0],
                                  np.argsort(batch.inputs[b, :n, 0]))
    assert np.all(batch.targets[b, :n] == 0)
    assert np.all(batch.targets[b, 2 * n:] == 0)


def test_sort_distributions():
  batch = _samples('sort', 2)
  assert set(batch.difficulty) == set(range(2, 16))
  values = batch.inputs[..., 0][batch.inputs[..., 0] != 0]
  assert abs(values.mean()) < 0.1 and abs(values.std() - 1) < 0.1


# ----------------------------------------------------------------------------
# Forced difficulty and length.


# The forced settings of the paper's difficulty plots; the loss tests reuse them
# (so the sampler compiled for them is reused) because they guarantee a target
# step in every row.
FORCED = {
    'parity': dict(difficulty=7, seq_len=1),
    'logic': dict(difficulty=3, seq_len=5),      # Figure 10: length 5.
    'addition': dict(difficulty=4, seq_len=3),   # Figure 14: length 3.
    'sort': dict(difficulty=9),                  # Figure 19.
}


def test_forced_difficulty_and_seq_len():
  b = _sample('parity', **FORCED['parity'])
  np.testing.assert_array_equal(np.sum(b.inputs != 0, -1), 7)
  np.testing.assert_array_equal(b.difficulty, 7)

  # All sequences of length 5 with 3 gates in every vector.
  b = _sample('logic', **FORCED['logic'])
  np.testing.assert_array_equal(b.mask.sum(1), 5)
  np.testing.assert_array_equal(b.difficulty, 3)
  gates_per_vector = b.inputs[..., 2:].sum(-1)
  np.testing.assert_array_equal(gates_per_vector[:, :5], 3)
  np.testing.assert_array_equal(b.inputs[:, 5:], 0)

  # All sequences of length 3 with 4 digits in every number.
  b = _sample('addition', **FORCED['addition'])
  np.testing.assert_array_equal(b.mask.sum(1), 2)
  np.testing.assert_array_equal(b.inputs.sum(-1)[:, :3], 4)
  np.testing.assert_array_equal(b.inputs[:, 3:], 0)
  np.testing.assert_array_equal(b.difficulty, 4)

  # For sort, seq_len and difficulty both give the number of values to sort
  # (the same static argument, so one compiled sampler serves all three).
  for kwargs in (dict(difficulty=9), dict(seq_len=9),
                 dict(difficulty=9, seq_len=9)):
    b = _sample('sort', **kwargs)
    np.testing.assert_array_equal(b.difficulty, 9)
    np.testing.assert_array_equal(b.mask.sum(1), 9)


# ----------------------------------------------------------------------------
# Randomness and jit.


@pytest.mark.parametrize('name', tasks.NAMES)
def test_same_key_same_batch(name):
  first, again, other = (_sample(name, seed) for seed in (0, 0, 1))
  for x, y in zip(first, again):
    np.testing.assert_array_equal(x, y)
  assert not np.array_equal(first.inputs, other.inputs)


def test_legacy_uint32_keys_work():
  legacy = TASKS['parity'].sample(jax.random.PRNGKey(0), B)
  assert legacy.inputs.shape == (B, 1, 64)


def test_sample_inside_a_jitted_step_equals_eager():
  # batch(step) = sample(fold_in(key, step)) with the step traced, as in a
  # jitted train step; all four tasks in one function to compile once.
  @jax.jit
  def step_fn(step):
    out = {}
    for name, task in TASKS.items():
      batch = task.sample(jax.random.fold_in(KEY, step), B)
      logits = jnp.zeros(batch.mask.shape + (task.output_size,), jnp.float32)
      out[name] = (batch, jnp.mean(task.loss(logits, batch)))
    return out

  out = step_fn(3)
  for name, task in TASKS.items():
    batch, loss = out[name]
    expected = task.sample(jax.random.fold_in(KEY, 3), B)
    for x, y in zip(batch, expected):
      np.testing.assert_array_equal(x, y)
    assert np.isfinite(loss)
  later = step_fn(4)
  for name in TASKS:
    assert not np.array_equal(later[name][0].inputs, out[name][0].inputs)


# ----------------------------------------------------------------------------
# Losses and sequence errors.


def _perfect_logits(task, targets, scale=30.0):
  if task.name in ('parity', 'logic'):
    return (scale * (2 * targets - 1)).astype(np.float32)
  groups = targets.shape[-1]
  one_hot = np.eye(task.output_size // groups, dtype=np.float32)[targets]
  return scale * one_hot.reshape(targets.shape[:2] + (task.output_size,))


def _reference_loss(task, logits, batch):
  """Slow NumPy cross-entropy, one target at a time."""
  logits, targets, mask = (np.asarray(x, np.float64) for x in
                           (logits, batch.targets, batch.mask))
  groups = targets.shape[-1]
  classes = task.output_size // groups
  out = np.zeros(mask.shape[0])
  for b, t in zip(*np.nonzero(mask)):
    for g in range(groups):
      if task.name in ('parity', 'logic'):
        p = 1 / (1 + np.exp(-logits[b, t, g]))
        y = targets[b, t, g]
        out[b] -= y * np.log(p) + (1 - y) * np.log(1 - p)
      else:
        z = logits[b, t, g * classes:(g + 1) * classes]
        log_p = z - np.log(np.sum(np.exp(z - z.max()))) - z.max()
        out[b] -= log_p[int(targets[b, t, g])]
  return out


@pytest.mark.parametrize('name', tasks.NAMES)
def test_loss_and_errors(name):
  task = TASKS[name]
  batch = _sample(name, 8, **FORCED[name])  # Every row has a target step.
  logits = _perfect_logits(task, batch.targets)
  assert not np.any(task.sequence_errors(logits, batch))
  assert np.all(np.asarray(task.loss(logits, batch)) < 1e-6)

  random_logits = np.random.default_rng(0).standard_normal(
      logits.shape).astype(np.float32)
  np.testing.assert_allclose(task.loss(random_logits, batch),
                             _reference_loss(task, random_logits, batch),
                             rtol=1e-5)

  # Corrupt one target of row 0: only row 0 is wrong and its loss grows.
  t = int(np.argmax(batch.mask[0]))
  classes = task.output_size // batch.targets.shape[-1]
  wrong = batch.targets.copy()
  wrong[0, t, -1] = (1 - wrong[0, t, -1] if name in ('parity', 'logic')
                     else (wrong[0, t, -1] + 1) % classes)
  corrupted = batch._replace(targets=wrong)
  expected = np.zeros(B, bool)
  expected[0] = True
  np.testing.assert_array_equal(task.sequence_errors(logits, corrupted),
                                expected)
  assert task.loss(logits, corrupted)[0] > 10.0
  # The same corruption at a step without a target is ignored.
  mask = batch.mask.copy()
  mask[0, t] = 0.0
  no_target = corrupted._replace(mask=mask)
  assert not np.any(task.sequence_errors(logits, no_target))

  grads = jax.grad(lambda z: jnp.sum(task.loss(z, batch)))(random_logits)
  assert grads.shape == logits.shape and np.all(np.isfinite(grads))


def test_loss_rejects_wrong_logits_shape():
  task = TASKS['addition']
  batch = _sample('addition')
  with pytest.raises(ValueError,
                     match=r'logits must have shape .*\(256, 5, 66\)'):
    task.loss(jnp.zeros((B, 5, 60), jnp.float32), batch)
  with pytest.raises(ValueError, match='logits'):
    task.sequence_errors(jnp.zeros((B, 4, 66), jnp.float32), batch)
  with pytest.raises(ValueError, match='floating point'):
    task.loss(jnp.zeros((B, 5, 66), jnp.int32), batch)


# ----------------------------------------------------------------------------
# Bad arguments.


@pytest.mark.parametrize('factory, kwargs, match', [
    (parity.task, dict(bits=0), 'bits'),
    (parity.task, dict(bits=2.5), 'bits'),
    (parity.task, dict(bits=True), 'bits'),
    (logic.task, dict(max_len=0), 'max_len'),
    (logic.task, dict(num_gates=-1), 'num_gates'),
    (addition.task, dict(max_digits='5'), 'max_digits'),
    (addition.task, dict(max_len=0), 'max_len'),
    (sort.task, dict(min_len=0), 'min_len'),
    (sort.task, dict(min_len=5, max_len=4), 'max_len'),
])
def test_bad_factory_arguments(factory, kwargs, match):
  with pytest.raises(ValueError, match=match):
    factory(**kwargs)


@pytest.mark.parametrize('name, kwargs, match', [
    ('parity', dict(batch_size=0), 'batch_size'),
    ('parity', dict(batch_size=4, difficulty=65),
     r'difficulty must be an integer in \[1, 64\], got 65'),
    ('parity', dict(batch_size=4, seq_len=2), 'seq_len'),
    ('logic', dict(batch_size=4, difficulty=0), 'difficulty'),
    ('logic', dict(batch_size=4, seq_len=11), 'seq_len'),
    ('addition', dict(batch_size=4, difficulty=6), 'difficulty'),
    ('addition', dict(batch_size=4.0), 'batch_size'),
    ('sort', dict(batch_size=4, seq_len=16), 'seq_len'),
    ('sort', dict(batch_size=4, seq_len=3, difficulty=4),
     'seq_len and difficulty'),
])
def test_bad_sample_arguments(name, kwargs, match):
  with pytest.raises(ValueError, match=match):
    tasks.get(name).sample(KEY, **kwargs)


def test_get_rejects_unknown_names_and_arguments():
  with pytest.raises(ValueError,
                     match=r"name must be one of .*'parity'.*got 'copy'"):
    tasks.get('copy')
  with pytest.raises(
      ValueError,
      match=(r"unknown argument\(s\) \['bitz'\]; allowed: \['bits', "
             r"'layout', 'min_count', 'max_count'\]")):
    tasks.get('parity', bitz=3)
