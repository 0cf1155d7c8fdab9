r"""Cost of EI-REHN's elastic depth: while-loop vs masked scan vs fixed depth.

Measures, side by side in one run, the time of one jitted train step (forward,
backward and Adam update of an EI-REHN layer plus a linear readout, MSE on the
synthetic next-step task of EI-REHN Section 4.1, batch 20, 20 time steps) for:

  (a) ``rehn.ei_rehn(..., loop='while')``: the elastic depth on
      :func:`vcrnn_jax.loops.halting_loop` (its custom-VJP while loop);
  (b) ``rehn.ei_rehn(..., loop='scan')``: the masked ``lax.scan`` over all
      ``R_max`` micro-layers;
  (c) an oracle: the same EI-REHN maths (Eq. 9-22 with the same params) as a
      plain ``lax.scan`` of exactly the realized depth ``R``, with no halting
      test, differentiated by autodiff;
  (d) a fixed-depth shared RHN, ``rehn.srhn(D_h, R)`` (the paper's SRHN);

for ``R_max`` in {5, 10, 40} and ``D_h`` in {20 (Table 1), 128}, with the
elastic parameters set so that every row realizes depth ``R`` (``W_a = 0``,
so ``alpha_t`` is a constant, and ``alpha``, ``beta`` put the zero of Eq. 11
between ``R`` and ``R + 1``), which makes (c) exact. Also the compiled
temporary memory of each train step
(``jit(...).lower(...).compile().memory_analysis()``). Targets: (a) within
1.3x of (c), and (a)'s memory flat in ``R_max``.

Usage::

  python -m benchmarks.rehn_depth       # ~2-4 minutes on CPU-2
  python -m benchmarks.rehn_depth --depth=3 --max_depth=5,10,40 --hidden=20,128

The suite, ``python -m benchmarks --only=rehn_depth``, runs it as a user does
(unpinned, every core) and pinned to one core, 3 times each in fresh
processes taking turns, and reports both: docs/performance.md.
"""

import argparse
import math

import jax
from jax import lax
import jax.numpy as jnp

from benchmarks import _cli, _train_step
from vcrnn_jax import loops, rehn
from vcrnn_jax.core import Cell
from vcrnn_jax.tasks import elastic_depth
from vcrnn_jax.unroll import unroll

BATCH, SEQ_LEN = 20, 20
# The suite's table (python -m benchmarks): the headline ratio columns
# (fnmatch patterns), then the time columns shown beside them.
RATIOS = ('while/oracle', 'while/srhn', 'scan/while')
TIMES = ('ms_oracle',)
QUICK = ['--hidden=8', '--max_depth=4', '--repeats=2']


def fixed_depth_gates(depth):
  """``(alpha, beta, alpha_t)`` whose Eq. 11 is open exactly at r <= depth.

  ``alpha = alpha_t = a`` and ``beta = 0.9``; ``a`` is bisected so that
  ``e^a (e^{a (2r - 1)} - 1)`` (the term ``beta`` is compared with) crosses
  0.9 half-way between ``depth`` and ``depth + 1``.
  """
  m = lambda a, r: math.exp(a) * math.expm1(a * (2 * r - 1))
  lo, hi = 1e-6, 5.0
  for _ in range(200):
    a = 0.5 * (lo + hi)
    if m(a, depth + 0.5) > 0.9:
      hi = a
    else:
      lo = a
  assert m(a, depth) < 0.9 < m(a, depth + 1), (a, depth)
  return a, 0.9, a


def ei_rehn_params(cell, hidden, depth, key):
  """Params of ``cell`` with every row realizing ``depth`` micro-layers."""
  params = cell.init(key, elastic_depth.INPUT_SIZE)
  alpha, beta, alpha_t = fixed_depth_gates(depth)
  e = params['elastic']
  e['input_kernel'] = jnp.zeros_like(e['input_kernel'])
  e['recurrent_kernel'] = jnp.zeros_like(e['recurrent_kernel'])
  e['bias'] = jnp.full((hidden,), math.log(alpha_t / (1 - alpha_t)))
  e['alpha_hat'] = jnp.full((hidden,), math.log(math.expm1(alpha)))
  e['beta_hat'] = jnp.full((hidden,), math.log(beta / (1 - beta)))
  return params


