"""ACT (Graves 2016) against a slow NumPy loop of Eq. 3-13 and Eq. 19-20."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import act, cells, loops
from vcrnn_jax.core import Cell, Context, ignore_context
from vcrnn_jax.unroll import unroll

B, D, H, O = 5, 4, 6, 3
EPS = 0.01


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


def np_act_step(step, p, s_prev, x, max_steps):
  """One input step of ACT for ONE example, Eq. 3-13, as written."""
  states, outputs, halts = [], [], []
  s = s_prev
  for n in range(1, max_steps + 1):
    x_n = np.concatenate([x, [1.0 if n == 1 else 0.0]])              # (3)
    s, y_in = step(p['cell'], s, x_n)
    states.append(s)
    outputs.append(y_in @ p['output']['kernel'] + p['output']['bias'])  # (4)
    halts.append(_sigmoid(y_in @ p['halting']['kernel']
                          + p['halting']['bias'])[0])                # (5)
    if sum(halts) >= 1 - EPS:                                        # (7)
      break
  big_n = len(halts)                                                 # (13)
  remainder = 1 - sum(halts[:-1])                                    # (8)
  probs = halts[:-1] + [remainder]                                   # (6)
  s_t = tuple(sum(pn * sn[i] for pn, sn in zip(probs, states))
              for i in range(len(s_prev)))                           # (9)
  y_t = sum(pn * yn for pn, yn in zip(probs, outputs))               # (9)
  return dict(state=s_t, output=y_t, steps=big_n, remainder=remainder,
              ponder=big_n + remainder, probs=probs, halts=halts,
              states=states, outputs=outputs)


def _np(tree):
  return jax.tree_util.tree_map(np.asarray, tree)


def _setup(inner, max_steps=100, halting_bias=1.0, seed=0, loop='while',
           checkpoints=16):
  cell = act.adaptive(inner, O, max_steps=max_steps, epsilon=EPS,
                      halting_bias=halting_bias,
                      loop=loops.LoopConfig(loop, checkpoints=checkpoints),
                      param_dtype=jnp.float64)
  params = cell.init(jax.random.key(seed), D)
  # Spread the halting unit so rows take visibly different numbers of steps.
  params['halting']['kernel'] = params['halting']['kernel'] * 3.0
  x = jax.random.normal(jax.random.key(seed + 1), (B, D), jnp.float64)
  return cell, params, x


def _state_tuple(state, b):
  return tuple(np.asarray(leaf[b]) for leaf in state)


@pytest.mark.parametrize('inner_name', ['elman', 'lstm'])
@pytest.mark.parametrize('halting_bias', [-2.0, 1.0])
def test_matches_numpy_reference(inner_name, halting_bias):
  inner = {'elman': cells.elman, 'lstm': cells.lstm}[inner_name](
      H, param_dtype=jnp.float64)
  step = {'elman': np_elman_step, 'lstm': np_lstm_step}[inner_name]
  cell, params, x = _setup(inner, max_steps=12, halting_bias=halting_bias)
  state0 = jax.tree_util.tree_map(
      lambda a: 0.3 * jax.random.normal(jax.random.key(7), a.shape, a.dtype),
      cell.initial_state(B))
  state, out = jax.jit(cell.apply)(params, state0, x)
  p = _np(params)
  for b in range(B):
    ref = np_act_step(step, p, _state_tuple(state0, b), np.asarray(x[b]), 12)
    np.testing.assert_allclose(out.output[b], ref['output'], atol=1e-12)
    assert int(out.steps[b]) == ref['steps']
    np.testing.assert_allclose(out.remainder[b], ref['remainder'], atol=1e-12)
    np.testing.assert_allclose(out.ponder[b], ref['ponder'], atol=1e-12)
    # Every state leaf, h AND c (Eq. 9).
    chex.assert_trees_all_close(tuple(_state_tuple(state, b)),
                                tuple(ref['state']), atol=1e-12)
  assert len(set(np.asarray(out.steps).tolist())) > 1 or halting_bias > 0


def test_halting_gradients_are_eq_19_and_20():
  """dL/db_h and dL/dW_h equal sum_n (Eq. 19/20) * sigma'(.) * features."""
  tau = 0.05
  cell, params, x = _setup(cells.elman(H, param_dtype=jnp.float64),
                           max_steps=30, halting_bias=-1.0)
  state0 = cell.initial_state(B)
  a = jax.random.normal(jax.random.key(3), (B, O), jnp.float64)   # dL/dy_t
  c = jax.random.normal(jax.random.key(4), (B, H), jnp.float64)   # dL/ds_t

  def loss(params):
    state, out = cell.apply(params, state0, x)
    return (jnp.sum(a * out.output) + jnp.sum(c * state.h)
            + tau * jnp.sum(act.ponder_cost(out)))                # (12)

  grads = jax.grad(loss)(params)
  p = _np(params)
  want_b = np.zeros(1)
  want_w = np.zeros((H, 1))
  n_multi = 0
  for b in range(B):
    ref = np_act_step(np_elman_step, p, (np.zeros(H),), np.asarray(x[b]), 30)
    big_n = ref['steps']
    n_multi += big_n > 1
    y_last, s_last = ref['outputs'][-1], ref['states'][-1][0]
    for n in range(big_n):
      if n < big_n - 1:                                               # (19)
        dh = (np.asarray(a[b]) @ (ref['outputs'][n] - y_last)
              + np.asarray(c[b]) @ (ref['states'][n][0] - s_last) - tau)
      else:                                                           # (20)
        dh = 0.0
      hn = ref['halts'][n]
      want_b += dh * hn * (1 - hn)
      want_w[:, 0] += dh * hn * (1 - hn) * ref['states'][n][0]
  assert n_multi >= 2  # The check is only meaningful when rows ponder.
  np.testing.assert_allclose(grads['halting']['bias'], want_b, rtol=1e-9,
                             atol=1e-12)
  np.testing.assert_allclose(grads['halting']['kernel'], want_w, rtol=1e-9,
                             atol=1e-12)


