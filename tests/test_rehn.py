"""RHN, SRHN, SREHN and EI-REHN against slow NumPy loops of the paper.

The references below are written from the EI-REHN paper (Eq. 6-22 and
Algorithm 1) one row at a time, with full matrices where the library uses
fused or diagonal shortcuts, and are compared with the cells for values and
(float64, finite-difference) gradients.
"""

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import act, cells, loops, rehn
from vcrnn_jax.core import Context
from vcrnn_jax.unroll import unroll

B, T, D, H, Z = 3, 4, 3, 5, 3
F64 = jnp.float64


def _sigmoid(x):
  return 1.0 / (1.0 + np.exp(-x))


def _softplus(x):
  return np.log1p(np.exp(x))


def _np(tree):
  return jax.tree_util.tree_map(np.asarray, tree)


# ----------------------------------------------------------------------------
# NumPy references.


def np_rhn(p, xs, depth, coupled, shared, h0=None, mask_x=None, mask_h=None):
  """EI-REHN Eq. 6-8 (with c = 1 - t when coupled), batch at a time."""
  k = 2 if coupled else 3
  h = np.zeros((xs.shape[0], H)) if h0 is None else h0
  mx = 1.0 if mask_x is None else mask_x
  mh = 1.0 if mask_h is None else mask_h
  hs = []
  for t in range(xs.shape[1]):
    for r in range(depth):
      w = p['recurrent_kernel'] if shared else p['recurrent_kernel'][r]
      b = p['bias'] if shared else p['bias'][r]
      # W_H^r [h; I_{r=1} x; 1]                                       (8)
      pre = (h * mh) @ w + b
      if r == 0:
        pre = pre + (xs[:, t] * mx) @ p['input_kernel']
      blocks = np.split(pre, k, axis=1)
      s, t_gate = np.tanh(blocks[0]), _sigmoid(blocks[1])
      c = 1 - t_gate if coupled else _sigmoid(blocks[2])
      h = t_gate * s + c * h                                          # (7)
    hs.append(h)
  return np.stack(hs, 1)


def np_elastic_step(p, h_prev, x, max_depth, hyper, open_gate=False):
  """Algorithm 1 for ONE row, as written (hyper=False: SREHN; open_gate:
  d = 1 in Eq. 10, every one of max_depth micro-layers)."""
  if not open_gate:
    e = p['elastic']
    alpha = _softplus(e['alpha_hat'])                                 # (13)
    beta = _sigmoid(e['beta_hat'])                                    # (12)
    alpha_t = _sigmoid(x @ e['input_kernel']
                       + h_prev @ e['recurrent_kernel'] + e['bias'])  # (14)
  wx_s, wx_g = np.split(p['input_kernel'], 2, axis=1)
  w_s, w_g = np.split(p['recurrent_kernel'], 2, axis=1)   # W_t^0, h @ W
  b_s, b_g = np.split(p['bias'], 2)
  if hyper:
    q = p['hyper']
    p_s, p_g = np.split(q['delta_kernel'], 2, axis=1)
    pb_s, pb_g = np.split(q['update_gate_kernel'], 2, axis=1)
    bb_s, bb_g = np.split(q['update_gate_bias'], 2)
    s_prev, g_prev, z = (q['initial_residual'], q['initial_gate'],
                         q['initial_state'])
  r, depth, h = 0, 0, h_prev
  while True:
    r += 1
    x_term = (x @ wx_s, x @ wx_g) if r == 1 else (0.0, 0.0)
    if hyper:
      z = np.tanh(s_prev @ q['residual_kernel'] + g_prev @ q['gate_kernel']
                  + z @ q['recurrent_kernel'] + q['bias'])            # (18)
      dw_s, dw_g = np.diag(z @ p_s), np.diag(z @ p_g)           # (19, 20)
      gbar_s = _sigmoid(z @ pb_s + bb_s)                              # (21)
      gbar_g = _sigmoid(z @ pb_g + bb_g)
      s = np.tanh(gbar_s * (h @ w_s) + (1 - gbar_s) * (h @ dw_s)
                  + x_term[0] + b_s)                                  # (22)
      g_hat = _sigmoid(gbar_g * (h @ w_g) + (1 - gbar_g) * (h @ dw_g)
                       + x_term[1] + b_g)
      w_s, w_g = w_s + dw_s, w_g + dw_g                               # (17)
      s_prev, g_prev = s, g_hat
    else:
      s = np.tanh(h @ w_s + x_term[0] + b_s)                          # (16)
      g_hat = _sigmoid(h @ w_g + x_term[1] + b_g)
    d = 1.0 if open_gate else np.maximum(
        beta + np.exp(alpha) - np.exp((alpha + alpha_t) * r), 0.0)   # (11)
    g = d * g_hat                                                     # (10)
    if np.sum(np.abs(g)) > 0 and r <= max_depth:
      depth = r
      h = g * s + (1 - g) * h                                         # (9)
    else:
      break
  return h, depth


def np_elastic(p, xs, max_depth, hyper, h0=None, open_gate=False):
  hs = np.zeros(xs.shape[:2] + (H,))
  depths = np.zeros(xs.shape[:2], np.int64)
  for b in range(xs.shape[0]):
    h = np.zeros(H) if h0 is None else h0[b]
    for t in range(xs.shape[1]):
      h, depths[b, t] = np_elastic_step(p, h, xs[b, t], max_depth, hyper,
                                        open_gate)
      hs[b, t] = h
  return hs, depths


# ----------------------------------------------------------------------------
# Set-ups.


