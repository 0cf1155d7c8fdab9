"""VCRNN and VCGRU against NumPy loops of Jernite et al. Eq. 7-16, and the rest
of vcrnn_jax.vc: the sharpness schedule, the penalty (Eq. 10), the hard
inference path and the computation accounting (Table 3)."""

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import act, cells, vc
from vcrnn_jax.core import Context
from vcrnn_jax.models import sequence_model
from vcrnn_jax.unroll import unroll

B, T, H = 3, 4, 8
FACTORIES = {'vcrnn': vc.vcrnn, 'vcgru': vc.vcgru}


def _sigmoid(x):
  return 1.0 / (1.0 + np.exp(-x))


def np_mask(m, d, lam, eps):
  """Eq. 8/11 with dimensions indexed from 0 (see vc.soft_mask)."""
  s = _sigmoid(lam * (m[:, None] * d - np.arange(d)))
  return np.where(s > 1 - eps, 1.0, np.where(s < eps, 0.0, s))


def np_vc(name, p, xs, lam, eps, h=None):
  """Eq. 7, 11-16, one step at a time; returns (hs, ms) [B, T, ...]."""
  d = p['recurrent_kernel'].shape[0]
  h = np.zeros((xs.shape[0], d)) if h is None else h
  sched = p['scheduler']
  hs, ms = [], []
  for t in range(xs.shape[1]):
    x = xs[:, t]
    m = _sigmoid(h @ sched['recurrent_kernel'] + x @ sched['input_kernel']
                 + sched['bias'])[:, 0]                              # (7)
    if 'input_projection' in p:
      x = x @ p['input_projection']
    e = np_mask(m, d, lam, eps)                                      # (11)
    h_bar, x_bar = e * h, e * x                                      # (12)
    if name == 'vcrnn':
      g = np.tanh(x_bar @ p['input_kernel'] + h_bar @ p['recurrent_kernel']
                  + p['bias'])
      h = e * g + (1 - e) * h                                        # (13)
    else:
      vr, vz, v = np.split(p['input_kernel'], 3, axis=1)
      ur, uz = np.split(p['recurrent_gates_kernel'], 2, axis=1)
      br, bz, bh = np.split(p['bias'], 3)
      r = _sigmoid(h_bar @ ur + x_bar @ vr + br)                     # (14)
      z = e * _sigmoid(h_bar @ uz + x_bar @ vz + bz)                 # (14)
      h_tilde = np.tanh((r * h_bar) @ p['recurrent_kernel'] + x_bar @ v
                        + bh)                                        # (15)
      h = z * h_tilde + (1 - z) * h                                  # (16)
    hs.append(h)
    ms.append(m)
  return np.stack(hs, 1), np.stack(ms, 1)


def np_partial_update(name, p, h, x, d):
  """Sec. 4.1: g_d on the first d dimensions (upper-left blocks), rest kept."""
  if 'input_projection' in p:
    x = x @ p['input_projection']
  n = p['recurrent_kernel'].shape[0]
  h_d, x_d = h[:d], x[:d]
  if name == 'vcrnn':
    new = np.tanh(x_d @ p['input_kernel'][:d, :d]
                  + h_d @ p['recurrent_kernel'][:d, :d] + p['bias'][:d])
  else:
    v, u, b = p['input_kernel'], p['recurrent_gates_kernel'], p['bias']
    r = _sigmoid(x_d @ v[:d, :d] + h_d @ u[:d, :d] + b[:d])
    z = _sigmoid(x_d @ v[:d, n:n + d] + h_d @ u[:d, n:n + d] + b[n:n + d])
    h_tilde = np.tanh(x_d @ v[:d, 2 * n:2 * n + d]
                      + (r * h_d) @ p['recurrent_kernel'][:d, :d]
                      + b[2 * n:2 * n + d])
    new = z * h_tilde + (1 - z) * h_d
  return np.concatenate([new, h[d:]])


def _params(name, input_size=H, seed=0, dtype=jnp.float64, **kwargs):
  """Params with every bias and the scheduler perturbed, so each is used."""
  cell = FACTORIES[name](H, param_dtype=dtype, **kwargs)
  params = cell.init(jax.random.key(seed), input_size)
  keys = jax.random.split(jax.random.key(seed + 1), 4)
  params['bias'] = params['bias'] + 0.1 * jax.random.normal(
      keys[0], params['bias'].shape, dtype)
  sched = params['scheduler']
  sched['input_kernel'] = 0.5 * jax.random.normal(
      keys[1], sched['input_kernel'].shape, dtype)
  sched['recurrent_kernel'] = 0.5 * jax.random.normal(
      keys[2], sched['recurrent_kernel'].shape, dtype)
  sched['bias'] = jnp.full((1,), -1.0, dtype)
  return cell, params


