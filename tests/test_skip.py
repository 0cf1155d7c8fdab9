"""Skip RNN against a slow loop of the Skip-RNN equations (S1)-(S5).

One reference step, written from the equations with the arithmetic mix of S2
(``u * new + (1 - u) * old``), runs in a NumPy loop for the values and in
plain JAX for the gradients: there its ``round`` is the straight-through
``v + stop_gradient(round(v) - v)`` of S1, so ``jax.grad`` of it is the
straight-through gradient the paper trains with (finite differences cannot
check it: ``round`` is piecewise constant, its true derivative is 0). The
library computes S2 as a select with a custom derivative instead, and none of
its code is shared with the reference.
"""

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import act, cells, skip
from vcrnn_jax.core import Cell, Context
from vcrnn_jax.unroll import unroll

B, T, D, H = 3, 8, 2, 5


def _elman_step(xp, p, s, x):
  h = xp.tanh(x @ p['input_kernel'] + s[0] @ p['recurrent_kernel']
              + p['bias'][None])
  return (h,), h


def _lstm_step(xp, p, s, x):
  c, h = s  # LSTMState(c, h)
  a, i, f, o = xp.split(x @ p['input_kernel'] + h @ p['recurrent_kernel']
                        + p['bias'][None], 4, axis=-1)
  sig = lambda v: 1.0 / (1.0 + xp.exp(-v))
  c = sig(f) * c + sig(i) * xp.tanh(a)
  h = sig(o) * xp.tanh(c)
  return (c, h), h


INNER = {'elman': (cells.elman, _elman_step),
         'lstm': (cells.lstm, _lstm_step)}
READ = {'y': lambda s, y: y, 'c': lambda s, y: s[0]}


def _straight_through_round(v):
  return v + jax.lax.stop_gradient(jnp.round(v) - v)                # (S1)


def ref_step(xp, round_, step, p, read, carry, x, valid):
  """One step of S1-S4 for every row; rows with valid 0 keep the state."""
  s, prob, y_prev = carry
  u = round_(prob)                                                   # (S1)
  cand, y = step(xp, p['cell'], s, x)
  m = u[:, None]
  new_s = tuple(m * a + (1 - m) * b for a, b in zip(cand, s))         # (S2)
  y = m * y + (1 - m) * y_prev
  f = READ[read](new_s, y)
  delta = 1.0 / (1.0 + xp.exp(-(f @ p['update']['kernel']
                                + p['update']['bias'][None])))[:, 0]  # (S3)
  new_prob = u * delta + (1 - u) * (prob + xp.minimum(delta, 1 - prob))  # (S4)
  v = valid[:, None]
  carry = (tuple(v * a + (1 - v) * b for a, b in zip(new_s, s)),
           valid * new_prob + (1 - valid) * prob, v * y + (1 - v) * y_prev)
  return carry, (v * y, valid * u, valid * prob)


def ref_skip(p, xs, state0, step, read='y', lengths=None):
  """NumPy: S1-S4 over time, one step at a time; returns (final cell state,
  final u~, outputs, u, u~), time on axis 1."""
  carry = (state0, np.ones(xs.shape[0]), np.zeros((xs.shape[0], H)))  # (S4)
  outs = []
  for t in range(xs.shape[1]):
    valid = (np.ones(xs.shape[0]) if lengths is None
             else (t < lengths).astype(xs.dtype))
    carry, out = ref_step(np, np.round, step, p, read, carry, xs[:, t],
                          valid)
    outs.append(out)
  return (carry[0], carry[1]) + tuple(np.stack(o, 1) for o in zip(*outs))


def _np(tree):
  return jax.tree_util.tree_map(np.asarray, tree)


def _random_state(cell, batch, key=3):
  return jax.tree_util.tree_map(
      lambda a: 0.5 * jax.random.normal(jax.random.key(key), a.shape,
                                        a.dtype),
      cell.initial_state(batch))