def _fixed(name, coupled=True, depth=3, **kw):
  factory = {'rhn': rehn.rhn, 'srhn': rehn.srhn}[name]
  return factory(H, depth, coupled=coupled, param_dtype=F64, **kw)


def _elastic(name, max_depth=8, **kw):
  if name == 'srehn':
    return rehn.srehn(H, max_depth, param_dtype=F64, **kw)
  return rehn.ei_rehn(H, Z, max_depth, param_dtype=F64, **kw)


def _perturb(params, seed, scale=0.3):
  """Every leaf + noise, so biases, initial vectors and P are exercised."""
  leaves, tree = jax.tree_util.tree_flatten(params)
  keys = jax.random.split(jax.random.key(seed), len(leaves))
  return jax.tree_util.tree_unflatten(tree, [
      a + scale * jax.random.normal(k, a.shape, a.dtype)
      for a, k in zip(leaves, keys)])


def _elastic_params(cell, seed=0, alpha=0.15, beta=0.9):
  params = _perturb(cell.init(jax.random.key(seed), D), seed + 1)
  e = params['elastic']
  # Spread alpha_t so that rows and steps realize visibly different depths.
  e['input_kernel'] = 2.0 * e['input_kernel']
  e['alpha_hat'] = e['alpha_hat'] * 0 + math.log(math.expm1(alpha))
  e['beta_hat'] = e['beta_hat'] * 0 + math.log(beta / (1 - beta))
  e['alpha_hat'] = e['alpha_hat'] + 0.2 * jnp.arange(
      H, dtype=e['alpha_hat'].dtype)
  if 'hyper' in params:
    for k in ('delta_kernel', 'update_gate_kernel'):
      params['hyper'][k] = 3.0 * params['hyper'][k]
  return params


def _xs(seed=2, dtype=F64, shape=(B, T, D)):
  return jax.random.normal(jax.random.key(seed), shape, dtype)


# srhn with the uncoupled carry runs the same two code paths as these.
FIXED = [('rhn', True), ('rhn', False), ('srhn', True)]
ELASTIC = ['srehn', 'ei_rehn']


# ----------------------------------------------------------------------------
# Values and gradients against NumPy.


@pytest.mark.parametrize('name,coupled', FIXED)
def test_fixed_depth_values_and_gradients_match_numpy(name, coupled):
  cell = _fixed(name, coupled)
  params = _perturb(cell.init(jax.random.key(0), D), 1)
  xs = _xs()
  h0 = 0.5 * np.asarray(_xs(3, shape=(B, H)))
  w = np.asarray(_xs(9, shape=(B, T, H)))

  def loss(q):
    _, ys = unroll(cell, q, rehn.RHNState(jnp.asarray(h0)), xs)
    return jnp.sum(ys * w), ys

  (_, ys), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
  p, np_xs = _np(params), np.asarray(xs)
  ref = lambda p: np_rhn(p, np_xs, 3, coupled, name == 'srhn', h0)
  np.testing.assert_allclose(ys, ref(p), atol=1e-12)
  _check_fd(grads, p, lambda q: np.sum(ref(q) * w), f'{name}')


def _check_fd(grads, p, loss, label, samples=3, eps=1e-6):
  rng = np.random.default_rng(0)
  flat, _ = jax.tree_util.tree_flatten_with_path(grads)
  for path, g in flat:
    g = np.asarray(g)
    for _ in range(samples):
      idx = tuple(int(rng.integers(0, s)) for s in g.shape)
      plus = jax.tree_util.tree_map(np.copy, p)
      minus = jax.tree_util.tree_map(np.copy, p)
      _leaf(plus, path)[idx] += eps
      _leaf(minus, path)[idx] -= eps
      fd = (loss(plus) - loss(minus)) / (2 * eps)
      np.testing.assert_allclose(
          g[idx], fd, rtol=1e-6, atol=1e-8,
          err_msg=f'{label}{jax.tree_util.keystr(path)}{idx}')


def _leaf(tree, path):
  for key in path:
    tree = tree[key.key]
  return tree


@pytest.mark.parametrize('name', ELASTIC)
def test_elastic_values_depths_and_gradients_match_algorithm_1(name):
  cell = _elastic(name)
  params = _elastic_params(cell)
  xs = _xs()
  h0 = 0.5 * np.asarray(_xs(3, shape=(B, H)))
  w = np.asarray(_xs(9, shape=(B, T, H)))

  def loss(q):
    _, out = unroll(cell, q, rehn.RHNState(jnp.asarray(h0)), xs)
    return jnp.sum(out.output * w), out

  (_, out), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
  p, np_xs = _np(params), np.asarray(xs)
  ref = lambda p: np_elastic(p, np_xs, 8, name == 'ei_rehn', h0)
  hs, depths = ref(p)
  np.testing.assert_array_equal(out.depth, depths)
  np.testing.assert_allclose(out.output, hs, atol=1e-12)
  assert out.depth.dtype == jnp.int32
  # Rows and steps realize different depths, below max_depth and above 1.
  assert len(np.unique(depths)) >= 3 and depths.max() < 8, depths
  _check_fd(grads, p, lambda q: np.sum(ref(q)[0] * w), name)