def _xs(input_size=H, seed=2, dtype=jnp.float64, shape=None):
  return jax.random.normal(jax.random.key(seed),
                           shape or (B, T, input_size), dtype)


def _np(tree):
  return jax.tree_util.tree_map(np.asarray, tree)


# ----------------------------------------------------------------------------
# The soft cells against NumPy (values and gradients).


@pytest.mark.parametrize('input_size', [H, 5])
@pytest.mark.parametrize('name', sorted(FACTORIES))
def test_values_match_numpy(name, input_size):
  cell, params = _params(name, input_size, sharpness=0.7, epsilon=0.05)
  assert ('input_projection' in params) == (input_size != H)
  xs = _xs(input_size)
  _, ys = jax.jit(lambda p, xs: unroll(cell, p, cell.initial_state(B), xs))(
      params, xs)
  hs, ms = np_vc(name, _np(params), np.asarray(xs), 0.7, 0.05)
  np.testing.assert_allclose(ys.output, hs, atol=1e-12)
  np.testing.assert_allclose(ys.m, ms, atol=1e-12)
  e = np.stack([np_mask(ms[:, t], H, 0.7, 0.05) for t in range(T)], 1)
  np.testing.assert_array_equal(ys.dims, (e > 0).sum(-1))
  assert ys.dims.dtype == jnp.int32
  # The mask is soft here: partial updates, some dimensions carried.
  assert 0 < ys.dims.min() and ys.dims.min() < H


@pytest.mark.parametrize('name', sorted(FACTORIES))
def test_gradients_match_numpy_finite_differences(name):
  cell, params = _params(name, 5, sharpness=0.7, epsilon=0.05)
  xs = _xs(5)
  w = np.asarray(jax.random.normal(jax.random.key(9), (B, T, H)))
  w_m = np.asarray(jax.random.normal(jax.random.key(10), (B, T)))

  def loss(p):
    _, ys = unroll(cell, p, cell.initial_state(B), xs)
    return jnp.sum(ys.output * w) + jnp.sum(ys.m * w_m)

  def np_loss(p):
    hs, ms = np_vc(name, p, np.asarray(xs), 0.7, 0.05)
    return np.sum(hs * w) + np.sum(ms * w_m)

  grad_tree = jax.jit(jax.grad(loss))(params)
  grads = jax.tree_util.tree_leaves_with_path(grad_tree)
  np_params = _np(params)
  rng = np.random.default_rng(0)
  eps = 1e-6
  for path, g in grads:
    for _ in range(3):
      idx = tuple(int(rng.integers(0, s)) for s in g.shape)
      values = []
      for sign in (1, -1):
        p = jax.tree_util.tree_map(np.copy, np_params)
        leaf = p
        for key in path[:-1]:
          leaf = leaf[key.key]
        leaf[path[-1].key][idx] += sign * eps
        values.append(np_loss(p))
      fd = (values[0] - values[1]) / (2 * eps)
      np.testing.assert_allclose(g[idx], fd, rtol=1e-5, atol=1e-8,
                                 err_msg=f'{name}{jax.tree_util.keystr(path)}')
  # The scheduler learns through the soft part of the mask.
  assert np.abs(grad_tree['scheduler']['bias']).max() > 1e-6


def test_soft_mask_invariants_and_threshold_gradients():
  m = jnp.linspace(0.0, 1.0, 37)
  for lam in (0.1, 1.0, 10.0):
    for eps in (0.0, 0.01, 0.2):
      e = np.asarray(vc.soft_mask(m, 50, lam, eps))
      assert e.shape == (37, 50)
      assert np.all(np.diff(e, axis=-1) <= 0)          # monotone in i
      soft = (e > 0) & (e < 1)
      assert np.all(e[soft] >= eps) and np.all(e[soft] <= 1 - eps)
      np.testing.assert_allclose(e, np_mask(np.asarray(m), 50, lam, eps),
                                 atol=1e-6)
      if eps > 0:   # Thres_eps: 0/1 outside (eps, 1 - eps)
        raw = _sigmoid(lam * (np.asarray(m)[:, None] * 50 - np.arange(50)))
        assert np.all(e[raw < eps] == 0) and np.all(e[raw > 1 - eps] == 1)
  # No gradient through the thresholded entries, some through the others.
  jac = jax.vmap(jax.jacobian(lambda m: vc.soft_mask(m, 50, 1.0, 0.01)))(
      jnp.array([0.3, 0.71]))
  e = np.asarray(vc.soft_mask(jnp.array([0.3, 0.71]), 50, 1.0, 0.01))
  hard = (e == 0) | (e == 1)
  assert hard.any() and (~hard).any()
  assert np.all(np.asarray(jac)[hard] == 0)
  assert np.all(np.asarray(jac)[~hard] > 0)
  # As lambda grows the mask selects the first ceil(m D) dimensions, and
  # m = 1 is the full update (the reason we index from 0).
  e = np.asarray(vc.soft_mask(jnp.array([0.27, 1.0]), 50, 1e4, 0.01))
  np.testing.assert_array_equal(e.sum(-1), [math.ceil(0.27 * 50), 50])


