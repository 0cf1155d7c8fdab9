r"""How much of an ACT run's loop work is useful: the tail of N(t) per batch.

The ponder while loop runs until every row of the batch has halted, so at each
input step it costs the batch's *largest* N(t), not the mean. This tool
restores the latest checkpoint of a synthetic-task run, runs the forward pass
on fresh training-size batches, and prints the distribution of N(t) over the
real (unpadded) input steps, the loop iterations each batch actually runs
(sum over time of the batch maximum of N), and the row utilisation: the share
of computed rows that were still pondering.

Usage::

  python -m benchmarks.ponder_tail \
      --workdir=runs/act_parity/act=true_tau=0.01_seed=0
  python -m benchmarks.ponder_tail --workdir=runs/sweep/tau=0.001_seed=0
  python -m benchmarks.ponder_tail --workdir=W --time=20

``--time=N`` also times N gradient steps (loss and gradient, no optimizer)
on the checkpoint's params under each loop setting, interleaved in one run:
8 backward slots without residuals, without compaction (the baseline); the
pondering tail compacted (``compact_rows=8``, ``act.DEFAULT_LOOP``); compacted
with 4 slots that keep their vjp residuals (``act_parity``'s setting); and 4
or 8 slots with residuals, without compaction. Every setting computes the
same maths up to float rounding; only the time differs.

A binary's workdir is read through its ``flags.json``; an ``act_sweep`` run
through the ``sweep.json`` of its parent folder and its ``tau=<tau>_seed=<s>``
name. The task is found from the flags (``--task`` overrides it).
"""

import argparse
import inspect
import json
import pathlib
import re
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax import loops, tasks
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.training.train import (
  StepInfo,
  TrainConfig,
  restore_latest_params,
)

# The flag that only one task's factory takes, to recognise a binary's task.
_TASK_MARKERS = {'bits': 'parity', 'num_gates': 'logic',
                 'max_digits': 'addition', 'min_len': 'sort'}


def run_settings(workdir: pathlib.Path, task: str = None) -> dict:
  """Task, task kwargs, model and optimizer settings of the run in ``workdir``.

  Raises:
    ValueError: the folder is neither a binary's workdir nor a sweep run.
  """
  flags_path = workdir / 'flags.json'
  if flags_path.is_file():
    flags = json.loads(flags_path.read_text())
    if not flags.get('act', True):
      raise ValueError(f'{workdir} is a run without ACT (--act=false).')
    if task is None:
      found = [t for k, t in _TASK_MARKERS.items() if k in flags]
      if len(found) != 1:
        raise ValueError(f'cannot tell the task of {workdir}; pass --task.')
      task = found[0]
    allowed = inspect.signature(getattr(tasks, task).task).parameters
    task_kwargs = {k: v for k, v in flags.items() if k in allowed}
    return dict(task=task, task_kwargs=task_kwargs, **flags)
  sweep_path = workdir.parent / 'sweep.json'
  match = re.fullmatch(r'tau=([^_]+)_seed=(\d+)', workdir.name)
  if sweep_path.is_file() and match:
    settings = json.loads(sweep_path.read_text())
    return dict(settings, tau=float(match.group(1)), act=True,
                seed=int(match.group(2)))
  raise ValueError(f'{workdir} has no flags.json and is not an ACT run of an '
                   'act_sweep folder.')


def restore_params(workdir: pathlib.Path, s: dict, experiment):
  """The params of the latest checkpoint (its step and the params)."""
  config = TrainConfig(steps=1, batch_size=s['batch_size'],
                       learning_rate=s['learning_rate'],
                       grad_clip_norm=s.get('grad_clip_norm'))
  return restore_latest_params(experiment, config, workdir)


def tail_stats(steps: np.ndarray, valid: np.ndarray) -> dict:
  """Statistics of ``steps`` (N(t), ``[batches, B, T]``) over valid steps."""
  n = steps[valid > 0]
  # The loop at input step t runs max over the batch of N(t). unroll zeroes
  # the outputs of padded steps, whose rows take exactly one step (ACT's
  # ``active`` mask).
  iterations = np.max(np.where(valid > 0, steps, 1), axis=1).sum(axis=1)
  rows = steps.shape[1]
  return dict(
      mean_n=float(n.mean()), p50=float(np.percentile(n, 50)),
      p90=float(np.percentile(n, 90)), p99=float(np.percentile(n, 99)),
      max_n=int(n.max()),
      loop_iterations=float(iterations.mean()),
      utilisation=float(n.sum() / (rows * iterations.sum())))