def oracle_cell(hidden, depth):
  """EI-REHN's maths (same params) as a plain scan of ``depth`` layers."""

  def apply(params, state, x, context=None):
    del context  # No dropout, no padding here.
    e, hp = params['elastic'], params['hyper']
    h0 = state.h
    alpha = jax.nn.softplus(e['alpha_hat'])                          # (13)
    alpha_t = jax.nn.sigmoid(x @ e['input_kernel']
                             + h0 @ e['recurrent_kernel'] + e['bias'])  # (14)
    z_kernel = jnp.concatenate([hp['residual_kernel'], hp['gate_kernel'],
                                hp['recurrent_kernel']], axis=0)
    p_kernel = jnp.concatenate([hp['delta_kernel'],
                                hp['update_gate_kernel']], axis=1)
    p_bias = jnp.concatenate([jnp.zeros_like(hp['update_gate_bias']),
                              hp['update_gate_bias']])
    z = jnp.tanh(jnp.concatenate([hp['initial_residual'], hp['initial_gate'],
                                  hp['initial_state']]) @ z_kernel
                 + hp['bias'])                                       # (18)
    u = x @ params['input_kernel']

    def layer(carry, r):
      h, z, w_sum = carry
      w, g_bar = jnp.split(z @ p_kernel + p_bias, 2, axis=-1)
      g_bar = jax.nn.sigmoid(g_bar)                                  # (21)
      h2 = jnp.concatenate([h, h], axis=-1)
      pre = (g_bar * (h @ params['recurrent_kernel'] + w_sum * h2)
             + (1 - g_bar) * (w * h2) + jnp.where(r == 1, u, 0 * u)
             + params['bias'])                                       # (22)
      s, g_hat = jnp.split(pre, 2, axis=-1)
      s, g_hat = jnp.tanh(s), jax.nn.sigmoid(g_hat)
      g = rehn.elastic_gate(alpha, e['beta_hat'], alpha_t, r) * g_hat  # (10)
      z = jnp.tanh(jnp.concatenate([s, g_hat, z], axis=-1) @ z_kernel
                   + hp['bias'])                                     # (18)
      return (g * s + (1 - g) * h, z, w_sum + w), None                # (9)

    init = (h0, jnp.broadcast_to(z, (x.shape[0], z.shape[-1])),
            jnp.zeros((x.shape[0], 2 * hidden), h0.dtype))
    (h, _, _), _ = lax.scan(layer, init, jnp.arange(1, depth + 1))
    return rehn.RHNState(h=h), rehn.REHNOutput(
        output=h, depth=jnp.full((x.shape[0],), depth, jnp.int32))

  return Cell(None, lambda b: rehn.RHNState(jnp.zeros((b, hidden))), apply)


def make_loss(cell):

  def loss(params, batch):
    xs, ys = batch
    _, out = unroll(cell, params['cell'], cell.initial_state(BATCH), xs)
    h = out.output if hasattr(out, 'output') else out
    pred = h @ params['readout']['kernel'] + params['readout']['bias']
    depth = out.depth if hasattr(out, 'depth') else jnp.zeros((BATCH, 1))
    return (jnp.mean((pred - ys) ** 2),
            {'depth': jnp.mean(depth.astype(jnp.float32))})

  return loss


def measure(cell_params, cell, xs, ys, repeats, hidden):
  params = {'cell': cell_params,
            'readout': {'kernel': jnp.zeros((hidden, 2)),
                        'bias': jnp.zeros((2,))}}
  return _train_step.measure(params, make_loss(cell), (xs, ys), repeats,
                             'depth')


