"""Adaptive depth against slow NumPy loops of UT-ACT and PonderNet halting.

The references run one example at a time, one position at a time, with
Python loops over the depth steps, from ACT's Eq. 5-10 (per position, as
the Universal Transformer's Sec. 2.2 applies them), PonderNet's P1-P5 per
position and PonderNet's P1-P4 over the pooled state, in NumPy (the block
and readout are written once against an array module ``xp``, so both
sides apply the same block). In float64 the implementation's values must
equal theirs to 1e-12, and its gradients their central differences along
a random direction per leaf.
"""

import functools

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import depth, loops, ponder

B, T, F, M, O = 3, 4, 3, 5, 2
EPS, TAU, BETA, LAMBDA_P = 0.05, 0.1, 0.5, 0.3
LENGTHS = (4, 2, 3)


def _mask(lengths=LENGTHS, t=T):
  return np.arange(t)[None, :] < np.asarray(lengths)[:, None]


def _sigmoid(xp, x):
  return 1.0 / (1.0 + xp.exp(-x))


def np_block(xp, p, h, mask, step):
  """One-head self-attention over the real positions, a residual tanh
  layer and a per-step embedding (a UT step timing signal)."""
  q, k, v = h @ p['wq'], h @ p['wk'], h @ p['wv']
  logits = q @ xp.swapaxes(k, -1, -2) * F ** -0.5
  logits = xp.where(mask[:, None, :], logits, -1e9)
  a = xp.exp(logits - logits.max(-1, keepdims=True))
  a = a / a.sum(-1, keepdims=True)
  return h + xp.tanh((a @ v) @ p['wo'] + p['b'][None, None]
                     + p['depth'][step][None, None])


def np_readout(xp, p, h, mask):
  """y = (mean of the real positions) W_r, one prediction per example."""
  m = mask[..., None].astype(h.dtype)
  # Finite for an example without a real position too: the loop runs the
  # readout on every row, and a NaN there would reach the gradients.
  return ((h * m).sum(1) / xp.maximum(m.sum(1), 1.0)) @ p['readout']


def jax_block(p, h, context):
  return np_block(jnp, p, h, context.mask, context.step)


def jax_readout(p, h, context):
  return np_readout(jnp, p, h, context.mask)


def _halting_value(p, features):
  return _sigmoid(np, features @ p['halting']['kernel'][:, 0]
                  + p['halting']['bias'][0])                          # (5)


def ref_per_token(p, h, mask, reads, rule='act', mode='train'):
  """Per-position halting of ONE example ``[T, F]``: ACT Eq. 5-10 (UT
  dynamic halting) or PonderNet's P1, P2, P4, P5 for each position; a
  halted position keeps its state, which the block still reads as key and
  value."""
  s = [h[t] for t in range(T)]
  acc = [np.zeros(F) for _ in range(T)]
  cum, big_n, rem = [0.0] * T, [0] * T, [0.0] * T
  unhalted, probs = [1.0] * T, [[] for _ in range(T)]
  pondering = [bool(mask[t]) for t in range(T)]
  for n in range(1, M + 1):
    if not any(pondering):
      break
    new = np_block(np, p['block'], np.stack(s)[None], mask[None], n - 1)[0]
    for t in range(T):
      if not pondering[t]:
        continue
      h_n = _halting_value(p, s[t] if reads == 'input' else new[t])  # (5, P1)
      big_n[t] = n
      if rule == 'pondernet':
        last = cum[t] + h_n * unhalted[t] >= 1 - EPS or n == M        # (P4)
        lam = 1.0 if last else h_n                                    # (P2)
        p_n = lam * unhalted[t]                                       # (P2)
        probs[t].append(p_n)
        cum[t], unhalted[t] = cum[t] + p_n, unhalted[t] * (1 - lam)
        halts = last or (mode == 'median' and cum[t] >= 0.5)         # (P5)
        if mode == 'train':
          acc[t] = acc[t] + p_n * new[t]
        elif halts:
          acc[t] = new[t]                  # inference passes s^N on (P5)
        if halts:
          rem[t], pondering[t] = p_n, False
      elif cum[t] + h_n >= 1 - EPS or n == M:                         # (7, 13)
        rem[t] = 1 - cum[t]                                           # (8)
        acc[t] = acc[t] + rem[t] * new[t]                             # (6, 9)
        pondering[t] = False
      else:
        cum[t] = cum[t] + h_n
        acc[t] = acc[t] + h_n * new[t]                                # (6, 9)
      s[t] = new[t]
  out = np.stack([acc[t] if mask[t] else h[t] for t in range(T)])
  if rule == 'pondernet':
    ponder_t = [sum(i * p_n for i, p_n in enumerate(probs[t], 1))
                for t in range(T)]                          # sum_n n p_n
  else:
    ponder_t = [big_n[t] + rem[t] if mask[t] else 0.0
                for t in range(T)]                                    # (10)
  return dict(out=out, steps=big_n, remainder=rem, ponder=ponder_t,
              probs=probs)


