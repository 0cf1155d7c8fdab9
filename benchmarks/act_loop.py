r"""Cost of ACT pondering: while-loop vs masked scan vs a fixed-depth oracle.

Measures, side by side in one run, the time of one jitted train step (the
trainer's own ``train_step``: forward, backward and Adam update) at the ACT
parity configuration (Elman 128, batch 128, 64 bits) for:

  (a) ``adaptive(..., loop='while')``: the while loop with its custom VJP,
      with 4 backward slots with their vjp residuals and no tail compaction
      (flags to change them);
  (b) ``adaptive(..., loop='scan')``: the masked ``lax.scan`` over all M steps;
  (c) an oracle "Repeat-RNN": a plain ``lax.scan`` of exactly the realised
      number of ponder steps (no halting unit), differentiated by autodiff;
  (d) ``adaptive(..., loop='while')`` with ``loops.LoopConfig()``: 8
      slots, no residuals, no compaction (``default/oracle``);
  (e) ACT's own maths without the while loop: ``loop='scan'`` with M = N,
      the halting unit and the accumulators of Eq. 9 over exactly the
      steps taken (``floor/oracle``, the same in every row): the floor a
      loop over the same steps can reach;

for M in {10, 100, 400}, (a), (c), (d) and (e) timed interleaved, and the
compiled temporary memory of each train step
(``jit(...).lower(...).compile().memory_analysis()``). The halting unit is set
so that every sequence ponders exactly ``--ponder`` steps (kernel 0, bias
logit(1/ponder + tiny)), making the oracle exact.

Then the tail case (``--tail``): rows ponder different numbers of steps
(:func:`tail_steps`: mean 3.55, batch maximum 26, set through an input
column the halting unit reads), against an oracle of ceil(mean N) = 4 steps
for every row, for each ``compact_rows`` given, with (a)'s slots and with (d)'s
(``default/oracle``), timed interleaved.
On CPU-2, unpinned (the suite's record, docs/performance.md): (a) 9.8x
without compaction, 2.4x with ``compact_rows`` 8 or 1; (d) 7.6x, 2.2x,
2.4x. The uniform case there: (a) 1.18x the oracle, (d) 1.28x, (e) 1.08x.
``--profile=DIR`` also writes a ``jax.profiler`` trace of the tail case.

Usage::

  python -m benchmarks.act_loop                # ~3 minutes on a 2-core CPU
  python -m benchmarks.act_loop --ponder=3 --repeats=50 --m=10,100,400

The suite, ``python -m benchmarks --only=act_loop``, runs it as a user does
(unpinned, every core) and pinned to one core, 3 times each in fresh
processes taking turns, and reports both: docs/performance.md.
"""

import argparse
import math

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import _cli, _train_step
from vcrnn_jax import act, cells, loops
from vcrnn_jax.tasks import parity

HIDDEN, BATCH, BITS = 128, 128, 64
# The suite's table (python -m benchmarks): the headline ratio columns
# (fnmatch patterns), then the time columns shown beside them.
RATIOS = ('while/oracle', 'default/oracle', 'floor/oracle', 'scan/while')
TIMES = ('ms_oracle',)
QUICK = ['--m=10', '--repeats=2', '--tail=0']


def _bce(logit, y):
  return jnp.mean(jax.nn.softplus(logit) - y * logit)


def halting_value(ponder, epsilon=0.01):
  """A constant halting unit output h that halts at exactly ``ponder`` steps.

  ACT halts at the first n with n * h >= 1 - epsilon (Eq. 7), so h must lie
  in [(1 - eps) / N, (1 - eps) / (N - 1)); for N = 1, in [1 - eps, 1).
  """
  if ponder == 1:
    return 1.0 - epsilon / 2
  return (1.0 - epsilon) / (ponder - 0.5)


