"""Elman, GRU and LSTM against slow NumPy loops of the papers' equations."""

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import cells, linen
from vcrnn_jax.unroll import unroll

B, T, D, H = 3, 5, 4, 6


def _sigmoid(x):
  return 1.0 / (1.0 + np.exp(-x))


def np_elman(p, xs, activation=np.tanh, residual=False):
  """VCRNN Eq. 3 (with bias), one example at a time."""
  h = np.zeros((xs.shape[0], H))
  hs = []
  for t in range(xs.shape[1]):
    h = activation(xs[:, t] @ p['input_kernel'] + h @ p['recurrent_kernel']
                   + p['bias'] + (h if residual else 0.0))
    hs.append(h)
  return np.stack(hs, 1)


def np_gru(p, xs, gate=_sigmoid, activation=np.tanh):
  """VCRNN Eq. 4-6."""
  vr, vz, v = np.split(p['input_kernel'], 3, axis=1)
  ur, uz = np.split(p['recurrent_gates_kernel'], 2, axis=1)
  u = p['recurrent_kernel']
  br, bz, bh = np.split(p['bias'], 3)
  h = np.zeros((xs.shape[0], H))
  hs = []
  for t in range(xs.shape[1]):
    x = xs[:, t]
    r = gate(h @ ur + x @ vr + br)                          # (4)
    z = gate(h @ uz + x @ vz + bz)                          # (4)
    h_tilde = activation((r * h) @ u + x @ v + bh)          # (5)
    h = z * h_tilde + (1 - z) * h                            # (6)
    hs.append(h)
  return np.stack(hs, 1)


def np_lstm(p, xs, gate=_sigmoid, activation=np.tanh):
  """EI-REHN Eq. 3-5."""
  w = np.concatenate([p['recurrent_kernel'], p['input_kernel'],
                      p['bias'][None]], axis=0)            # W_L^T
  h = np.zeros((xs.shape[0], H))
  c = np.zeros((xs.shape[0], H))
  hs = []
  for t in range(xs.shape[1]):
    z = np.concatenate([h, xs[:, t], np.ones((xs.shape[0], 1))], 1) @ w
    a, i, f, o = np.split(z, 4, axis=1)
    a, i, f, o = activation(a), gate(i), gate(f), gate(o)             # (5)
    c = f * c + i * a                                                 # (4)
    h = o * activation(c)                                             # (3)
    hs.append(h)
  return np.stack(hs, 1)


CELLS = {
    'elman': (cells.elman, np_elman),
    'gru': (cells.gru, np_gru),
    'lstm': (cells.lstm, np_lstm),
}


def _params64(cell, seed=0):
  params = cell.init(jax.random.key(seed), D)
  assert params['bias'].dtype == jnp.float64
  # Perturb every bias so the bias terms are actually exercised.
  params['bias'] = params['bias'] + 0.1 * jax.random.normal(
      jax.random.key(seed + 1), params['bias'].shape, jnp.float64)
  return params


def _xs(seed=2, dtype=jnp.float64):
  return jax.random.normal(jax.random.key(seed), (B, T, D), dtype)


@pytest.mark.parametrize('name', sorted(CELLS))
def test_values_match_numpy(name):
  factory, ref = CELLS[name]
  cell = factory(H, param_dtype=jnp.float64)
  params = _params64(cell)
  xs = _xs()
  _, ys = unroll(cell, params, cell.initial_state(B), xs)
  np_params = jax.tree_util.tree_map(np.asarray, params)
  chex.assert_trees_all_close(ys, ref(np_params, np.asarray(xs)), atol=1e-12)


def _np_hard_sigmoid(x):
  return np.clip(x + 3.0, 0.0, 6.0) / 6.0


def _np_elu(x):
  return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))


@pytest.mark.parametrize('name', sorted(CELLS))
def test_gate_and_activation_functions_match_numpy(name):
  # Flax's arguments: gate_fn replaces the sigmoid, activation_fn the tanh
  # (every tanh of the equations); residual (Elman) adds h_{t-1}.
  factory, ref = CELLS[name]
  if name == 'elman':
    options = dict(activation_fn=jax.nn.elu, residual=True)
    np_options = dict(activation=_np_elu, residual=True)
  else:
    options = dict(gate_fn=jax.nn.hard_sigmoid, activation_fn=jax.nn.elu)
    np_options = dict(gate=_np_hard_sigmoid, activation=_np_elu)
  cell = factory(H, param_dtype=jnp.float64, **options)
  params = _params64(cell)
  xs = _xs()
  _, ys = unroll(cell, params, cell.initial_state(B), xs)
  np_params = jax.tree_util.tree_map(np.asarray, params)
  chex.assert_trees_all_close(
      ys, ref(np_params, np.asarray(xs), **np_options), atol=1e-12)


