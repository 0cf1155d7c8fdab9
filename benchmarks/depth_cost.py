r"""Cost of adaptive depth: the halting loop vs masked scans vs an oracle.

Times one jitted train step (the trainer's own ``train_step``: forward,
backward and Adam update) of a shared pre-LayerNorm Transformer block
(multi-head self-attention with the padding mask, then a 4x MLP) applied
to its realised depth by :mod:`vcrnn_jax.depth`, side by side in one run:

  (a) ``while``: the halting loop, ``depth.per_token`` (UT-ACT per
      position) or ``depth.per_example`` (ACT over the pooled state), with
      ``loops.LoopConfig()`` (8 backward slots, no compaction);
  (b) ``scan``: the same with ``loop='scan'``, the masked ``lax.scan`` over
      all ``max_depth`` steps (every step computes the block);
  (c) ``anchor``: a ``lax.scan`` over ``max_depth`` whose step is a
      ``lax.cond`` that skips the block once every example has halted: the
      approach of the public JAX Universal Transformers (scenic's UT and
      PonderViT skip a step only when every token has halted), written here
      for per-example ACT on the same block;
  (d) ``oracle``: the block applied exactly the realised depth times in a
      Python loop (unrolled, as a fixed-depth model is written), no halting
      unit, differentiated by autodiff: the floor;
  (e) ``route`` (``--modes=route``): capacity routing instead of halting,
      ``routing.per_token`` over ``max_depth`` steps at the one capacity
      ``c`` (every step) whose token-steps ``sum_r k_r`` first reach the
      halting case's (``--depth`` times the real tokens;
      :func:`equal_capacity`), beside (a) and (b) per token at the same
      ``max_depth``: routing gathers the ``k_r`` tokens of each step into
      static shapes, so its cost is set by the capacity, not by a loop;

with the compiled temporary memory of each train step
(``jit(...).lower(...).compile().memory_analysis()``). The halting unit reads
feature 0, which the block leaves unchanged (its updates are zero there), so
every position (or example) halts at exactly the depth that feature encodes
and the oracle is exact.

Uniform case: every example halts at ``--depth`` steps, for each
``--max_depth``. Tail case (``--tail``, per example, M = the largest
``--max_depth``): most examples halt at 2 steps, a few at 4 and 8, and one
in 32 at the cap (:func:`tail_depths`), against an oracle of ceil(mean) for
every example, for each ``compact_rows`` given. The goal: cost that follows
the realised depth, not ``max_depth``.

Usage::

  python -m benchmarks.depth_cost          # minutes on a 2-core CPU
  python -m benchmarks.depth_cost --batch=64 --time=256 --features=512 \
      --heads=8 --repeats=20               # a GPU-sized block

The suite, ``python -m benchmarks --only=depth_cost``, runs it unpinned and
pinned, 3 times each in fresh processes: docs/performance.md.
"""

import argparse
import math

import jax
from jax import lax
import jax.numpy as jnp
import numpy as np

from benchmarks import _cli, _train_step
from vcrnn_jax import depth, loops, routing

RATIOS = ('while/oracle', 'scan/oracle', 'anchor/oracle', 'route/oracle')
TIMES = ('ms_oracle',)
QUICK = ['--max_depth=4', '--repeats=2', '--batch=8', '--time=8',
         '--features=16', '--heads=2', '--tail=0',
         '--modes=per_example,route']
MODES = ('per_token', 'per_example', 'route')
_GAIN = 10.0
_TAU = 0.01


def block_params(key, features: int) -> dict:
  """Attention and MLP weights of the block, scaled to keep it stable."""
  k = jax.random.split(key, 6)
  normal = lambda kk, shape: jax.random.normal(kk, shape) / math.sqrt(shape[0])
  return {'q': normal(k[0], (features, features)),
          'k': normal(k[1], (features, features)),
          'v': normal(k[2], (features, features)),
          'o': 0.5 * normal(k[3], (features, features)),
          'w1': normal(k[4], (features, 4 * features)),
          'w2': 0.5 * normal(k[5], (4 * features, features))}


