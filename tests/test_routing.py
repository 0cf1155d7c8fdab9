"""Capacity routing against a slow NumPy loop of the MoR / MoD equations.

The reference runs one sequence at a time, with Python loops over the
recursion steps and the tokens: each step scores the tokens still routed,
ranks them with a stable ``np.argsort`` (ties by position), keeps the top
``k_r = max(1, floor(c_r n))`` in position order, applies the block to
exactly those tokens (no filler slots) and sets ``h + g (B(h) - h)`` on
them. The block is written once against an array module ``xp``, so both
sides apply the same block. In float64 the implementation's values must
equal the reference's to 1e-12, and its gradients the reference's central
differences along a random direction per leaf.
"""

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import routing

B, T, F, M = 3, 6, 3, 3
LENGTHS = (6, 4, 5)
AUX = 0.3


def _mask(lengths=LENGTHS, t=T):
  return np.arange(t)[None, :] < np.asarray(lengths)[:, None]


def _sigmoid(xp, x):
  return 1.0 / (1.0 + xp.exp(-x))


def np_block(xp, p, h, mask, step, positions, causal):
  """One-head self-attention over the real slots (and, if ``causal``, the
  earlier positions), a residual tanh layer, a per-step embedding and a
  position embedding read at each slot's original position."""
  x = h + p['position'][positions]
  q, k, v = x @ p['wq'], x @ p['wk'], x @ p['wv']
  logits = q @ xp.swapaxes(k, -1, -2) * F ** -0.5
  allowed = mask[:, None, :]
  if causal:
    allowed = allowed & (positions[:, None, :] <= positions[:, :, None])
  logits = xp.where(allowed, logits, -1e9)
  a = xp.exp(logits - logits.max(-1, keepdims=True))
  a = a / a.sum(-1, keepdims=True)
  return h + xp.tanh((a @ v) @ p['wo'] + p['b'][None, None]
                     + p['depth'][step][None, None])


def jax_block(p, h, context, causal=False):
  return np_block(jnp, p, h, context.mask, context.step, context.positions,
                  causal)


def _gate(z, gate, scale):
  return scale * (_sigmoid(np, z) if gate == 'sigmoid' else z)


def ref_routing(p, h, mask, capacity, gate, scale, selection, causal):
  """MoR's expert-choice routing of ONE sequence ``[T, F]``."""
  w, bias = p['router']['kernel'], p['router']['bias']
  state = h.copy()
  routed = [t for t in range(T) if mask[t]]
  n = len(routed)
  logits, selected = np.zeros((T, M)), np.zeros((T, M), bool)
  eligible = np.zeros((T, M), bool)
  for r in range(M):
    z = np.array([state[t] @ w[:, r] + bias[r] for t in range(T)])
    for t in routed:
      eligible[t, r], logits[t, r] = True, z[t]
    if selection == 'top_k':
      k = max(1, math.floor(capacity[r] * n + 1e-9)) if n else 0
      ranked = np.argsort(-z[routed], kind='stable')   # ties: lower t first
      chosen = sorted(routed[i] for i in ranked[:k])   # original order
    else:
      chosen = [t for t in routed if z[t] > 0]
    new_state = state.copy()
    if chosen:
      x = state[chosen][None]
      out = np_block(np, p['block'], x, np.ones((1, len(chosen)), bool), r,
                     np.array(chosen)[None], causal)[0]
      for j, t in enumerate(chosen):
        g = _gate(z[t], gate, scale)
        new_state[t] = state[t] + g * (out[j] - state[t])          # (MoD 1)
        selected[t, r] = True
    state, routed = new_state, chosen
  return dict(out=state, steps=selected.sum(1), logits=logits,
              selected=selected, eligible=eligible)


def ref_aux(refs):
  """MoR's aux loss: per step, the mean BCE over the eligible tokens of
  the batch, summed over the steps."""
  total = 0.0
  for r in range(M):
    terms = [math.log1p(math.exp(z)) - y * z
             for ref in refs
             for z, y, e in zip(ref['logits'][:, r], ref['selected'][:, r],
                                ref['eligible'][:, r]) if e]
    total += sum(terms) / max(len(terms), 1)
  return total


def ref_loss(p, h, c, mask, **kw):
  refs = [ref_routing(p, h[b], mask[b], **kw) for b in range(h.shape[0])]
  return (sum(np.sum(c[b] * refs[b]['out']) for b in range(h.shape[0]))
          + AUX * ref_aux(refs))