@pytest.mark.parametrize('name', sorted(CELLS))
def test_computation_dtype_is_the_dtype_of_the_step(name):
  # Float32 params computed in bfloat16 are the params rounded to bfloat16,
  # computed in bfloat16: the first step from zeros is exactly that cell's
  # (the LSTM's h mixes o with c in float32, so its c is compared).
  factory = CELLS[name][0]
  mixed = factory(H, dtype=jnp.bfloat16)
  params = mixed.init(jax.random.key(0), D)
  params['bias'] = params['bias'] + 0.5
  narrow = factory(H, param_dtype=jnp.bfloat16)
  x = _xs(dtype=jnp.float32)[:, 0]
  state, y = mixed.apply(params, mixed.initial_state(B), x)
  want_state, want = narrow.apply(
      jax.tree_util.tree_map(lambda a: a.astype(jnp.bfloat16), params),
      narrow.initial_state(B), x)
  assert all(a.dtype == jnp.float32 for a in jax.tree_util.tree_leaves(
      (mixed.initial_state(B), state, y)))
  if name == 'lstm':
    y, want = state.c, want_state.c
  np.testing.assert_array_equal(y, want.astype(jnp.float32))
  # The other way round: the state is in the computation's float32.
  wide = factory(H, dtype=jnp.float32, param_dtype=jnp.bfloat16)
  assert all(a.dtype == jnp.float32
             for a in jax.tree_util.tree_leaves(wide.initial_state(B)))


@pytest.mark.parametrize('name', sorted(CELLS))
def test_gradients_match_numpy_finite_differences(name):
  factory, ref = CELLS[name]
  cell = factory(H, param_dtype=jnp.float64)
  params = _params64(cell)
  xs = _xs()
  w = np.asarray(jax.random.normal(jax.random.key(9), (B, T, H)))

  def loss(p):
    _, ys = unroll(cell, p, cell.initial_state(B), xs)
    return jnp.sum(ys * w)

  grads = jax.grad(loss)(params)
  np_params = jax.tree_util.tree_map(np.asarray, params)
  np_xs = np.asarray(xs)
  rng = np.random.default_rng(0)
  eps = 1e-6
  for pname, g in grads.items():
    for _ in range(4):
      idx = tuple(rng.integers(0, s) for s in g.shape)
      plus = jax.tree_util.tree_map(np.copy, np_params)
      minus = jax.tree_util.tree_map(np.copy, np_params)
      plus[pname][idx] += eps
      minus[pname][idx] -= eps
      fd = (np.sum(ref(plus, np_xs) * w) - np.sum(ref(minus, np_xs) * w)) / (
          2 * eps)
      np.testing.assert_allclose(g[idx], fd, rtol=1e-6, atol=1e-8,
                                 err_msg=f'{name}.{pname}{idx}')


@pytest.mark.parametrize('name', sorted(CELLS))
def test_unroll_equals_python_loop_and_jit(name):
  cell = CELLS[name][0](H)
  params = cell.init(jax.random.key(0), D)
  xs = _xs(dtype=jnp.float32)
  state = cell.initial_state(B)
  ys_loop = []
  for t in range(T):
    state, y = cell.apply(params, state, xs[:, t])
    ys_loop.append(y)
  final, ys = unroll(cell, params, cell.initial_state(B), xs)
  np.testing.assert_allclose(ys, jnp.stack(ys_loop, 1), rtol=1e-6, atol=1e-6)
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6),
      final, state)
  jit_final, jit_ys = jax.jit(unroll, static_argnums=0)(
      cell, params, cell.initial_state(B), xs)
  np.testing.assert_allclose(jit_ys, ys, rtol=1e-6, atol=1e-6)
  assert ys.dtype == jnp.float32 and jit_ys.dtype == jnp.float32


@pytest.mark.parametrize('name', sorted(CELLS))
def test_unroll_lengths_freeze_state(name):
  cell = CELLS[name][0](H)
  params = cell.init(jax.random.key(0), D)
  xs = _xs(dtype=jnp.float32)
  lengths = jnp.array([T, 2, 1])
  final, ys = unroll(cell, params, cell.initial_state(B), xs, lengths)
  for b, n in enumerate(lengths.tolist()):
    s_b, ys_b = unroll(cell, params, cell.initial_state(1), xs[b:b + 1, :n])
    jax.tree_util.tree_map(
        lambda a, c, b=b: np.testing.assert_allclose(a[b], c[0], atol=1e-6),
        final, s_b)
    np.testing.assert_allclose(ys[b, :n], ys_b[0], atol=1e-6)
    np.testing.assert_array_equal(ys[b, n:], 0.0)


def test_vmap_over_extra_axis():
  cell = cells.gru(H)
  params = cell.init(jax.random.key(0), D)
  xs = jax.random.normal(jax.random.key(1), (2, B, D), jnp.float32)
  state = cell.initial_state(B)
  _, ys = jax.vmap(lambda x: cell.apply(params, state, x))(xs)
  for i in range(2):
    np.testing.assert_allclose(ys[i], cell.apply(params, state, xs[i])[1],
                               rtol=1e-6, atol=1e-6)