def act_step(m, loop, ponder, tau=0.01, input_size=BITS):
  cell = act.adaptive(cells.elman(HIDDEN), 1, max_steps=m, loop=loop)
  params = cell.init(jax.random.PRNGKey(0), input_size)
  params['halting']['kernel'] = jnp.zeros_like(params['halting']['kernel'])
  h = halting_value(ponder)
  params['halting']['bias'] = jnp.full((1,), math.log(h / (1 - h)),
                                       jnp.float32)

  def loss(params, batch):
    x, y = batch
    _, out = cell.apply(params, cell.initial_state(x.shape[0]), x)
    return (_bce(out.output[:, 0], y) + tau * jnp.mean(act.ponder_cost(out)),
            {'ponder_steps': jnp.mean(out.steps.astype(jnp.float32)),
             'ponder_min': jnp.min(out.steps),
             'ponder_max': jnp.max(out.steps)})
  return params, loss


def tail_steps(batch=BATCH):
  """Per-row N with a tail: mean 3.55, batch maximum 26.

  The shape of a 64-bit parity run at tau 0.001 (``ponder_tail``'s table):
  most rows ponder 3 steps, a few up to 8 and 14, one 26.
  """
  head = [26, 14, 8, 8, 6, 6, 6, 6]
  fours = round(14 * batch / 128)
  n = head + [4] * fours + [3] * (batch - len(head) - fours)
  return np.array(n[:batch], np.int32)


def tail_inputs(x, steps):
  """``x`` with a column that sets each row's N (see :func:`act_tail_step`)."""
  logits = np.array([_logit(halting_value(int(n))) for n in steps])
  code = np.arctanh(logits / _TAIL_GAIN).astype(np.float32)
  return jnp.concatenate([x, jnp.asarray(code)[:, None]], axis=-1)


_TAIL_GAIN = 10.0


def _logit(h):
  return math.log(h / (1 - h))


def act_tail_step(m, loop, tau=0.01):
  """ACT whose rows ponder :func:`tail_inputs`' N each.

  Hidden unit 0 of the Elman cell copies tanh of the input's last column
  (its other input and recurrent weights are zero) and the halting unit
  reads only that unit, so row r halts at the N its column encodes.
  """
  params, loss = act_step(m, loop, 1, tau, input_size=BITS + 1)
  cell = params['cell']
  cell['input_kernel'] = cell['input_kernel'].at[:, 0].set(0.0).at[
      BITS, 0].set(1.0)
  cell['recurrent_kernel'] = cell['recurrent_kernel'].at[:, 0].set(0.0)
  cell['bias'] = cell['bias'].at[0].set(0.0)
  params['halting']['kernel'] = params['halting']['kernel'].at[0, 0].set(
      _TAIL_GAIN)
  params['halting']['bias'] = jnp.zeros((1,), jnp.float32)
  return params, loss


def oracle_step(n, input_size=BITS):
  inner = cells.elman(HIDDEN)
  params = {'cell': inner.init(jax.random.PRNGKey(0), input_size + 1),
            'out': jnp.zeros((HIDDEN, 1), jnp.float32),
            'b': jnp.zeros((1,), jnp.float32)}

  def loss(params, batch):
    x, y = batch

    def body(state, flag):
      xin = jnp.concatenate([x, jnp.full((x.shape[0], 1), flag)], -1)
      state, hid = inner.apply(params['cell'], state, xin)
      return state, hid
    flags = jnp.zeros((n,), x.dtype).at[0].set(1.0)
    _, hs = jax.lax.scan(body, inner.initial_state(x.shape[0]), flags)
    logit = hs[-1] @ params['out'] + params['b']
    return _bce(logit[:, 0], y), {'ponder_steps': jnp.asarray(n, jnp.float32)}
  return params, loss


def measure(params, loss, x, y, repeats):
  """Median seconds of a train step, its temp bytes and the mean N."""
  return _train_step.measure(params, loss, (x, y), repeats, 'ponder_steps')