def _setup(name, read='y', update_bias=0.0, scale=3.0, dtype=jnp.float64):
  factory, step = INNER[name]
  features = None if read == 'y' else (lambda s, y: s.c)
  cell = skip.skip(factory(H, param_dtype=dtype), features=features,
                   update_bias=update_bias)
  params = cell.init(jax.random.key(0), D)
  # A spread gate, so rows update and skip at different steps.
  params['update']['kernel'] = scale * params['update']['kernel']
  return cell, params, step


def _xs(batch=B, time=T, dtype=jnp.float64, seed=2):
  return jax.random.normal(jax.random.key(seed), (batch, time, D), dtype)


@pytest.mark.parametrize('name,read', [('elman', 'y'), ('lstm', 'y'),
                                       ('lstm', 'c')])
def test_values_match_the_reference(name, read):
  cell, params, step = _setup(name, read)
  state0 = cell.initial_state(B)._replace(
      cell=_random_state(INNER[name][0](H, param_dtype=jnp.float64), B))
  xs, lengths = _xs(), jnp.array([T, 5, 2])
  final, ys = jax.jit(lambda p: unroll(cell, p, state0, xs, lengths))(params)
  s, prob, want_y, want_u, want_p = ref_skip(
      _np(params), np.asarray(xs), tuple(_np(state0.cell)), step, read,
      np.asarray(lengths))
  np.testing.assert_allclose(ys.output, want_y, atol=1e-12)
  np.testing.assert_array_equal(ys.update, want_u)
  np.testing.assert_allclose(ys.update_prob, want_p, atol=1e-12)
  chex.assert_trees_all_close(tuple(final.cell), s, atol=1e-12)
  np.testing.assert_allclose(final.update_prob, prob, atol=1e-12)
  # The check means something only if rows both update and skip, and no
  # u~ sits at the rounding tie.
  real = np.arange(T)[None, :] < np.asarray(lengths)[:, None]
  assert 0 < want_u[real].sum() < real.sum()
  assert np.abs(want_p[real] - 0.5).min() > 1e-6


@pytest.mark.parametrize('name', sorted(INNER))
def test_gradients_are_the_straight_through_reference(name):
  cell, params, step = _setup(name)
  xs = _xs()
  lam = 0.3
  w = jax.random.normal(jax.random.key(9), (B, T, H), jnp.float64)
  w_p = jax.random.normal(jax.random.key(10), (B, T), jnp.float64)

  def loss(p):
    final, ys = unroll(cell, p, cell.initial_state(B), xs)
    return (jnp.sum(w * ys.output) + jnp.sum(w_p * ys.update_prob)
            + lam * jnp.sum(skip.budget_loss(ys))                      # (S5)
            + jnp.sum(final.cell.h) + jnp.sum(final.update_prob))

  def ref_loss(p):
    # The reference's step in a lax.scan (a Python loop would compile T
    # copies of it).
    zeros = jnp.zeros((B, H), jnp.float64)
    init = (tuple(zeros for _ in cell.initial_state(B).cell),
            jnp.ones(B, jnp.float64), zeros)                        # (S4)
    body = lambda carry, x: ref_step(jnp, _straight_through_round, step, p,
                                     'y', carry, x, jnp.ones(B, jnp.float64))
    (s, prob, _), (y, u, probs) = jax.lax.scan(body, init,
                                               jnp.swapaxes(xs, 0, 1))
    y, u, probs = (jnp.swapaxes(a, 0, 1) for a in (y, u, probs))
    return (jnp.sum(w * y) + jnp.sum(w_p * probs) + lam * jnp.sum(u)
            + jnp.sum(s[-1]) + jnp.sum(prob))

  got = jax.jit(jax.grad(loss))(params)
  want = jax.jit(jax.grad(ref_loss))(params)
  chex.assert_trees_all_close(got, want, rtol=1e-10, atol=1e-12)
  # The gate learns: the straight-through u_t carries a gradient to it.
  assert np.abs(got['update']['bias']).max() > 1e-4


