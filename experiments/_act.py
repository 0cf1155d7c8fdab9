"""Flags and main shared by the ACT binaries (ACT paper Section 3).

Each synthetic-task binary defines its task's own flags, calls
:func:`define_flags` with ``act_tasks.PAPER_SETTINGS[task]`` and passes its
task to :func:`main`, which trains
:func:`vcrnn_jax.papers.act.runs.task_run` of the flag values;
``act_wikipedia`` uses the model flags only (``task_flags=False``);
``act_sweep`` defines them with no defaults (``settings=None``: each task's
paper value) and reads its configuration from :func:`sweep_config`, on the
same library mapping from flag values to model and training
(:mod:`vcrnn_jax.papers.act.runs`).
"""

from collections.abc import Mapping
import pathlib
from typing import Any

from absl import flags

from experiments import _common
from vcrnn_jax import act
from vcrnn_jax.files import atomic_write
from vcrnn_jax.papers.act import runs as act_runs
from vcrnn_jax.papers.act import sweep as act_sweep
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.training import distributed

FLAGS = flags.FLAGS

_PER_TASK = '(default: the paper\'s for --task)'


def define_flags(settings: Mapping[str, Any] | None, *,
                 task_flags: bool = True) -> None:
  """Model, ACT and training flags, defaulting to ``settings`` (the paper's).

  Args:
    settings: an entry of ``act_tasks.PAPER_SETTINGS`` (or
      ``WIKIPEDIA_SETTINGS``); None leaves the defaults unset, for a binary
      that picks them per task.
    task_flags: also the flags of the synthetic-task evaluation
      (``--eval_batch_size``, ``--eval_batches``, ``--difficulty_report``).
  """
  s = dict(settings or {})

  def paper(name):
    return f'(paper: {s[name]})' if name in s else _PER_TASK

  flags.DEFINE_bool('act', True, 'Use Adaptive Computation Time (--act=false '
                    'trains the paper\'s no-ACT baseline).')
  _common.define_float('tau', s.get('tau'), 'ACT time penalty tau of Eq. 12 '
                       f'{paper("tau")}; the paper sweeps i x 10^-j.')
  flags.DEFINE_enum('cell', s.get('cell'), sorted(act_tasks.CELLS),
                    f'Recurrent cell wrapped by ACT {paper("cell")}.')
  _common.define_positive_int('hidden_size', s.get('hidden_size'),
                              f'Units of the recurrent cell '
                              f'{paper("hidden_size")}.')
  _common.define_positive_int('max_steps', s.get('max_steps'), 'ACT hard '
                              'limit M on ponder steps per input (Eq. 13) '
                              f'{paper("max_steps")}.')
  _common.define_float('epsilon', 0.01, 'ACT halting threshold epsilon of '
                       'Eq. 7 (paper: 0.01), in (0, 1).', strict=True,
                       upper=1.0)
  flags.DEFINE_float('halting_bias', 1.0, 'Initial bias b_h of the halting '
                     'unit (Eq. 5; paper: 1).')
  # The loop settings change the cost, not the maths: resumable.
  _common.mark_resumable(flags.DEFINE_integer(
      'compact_rows', act.DEFAULT_LOOP.compact_rows or 0,
      'With --loop=while: once at most half of the batch still ponders, '
      'continue on a half-size batch of those rows, halving down to this many '
      'rows, so a long pondering tail costs the rows it uses (0: never '
      'compact). Same maths up to float rounding; see vcrnn_jax.act.adaptive. '
      'The progress line\'s "tail" is the share of the loop\'s row-steps '
      'spent on halted rows: near 1, a run without compaction pays mostly '
      'for rows that have stopped.', lower_bound=0))
  _common.define_positive_int(
      'ponder_slots', act.DEFAULT_LOOP.checkpoints,
      'With --loop=while: ponder-step carries saved for the backward pass; up '
      'to this many steps are differentiated without recomputation, and '
      'memory does not grow with M.', resumable=True)
  _common.mark_resumable(flags.DEFINE_bool(
      'save_residuals', act.DEFAULT_LOOP.save_residuals,
      'With --loop=while: also save each saved step\'s vjp residuals, so the '
      'backward pass does not re-run it. Same maths; faster for short ponders '
      'of one-step sequences, slower inside long sequences '
      '(docs/performance.md).'))
  _common.mark_resumable(flags.DEFINE_enum(
      'loop', 'while', ['while', 'scan'], 'ACT pondering loop: "while" costs '
      'what it computes; "scan" is the masked reference over all M steps.'))
  if task_flags:
    # How the result is evaluated and reported: resumable.
    _common.define_positive_int('eval_batch_size', 1000, 'Held-out sequences '
                                'per evaluation batch (and per difficulty).',
                                resumable=True)
    _common.define_positive_int('eval_batches', 1, 'Held-out batches per '
                                'evaluation (the same ones every time).',
                                resumable=True)
    _common.mark_resumable(flags.DEFINE_bool(
        'difficulty_report', False, 'After training, evaluate the final '
        'params on --eval_batch_size fresh sequences at every difficulty (the '
        'x axis of the paper\'s Fig. 6/10/14/19), print sequence error and '
        'ponder per difficulty and write <workdir>/difficulty.csv. Rerunning '
        'a finished run with it only evaluates.'))
  _common.define_training_flags(
      steps=s.get('steps'), batch_size=s.get('batch_size'),
      learning_rate=s.get('learning_rate'), eval_every=s.get('eval_every'))