@pytest.mark.parametrize('name', ELASTIC)
def test_open_gate_values_and_gradients_match_numpy(name):
  cell = _elastic(name, max_depth=4, open_gate=True)
  params = _perturb(cell.init(jax.random.key(0), D), 1)
  assert 'elastic' not in params
  xs = _xs()
  h0 = 0.5 * np.asarray(_xs(3, shape=(B, H)))
  w = np.asarray(_xs(9, shape=(B, T, H)))

  def loss(q, cell=cell):
    _, out = unroll(cell, q, rehn.RHNState(jnp.asarray(h0)), xs)
    return jnp.sum(out.output * w), out

  (_, out), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
  p, np_xs = _np(params), np.asarray(xs)
  ref = lambda p: np_elastic(p, np_xs, 4, name == 'ei_rehn', h0,
                             open_gate=True)
  hs, depths = ref(p)
  np.testing.assert_array_equal(out.depth, depths)
  assert (depths == 4).all()
  np.testing.assert_allclose(out.output, hs, atol=1e-12)
  _check_fd(grads, p, lambda q: np.sum(ref(q)[0] * w), f'{name} open')
  scan = _elastic(name, max_depth=4, open_gate=True, loop='scan')
  (_, out_s), grads_s = jax.jit(jax.value_and_grad(
      functools.partial(loss, cell=scan), has_aux=True))(params)
  np.testing.assert_allclose(out_s.output, out.output, atol=1e-12)
  for a, b in zip(jax.tree_util.tree_leaves(grads_s),
                  jax.tree_util.tree_leaves(grads)):
    np.testing.assert_allclose(a, b, atol=1e-10)


def test_ei_rehn_with_zero_hypernetwork_is_srehn_at_half_weight():
  # P = 0, b_bar = 0: w = 0 and g_bar = 1/2, so Eq. 22 is SREHN's Eq. 16 with
  # W / 2: a check of Eq. 17-22 that does not share code with the reference.
  cell = _elastic('ei_rehn')
  params = _elastic_params(cell)
  hp = params['hyper']
  for k in ('delta_kernel', 'update_gate_kernel', 'update_gate_bias'):
    hp[k] = jnp.zeros_like(hp[k])
  plain = _elastic('srehn')
  p2 = {k: v for k, v in params.items() if k != 'hyper'}
  p2['recurrent_kernel'] = params['recurrent_kernel'] / 2
  xs = _xs()
  _, a = unroll(cell, params, cell.initial_state(B), xs)
  _, b = unroll(plain, p2, plain.initial_state(B), xs)
  np.testing.assert_array_equal(a.depth, b.depth)
  np.testing.assert_allclose(a.output, b.output, atol=1e-13)


# ----------------------------------------------------------------------------
# The elastic gate.


def test_elastic_gate_is_eq_11_with_finite_values_and_gradients():
  rng = np.random.default_rng(0)
  alpha = rng.uniform(0.01, 2.0, 50)
  beta_hat = rng.normal(0, 2, 50)
  alpha_t = rng.uniform(0.001, 0.999, 50)
  beta = _sigmoid(beta_hat)
  gate = jax.jit(jax.vmap(jax.value_and_grad(rehn.elastic_gate),
                          in_axes=(0, 0, 0, None)))
  for r in (1, 2, 3, 7):
    want = np.maximum(beta + np.exp(alpha) - np.exp((alpha + alpha_t) * r), 0)
    got, grad = gate(alpha, beta_hat, alpha_t, r)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(got > 0, want > 0)
    assert np.all(np.asarray(got) < beta)        # d < beta < 1 (Sec. 3.1)
    # d/d alpha of Eq. 11 where the gate is open, else 0.
    want = np.where(want > 0, np.exp(alpha)
                    - r * np.exp((alpha + alpha_t) * r), 0.0)
    np.testing.assert_allclose(grad, want, rtol=1e-9, atol=1e-12)
  # Huge alpha or r: the paper's form overflows; this stays finite, 0.
  a = np.array([1e4, 1e300, 0.5, 0.5])
  r = np.array([1.0, 1.0, 1e6, 1e300])
  value, grad = jax.jit(jax.vmap(jax.value_and_grad(rehn.elastic_gate)))(
      a, np.full(4, 0.5), np.full(4, 0.3), r)
  np.testing.assert_array_equal(value, 0.0)
  np.testing.assert_array_equal(grad, 0.0)
  for dtype in (jnp.float32, jnp.bfloat16):
    one = lambda v, dtype=dtype: jnp.asarray(v, dtype)
    value, grad = jax.value_and_grad(lambda a, one=one: rehn.elastic_gate(
        a, one(0.0), one(0.5), 3).astype(jnp.float32))(one(200.0))
    assert float(value) == 0 and float(grad) == 0


@pytest.mark.parametrize('name', ELASTIC)
def test_depth_is_bounded_by_eq_15_and_max_depth(name):
  run = lambda cell: jax.jit(lambda p, xs: unroll(
      cell, p, cell.initial_state(8), xs)[1].depth)
  deep = run(_elastic(name, max_depth=50))
  for seed, alpha in ((0, 0.05), (1, 0.2), (2, 0.6)):
    params = _elastic_params(_elastic(name), seed=seed, alpha=alpha,
                             beta=0.95)
    depth = deep(params, _xs(seed, shape=(8, 6, D)))
    bound = float(rehn.depth_bound(params))
    p = _np(params['elastic'])
    a, bt = _softplus(p['alpha_hat']), _sigmoid(p['beta_hat'])
    np.testing.assert_allclose(bound, np.max(np.log(bt + np.exp(a)) / a))
    assert 1 <= int(depth.max()) <= bound, (bound, depth)
  if name == 'srehn':   # max_depth caps it (the loop's cap, cell-agnostic)
    params = _elastic_params(_elastic(name), alpha=0.05, beta=0.95)
    depth = run(_elastic(name, max_depth=2))(params, _xs(shape=(8, 6, D)))
    assert int(depth.max()) == 2 and float(rehn.depth_bound(params)) > 2