def test_first_step_updates_and_a_skip_copies_the_state_bit_exactly():
  cell, params, _ = _setup('lstm')
  state = cell.initial_state(B)
  state = state._replace(
      cell=jax.tree_util.tree_map(lambda a: a.at[:, 0].set(-0.0),
                                  _random_state(cells.lstm(H, param_dtype=
                                                           jnp.float64), B)))
  xs = _xs()
  apply = jax.jit(cell.apply)
  skipped = 0
  for t in range(T):
    new, out = apply(params, state, xs[:, t])
    if t == 0:
      np.testing.assert_array_equal(out.update, 1.0)                # u_1 = 1
      np.testing.assert_array_equal(out.update_prob, 1.0)
    assert set(np.asarray(out.update).tolist()) <= {0.0, 1.0}
    assert np.all((out.update_prob > 0) & (out.update_prob <= 1))
    for b in np.flatnonzero(np.asarray(out.update) == 0):
      skipped += 1
      for leaf, old in zip(new.cell, state.cell):
        assert np.asarray(leaf[b]).tobytes() == np.asarray(old[b]).tobytes()
      assert (np.asarray(new.output[b]).tobytes()
              == np.asarray(state.output[b]).tobytes())
      np.testing.assert_array_equal(out.output[b], state.output[b])
    state = new
  assert skipped > 0
  # A user's state that starts by skipping keeps even the signs of zeros.
  start = state._replace(update_prob=jnp.full((B,), 0.2, jnp.float64),
                         cell=jax.tree_util.tree_map(
                             lambda a: a.at[:, 0].set(-0.0), state.cell))
  new, out = apply(params, start, xs[:, 0])
  np.testing.assert_array_equal(out.update, 0.0)
  assert np.all(np.signbit(new.cell.c[:, 0]))


def test_update_prob_accumulates_while_skipping_until_an_update():
  cell, params, _ = _setup('elman')
  # Delta u~ = sigma(log 1/4) = 0.2 whatever the state.
  params['update'] = {'kernel': jnp.zeros_like(params['update']['kernel']),
                      'bias': jnp.full((1,), math.log(0.25), jnp.float64)}
  _, ys = unroll(cell, params, cell.initial_state(B), _xs())
  np.testing.assert_array_equal(ys.update, [[1, 0, 0, 1, 0, 0, 1, 0]] * B)
  np.testing.assert_allclose(ys.update_prob,
                             [[1, .2, .4, .6, .2, .4, .6, .2]] * B,
                             atol=1e-12)
  # S4's min: from u~ = 0.4, a Delta of 0.88 > 1 - u~ reaches 1 exactly.
  params['update']['bias'] = jnp.full((1,), 2.0, jnp.float64)
  state = cell.initial_state(B)._replace(
      update_prob=jnp.full((B,), 0.4, jnp.float64))
  state, out = cell.apply(params, state, _xs()[:, 0])
  np.testing.assert_array_equal(out.update, 0.0)
  np.testing.assert_array_equal(state.update_prob, 1.0)


def test_padded_rows_keep_the_whole_state_and_output_zeros():
  cell, params, _ = _setup('lstm')
  state = cell.initial_state(B)._replace(
      cell=_random_state(cells.lstm(H, param_dtype=jnp.float64), B),
      update_prob=jnp.array([1.0, 0.7, 0.3], jnp.float64))
  x = _xs()[:, 0]
  for hard in (False, True):
    c = skip.skip(cells.lstm(H, param_dtype=jnp.float64), hard=hard)
    new, out = c.apply(params, state, x, Context(active=jnp.array(
        [True, False, True])))
    chex.assert_trees_all_equal(
        jax.tree_util.tree_map(lambda a: a[1], new),
        jax.tree_util.tree_map(lambda a: a[1], state))
    chex.assert_trees_all_equal(
        jax.tree_util.tree_map(lambda a: a[1], out),
        jax.tree_util.tree_map(lambda a: jnp.zeros_like(a[1]), out))
    assert float(out.update[0]) == 1.0 and float(out.update[2]) == 0.0
  # Under unroll (whose lengths the values test checks against the
  # reference), a sequence of length 0 keeps its state and counts nothing.
  final, ys = unroll(cell, params, state, _xs(), jnp.array([T, 3, 0]))
  chex.assert_trees_all_equal(
      jax.tree_util.tree_map(lambda a: a[2], final),
      jax.tree_util.tree_map(lambda a: a[2], state))
  np.testing.assert_array_equal(skip.budget_loss(ys), [
      float(ys.update[0].sum()), float(ys.update[1, :3].sum()), 0.0])


