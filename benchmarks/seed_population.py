r"""Seed populations: many ACT parity seeds trained in one vmapped program.

ACT's Fig. 6 wants many seeds per time penalty (the paper: 20, each 1M
updates). This measures whether seeds trained together, ``jax.vmap`` of the
trainer's own step over a population of ``P`` seeds (each its own params,
Adam state, data key and batches, sampled inside the step as
``train_and_evaluate`` samples them), cost less per seed than one seed alone.
For each ``P`` of ``--populations`` it times, interleaved in one run, a
population's train step against one seed's (the parity run of
``experiments.act_parity``: Elman 128, batch 128, 64 bits, M = 100, at the
library's initialisation) and reports ``per_seed/single``: the population's
step time over ``P``, divided by the single seed's. Below 1, a population
trains each seed faster than a run alone.

The vmapped halting loop runs until every row of every seed has halted, so a
population pays its slowest seed's ponder (at initialisation the seeds
ponder alike; trained seeds differ). Both arms run the halting loop without
row compaction (``--compact_rows``, default none): under ``vmap`` the
``lax.cond`` that skips a compaction stage becomes a select, so a population
would run every stage on every step where a seed alone skips them. Every
population's first seed is checked against the single seed after one update
(``loss_diff`` and ``grad_norm_diff``, relative; vmapped matmuls may round
differently).

Usage::

  python -m benchmarks.seed_population                 # CPU: about 2 minutes
  python -m benchmarks.seed_population --populations=1,8,32,128 --tau=0.001

On a 2-core CPU (run beside two training runs) a population of 8 was slower
per seed than one seed alone: 1.7 times without compaction, about 2 with the
binary's (one run each): the step is bound by compute there, and the
vmapped loop runs every seed to the slowest. The question is
the GPU's, where one seed leaves the device mostly idle
(``benchmarks/gpu_loops.sh`` runs this there).
"""

import argparse
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import _cli, _train_step
from vcrnn_jax import loops
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.training import train

QUICK = ['--populations=2', '--repeats=2', '--hidden=16', '--bits=8']


def seed_step(experiment: train.Experiment, tx):
  """``(state, key) -> (state, metrics)``: one seed's update on its own
  batch (``experiment.sample`` of its data key and step), as the trainer
  runs it."""

  def one(state, key):
    batch = experiment.sample(state.data_key, state.step)
    return train.train_step(experiment, tx, state, batch, key)

  return one


def population_step(experiment: train.Experiment, tx):
  """:func:`seed_step` of every seed of a population, vmapped over the
  leading axis of the states and keys, jitted."""
  return jax.jit(jax.vmap(seed_step(experiment, tx)))


def stack_states(experiment, config: train.TrainConfig, seeds):
  """The step-0 states of ``seeds``, stacked on a leading axis."""
  states = [train.initial_state(experiment, dataclasses.replace(
      config, seed=s))[1] for s in seeds]
  return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)


def parity_run(args):
  """The parity experiment and training configuration of the flags."""
  s = act_tasks.PAPER_SETTINGS['parity']
  task = act_tasks.task_config('parity', {'bits': args.bits}).build()
  model = act_tasks.ModelConfig(
      cell=s['cell'], hidden_size=args.hidden, tau=args.tau,
      max_steps=s['max_steps'],
      loop=loops.LoopConfig(compact_rows=args.compact_rows or None))
  experiment = act_tasks.task_experiment(task, model,
                                         batch_size=s['batch_size'])
  config = train.TrainConfig(learning_rate=args.learning_rate,
                             batch_size=s['batch_size'], optimizer='adam')
  return experiment, config