def main(argv=None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--workdir', required=True, type=pathlib.Path,
                      help='workdir of an ACT synthetic-task run')
  parser.add_argument('--task', choices=sorted(_TASK_MARKERS.values()),
                      help='task of the run (default: read from its flags)')
  parser.add_argument('--batches', type=int, default=20,
                      help='fresh batches of the training batch size to run')
  parser.add_argument('--seed', type=int, default=12345,
                      help='seed of the fresh batches')
  parser.add_argument('--time', type=int, default=0,
                      help='also time this many gradient steps under each '
                      'loop setting (compaction, backward slots, residuals)')
  args = parser.parse_args(argv)
  try:
    s = run_settings(args.workdir, args.task)
  except ValueError as e:
    parser.exit(2, f'ponder_tail: error: {e}\n')
  task = tasks.get(s['task'], **s['task_kwargs'])
  model = act_tasks.ModelConfig(
      cell=s['cell'], hidden_size=s['hidden_size'], act=True, tau=s['tau'],
      max_steps=s['max_steps'], epsilon=s['epsilon'],
      halting_bias=s['halting_bias'], loop='while')
  experiment = act_tasks.task_experiment(task, model,
                                         batch_size=s['batch_size'])
  try:
    step, params = restore_params(args.workdir, s, experiment)
  except ValueError as e:
    parser.exit(2, f'ponder_tail: error: {e}\n')
  net = act_tasks.build_model(task, model)

  @jax.jit
  def n_of(params, key):
    batch = task.sample(key, s['batch_size'])
    valid, lengths = act_tasks.step_mask(batch.mask)
    _, ys = net.apply(params, batch.inputs, lengths)
    return ys.steps, valid

  key = jax.random.PRNGKey(args.seed)
  out = [n_of(params, jax.random.fold_in(key, i)) for i in range(args.batches)]
  steps = np.stack([np.asarray(o[0]) for o in out])
  valid = np.stack([np.asarray(o[1]) for o in out])
  stats = tail_stats(steps, valid)
  print(f'{args.workdir} (step {step}, {s["task"]}, tau={s["tau"]:g}, '
        f'M={s["max_steps"]}, batch {s["batch_size"]}, '
        f'{args.batches} fresh batches)')
  print(f'N(t) over real input steps: mean {stats["mean_n"]:.2f}, median '
        f'{stats["p50"]:g}, p90 {stats["p90"]:g}, p99 {stats["p99"]:g}, max '
        f'{stats["max_n"]}')
  print(f'loop iterations per batch (sum over t of the batch max of N): '
        f'{stats["loop_iterations"]:.1f}')
  print(f'row utilisation (rows still pondering / rows computed): '
        f'{stats["utilisation"]:.1%}')
  if args.time > 0:
    stats.update(time_loop_settings(task, model, s['batch_size'], params,
                                    key, args.time))
  return stats


# Loop settings timed by --time. The first is the baseline the speed-ups are
# relative to.
LOOP_SETTINGS = (
    ('no compaction', loops.LoopConfig()),
    ('compact_rows=8', loops.LoopConfig(compact_rows=8)),
    ('compact_rows=8, 4 slots+residuals',
     loops.LoopConfig(checkpoints=4, save_residuals=True, compact_rows=8)),
    ('4 slots+residuals', loops.LoopConfig(checkpoints=4,
                                           save_residuals=True)),
    ('8 slots+residuals', loops.LoopConfig(save_residuals=True)),
)


def time_loop_settings(task, model, batch_size, params, key,
                       repeats) -> dict:
  """Median gradient-step ms under each of LOOP_SETTINGS, interleaved."""
  steps = {}
  for name, loop in LOOP_SETTINGS:
    experiment = act_tasks.task_experiment(task, model._replace(loop=loop),
                                           batch_size=batch_size)
    info = StepInfo(jax.random.PRNGKey(0), jnp.zeros((), jnp.int32))
    steps[name] = jax.jit(jax.grad(
        lambda p, b, e=experiment, i=info: e.loss(p, b, i)[0]))
  batches = [task.sample(jax.random.fold_in(key, 10_000 + i), batch_size)
             for i in range(repeats)]
  for f in steps.values():                       # Compile outside the timing.
    jax.block_until_ready(f(params, batches[0]))
  times = {name: [] for name in steps}
  for b in batches:
    for name, f in steps.items():
      t0 = time.perf_counter()
      jax.block_until_ready(f(params, b))
      times[name].append(time.perf_counter() - t0)
  med = {name: statistics.median(t) for name, t in times.items()}
  base = med[LOOP_SETTINGS[0][0]]
  out = {}
  for name, t in med.items():
    print(f'gradient step, {name}: {1e3 * t:.3f} ms (median of {repeats}; '
          f'{base / t:.2f}x the speed without compaction)')
    out[f'ms[{name}]'] = 1e3 * t
  return out


if __name__ == '__main__':
  main(sys.argv[1:])