def sweep_config(task: str, task_kwargs: Mapping[str, Any] | None = None, *,
                 name: str | None = None, difficulties=None,
                 **train_overrides) -> act_sweep.SweepConfig:
  """The task, model and training the flags describe for synthetic ``task``.

  A flag left unset (``act_sweep``'s, defined without defaults) takes the
  paper's value for the task (``act_tasks.PAPER_SETTINGS``), also in
  :data:`FLAGS`, which ``act_sweep`` reads on; the task binaries' flags
  default to those values already.

  Args:
    task: one of ``act_tasks.TASKS``.
    task_kwargs: the task arguments its flags give.
    name: the binary, which labels the progress bar (default: ``task``).
    difficulties: those of the per-difficulty evaluation (default: all).
    **train_overrides: ``TrainConfig`` fields the caller sets.
  """
  for setting, value in act_tasks.PAPER_SETTINGS[task].items():
    if setting in FLAGS and FLAGS[setting].value is None:
      FLAGS.set_default(setting, value)
  return task_config(_common.flag_values(), task, task_kwargs, name=name,
                     difficulties=difficulties, **train_overrides)


def task_config(values: Mapping[str, Any], task: str,
                task_kwargs: Mapping[str, Any] | None = None, *,
                name: str | None = None, difficulties=None,
                **train_overrides) -> act_sweep.SweepConfig:
  """:func:`sweep_config` from the flags in ``values``, a pure function.

  A value that is None takes the paper's for ``task``, as
  :func:`sweep_config` sets it.
  """
  values = act_runs.with_paper_defaults(values, task)
  return act_sweep.SweepConfig(
      act_tasks.task_config(task, task_kwargs, difficulties=difficulties),
      act_runs.model_config(values),
      act_runs.train_config(values, name or task, **train_overrides),
      eval_batch_size=values['eval_batch_size'])


def workdir(name: str) -> pathlib.Path:
  """``--workdir``, or ``runs/<name>/act=<act>_tau=<tau>_seed=<seed>[_...]``."""
  return _common.default_workdir(name, leading=('act', 'tau', 'seed'))


def define_workdir(name: str) -> None:
  _common.define_workdir(f'runs/{name}/act=<act>_tau=<tau>_seed=<seed>, '
                         'then _<flag>=<value> for each other non-default '
                         'flag that defines the run')


def report_difficulty(task: act_tasks.TaskConfig, model, params,
                      path: pathlib.Path) -> list[dict]:
  """Sequence error and ponder per difficulty; printed and written to ``path``.

  At the task's difficulties and sequence length, those of the paper's
  figures (e.g. logic at length 5, Fig. 10), as ``act_sweep`` reports them.
  """
  rows = act_tasks.evaluate_by_difficulty(
      task.build(), model, params, task.difficulties,
      batch_size=FLAGS.eval_batch_size, seq_len=task.difficulty_seq_len)
  fields = list(rows[0])
  lines = [','.join(fields)] + [','.join(str(r[k]) for k in fields)
                                for r in rows]
  atomic_write(path, '\n'.join(lines) + '\n')
  print(f'{"difficulty":>10}  {"sequence_error":>14}  {"ponder":>7}')
  for r in rows:
    print(f'{r["difficulty"]:>10}  {r["sequence_error"]:>14.4f}  '
          f'{r["ponder"]:>7.3f}')
  print(f'wrote {path}')
  return rows


def main(name: str, task_name: str, processes: distributed.Processes):
  """Trains ``act_runs.task_run`` of ``task_name`` with the flags' settings.

  ``processes`` is the run's handle, what :func:`_common.run` passes to the
  binary's ``main``.
  """
  # Bad flags fail here.
  run = act_runs.task_run(_common.flag_values(), task_name, name=name)
  run_dir = workdir(name)
  result = _common.train(run.experiment, run.config, run_dir,
                         processes=processes)
  # Process 0 alone reports (the others wait for it at the end of the run).
  if FLAGS.difficulty_report and processes.is_chief():
    report_difficulty(run.task, run.settings, result.params,
                      run_dir / 'difficulty.csv')
  return result