def assert_gradients_by_central_differences(loss, grads, args, seed=0,
                                            delta=1e-6):
  """``grads`` against central differences of the NumPy ``loss`` along one
  random direction per leaf (as ``jax.test_util.check_grads`` does)."""
  leaves, tree = jax.tree_util.tree_flatten(_np(args))
  rng = np.random.default_rng(seed)
  for i, (leaf, g) in enumerate(zip(leaves, jax.tree_util.tree_leaves(
      grads))):
    v = rng.standard_normal(leaf.shape)
    v /= np.linalg.norm(v)
    shifted = [[x + sign * delta * v if j == i else x
                for j, x in enumerate(leaves)] for sign in (1, -1)]
    up, down = (loss(*jax.tree_util.tree_unflatten(tree, xs))
                for xs in shifted)
    np.testing.assert_allclose(np.sum(np.asarray(g) * v),
                               (up - down) / (2 * delta), rtol=1e-6,
                               atol=1e-8, err_msg=f'leaf {i}')


def _np(tree):
  return jax.tree_util.tree_map(np.asarray, tree)


def _close(a, b, **kw):
  jax.tree_util.tree_map(
      lambda x, y: np.testing.assert_allclose(x, y, **kw), a, b)


def _block_params(seed=0, scale=0.8):
  keys = jax.random.split(jax.random.key(seed), 7)
  normal = lambda k, shape: scale * jax.random.normal(k, shape, jnp.float64)
  return {'wq': normal(keys[0], (F, F)), 'wk': normal(keys[1], (F, F)),
          'wv': normal(keys[2], (F, F)), 'wo': normal(keys[3], (F, F)),
          'b': normal(keys[4], (F,)), 'depth': normal(keys[5], (M, F)),
          'position': normal(keys[6], (T, F))}


def _data(seed=1, batch=B):
  k1, k2 = jax.random.split(jax.random.key(seed))
  return (jax.random.normal(k1, (batch, T, F), jnp.float64),
          jax.random.normal(k2, (batch, T, F), jnp.float64))


def _model(causal=False, **kw):
  return routing.per_token(functools.partial(jax_block, causal=causal),
                           max_depth=M, **kw)


def _loss(model, params, h, c, mask):
  out_h, out = model.apply(params, h, mask)
  return jnp.sum(c * out_h) + AUX * routing.aux_loss(out), (out_h, out)


@functools.cache
def _grad(model):
  return jax.jit(jax.value_and_grad(functools.partial(_loss, model),
                                    argnums=(0, 1), has_aux=True))


CASES = {
    # selection, gate, capacity, causal
    'mor': ('top_k', 'sigmoid', None, False),
    'mod_logit_causal': ('top_k', 'logit', (0.5, 0.5, 0.25), True),
    'threshold_causal': ('threshold', 'sigmoid', None, True),
}


@pytest.mark.parametrize('case', list(CASES))
def test_values_and_gradients_match_the_numpy_reference(case):
  selection, gate, capacity, causal = CASES[case]
  model = _model(causal, capacity=capacity, gate=gate, selection=selection)
  params = model.init(jax.random.key(2), F, _block_params())
  h, c = _data()
  mask = _mask()
  (value, (out_h, out)), grads = _grad(model)(params, h, c, mask)
  kw = dict(capacity=routing.capacities(capacity, M), gate=gate,
            scale={'sigmoid': 0.1, 'logit': 1.0}[gate], selection=selection,
            causal=causal)
  p, hn = _np(params), np.asarray(h)
  refs = [ref_routing(p, hn[b], mask[b], **kw) for b in range(B)]
  for name in ('steps', 'selected', 'eligible'):
    np.testing.assert_array_equal(getattr(out, name),
                                  np.stack([r[name] for r in refs]))
  assert len(set(np.asarray(out.steps)[mask].tolist())) >= 3
  _close(out_h, np.stack([r['out'] for r in refs]), rtol=1e-12, atol=1e-12)
  _close(out.logits, np.stack([r['logits'] for r in refs]), atol=1e-12)
  _close(out.probs, np.where(out.eligible, _sigmoid(np, out.logits), 0.0),
         atol=1e-15)
  loss = functools.partial(ref_loss, c=np.asarray(c), mask=mask, **kw)
  np.testing.assert_allclose(value, loss(p, hn), rtol=1e-12)
  assert_gradients_by_central_differences(loss, grads, (params, h))
  # The routers learn from the task through g and from the aux loss.
  assert all(np.any(np.asarray(g) != 0)
             for g in jax.tree_util.tree_leaves(grads[0]['router']))


def test_capacity_tokens_round_down_from_the_real_tokens():
  assert routing.capacities(None, 4) == (1.0, 0.75, 0.5, 0.25)
  assert routing.capacity_tokens(10, max_depth=3) == (10, 6, 3)
  assert routing.capacity_tokens(3, max_depth=4) == (3, 2, 1, 1)  # max(1,.)
  assert routing.capacity_tokens(0, max_depth=4) == (0, 0, 0, 0)
  # 0.29 * 100 is 28.999999999999996 in floating point.
  assert routing.capacity_tokens(100, max_depth=3,
                                 capacity=(1.0, 0.5, 0.29)) == (100, 50, 29)
  assert routing.capacity_tokens(7, max_depth=2, capacity=0.5) == (3, 3)