@pytest.mark.parametrize('halting_bias', [-3.0, 0.0, 1.0, 3.0])
def test_invariants(halting_bias):
  cell, params, x = _setup(cells.elman(H, param_dtype=jnp.float64),
                           max_steps=20, halting_bias=halting_bias)
  # With W_y = 0 and b_y = 1, y_t = sum_n p_t^n: the weights sum to one.
  params['output']['kernel'] = jnp.zeros_like(params['output']['kernel'])
  params['output']['bias'] = jnp.ones_like(params['output']['bias'])
  _, out = cell.apply(params, cell.initial_state(B), x)
  np.testing.assert_allclose(out.output, 1.0, atol=1e-12)
  assert out.steps.dtype == jnp.int32
  assert jnp.all((out.steps >= 1) & (out.steps <= 20))
  assert jnp.all((out.remainder > 0) & (out.remainder <= 1))
  # rho = N + R (Eq. 11); the int32 step count is cast for the sum.
  np.testing.assert_allclose(
      out.ponder, out.steps.astype(out.remainder.dtype) + out.remainder)


def test_halts_after_one_step_when_first_halt_exceeds_threshold():
  cell, params, x = _setup(cells.elman(H, param_dtype=jnp.float64),
                           halting_bias=20.0)   # h_t^1 ~ 1 >= 1 - eps
  _, out = cell.apply(params, cell.initial_state(B), x)
  np.testing.assert_array_equal(out.steps, 1)
  np.testing.assert_array_equal(out.remainder, 1.0)
  np.testing.assert_array_equal(out.ponder, 2.0)