@pytest.mark.parametrize('name,reference', [('vcrnn', cells.elman),
                                            ('vcgru', cells.gru)])
def test_full_mask_equals_the_fixed_cell(name, reference):
  cell, params = _params(name, sharpness=1e3)
  params['scheduler']['bias'] = jnp.full((1,), 50.0, jnp.float64)  # m = 1
  ref = reference(H, param_dtype=jnp.float64)
  ref_params = {k: v for k, v in params.items() if k != 'scheduler'}
  assert (jax.tree_util.tree_map(jnp.shape, ref_params)
          == jax.tree_util.tree_map(jnp.shape, ref.init(jax.random.key(0), H)))
  xs = _xs()
  _, ys = unroll(cell, params, cell.initial_state(B), xs)
  _, want = unroll(ref, ref_params, ref.initial_state(B), xs)
  np.testing.assert_array_equal(ys.m, 1.0)
  np.testing.assert_array_equal(ys.dims, H)
  np.testing.assert_allclose(ys.output, want, rtol=0, atol=1e-14)


@pytest.mark.parametrize('dtype', [jnp.float32, jnp.float64])
@pytest.mark.parametrize('name', sorted(FACTORIES))
def test_dimensions_above_the_mask_are_carried_bit_exactly(name, dtype):
  cell, params = _params(name, dtype=dtype, sharpness=2.0, epsilon=0.05)
  params['scheduler']['bias'] = jnp.full((1,), -0.5, dtype)
  h0 = jax.random.normal(jax.random.key(4), (B, H), dtype)
  state = cell.initial_state(B)._replace(h=h0)
  x = _xs(dtype=dtype)[:, 0]
  new, out = jax.jit(cell.apply)(params, state, x)
  dims = np.asarray(out.dims)
  assert dims.min() < H
  for b in range(B):
    np.testing.assert_array_equal(np.asarray(new.h)[b, dims[b]:],
                                  np.asarray(h0)[b, dims[b]:])
    assert np.all(np.asarray(new.h)[b, :dims[b]] != np.asarray(h0)[b, :dims[b]])


# ----------------------------------------------------------------------------
# The protocol: unroll, jit, wrappers, params, dtypes, errors.


@pytest.mark.parametrize('name,hard', [('vcrnn', False), ('vcgru', False),
                                       ('vcrnn', True)])
def test_unroll_lengths_freeze_state(name, hard):
  cell, params = _params(name, 5, dtype=jnp.float32, hard=hard,
                         block_sizes=4)
  xs = _xs(5, dtype=jnp.float32)
  lengths = jnp.array([T, 2, 0])
  run = jax.jit(lambda state, xs, lengths=None: unroll(
      cell, params, state, xs, lengths))
  final, ys = run(cell.initial_state(B), xs, lengths)
  for b, n in enumerate(lengths.tolist()):
    s_b, ys_b = run(cell.initial_state(1), xs[b:b + 1, :n])
    np.testing.assert_allclose(final.h[b], s_b.h[0], atol=1e-6)
    np.testing.assert_allclose(ys.output[b, :n], ys_b.output[0], atol=1e-6)
    np.testing.assert_array_equal(ys.dims[b, :n], ys_b.dims[0])
    for field in ys:     # padded steps: zero outputs, no dims, no m
      np.testing.assert_array_equal(field[b, n:], 0)


@pytest.mark.parametrize('name,hard', [('vcrnn', False), ('vcgru', False),
                                       ('vcrnn', True)])