def _norm(h):
  mu = jnp.mean(h, -1, keepdims=True)
  return (h - mu) * lax.rsqrt(jnp.var(h, -1, keepdims=True) + 1e-6)


def make_block(heads: int):
  """``block(params, h, context) -> h``: pre-LN attention + MLP whose
  updates leave feature 0 (the halting code) unchanged."""

  def block(params, h, context):
    b, t, f = h.shape
    keep = (jnp.arange(f) > 0).astype(h.dtype)
    split = lambda z: z.reshape(b, t, heads, f // heads)
    x = _norm(h)
    q, k, v = (split(x @ params[n]) for n in 'qkv')
    logits = jnp.einsum('bqhd,bkhd->bhqk', q, k) / math.sqrt(f // heads)
    logits = jnp.where(context.mask[:, None, None, :], logits, -1e9)
    att = jnp.einsum('bhqk,bkhd->bqhd', jax.nn.softmax(logits), v)
    h = h + (att.reshape(b, t, f) @ params['o']) * keep
    x = _norm(h)
    return h + (jax.nn.gelu(x @ params['w1']) @ params['w2']) * keep
  return block


def halting_value(steps: int, epsilon: float = 0.01) -> float:
  """A constant ACT halting value that halts at exactly ``steps``."""
  if steps == 1:
    return 1.0 - epsilon / 2
  return (1.0 - epsilon) / (steps - 0.5)


def inputs(key, batch: int, time: int, features: int, steps) -> jax.Array:
  """Random ``h`` whose feature 0 makes example ``i`` halt at ``steps[i]``."""
  h = jax.random.normal(key, (batch, time, features))
  logit = np.array([math.log(p / (1 - p))
                    for p in map(halting_value, np.asarray(steps).tolist())])
  return h.at[:, :, 0].set(jnp.asarray(logit / _GAIN, h.dtype)[:, None])


def tail_depths(batch: int, cap: int) -> np.ndarray:
  """Per-example depths with a tail: in each 32, one at ``cap``, one at 16
  (or the cap), two at 8, four at 4, the rest at 2."""
  head = [cap, min(16, cap), 8, 8, 4, 4, 4, 4]
  unit = np.array(head + [2] * (32 - len(head)))
  return np.minimum(np.resize(unit, batch), cap).astype(np.int32)


def _forced(params):
  """The halting unit reads feature 0 only, with gain ``_GAIN``."""
  kernel = jnp.zeros_like(params['halting']['kernel']).at[0, 0].set(_GAIN)
  return {**params, 'halting': {'kernel': kernel,
                                'bias': jnp.zeros_like(
                                    params['halting']['bias'])}}


def _mean_depth(steps):
  """The mean depth over the positions (or examples) that took a step."""
  took = steps > 0
  return (jnp.sum(steps.astype(jnp.float32))
          / jnp.maximum(jnp.sum(took.astype(jnp.float32)), 1.0))


def adaptive_step(mode: str, heads: int, features: int, max_depth: int,
                  loop):
  """Params and loss of (a) or (b): ``mode`` is ``per_token`` or
  ``per_example`` (ACT halting, reading the state before the block)."""
  block = make_block(heads)
  if mode == 'per_token':
    model = depth.per_token(block, max_depth=max_depth, loop=loop)
  else:
    model = depth.per_example(block, max_depth=max_depth, halting='act',
                              halting_reads='input', loop=loop)
  params = _forced(model.init(jax.random.key(0), features,
                              block_params(jax.random.key(1), features)))

  def loss(params, batch):
    h, mask = batch
    out_h, out = model.apply(params, h, mask)
    return (jnp.mean(out_h[..., 1:] ** 2) + _TAU * depth.mean_ponder(out),
            {'depth': _mean_depth(out.steps)})
  return params, loss


def anchor_step(heads: int, features: int, max_depth: int, epsilon=0.01):
  """(c): per-example ACT as a scan over ``max_depth`` whose step skips the
  block (``lax.cond``) once every example has halted."""
  block = make_block(heads)
  params = _forced(depth.per_example(
      block, max_depth=max_depth, halting='act').init(
          jax.random.key(0), features,
          block_params(jax.random.key(1), features)))

  def loss(params, batch):
    h0, mask = batch
    hw = params['halting']

    def step(carry, n):
      h, acc, cum, run, steps, rem = carry
      lam = jax.nn.sigmoid(depth.masked_mean(h, mask) @ hw['kernel']
                           + hw['bias'])[:, 0]
      h = block(params['block'], h, depth.BlockContext(mask, n, None, None))
      halts = (cum + lam >= 1 - epsilon) | (n + 1 >= max_depth)
      p = jnp.where(run, jnp.where(halts, 1 - cum, lam), 0.0)
      acc = acc + p[:, None, None] * h
      steps = steps + run.astype(jnp.int32)
      rem = jnp.where(run & halts, 1 - cum, rem)
      return (h, acc, cum + jnp.where(run, lam, 0.0), run & ~halts, steps,
              rem)

    def maybe(carry, n):
      return lax.cond(jnp.any(carry[3]), step, lambda c, _: c, carry, n), None

    b = h0.shape[0]
    init = (h0, jnp.zeros_like(h0), jnp.zeros(b), jnp.ones(b, bool),
            jnp.zeros(b, jnp.int32), jnp.zeros(b))
    (_, acc, _, _, steps, rem), _ = lax.scan(maybe, init,
                                             jnp.arange(max_depth))
    ponder = jnp.mean(steps + rem)
    return (jnp.mean(acc[..., 1:] ** 2) + _TAU * ponder,
            {'depth': _mean_depth(steps)})
  return params, loss


def oracle_step(heads: int, features: int, steps: int):
  """(d): the block ``steps`` times, unrolled, no halting unit.

  Unrolled rather than a ``lax.scan``: on a CPU a scan's autodiff of this
  block costs about 1.5 times the unrolled steps, which would flatter (a).
  """
  block = make_block(heads)
  params = {'block': block_params(jax.random.key(1), features)}

  def loss(params, batch):
    h, mask = batch
    for n in range(steps):
      h = block(params['block'], h, depth.BlockContext(
          mask, jnp.asarray(n, jnp.int32), None, None))
    return (jnp.mean(h[..., 1:] ** 2),
            {'depth': jnp.asarray(steps, jnp.float32)})
  return params, loss


def equal_capacity(lengths, steps: int, max_depth: int) -> float:
  """The smallest capacity ``c`` (a multiple of 1/1000, the same at every
  step) whose routed token-steps ``max_depth * sum_b k(n_b)`` reach
  ``steps * sum_b n_b``, the halting case's (``k``:
  :func:`vcrnn_jax.routing.capacity_tokens`)."""
  lengths = [int(n) for n in lengths]
  goal = steps * sum(lengths)
  for i in range(1, 1001):
    c = i / 1000
    if sum(sum(routing.capacity_tokens(n, max_depth=max_depth, capacity=c))
           for n in lengths) >= goal:
      return c
  return 1.0


def route_step(heads: int, features: int, max_depth: int, capacity: float):
  """(e): params and loss of ``routing.per_token`` at ``capacity``."""
  block = make_block(heads)
  model = routing.per_token(block, max_depth=max_depth, capacity=capacity)
  params = model.init(jax.random.key(0), features,
                      block_params(jax.random.key(1), features))

  def loss(params, batch):
    h, mask = batch
    out_h, out = model.apply(params, h, mask)
    return (jnp.mean(out_h[..., 1:] ** 2) + 0.001 * routing.aux_loss(out),
            {'depth': routing.mean_depth(out)})
  return params, loss


def _kib(v):
  return None if v is None else v / 1024


def _text(v):
  return 'n/a' if v is None else f'{v / 1024:.0f}'


def _parse_ints(parser, name, text, low):
  try:
    values = [int(v) for v in text.split(',') if v]
  except ValueError:
    parser.error(f'--{name} must be comma-separated integers, got {text!r}')
  if any(v < low for v in values):
    parser.error(f'--{name} takes integers >= {low}, got {text!r}')
  return values


@_cli.writes_json
def main(argv=None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--depth', type=int, default=3,
                      help='the depth every example halts at (uniform case)')
  parser.add_argument('--max_depth', default='4,8,16,32',
                      help='comma-separated values of max_depth (M)')
  parser.add_argument('--modes', default='per_token,per_example,route',
                      help='comma-separated: per_token (UT-ACT per position)'
                      ', per_example (ACT over the pooled state), route '
                      '(capacity routing at the halting case\'s token-steps'
                      ', beside per_token)')
  parser.add_argument('--tail', default='0,4',
                      help='comma-separated compact_rows (0: none) of the '
                      'per-example tail case at the largest --max_depth; '
                      'empty: skip it')
  parser.add_argument('--batch', type=int, default=32, help='examples')
  parser.add_argument('--time', type=int, default=32,
                      help='positions per example')
  parser.add_argument('--features', type=int, default=64,
                      help='the block width (divisible by --heads)')
  parser.add_argument('--heads', type=int, default=4,
                      help='attention heads')
  parser.add_argument('--unroll', type=int, default=1,
                      help='block applications per loop iteration of every '
                      'halting loop, one continue test each '
                      '(loops.LoopConfig(unroll=k))')
  parser.add_argument('--repeats', type=int, default=20,
                      help='timed train steps per configuration (median)')
  _cli.add_quick(parser, QUICK)
  args = _cli.parse(parser, argv, QUICK)
  if min(args.depth, args.batch, args.time, args.features, args.heads,
         args.repeats, args.unroll) < 1:
    parser.error('--depth, --batch, --time, --features, --heads, --repeats '
                 'and --unroll must be >= 1')
  if args.features % args.heads or args.features < 2:
    parser.error(f'--features={args.features} must be >= 2 and divisible '
                 f'by --heads={args.heads}')
  ms = _parse_ints(parser, 'max_depth', args.max_depth, 1)
  tails = _parse_ints(parser, 'tail', args.tail, 0)
  modes = [m for m in args.modes.split(',') if m]
  if not ms or not modes or set(modes) - set(MODES):
    parser.error(f'--max_depth needs a value and --modes some of {MODES}, '
                 f'got {args.max_depth!r}, {args.modes!r}')
  if min(ms) < args.depth:
    parser.error(f'every --max_depth must be >= --depth={args.depth}')
  print(f'jax {jax.__version__} on {jax.devices()[0].device_kind} '
        f'({jax.default_backend()}); batch {args.batch}, time {args.time}, '
        f'features {args.features}, heads {args.heads}; median of '
        f'{args.repeats}, interleaved')
  rows = []
  for mode in modes:
    rows += (route_case if mode == 'route' else uniform_case)(mode, ms, args)
  if tails:
    rows += tail_case(max(ms), tails, args)
  return rows


def _batch(args, steps):
  h = inputs(jax.random.key(2), args.batch, args.time, args.features, steps)
  lengths = args.time - (np.arange(args.batch) % 4) * (args.time // 8)
  return h, jnp.arange(args.time)[None] < jnp.asarray(lengths)[:, None]


def uniform_case(mode: str, ms, args) -> list[dict]:
  """(a), (c) and (d) timed interleaved, then (b), for each M."""
  batch = _batch(args, [args.depth] * args.batch)
  f, heads = args.features, args.heads
  compiled = {'oracle': _train_step.compile_measured(
      *oracle_step(heads, f, args.depth), batch, 'depth')}
  for m in ms:
    compiled['while', m] = _train_step.compile_measured(
        *adaptive_step(mode, heads, f, m,
                       loops.LoopConfig(unroll=args.unroll)), batch, 'depth')
    if mode == 'per_example':
      compiled['anchor', m] = _train_step.compile_measured(
          *anchor_step(heads, f, m), batch, 'depth')
  med = _train_step.interleaved({k: v[0] for k, v in compiled.items()},
                                args.repeats)
  t_o, mem_o = med['oracle'], compiled['oracle'][1]
  print(f'\n{mode}, every example at depth {args.depth}; oracle '
        f'{t_o * 1e3:.3f} ms, temp {_text(mem_o)} KiB')
  print(f'{"M":>4} {"depth":>6} {"while ms":>9} {"scan ms":>9} '
        f'{"anchor ms":>10} {"w/o":>6} {"s/o":>6} {"a/o":>6} '
        f'{"mem w KiB":>10} {"mem s KiB":>10} {"mem a KiB":>10}')
  rows = []
  for m in ms:
    t_w, (_, mem_w, n_w) = med['while', m], compiled['while', m]
    t_s, mem_s, _ = _train_step.measure(
        *adaptive_step(mode, heads, f, m, 'scan'), batch,
        max(2, args.repeats // 4), 'depth')
    t_a, mem_a = ((med['anchor', m], compiled['anchor', m][1])
                  if ('anchor', m) in med else (math.nan, None))
    rows.append({'mode': mode, 'case': 'uniform', 'M': m, 'depth': n_w,
                 'unroll': args.unroll,
                 'ms_while': t_w * 1e3, 'ms_scan': t_s * 1e3,
                 'ms_anchor': t_a * 1e3, 'ms_oracle': t_o * 1e3,
                 'while/oracle': t_w / t_o, 'scan/oracle': t_s / t_o,
                 'anchor/oracle': t_a / t_o, 'temp_kib_while': _kib(mem_w),
                 'temp_kib_scan': _kib(mem_s), 'temp_kib_anchor': _kib(mem_a),
                 'temp_kib_oracle': _kib(mem_o)})
    print(f'{m:>4} {n_w:>6.2f} {t_w * 1e3:>9.3f} {t_s * 1e3:>9.3f} '
          f'{t_a * 1e3:>10.3f} {t_w / t_o:>6.2f} {t_s / t_o:>6.2f} '
          f'{t_a / t_o:>6.2f} {_text(mem_w):>10} {_text(mem_s):>10} '
          f'{_text(mem_a):>10}')
  return rows


def route_case(mode: str, ms, args) -> list[dict]:
  """(e), (a) per token and (d) timed interleaved, then (b), for each M."""
  del mode  # 'route'
  batch = _batch(args, [args.depth] * args.batch)
  lengths = np.asarray(jnp.sum(batch[1], axis=1))
  f, heads = args.features, args.heads
  compiled = {'oracle': _train_step.compile_measured(
      *oracle_step(heads, f, args.depth), batch, 'depth')}
  caps = {m: equal_capacity(lengths, args.depth, m) for m in ms}
  for m in ms:
    compiled['route', m] = _train_step.compile_measured(
        *route_step(heads, f, m, caps[m]), batch, 'depth')
    compiled['while', m] = _train_step.compile_measured(
        *adaptive_step('per_token', heads, f, m,
                       loops.LoopConfig(unroll=args.unroll)), batch, 'depth')
  med = _train_step.interleaved({k: v[0] for k, v in compiled.items()},
                                args.repeats)
  t_o, mem_o = med['oracle'], compiled['oracle'][1]
  print(f'\nroute, at the token-steps of depth {args.depth} (per token '
        f'halting beside it); oracle {t_o * 1e3:.3f} ms')
  print(f'{"M":>4} {"capacity":>8} {"depth":>6} {"route ms":>9} '
        f'{"while ms":>9} {"scan ms":>9} {"r/o":>6} {"w/o":>6} {"s/o":>6} '
        f'{"mem r KiB":>10}')
  rows = []
  for m in ms:
    t_r, (_, mem_r, n_r) = med['route', m], compiled['route', m]
    t_w, mem_w = med['while', m], compiled['while', m][1]
    t_s, mem_s, _ = _train_step.measure(
        *adaptive_step('per_token', heads, f, m, 'scan'), batch,
        max(2, args.repeats // 4), 'depth')
    rows.append({'mode': 'route', 'case': 'uniform', 'M': m, 'depth': n_r,
                 'unroll': args.unroll,
                 'capacity': caps[m], 'ms_route': t_r * 1e3,
                 'ms_while': t_w * 1e3, 'ms_scan': t_s * 1e3,
                 'ms_oracle': t_o * 1e3, 'route/oracle': t_r / t_o,
                 'while/oracle': t_w / t_o, 'scan/oracle': t_s / t_o,
                 'temp_kib_route': _kib(mem_r), 'temp_kib_while': _kib(mem_w),
                 'temp_kib_scan': _kib(mem_s), 'temp_kib_oracle': _kib(mem_o)})
    print(f'{m:>4} {caps[m]:>8.3f} {n_r:>6.2f} {t_r * 1e3:>9.3f} '
          f'{t_w * 1e3:>9.3f} {t_s * 1e3:>9.3f} {t_r / t_o:>6.2f} '
          f'{t_w / t_o:>6.2f} {t_s / t_o:>6.2f} {_text(mem_r):>10}')
  return rows


def tail_case(m: int, tails, args) -> list[dict]:
  """Per-example ACT with a tail of deep examples against the
  ceil(mean depth) oracle, for each ``compact_rows``."""
  steps = tail_depths(args.batch, m)
  batch = _batch(args, steps)
  n_oracle = math.ceil(steps.mean())
  f, heads = args.features, args.heads
  compiled = {'oracle': _train_step.compile_measured(
      *oracle_step(heads, f, n_oracle), batch, 'depth'),
              'anchor': _train_step.compile_measured(
                  *anchor_step(heads, f, m), batch, 'depth')}
  for c in tails:
    compiled[c] = _train_step.compile_measured(
        *adaptive_step('per_example', heads, f, m,
                       loops.LoopConfig(compact_rows=c or None,
                                        unroll=args.unroll)),
        batch, 'depth')
  med = _train_step.interleaved({k: v[0] for k, v in compiled.items()},
                                args.repeats)
  t_s, mem_s, _ = _train_step.measure(
      *adaptive_step('per_example', heads, f, m, 'scan'), batch,
      max(2, args.repeats // 4), 'depth')
  t_o, t_a = med['oracle'], med['anchor']
  print(f'\ntail, per example: depth mean {steps.mean():.2f}, max '
        f'{steps.max()} (M={m}); oracle: {n_oracle} for every example, '
        f'{t_o * 1e3:.3f} ms; anchor {t_a * 1e3:.3f} ms ({t_a / t_o:.2f}x), '
        f'scan {t_s * 1e3:.3f} ms ({t_s / t_o:.2f}x)')
  print(f'{"compact_rows":>12} {"while ms":>9} {"w/o":>6} {"mem w KiB":>10}')
  rows = []
  for c in tails:
    t_w, mem_w = med[c], compiled[c][1]
    print(f'{str(c or None):>12} {t_w * 1e3:>9.3f} {t_w / t_o:>6.2f} '
          f'{_text(mem_w):>10}')
    rows.append({'mode': 'per_example', 'case': 'tail', 'M': m,
                 'unroll': args.unroll,
                 'depth': float(steps.mean()), 'compact_rows': c or None,
                 'ms_while': t_w * 1e3, 'ms_scan': t_s * 1e3,
                 'ms_anchor': t_a * 1e3, 'ms_oracle': t_o * 1e3,
                 'while/oracle': t_w / t_o, 'scan/oracle': t_s / t_o,
                 'anchor/oracle': t_a / t_o, 'temp_kib_while': _kib(mem_w),
                 'temp_kib_scan': _kib(mem_s),
                 'temp_kib_anchor': _kib(compiled['anchor'][1]),
                 'temp_kib_oracle': _kib(compiled['oracle'][1])})
  return rows


if __name__ == '__main__':
  main()