def test_budget_loss():
  out = skip.SkipOutput(output=None,
                        update=jnp.array([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]]),
                        update_prob=None)
  np.testing.assert_array_equal(skip.budget_loss(out), [2.0, 3.0])
  mask = jnp.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
  np.testing.assert_array_equal(skip.budget_loss(out, mask), [1.0, 3.0])
  one_step = out._replace(update=out.update[:, 0])
  np.testing.assert_array_equal(skip.budget_loss(one_step), [1.0, 1.0])
  with pytest.raises(ValueError, match=r'mask must have the shape of the '
                     r'updates \(2, 3\), got \(2,\)'):
    skip.budget_loss(out, jnp.ones(2))


def _hard_and_soft(name, batch, params_fn):
  factory, _ = INNER[name]
  soft = skip.skip(factory(H, param_dtype=jnp.float64))
  hard = skip.skip(factory(H, param_dtype=jnp.float64), hard=True)
  params = params_fn(soft.init(jax.random.key(0), D))
  xs = _xs(batch)
  run = lambda c: jax.jit(lambda p: unroll(c, p, c.initial_state(batch), xs))
  return run(soft)(params), run(hard)(params)


def _spread(params):
  """The gate of _setup: rows update and skip at different steps."""
  return dict(params, update={
      'kernel': 3.0 * params['update']['kernel'],
      'bias': jnp.zeros_like(params['update']['bias'])})


def _near_forced(params):
  """A gate near Delta u~ = 0.3: rows often skip at the same steps."""
  return dict(params, update={
      'kernel': 2.0 * params['update']['kernel'],
      'bias': jnp.full((1,), math.log(0.3 / 0.7), jnp.float64)})


@pytest.mark.parametrize('name,batch,params_fn', [
    ('elman', 1, _spread), ('lstm', 1, _near_forced),
    ('elman', 4, _near_forced), ('lstm', 4, _near_forced)])
def test_hard_path_equals_the_soft_forward(name, batch, params_fn):
  (soft_final, soft_ys), (hard_final, hard_ys) = _hard_and_soft(
      name, batch, params_fn)
  chex.assert_trees_all_equal(hard_ys, soft_ys)
  chex.assert_trees_all_equal(hard_final, soft_final)
  u = np.asarray(soft_ys.update)
  # Steps on which every row skips (the cell does not run) exist.
  assert np.any(u.max(0) == 0)
  if batch > 1:   # and steps on which only some rows update.
    assert np.any((u.max(0) == 1) & (u.min(0) == 0))


def test_hard_path_does_not_run_the_cell_on_skipped_steps():
  calls = []
  inner = cells.elman(H, param_dtype=jnp.float64)

  def counted(params, state, x, context=None):
    jax.debug.callback(lambda: calls.append(1))
    return inner.apply(params, state, x, context)

  params = None
  for hard, want in ((True, 3), (False, T)):
    cell = skip.skip(inner._replace(apply=counted), hard=hard)
    if params is None:
      params = cell.init(jax.random.key(0), D)
      params['update'] = {
          'kernel': jnp.zeros_like(params['update']['kernel']),
          'bias': jnp.full((1,), math.log(0.25), jnp.float64)}
    calls.clear()
    _, ys = jax.jit(lambda p, cell=cell: unroll(
        cell, p, cell.initial_state(1), _xs(1)))(params)
    jax.effects_barrier()
    np.testing.assert_array_equal(ys.update[0], [1, 0, 0, 1, 0, 0, 1, 0])
    assert len(calls) == want