def test_unroll_equals_step_loop_and_jit(name, hard):
  cell, params = _params(name, dtype=jnp.float32, hard=hard, block_sizes=4)
  xs = _xs(dtype=jnp.float32)
  state = cell.initial_state(B)
  # Soft: eager, no jit anywhere (the hard path's many small ops would each
  # compile on their own, so its step is jitted).
  step = jax.jit(cell.apply) if hard else cell.apply
  loop = []
  for t in range(T):
    state, y = step(params, state, xs[:, t])
    loop.append(y)
  final, ys = unroll(cell, params, cell.initial_state(B), xs)
  traces = []

  def f(params, xs):
    traces.append(1)
    return unroll(cell, params, cell.initial_state(B), xs)

  jit_final, jit_ys = jax.jit(f)(params, xs)
  jax.jit(f)(params, xs + 1.0)
  assert len(traces) == 1
  for got in (ys, jit_ys):
    np.testing.assert_allclose(got.output, jnp.stack([y.output for y in loop],
                                                     1), atol=1e-6)
    np.testing.assert_array_equal(got.dims, jnp.stack([y.dims for y in loop],
                                                      1))
  np.testing.assert_allclose(jit_final.h, final.h, atol=1e-6)
  np.testing.assert_allclose(state.h, final.h, atol=1e-6)
  assert ys.output.dtype == jnp.float32 and ys.m.dtype == jnp.float32


def test_adaptive_computation_time_wraps_a_vc_cell():
  cell = act.adaptive(vc.vcrnn(H), output_size=2, max_steps=4)
  params = cell.init(jax.random.key(0), 5)
  # The ACT flag makes the input size 6 != H: the VC cell projects it.
  assert params['cell']['input_projection'].shape == (6, H)
  xs = _xs(5, dtype=jnp.float32)
  _, ys = jax.jit(lambda p: unroll(cell, p, cell.initial_state(B), xs))(
      params)
  assert ys.output.shape == (B, T, 2) and ys.steps.shape == (B, T)
  assert np.all((ys.steps >= 1) & (ys.steps <= 4))
  assert np.all(np.isfinite(ys.output))


def test_sequence_model_reads_the_structured_output():
  model = sequence_model(vc.vcgru(H), output_size=3)
  params = model.init(jax.random.key(0), H)
  logits, ys = jax.jit(model.apply)(params, _xs(dtype=jnp.float32),
                                    jnp.array([4, 2, 1]))
  assert logits.shape == (B, T, 3) and ys.m.shape == (B, T)
  assert ys.dims.shape == (B, T) and ys.dims.dtype == jnp.int32


def test_params_tree_golden():
  shapes = {
      (name, size): jax.tree_util.tree_map(
          jnp.shape, FACTORIES[name](H).init(jax.random.key(0), size))
      for name in FACTORIES for size in (H, 5)
  }
  sched = lambda i: {'input_kernel': (i, 1), 'recurrent_kernel': (H, 1),
                     'bias': (1,)}
  elman = {'input_kernel': (H, H), 'recurrent_kernel': (H, H), 'bias': (H,)}
  gru = {'input_kernel': (H, 3 * H), 'recurrent_gates_kernel': (H, 2 * H),
         'recurrent_kernel': (H, H), 'bias': (3 * H,)}
  assert shapes == {
      ('vcrnn', H): {**elman, 'scheduler': sched(H)},
      ('vcrnn', 5): {**elman, 'scheduler': sched(5),
                     'input_projection': (5, H)},
      ('vcgru', H): {**gru, 'scheduler': sched(H)},
      ('vcgru', 5): {**gru, 'scheduler': sched(5),
                     'input_projection': (5, H)},
  }
  params = vc.vcrnn(H, scheduler_bias=1.5).init(jax.random.key(0), H)
  np.testing.assert_array_equal(params['scheduler']['bias'], 1.5)
  np.testing.assert_array_equal(params['scheduler']['input_kernel'], 0.0)
  assert all(a.dtype == jnp.float32 for a in jax.tree_util.tree_leaves(params))
  # The hard cell shares the soft cell's params.
  assert (jax.tree_util.tree_map(jnp.shape, vc.vcgru(H, hard=True).init(
      jax.random.key(0), 5)) == shapes[('vcgru', 5)])


@pytest.mark.parametrize('name,hard', [('vcrnn', False), ('vcgru', False),
                                       ('vcrnn', True)])
def test_bfloat16(name, hard):
  cell = FACTORIES[name](H, param_dtype=jnp.bfloat16, hard=hard,
                         block_sizes=4)
  params = cell.init(jax.random.key(0), 5)
  assert {leaf.dtype for leaf in jax.tree_util.tree_leaves(params)} == {
      jnp.dtype(jnp.bfloat16)}
  f32 = FACTORIES[name](H).init(jax.random.key(0), 5)
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_array_equal(
          np.asarray(a.astype(jnp.bfloat16), np.float32),
          np.asarray(b, np.float32)), f32, params)
  state, ys = jax.jit(
      lambda p, xs: unroll(cell, p, cell.initial_state(B), xs))(
          params, _xs(5, dtype=jnp.float32))
  assert ys.output.dtype == jnp.bfloat16 and ys.m.dtype == jnp.bfloat16
  assert state.h.dtype == jnp.bfloat16 and ys.dims.dtype == jnp.int32
  assert np.all(np.isfinite(np.asarray(ys.output, np.float32)))