@pytest.mark.parametrize('capacity', [None, (1.0, 0.5, 0.5), 0.34])
def test_hierarchical_filtering_and_exact_capacity(capacity):
  model = _model(capacity=capacity)
  params = model.init(jax.random.key(0), F, _block_params())
  lengths = (6, 1, 4, 5, 0, 3)
  h, _ = _data(seed=4, batch=len(lengths))
  mask = _mask(lengths)
  _, out = jax.jit(model.apply)(params, h, mask)
  selected = np.asarray(out.selected)
  for b, n in enumerate(lengths):
    want = routing.capacity_tokens(n, max_depth=M, capacity=capacity)
    assert tuple(selected[b].sum(0)) == want
  # Step r chooses among the tokens of step r - 1 only, the first among
  # the real ones; a token not selected at r is never selected again.
  np.testing.assert_array_equal(out.eligible[..., 0], mask)
  np.testing.assert_array_equal(out.eligible[..., 1:], selected[..., :-1])
  assert not np.any(selected & ~np.asarray(out.eligible))
  np.testing.assert_array_equal(
      selected, np.arange(M)[None, None] < np.asarray(out.steps)[..., None])
  np.testing.assert_array_equal(routing.block_tokens(out),
                                np.asarray(out.steps).sum(1))
  np.testing.assert_allclose(routing.mean_depth(out),
                             np.asarray(out.steps).sum() / mask.sum())


@pytest.mark.parametrize('selection', routing.SELECTIONS)
def test_padding_is_never_selected_and_never_changed(selection):
  model = _model(causal=True, selection=selection)
  params = model.init(jax.random.key(2), F, _block_params())
  h, c = _data()
  mask = _mask((6, 2, 0))                  # the last sequence is all padding
  junk = jnp.where(mask[..., None], h, 50.0)
  c = jnp.where(mask[..., None], c, 0.0)
  (v1, (h1, o1)), g1 = _grad(model)(params, h, c, mask)
  (v2, (h2, o2)), g2 = _grad(model)(params, junk, c, mask)
  np.testing.assert_array_equal(h2, jnp.where(mask[..., None], h2, junk))
  assert not np.any(np.asarray(o2.selected)[~mask])
  assert not np.any(np.asarray(o2.steps)[~mask])
  np.testing.assert_array_equal(h2[2], junk[2])
  np.testing.assert_array_equal(o1.steps, o2.steps)
  _close((jnp.where(mask[..., None], h1, 0.0), o1.logits, v1),
         (jnp.where(mask[..., None], h2, 0.0), o2.logits, v2), rtol=1e-12,
         atol=1e-14)
  _close(g1[0], g2[0], rtol=1e-9, atol=1e-12)


def _changed_tail(h, start):
  later = jax.random.normal(jax.random.key(9), h.shape, h.dtype)
  return h.at[:, start:].set(3.0 * later[:, start:])


def test_threshold_routing_is_causal_and_top_k_is_not():
  h, _ = _data(seed=5)
  other = _changed_tail(h, 3)
  for selection in routing.SELECTIONS:
    model = _model(causal=True, selection=selection)
    params = model.init(jax.random.key(2), F, _block_params())
    apply = jax.jit(model.apply)
    (h1, o1), (h2, o2) = apply(params, h), apply(params, other)
    same = np.allclose(h1[:, :3], h2[:, :3], rtol=0, atol=0) and np.all(
        o1.steps[:, :3] == o2.steps[:, :3])
    # Threshold routing reads each token alone and the block is causal;
    # top-k compares a token with the later ones of its sequence.
    assert same == (selection == 'threshold'), selection
  assert len(set(np.asarray(o1.steps).ravel().tolist())) >= 2


def test_jit_equals_no_jit_and_a_second_call_does_not_trace_again():
  def block(p, h, context):
    out = jax_block(p, h, context) + 0.5 * context.extra['memory'][:, None]
    if context.key is not None:      # dropout-like noise, a key per step
      out = out + 0.1 * jax.random.normal(context.key, h.shape, h.dtype)
    return out

  model = routing.per_token(block, max_depth=M)
  params = model.init(jax.random.key(2), F, _block_params())
  h, _ = _data()
  extra = {'memory': jax.random.normal(jax.random.key(6), (B, F),
                                       jnp.float64)}
  key = jax.random.key(0)
  apply = jax.jit(chex.assert_max_traces(model.apply, n=1))
  got = apply(params, h, _mask(), key=key, extra=extra)
  _close(got, model.apply(params, h, _mask(), key=key, extra=extra),
         rtol=1e-12, atol=1e-14)
  apply(params, h + 1.0, _mask((2, 3, 4)), key=jax.random.key(1),
        extra=extra)
  assert not np.allclose(got[0], apply(params, h, _mask(),
                                       key=jax.random.key(1),
                                       extra=extra)[0])
  plain = apply(params, h, _mask(), key=key, extra=jax.tree_util.tree_map(
      jnp.zeros_like, extra))
  assert not np.allclose(plain[0], got[0])