def ref_per_example(p, h, mask, rule, mode='train', reads='output'):
  """Depth halting of ONE example ``[T, F]`` over its pooled state:
  PonderNet's P1, P2, P4, P5 or ACT's Eq. 5-10 on lambda_n."""
  if not mask.any():
    return dict(out=h, steps=0, probs=[], outputs=[], ponder=0.0,
                output=None)
  s, cum, unhalted = h[None], 0.0, 1.0
  states, outputs, probs, median, rem = [], [], [], None, 0.0
  for n in range(1, M + 1):
    new = np_block(np, p['block'], s, mask[None], n - 1)
    new = np.where(mask[None, :, None], new, s)     # padding keeps its input
    src = new if reads == 'output' else s
    pooled = sum(src[0, t] for t in range(T) if mask[t]) / mask.sum()
    lam = _halting_value(p, pooled)                                   # (P1)
    crossed = cum + (lam * unhalted if rule == 'pondernet' else lam)
    last = crossed >= 1 - EPS or n == M                               # (P4, 7)
    if rule == 'pondernet':
      lam = 1.0 if last else lam                                      # (P2)
      probs.append(lam * unhalted)                                    # (P2)
      cum, unhalted = cum + probs[-1], unhalted * (1 - lam)
      if median is None and cum >= 0.5:                               # (P5)
        median = n
    else:
      probs.append(1 - cum if last else lam)                          # (6, 8)
      rem = 1 - cum if last else rem
      cum = cum if last else cum + lam
    states.append(new[0])
    outputs.append(np_readout(np, p['block'], new, mask[None])[0])
    s = new
    if last or (mode == 'median' and median == n):
      break
  if mode == 'median':
    return dict(out=states[-1], steps=len(probs), probs=probs,
                outputs=outputs, output=outputs[-1], ponder=None)
  ponder_n = (sum(i * pn for i, pn in enumerate(probs, 1))
              if rule == 'pondernet' else len(probs) + rem)
  return dict(out=sum(pn * sn for pn, sn in zip(probs, states)),
              output=sum(pn * yn for pn, yn in zip(probs, outputs)),
              steps=len(probs), probs=probs, outputs=outputs,
              states=states, ponder=ponder_n)


def ref_token_loss(p, h, c, mask, reads):
  """The loss of :func:`token_loss` from the reference."""
  total = 0.0
  for b in range(h.shape[0]):
    r = ref_per_token(p, h[b], mask[b], reads)
    total += np.sum(c[b] * r['out']) + TAU * sum(r['ponder'])
  return total


def ref_kl(probs):
  """KL(p || p_G) of one halting distribution (P3), p_G(n) = lambda_p (1 -
  lambda_p)^(n - 1) not renormalised."""
  prior = [LAMBDA_P * (1 - LAMBDA_P) ** n for n in range(len(probs))]
  return sum(pn * np.log(pn / qn) for pn, qn in zip(probs, prior) if pn > 0)


def ref_token_pondernet_loss(p, h, c, mask, reads):
  """The loss of :func:`token_pondernet_loss` from the reference: the
  mean field's task term, the ponder and the KL of every real position."""
  total = 0.0
  for b in range(h.shape[0]):
    r = ref_per_token(p, h[b], mask[b], reads, 'pondernet')
    kl = sum(ref_kl(r['probs'][t]) for t in range(T) if mask[b, t])  # (P3)
    total += np.sum(c[b] * r['out']) + TAU * sum(r['ponder']) + BETA * kl
  return total


def ref_example_loss(p, h, c, targets, mask, rule, reads):
  """The loss of :func:`example_loss` from the reference (P3 and more)."""
  total = 0.0
  for b in range(h.shape[0]):
    r = ref_per_example(p, h[b], mask[b], rule, reads=reads)
    probs = r['probs']
    prior = [LAMBDA_P * (1 - LAMBDA_P) ** n for n in range(len(probs))]
    rec = sum(pn * np.sum((yn - targets[b]) ** 2)
              for pn, yn in zip(probs, r['outputs']))                 # (P3)
    kl = sum(pn * np.log(pn / qn) for pn, qn in zip(probs, prior))   # (P3)
    out = np.where(mask[b, :, None], r['out'], h[b])
    total += np.sum(c[b] * out) + rec + BETA * kl + TAU * r['ponder']
  return total


def assert_gradients_by_central_differences(loss, grads, args, seed=0,
                                            delta=1e-6):
  """``grads`` (of every leaf of ``args``) against central differences of
  the NumPy ``loss``, along one random direction per leaf (as
  ``jax.test_util.check_grads`` does)."""
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