@pytest.mark.parametrize('name,batch,rows', [
    ('lstm', 5, 3), ('elman', 4, 1), ('lstm', 3, 1)])
def test_grouped_hard_path_equals_the_soft_forward(name, batch, rows):
  factory, _ = INNER[name]
  soft = skip.skip(factory(H, param_dtype=jnp.float64))
  hard = skip.skip(factory(H, param_dtype=jnp.float64), hard=True,
                   compact_rows=rows)
  params = _spread(soft.init(jax.random.key(0), D))
  xs = _xs(batch)
  lengths = jnp.arange(batch, 0, -1) * T // batch   # padded rows too
  run = lambda c: jax.jit(lambda p: unroll(c, p, c.initial_state(batch), xs,
                                           lengths))(params)
  (soft_final, soft_ys), (hard_final, hard_ys) = run(soft), run(hard)
  np.testing.assert_array_equal(hard_ys.update, soft_ys.update)
  chex.assert_trees_all_close(hard_ys, soft_ys, rtol=0, atol=1e-13)
  chex.assert_trees_all_close(hard_final, soft_final, rtol=0, atol=1e-13)
  u = np.asarray(soft_ys.update)
  assert np.any((u.max(0) == 1) & (u.min(0) == 0))   # rows out of step


def test_compact_rows_run_the_cell_on_the_updating_rows_only():
  rows = []
  inner = cells.elman(H, param_dtype=jnp.float64)

  def counted(params, state, x, context=None):
    jax.debug.callback(lambda n=x.shape[0]: rows.append(n))
    return inner.apply(params, state, x, context)

  batch = 4
  params = _spread(skip.skip(inner).init(jax.random.key(0), D))
  computed = {}
  for compact_rows in (None, 2, 1):
    cell = skip.skip(inner._replace(apply=counted), hard=True,
                     compact_rows=compact_rows)
    rows.clear()
    _, ys = jax.jit(lambda p, cell=cell: unroll(
        cell, p, cell.initial_state(batch), _xs(batch)))(params)
    jax.effects_barrier()
    computed[compact_rows] = sum(rows)
  k = np.asarray(ys.update).sum(0)    # rows that update at each step
  assert np.any((k > 0) & (k < batch))
  # One bucket per row count: the cell computes exactly the updating rows.
  assert computed[1] == k.sum()
  assert computed[2] == (2 * np.ceil(k / 2)).sum()
  assert computed[None] == batch * (k > 0).sum()


def test_act_around_skip_and_skip_around_act():
  xs = _xs(time=4, dtype=jnp.float32)
  lengths = jnp.array([4, 3, 1])
  outer = act.adaptive(skip.skip(cells.elman(H)), 2, max_steps=3)
  inner = skip.skip(act.adaptive(cells.elman(H), None, max_steps=3))
  for cell, read in ((outer, lambda ys: ys.output + ys.ponder[..., None]),
                     (inner, lambda ys: ys.output * ys.update[..., None])):
    params = cell.init(jax.random.key(0), D)

    def loss(p, cell=cell, read=read):
      _, ys = unroll(cell, p, cell.initial_state(B), xs, lengths)
      return jnp.sum(read(ys))

    grads = jax.jit(jax.grad(loss))(params)
    assert all(np.all(np.isfinite(g))
               for g in jax.tree_util.tree_leaves(grads))
  # The hard path around ACT: the same forward.
  hard = skip.skip(act.adaptive(cells.elman(H), None, max_steps=3),
                   hard=True)
  params = _near_forced(inner.init(jax.random.key(0), D))
  params['update'] = jax.tree_util.tree_map(
      lambda a: a.astype(jnp.float32), params['update'])
  got, want = (jax.jit(lambda p, c=c: unroll(
      c, p, c.initial_state(B), xs, lengths))(params) for c in (hard, inner))
  chex.assert_trees_all_equal(got, want)