@_cli.writes_json
def main(argv=None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--depth', type=int, default=3,
                      help='the depth R every row realizes')
  parser.add_argument('--max_depth', default='5,10,40',
                      help='comma-separated values of R_max')
  parser.add_argument('--hidden', default='20,128',
                      help='comma-separated hidden sizes D_h')
  parser.add_argument('--hyper', type=float, default=0.5,
                      help='hypernetwork size as a fraction of D_h: D_z = '
                      'max(1, floor(hyper * D_h)); EI-REHN multiplies '
                      '2 D_h^2 + 6 D_h D_z + D_z^2 per row and micro-layer, '
                      'SRHN 2 D_h^2')
  parser.add_argument('--checkpoints', type=int,
                      default=rehn.ELASTIC_LOOP.checkpoints,
                      help="(a)'s backward-pass carry slots (default: the "
                      "elastic cells' default loop, rehn.ELASTIC_LOOP)")
  parser.add_argument('--save_residuals', default=False,
                      action=argparse.BooleanOptionalAction,
                      help="(a) also saves each slot's vjp residuals")
  parser.add_argument('--unroll', type=int, default=1,
                      help="(a)'s micro-layers per loop iteration, one "
                      'continue test each (loops.LoopConfig(unroll=k))')
  parser.add_argument('--repeats', type=int, default=20,
                      help='timed train steps per configuration (median)')
  _cli.add_quick(parser, QUICK)
  args = _cli.parse(parser, argv, QUICK)
  if min(args.depth, args.repeats, args.checkpoints, args.unroll) < 1:
    parser.error('--depth, --repeats, --checkpoints and --unroll must be '
                 '>= 1')
  if not 0 < args.hyper <= 4:
    parser.error(f'--hyper must be in (0, 4], got {args.hyper}')
  max_depths = [int(v) for v in args.max_depth.split(',')]
  if min(max_depths) < args.depth:
    parser.error(f'every --max_depth must be >= --depth={args.depth}')
  hiddens = [int(v) for v in args.hidden.split(',')]
  seqs = elastic_depth.generate(0, num_sequences=BATCH, seq_len=SEQ_LEN + 1)
  xs = jnp.asarray(seqs.x[:, :-1], jnp.float32)
  ys = jnp.asarray(seqs.x[:, 1:], jnp.float32)

  print(f'jax {jax.__version__} on {jax.devices()[0].device_kind} '
        f'({jax.default_backend()}); batch {BATCH}, {SEQ_LEN} time steps, '
        f'realized depth R={args.depth}, median of {args.repeats} train steps '
        '(train.train_step: value_and_grad + Adam); '
        f'(a): checkpoints={args.checkpoints}, '
        f'save_residuals={args.save_residuals}, unroll={args.unroll}')
  kib = lambda v: f'{v / 1024:.0f}' if v is not None else 'n/a'
  results = []
  for hidden in hiddens:
    hyper = max(1, int(args.hyper * hidden))
    flops = (2 * hidden**2 + 6 * hidden * hyper + hyper**2) / (2 * hidden**2)
    key = jax.random.PRNGKey(0)
    oracle = oracle_cell(hidden, args.depth)
    srhn = rehn.srhn(hidden, args.depth)
    base = ei_rehn_params(rehn.ei_rehn(hidden, hyper, args.depth), hidden,
                          args.depth, key)
    t_c, mem_c, r_c = measure(base, oracle, xs, ys, args.repeats, hidden)
    t_d, mem_d, _ = measure(srhn.init(key, 2), srhn, xs, ys, args.repeats,
                            hidden)
    print(f'\nD_h={hidden}, D_z={hyper} (multiplications per micro-layer '
          f'{flops:.2f}x SRHN\'s): (c) oracle EI-REHN depth {r_c:.0f}: '
          f'{t_c * 1e3:.3f} ms, temp {kib(mem_c)} KiB; (d) SRHN depth '
          f'{args.depth}: {t_d * 1e3:.3f} ms, temp {kib(mem_d)} KiB')
    print(f'{"R_max":>5} {"R":>4} {"(a) while ms":>13} {"(b) scan ms":>12} '
          f'{"a/c":>6} {"a/d":>6} {"b/a":>6} {"mem(a) KiB":>11} '
          f'{"mem(b) KiB":>11}')
    mems = {}
    for r_max in max_depths:
      make = lambda kind, h=hidden, z=hyper, r=r_max: rehn.ei_rehn(
          h, z, r, loop=loops.LoopConfig(
              kind, checkpoints=args.checkpoints,
              save_residuals=args.save_residuals,
              unroll=args.unroll if kind == 'while' else 1))
      cell_a, cell_b = make('while'), make('scan')
      params = ei_rehn_params(cell_a, hidden, args.depth, key)
      t_a, mem_a, r_a = measure(params, cell_a, xs, ys, args.repeats, hidden)
      t_b, mem_b, r_b = measure(params, cell_b, xs, ys,
                                max(3, args.repeats // 4), hidden)
      assert r_a == r_b == args.depth, (r_a, r_b)
      mems[r_max] = mem_a
      results.append({
          'D_h': hidden, 'D_z': hyper, 'R_max': r_max, 'R': r_a,
          'unroll': args.unroll,
          'flops/srhn': flops, 'ms_while': t_a * 1e3,
          'ms_scan': t_b * 1e3, 'ms_oracle': t_c * 1e3, 'ms_srhn': t_d * 1e3,
          'while/oracle': t_a / t_c, 'while/srhn': t_a / t_d,
          'oracle/srhn': t_c / t_d, 'scan/while': t_b / t_a,
          'temp_kib_while': None if mem_a is None else mem_a / 1024})
      print(f'{r_max:>5} {r_a:>4.0f} {t_a * 1e3:>13.3f} {t_b * 1e3:>12.3f} '
            f'{t_a / t_c:>6.2f} {t_a / t_d:>6.2f} {t_b / t_a:>6.1f} '
            f'{kib(mem_a):>11} {kib(mem_b):>11}')
    if len(max_depths) > 1 and all(mems[m] for m in max_depths):
      print(f'while-loop temp memory R_max={max_depths[-1]} / '
            f'R_max={max_depths[0]}: '
            f'{mems[max_depths[-1]] / mems[max_depths[0]]:.3f}x')
  return results


if __name__ == '__main__':
  main()