@pytest.mark.parametrize('name,loop', [('srehn', 'scan'),
                                       ('ei_rehn', 'while')])
def test_a_row_with_closed_first_gate_is_carried_unchanged(name, loop):
  cell = _elastic(name, loop=loop)
  params = _elastic_params(cell)
  # alpha_t ~ 1 for row 0: d^1 = beta - e^alpha (e^alpha_t - 1) < 0.
  params['elastic']['input_kernel'] = jnp.abs(params['elastic']['input_kernel'])
  x = _xs(shape=(B, D)).at[0].set(60.0)
  h0 = jnp.asarray(0.5 * np.asarray(_xs(3, shape=(B, H))))
  d1 = rehn.elastic_gate(jax.nn.softplus(params['elastic']['alpha_hat']),
                         params['elastic']['beta_hat'], 1.0, 1)
  assert np.all(np.asarray(d1) == 0)
  state, out = jax.jit(cell.apply)(params, rehn.RHNState(h0), x)
  assert int(out.depth[0]) == 0 and np.all(np.asarray(out.depth[1:]) > 0)
  np.testing.assert_array_equal(state.h[0], h0[0])
  np.testing.assert_array_equal(out.output[0], h0[0])
  assert not np.allclose(state.h[1:], h0[1:])


@pytest.mark.parametrize('name,checkpoints,k', [
    ('srehn', 2, 1), ('ei_rehn', 3, 1), ('ei_rehn', 3, 4)])
def test_while_loop_equals_masked_scan(name, checkpoints, k):
  # Few slots, so that deep rows take the thinned-slot backward path too;
  # k = 4 tests once per 4 micro-layers and idles past the deepest row.
  kw = dict(max_depth=12)
  cw = _elastic(name, loop=loops.LoopConfig(checkpoints=checkpoints,
                                            unroll=k), **kw)
  cs = _elastic(name, loop='scan', **kw)
  params = _elastic_params(cw, alpha=0.08, beta=0.95)
  batch = 6
  xs = _xs(shape=(batch, T, D))
  lengths = jnp.array([T, 1, 2, T, 3, 2])
  w = _xs(9, shape=(batch, T, H))

  def loss(cell, params, xs):
    state, out = unroll(cell, params, cell.initial_state(batch), xs, lengths)
    return jnp.sum(jnp.sin(out.output) * w) + jnp.sum(state.h ** 2), out

  (lw, ow), gw = jax.jit(jax.value_and_grad(
      lambda p, x: loss(cw, p, x), argnums=(0, 1), has_aux=True))(params, xs)
  (ls, os_), gs = jax.jit(jax.value_and_grad(
      lambda p, x: loss(cs, p, x), argnums=(0, 1), has_aux=True))(params, xs)
  np.testing.assert_array_equal(ow.depth, os_.depth)
  assert int(ow.depth.max()) > checkpoints
  assert len(np.unique(np.asarray(ow.depth))) >= 3
  np.testing.assert_allclose(lw, ls, rtol=1e-12)
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12),
      gw, gs)
  if name == 'srehn':
    # Compacting the deep tail (6 rows, then 3) changes nothing either (the
    # compaction is the loop's; the cell only has to leave halted rows be).
    cc = _elastic(name, loop=loops.LoopConfig(checkpoints=checkpoints,
                                              compact_rows=3), **kw)
    _, oc = jax.jit(lambda p, x: unroll(cc, p, cc.initial_state(batch), x,
                                        lengths))(params, xs)
    np.testing.assert_array_equal(oc.depth, ow.depth)
    np.testing.assert_allclose(oc.output, ow.output, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize('name,loop', [('srehn', 'scan'), ('ei_rehn', 'while')])
def test_inactive_rows_take_no_depth_and_change_nothing_else(name, loop):
  cell = _elastic(name, loop=loop)
  params = _elastic_params(cell)
  x = _xs(shape=(5, D))
  h0 = jnp.asarray(0.5 * np.asarray(_xs(3, shape=(5, H))))
  active = jnp.array([True, False, True, False, True])
  keep = np.asarray(active)

  def loss(params, active):
    state, out = cell.apply(params, rehn.RHNState(h0), x,
                            Context(active=active))
    w = jnp.asarray(keep, F64)[:, None]
    return jnp.sum(w * jnp.sin(state.h)), out

  grad = jax.jit(jax.value_and_grad(loss, has_aux=True))
  (l_all, full), g_all = grad(params, jnp.ones_like(active))
  (l_some, part), g_some = grad(params, active)
  assert np.all(np.asarray(full.depth) > 0)
  np.testing.assert_array_equal(np.asarray(part.depth)[~keep], 0)
  np.testing.assert_array_equal(part.output[~keep], h0[~keep])
  np.testing.assert_array_equal(part.depth[keep], full.depth[keep])
  np.testing.assert_allclose(part.output[keep], full.output[keep], rtol=1e-13)
  np.testing.assert_allclose(l_some, l_all, rtol=1e-13)
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13),
      g_some, g_all)