def test_hard_limit_m():
  cell, params, x = _setup(cells.elman(H, param_dtype=jnp.float64),
                           max_steps=7,
                           halting_bias=-20.0)  # h ~ 0: never halts
  _, out = cell.apply(params, cell.initial_state(B), x)
  np.testing.assert_array_equal(out.steps, 7)
  assert jnp.all(out.remainder > 0.99)


@pytest.mark.parametrize('checkpoints', [16, 2])
def test_while_loop_equals_masked_scan_values_and_gradients(checkpoints):
  inner = cells.lstm(H, param_dtype=jnp.float64)
  kw = dict(max_steps=15, halting_bias=-0.5, checkpoints=checkpoints)
  cell_w, params, _ = _setup(inner, loop='while', **kw)
  cell_s, _, _ = _setup(inner, loop='scan', **kw)
  xs = jax.random.normal(jax.random.key(5), (B, 3, D), jnp.float64)
  lengths = jnp.array([3, 1, 2, 3, 2])

  def loss(cell, params, xs):
    state, out = unroll(cell, params, cell.initial_state(B), xs, lengths)
    return (jnp.sum(jnp.sin(out.output)) + jnp.sum(state.c ** 2)
            + 0.01 * jnp.sum(act.ponder_cost(out))), out

  (lw, ow), gw = jax.value_and_grad(loss, argnums=(1, 2), has_aux=True)(
      cell_w, params, xs)
  (ls, os_), gs = jax.value_and_grad(loss, argnums=(1, 2), has_aux=True)(
      cell_s, params, xs)
  np.testing.assert_allclose(lw, ls, rtol=1e-12)
  np.testing.assert_array_equal(ow.steps, os_.steps)
  assert int(ow.steps.max()) > checkpoints or checkpoints == 16
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12),
      gw, gs)


@pytest.mark.parametrize('loop', ['while', 'scan'])
def test_inactive_rows_take_one_step_and_change_nothing_else(loop):
  # The padding mask that unroll passes: inactive rows must not ponder, and
  # the active rows' values and gradients must not notice them.
  cell, params, x = _setup(cells.elman(H, param_dtype=jnp.float64),
                           max_steps=30, halting_bias=-3.0, loop=loop)
  active = jnp.array([True, False, True, False, True])
  keep = np.asarray(active)

  def loss(params, active):
    _, out = cell.apply(params, cell.initial_state(B), x,
                        Context(active=active))
    w = jnp.asarray(keep, jnp.float64)
    return (jnp.sum(w[:, None] * jnp.sin(out.output))
            + 0.01 * jnp.sum(w * out.ponder)), out

  (l_all, full), g_all = jax.value_and_grad(loss, has_aux=True)(params, None)
  (l_some, part), g_some = jax.value_and_grad(loss, has_aux=True)(params,
                                                                  active)
  assert np.all(np.asarray(full.steps) > 1)       # Every row would ponder.
  np.testing.assert_array_equal(np.asarray(part.steps)[~keep], 1)
  np.testing.assert_array_equal(part.steps[keep], full.steps[keep])
  np.testing.assert_allclose(part.output[keep], full.output[keep], rtol=1e-12)
  np.testing.assert_allclose(l_some, l_all, rtol=1e-12)
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12),
      g_some, g_all)


def test_unroll_passes_the_padding_mask_in_the_context():
  seen = []

  def apply(params, state, x, context=None):
    seen.append(context)
    return state, x

  cell = Cell(lambda key, n: {}, lambda b: jnp.zeros((b, 1)), apply)
  xs = jnp.ones((2, 3, 1))
  unroll(cell, {}, cell.initial_state(2), xs, jnp.array([3, 1]))
  assert seen and all(c.active is not None for c in seen)
  seen.clear()
  unroll(cell, {}, cell.initial_state(2), xs)      # No lengths: no mask.
  assert seen and all(c.active is None for c in seen)


def _tail_loss(params, cell, *, xs, lengths):
  """A loss that reads every output, the LSTM state and the ponder cost."""
  state, out = unroll(cell, params, cell.initial_state(xs.shape[0]), xs,
                      lengths)
  return (jnp.sum(jnp.sin(out.output)) + jnp.sum(state.c ** 2)
          + 0.01 * jnp.sum(act.ponder_cost(out))), out


