"""Does Skip-RNN's hard inference path make skipped steps free? Hard vs soft.

``skip.skip(cell, hard=True)`` runs the wrapped cell under a ``lax.cond`` on
whether any row of the batch updates, so a step on which every row skips
costs only the gate; ``hard=False`` (the training path) always runs the
wrapped cell and selects. This benchmark measures, side by side in one run,
the time of a jitted forward-only ``vcrnn_jax.unroll`` (a ``lax.scan`` over
``--steps`` steps, so dispatch does not dominate) at ``D = --hidden`` for:

  * ``soft``: ``skip.skip(cell)``, the wrapped cell at every step;
  * ``hard``: ``skip.skip(cell, hard=True)``;
  * ``plain``: the wrapped cell alone (``--cell``, Elman by default), with
    no gate: what a step that updates cannot go below.

The gate's kernel is zero and its bias logit(q) with q = 0.5 / (k - 0.5),
so Delta-u~ = q on every step and every row updates exactly once every
k = round(1 / f) steps (S4: u~ grows by q from q after an update and rounds
to 1 at the k-th step), for each target fraction f in ``--fractions``; the
table reports the measured fraction ``ys.update.mean()``.

At batch > 1 a step is skipped only when *every* row skips. With identical
rows ("same": same Delta-u~ and initial u~ everywhere) all rows update on
the same steps, the best case for the hard path. The "phased" rows (batch >
1, fraction ``--phased``) have the same period but initial u~ varied per row
(row b starts as if it updated b mod k steps ago), so the rows' updates fall
on different steps: with batch >= k some row updates on every step
(``runs`` = 1, the fraction of steps on which the cell runs) and the hard
path saves nothing, although each row still updates only a fraction f of
its steps.

Usage::

  python -m benchmarks.skip_inference           # ~4 minutes
  python -m benchmarks.skip_inference --quick   # seconds (the smoke test)

The suite, ``python -m benchmarks --only=skip_inference``, runs it as a
user does (unpinned, every core) and pinned to one core, 3 times each in
fresh processes taking turns, and reports both: docs/performance.md.

Result on CPU-2, unpinned (the suite's record, 2 runs; docs/performance.md
has the table): with rows in step and 10% of steps updating, hard/soft is
0.18 (batch 1) and 0.28 (batch 64) at D=1024, so a skipped step costs
close to nothing; at f=1 the hard path saves nothing and costs the gate
(0.99-1.04x soft). Rows out of phase (runs = 1 although each row updates
10% of its steps) save nothing without compaction (1.00-1.07x) and 0.35x
(D=256) and 0.40x (D=1024) with ``compact_rows=8``; on this CPU the plain
Elman step on 8 rows already costs about half of its cost on 64 rows at
D=1024 (``--hidden=1024 --batches=8,64 --fractions=1.0 --phased=0``):
that is the grouped path's floor.
"""

import argparse
import math
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import _cli
from vcrnn_jax import cells, skip
from vcrnn_jax.unroll import unroll

CELLS = {'elman': cells.elman, 'gru': cells.gru, 'lstm': cells.lstm}
# The suite's table (python -m benchmarks): the headline ratio columns
# (fnmatch patterns), then the time columns shown beside them.
RATIOS = ('hard/soft', 'grouped/soft', 'hard/plain')
TIMES = ('ms_soft',)
QUICK = ['--hidden=32', '--batches=1,4', '--steps=20', '--fractions=0.1,1.0',
         '--repeats=2', '--compact_rows=1']
KEYS = ('hidden', 'batch', 'rows', 'fraction', 'runs', 'ms_soft', 'ms_hard',
        'ms_grouped', 'ms_plain', 'hard/soft', 'grouped/soft', 'hard/plain')


def period(fraction):
  """Steps between two updates for a target update fraction."""
  return max(1, round(1.0 / fraction))


def gate_params(params, k):
  """``params`` with Delta-u~ = 0.5 / (k - 0.5): an update every k steps."""
  q = 0.5 / (k - 0.5)
  bias = 30.0 if q >= 1.0 else math.log(q / (1.0 - q))
  update = params['update']
  return {**params, 'update': {
      'kernel': jnp.zeros_like(update['kernel']),
      'bias': jnp.full_like(update['bias'], bias)}}


def phased_state(state, k):
  """``state`` with row b's initial u~ = (k - b mod k) q: it first updates
  at step b mod k + 1 (0-based step b mod k), then every k steps."""
  batch = state.update_prob.shape[0]
  q = 0.5 / (k - 0.5)
  j = k - np.arange(batch) % k
  prob = np.minimum(j * q, 1.0).astype(np.float32)
  return state._replace(update_prob=jnp.asarray(prob,
                                                state.update_prob.dtype))


def make_run(cell):
  @jax.jit
  def run(params, state, xs):
    return unroll(cell, params, state, xs)
  return run