def _block_params(seed=0, scale=0.8):
  keys = jax.random.split(jax.random.key(seed), 7)
  normal = lambda k, shape: scale * jax.random.normal(k, shape, jnp.float64)
  return {'wq': normal(keys[0], (F, F)), 'wk': normal(keys[1], (F, F)),
          'wv': normal(keys[2], (F, F)), 'wo': normal(keys[3], (F, F)),
          'b': normal(keys[4], (F,)), 'depth': normal(keys[5], (M, F)),
          'readout': normal(keys[6], (F, O))}


def _setup(model, seed=0, halting_scale=3.0):
  params = model.init(jax.random.key(seed + 10), F, _block_params(seed))
  # Spread the halting unit so positions take visibly different depths.
  params['halting']['kernel'] = halting_scale * params['halting']['kernel']
  return params


def _data(seed=1, batch=B):
  k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
  h = jax.random.normal(k1, (batch, T, F), jnp.float64)
  c = jax.random.normal(k2, (batch, T, F), jnp.float64)
  targets = jax.random.normal(k3, (batch, O), jnp.float64)
  return h, c, targets


def _np(tree):
  return jax.tree_util.tree_map(np.asarray, tree)


def _close(a, b, **kw):
  jax.tree_util.tree_map(
      lambda x, y: np.testing.assert_allclose(x, y, **kw), a, b)


def squared_error(y_hat, y):
  return (y_hat - y) ** 2


def token_loss(model, params, h, c, mask):
  out_h, out = model.apply(params, h, mask)
  return jnp.sum(c * out_h) + TAU * jnp.sum(out.ponder), (out_h, out)


def token_pondernet_loss(model, params, h, c, mask):
  out_h, out = model.apply(params, h, mask)
  kl = ponder.kl_to_geometric(out, LAMBDA_P, mask)        # [batch] (P3)
  value = (jnp.sum(c * out_h) + TAU * jnp.sum(out.ponder)
           + BETA * jnp.sum(kl))
  return value, (out_h, out)


def example_loss(model, params, h, c, targets, mask, key=None):
  out_h, out = model.apply(params, h, mask, key=key)
  rec = ponder.reconstruction_loss(out, targets, squared_error)
  kl = ponder.kl_to_geometric(out, LAMBDA_P)
  value = (jnp.sum(c * out_h) + jnp.sum(rec + BETA * kl)
           + TAU * jnp.sum(out.ponder))
  return value, (out_h, out)


@functools.cache
def _grad(loss, model):
  return jax.jit(jax.value_and_grad(functools.partial(loss, model),
                                    argnums=(0, 1), has_aux=True))


@pytest.mark.parametrize('reads', depth.HALTING_READS)
def test_per_token_matches_the_numpy_reference(reads):
  model = depth.per_token(jax_block, max_depth=M, epsilon=EPS,
                          halting_bias=-0.5, halting_reads=reads)
  params = _setup(model)
  h, c, _ = _data()
  mask = _mask()
  (value, (out_h, out)), grads = _grad(token_loss, model)(params, h, c,
                                                          mask)
  p, hn = _np(params), np.asarray(h)
  refs = [ref_per_token(p, hn[b], mask[b], reads) for b in range(B)]
  np.testing.assert_array_equal(out.steps, [r['steps'] for r in refs])
  assert len(set(np.asarray(out.steps)[mask].tolist())) >= 3
  assert int(out.depth) == max(max(r['steps']) for r in refs)
  _close(out_h, np.stack([r['out'] for r in refs]), rtol=1e-12, atol=1e-12)
  _close(out.remainder, [r['remainder'] for r in refs], atol=1e-12)
  _close(out.ponder, [r['ponder'] for r in refs], atol=1e-12)
  ref_loss = functools.partial(ref_token_loss, c=np.asarray(c), mask=mask,
                               reads=reads)
  np.testing.assert_allclose(value, ref_loss(p, hn), rtol=1e-12)
  assert_gradients_by_central_differences(ref_loss, grads, (params, h))
  # Every part gets a gradient, the halting unit and the step embedding too
  # (the readout is per_example's).
  used = {k: g for k, g in grads[0]['block'].items() if k != 'readout'}
  assert all(np.any(np.asarray(g) != 0) for g in jax.tree_util.tree_leaves(
      (used, grads[0]['halting'], grads[1])))


# PonderNet per position: a halting bias per reading (and the halting
# unit scaled by 1.5) under which the real positions take 1, 2, 3 and 5
# steps, the last ones at the bound (lambda := 1 there, P2).
TOKEN_PONDER_BIAS = {'output': 0.5, 'input': 0.0}
TOKEN_PONDER_SCALE = 1.5


def _token_pondernet(reads='output', mode='train', loop=loops.LoopConfig(),
                     block=jax_block, halting_bias=None):
  if halting_bias is None:
    halting_bias = TOKEN_PONDER_BIAS[reads]
  return depth.per_token(block, max_depth=M, halting='pondernet',
                         epsilon=EPS, halting_bias=halting_bias,
                         inference=mode, halting_reads=reads, loop=loop)