def test_params_tree_golden():
  block_params = _block_params()
  shapes = lambda tree: jax.tree_util.tree_map(jnp.shape, tree)
  for model, bias in [(_model(), 0.0), (_model(router_bias=-1.0), -1.0)]:
    params = model.init(jax.random.key(0), F, block_params)
    assert shapes(params) == {'block': shapes(block_params),
                              'router': {'kernel': (F, M), 'bias': (M,)}}
    assert params['router']['kernel'].dtype == jnp.float64
    np.testing.assert_array_equal(params['router']['bias'], bias)


def test_aux_loss_by_hand():
  # One sequence of three tokens, two steps: all eligible at step 0, tokens
  # 0 and 2 selected; then token 0 of those two.
  logits = jnp.array([[[1.0, 0.5], [-1.0, 0.0], [2.0, -3.0]]])
  selected = jnp.array([[[True, True], [False, False], [True, False]]])
  eligible = jnp.array([[[True, True], [True, False], [True, True]]])
  out = routing.RoutingOutput(steps=jnp.sum(selected, -1), logits=logits,
                              probs=jax.nn.sigmoid(logits),
                              selected=selected, eligible=eligible)
  sp = lambda x: math.log1p(math.exp(x))          # BCE = softplus(-+z)
  step0 = (sp(-1.0) + sp(-1.0) + sp(-2.0)) / 3    # y=1, y=0, y=1
  step1 = (sp(-0.5) + sp(-3.0)) / 2               # y=1, y=0
  np.testing.assert_allclose(routing.aux_loss(out), step0 + step1,
                             rtol=1e-14)
  assert float(routing.mean_depth(out)) == pytest.approx(3 / 3)
  assert routing.block_tokens(out).tolist() == [3]


def _one_line_error(match, fun, *args, **kwargs):
  with pytest.raises(ValueError, match=match) as info:
    fun(*args, **kwargs)
  assert '\n' not in str(info.value), str(info.value)


def test_bad_arguments_give_one_line_each():
  make = functools.partial(routing.per_token, jax_block)
  _one_line_error(r'max_depth must be a positive integer, got 0\.', make,
                  max_depth=0)
  for bad in (0.0, 1.5, -0.2, 'half', True):
    _one_line_error(r'capacity must be None, a fraction in \(0, 1\] or a '
                    r'sequence of them, got', make, max_depth=M,
                    capacity=bad)
  _one_line_error(r'capacity must have max_depth=3 fractions, one per step, '
                  r'got 2', make, max_depth=M, capacity=(1.0, 0.5))
  _one_line_error(r'capacity must not increase from step to step', make,
                  max_depth=M, capacity=(0.5, 1.0, 0.5))
  _one_line_error(r"gate must be one of \('sigmoid', 'logit'\), got 'tanh'",
                  make, max_depth=M, gate='tanh')
  _one_line_error(r"selection must be one of \('top_k', 'threshold'\)",
                  make, max_depth=M, selection='sample')
  _one_line_error(r'gate_scale must be a positive number or None, got 0',
                  make, max_depth=M, gate_scale=0)
  _one_line_error(r'length must be an integer >= 0, got -1',
                  routing.capacity_tokens, -1, max_depth=M)
  model = make(max_depth=M)
  params = model.init(jax.random.key(0), F, _block_params())
  h = jnp.zeros((2, T, F), jnp.float64)
  _one_line_error(r'per_token\.apply: h must be \[batch, time, features\] '
                  r'with time >= 1, got shape \(6, 3\)\.', model.apply,
                  params, h[0])
  _one_line_error(r'h has 5 features, the params were made for 3',
                  model.apply, params, jnp.zeros((2, T, 5), jnp.float64))
  _one_line_error(r'mask must be \[batch, time\] = \(2, 6\), got shape '
                  r'\(2, 3\)\.', model.apply, params, h,
                  jnp.ones((2, 3), bool))
  _one_line_error(r'every leaf of extra must lead with the batch axis',
                  model.apply, params, h, extra=jnp.zeros((3, 7)))
  shrink = routing.per_token(lambda p, h, c: h[..., :2], max_depth=M)
  _one_line_error(r"block must return the gathered h's shape \(2, 6, 3\) "
                  r'and dtype float64, got shape \(2, 6, 2\)', shrink.apply,
                  params, h)