@_cli.writes_json
def main(argv=None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--ponder', type=int, default=3,
                      help='ponder steps every sequence takes (mean N)')
  parser.add_argument('--m', default='10,100,400',
                      help='comma-separated values of M (max ponder steps)')
  parser.add_argument('--compact_rows', type=int, default=0,
                      help="(a)'s compact_rows (0: no compaction); every "
                      'row ponders the same N here, so there is no tail')
  parser.add_argument('--checkpoints', type=int, default=4,
                      help="(a)'s backward-pass carry slots (the binaries' "
                      '--ponder_slots)')
  parser.add_argument('--save_residuals', default=True,
                      action=argparse.BooleanOptionalAction,
                      help="(a) also saves each slot's vjp residuals "
                      "(the binaries' --save_residuals)")
  parser.add_argument('--unroll', type=int, default=1,
                      help="(a)'s steps per loop iteration, one continue "
                      'test each (loops.LoopConfig(unroll=k)), in the tail '
                      "case too; (d) stays at 1")
  parser.add_argument('--tail', default='0,8,1',
                      help='comma-separated compact_rows (0: none) of the '
                      'tail case, where rows ponder different N (mean 3.55, '
                      'batch max 26) and the oracle runs ceil(mean N) = 4 '
                      'steps for every row; empty: skip the tail case')
  parser.add_argument('--batch', type=int, default=BATCH,
                      help='rows per batch (the parity configuration: 128)')
  parser.add_argument('--profile', default='',
                      help='also write a jax.profiler trace of 10 train '
                      'steps of each tail-case setting and of its oracle to '
                      'this folder (read it with xprof or TensorBoard)')
  parser.add_argument('--repeats', type=int, default=30,
                      help='timed train steps per configuration (median)')
  _cli.add_quick(parser, QUICK)
  args = _cli.parse(parser, argv, QUICK)
  if min(args.ponder, args.repeats, args.checkpoints, args.batch,
         args.unroll) < 1:
    parser.error('--ponder, --repeats, --checkpoints, --batch and --unroll '
                 'must be >= 1')
  if args.compact_rows < 0:
    parser.error('--compact_rows must be >= 0')
  try:
    ms = [int(v) for v in args.m.split(',')]
    tails = [int(v) for v in args.tail.split(',') if v]
  except ValueError:
    parser.error(f'--m and --tail must be comma-separated integers, got '
                 f'{args.m!r} and {args.tail!r}')
  if any(c < 0 for c in tails):
    parser.error(f'--tail takes compact_rows >= 0, got {args.tail!r}')
  if min(ms) < args.ponder:
    parser.error(f'every --m must be >= --ponder={args.ponder} (the loop '
                 f'could not take N steps), got {args.m}')
  batch = parity.task(bits=BITS).sample(jax.random.PRNGKey(1), args.batch)
  x, y = batch.inputs[:, 0], batch.targets[:, 0, 0]

  print(f'jax {jax.__version__} on {jax.devices()[0].device_kind} '
        f'({jax.default_backend()}); batch {args.batch}, hidden {HIDDEN}, '
        f'{BITS} bits, ponder N={args.ponder}, median of {args.repeats}; '
        f'(a): checkpoints={args.checkpoints}, save_residuals='
        f'{args.save_residuals}, compact_rows={args.compact_rows or None}, '
        f'unroll={args.unroll}')
  results = uniform_case(x, y, ms, args)
  if tails:
    results += tail_case(x, y, tails, args)
  return results