def test_bad_arguments_raise_clear_errors():
  with pytest.raises(ValueError, match='hidden_size must be a positive'):
    vc.vcrnn(0)
  for bad in (0.0, -1.0, 'sharp', True):
    with pytest.raises(ValueError, match='sharpness must be a positive float'):
      vc.vcgru(H, sharpness=bad)
  with pytest.raises(ValueError, match=r'epsilon must be in \[0, 0.5\)'):
    vc.vcrnn(H, epsilon=0.5)
  for bad in ((4, 2), (0, 4), (4, 20), 'abc', 0):
    with pytest.raises(ValueError, match='block_sizes'):
      vc.vcrnn(H, block_sizes=bad)
  with pytest.raises(ValueError, match='compact_rows must be a positive'):
    vc.vcrnn(H, compact_rows=0)
  with pytest.raises(ValueError, match='steps_per_epoch'):
    vc.paper_sharpness(0)
  cell = vc.vcrnn(H)
  params = cell.init(jax.random.key(0), 5)
  with pytest.raises(ValueError, match=r'x must have shape \[batch, 5\]'):
    cell.apply(params, cell.initial_state(B), jnp.ones((B, H)))


# ----------------------------------------------------------------------------
# The sharpness schedule.


def test_paper_sharpness_schedule():
  schedule = vc.paper_sharpness(steps_per_epoch=10)
  steps = jnp.array([0, 9, 10, 35, 89, 90, 10 ** 6], jnp.int32)
  np.testing.assert_allclose(schedule(steps),
                             [0.1, 0.1, 0.2, 0.4, 0.9, 1.0, 1.0], rtol=1e-6)
  assert schedule(jnp.int32(3)).dtype == jnp.float32


@pytest.mark.parametrize('name', sorted(FACTORIES))
def test_sharpness_schedule_follows_the_step_without_recompiling(name):
  cell = FACTORIES[name](H, sharpness=vc.paper_sharpness(10))
  params = cell.init(jax.random.key(0), H)
  params['scheduler']['bias'] = jnp.full((1,), -1.0)
  xs = _xs(dtype=jnp.float32)
  chex.clear_trace_counter()  # one count per parametrized case

  @jax.jit
  @chex.assert_max_traces(n=1)
  def jf(params, xs, step):
    return unroll(cell, params, cell.initial_state(B), xs,
                  context=Context(step=step))[1]

  early = jf(params, xs, jnp.int32(0))
  late = jf(params, xs, jnp.int32(1000))
  for lam, got in ((0.1, early), (1.0, late)):
    fixed = FACTORIES[name](H, sharpness=lam)
    _, want = unroll(fixed, params, fixed.initial_state(B), xs)
    np.testing.assert_allclose(got.output, want.output, atol=1e-6)
    np.testing.assert_array_equal(got.dims, want.dims)
  # lambda = 0.1 updates everything; lambda = 1 only about m D dimensions.
  assert early.dims.min() == H and late.dims.max() < H


def test_schedule_without_a_step_raises():
  cell = vc.vcrnn(H, sharpness=vc.paper_sharpness(10))
  params = cell.init(jax.random.key(0), H)
  with pytest.raises(ValueError, match='needs the training step'):
    cell.apply(params, cell.initial_state(B), jnp.ones((B, H)))
  with pytest.raises(ValueError, match='needs the training step'):
    cell.apply(params, cell.initial_state(B), jnp.ones((B, H)),
               Context(key=jax.random.key(0)))
  # The hard path does not use the sharpness, so it needs no step.
  hard = vc.vcrnn(H, sharpness=vc.paper_sharpness(10), hard=True)
  jax.eval_shape(hard.apply, params, hard.initial_state(B), jnp.ones((B, H)))


# ----------------------------------------------------------------------------
# The hard inference path.


def _on_block_xs(sizes, input_size, steps, seed=0):
  """Inputs whose feature 0 is logit(m) with m D = size - 0.5 per row."""
  rng = np.random.default_rng(seed)
  xs = rng.normal(size=(len(sizes), steps, input_size))
  for b in range(len(sizes)):
    for t in range(steps):
      m = (sizes[(b + t) % len(sizes)] - 0.5) / H
      xs[b, t, 0] = np.log(m / (1 - m))
  return jnp.asarray(xs)