@pytest.mark.parametrize('reads', depth.HALTING_READS)
def test_per_token_pondernet_matches_the_numpy_reference(reads):
  model = _token_pondernet(reads)
  params = _setup(model, halting_scale=TOKEN_PONDER_SCALE)
  h, c, _ = _data()
  mask = _mask()
  (value, (out_h, out)), grads = _grad(token_pondernet_loss, model)(
      params, h, c, mask)
  p, hn = _np(params), np.asarray(h)
  refs = [ref_per_token(p, hn[b], mask[b], reads, 'pondernet')
          for b in range(B)]
  np.testing.assert_array_equal(out.steps, [r['steps'] for r in refs])
  assert len(set(np.asarray(out.steps)[mask].tolist())) >= 3
  assert int(out.depth) == M == max(max(r['steps']) for r in refs)
  _close(out_h, np.stack([r['out'] for r in refs]), rtol=1e-12, atol=1e-12)
  _close(out.probs, np.stack([_padded(r['probs'], M) for r in refs]),
         atol=1e-12)
  # Each real position's p_n sum to 1 (P2); padding has none.
  _close(jnp.sum(out.probs, axis=-1), mask.astype(np.float64), atol=1e-12)
  _close(out.remainder, [r['remainder'] for r in refs], atol=1e-12)
  _close(out.ponder, [r['ponder'] for r in refs], atol=1e-12)
  # The KL to the geometric prior per position (P3), summed per example;
  # padding, which takes no step, adds nothing with or without the mask.
  want_kl = [sum(ref_kl(r['probs'][t]) for t in range(T) if mask[b, t])
             for b, r in enumerate(refs)]
  _close(ponder.kl_to_geometric(out, LAMBDA_P, mask), want_kl, rtol=1e-12)
  _close(ponder.kl_to_geometric(out, LAMBDA_P), want_kl, rtol=1e-12)
  np.testing.assert_allclose(
      depth.mean_ponder(out), np.asarray(out.ponder)[mask].mean(),
      rtol=1e-12)
  np.testing.assert_allclose(
      depth.mean_depth(out), np.asarray(out.steps)[mask].mean(), rtol=1e-12)
  ref_loss = functools.partial(ref_token_pondernet_loss, c=np.asarray(c),
                               mask=mask, reads=reads)
  np.testing.assert_allclose(value, ref_loss(p, hn), rtol=1e-12)
  assert_gradients_by_central_differences(ref_loss, grads, (params, h))
  used = {k: g for k, g in grads[0]['block'].items() if k != 'readout'}
  assert all(np.any(np.asarray(g) != 0) for g in jax.tree_util.tree_leaves(
      (used, grads[0]['halting'], grads[1])))


def test_per_token_pondernet_median_halts_each_position_at_one_half():
  model = _token_pondernet(mode='median')
  params = _setup(model, halting_scale=TOKEN_PONDER_SCALE)
  h, _, _ = _data()
  mask = _mask()
  out_h, out = jax.jit(model.apply)(params, h, mask)
  p, hn = _np(params), np.asarray(h)
  refs = [ref_per_token(p, hn[b], mask[b], 'output', 'pondernet', 'median')
          for b in range(B)]
  train = [ref_per_token(p, hn[b], mask[b], 'output', 'pondernet')
           for b in range(B)]
  np.testing.assert_array_equal(out.steps, [r['steps'] for r in refs])
  # Some position stops earlier than in training, and the others then
  # read its earlier, frozen state.
  assert np.any(np.asarray(out.steps) < [r['steps'] for r in train])
  _close(out_h, np.stack([r['out'] for r in refs]), rtol=1e-12, atol=1e-12)
  _close(out.probs, np.stack([_padded(r['probs'], M) for r in refs]),
         atol=1e-12)
  _close(out.ponder, [r['ponder'] for r in refs], atol=1e-12)


def local_block(p, h, context):
  """No attention: each position's states depend on its own input only."""
  return h + jnp.tanh(h @ p['wo'] + p['b'][None, None]
                      + p['depth'][context.step][None, None])


def test_per_token_pondernet_sampling_is_keyed_and_stops_on_the_training_path():
  train = _token_pondernet(block=local_block, halting_bias=0.0)
  params = _setup(train, halting_scale=1.0)
  h, _, _ = _data()
  mask = _mask()
  _, want = train.apply(params, h, mask)
  model = _token_pondernet(mode='sample', block=local_block, halting_bias=0.0)
  apply = jax.jit(chex.assert_max_traces(model.apply, n=1))
  # The states of the training path, s^k: positions are independent here.
  path, s = [], h
  for n in range(M):
    s = local_block(params['block'], s, depth.BlockContext(
        mask=mask, step=jnp.asarray(n, jnp.int32), key=None, extra=None))
    path.append(s)
  seen = set()
  for seed in range(4):
    key = jax.random.key(seed)
    out_h, out = apply(params, h, mask, key=key)
    _close(apply(params, h, mask, key=key), (out_h, out), rtol=0, atol=0)
    steps = np.asarray(out.steps)
    np.testing.assert_array_equal(steps[~mask], 0)
    np.testing.assert_array_equal(np.asarray(out_h)[~mask],
                                  np.asarray(h)[~mask])
    for b, t in zip(*np.nonzero(mask)):
      k = int(steps[b, t])
      assert 1 <= k <= int(want.steps[b, t])   # cut short by the draw (P5)
      _close(out_h[b, t], path[k - 1][b, t], atol=1e-12)   # s^N passed on
      _close(out.probs[b, t, :k], want.probs[b, t, :k], atol=1e-12)
      np.testing.assert_array_equal(out.probs[b, t, k:], 0.0)
    seen.add(tuple(steps.ravel().tolist()))
  assert len(seen) > 1