def test_compacted_tail_equals_the_full_batch_loop():
  # 24 rows halting at widely different steps, with padding: the loop runs
  # on 24 rows, then 12, 6, 3 and 2 rows, the smaller stages with more
  # backward slots.
  compact_rows = 2
  assert loops.stage_sizes((24,), compact_rows) == (24, 12, 6, 3, 2)
  batch = 24
  inner = cells.lstm(H, param_dtype=jnp.float64)
  make = lambda rows: act.adaptive(inner, O, max_steps=40, epsilon=EPS,
                                   halting_bias=-1.0,
                                   loop=loops.LoopConfig(compact_rows=rows),
                                   param_dtype=jnp.float64)
  compact, full = make(compact_rows), make(None)
  params = compact.init(jax.random.key(3), D)
  params['halting']['kernel'] = params['halting']['kernel'] * 4.0
  xs = jax.random.normal(jax.random.key(4), (batch, 3, D), jnp.float64)
  lengths = jax.random.randint(jax.random.key(5), (batch,), 1, 4)

  loss = functools.partial(_tail_loss, xs=xs, lengths=lengths)

  # Under jit, as training runs it.
  (lc, oc), gc = jax.jit(jax.value_and_grad(
      lambda p: loss(p, compact), has_aux=True))(params)
  (lf, of), gf = jax.value_and_grad(loss, has_aux=True)(params, full)
  steps = np.asarray(of.steps)
  assert steps.max() > 10 and np.median(steps[steps > 0]) < steps.max() / 2
  np.testing.assert_array_equal(oc.steps, of.steps)
  np.testing.assert_allclose(oc.output, of.output, rtol=1e-12, atol=1e-14)
  np.testing.assert_allclose(lc, lf, rtol=1e-12)
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12),
      gc, gf)


@pytest.mark.parametrize('k,compact_rows,checkpoints', [
    (3, None, 2), (3, 2, 4)])
def test_an_unrolled_loop_equals_the_loop_that_tests_every_step(
    k, compact_rows, checkpoints):
  # One continue test per k steps: the steps after every row has
  # halted change nothing, so values, step counts and gradients are the
  # plain loop's. 2 slots at k = 3 take the thinned-slot path; with
  # compaction a stage starts up to k - 1 steps late. (tests/test_loops.py
  # has k = 2 and 5, and k past max_steps.)
  batch = 12
  inner = cells.lstm(H, param_dtype=jnp.float64)
  make = lambda k: act.adaptive(
      inner, O, max_steps=23, epsilon=EPS, halting_bias=-1.0,
      loop=loops.LoopConfig(checkpoints=checkpoints, unroll=k,
                            compact_rows=compact_rows),
      param_dtype=jnp.float64)
  unrolled, plain = make(k), make(1)
  params = plain.init(jax.random.key(8), D)
  params['halting']['kernel'] = params['halting']['kernel'] * 4.0
  xs = jax.random.normal(jax.random.key(9), (batch, 3, D), jnp.float64)
  lengths = jax.random.randint(jax.random.key(10), (batch,), 1, 4)

  loss = functools.partial(_tail_loss, xs=xs, lengths=lengths)

  grad = lambda cell: jax.jit(jax.value_and_grad(
      lambda p: loss(p, cell), has_aux=True))(params)
  (lu, ou), gu = grad(unrolled)
  (lp, op), gp = grad(plain)
  steps = np.asarray(op.steps)
  # Rows stop at steps that are not multiples of k; with 2 slots of 3
  # steps each, the deepest rows run past them (thinned slots).
  assert np.any(steps[steps > 0] % k)
  assert steps.max() > checkpoints * k or checkpoints != 2
  np.testing.assert_array_equal(ou.steps, op.steps)
  np.testing.assert_allclose(ou.output, op.output, rtol=1e-12, atol=1e-14)
  np.testing.assert_allclose(lu, lp, rtol=1e-12)
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12),
      gu, gp)