@pytest.mark.parametrize('name,input_size,compact_rows', [('vcrnn', H, None),
                                                          ('vcgru', 5, 2)])
def test_hard_equals_soft_in_the_limit(name, input_size, compact_rows):
  soft, params = _params(name, input_size, sharpness=1e4)
  sched = params['scheduler']
  sched['recurrent_kernel'] = jnp.zeros_like(sched['recurrent_kernel'])
  sched['input_kernel'] = jnp.zeros_like(sched['input_kernel']).at[0, 0].set(1)
  sched['bias'] = jnp.zeros_like(sched['bias'])
  hard = FACTORIES[name](H, hard=True, block_sizes=(3, 6),
                         compact_rows=compact_rows, param_dtype=jnp.float64)
  xs = _on_block_xs((3, 6, 8), input_size, steps=4)
  h0 = jax.random.normal(jax.random.key(3), (3, H), jnp.float64)
  state = soft.initial_state(3)._replace(h=h0)
  run = jax.jit(lambda cell, p: unroll(cell, p, state, xs)[1],
                static_argnums=0)
  want, got = run(soft, params), run(hard, params)
  np.testing.assert_array_equal(got.dims, want.dims)
  assert set(np.asarray(got.dims).ravel()) == {3, 6, 8}
  np.testing.assert_allclose(got.output, want.output, rtol=0, atol=1e-13)
  if name != 'vcrnn':
    return   # (compiling the hard GRU's gradient takes long; same code path)
  # Gradients w.r.t. the unit's weights agree too.
  w = jax.random.normal(jax.random.key(5), want.output.shape, jnp.float64)

  def loss(cell, p):
    return jnp.sum(unroll(cell, p, state, xs)[1].output * w)

  grad = jax.jit(jax.grad(loss, argnums=1), static_argnums=0)
  g_soft, g_hard = grad(soft, params), grad(hard, params)
  for key in g_soft:
    if key != 'scheduler':
      np.testing.assert_allclose(g_hard[key], g_soft[key], rtol=1e-10,
                                 atol=1e-12, err_msg=key)


@pytest.mark.parametrize('name,block_sizes,compact_rows', [
    ('vcrnn', 4, None), ('vcgru', (3, 5), 3), ('vcrnn', (1, 2, 4, 8), 4)])