def _example_model(rule, mode='train', loop=loops.LoopConfig(),
                   halting_bias=None, **kw):
  if halting_bias is None:    # spread: examples take 3, 4, 5 steps
    halting_bias = {'pondernet': 2.0, 'act': 1.0}[rule]
  return depth.per_example(jax_block, max_depth=M, halting=rule,
                           epsilon=EPS, halting_bias=halting_bias,
                           inference=mode,
                           readout=jax_readout, loop=loop, **kw)


def _example_refs(params, h, rule, mode='train', mask=None, reads='output'):
  mask = _mask() if mask is None else mask
  p, hn = _np(params), np.asarray(h)
  return [ref_per_example(p, hn[b], mask[b], rule, mode, reads=reads)
          for b in range(h.shape[0])]


def _padded(values, width):
  return np.stack([np.concatenate([np.asarray(v, float).reshape(-1),
                                   np.zeros(width - len(v))])
                   for v in values])


@pytest.mark.parametrize('rule,reads', [('pondernet', 'output'),
                                        ('act', 'input')])
def test_per_example_matches_the_numpy_reference(rule, reads):
  model = _example_model(rule, halting_reads=reads)
  params = _setup(model)
  h, c, targets = _data(seed=2, batch=4)
  mask = _mask((4, 2, 3, 0))         # the last example has no real position
  (value, (out_h, out)), grads = _grad(example_loss, model)(
      params, h, c, targets, mask)
  refs = _example_refs(params, h, rule, mask=mask, reads=reads)
  np.testing.assert_array_equal(out.steps, [r['steps'] for r in refs])
  assert len(set(np.asarray(out.steps).tolist())) >= 3
  assert int(out.depth) == max(r['steps'] for r in refs)
  _close(out_h, np.stack([np.where(mask[b, :, None], r['out'], h[b])
                          for b, r in enumerate(refs)]), atol=1e-12)
  _close(out.probs, _padded([r['probs'] for r in refs], M), atol=1e-12)
  _close(out.ponder, [r['ponder'] for r in refs], atol=1e-12)
  _close(out.output[:3], np.stack([r['output'] for r in refs[:3]]),
         atol=1e-12)
  for b, r in enumerate(refs[:3]):
    _close(out.outputs[b, :r['steps']], np.stack(r['outputs']), atol=1e-12)
    np.testing.assert_array_equal(out.outputs[b, r['steps']:], 0.0)
  np.testing.assert_array_equal(out_h[3], h[3])     # empty: untouched

  ref_loss = functools.partial(
      ref_example_loss, c=np.asarray(c), targets=np.asarray(targets),
      mask=mask, rule=rule, reads=reads)
  np.testing.assert_allclose(value, ref_loss(_np(params), np.asarray(h)),
                             rtol=1e-12)
  assert_gradients_by_central_differences(ref_loss, grads, (params, h))


def test_median_inference_halts_where_the_mass_first_reaches_one_half():
  model = _example_model('pondernet', 'median')
  params = _setup(model)
  h, _, _ = _data(seed=2)
  out_h, out = jax.jit(model.apply)(params, h, _mask())
  refs = _example_refs(params, h, 'pondernet', 'median')
  np.testing.assert_array_equal(out.steps, [r['steps'] for r in refs])
  _close(out_h, np.stack([np.where(_mask()[b, :, None], r['out'], h[b])
                          for b, r in enumerate(refs)]), atol=1e-12)
  _close(out.output, np.stack([r['output'] for r in refs]), atol=1e-12)
  _close(out.probs, _padded([r['probs'] for r in refs], M), atol=1e-12)


def test_sampled_inference_is_keyed_and_stops_on_the_training_path():
  model = _example_model('pondernet', 'sample')
  params = _setup(model, halting_scale=1.0)
  h, _, _ = _data(seed=2)
  apply = jax.jit(model.apply)
  refs = _example_refs(params, h, 'pondernet')
  seen = set()
  for seed in range(4):
    key = jax.random.key(seed)
    out_h, out = apply(params, h, _mask(), key=key)
    np.testing.assert_array_equal(
        apply(params, h, _mask(), key=key)[1].steps, out.steps)
    for b, r in enumerate(refs):
      k = int(out.steps[b])
      assert 1 <= k <= r['steps']    # the training path, cut by the draw
      # The state and prediction of step k are passed on (P5).
      _close(out_h[b], np.where(_mask()[b, :, None], r['states'][k - 1],
                                h[b]), atol=1e-12)
      _close(out.output[b], r['outputs'][k - 1], atol=1e-12)
      _close(out.probs[b, :k], r['probs'][:k], atol=1e-12)
    seen.add(tuple(np.asarray(out.steps).tolist()))
  assert len(seen) > 1