@pytest.mark.parametrize('checkpoints', [3, 8])
def test_saved_residuals_give_the_same_values_and_gradients(checkpoints):
  # save_residuals only changes how the backward pass gets each step's
  # linearisation. With 3 slots the long-pondering rows also take the
  # thinned-slot path (steps recomputed from a slot); with 8 most fit.
  batch = 6
  inner = cells.lstm(H, param_dtype=jnp.float64)
  make = lambda save: act.adaptive(inner, O, max_steps=20, epsilon=EPS,
                                   halting_bias=-1.0,
                                   loop=loops.LoopConfig(
                                       checkpoints=checkpoints,
                                       save_residuals=save),
                                   param_dtype=jnp.float64)
  saved, plain = make(True), make(False)
  params = plain.init(jax.random.key(6), D)
  params['halting']['kernel'] = params['halting']['kernel'] * 4.0
  xs = jax.random.normal(jax.random.key(7), (batch, 3, D), jnp.float64)
  lengths = jnp.array([3, 1, 2, 3, 3, 2])

  loss = functools.partial(_tail_loss, xs=xs, lengths=lengths)

  grad = lambda cell: jax.jit(jax.value_and_grad(
      lambda p: loss(p, cell), has_aux=True))(params)
  (ls, os_), gs = grad(saved)
  (lp, op), gp = grad(plain)
  assert int(np.max(op.steps)) > 3    # Some rows outgrow 3 slots.
  np.testing.assert_array_equal(os_.steps, op.steps)
  np.testing.assert_allclose(ls, lp, rtol=1e-12)
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12),
      gs, gp)