@_cli.writes_json
def main(argv=None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--populations', default='1,8,32',
                      help='comma-separated population sizes P (seeds '
                      'vmapped into one train step)')
  parser.add_argument('--tau', type=float, default=1e-3,
                      help='the time penalty (it sets how long the seeds '
                      'ponder once trained; at initialisation little)')
  parser.add_argument('--learning_rate', type=float, default=1e-4,
                      help="Adam's learning rate (Fig. 6's 1e-4; it does "
                      'not change the time of a step)')
  parser.add_argument('--hidden', type=int, default=128,
                      help='Elman hidden size (the paper: 128)')
  parser.add_argument('--bits', type=int, default=64,
                      help='parity input bits (the paper: 64)')
  parser.add_argument('--compact_rows', type=int, default=0,
                      help="both arms' row compaction (0: none; the binary's "
                      'default is 8, which a population runs every stage of)')
  parser.add_argument('--repeats', type=int, default=30,
                      help='timed train steps per configuration (median)')
  _cli.add_quick(parser, QUICK)
  args = _cli.parse(parser, argv, QUICK)
  try:
    sizes = [int(v) for v in args.populations.split(',')]
  except ValueError:
    parser.error(f'--populations must be comma-separated integers, got '
                 f'{args.populations!r}')
  if min(sizes + [args.repeats, args.hidden, args.bits]) < 1:
    parser.error('--populations, --repeats, --hidden and --bits must be '
                 '>= 1')
  if args.compact_rows < 0:
    parser.error('--compact_rows must be >= 0')
  if not args.tau >= 0 or not args.learning_rate > 0:
    parser.error('--tau must be >= 0 and --learning_rate > 0')
  experiment, config = parity_run(args)
  tx = train.make_optimizer(config)
  print(f'jax {jax.__version__} on {jax.devices()[0].device_kind} '
        f'({jax.default_backend()}); parity, Elman {args.hidden}, '
        f'{args.bits} bits, batch {config.batch_size}, tau {args.tau:g}; '
        f'median of {args.repeats}, interleaved')

  state = train.initial_state(experiment, config)[1]
  key = jax.random.key(1)
  compiled = jax.jit(seed_step(experiment, tx)).lower(state, key).compile()
  steps = {'single': lambda: compiled(state, key)}
  args_of = {}
  for p in sizes:
    args_of[p] = (stack_states(experiment, config, range(p)),
                  jax.random.split(key, p).at[0].set(key))
    fn = population_step(experiment, tx).lower(*args_of[p]).compile()
    steps[p] = lambda fn=fn, p=p: fn(*args_of[p])
  for step in steps.values():
    jax.block_until_ready(step())
  med = _train_step.interleaved(steps, args.repeats)

  _, alone = steps['single']()
  print(f'{"P":>5} {"step ms":>9} {"per seed ms":>12} {"per_seed/single":>16} '
        f'{"ponder":>7} {"loss_diff":>10} {"grad_norm_diff":>15}')
  rows = []
  for p in sizes:
    _, metrics = steps[p]()
    # The population's seed 0 has the single run's seed, key and batch: its
    # loss and gradient norm are the single run's.
    diff = {k: abs(float(metrics[k][0]) / float(alone[k]) - 1)
            for k in ('loss_total', 'grad_norm')}
    per_seed = med[p] / p
    ponder = float(np.mean(metrics['ponder']))
    rows.append({'P': p, 'tau': args.tau, 'ms_step': med[p] * 1e3,
                 'ms_per_seed': per_seed * 1e3,
                 'ms_single': med['single'] * 1e3,
                 'per_seed/single': per_seed / med['single'],
                 'ponder': ponder, 'compact_rows': args.compact_rows or None,
                 'loss_diff': diff['loss_total'],
                 'grad_norm_diff': diff['grad_norm']})
    print(f'{p:>5} {med[p] * 1e3:>9.3f} {per_seed * 1e3:>12.3f} '
          f'{per_seed / med["single"]:>16.2f} {ponder:>7.2f} '
          f'{diff["loss_total"]:>10.2e} {diff["grad_norm"]:>15.2e}')
  return rows


if __name__ == '__main__':
  main()