@pytest.mark.parametrize('loop', ['while', 'scan'])
def test_overflow_guard_huge_alpha_and_max_depth(loop):
  max_depth = 10_000 if loop == 'while' else 200
  cell = _elastic('ei_rehn', max_depth=max_depth,
                  loop=loops.LoopConfig(loop, checkpoints=16))
  params = _elastic_params(cell, alpha=3e-3, beta=0.999)
  # Half the units with a huge alpha: e^alpha and e^{(alpha + alpha_t) r}
  # overflow float64 at r = 1 and their gate is 0. The other half with a
  # small alpha and alpha_t, so that the rows go a hundred micro-layers deep
  # (the masked scan evaluates the closed gates up to r = max_depth).
  e = params['elastic']
  e['alpha_hat'] = e['alpha_hat'].at[::2].set(1e4)
  e['bias'] = e['bias'] - 5.0
  xs = _xs(shape=(2, 2, D))

  def loss(params):
    _, out = unroll(cell, params, cell.initial_state(2), xs)
    return jnp.sum(out.output ** 2), out

  (value, out), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(
      params)
  assert np.isfinite(value)
  assert int(out.depth.max()) > 100, out.depth
  assert int(out.depth.max()) <= max_depth
  assert all(np.all(np.isfinite(g)) for g in jax.tree_util.tree_leaves(grads))
  g_alpha = np.asarray(grads['elastic']['alpha_hat'])
  assert np.all(g_alpha[::2] == 0) and np.any(g_alpha[1::2] != 0)


# ----------------------------------------------------------------------------
# Dropout.


def _masks(key, p_x, p_h, shape_x, shape_h):
  """The documented masks: bernoulli from fold_in(key, 0) and (key, 1)."""
  mx = np.asarray(jax.random.bernoulli(jax.random.fold_in(key, 0), 1 - p_x,
                                       shape_x)) / (1 - p_x)
  mh = np.asarray(jax.random.bernoulli(jax.random.fold_in(key, 1), 1 - p_h,
                                       shape_h)) / (1 - p_h)
  return mx, mh


def test_dropout_masks_are_shared_over_time_and_micro_layers():
  # rhn; srhn's layers read the mask through the same code.
  name = 'rhn'
  cell = _fixed(name, input_dropout=0.4, state_dropout=0.5)
  params = _perturb(cell.init(jax.random.key(0), D), 1)
  xs = _xs()
  key = jax.random.key(42)
  run = jax.jit(lambda key: unroll(cell, params, cell.initial_state(B), xs,
                                   context=Context(key=key))[1])
  ys = run(key)
  mx, mh = _masks(key, 0.4, 0.5, (B, D), (B, H))
  # Different sub-keys: the two masks are not one pattern.
  assert not np.array_equal(mx > 0, mh[:, :D] > 0)
  assert 0 < (mh == 0).sum() < mh.size and 0 < (mx == 0).sum() < mx.size
  p = _np(params)
  want = np_rhn(p, np.asarray(xs), 3, True, name == 'srhn', mask_x=mx,
                mask_h=mh)
  np.testing.assert_allclose(ys, want, atol=1e-12)
  # No key: no dropout.
  _, ys_eval = unroll(cell, params, cell.initial_state(B), xs)
  np.testing.assert_allclose(
      ys_eval, np_rhn(p, np.asarray(xs), 3, True, name == 'srhn'), atol=1e-12)
  # Another key, other masks.
  assert not np.allclose(run(jax.random.key(43)), ys)


@pytest.mark.parametrize('name', ELASTIC)
def test_elastic_input_mask_is_applied_wherever_x_is_read(name):
  # x_t is read at r = 1 and by Eq. 14: input dropout is the reference run
  # on x_t times the documented mask, the same mask at every time step.
  cell = _elastic(name, input_dropout=0.5)
  params = _elastic_params(cell)
  xs = _xs()
  key = jax.random.key(7)
  _, out = unroll(cell, params, cell.initial_state(B), xs,
                  context=Context(key=key))
  mx, _ = _masks(key, 0.5, 0.5, (B, D), (B, H))
  assert 0 < (mx == 0).sum() < mx.size
  hs, depths = np_elastic(_np(params), np.asarray(xs) * mx[:, None, :], 8,
                          name == 'ei_rehn')
  np.testing.assert_array_equal(out.depth, depths)
  np.testing.assert_allclose(out.output, hs, atol=1e-12)


@pytest.mark.parametrize('name', ELASTIC)
def test_elastic_state_mask_is_one_mask_for_every_read_of_h(name):
  # h^{r-1} is masked wherever a weight reads it: W and W_a (rows scaled by
  # the mask) and, in EI-REHN, every diagonal of Eq. 17-22 (P's columns
  # scaled by it), at every micro-layer. For one row, that is the
  # reference with those weights scaled.
  cell = _elastic(name, state_dropout=0.5)
  params = _elastic_params(cell)
  x = _xs(shape=(B, D))
  h0 = jnp.asarray(0.5 * np.asarray(_xs(3, shape=(B, H))))
  key = jax.random.key(11)
  _, out = cell.apply(params, rehn.RHNState(h0), x, Context(key=key))
  _, mh = _masks(key, 0.5, 0.5, (B, D), (B, H))
  assert 0 < (mh == 0).sum() < mh.size
  p = _np(params)
  for b in range(B):
    q = jax.tree_util.tree_map(np.copy, p)
    q['recurrent_kernel'] = q['recurrent_kernel'] * mh[b][:, None]
    q['elastic']['recurrent_kernel'] = (q['elastic']['recurrent_kernel']
                                        * mh[b][:, None])
    if name == 'ei_rehn':
      q['hyper']['delta_kernel'] = (q['hyper']['delta_kernel']
                                    * np.tile(mh[b], 2)[None, :])
    h, depth = np_elastic_step(q, np.asarray(h0[b]), np.asarray(x[b]), 8,
                               name == 'ei_rehn')
    assert depth == int(out.depth[b])
    np.testing.assert_allclose(out.output[b], h, atol=1e-12)


# ----------------------------------------------------------------------------
# Protocol: unroll, jit, ACT, dtypes, compilation, params.


