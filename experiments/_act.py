"""Flags and main shared by the ACT synthetic-task binaries (Section 3.1-3.4).

Each binary defines its task's own flags, calls :func:`define_flags` with the
paper's settings for that task, and passes its task name and arguments to
:func:`main`.
"""

import csv
import pathlib
from typing import Any, Mapping

from absl import flags

from experiments import _common
from vcrnn_jax import tasks
from vcrnn_jax.analysis import sweep
from vcrnn_jax.training import act_tasks
from vcrnn_jax.training.train import TrainConfig, train_and_evaluate

FLAGS = flags.FLAGS


def define_flags(*, cell: str, hidden_size: int, batch_size: int,
                 max_steps: int, steps: int, learning_rate: float,
                 eval_every: int, tau: float, workdir: str,
                 compact_rows: int = 8, ponder_slots: int = 8,
                 save_residuals: bool = False) -> None:
  """Model, ACT and training flags, defaulting to the given (paper) values."""
  flags.DEFINE_bool('act', True, 'Use Adaptive Computation Time (--act=false '
                    'trains the paper\'s no-ACT baseline).')
  _common.define_float('tau', tau, 'ACT time penalty tau of Eq. 12 (the paper '
                       'sweeps i x 10^-j).')
  flags.DEFINE_enum('cell', cell, sorted(act_tasks.CELLS), 'Recurrent cell '
                    f'wrapped by ACT (paper: {cell}).')
  _common.define_positive_int('hidden_size', hidden_size, 'Units of the '
                              f'recurrent cell (paper: {hidden_size}).')
  _common.define_positive_int('max_steps', max_steps, 'ACT hard limit M on '
                              f'ponder steps per input (Eq. 13; paper: '
                              f'{max_steps}).')
  _common.define_float('epsilon', 0.01, 'ACT halting threshold epsilon of '
                       'Eq. 7 (paper: 0.01); must be < 1.')
  flags.DEFINE_float('halting_bias', 1.0, 'Initial bias b_h of the halting '
                     'unit (Eq. 5; paper: 1).')
  flags.DEFINE_integer(
      'compact_rows', compact_rows, 'With --loop=while: once at most half of '
      'the batch still ponders, continue on a half-size batch of those rows, '
      'halving down to this many rows, so a long pondering tail costs the '
      'rows it uses (0: never compact). Same maths either way; see '
      'vcrnn_jax.act.adaptive.', lower_bound=0)
  _common.define_positive_int(
      'ponder_slots', ponder_slots, 'With --loop=while: ponder-step carries '
      'saved for the backward pass; up to this many steps are differentiated '
      'without recomputation, and memory does not grow with M.')
  flags.DEFINE_bool(
      'save_residuals', save_residuals, 'With --loop=while: also save each '
      'saved step\'s vjp residuals, so the backward pass does not re-run it. '
      'Same maths; faster for short ponders of one-step sequences, slower '
      'inside long sequences (BUILD_NOTES.md).')
  flags.DEFINE_enum('loop', 'while', ['while', 'scan'], 'ACT pondering loop: '
                    '"while" costs what it computes; "scan" is the masked '
                    'reference over all M steps.')
  _common.define_positive_int('eval_batch_size', 1000, 'Held-out sequences '
                              'per evaluation batch.')
  _common.define_positive_int('eval_batches', 1, 'Held-out batches per '
                              'evaluation (the same ones every time).')
  flags.DEFINE_bool('difficulty_report', False, 'After training, evaluate the '
                    'final params on --eval_batch_size fresh sequences at '
                    'every difficulty (the x axis of the paper\'s Fig. '
                    '6/10/14/19), print sequence error and ponder per '
                    'difficulty and write <workdir>/difficulty.csv. Rerunning '
                    'a finished run with it only evaluates.')
  _common.define_training_flags(steps=steps, batch_size=batch_size,
                                learning_rate=learning_rate,
                                eval_every=eval_every)
  _common.define_workdir(f'runs/{workdir}/act=<act>_tau=<tau>_seed=<seed>, '
                         'then _<flag>=<value> for each other non-default '
                         'flag that defines the run')