def _loop_pair(make, checkpoints=2, unroll=1):
  return (make(loops.LoopConfig('while', checkpoints=checkpoints,
                                unroll=unroll)),
          make(loops.LoopConfig('scan')))


@pytest.mark.parametrize('unroll', [1, 3])
@pytest.mark.parametrize('kind', ['token', 'token_pondernet', 'example'])
def test_while_loop_equals_masked_scan_values_and_gradients(kind, unroll):
  # Two checkpoint slots: depths past 2 run on thinned slots; unroll 3
  # tests once per 3 applications and idles past the deepest position.
  pair = functools.partial(_loop_pair, unroll=unroll)
  if kind == 'token':
    fast, slow = pair(lambda loop: depth.per_token(
        jax_block, max_depth=M, epsilon=EPS, halting_bias=-0.5, loop=loop))
    loss, extra = token_loss, ()
  elif kind == 'token_pondernet':
    fast, slow = pair(lambda loop: _token_pondernet(loop=loop))
    loss, extra = token_pondernet_loss, ()
  else:
    fast, slow = pair(lambda loop: _example_model('pondernet',
                                                        loop=loop))
    loss, extra = example_loss, (_data(seed=3)[2],)
  params = _setup(fast)
  h, c, _ = _data(seed=3)
  mask = _mask()
  (vw, (hw, ow)), gw = _grad(loss, fast)(params, h, c, *extra, mask)
  (vs, (hs, os_)), gs = _grad(loss, slow)(params, h, c, *extra, mask)
  assert int(ow.depth) > 2
  np.testing.assert_array_equal(ow.steps, os_.steps)
  _close((hw, ow), (hs, os_), rtol=1e-12, atol=1e-14)
  np.testing.assert_allclose(vw, vs, rtol=1e-12)
  _close(gw, gs, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize('kind', ['token', 'token_pondernet', 'example'])
def test_compacted_rows_equal_the_full_batch(kind):
  def make(loop):
    if kind == 'token':
      return depth.per_token(jax_block, max_depth=M, epsilon=EPS,
                             halting_bias=-0.5, loop=loop)
    if kind == 'token_pondernet':
      return _token_pondernet(loop=loop)
    return _example_model('act', loop=loop)

  assert loops.stage_sizes((8,), 2) == (8, 4, 2)
  compact, slow = make(loops.LoopConfig(compact_rows=2)), make('scan')
  params = _setup(compact)
  h = jax.random.normal(jax.random.key(5), (8, T, F), jnp.float64)
  mask = _mask((4, 1, 2, 3, 4, 4, 0, 2))
  got, want = jax.jit(compact.apply)(params, h, mask), slow.apply(params, h,
                                                                 mask)
  assert len(set(np.asarray(want[1].steps).ravel().tolist())) > 2
  np.testing.assert_array_equal(got[1].steps, want[1].steps)
  _close(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize('kind', ['token', 'token_pondernet', 'example'])
def test_padding_neither_counts_nor_extends_the_loop(kind):
  # Settings where every real position (or example) halts before M.
  if kind == 'token':
    model = depth.per_token(jax_block, max_depth=M, epsilon=EPS,
                            halting_bias=3.0)
    loss, extra = token_loss, ()
  elif kind == 'token_pondernet':
    model = _token_pondernet(halting_bias=5.0)
    loss, extra = token_pondernet_loss, ()
  else:
    model = _example_model('pondernet', halting_bias=3.0)
    loss, extra = example_loss, (_data()[2],)
  params = _setup(model, halting_scale=1.0)
  h, c, _ = _data()
  mask = _mask()
  # Padding that would never halt if it were counted (halting value ~ 0),
  # and whose cost, if counted, would dominate.
  w = np.asarray(params['halting']['kernel'][:, 0])
  junk = jnp.where(mask[..., None], h, -50.0 * jnp.asarray(np.sign(w)))
  (v1, (h1, o1)), g1 = _grad(loss, model)(params, h, c, *extra, mask)
  (v2, (h2, o2)), g2 = _grad(loss, model)(params, junk, c, *extra, mask)
  assert int(o2.depth) < M
  assert int(o2.depth) == int(np.max(o2.steps))
  np.testing.assert_array_equal(o1.steps, o2.steps)
  _close(jnp.where(mask[..., None], h1, 0.0),
         jnp.where(mask[..., None], h2, 0.0), rtol=1e-12, atol=1e-14)
  np.testing.assert_array_equal(h2, jnp.where(mask[..., None], h2, junk))
  _close(o1.ponder, o2.ponder, rtol=1e-12)
  _close(g1[0], g2[0], rtol=1e-9, atol=1e-12)
  if kind.startswith('token'):
    assert np.all(np.asarray(o2.steps)[~mask] == 0)
    assert np.all(np.asarray(o2.ponder)[~mask] == 0)
    np.testing.assert_allclose(
        depth.mean_ponder(o2), np.asarray(o2.ponder)[mask].mean(),
        rtol=1e-12)
    np.testing.assert_allclose(
        depth.mean_depth(o2), np.asarray(o2.steps)[mask].mean(), rtol=1e-12)
  else:
    took = np.asarray(o2.steps) > 0
    np.testing.assert_allclose(
        depth.mean_depth(o2), np.asarray(o2.steps)[took].mean(), rtol=1e-12)
  assert depth.mean_depth(o2).dtype == o2.ponder.dtype
  assert 1.0 <= float(depth.mean_depth(o2)) <= int(o2.depth)


def test_mean_depth_leaves_out_what_took_no_step():
  out = depth.ExampleDepthOutput(
      output=None, outputs=None, probs=jnp.zeros((3, 4)),
      steps=jnp.array([0, 3, 4]), ponder=jnp.zeros(3, jnp.float32),
      depth=jnp.array(4))
  assert float(depth.mean_depth(out)) == 3.5
  assert float(depth.mean_depth(out._replace(steps=jnp.zeros(3, int)))) == 0


def test_extra_and_key_reach_the_block_and_compaction_gathers_extra():
  def block(p, h, context):
    out = jax_block(p, h, context) + 0.5 * context.extra['memory'][:, None]
    if context.key is not None:      # dropout-like noise, a key per step
      out = out + 0.1 * jax.random.normal(context.key, h.shape, h.dtype)
    return out

  def make(loop):
    return depth.per_example(block, max_depth=M, halting='act',
                             halting_bias=1.0, loop=loop)

  compact, slow = make(loops.LoopConfig(compact_rows=2)), make('scan')
  params = _setup(compact)
  h = jax.random.normal(jax.random.key(5), (8, T, F), jnp.float64)
  mask = _mask((4, 1, 2, 3, 4, 4, 0, 2))
  extra = {'memory': jax.random.normal(jax.random.key(6), (8, F),
                                       jnp.float64)}
  apply = jax.jit(chex.assert_max_traces(compact.apply, n=1))
  got = apply(params, h, mask, extra=extra)
  want = slow.apply(params, h, mask, extra=extra)
  assert len(set(np.asarray(want[1].steps).tolist())) > 2
  _close(got, want, rtol=1e-12, atol=1e-14)
  plain = slow.apply(params, h, mask, extra=jax.tree_util.tree_map(
      jnp.zeros_like, extra))
  assert not np.allclose(plain[0], want[0])
  # A second call with other values does not trace again.
  apply(params, h + 1.0, mask, extra=extra)
  keyed = jax.jit(slow.apply)
  one = keyed(params, h, mask, key=jax.random.key(0), extra=extra)
  _close(one, keyed(params, h, mask, key=jax.random.key(0), extra=extra),
         rtol=0, atol=0)
  assert not np.allclose(
      one[0], keyed(params, h, mask, key=jax.random.key(1), extra=extra)[0])


class AttentionBlock(nn.Module):
  """A plain pre-norm Transformer encoder block of Flax's own layers."""
  features: int
  heads: int = 2

  @nn.compact
  def __call__(self, h, mask):
    attention_mask = nn.make_attention_mask(mask, mask)
    h = h + nn.MultiHeadDotProductAttention(num_heads=self.heads)(
        nn.LayerNorm()(h), mask=attention_mask)
    y = nn.Dense(self.features)(nn.gelu(nn.Dense(2 * self.features)(
        nn.LayerNorm()(h))))
    return h + y


@pytest.mark.parametrize('kind', ['token', 'example'])
def test_a_flax_attention_block_through_module_apply(kind):
  features = 8
  module = AttentionBlock(features)
  h = jax.random.normal(jax.random.key(0), (3, 5, features), jnp.float32)
  mask = jnp.arange(5)[None] < jnp.array([[5], [3], [1]])
  block_params = module.init(jax.random.key(1), h, mask)['params']

  def block(params, h, context):
    return module.apply({'params': params}, h, context.mask)

  def make(loop):
    if kind == 'token':
      return depth.per_token(block, max_depth=6, halting_bias=-1.0,
                             loop=loop)
    return depth.per_example(block, max_depth=6, halting_bias=-1.0,
                             loop=loop)

  fast, slow = _loop_pair(make)
  params = fast.init(jax.random.key(2), features, block_params)
  params['halting']['kernel'] = 4.0 * params['halting']['kernel']

  def loss(model, params, h):
    out_h, out = model.apply(params, h, mask)
    return jnp.sum(jnp.sin(out_h)) + 0.1 * depth.mean_ponder(out), out

  (vw, ow), gw = jax.jit(jax.value_and_grad(
      functools.partial(loss, fast), has_aux=True))(params, h)
  (vs, os_), gs = jax.jit(jax.value_and_grad(
      functools.partial(loss, slow), has_aux=True))(params, h)
  assert ow.ponder.dtype == jnp.float32
  assert len(set(np.asarray(ow.steps).ravel().tolist())) > 1
  np.testing.assert_array_equal(ow.steps, os_.steps)
  np.testing.assert_allclose(vw, vs, rtol=1e-5)
  _close(gw, gs, rtol=1e-4, atol=1e-6)


def test_params_tree_golden():
  block_params = _block_params()
  shapes = lambda tree: jax.tree_util.tree_map(jnp.shape, tree)
  for model, bias in [
      (depth.per_token(jax_block, max_depth=M), 1.0),
      (depth.per_token(jax_block, max_depth=M, halting='pondernet'), 0.0),
      (depth.per_example(jax_block, max_depth=M), 0.0),
      (depth.per_example(jax_block, max_depth=M, halting='act'), 1.0)]:
    params = model.init(jax.random.key(0), F, block_params)
    assert shapes(params) == {'block': shapes(block_params),
                              'halting': {'kernel': (F, 1), 'bias': (1,)}}
    assert params['halting']['kernel'].dtype == jnp.float64
    assert float(params['halting']['bias'][0]) == bias


def _one_line_error(match, fun, *args, **kwargs):
  with pytest.raises(ValueError, match=match) as info:
    fun(*args, **kwargs)
  assert '\n' not in str(info.value), str(info.value)


def test_bad_arguments_give_one_line_each():
  per_token = functools.partial(depth.per_token, jax_block)
  _one_line_error(r'max_depth must be a positive integer, got 0\.',
                  per_token, max_depth=0)
  _one_line_error(r'max_depth must be a positive integer, got -2\.',
                  depth.per_example, jax_block, max_depth=-2)
  for bad in (0.0, 1.0, -0.1, 1.5):
    _one_line_error(r'epsilon must be a number in \(0, 1\), got',
                    per_token, max_depth=M, epsilon=bad)
  _one_line_error(r'epsilon must be a number in \[0, 1\), got 1\.0\.',
                  depth.per_example, jax_block, max_depth=M, epsilon=1.0)
  _one_line_error(r'epsilon must be a number in \(0, 1\), got 0\.0\.',
                  depth.per_example, jax_block, max_depth=M, halting='act',
                  epsilon=0.0)
  _one_line_error(r"halting_reads must be one of \('input', 'output'\)",
                  per_token, max_depth=M, halting_reads='state')
  _one_line_error(r"inference must be 'train' with halting='act'",
                  depth.per_example, jax_block, max_depth=M, halting='act',
                  inference='sample')
  _one_line_error(r'block must be a function', depth.per_token, None,
                  max_depth=M)
  _one_line_error(r"halting must be one of \('pondernet', 'act'\), got "
                  r"'geometric'\.", per_token, max_depth=M,
                  halting='geometric')
  _one_line_error(r"inference must be 'train' with halting='act'",
                  per_token, max_depth=M, inference='median')
  _one_line_error(r'epsilon must be a number in \[0, 1\), got 1\.0\.',
                  per_token, max_depth=M, halting='pondernet', epsilon=1.0)

  model = per_token(max_depth=M)
  params = model.init(jax.random.key(0), F, _block_params())
  h = jnp.zeros((2, T, F), jnp.float64)
  _one_line_error(r'per_token\.apply: h must be \[batch, time, features\], '
                  r'got shape \(4, 3\)\.', model.apply, params, h[0])
  _one_line_error(r'h has 5 features, the params were made for 3',
                  model.apply, params, jnp.zeros((2, T, 5), jnp.float64))
  _one_line_error(r'mask must be \[batch, time\] = \(2, 4\), got shape '
                  r'\(2, 3\)\.', model.apply, params, h,
                  jnp.ones((2, 3), bool))
  _one_line_error(r'mask must be \[batch, time\]', model.apply, params, h,
                  jnp.ones((2,), bool))
  shrink = depth.per_token(lambda p, h, c: h[..., :2], max_depth=M)
  _one_line_error(r"block must return h's shape \(2, 4, 3\) and dtype "
                  r'float64, got shape \(2, 4, 2\)', shrink.apply, params, h)
  sample = depth.per_example(jax_block, max_depth=M, inference='sample')
  _one_line_error(r'key is None; pass key=', sample.apply, params, h)
  sample = per_token(max_depth=M, halting='pondernet', inference='sample')
  _one_line_error(r'key is None; pass key=', sample.apply, params, h)
  _one_line_error(r'every leaf of extra must lead with the batch axis',
                  model.apply, params, h, extra=jnp.zeros((3, 7)))