def test_jit_vmap_and_float32():
  inner = cells.gru(H)
  cell = act.adaptive(inner, O, max_steps=10)
  params = cell.init(jax.random.key(0), D)
  xs = jax.random.normal(jax.random.key(1), (2, B, D), jnp.float32)
  state = cell.initial_state(B)
  _, outs = jax.jit(jax.vmap(lambda x: cell.apply(params, state, x)))(xs)
  for i in range(2):
    _, out = cell.apply(params, state, xs[i])
    np.testing.assert_allclose(outs.output[i], out.output, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(outs.steps[i], out.steps)
  assert outs.output.dtype == jnp.float32


def test_params_tree_golden():
  cell = act.adaptive(cells.lstm(H), O)
  shapes = jax.tree_util.tree_map(jnp.shape, cell.init(jax.random.key(0), D))
  assert shapes == {
      'cell': {'input_kernel': (D + 1, 4 * H), 'recurrent_kernel': (H, 4 * H),
               'bias': (4 * H,)},
      'output': {'kernel': (H, O), 'bias': (O,)},
      'halting': {'kernel': (H, 1), 'bias': (1,)},
  }
  params = cell.init(jax.random.key(0), D)
  np.testing.assert_array_equal(params['halting']['bias'], 1.0)


def test_halt_features_option_reads_all_of_the_state():
  cell = act.adaptive(
      cells.lstm(H), O,
      halt_features=lambda s, y: jnp.concatenate([s.h, s.c], -1))
  params = cell.init(jax.random.key(0), D)
  assert params['halting']['kernel'].shape == (2 * H, 1)
  _, out = cell.apply(params, cell.initial_state(B),
                       jnp.ones((B, D), jnp.float32))
  assert out.output.shape == (B, O)


def test_ponder_cost_masks_padding():
  out = act.ACTOutput(output=None, ponder=jnp.array([[1.5, 2.0], [1.2, 3.0]]),
                      steps=None, remainder=None)
  np.testing.assert_allclose(act.ponder_cost(out), [3.5, 4.2])
  np.testing.assert_allclose(
      act.ponder_cost(out, jnp.array([[1.0, 1.0], [1.0, 0.0]])), [3.5, 1.2])


def test_bad_arguments():
  with pytest.raises(ValueError, match='max_steps'):
    act.adaptive(cells.elman(H), O, max_steps=0)
  with pytest.raises(ValueError, match='epsilon'):
    act.adaptive(cells.elman(H), O, epsilon=1.5)
  with pytest.raises(ValueError, match="loop must be 'while' or 'scan'"):
    act.adaptive(cells.elman(H), O, loop='fast')
  with pytest.raises(ValueError, match='output_size'):
    act.adaptive(cells.elman(H), 0)


def test_wrong_input_size_is_named_in_acts_terms():
  cell = act.adaptive(cells.gru(8), 4)
  params = cell.init(jax.random.key(0), 3)
  want = (r'act.adaptive(gru).apply: x must have shape [batch, 3] '
          r'(input_size from the params), got shape (2, 5, 4): one feature '
          r'more than the params read; if x carries the first-step flag, give '
          r'it without: act.adaptive(gru) appends the flag itself.')
  with pytest.raises(ValueError) as info:
    cell.apply(params, cell.initial_state(2), jnp.ones((2, 5, 4)))
  assert str(info.value) == want
  with pytest.raises(ValueError, match=r'\[batch, 3\].*got shape \(2, 4\)'):
    cell.apply(params, cell.initial_state(2), jnp.ones((2, 4)))
  # ACT around ACT: each wrapper restates it for its own input.
  twice = act.adaptive(act.adaptive(cells.lstm(8), 2), 1)
  params = twice.init(jax.random.key(0), 3)
  with pytest.raises(ValueError, match=r'^act.adaptive\(act.adaptive\(lstm\)'
                     r'\).apply: x must have shape \[batch, 3\]'):
    twice.apply(params, twice.initial_state(2), jnp.ones((2, 5)))


def test_an_init_that_counts_the_flag_is_named_when_applied():
  # init takes the width of x; ACT adds the flag's weights itself.
  cell = act.adaptive(cells.elman(8), 1)
  assert cell.init(jax.random.key(0), 64)['cell']['input_kernel'].shape == (
      65, 8)
  counted = cell.init(jax.random.key(0), 65)
  with pytest.raises(ValueError, match=(
      r'x must have shape \[batch, 65\] .* got shape \(2, 64\): .* if init '
      r'was given input_size=65 counting the first-step flag, give it the '
      r'width of x, input_size=64')):
    cell.apply(counted, cell.initial_state(2), jnp.zeros((2, 64)))


@pytest.mark.parametrize('inner', ['elman', 'lstm'])
def test_no_readout_outputs_the_mean_field_of_the_cells_output(inner):
  factory = {'elman': cells.elman, 'lstm': cells.lstm}[inner]
  bare = act.adaptive(factory(H, param_dtype=jnp.float64), None, max_steps=6,
                      halting_bias=-1.0)
  params = bare.init(jax.random.key(0), D)
  assert set(params) == {'cell', 'halting'}   # no W_y, b_y
  x = jax.random.normal(jax.random.key(3), (B, D), jnp.float64)
  state, out = bare.apply(params, bare.initial_state(B), x)
  assert out.output.shape == (B, H)
  # The mean-field h (Eq. 9): the readout with W_y = I, b_y = 0.
  chex.assert_trees_all_close(out.output, state.h, atol=1e-12)
  full = act.adaptive(factory(H, param_dtype=jnp.float64), H, max_steps=6,
                      halting_bias=-1.0)
  eye = dict(params, output={'kernel': jnp.eye(H), 'bias': jnp.zeros(H)})
  _, want = full.apply(eye, full.initial_state(B), x)
  chex.assert_trees_all_close(out, want, atol=1e-12)


def test_gradient_wrt_every_halting_activation_is_eq_19_and_20():
  """Each h_t^n separately: the halting unit also reads a one-hot of n, so
  row H + n - 1 of W_h receives exactly dL/dh^n * h^n (1 - h^n) (batch 1)."""
  tau, m = 0.05, 30
  inner = cells.elman(H, param_dtype=jnp.float64)

  def init(key, input_size):
    return inner.init(key, input_size)

  def initial_state(batch_size):
    return (inner.initial_state(batch_size),
            jnp.zeros((batch_size, 1), jnp.float64))

  def apply(params, state, x):
    s, count = state
    s, y = inner.apply(params, s, x)
    return (s, count + 1.0), y

  # A hand-written three-argument cell joins the protocol by adaptation.
  counting = ignore_context(Cell(init, initial_state, apply))
  feats = lambda state, y: jnp.concatenate(
      [y, jax.nn.one_hot((state[1][:, 0] - 1).astype(jnp.int32), m,
                         dtype=y.dtype)], -1)
  cell = act.adaptive(counting, O, max_steps=m, epsilon=EPS,
                      halting_bias=-1.0, halt_features=feats,
                      param_dtype=jnp.float64)
  params = cell.init(jax.random.key(0), D)
  params['halting']['kernel'] = 3.0 * params['halting']['kernel']
  p = _np(params)
  checked = 0
  for b in range(4):
    x = jax.random.normal(jax.random.key(10 + b), (1, D), jnp.float64)
    a = jax.random.normal(jax.random.key(20 + b), (1, O), jnp.float64)
    c = jax.random.normal(jax.random.key(30 + b), (1, H), jnp.float64)

    def loss(params, x=x, a=a, c=c):
      state, out = cell.apply(params, cell.initial_state(1), x)
      return (jnp.sum(a * out.output) + jnp.sum(c * state[0].h)
              + tau * jnp.sum(act.ponder_cost(out)))

    g_rows = np.asarray(jax.grad(loss)(params)['halting']['kernel'][H:, 0])
    # NumPy forward of Eq. 3-13 with the same halting features.
    s, halts, states, outputs = np.zeros(H), [], [], []
    for n in range(1, m + 1):
      xn = np.concatenate([np.asarray(x[0]), [1.0 if n == 1 else 0.0]])
      (s,), y_in = np_elman_step(p['cell'], (s,), xn)
      states.append(s)
      outputs.append(y_in @ p['output']['kernel'] + p['output']['bias'])
      pre = (y_in @ p['halting']['kernel'][:H, 0]
             + p['halting']['kernel'][H + n - 1, 0] + p['halting']['bias'][0])
      halts.append(_sigmoid(pre))
      if sum(halts) >= 1 - EPS:
        break
    big_n = len(halts)
    for n in range(m):
      if n >= big_n:
        want = 0.0                      # never computed: no gradient
      elif n < big_n - 1:               # Eq. 19
        want = (np.asarray(a[0]) @ (outputs[n] - outputs[-1])
                + np.asarray(c[0]) @ (states[n] - states[-1]) - tau)
        want *= halts[n] * (1 - halts[n])
      else:                             # Eq. 20
        want = 0.0
      np.testing.assert_allclose(g_rows[n], want, rtol=1e-9, atol=1e-12,
                                 err_msg=f'example {b}, n={n + 1}')
    checked += big_n - 1
  assert checked >= 4   # enough n < N(t) activations were exercised


def test_a_nan_row_halts_at_once_with_a_finite_ponder():
  # Documented in act.adaptive: NaN shows in the output, not the ponder.
  cell = act.adaptive(cells.elman(8), output_size=1, max_steps=10)
  params = cell.init(jax.random.key(0), input_size=3)
  x = jnp.ones((2, 3)).at[0, 0].set(jnp.nan)
  _, out = cell.apply(params, cell.initial_state(2), x)
  assert np.isnan(out.output[0, 0]) and np.isfinite(out.output[1, 0])
  assert float(out.ponder[0]) == 2.0 and int(out.steps[0]) == 1