def model_config() -> act_tasks.ModelConfig:
  """The recurrent model the flags describe."""
  if FLAGS.epsilon >= 1:
    raise ValueError(f'--epsilon must be < 1, got {FLAGS.epsilon}.')
  return act_tasks.ModelConfig(
      cell=FLAGS.cell, hidden_size=FLAGS.hidden_size, act=FLAGS.act,
      tau=FLAGS.tau, max_steps=FLAGS.max_steps, epsilon=FLAGS.epsilon,
      halting_bias=FLAGS.halting_bias, loop=FLAGS.loop,
      compact_rows=FLAGS.compact_rows or None,
      checkpoints=FLAGS.ponder_slots, save_residuals=FLAGS.save_residuals)


def train_config(name: str) -> TrainConfig:
  """The training configuration the flags describe."""
  return TrainConfig(
      steps=FLAGS.steps, batch_size=FLAGS.batch_size,
      learning_rate=FLAGS.learning_rate, grad_clip_norm=FLAGS.grad_clip_norm,
      eval_every=FLAGS.eval_every, checkpoint_every=FLAGS.checkpoint_every,
      keep_checkpoints=FLAGS.keep_checkpoints, seed=FLAGS.seed,
      desc=f'{name} (act={FLAGS.act}, tau={FLAGS.tau:g})')


def workdir(name: str) -> pathlib.Path:
  """``--workdir``, or ``runs/<name>/act=<act>_tau=<tau>_seed=<seed>[_...]``.

  The default name also lists every other run-defining flag (see
  ``_common.RESUMABLE_FLAGS``) whose value is not its default, e.g.
  ``act=true_tau=0.01_seed=0_bits=8``, so runs of different settings do not
  share a folder; a rerun of the same command still resumes.
  """
  if FLAGS.workdir:
    return pathlib.Path(FLAGS.workdir)
  parts = [f'act={str(FLAGS.act).lower()}', f'tau={FLAGS.tau:g}',
           f'seed={FLAGS.seed}']
  for f in _common.run_defining_flags():
    if f.name not in ('act', 'tau', 'seed') and f.value != f.default:
      value = f'{f.value:g}' if isinstance(f.value, float) else f.value
      parts.append(f'{f.name}={value}'.replace('/', '_'))
  return pathlib.Path('runs', name, '_'.join(parts))


def report_difficulty(task_name: str, task_kwargs: Mapping[str, Any], model,
                      params, path: pathlib.Path) -> list[dict]:
  """Sequence error and ponder per difficulty; printed and written to ``path``.

  Uses the difficulties and sequence length of the paper's figures, as
  ``act_sweep`` does (e.g. logic at length 5, Fig. 10).
  """
  config = sweep.default_config(task_name, task_kwargs=task_kwargs)
  rows = act_tasks.evaluate_by_difficulty(
      tasks.get(task_name, **task_kwargs), model, params, config.difficulties,
      batch_size=FLAGS.eval_batch_size, seq_len=config.difficulty_seq_len)
  tmp = path.with_suffix('.csv.tmp')
  with open(tmp, 'w', newline='') as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  tmp.replace(path)
  print(f'{"difficulty":>10}  {"sequence_error":>14}  {"ponder":>7}')
  for r in rows:
    print(f'{r["difficulty"]:>10}  {r["sequence_error"]:>14.4f}  '
          f'{r["ponder"]:>7.3f}')
  print(f'wrote {path}')
  return rows


def main(name: str, task_name: str, task_kwargs: Mapping[str, Any]):
  """Trains ``tasks.get(task_name, **task_kwargs)`` with the flags' settings."""
  model = model_config()
  task = tasks.get(task_name, **task_kwargs)   # Bad task flags fail first.
  run_dir = workdir(name)
  _common.check_run_flags(run_dir)
  experiment = act_tasks.task_experiment(
      task, model, batch_size=FLAGS.batch_size,
      eval_batch_size=FLAGS.eval_batch_size, eval_batches=FLAGS.eval_batches)
  result = train_and_evaluate(experiment, train_config(name), run_dir)
  if FLAGS.difficulty_report:
    report_difficulty(task_name, task_kwargs, model, result.params,
                      run_dir / 'difficulty.csv')
  return result
