"""Repeat-RNN against a slow NumPy loop of the Repeat-RNN equation (R1)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import act, cells, repeat, vc
from vcrnn_jax.core import Cell, Context
from vcrnn_jax.unroll import unroll

B, T, D, H = 3, 4, 2, 5
RHO = 3


def _sigmoid(x):
  return 1.0 / (1.0 + np.exp(-x))


def np_elman_step(p, s, x):
  h = np.tanh(x @ p['input_kernel'] + s[0] @ p['recurrent_kernel'] + p['bias'])
  return (h,), h


def np_lstm_step(p, s, x):
  c, h = s  # LSTMState(c, h)
  a, i, f, o = np.split(x @ p['input_kernel'] + h @ p['recurrent_kernel']
                        + p['bias'], 4, axis=-1)
  c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(a)
  h = _sigmoid(o) * np.tanh(c)
  return (c, h), h


STEPS = {'elman': (cells.elman, np_elman_step, 1),
         'lstm': (cells.lstm, np_lstm_step, 2)}


def np_repeat(step, n_leaves, p, xs, lengths, rho):
  """R1, one input step at a time; padded steps keep the state, output 0."""
  state = tuple(np.zeros((xs.shape[0], H)) for _ in range(n_leaves))
  ys = []
  for t in range(xs.shape[1]):
    s = state
    for n in range(rho):
      flag = np.full((xs.shape[0], 1), 1.0 if n == 0 else 0.0)       # (R1)
      s, y = step(p['cell'], s, np.concatenate([xs[:, t], flag], -1))
    valid = (t < lengths)[:, None]
    state = tuple(np.where(valid, a, b) for a, b in zip(s, state))
    ys.append(np.where(valid, y, 0.0))
  return state, np.stack(ys, 1)


def _np(tree):
  return jax.tree_util.tree_map(np.asarray, tree)


def _setup(name, rho=RHO):
  factory, step, n_leaves = STEPS[name]
  cell = repeat.repeat(factory(H, param_dtype=jnp.float64), rho)
  params = cell.init(jax.random.key(0), D)
  # Perturb the biases so every term is used.
  params['cell']['bias'] = params['cell']['bias'] + 0.1 * jax.random.normal(
      jax.random.key(1), params['cell']['bias'].shape, jnp.float64)
  xs = jax.random.normal(jax.random.key(2), (B, T, D), jnp.float64)
  return cell, params, xs, step, n_leaves


@pytest.mark.parametrize('name', sorted(STEPS))
def test_values_and_gradients_match_numpy(name):
  cell, params, xs, step, n_leaves = _setup(name)
  lengths = jnp.array([T, 2, 1])
  w = np.asarray(jax.random.normal(jax.random.key(9), (B, T, H)))

  def run(p):
    return unroll(cell, p, cell.initial_state(B), xs, lengths)

  def loss(p):
    final, ys = run(p)
    return jnp.sum(ys * w) + jnp.sum(final.h)

  (final, ys), grads = jax.jit(lambda p: (run(p), jax.grad(loss)(p)))(params)
  np_xs, np_lengths = np.asarray(xs), np.asarray(lengths)

  def np_loss(p):
    state, ys = np_repeat(step, n_leaves, p, np_xs, np_lengths, RHO)
    return np.sum(ys * w) + np.sum(state[-1])

  want_state, want_ys = np_repeat(step, n_leaves, _np(params), np_xs,
                                  np_lengths, RHO)
  np.testing.assert_allclose(ys, want_ys, atol=1e-12)
  chex.assert_trees_all_close(tuple(final), want_state, atol=1e-12)
  # Gradients against central differences of the NumPy loop (float64).
  rng = np.random.default_rng(0)
  eps = 1e-6
  for pname, g in grads['cell'].items():
    for _ in range(3):
      idx = tuple(int(rng.integers(0, s)) for s in g.shape)
      values = []
      for sign in (1, -1):
        p = jax.tree_util.tree_map(np.copy, _np(params))
        p['cell'][pname][idx] += sign * eps
        values.append(np_loss(p))
      fd = (values[0] - values[1]) / (2 * eps)
      np.testing.assert_allclose(g[idx], fd, rtol=1e-6, atol=1e-8,
                                 err_msg=f'{name}.{pname}{idx}')


def test_one_repetition_is_the_cell_fed_the_flag():
  inner = cells.lstm(H)
  cell = repeat.repeat(inner, 1)
  params = cell.init(jax.random.key(0), D)
  x = jax.random.normal(jax.random.key(1), (B, D), jnp.float32)
  state = inner.initial_state(B)
  got_state, got = cell.apply(params, state, x)
  flagged = jnp.concatenate([x, jnp.ones((B, 1), x.dtype)], -1)
  want_state, want = inner.apply(params['cell'], state, flagged)
  np.testing.assert_array_equal(got, want)
  chex.assert_trees_all_equal(got_state, want_state)


def test_repetitions_carry_the_state_with_the_flag_on_the_first_only():
  inner = cells.gru(H)
  cell = repeat.repeat(inner, 4)
  params = cell.init(jax.random.key(0), D)
  x = jax.random.normal(jax.random.key(1), (B, D), jnp.float32)
  state = jax.tree_util.tree_map(
      lambda a: jax.random.normal(jax.random.key(3), a.shape, a.dtype),
      inner.initial_state(B))
  got_state, got = cell.apply(params, state, x)
  s = state
  for n in range(4):
    flag = jnp.full((B, 1), 1.0 if n == 0 else 0.0, x.dtype)
    s, y = inner.apply(params['cell'], s, jnp.concatenate([x, flag], -1))
  np.testing.assert_allclose(got, y, rtol=1e-6, atol=1e-6)
  chex.assert_trees_all_close(got_state, s, rtol=1e-6, atol=1e-6)


def test_inactive_rows_keep_their_state_and_output_zeros():
  cell = repeat.repeat(cells.lstm(H), RHO)
  params = cell.init(jax.random.key(0), D)
  x = jax.random.normal(jax.random.key(1), (B, D), jnp.float32)
  state = jax.tree_util.tree_map(
      lambda a: jax.random.normal(jax.random.key(3), a.shape, a.dtype),
      cell.initial_state(B))
  active = jnp.array([True, False, True])
  new, y = cell.apply(params, state, x, Context(active=active))
  full_state, full_y = cell.apply(params, state, x)
  for leaf, old, full in zip(new, state, full_state):
    np.testing.assert_array_equal(leaf[1], old[1])       # kept bit-exactly
    np.testing.assert_array_equal(leaf[::2], full[::2])
  np.testing.assert_array_equal(y[1], 0.0)
  np.testing.assert_array_equal(y[::2], full_y[::2])


def test_wraps_a_vc_cell_and_passes_its_structured_output():
  cell = repeat.repeat(vc.vcrnn(H), RHO)
  params = cell.init(jax.random.key(0), D)
  # The flag makes the input size D + 1 != H: the VC cell projects it.
  assert params['cell']['input_projection'].shape == (D + 1, H)
  xs = jax.random.normal(jax.random.key(1), (B, T, D), jnp.float32)
  _, ys = jax.jit(lambda p: unroll(cell, p, cell.initial_state(B), xs,
                                   jnp.array([T, 3, 1])))(params)
  assert isinstance(ys, vc.VCOutput)
  assert ys.output.shape == (B, T, H) and ys.m.shape == (B, T)
  assert ys.dims.dtype == jnp.int32
  assert np.all(np.isfinite(ys.output)) and np.all(ys.m[2, 1:] == 0.0)


def test_wraps_and_is_wrapped_by_act():
  inner = repeat.repeat(act.adaptive(cells.elman(H), None, max_steps=3), 2)
  outer = act.adaptive(repeat.repeat(cells.elman(H), 2), 2, max_steps=3)
  xs = jax.random.normal(jax.random.key(1), (B, T, D), jnp.float32)
  for cell in (inner, outer):
    params = cell.init(jax.random.key(0), D)
    grads = jax.jit(jax.grad(lambda p, cell=cell: jnp.sum(
        unroll(cell, p, cell.initial_state(B), xs)[1].output)))(params)
    assert all(np.all(np.isfinite(g))
               for g in jax.tree_util.tree_leaves(grads))


def test_params_tree_golden():
  cell = repeat.repeat(cells.lstm(H), RHO)
  shapes = jax.tree_util.tree_map(jnp.shape, cell.init(jax.random.key(0), D))
  assert shapes == {
      'cell': {'input_kernel': (D + 1, 4 * H), 'recurrent_kernel': (H, 4 * H),
               'bias': (4 * H,)},
  }
  # No params of its own: the wrapped cell's, at input_size + 1.
  inner = cells.lstm(H).init(jax.random.key(0), D + 1)
  chex.assert_trees_all_equal(cell.init(jax.random.key(0), D)['cell'], inner)


def test_bad_arguments():
  for bad in (0, -2, 1.5, True, '3', None):
    with pytest.raises(ValueError, match='repetitions must be a positive'):
      repeat.repeat(cells.elman(H), bad)
  with pytest.raises(ValueError, match='cell must be a vcrnn_jax.Cell'):
    repeat.repeat(lambda x: x, 2)
  with pytest.raises(ValueError, match='input_size must be a positive'):
    repeat.repeat(cells.elman(H), 2).init(jax.random.key(0), 0)
  assert isinstance(repeat.repeat(cells.elman(H), np.int64(2)), Cell)


def test_wrong_input_size_is_named_in_repeats_terms():
  cell = repeat.repeat(cells.gru(H), RHO)
  params = cell.init(jax.random.key(0), 3)
  want = (r'repeat(gru).apply: x must have shape [batch, 3] '
          r'(input_size from the params), got shape (2, 4): one feature more '
          r'than the params read; if x carries the first-step flag, give it '
          r'without: repeat(gru) appends the flag itself.')
  with pytest.raises(ValueError) as info:
    cell.apply(params, cell.initial_state(2), jnp.ones((2, 4)))
  assert str(info.value) == want