def test_params_tree_golden():
  cell = skip.skip(cells.lstm(H))
  params = cell.init(jax.random.key(0), D)
  assert jax.tree_util.tree_map(jnp.shape, params) == {
      'cell': {'input_kernel': (D, 4 * H), 'recurrent_kernel': (H, 4 * H),
               'bias': (4 * H,)},
      'update': {'kernel': (H, 1), 'bias': (1,)},
  }
  np.testing.assert_array_equal(params['update']['bias'], 1.0)
  assert all(a.dtype == jnp.float32 for a in jax.tree_util.tree_leaves(params))
  # The hard path shares the params; features set the kernel's rows.
  hard = skip.skip(cells.lstm(H), hard=True, update_bias=2.0,
                   features=lambda s, y: jnp.concatenate([s.c, y], -1))
  params = hard.init(jax.random.key(0), D)
  assert params['update']['kernel'].shape == (2 * H, 1)
  np.testing.assert_array_equal(params['update']['bias'], 2.0)
  state = cell.initial_state(B)
  assert isinstance(state, skip.SkipState)
  np.testing.assert_array_equal(state.update_prob, 1.0)              # (S4)
  assert state.output.shape == (B, H) and state.output.dtype == jnp.float32
  # param_dtype sets the gate's dtype (and u~'s), not the wrapped cell's.
  mixed = skip.skip(cells.elman(H), param_dtype=jnp.float64)
  params = mixed.init(jax.random.key(0), D)
  assert params['update']['kernel'].dtype == jnp.float64
  assert params['cell']['input_kernel'].dtype == jnp.float32
  _, out = mixed.apply(params, mixed.initial_state(B),
                       jnp.ones((B, D), jnp.float32))
  assert out.update.dtype == jnp.float64 and out.output.dtype == jnp.float32


def test_bad_arguments():
  with pytest.raises(ValueError, match='cell must be a vcrnn_jax.Cell'):
    skip.skip(cells.elman)
  for bad in ('1', float('nan'), float('inf'), True, None):
    with pytest.raises(ValueError, match='update_bias must be a finite'):
      skip.skip(cells.elman(H), update_bias=bad)
  with pytest.raises(ValueError, match='features must be a function'):
    skip.skip(cells.elman(H), features=3)
  with pytest.raises(ValueError, match='hard must be a bool'):
    skip.skip(cells.elman(H), hard=1)
  for bad in (0, 1.5, True):
    with pytest.raises(ValueError, match='compact_rows must be a positive'):
      skip.skip(cells.elman(H), hard=True, compact_rows=bad)
  cell = skip.skip(cells.elman(H))
  with pytest.raises(ValueError, match='batch_size must be a positive'):
    cell.initial_state(0)
  with pytest.raises(ValueError, match='input_size must be a positive'):
    cell.init(jax.random.key(0), 0)
  params = cell.init(jax.random.key(0), D)
  wrong = skip.skip(cells.elman(H + 1)).initial_state(B)
  with pytest.raises(ValueError, match='state'):
    cell.apply(params, wrong, jnp.ones((B, D), jnp.float32))
  assert isinstance(skip.skip(cells.elman(H), update_bias=-2), Cell)


def test_hard_path_under_vmap_and_no_retrace():
  # Under vmap the cond becomes a select: both branches run, same values.
  soft = skip.skip(cells.elman(H))
  hard = skip.skip(cells.elman(H), hard=True)
  params = _near_forced(soft.init(jax.random.key(0), D))
  params['update'] = jax.tree_util.tree_map(
      lambda a: a.astype(jnp.float32), params['update'])
  xs = _xs(batch=2, time=4, dtype=jnp.float32).reshape(2, 1, 4, D)
  chex.clear_trace_counter()

  @jax.jit
  @chex.assert_max_traces(n=1)
  def run(params, xs):
    return jax.vmap(lambda x: unroll(hard, params, hard.initial_state(1),
                                     x))(xs)

  got = run(params, xs)
  run(params, xs + 1.0)   # a second call does not trace again
  for i in range(2):
    want = unroll(soft, params, soft.initial_state(1), xs[i])
    chex.assert_trees_all_equal(
        jax.tree_util.tree_map(lambda a, i=i: a[i], got), want)