def _all_cells(dtype=jnp.float32):
  return {
      'rhn': rehn.rhn(H, 3, param_dtype=dtype),
      'rhn_uncoupled': rehn.rhn(H, 2, coupled=False, param_dtype=dtype),
      'srhn': rehn.srhn(H, 3, param_dtype=dtype),
      'srehn': rehn.srehn(H, 6, param_dtype=dtype),
      'ei_rehn': rehn.ei_rehn(H, Z, 6, param_dtype=dtype),
  }


def _out(y):
  return y.output if hasattr(y, 'output') else y


@pytest.mark.parametrize('name', sorted(_all_cells()))
def test_unroll_with_lengths_equals_a_step_loop_and_jit(name):
  cell = _all_cells()[name]
  params = cell.init(jax.random.key(0), D)
  xs = _xs(dtype=jnp.float32)
  lengths = jnp.array([T, 2, 1])
  final, ys = jax.jit(unroll, static_argnums=0)(
      cell, params, cell.initial_state(B), xs, lengths)
  assert _out(ys).dtype == jnp.float32
  if name in ('rhn', 'srhn', 'rhn_uncoupled'):
    # Without jit. (The elastic cells run eagerly in the dropout and
    # zero-hypernetwork tests, and under jit in the value tests, against
    # the same NumPy reference.)
    eager_final, eager_ys = unroll(cell, params, cell.initial_state(B), xs,
                                   lengths)
    np.testing.assert_allclose(_out(eager_ys), _out(ys), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(eager_final.h, final.h, rtol=1e-5, atol=1e-6)
  # Each row on its own, one apply per real step: padding changes nothing.
  step = jax.jit(cell.apply)
  for b, n in enumerate(lengths.tolist()):
    state = cell.initial_state(1)
    for t in range(n):
      state, y = step(params, state, xs[b:b + 1, t])
      np.testing.assert_allclose(_out(ys)[b, t], _out(y)[0], rtol=1e-5,
                                 atol=1e-6)
      if hasattr(ys, 'depth'):
        assert int(ys.depth[b, t]) == int(y.depth[0])
    np.testing.assert_allclose(final.h[b], state.h[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(_out(ys)[b, n:], 0.0)
    if hasattr(ys, 'depth'):
      np.testing.assert_array_equal(ys.depth[b, n:], 0)
      assert np.all(np.asarray(ys.depth[b, :n]) > 0)


def test_act_around_an_elastic_cell_passes_it_the_halted_rows():
  # ACT tells the inner cell which rows still ponder (context.active): a
  # halted row's SREHN step then takes no depth.
  cell = act.adaptive(_all_cells()['srehn'], 2, max_steps=4)
  params = cell.init(jax.random.key(0), D)
  _, out = jax.jit(cell.apply)(params, cell.initial_state(B),
                               _xs(dtype=jnp.float32)[:, 0])
  assert out.output.shape == (B, 2) and np.all(np.isfinite(out.output))
  assert np.all(np.asarray(out.steps) >= 1)


def test_act_around_rhn():
  cell = act.adaptive(_all_cells()['rhn'], 2, max_steps=4)
  params = cell.init(jax.random.key(0), D)

  def loss(params):
    _, out = unroll(cell, params, cell.initial_state(B),
                    _xs(dtype=jnp.float32), jnp.array([T, 2, 3]))
    return jnp.sum(out.output ** 2) + jnp.sum(act.ponder_cost(out)), out

  (value, out), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(
      params)
  assert out.output.shape == (B, T, 2) and np.isfinite(value)
  assert np.all(np.asarray(out.steps)[:, :2] >= 1)
  assert all(np.all(np.isfinite(g)) for g in jax.tree_util.tree_leaves(grads))
  assert float(jnp.abs(grads['cell']['input_kernel']).sum()) > 0


@pytest.mark.parametrize('name', ['rhn', 'srehn', 'ei_rehn'])
def test_bfloat16(name):
  cell = _all_cells(jnp.bfloat16)[name]
  params = cell.init(jax.random.key(3), D)
  assert {leaf.dtype for leaf in jax.tree_util.tree_leaves(params)} == {
      jnp.dtype(jnp.bfloat16)}
  f32 = _all_cells()[name].init(jax.random.key(3), D)
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_array_equal(
          np.asarray(a.astype(jnp.bfloat16), np.float32),
          np.asarray(b, np.float32)), f32, params)
  state, ys = jax.jit(unroll, static_argnums=0)(
      cell, params, cell.initial_state(B), _xs(dtype=jnp.float32))
  assert _out(ys).dtype == jnp.bfloat16 and state.h.dtype == jnp.bfloat16
  assert np.all(np.isfinite(np.asarray(_out(ys), np.float32)))
  if hasattr(ys, 'depth'):
    assert int(ys.depth.min()) >= 1


def test_vmap_over_an_extra_axis():
  cell = _all_cells()['ei_rehn']
  params = cell.init(jax.random.key(0), D)
  xs = _xs(dtype=jnp.float32, shape=(2, B, D))
  state = cell.initial_state(B)
  _, outs = jax.jit(jax.vmap(lambda x: cell.apply(params, state, x)))(xs)
  step = jax.jit(cell.apply)
  for i in range(2):
    _, out = step(params, state, xs[i])
    np.testing.assert_allclose(outs.output[i], out.output, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(outs.depth[i], out.depth)


@pytest.mark.parametrize('name', ['rhn', 'ei_rehn'])
def test_no_recompilation_on_second_call(name):
  cell = _all_cells()[name]
  chex.clear_trace_counter()  # one count per parametrized case

  @jax.jit
  @chex.assert_max_traces(n=1)
  def jf(params, xs, key):
    return _out(unroll(cell, params, cell.initial_state(B), xs,
                       context=Context(key=key))[1])

  params = cell.init(jax.random.key(0), D)
  jf(params, _xs(dtype=jnp.float32), jax.random.key(0)).block_until_ready()
  jf(params, _xs(5, dtype=jnp.float32), jax.random.key(1)).block_until_ready()


def test_params_tree_golden():
  shapes = {n: jax.tree_util.tree_map(jnp.shape, c.init(jax.random.key(0), D))
            for n, c in _all_cells().items()}
  elastic = {'input_kernel': (D, H), 'recurrent_kernel': (H, H),
             'bias': (H,), 'alpha_hat': (H,), 'beta_hat': (H,)}
  assert shapes == {
      'rhn': {'input_kernel': (D, 2 * H), 'recurrent_kernel': (3, H, 2 * H),
              'bias': (3, 2 * H)},
      'rhn_uncoupled': {'input_kernel': (D, 3 * H),
                        'recurrent_kernel': (2, H, 3 * H),
                        'bias': (2, 3 * H)},
      'srhn': {'input_kernel': (D, 2 * H), 'recurrent_kernel': (H, 2 * H),
               'bias': (2 * H,)},
      'srehn': {'input_kernel': (D, 2 * H), 'recurrent_kernel': (H, 2 * H),
                'bias': (2 * H,), 'elastic': elastic},
      'ei_rehn': {
          'input_kernel': (D, 2 * H), 'recurrent_kernel': (H, 2 * H),
          'bias': (2 * H,), 'elastic': elastic,
          'hyper': {
              'residual_kernel': (H, Z), 'gate_kernel': (H, Z),
              'recurrent_kernel': (Z, Z), 'bias': (Z,),
              'delta_kernel': (Z, 2 * H), 'update_gate_kernel': (Z, 2 * H),
              'update_gate_bias': (2 * H,), 'initial_residual': (H,),
              'initial_gate': (H,), 'initial_state': (Z,)}},
  }


def test_initial_values_of_the_gate_parameters():
  p = rehn.rhn(H, 2, transform_bias=-2.0).init(jax.random.key(0), D)
  np.testing.assert_array_equal(p['bias'][:, :H], 0.0)
  np.testing.assert_array_equal(p['bias'][:, H:], -2.0)
  p = rehn.srhn(H, 2, coupled=False, transform_bias=-1.5).init(
      jax.random.key(0), D)
  np.testing.assert_array_equal(p['bias'][H:2 * H], -1.5)
  np.testing.assert_array_equal(p['bias'][2 * H:], 1.5)
  cell = rehn.ei_rehn(H, Z, 10, alpha_init=0.3, beta_init=0.8, rate_bias=-1.0,
                      transform_bias=0.5, param_dtype=F64)
  p = cell.init(jax.random.key(0), D)
  np.testing.assert_allclose(jax.nn.softplus(p['elastic']['alpha_hat']), 0.3)
  np.testing.assert_allclose(jax.nn.sigmoid(p['elastic']['beta_hat']), 0.8)
  np.testing.assert_array_equal(p['elastic']['bias'], -1.0)
  np.testing.assert_array_equal(p['bias'][H:], 0.5)
  for k in ('initial_residual', 'initial_gate', 'initial_state', 'bias'):
    np.testing.assert_array_equal(p['hyper'][k], 0.0)
  # Default initialisation: the bound of Eq. 15 is log(0.9 + e^0.1) / 0.1.
  p = rehn.srehn(H, 10).init(jax.random.key(0), D)
  np.testing.assert_allclose(rehn.depth_bound(p),
                             math.log(0.9 + math.exp(0.1)) / 0.1, rtol=1e-5)


def test_bad_arguments_raise_clear_errors():
  with pytest.raises(ValueError, match='depth must be a positive integer'):
    rehn.rhn(H, 0)
  with pytest.raises(ValueError, match='hidden_size must be a positive'):
    rehn.srhn(0, 2)
  with pytest.raises(ValueError, match='coupled must be a bool'):
    rehn.rhn(H, 2, coupled='yes')
  with pytest.raises(ValueError, match=r'state_dropout must be a float in '
                     r'\[0, 1\), got 1.0'):
    rehn.rhn(H, 2, state_dropout=1.0)
  with pytest.raises(ValueError, match='max_depth must be a positive'):
    rehn.srehn(H, 0)
  with pytest.raises(ValueError, match='hyper_size must be a positive'):
    rehn.ei_rehn(H, 0, 3)
  with pytest.raises(ValueError, match="loop must be 'while' or 'scan'"):
    rehn.ei_rehn(H, Z, 3, loop='for')
  with pytest.raises(ValueError, match=r'beta_init must be in \(0, 1\)'):
    rehn.srehn(H, 3, beta_init=1.0)
  with pytest.raises(ValueError, match='alpha_init must be > 0'):
    rehn.srehn(H, 3, alpha_init=0.0)
  with pytest.raises(ValueError, match='compact_rows must be a positive'):
    rehn.srehn(H, 3, loop=loops.LoopConfig(compact_rows=0))
  cell = rehn.ei_rehn(H, Z, 3)
  params = cell.init(jax.random.key(0), D)
  with pytest.raises(ValueError, match=r'ei_rehn.apply: x must have shape '
                     r'\[batch, 3\]'):
    cell.apply(params, cell.initial_state(B), jnp.ones((B, D + 1)))
  with pytest.raises(ValueError, match=r'state has batch .*x has batch 3'):
    cell.apply(params, cell.initial_state(2), jnp.ones((B, D)))


# ----------------------------------------------------------------------------
# Parameter counts of the paper's Tables 1-3.


def _count(cell, input_size):
  shapes = jax.eval_shape(lambda k: cell.init(k, input_size),
                          jax.random.key(0))
  return sum(math.prod(a.shape) for a in jax.tree_util.tree_leaves(shapes))


def _readout(hidden, outputs):
  return hidden * outputs + outputs


@pytest.mark.parametrize('model,hidden,want', [
    ('rnn', 20, 502), ('rnn', 30, 1052), ('rnn', 40, 1802),
    ('lstm', 10, 542), ('lstm', 15, 1112), ('lstm', 20, 1882),
    ('rhn', 10, 1162), ('rhn', 15, 2492), ('rhn', 20, 4322),
    ('ei_rehn', 10, 807), ('ei_rehn', 15, 1732), ('ei_rehn', 20, 2862),
])
def test_table_1_parameter_counts(model, hidden, want):
  # Synthetic task: 2 inputs, a linear readout to 2 outputs. The RHN counts
  # are depth 5 with a coupled carry gate; EI-REHN's D_z is ceil(D_h / 2).
  cell = {
      'rnn': lambda: cells.elman(hidden),
      'lstm': lambda: cells.lstm(hidden),
      'rhn': lambda: rehn.rhn(hidden, 5),
      'ei_rehn': lambda: rehn.ei_rehn(hidden, (hidden + 1) // 2, 10),
  }[model]()
  assert _count(cell, 2) + _readout(hidden, 2) == want


def test_ei_rehn_count_formula_and_the_readings_it_excludes():
  # 3 D^2 + 3 D X + 9 D + 6 D Z + Z^2 + 2 Z.
  formula = lambda d, x, z: (3 * d * d + 3 * d * x + 9 * d + 6 * d * z + z * z
                             + 2 * z)
  for hidden, x, z in ((10, 2, 5), (32, 9, 16), (7, 3, 2)):
    assert _count(rehn.ei_rehn(hidden, z, 4), x) == formula(hidden, x, z)
  # Without the learned s^0, g^0, z^0 (2 D + Z), or without g's own P and
  # P_bar (2 D Z), no D_z gives Table 1's counts.
  for hidden, total in ((10, 807), (15, 1732), (20, 2862)):
    for less in (lambda d, z: 2 * d + z, lambda d, z: 2 * d * z):
      assert not [z for z in range(1, 3 * hidden)
                  if formula(hidden, 2, z) - less(hidden, z)
                  + _readout(hidden, 2) == total]
    assert [z for z in range(1, 3 * hidden)
            if formula(hidden, 2, z) + _readout(hidden, 2) == total] == [
                (hidden + 1) // 2]


def _two_layers(factory, hidden, inputs=9):
  return _count(factory(), inputs) + _count(factory(), hidden)


@pytest.mark.parametrize('model,hidden,paper,ours', [
    # Two stacked layers, a 6-way readout, and D_h * (9 + 1) more parameters
    # that every model of Table 2 has and the paper does not describe.
    ('rnn', 32, 3924, 3942),     # the paper's digits 4 and 2 are swapped
    ('rnn', 48, 8214, 8214),
    ('lstm', 16, 4048, 4038),    # the paper's 4th digit differs
    ('lstm', 24, 8358, 8358),
    ('lstm', 32, 14214, 14214),
    ('rhn1', 32, 7366, 7366),
    ('rhn2', 32, 11590, 11590),
    ('rhn3', 32, 15814, 15814),
    # EI-REHN: ONE layer (D_z = D_h / 2), same readout and extra D_h * 10.
    ('ei_rehn', 32, 8102, 8102),
    ('ei_rehn', 40, 12126, 12126),
    ('ei_rehn', 48, 16950, 16950),
])
def test_table_2_parameter_counts(model, hidden, paper, ours):
  if model == 'ei_rehn':
    body = _count(rehn.ei_rehn(hidden, hidden // 2, 10), 9)
  else:
    factory = {
        'rnn': lambda: cells.elman(hidden),
        'lstm': lambda: cells.lstm(hidden),
        'rhn1': lambda: rehn.rhn(hidden, 1),
        'rhn2': lambda: rehn.rhn(hidden, 2),
        'rhn3': lambda: rehn.rhn(hidden, 3),
    }[model]
    body = _two_layers(factory, hidden)
  assert body + _readout(hidden, 6) + hidden * 10 == ours
  assert abs(ours - paper) <= 18


@pytest.mark.parametrize('model,hidden,depth,millions,digits', [
    # Table 3 (one decimal).
    ('rhn', 1200, 2, 20.7, 1), ('rhn', 1200, 3, 23.5, 1),
    ('rhn', 1200, 4, 26.4, 1), ('rhn', 1200, 5, 29.3, 1),
    ('ei_rehn', 1200, 4, 25.3, 1),
    # Table 4 (whole millions): EI-REHN-1000D and -1200D.
    ('ei_rehn', 1000, 4, 19, 0), ('ei_rehn', 1200, 4, 25, 0),
])
def test_penn_treebank_parameter_counts(model, hidden, depth, millions,
                                        digits):
  # 10k words, the embedding tied with the softmax (+ its bias), D_z = D_h/2.
  vocab = 10_000
  cell = (rehn.rhn(hidden, depth) if model == 'rhn'
          else rehn.ei_rehn(hidden, hidden // 2, depth))
  total = _count(cell, hidden) + vocab * hidden + vocab
  assert round(total / 1e6, digits) == millions, total
