"""Does skipping the masked work make VCRNN steps faster? Hard vs soft vs Elman.

The paper's savings are operation counts ("not necessarily ... a speed up ...
with general purpose GPU kernels", Sec. 5). ``vc.vcrnn(..., hard=True)``
computes only the first ``d_t = ceil(m_t D)`` rows and columns, ``d_t``
rounded up to a static block size (one ``lax.switch`` branch per size).
This benchmark measures, side by side in one run, the time per step of a
jitted ``vcrnn_jax.unroll`` (a ``lax.scan`` over ``--steps`` steps, so
dispatch does not dominate) at ``D = --hidden`` for:

  * ``elman``: the full-D Elman step (:func:`vcrnn_jax.cells.elman`), the
    reference every other column is divided by;
  * ``soft``: the paper's soft-mask VCRNN (Eq. 13, lambda = 1): full cost;
  * ``hard/8``: the hard path with the multiples of D/8 as sizes;
  * ``hard/2^k``: the hard path with powers of two (D/128 ... D) as sizes;
  * batch > 1 only, ``hard/8 rC``: the rows sorted by size, each weight
    shell multiplied for the rows that need it, in multiples of C rows
    (``compact_rows=C``, one column per C of ``--compact_rows``, default
    4 and 8), instead of every row at the batch's largest size (no
    ``compact_rows``, the other columns).

for m-bar in ``--m`` and batch in ``--batches``. The scheduler's weights are
zero and its bias logit(m-bar), so every row has ``m_t = m-bar`` exactly
("same" rows). With ``--spread S > 0`` a second set of rows ("spread") adds
``S * x_t[0]`` (``x ~ N(0, 1)``) to the scheduler's logit, so rows need
different sizes; that is where ``compact_rows`` can pay. ``--cell=vcgru``
runs the VCGRU against the GRU instead.

Usage::

  python -m benchmarks.vc_inference          # ~2-3 minutes on CPU-2
  python -m benchmarks.vc_inference --cell=vcgru --batches=1

The suite, ``python -m benchmarks --only=vc_inference``, runs it as a user does
(unpinned, every core) and pinned to one core, 3 times each in fresh
processes taking turns, and reports both: docs/performance.md.
"""

import argparse
import math
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import _cli
from vcrnn_jax import cells, vc
from vcrnn_jax.unroll import unroll

# The suite's table (python -m benchmarks): the headline ratio columns
# (fnmatch patterns), then the time columns shown beside them.
RATIOS = ('soft/full', 'hard/8/full', 'hard/2^k/full',
          'hard/8 r*/full')
TIMES = ('us_full',)
QUICK = ['--hidden=32', '--steps=10', '--m=0.3', '--batches=4',
         '--repeats=2', '--compact_rows=1']


def _logit(p):
  return 30.0 if p >= 1.0 else math.log(p / (1.0 - p))


def vc_params(cell, hidden, m_bar, spread):
  params = cell.init(jax.random.PRNGKey(0), hidden)
  sched = params['scheduler']
  sched['bias'] = jnp.full((1,), _logit(m_bar), jnp.float32)
  sched['recurrent_kernel'] = jnp.zeros_like(sched['recurrent_kernel'])
  sched['input_kernel'] = jnp.zeros_like(sched['input_kernel']).at[0, 0].set(
      spread)
  return params


def make_run(cell):
  @jax.jit
  def run(params, xs):
    state, ys = unroll(cell, params, cell.initial_state(xs.shape[0]), xs)
    return state, ys
  return run


