"""PonderNet against a slow NumPy loop of P1-P5."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import act, cells, loops, ponder, vc
from vcrnn_jax.core import Context
from vcrnn_jax.unroll import unroll

B, T, D, H, O = 5, 3, 4, 6, 3
M, EPS, LAMBDA_P, BETA = 8, 0.05, 0.2, 0.5
LENGTHS = (3, 1, 2, 3, 2)


def _sigmoid(x):
  return 1.0 / (1.0 + np.exp(-x))


def np_elman_step(p, s, x):
  h = np.tanh(x @ p['input_kernel'] + s[0] @ p['recurrent_kernel'] + p['bias'])
  return (h,), h


def np_lstm_step(p, s, x):
  c, h = s  # LSTMState(c, h), flax's order
  a, i, f, o = np.split(x @ p['input_kernel'] + h @ p['recurrent_kernel']
                        + p['bias'], 4)
  c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(a)
  h = _sigmoid(o) * np.tanh(c)
  return (c, h), h


def np_ponder_step(step, p, s_prev, x, mode='train'):
  """One input step of PonderNet for ONE example, P1-P5, as written."""
  s, unhalted, cum = s_prev, 1.0, 0.0
  states, outputs, probs, median = [], [], [], None
  for n in range(1, M + 1):
    s, y = step(p['cell'], s, np.concatenate([x, [1.0 if n == 1 else 0.0]]))
    outputs.append(y @ p['output']['kernel'] + p['output']['bias'])  # (P1)
    lam = _sigmoid(y @ p['halting']['kernel'] + p['halting']['bias'])[0]
    stop = cum + lam * unhalted >= 1 - EPS or n == M                 # (P4)
    lam = 1.0 if stop else lam                                       # (P2)
    probs.append(lam * unhalted)                                     # (P2)
    states.append(s)
    cum, unhalted = cum + probs[-1], unhalted * (1 - lam)
    if median is None and cum >= 0.5:                                # (P5)
      median = n
    if stop:
      break
  if mode == 'median':
    k = median
    return dict(state=states[k - 1], output=outputs[k - 1], steps=k,
                outputs=outputs[:k], probs=probs[:k])
  state = tuple(sum(pn * sn[i] for pn, sn in zip(probs, states))
                for i in range(len(s_prev)))
  return dict(state=state, output=sum(pn * yn for pn, yn in
                                      zip(probs, outputs)),
              steps=len(probs), outputs=outputs, probs=probs)


def np_losses(outputs, probs, target):
  rec = sum(pn * np.sum((yn - target) ** 2)
            for pn, yn in zip(probs, outputs))                       # (P3)
  prior = [LAMBDA_P * (1 - LAMBDA_P) ** n for n in range(len(probs))]
  kl = sum(pn * np.log(pn / qn) for pn, qn in zip(probs, prior))     # (P3)
  return rec, kl


def squared_error(y_hat, y):
  return (y_hat - y) ** 2


def _np(tree):
  return jax.tree_util.tree_map(np.asarray, tree)


def _inner(name, dtype=jnp.float64):
  return {'elman': cells.elman, 'lstm': cells.lstm}[name](
      H, param_dtype=dtype)


def _setup(inner, halting_bias=-0.5, loop='while', inference='train',
           max_steps=M, seed=0):
  cell = ponder.pondernet(inner, O, max_steps=max_steps, epsilon=EPS,
                          halting_bias=halting_bias, inference=inference,
                          loop=loop, param_dtype=jnp.float64)
  params = cell.init(jax.random.key(seed), D)
  # Spread the halting unit so rows take visibly different numbers of steps.
  params['halting']['kernel'] = params['halting']['kernel'] * 3.0
  return cell, params


def _data(seed=1):
  xs = jax.random.normal(jax.random.key(seed), (B, T, D), jnp.float64)
  targets = jax.random.normal(jax.random.key(seed + 1), (B, T, O),
                              jnp.float64)
  mask = jnp.arange(T)[None, :] < jnp.asarray(LENGTHS)[:, None]
  return xs, targets, mask


def _loss(cell, params, xs, targets, mask, state0=None):
  state0 = cell.initial_state(B) if state0 is None else state0
  state, out = unroll(cell, params, state0, xs, jnp.asarray(LENGTHS))
  rec = ponder.reconstruction_loss(out, targets, squared_error, mask)
  kl = ponder.kl_to_geometric(out, LAMBDA_P, mask)
  return jnp.sum(rec + BETA * kl), (state, out, rec, kl)


def _close(a, b, **kw):
  jax.tree_util.tree_map(
      lambda x, y: np.testing.assert_allclose(x, y, **kw), a, b)


@pytest.mark.parametrize('inner_name,mode', [('elman', 'median'),
                                             ('lstm', 'train')])
def test_matches_numpy_reference_under_unroll(inner_name, mode):
  inner = _inner(inner_name)
  step = {'elman': np_elman_step, 'lstm': np_lstm_step}[inner_name]
  cell, params = _setup(inner, inference=mode)
  xs, targets, mask = _data()
  state0 = jax.tree_util.tree_map(
      lambda a: 0.3 * jax.random.normal(jax.random.key(7), a.shape, a.dtype),
      cell.initial_state(B))
  _, (state, out, rec, kl) = jax.jit(
      lambda p: _loss(cell, p, xs, targets, mask, state0))(params)
  p, all_steps = _np(params), []
  for b in range(B):
    s, want_rec, want_kl = tuple(np.asarray(l[b]) for l in state0), 0.0, 0.0
    for t in range(T):
      if t >= LENGTHS[b]:      # padding: zero outputs (unroll)
        assert int(out.steps[b, t]) == 0
        np.testing.assert_array_equal(out.probs[b, t], 0.0)
        continue
      ref = np_ponder_step(step, p, s, np.asarray(xs[b, t]), mode)
      k = ref['steps']
      all_steps.append(k)
      assert int(out.steps[b, t]) == k
      np.testing.assert_allclose(out.probs[b, t, :k], ref['probs'],
                                 rtol=1e-12, atol=1e-14)
      np.testing.assert_array_equal(out.probs[b, t, k:], 0.0)
      np.testing.assert_allclose(out.outputs[b, t, :k],
                                 np.stack(ref['outputs']), atol=1e-12)
      np.testing.assert_array_equal(out.outputs[b, t, k:], 0.0)
      np.testing.assert_allclose(out.output[b, t], ref['output'],
                                 atol=1e-12)
      r, q = np_losses(ref['outputs'], ref['probs'], np.asarray(targets[b, t]))
      want_rec, want_kl = want_rec + r, want_kl + q
      s = ref['state']
    _close(tuple(np.asarray(l[b]) for l in state), s, atol=1e-12)
    np.testing.assert_allclose(rec[b], want_rec, rtol=1e-11)
    np.testing.assert_allclose(kl[b], want_kl, rtol=1e-11, atol=1e-13)
  # Rows stop at different steps, some by epsilon and (in training) some at M.
  assert len(set(all_steps)) > 2
  assert mode != 'train' or (M in all_steps and min(all_steps) < M)


def _jax_reference_loss(inner, params, xs, targets, mask, lambda_p):
  """P1-P4 and the P3 loss from the equations, in plain JAX: every input
  step runs all M ponder steps (a lax.scan), rows masked once they stop."""

  def ponder_step(carry, n):
    h, acc, unhalted, cum, going, rec, kl, x, y = carry
    flag = jnp.broadcast_to((n == 0).astype(jnp.float64), (B, 1))
    h, out = inner.apply(params['cell'], h, jnp.concatenate([x, flag], -1))
    y_hat = out @ params['output']['kernel'] + params['output']['bias'][None]
    lam = jax.nn.sigmoid(out @ params['halting']['kernel']
                         + params['halting']['bias'][None])[:, 0]
    stop = (cum + lam * unhalted >= 1 - EPS) | (n == M - 1)
    lam = jnp.where(stop, 1.0, lam)
    p = jnp.where(going, lam * unhalted, 0.0)
    rec = rec + p * jnp.sum((y_hat - y) ** 2, -1)
    log_q = math.log(lambda_p) + n * math.log(1 - lambda_p)
    kl = kl + jnp.where(going, p * (jnp.log(jnp.where(going, p, 1.0))
                                    - log_q), 0.0)
    acc = jax.tree_util.tree_map(lambda a, s: a + p[:, None] * s, acc, h)
    unhalted = jnp.where(going, unhalted * (1 - lam), unhalted)
    return (h, acc, unhalted, cum + p, going & ~stop, rec, kl, x, y), None

  def time_step(state, inputs):
    x, y, valid = inputs
    zeros = jnp.zeros(B, jnp.float64)
    carry = (state, jax.tree_util.tree_map(jnp.zeros_like, state),
             jnp.ones(B, jnp.float64), zeros, jnp.ones(B, bool), zeros, zeros,
             x, y)
    carry, _ = jax.lax.scan(ponder_step, carry,
                            jnp.arange(M, dtype=jnp.float64))
    acc, rec, kl = carry[1], carry[5], carry[6]
    state = jax.tree_util.tree_map(
        lambda a, s: jnp.where(valid[:, None], a, s), acc, state)
    return state, jnp.sum(jnp.where(valid, rec + BETA * kl, 0.0))

  inputs = (jnp.swapaxes(xs, 0, 1), jnp.swapaxes(targets, 0, 1), mask.T)
  _, losses = jax.lax.scan(time_step, inner.initial_state(B), inputs)
  return jnp.sum(losses)


def test_gradients_match_a_pure_jax_reference_of_the_equations():
  inner = _inner('elman')
  cell, params = _setup(inner)
  xs, targets, mask = _data()
  (value, (_, out, _, _)), grads = jax.jit(jax.value_and_grad(
      lambda p: _loss(cell, p, xs, targets, mask), has_aux=True))(params)
  want, want_grads = jax.jit(jax.value_and_grad(
      lambda p: _jax_reference_loss(inner, p, xs, targets, mask, LAMBDA_P)))(
          params)
  assert len(set(np.asarray(out.steps).ravel().tolist())) > 2
  np.testing.assert_allclose(value, want, rtol=1e-12)
  _close(grads, want_grads, rtol=1e-9, atol=1e-12)
  # Every part of the model gets a gradient, the halting unit included.
  assert all(np.any(np.asarray(g) != 0)
             for g in jax.tree_util.tree_leaves(grads))


def test_the_prior_is_not_renormalised_and_renormalising_only_shifts_it():
  cell, params = _setup(_inner('elman'))
  x = _data()[0][:, 0]

  def shift(params):
    _, out = cell.apply(params, cell.initial_state(B), x)
    kl = ponder.kl_to_geometric(out, LAMBDA_P)
    # p_G renormalised over each row's N steps: the KL minus log Z(N), < 0.
    log_z = jnp.log1p(-(1 - LAMBDA_P) ** out.steps.astype(jnp.float64))
    renormalised = jnp.sum(out.probs * (
        jnp.log(jnp.where(out.probs > 0, out.probs, 1.0)) - log_z[:, None]
        - math.log(LAMBDA_P)
        - jnp.arange(M, dtype=jnp.float64)[None] * math.log(1 - LAMBDA_P)),
                           -1)
    return jnp.sum(renormalised - kl), (kl, renormalised, log_z, out)

  (_, (kl, renormalised, log_z, out)), g = jax.jit(
      jax.value_and_grad(shift, has_aux=True))(params)
  probs = np.asarray(out.probs)
  prior = LAMBDA_P * (1 - LAMBDA_P) ** np.arange(M)     # not renormalised
  want = [sum(pn * np.log(pn / qn) for pn, qn in zip(row, prior) if pn > 0)
          for row in probs]
  np.testing.assert_allclose(kl, want, rtol=1e-12)
  assert np.all(np.asarray(kl) > 0)
  np.testing.assert_allclose(renormalised, kl - log_z, rtol=1e-12)
  # Since sum_n p_n = 1, the shift is a constant: no gradient.
  _close(g, jax.tree_util.tree_map(jnp.zeros_like, g), atol=1e-12)


def test_while_loop_equals_masked_scan_values_and_gradients():
  # Three checkpoint slots: rows that ponder longer use thinned slots. (The
  # while loop inside unroll's time scan is checked against the reference
  # above.)
  inner = _inner('lstm')
  cell_w, params = _setup(inner, loop=loops.LoopConfig('while', checkpoints=3))
  cell_s, _ = _setup(inner, loop='scan')
  xs, targets, _ = _data(seed=5)
  state0 = jax.tree_util.tree_map(lambda a: a + 0.2, cell_w.initial_state(B))

  def loss(params, cell):
    state, out = cell.apply(params, state0, xs[:, 0])
    value = (ponder.reconstruction_loss(out, targets[:, 0], squared_error)
             + ponder.kl_to_geometric(out, LAMBDA_P))
    return (jnp.sum(value) + jnp.sum(jnp.sin(out.output))
            + jnp.sum(state.c ** 2)), out

  grad = jax.jit(jax.value_and_grad(loss, has_aux=True), static_argnums=1)
  (lw, ow), gw = grad(params, cell_w)
  (ls, os_), gs = grad(params, cell_s)
  assert int(np.max(ow.steps)) > 3      # beyond 3 slots: thinned checkpoints
  np.testing.assert_array_equal(ow.steps, os_.steps)
  _close(ow, os_, rtol=1e-12, atol=1e-14)
  np.testing.assert_allclose(lw, ls, rtol=1e-12)
  _close(gw, gs, rtol=1e-9, atol=1e-12)


def test_compacted_rows_equal_the_full_batch():
  # Compaction carries halted rows along in a smaller batch: the ponder
  # step must leave them unchanged (the loops' tests cover its gradients).
  cell_c, params = _setup(_inner('elman'),
                          loop=loops.LoopConfig(compact_rows=2))
  cell_s, _ = _setup(_inner('elman'), loop='scan')
  assert loops.stage_sizes((8,), 2) == (8, 4, 2)
  x = jax.random.normal(jax.random.key(5), (8, D), jnp.float64)
  want = cell_s.apply(params, cell_s.initial_state(8), x)
  got = cell_c.apply(params, cell_c.initial_state(8), x)
  assert len(set(np.asarray(want[1].steps).tolist())) > 2
  np.testing.assert_array_equal(got[1].steps, want[1].steps)
  _close(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize('halting_bias', [-3.0, 0.0, 2.0])
def test_probs_sum_to_one_and_steps_respect_max_steps_and_epsilon(
    halting_bias):
  cell, params = _setup(_inner('elman'), halting_bias=halting_bias)
  x = jax.random.normal(jax.random.key(3), (16, D), jnp.float64)
  _, out = cell.apply(params, cell.initial_state(16), x)
  steps, probs = np.asarray(out.steps), np.asarray(out.probs)
  assert out.steps.dtype == jnp.int32
  assert np.all((steps >= 1) & (steps <= M))
  np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-12)
  assert np.all(probs >= 0)
  for row, k in zip(probs, steps):
    # The unroll did not stop before step k: sum_{n<k} p_n < 1 - epsilon.
    assert row[:k - 1].sum() < 1 - EPS
    np.testing.assert_array_equal(row[k:], 0.0)


def test_one_step_and_hard_limit():
  x = jax.random.normal(jax.random.key(3), (B, D), jnp.float64)
  for bias, steps in ((20.0, 1), (-20.0, M)):     # lambda ~ 1, lambda ~ 0
    cell, params = _setup(_inner('elman'), halting_bias=bias)
    _, out = cell.apply(params, cell.initial_state(B), x)
    np.testing.assert_array_equal(out.steps, steps)
    # The last step takes the remaining mass (lambda_N := 1, P2).
    assert np.all(np.asarray(out.probs[:, steps - 1]) > 0.99)


def test_sampled_halting_is_keyed_and_distributed_as_p():
  rows = 4000
  cell, params = _setup(_inner('elman'), halting_bias=-1.0, inference='sample',
                        max_steps=6)
  train, _ = _setup(_inner('elman'), halting_bias=-1.0, max_steps=6)
  x = jnp.broadcast_to(
      jax.random.normal(jax.random.key(3), (1, D), jnp.float64), (rows, D))
  state0 = cell.initial_state(rows)
  run = jax.jit(lambda key: cell.apply(params, state0, x, Context(key=key)))
  _, out = run(jax.random.key(11))
  _, again = run(jax.random.key(11))
  _, other = run(jax.random.key(12))
  np.testing.assert_array_equal(out.steps, again.steps)
  np.testing.assert_array_equal(out.output, again.output)
  assert np.any(np.asarray(out.steps) != np.asarray(other.steps))
  _, want = train.apply(params, train.initial_state(1), x[:1])
  p = np.asarray(want.probs[0])
  assert np.sum(p > 0.05) >= 3   # a spread distribution to check against
  freq = np.bincount(np.asarray(out.steps) - 1, minlength=6) / rows
  tol = 4 * np.sqrt(p * (1 - p) / rows) + 1e-3   # about 4 sigma
  assert np.all(np.abs(freq - p) <= tol), (freq, p)
  # The answer is y_n at the sampled halting step; steps stop there.
  k = np.asarray(out.steps)
  np.testing.assert_allclose(out.output, np.asarray(want.outputs[0])[k - 1],
                             atol=1e-12)
  taken = np.arange(6)[None] < k[:, None]
  np.testing.assert_allclose(np.where(taken, out.probs, 0.0),
                             np.where(taken, p[None], 0.0), atol=1e-14)
  np.testing.assert_array_equal(np.asarray(out.probs)[~taken], 0.0)


def test_median_halts_where_the_cumulative_probability_passes_one_half():
  cell, params = _setup(_inner('elman'), inference='median')
  train, _ = _setup(_inner('elman'))
  params['halting']['kernel'] = jnp.zeros_like(params['halting']['kernel'])
  x = jax.random.normal(jax.random.key(3), (2, D), jnp.float64)
  # lambda = 0.2 every step: cumulative p = .2, .36, .488, .5904: step 4.
  # lambda = 0.5: cumulative p = .5 at step 1 (a tie counts as passing).
  for bias, want in ((math.log(0.2 / 0.8), 4), (0.0, 1)):
    params['halting']['bias'] = jnp.array([bias], jnp.float64)
    _, out = cell.apply(params, cell.initial_state(2), x)
    _, full = train.apply(params, train.initial_state(2), x)
    np.testing.assert_array_equal(out.steps, want)
    np.testing.assert_allclose(out.output, full.outputs[:, want - 1],
                               atol=1e-14)
    assert np.asarray(full.probs)[:, :want].sum(-1).min() >= 0.5


def test_sampling_needs_a_key():
  cell, params = _setup(_inner('elman'), inference='sample')
  with pytest.raises(ValueError, match=r'context\.key is None'):
    cell.apply(params, cell.initial_state(2), jnp.ones((2, D), jnp.float64))


def test_padding_rows_take_one_step_and_change_nothing():
  cell, params = _setup(_inner('elman'), halting_bias=-3.0)
  x = jax.random.normal(jax.random.key(3), (B, D), jnp.float64)
  y = jax.random.normal(jax.random.key(4), (B, O), jnp.float64)
  state0 = jax.tree_util.tree_map(lambda a: a + 0.5, cell.initial_state(B))
  active = jnp.array([True, False, True, False, True])
  keep = np.asarray(active)

  def loss(params, active):
    state, out = cell.apply(params, state0, x, Context(active=active))
    w = jnp.asarray(keep, jnp.float64)
    value = jnp.sum(ponder.reconstruction_loss(out, y, squared_error, w)
                    + ponder.kl_to_geometric(out, LAMBDA_P, w))
    return value, (state, out)

  grad = jax.jit(jax.value_and_grad(loss, has_aux=True))
  (l_all, (_, full)), g_all = grad(params, jnp.ones(B, bool))
  (l_some, (state, part)), g_some = grad(params, active)
  assert grad._cache_size() == 1     # a new mask does not recompile
  assert np.all(np.asarray(full.steps) > 1)       # Every row would ponder.
  np.testing.assert_array_equal(np.asarray(part.steps)[~keep], 1)
  for field in (part.output, part.outputs, part.probs):
    np.testing.assert_array_equal(np.asarray(field)[~keep], 0.0)
  np.testing.assert_array_equal(np.asarray(state.h)[~keep], 0.5)
  _close(jax.tree_util.tree_map(lambda a: a[keep], part),
         jax.tree_util.tree_map(lambda a: a[keep], full), rtol=1e-12)
  np.testing.assert_allclose(l_some, l_all, rtol=1e-12)
  _close(g_some, g_all, rtol=1e-9, atol=1e-12)


def test_around_a_vc_cell_in_float32():
  cell = ponder.pondernet(vc.vcrnn(8, sharpness=2.0), 2, max_steps=5)
  params = cell.init(jax.random.key(0), D)
  x = jax.random.normal(jax.random.key(1), (3, D), jnp.float32)
  _, out = cell.apply(params, cell.initial_state(3), x,
                      Context(step=jnp.zeros((), jnp.int32)))
  assert out.outputs.shape == (3, 5, 2)
  assert out.output.dtype == jnp.float32
  np.testing.assert_allclose(np.sum(out.probs, -1), 1.0, rtol=1e-5)


def test_act_around_pondernet_has_finite_gradients():
  cell = act.adaptive(ponder.pondernet(_inner('elman'), H, max_steps=4,
                                       halting_bias=-1.0),
                      O, max_steps=4, halting_bias=-1.0)
  params = cell.init(jax.random.key(0), D)
  assert params['cell']['cell']['input_kernel'].shape == (D + 2, H)
  xs, targets, _ = _data()

  def loss(params):
    _, out = unroll(cell, params, cell.initial_state(B), xs,
                    jnp.asarray(LENGTHS))
    return (jnp.sum((out.output - targets) ** 2)
            + 0.01 * jnp.sum(act.ponder_cost(out)))

  grads = jax.jit(jax.grad(loss))(params)
  assert all(np.all(np.isfinite(g)) for g in jax.tree_util.tree_leaves(grads))
  assert np.any(np.asarray(grads['cell']['halting']['kernel']) != 0)


def test_params_tree_golden():
  cell = ponder.pondernet(cells.lstm(H), O)
  params = cell.init(jax.random.key(0), D)
  assert jax.tree_util.tree_map(jnp.shape, params) == {
      'cell': {'input_kernel': (D + 1, 4 * H), 'recurrent_kernel': (H, 4 * H),
               'bias': (4 * H,)},
      'output': {'kernel': (H, O), 'bias': (O,)},
      'halting': {'kernel': (H, 1), 'bias': (1,)},
  }
  np.testing.assert_array_equal(params['halting']['bias'], 0.0)
  assert params['output']['kernel'].dtype == jnp.float32


@pytest.mark.parametrize('epsilon', [0.0, EPS])
def test_reverse_kl_matches_numpy_and_has_gradients(epsilon):
  cell = ponder.pondernet(_inner('elman'), O, max_steps=M, epsilon=epsilon,
                          halting_bias=-0.5, param_dtype=jnp.float64)
  params = cell.init(jax.random.key(0), D)
  params['halting']['kernel'] = params['halting']['kernel'] * 3.0
  x = _data()[0][:, 0]

  def kl(params):
    _, out = cell.apply(params, cell.initial_state(B), x)
    return ponder.kl_to_geometric(out, LAMBDA_P, direction='reverse'), out

  value, out = kl(params)
  prior = LAMBDA_P * (1 - LAMBDA_P) ** np.arange(M)     # not renormalised
  steps = np.asarray(out.steps)
  if epsilon == 0.0:
    assert np.all(steps == M)            # the reproductions' full unroll
  else:
    assert steps.min() < M               # the epsilon stop truncates the sum
  want = [sum(q * np.log(q / pn) for q, pn in zip(prior[:n], row[:n]))
          for row, n in zip(np.asarray(out.probs), steps)]
  np.testing.assert_allclose(value, want, rtol=1e-12)
  # Gradients against central differences of the NumPy value, along one
  # direction of the halting params.
  g = jax.grad(lambda p: jnp.sum(kl(p)[0]))(params)
  v = jax.random.normal(jax.random.key(3), params['halting']['kernel'].shape,
                        jnp.float64)

  def along(t):
    q = {**params, 'halting': {**params['halting'], 'kernel':
                               params['halting']['kernel'] + t * v}}
    return float(jnp.sum(kl(q)[0]))

  numeric = (along(1e-6) - along(-1e-6)) / 2e-6
  np.testing.assert_allclose(float(jnp.sum(g['halting']['kernel'] * v)),
                             numeric, rtol=1e-6)
  # The two directions are different regularisers.
  paper = ponder.kl_to_geometric(out, LAMBDA_P)
  assert not np.allclose(paper, value)


def test_bad_arguments():
  elman = cells.elman(H)
  with pytest.raises(ValueError, match='output_size'):
    ponder.pondernet(elman, 0)
  with pytest.raises(ValueError, match='max_steps'):
    ponder.pondernet(elman, O, max_steps=0)
  for eps in (1.0, -0.1, '0.1'):
    with pytest.raises(ValueError, match=r'epsilon must be a number in'):
      ponder.pondernet(elman, O, epsilon=eps)
  with pytest.raises(ValueError, match='inference must be one of'):
    ponder.pondernet(elman, O, inference='greedy')
  with pytest.raises(ValueError, match="loop must be 'while' or 'scan'"):
    ponder.pondernet(elman, O, loop='fast')
  out = ponder.PonderOutput(output=None, outputs=jnp.zeros((2, 3, 1)),
                            probs=jnp.zeros((2, 3)),
                            steps=jnp.ones(2, jnp.int32))
  for lambda_p in (0.0, 1.5):
    with pytest.raises(ValueError, match=r'lambda_p must be in \(0, 1\)'):
      ponder.kl_to_geometric(out, lambda_p)
  with pytest.raises(ValueError, match='mask must have the shape'):
    ponder.kl_to_geometric(out, 0.2, jnp.ones((2, 1)))
  with pytest.raises(ValueError, match='direction must be one of'):
    ponder.kl_to_geometric(out, 0.2, direction='forward')
  with pytest.raises(ValueError, match='mask must have the shape'):
    ponder.reconstruction_loss(out, jnp.zeros((2, 1)), squared_error,
                               jnp.ones(3))


def test_wrong_input_size_is_named_in_ponderings_terms():
  cell = ponder.pondernet(cells.gru(8), 4)
  params = cell.init(jax.random.key(0), 3)
  with pytest.raises(ValueError, match=r'^pondernet\(gru\)\.apply: x must '
                     r'have shape \[batch, 3\].*got shape \(2, 4\)'):
    cell.apply(params, cell.initial_state(2), jnp.ones((2, 4)))