def timed(jobs, repeats):
  """Median seconds of each job; one warm-up (compile) run each first, then
  the jobs take turns so load hits them alike."""
  outs = {k: jax.block_until_ready(fn(*a)) for k, (fn, a) in jobs.items()}
  times = {k: [] for k in jobs}
  for _ in range(repeats):
    for k, (fn, a) in jobs.items():
      t0 = time.perf_counter()
      jax.block_until_ready(fn(*a))
      times[k].append(time.perf_counter() - t0)
  return outs, {k: statistics.median(v) for k, v in times.items()}


@_cli.writes_json
def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--hidden', default='256,1024',
                      help='comma-separated D (input size = D)')
  parser.add_argument('--steps', type=int, default=100,
                      help='time steps in one timed lax.scan')
  parser.add_argument('--batches', default='1,64',
                      help='comma-separated batch sizes')
  parser.add_argument('--fractions', default='0.1,0.3,0.5,1.0',
                      help='comma-separated target update fractions')
  parser.add_argument('--phased', type=float, default=0.1,
                      help='fraction of the out-of-phase rows at batch > 1 '
                      '(0: none)')
  parser.add_argument('--compact_rows', type=int, default=8,
                      help='"grouped": the hard path that runs the cell on '
                      'the smallest multiple of this many rows holding the '
                      'updating rows (skip.skip\'s compact_rows)')
  parser.add_argument('--cell', default='elman', choices=tuple(CELLS),
                      help='the wrapped cell')
  parser.add_argument('--repeats', type=int, default=15,
                      help='timed runs per configuration (median)')
  _cli.add_quick(parser, QUICK)
  args = _cli.parse(parser, argv, QUICK)
  hiddens = [int(h) for h in args.hidden.split(',')]
  batches = [int(b) for b in args.batches.split(',')]
  fractions = [float(f) for f in args.fractions.split(',')]
  if min(hiddens + batches + [args.steps, args.repeats,
                               args.compact_rows]) < 1:
    parser.error('--hidden, --batches, --steps, --repeats and '
                 '--compact_rows must be >= 1')
  if any(not 0.0 < f <= 1.0 for f in fractions + [args.phased or 1.0]):
    parser.error('--fractions and --phased must be in (0, 1]')

  print(f'jax {jax.__version__} on {jax.devices()[0].device_kind} '
        f'({jax.default_backend()}); {args.cell}, {args.steps} steps per '
        f'scan, median of {args.repeats}')
  print(f'{"hidden":>6} {"batch":>5} {"rows":>6} {"update":>6} {"runs":>4} '
        f'{"ms soft":>7} {"ms hard":>7} {"ms grp":>7} {"ms plain":>8} '
        f'{"hard/soft":>9} {"grp/soft":>8} {"hard/plain":>10}')
  results = []
  for n in hiddens:
    inner = CELLS[args.cell](n)
    soft, hard = skip.skip(inner), skip.skip(inner, hard=True)
    grouped = skip.skip(inner, hard=True, compact_rows=args.compact_rows)
    run_soft, run_hard, run_grouped, run_plain = map(
        make_run, (soft, hard, grouped, inner))
    params = soft.init(jax.random.PRNGKey(0), n)
    for batch in batches:
      xs = jax.random.normal(jax.random.PRNGKey(1), (batch, args.steps, n))
      cases = [('same', f) for f in fractions]
      if batch > 1 and args.phased:
        cases.append(('phased', args.phased))
      for rows, fraction in cases:
        k = period(fraction)
        p = gate_params(params, k)
        state = soft.initial_state(batch)
        if rows == 'phased':
          state = phased_state(state, k)
        jobs = {'soft': (run_soft, (p, state, xs)),
                'hard': (run_hard, (p, state, xs)),
                'grouped': (run_grouped, (p, state, xs)),
                'plain': (run_plain, (params['cell'],
                                      inner.initial_state(batch), xs))}
        outs, med = timed(jobs, args.repeats)
        update = np.asarray(outs['hard'][1].update, np.float64)
        np.testing.assert_array_equal(outs['grouped'][1].update,
                                      outs['hard'][1].update)
        row = {'hidden': n, 'batch': batch, 'rows': rows,
               'fraction': float(update.mean()),
               'runs': float(update.max(axis=0).mean()),
               'ms_soft': med['soft'] * 1e3, 'ms_hard': med['hard'] * 1e3,
               'ms_grouped': med['grouped'] * 1e3,
               'ms_plain': med['plain'] * 1e3,
               'hard/soft': med['hard'] / med['soft'],
               'grouped/soft': med['grouped'] / med['soft'],
               'hard/plain': med['hard'] / med['plain']}
        results.append(row)
        print(f'{n:>6} {batch:>5} {rows:>6} {row["fraction"]:>6.3f} '
              f'{row["runs"]:>4.2f} {row["ms_soft"]:>7.2f} '
              f'{row["ms_hard"]:>7.2f} {row["ms_grouped"]:>7.2f} '
              f'{row["ms_plain"]:>8.2f} {row["hard/soft"]:>9.3f} '
              f'{row["grouped/soft"]:>8.3f} {row["hard/plain"]:>10.3f}',
              flush=True)
  return results


if __name__ == '__main__':
  main()