def test_hard_is_the_partial_update_of_its_rounded_size(name, block_sizes,
                                                       compact_rows):
  _, params = _params(name, 5, seed=3)
  params['scheduler']['bias'] = jnp.full((1,), -0.5, jnp.float64)
  cell = FACTORIES[name](H, hard=True, block_sizes=block_sizes,
                         compact_rows=compact_rows, param_dtype=jnp.float64)
  sizes = sorted(set(block_sizes) | {H}) if isinstance(
      block_sizes, tuple) else [2, 4, 6, 8]
  rows = 7
  h0 = jax.random.normal(jax.random.key(1), (rows, H), jnp.float64)
  x = jax.random.normal(jax.random.key(2), (rows, 5), jnp.float64) * 2
  active = jnp.array([True] * (rows - 1) + [False])
  new, out = jax.jit(cell.apply)(
      params, cell.initial_state(rows)._replace(h=h0), x,
      Context(active=active))
  m, dims = np.asarray(out.m), np.asarray(out.dims)
  assert len(set(dims[:-1])) > 1       # rows of different sizes
  assert dims[-1] == 0                  # an inactive row updates nothing
  np.testing.assert_array_equal(new.h[-1], h0[-1])
  for b in range(rows - 1):
    need = math.ceil(m[b] * H)
    assert dims[b] == min(s for s in sizes if s >= need)
    want = np_partial_update(name, _np(params), np.asarray(h0[b]),
                             np.asarray(x[b]), int(dims[b]))
    np.testing.assert_allclose(new.h[b], want, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(new.h[b, dims[b]:], h0[b, dims[b]:])
  if compact_rows is not None:
    return
  # Under vmap the switch runs every branch and selects: same values.
  _, vout = jax.jit(jax.vmap(lambda h, x: cell.apply(
      params, cell.initial_state(1)._replace(h=h[None]), x[None])))(h0, x)
  np.testing.assert_allclose(vout.output[:-1, 0], new.h[:-1], atol=1e-13)


@pytest.mark.parametrize('name', ['vcrnn', 'vcgru'])
def test_compact_rows_and_hard_are_checked(name):
  with pytest.raises(ValueError, match='compact_rows must be a positive'):
    FACTORIES[name](H, hard=True, compact_rows=0)
  with pytest.raises(ValueError, match='hard must be a bool'):
    FACTORIES[name](H, hard='yes')


# ----------------------------------------------------------------------------
# The penalty (Eq. 10) and the guide targets (Sec. 5.2.2).


def test_penalty_by_hand():
  m = jnp.array([[0.1, 0.5, 0.9], [0.3, 0.3, 0.0]])
  cases = {
      ('l1', True): [0.2 + 0.2 + 0.6, 0.0 + 0.0 + 0.3],
      ('l1', False): [0.0 + 0.2 + 0.6, 0.0],
      ('l2', True): [0.04 + 0.04 + 0.36, 0.09],
      ('l2', False): [0.04 + 0.36, 0.0],
  }
  for (norm, symmetric), want in cases.items():
    np.testing.assert_allclose(
        vc.penalty(m, 0.3, norm=norm, symmetric=symmetric), want, atol=1e-6,
        err_msg=f'{norm} symmetric={symmetric}')
  mask = jnp.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
  np.testing.assert_allclose(vc.penalty(m, 0.3, mask=mask), [0.4, 0.0],
                             atol=1e-6)
  targets = jnp.array([[0.1, 0.3, 0.9], [0.3, 0.3, 0.3]])
  np.testing.assert_allclose(vc.penalty(m, targets), [0.2, 0.3], atol=1e-6)
  np.testing.assert_allclose(vc.penalty(m[:, 0], 0.3), [0.2, 0.0], atol=1e-6)
  # The gradient pushes m towards the target.
  g = jax.grad(lambda m: vc.penalty(m, 0.3).sum())(m)
  np.testing.assert_array_equal(np.sign(g[0]), [-1, 1, 1])


def test_penalty_rejects_bad_arguments():
  m = jnp.zeros((2, 3))
  with pytest.raises(ValueError, match="norm must be 'l1' or 'l2'"):
    vc.penalty(m, 0.3, norm='l3')
  with pytest.raises(ValueError, match='target must be a scalar or have'):
    vc.penalty(m, jnp.zeros((2,)))
  with pytest.raises(ValueError, match='mask must have the shape of m'):
    vc.penalty(m, 0.3, mask=jnp.ones((3,)))
  with pytest.raises(ValueError, match=r'm must be \[batch, time\]'):
    vc.penalty(jnp.zeros((2, 3, 4)), 0.3)


def test_guide_targets():
  tokens = jnp.array([[3, 0, 5, 0], [0, 1, 2, 3]])
  targets = vc.guide_targets(tokens == 0, 0.2, 0.7)
  np.testing.assert_allclose(targets, [[0.2, 0.7, 0.2, 0.7],
                                       [0.7, 0.2, 0.2, 0.2]])
  assert targets.dtype == jnp.float32
  m = jnp.full((2, 4), 0.2)
  np.testing.assert_allclose(vc.penalty(m, targets), [1.0, 0.5], atol=1e-6)
  with pytest.raises(ValueError, match=r'boundary_target must be in \[0, 1\]'):
    vc.guide_targets(tokens == 0, 0.2, 1.5)


# ----------------------------------------------------------------------------
# Computation accounting (Sec. 4.1, Table 3).


@pytest.mark.parametrize('cell_name,dim,paper', [
    ('lstm', 380, 760), ('gru', 538, 760), ('gru', 1024, 1450),
    ('lstm', 1024, 2048), ('gru', 512, 725), ('lstm', 512, 1024),
    ('lstm', 324, 648), ('gru', 458, 648), ('elman', 760, 760)])
def test_rnn_equivalent_dim_reproduces_table_3(cell_name, dim, paper):
  # Table 3 rounds to about 5.
  assert abs(vc.rnn_equivalent_dim(cell_name, dim) - paper) <= 2.5


def test_rnn_equivalent_dim_of_variable_computation():
  dims = np.array([[256, 768], [512, 512]])
  want = math.sqrt(np.mean(dims.astype(float) ** 2))
  assert vc.rnn_equivalent_dim('vcrnn', 1024, dims) == pytest.approx(want)
  assert vc.rnn_equivalent_dim('vcgru', 1024, dims) == pytest.approx(
      math.sqrt(2) * want)
  assert vc.rnn_equivalent_dim('vcrnn', 1024, m=dims / 1024) == pytest.approx(
      want)
  mask = np.array([[1, 0], [0, 0]])
  assert vc.rnn_equivalent_dim('vcrnn', 1024, dims, mask=mask) == 256
  assert vc.rnn_equivalent_dim('vcrnn', 1024) == 1024
  # The honest count: a GRU's three gate blocks give sqrt(3), not Table 3's
  # sqrt(2); the scheduler adds a little to a VC cell.
  assert vc.rnn_equivalent_dim('gru', 538, convention='count') == (
      pytest.approx(math.sqrt(3) * 538))
  assert vc.rnn_equivalent_dim('elman', 760, convention='count') == 760
  assert vc.rnn_equivalent_dim('vcrnn', 100, [[100]], convention='count') == (
      pytest.approx(math.sqrt(100 ** 2 + 100)))
  for kwargs, match in (({'dims': [300]}, 'dims is only for'),
                        ({'m': [1.5]}, r'm must be in \[0, 1\]'),
                        ({'dims': [1], 'm': [0.1]}, 'at most one'),
                        ({'convention': 'flops'}, 'convention must be')):
    name = 'gru' if 'dims' in kwargs and len(kwargs) == 1 else 'vcgru'
    with pytest.raises(ValueError, match=match):
      vc.rnn_equivalent_dim(name, 100, **kwargs)
  with pytest.raises(ValueError, match='cell_name must be one of'):
    vc.rnn_equivalent_dim('rnn', 100)
  with pytest.raises(ValueError, match=r'dims must be in \[0, hidden_size'):
    vc.rnn_equivalent_dim('vcrnn', 100, [101])


def test_multiplications():
  n = 64
  assert vc.multiplications('elman', n) == 2 * n * n
  assert vc.multiplications('gru', n) == 6 * n * n
  assert vc.multiplications('lstm', n) == 8 * n * n
  assert vc.multiplications('lstm', n, input_size=10) == 4 * (10 * n + n * n)
  np.testing.assert_array_equal(
      vc.multiplications('vcrnn', n, np.array([0, 8, 64])),
      [2 * n, 2 * 64 + 2 * n, 2 * n * n + 2 * n])
  assert vc.multiplications('vcgru', n, 8) == 6 * 64 + 2 * n
  # A VC cell with a projection pays its used columns and the scheduler's v.
  assert vc.multiplications('vcrnn', n, 8, input_size=10) == (
      2 * 64 + n + 10 + 10 * 8)
  # The dims a unit reports are what it is charged for.
  cell, params = _params('vcrnn', sharpness=1.0)
  _, ys = unroll(cell, params, cell.initial_state(B), _xs())
  cost = vc.multiplications('vcrnn', H, ys.dims)
  assert cost.shape == (B, T) and np.all(cost <= vc.multiplications(
      'vcrnn', H))


def test_a_scheduled_cell_fits_every_wrapper_that_probes_its_shapes():
  # sequence_model, language_model, act.adaptive and cells.stack trace the
  # cell once for its output size; with a sharpness schedule the cell needs
  # a step even then (core.shape_probe_context gives step 0).
  from vcrnn_jax.models import language_model
  schedule = vc.paper_sharpness(steps_per_epoch=10)
  cell = vc.vcrnn(H, sharpness=schedule)
  with pytest.raises(ValueError, match='needs the training step'):
    cell.apply(cell.init(jax.random.key(0), 5), cell.initial_state(B),
               jnp.ones((B, 5)))
  ctx = Context(step=jnp.asarray(30, jnp.int32))
  for model in (sequence_model(cell, output_size=3),
                sequence_model(cells.stack([cell, vc.vcgru(
                    H, sharpness=schedule)]), output_size=3),
                sequence_model(act.adaptive(cell, output_size=3,
                                            max_steps=3))):
    params = model.init(jax.random.key(1), 5)
    out, _ = model.apply(params, jnp.ones((B, T, 5)), context=ctx)
    assert out.shape == (B, T, 3)
  lm = language_model(cell, 11, embed_size=H, readout='tied')
  params = lm.init(jax.random.key(2))
  logits, _ = lm.apply(params, jnp.zeros((B, T), jnp.int32), context=ctx)
  assert logits.shape == (B, T, 11)


def test_compacted_shells_are_the_sizes_thinned_to_a_width():
  # min(256, D / 4) columns each, ending at D: at D 1024 the D/8 sizes
  # become 4 shells; small D keeps D/4-wide ones.
  assert vc._shell_sizes(vc._block_sizes(1024, 8)) == (256, 512, 768, 1024)
  assert vc._shell_sizes(vc._block_sizes(2048, 8)) == tuple(
      range(256, 2049, 256))
  assert vc._shell_sizes((8, 16, 32, 64, 128, 256, 512, 1024)) == (
      256, 512, 1024)
  assert vc._shell_sizes((256, 900, 1024)) == (256, 1024)
  assert vc._shell_sizes((1, 2, 4, 8)) == (2, 4, 8)