def test_params_tree_golden():
  shapes = {
      name: jax.tree_util.tree_map(
          jnp.shape, CELLS[name][0](H).init(jax.random.key(0), D))
      for name in CELLS
  }
  assert shapes == {
      'elman': {'input_kernel': (D, H), 'recurrent_kernel': (H, H),
                'bias': (H,)},
      'gru': {'input_kernel': (D, 3 * H), 'recurrent_gates_kernel': (H, 2 * H),
              'recurrent_kernel': (H, H), 'bias': (3 * H,)},
      'lstm': {'input_kernel': (D, 4 * H), 'recurrent_kernel': (H, 4 * H),
               'bias': (4 * H,)},
  }
  for name in CELLS:
    params = CELLS[name][0](H).init(jax.random.key(0), D)
    assert all(a.dtype == jnp.float32
               for a in jax.tree_util.tree_leaves(params))


def test_lstm_forget_bias_initialisation():
  params = cells.lstm(H, forget_bias=1.0).init(jax.random.key(0), D)
  np.testing.assert_array_equal(params['bias'][2 * H:3 * H], 1.0)
  np.testing.assert_array_equal(params['bias'][:2 * H], 0.0)
  np.testing.assert_array_equal(params['bias'][3 * H:], 0.0)


def test_lstm_equals_flax_lstm_cell():
  cell = cells.lstm(H, param_dtype=jnp.float64)
  params = _params64(cell)
  flax_cell = nn.LSTMCell(features=H, param_dtype=jnp.float64,
                          dtype=jnp.float64)
  xs = _xs()
  flax_params = linen.lstm_params_to_flax(params)
  # The converted tree has exactly flax's structure and shapes.
  ref = flax_cell.init(jax.random.key(0), flax_cell.initialize_carry(
      jax.random.key(0), (B, D)), xs[:, 0])['params']
  assert (jax.tree_util.tree_map(jnp.shape, flax_params)
          == jax.tree_util.tree_map(jnp.shape, ref))
  state = cell.initial_state(B)
  carry = linen.lstm_state_to_flax(state)
  for t in range(T):
    state, h = cell.apply(params, state, xs[:, t])
    carry, h_flax = flax_cell.apply({'params': flax_params}, carry, xs[:, t])
    np.testing.assert_allclose(h, h_flax, atol=1e-12)
    np.testing.assert_allclose(state.c, carry[0], atol=1e-12)
  back = linen.lstm_params_from_flax(flax_params)
  jax.tree_util.tree_map(np.testing.assert_array_equal, back, params)


@pytest.mark.parametrize('module,name', [(linen.Elman, 'elman'),
                                         (linen.GRU, 'gru'),
                                         (linen.LSTM, 'lstm')])
def test_flax_wrapper_inside_rnn_matches_pure(module, name):
  xs = _xs(dtype=jnp.float32)
  rnn = nn.RNN(module(features=H))
  variables = rnn.init(jax.random.key(0), xs)
  ys = rnn.apply(variables, xs)
  cell = CELLS[name][0](H)
  params = variables['params']['cell']['cell']
  assert (jax.tree_util.tree_map(jnp.shape, params)
          == jax.tree_util.tree_map(jnp.shape, cell.init(jax.random.key(0), D)))
  _, ys_pure = unroll(cell, params, cell.initial_state(B), xs)
  np.testing.assert_array_equal(ys, ys_pure)


def test_no_recompilation_on_second_call():
  cell = cells.lstm(H)
  chex.clear_trace_counter()  # one count per parametrized case

  @jax.jit
  @chex.assert_max_traces(n=1)
  def jf(params, xs):
    return unroll(cell, params, cell.initial_state(B), xs)[1]

  params = cell.init(jax.random.key(0), D)
  jf(params, _xs(dtype=jnp.float32)).block_until_ready()
  jf(params, _xs(seed=5, dtype=jnp.float32)).block_until_ready()


@pytest.mark.parametrize('factory', [cells.elman, cells.gru, cells.lstm])
def test_bad_arguments_raise_clear_errors(factory):
  with pytest.raises(ValueError,
                     match='hidden_size must be a positive integer'):
    factory(0)
  cell = factory(H)
  with pytest.raises(ValueError, match='input_size'):
    cell.init(jax.random.key(0), -1)
  with pytest.raises(ValueError, match='batch_size'):
    cell.initial_state(0)
  params = cell.init(jax.random.key(0), D)
  with pytest.raises(ValueError, match=r'x must have shape \[batch, 4\]'):
    cell.apply(params, cell.initial_state(B), jnp.ones((B, D + 1)))


def test_unroll_rejects_bad_shapes():
  cell = cells.elman(H)
  params = cell.init(jax.random.key(0), D)
  with pytest.raises(ValueError, match='xs must have shape'):
    unroll(cell, params, cell.initial_state(B), jnp.ones((B, D)))
  with pytest.raises(ValueError, match='lengths must have shape'):
    unroll(cell, params, cell.initial_state(B), jnp.ones((B, T, D)),
           jnp.ones((B + 1,), jnp.int32))