def uniform_case(x, y, ms, args) -> list[dict]:
  """(a), (c), (d) and (e) timed interleaved, then (b), for each M."""
  loop = loops.LoopConfig(checkpoints=args.checkpoints,
                          save_residuals=args.save_residuals,
                          compact_rows=args.compact_rows or None,
                          unroll=args.unroll)
  n = args.ponder
  compiled = {'oracle': _train_step.compile_measured(
      *oracle_step(n), (x, y), 'ponder_steps'),
              'floor': _train_step.compile_measured(
                  *act_step(n, 'scan', n), (x, y), 'ponder_steps')}
  for m in ms:
    compiled['while', m] = _train_step.compile_measured(
        *act_step(m, loop, n), (x, y), 'ponder_steps')
    compiled['default', m] = _train_step.compile_measured(
        *act_step(m, loops.LoopConfig(), n), (x, y), 'ponder_steps')
  med = _train_step.interleaved({k: v[0] for k, v in compiled.items()},
                                args.repeats)
  t_c, t_e = med['oracle'], med['floor']
  print(f'{"M":>5} {"N":>5} {"(a) while ms":>13} {"(b) scan ms":>12} '
        f'{"(c) oracle ms":>14} {"a/c":>6} {"d/c":>6} {"e/c":>6} {"b/a":>7} '
        f'{"mem(a) KiB":>11} {"mem(b) KiB":>11}')
  results = []
  for m in ms:
    t_a, t_d = med['while', m], med['default', m]
    _, mem_a, n_a = compiled['while', m]
    t_b, mem_b, _ = measure(*act_step(m, 'scan', n), x, y,
                            max(3, args.repeats // 5))
    results.append({'M': m, 'N': n_a, 'case': 'uniform',
                    'unroll': args.unroll, 'ms_while': t_a * 1e3,
                    'ms_scan': t_b * 1e3, 'ms_oracle': t_c * 1e3,
                    'while/oracle': t_a / t_c, 'default/oracle': t_d / t_c,
                    'floor/oracle': t_e / t_c, 'scan/while': t_b / t_a,
                    'temp_kib_while': _kib(mem_a),
                    'temp_kib_scan': _kib(mem_b)})
    print(f'{m:>5} {n_a:>5.1f} {t_a * 1e3:>13.3f} {t_b * 1e3:>12.3f} '
          f'{t_c * 1e3:>14.3f} {t_a / t_c:>6.2f} {t_d / t_c:>6.2f} '
          f'{t_e / t_c:>6.2f} {t_b / t_a:>7.1f} {_kib_text(mem_a):>11} '
          f'{_kib_text(mem_b):>11}')
  mems = [compiled['while', m][1] for m in ms]
  print(f'oracle temp memory: {_kib_text(compiled["oracle"][1])} KiB')
  if len(ms) > 1 and all(mems):
    print(f'while-loop temp memory M={ms[-1]} / M={ms[0]}: '
          f'{mems[-1] / mems[0]:.3f}x')
  return results


def tail_case(x, y, tails, args) -> list[dict]:
  """ACT whose rows ponder different N against the ceil(mean N) oracle."""
  steps = tail_steps(x.shape[0])
  xt = tail_inputs(x, steps)
  n_oracle = math.ceil(steps.mean())
  print(f'\ntail: per-row N mean {steps.mean():.2f}, max {steps.max()} '
        f'(M=100); oracle: {n_oracle} steps for every row; loop settings '
        f'as (a) but compact_rows below; median of {args.repeats}, '
        'interleaved')
  steps_fns = {'oracle': _train_step.compile_step(
      *oracle_step(n_oracle, BITS + 1), (xt, y))}
  for c in tails:
    loop = loops.LoopConfig(checkpoints=args.checkpoints,
                            save_residuals=args.save_residuals,
                            compact_rows=c or None, unroll=args.unroll)
    steps_fns[c] = _train_step.compile_step(*act_tail_step(100, loop),
                                            (xt, y))
    steps_fns[f'default {c}'] = _train_step.compile_step(
        *act_tail_step(100, loops.LoopConfig(compact_rows=c or None)),
        (xt, y))
  med = _train_step.interleaved(steps_fns, args.repeats)
  if args.profile:
    # One trace, the settings one after the other: each train step is a
    # PjRt execution whose XLA ops the trace viewer lists.
    jax.profiler.start_trace(args.profile)
    for f in steps_fns.values():
      for _ in range(10):
        jax.block_until_ready(f())
    jax.profiler.stop_trace()
    print(f'trace of 10 steps each of {", ".join(map(str, steps_fns))} '
          f'written to {args.profile}')
  print(f'{"compact_rows":>12} {"while ms":>9} {"oracle ms":>10} {"a/c":>6} '
        f'{"d/c":>6}')
  rows = []
  for c in tails:
    ratio = med[c] / med['oracle']
    default = med[f'default {c}'] / med['oracle']
    print(f'{str(c or None):>12} {med[c] * 1e3:>9.3f} '
          f'{med["oracle"] * 1e3:>10.3f} {ratio:>6.2f} {default:>6.2f}')
    rows.append({'M': 100, 'N': float(steps.mean()), 'case': 'tail',
                 'unroll': args.unroll,
                 'compact_rows': c or None, 'ms_while': med[c] * 1e3,
                 'ms_oracle': med['oracle'] * 1e3, 'while/oracle': ratio,
                 'default/oracle': default})
  return rows


def _kib(v):
  return None if v is None else v / 1024


def _kib_text(v):
  return 'n/a' if v is None else f'{v / 1024:.0f}'


if __name__ == '__main__':
  main()