@_cli.writes_json
def main(argv=None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--hidden', type=int, default=1024, help='D')
  parser.add_argument('--steps', type=int, default=100,
                      help='time steps in one timed lax.scan')
  parser.add_argument('--batches', default='1,64',
                      help='comma-separated batch sizes')
  parser.add_argument('--m', default='0.2,0.3,0.5,1.0',
                      help='comma-separated targets m-bar (m_t = m-bar)')
  parser.add_argument('--spread', type=float, default=1.0,
                      help='scheduler-logit spread of the "spread" rows at '
                      'batch > 1 (0: none)')
  parser.add_argument('--cell', default='vcrnn', choices=('vcrnn', 'vcgru'),
                      help='vcrnn (against elman) or vcgru (against gru)')
  parser.add_argument('--repeats', type=int, default=15,
                      help='timed runs per configuration (median); the '
                      'configurations take turns so load hits them alike')
  parser.add_argument('--compact_rows', default='4,8',
                      help='comma-separated; a "hard/8 rC" column each: the '
                      'rows of each weight shell are computed in multiples '
                      'of C (vc.vcrnn\'s compact_rows)')
  _cli.add_quick(parser, QUICK)
  args = _cli.parse(parser, argv, QUICK)
  try:
    compact = [int(v) for v in args.compact_rows.split(',')]
  except ValueError:
    compact = [0]
  if min(compact) < 1:
    parser.error('--compact_rows must be comma-separated integers >= 1, '
                 f'got {args.compact_rows!r}')
  if min(args.hidden, args.steps, args.repeats) < 1:
    parser.error('--hidden, --steps and --repeats must be >= 1')
  batches = [int(b) for b in args.batches.split(',')]
  m_bars = [float(m) for m in args.m.split(',')]
  if any(not 0.0 < m <= 1.0 for m in m_bars):
    parser.error('--m values must be in (0, 1]')
  n = args.hidden
  factory = vc.vcrnn if args.cell == 'vcrnn' else vc.vcgru
  full = cells.elman(n) if args.cell == 'vcrnn' else cells.gru(n)
  pow2 = tuple(n >> k for k in reversed(range(8)) if n >> k >= 1)
  grouped = {f'hard/8 r{c}': factory(n, hard=True, block_sizes=8,
                                     compact_rows=c) for c in compact}
  variants = {
      'soft': factory(n, sharpness=1.0),
      'hard/8': factory(n, hard=True, block_sizes=8),
      'hard/2^k': factory(n, hard=True, block_sizes=pow2),
      **grouped,
  }
  runs = {name: make_run(cell) for name, cell in variants.items()}
  run_full = make_run(full)
  full_params = full.init(jax.random.PRNGKey(0), n)

  print(f'jax {jax.__version__} on {jax.devices()[0].device_kind} '
        f'({jax.default_backend()}); {args.cell} D={n}, {args.steps} steps '
        f'per scan, median of {args.repeats}; sizes: hard/8 = multiples of '
        f'{n // 8}, hard/2^k = {pow2}')
  header = (f'{"batch":>5} {"rows":>6} {"m-bar":>5} {"mean d":>7} '
            f'{"d/8":>5} {"d/2^k":>5} {full_name(args):>10} '
            + ' '.join(f'{k:>10}' for k in variants))
  print(header)
  results = []
  for batch in batches:
    xs = jax.random.normal(jax.random.PRNGKey(1), (batch, args.steps, n))
    kinds = ['same'] + (['spread'] if batch > 1 and args.spread > 0 else [])
    for kind in kinds:
      for m_bar in m_bars:
        spread = args.spread if kind == 'spread' else 0.0
        params = vc_params(variants['soft'], n, m_bar, spread)
        names = [k for k in variants if batch > 1 or k not in grouped]
        jobs = {'full': (run_full, full_params)}
        jobs.update({k: (runs[k], params) for k in names})
        outs = {}
        for k, (fn, p) in jobs.items():   # compile and warm up
          outs[k] = jax.block_until_ready(fn(p, xs))
        times = {k: [] for k in jobs}
        for _ in range(args.repeats):
          for k, (fn, p) in jobs.items():
            t0 = time.perf_counter()
            jax.block_until_ready(fn(p, xs))
            times[k].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) / args.steps for k, v in times.items()}
        d8 = np.asarray(outs['hard/8'][1].dims, np.float64).mean()
        d2 = np.asarray(outs['hard/2^k'][1].dims, np.float64).mean()
        need = np.ceil(np.asarray(outs['hard/8'][1].m, np.float64) * n).mean()
        ratios = ' '.join(
            f'{med[k] / med["full"]:>9.3f}x' if k in med else f'{"-":>10}'
            for k in variants)
        print(f'{batch:>5} {kind:>6} {m_bar:>5.2f} {need:>7.1f} {d8:>5.0f} '
              f'{d2:>5.0f} {med["full"] * 1e6:>8.1f}us {ratios}')
        results.append({
            'batch': batch, 'rows': kind, 'm_bar': m_bar, 'mean_d': need,
            'd/8': d8, 'd/2^k': d2, 'us_full': med['full'] * 1e6,
            **{f'{k}/full': med[k] / med['full'] if k in med else None
               for k in variants}})
  return results


def full_name(args):
  return 'elman' if args.cell == 'vcrnn' else 'gru'


if __name__ == '__main__':
  main()
