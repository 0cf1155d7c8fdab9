r"""The ACT paper's grid search over the time penalty tau, resumable, with CSVs.

Graves (2016), Section 3, trains "20 randomly initialised networks ... for each
value of tau" on a logarithmic grid :math:`\tau = i \times 10^{-j}`, ``i`` in
1-10 and ``j`` in 1-4 (1-3 for Wikipedia), plus networks without ACT, and plots
the final error rates (Figs 4/8/12/17), error versus ponder (Figs 5/9/13/18)
and ponder and error versus difficulty (Figs 6/10/14/19). This module runs
such a grid for the synthetic tasks, one run after the other in one process::

  config = act_sweep.default_config('parity', steps=2000)
  runs = act_sweep.make_grid(act_sweep.paper_taus(), seeds=range(20),
                             baseline=True)
  summary = act_sweep.run_sweep(config, runs, 'runs/sweep_parity')
  summary.results      # rows of results.csv for this task
  summary.difficulty   # rows of difficulty.csv for this task

Layout of ``workdir``:

* ``tau=<tau>_seed=<seed>/`` and ``noact_seed=<seed>/``: one workdir of
  :func:`~vcrnn_jax.training.train.train_and_evaluate` per run (checkpoints,
  ``metrics.jsonl``, TensorBoard), plus ``sweep_run.json`` holding the run's
  training wall time summed over attempts;
* ``results.csv``: one row per run, :data:`RESULTS_FIELDS`;
* ``difficulty.csv``: one row per run and difficulty, :data:`DIFFICULTY_FIELDS`;
* ``sweep.json``: the settings every run shares, checked on every invocation
  so that one CSV never mixes runs of different models.

Resuming (the same call again) is cheap and never duplicates rows:

* a run whose checkpoint is at the final step and whose rows are in both CSVs
  is skipped without being loaded;
* a finished run with missing rows (CSVs deleted, new difficulties) is
  restored through ``train_and_evaluate``, which returns at once when the
  checkpoint is at the final step; its final metrics are read back from its
  ``metrics.jsonl`` (re-evaluated if that line is gone) and the per-difficulty
  evaluation is redone on the restored parameters;
* an interrupted run resumes from its latest checkpoint;
* rows are keyed by ``(task, act, tau, seed)`` and replaced, never appended
  twice; both CSVs are rewritten sorted, through a temporary file.

A run whose loss becomes NaN gets a ``diverged.txt`` marker and is skipped by
later invocations (training is deterministic, so it would diverge again);
delete its folder to retry it.

Several processes (``jax.distributed``) train each run together, given the
handle :func:`vcrnn_jax.training.distributed.initialize` returned
(``run_sweep(..., processes=...)``); every process reads the CSVs and
markers, process 0 alone writes them.

Deviations from the paper (as for ``experiments/act_parity.py``): Adam with
learning rate 1e-3 on one worker instead of 1e-4 with 16 Hogwild! threads, and
far fewer than 1M updates per run (``steps`` in
:data:`vcrnn_jax.papers.act.tasks.PAPER_SETTINGS`).

References:
  Graves, A. Adaptive Computation Time for Recurrent Neural Networks. 2016,
  arXiv:1603.08983, Section 3.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
import dataclasses
import decimal
import math
import pathlib
import time
from typing import (
  Any,
  NamedTuple,
)

import jax

from vcrnn_jax import loops
from vcrnn_jax.core import check_positive_int
from vcrnn_jax.files import atomic_write
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.training import distributed, sweep
from vcrnn_jax.training.sweep import (
  DIVERGED_FILENAME,
  read_rows,
  run_key,
  upsert_rows,
)
from vcrnn_jax.training.train import (
  TrainConfig,
  TrainingDiverged,
  train_and_evaluate,
)

__all__ = [
    'RESULTS_FILENAME',
    'DIFFICULTY_FILENAME',
    'RUN_KEY',
    'RESULTS_FIELDS',
    'DIFFICULTY_FIELDS',
    'TASKS',
    'paper_taus',
    'parse_taus',
    'format_tau',
    'RunSpec',
    'make_grid',
    'SweepConfig',
    'default_config',
    'model_config',
    'train_config',
    'check_manifest',
    'RunOutcome',
    'run_one',
    'SweepSummary',
    'run_sweep',
]

RESULTS_FILENAME = 'results.csv'
DIFFICULTY_FILENAME = 'difficulty.csv'

# A run of the sweep: its CSV rows are keyed (replaced, never duplicated) by it.
RUN_KEY = ('task', 'act', 'tau', 'seed')
RESULTS_FIELDS = ('task', 'act', 'tau', 'seed', 'steps', 'sequence_error',
                  'ponder', 'loss', 'wall_seconds')
DIFFICULTY_FIELDS = ('task', 'act', 'tau', 'seed', 'difficulty',
                     'sequence_error', 'ponder')

TASKS = act_tasks.TASKS


# ----------------------------------------------------------------------------
# The grid.


def paper_taus(max_exponent: int = 4) -> tuple[float, ...]:
  r"""The paper's time penalties :math:`i \times 10^{-j}`, sorted and unique.

  With ``i`` in 1..10 and ``j`` in 1..``max_exponent`` there are
  ``10 * max_exponent`` products but only ``9 * max_exponent + 1`` values:
  ``10 x 10^-j`` equals ``1 x 10^-(j-1)`` for ``j >= 2``. For the synthetic
  tasks (``max_exponent=4``) that is 37 values from 1e-4 to 1.0; for
  Wikipedia (``max_exponent=3``) 28 values from 1e-3 to 1.0.

  Args:
    max_exponent: the largest ``j`` (4 for the synthetic tasks, 3 for
      Wikipedia).

  Returns:
    The values in increasing order, each the float nearest its decimal
    (``3e-4``, not ``3 * 1e-4 = 0.00030000000000000003``).
  """
  max_exponent = check_positive_int('max_exponent', max_exponent)
  # Exact decimal products, so equal values collapse and print as written.
  values = {decimal.Decimal(i).scaleb(-j) for i in range(1, 11)
            for j in range(1, max_exponent + 1)}
  return tuple(float(v) for v in sorted(values))


def parse_taus(text: str) -> tuple[float, ...]:
  """Parses ``--taus``: ``'paper'`` or comma-separated numbers ``>= 0``.

  Returns:
    The sorted, de-duplicated values (``'paper'``: :func:`paper_taus`).

  Raises:
    ValueError: an empty list, a value that is not a number, or one that is
      negative or not finite; the message names the value.
  """
  text = text.strip()
  if text.lower() == 'paper':
    return paper_taus()
  values = set()
  for part in text.split(','):
    part = part.strip()
    try:
      value = float(part)
    except ValueError:
      raise ValueError(f'tau {part!r} is not a number; give comma-separated '
                       "numbers such as 1e-3,0.01 or 'paper'.") from None
    if not (math.isfinite(value) and value >= 0):
      raise ValueError(f'tau must be a finite number >= 0, got {part!r}.')
    values.add(value)
  return tuple(sorted(values))


def format_tau(tau: float) -> str:
  """The shortest text that reads back as ``tau`` (``0.001``, ``1e-05``)."""
  return repr(float(tau))


class RunSpec(NamedTuple):
  """One run of the grid: ACT with penalty ``tau``, or the no-ACT baseline."""
  act: bool
  tau: float | None   # None for the baseline
  seed: int

  @property
  def name(self) -> str:
    """Its sub-workdir: ``tau=<tau>_seed=<seed>`` or ``noact_seed=<seed>``."""
    if not self.act:
      return f'noact_seed={self.seed}'
    return f'tau={format_tau(self.tau)}_seed={self.seed}'


def make_grid(taus: Iterable[float], seeds: Iterable[int], *,
              baseline: bool = True) -> list[RunSpec]:
  """Every ``(tau, seed)`` run, plus one no-ACT run per seed if ``baseline``.

  Seeds are the outer loop, so an interrupted sweep already has every tau for
  its first seeds (enough for a first look at the plots).
  """
  taus = sorted(set(float(t) for t in taus))
  runs = []
  for seed in sorted(set(int(s) for s in seeds)):
    if baseline:
      runs.append(RunSpec(False, None, seed))
    runs.extend(RunSpec(True, tau, seed) for tau in taus)
  return runs


# ----------------------------------------------------------------------------
# Configuration.


@dataclasses.dataclass(frozen=True)
class SweepConfig:
  """Settings shared by every run of a sweep.

  Each run replaces the model's ``act`` and ``tau`` and the training seed
  (:func:`model_config`, :func:`train_config`).

  Attributes:
    task: the task and the difficulties of ``difficulty.csv``
      (:func:`vcrnn_jax.papers.act.tasks.task_config`).
    model: the network, ACT's settings and its loop (the loop changes the
      cost, never a number).
    train: the training (its ``seed`` and ``desc`` are each run's).
    eval_batch_size: held-out sequences of the final evaluation and of each
      difficulty.
  """
  task: act_tasks.TaskConfig
  model: act_tasks.ModelConfig
  train: TrainConfig
  eval_batch_size: int = 1000


# Settings that may change between invocations on one workdir: a longer
# `steps` continues every run, the others do not change any number in the CSVs.
_MUTABLE_SETTINGS = ('steps', 'eval_every', 'checkpoint_every',
                     'keep_checkpoints', 'difficulties', 'loop', 'quiet',
                     'compact_rows', 'ponder_slots', 'save_residuals')
_MODEL_FIELDS = frozenset(act_tasks.ModelConfig._fields) - {'act', 'tau'}
_TRAIN_FIELDS = frozenset(f.name for f in dataclasses.fields(TrainConfig)
                          ) - {'seed', 'desc'}


def default_config(task: str, *,
                   task_kwargs: Mapping[str, Any] | None = None,
                   difficulties: Sequence[int] | None = None,
                   **overrides: Any) -> SweepConfig:
  """The :class:`SweepConfig` of ``task`` with its paper defaults.

  Args:
    task: one of :data:`TASKS`.
    task_kwargs: task arguments replacing some of the defaults (e.g.
      ``{'bits': 8}``); unknown ones raise ``ValueError``.
    difficulties: those of ``difficulty.csv`` (default: every difficulty of
      the task).
    **overrides: fields of :class:`~vcrnn_jax.papers.act.tasks.ModelConfig`
      (``loop`` included) or :class:`~vcrnn_jax.training.train.TrainConfig`,
      and ``eval_batch_size``; ``None`` values are ignored, so flags left
      unset keep the task's default.

  Returns:
    The config: :data:`~vcrnn_jax.papers.act.tasks.PAPER_SETTINGS` of
    ``task``, two checkpoints kept per run.

  Raises:
    ValueError: an unknown task, task argument or field.
  """
  task_spec = act_tasks.task_config(task, task_kwargs,
                                    difficulties=difficulties)
  overrides = {k: v for k, v in overrides.items() if v is not None}
  unknown = sorted(set(overrides) - _MODEL_FIELDS - _TRAIN_FIELDS
                   - {'eval_batch_size'})
  if unknown:
    raise ValueError(f'unknown SweepConfig field(s) {unknown}.')
  paper = act_tasks.PAPER_SETTINGS[task]
  model = act_tasks.paper_model(task)._replace(
      **{k: v for k, v in overrides.items() if k in _MODEL_FIELDS})
  train = TrainConfig(**{
      'steps': paper['steps'], 'batch_size': paper['batch_size'],
      'learning_rate': paper['learning_rate'],
      'eval_every': paper['eval_every'], 'keep_checkpoints': 2,
      **{k: v for k, v in overrides.items() if k in _TRAIN_FIELDS}})
  return SweepConfig(task_spec, model, train,
                     overrides.get('eval_batch_size', 1000))


def model_config(config: SweepConfig, run: RunSpec) -> act_tasks.ModelConfig:
  """The :class:`~vcrnn_jax.papers.act.tasks.ModelConfig` of one run."""
  return config.model._replace(act=run.act, tau=run.tau if run.act else 0.0)


def train_config(config: SweepConfig, run: RunSpec, *,
                 quiet: bool | None = None) -> TrainConfig:
  """The :class:`~vcrnn_jax.training.train.TrainConfig` of one run."""
  return dataclasses.replace(
      config.train, seed=run.seed, desc=f'{config.task.name} {run.name}',
      quiet=config.train.quiet if quiet is None else quiet)


_OPTIMIZER_DEFAULTS = dict(optimizer='adam', momentum=0.0, weight_decay=0.0,
                           lr_decay=1.0, lr_decay_every=None,
                           lr_decay_start=None)


def _manifest(config: SweepConfig) -> dict:
  """The settings ``sweep.json`` records, in its one flat layout."""
  task, model, train = config.task, config.model, config.train
  loop = loops.as_loop_config(model.loop)
  settings = dict(
      task=task.name, task_kwargs=dict(task.kwargs),
      difficulties=list(task.difficulties),
      difficulty_seq_len=task.difficulty_seq_len, cell=model.cell,
      hidden_size=model.hidden_size, max_steps=model.max_steps,
      epsilon=model.epsilon, halting_bias=model.halting_bias,
      loop=loop.kind, compact_rows=loop.compact_rows,
      ponder_slots=loop.checkpoints, save_residuals=loop.save_residuals,
      eval_batch_size=config.eval_batch_size, quiet=train.quiet,
      **{k: getattr(train, k) for k in (
          'steps', 'batch_size', 'learning_rate', 'eval_every',
          'checkpoint_every', 'keep_checkpoints', 'grad_clip_norm')})
  # Optimizer settings at their defaults are left out, so sweeps made before
  # they existed still match.
  settings.update({name: getattr(train, name)
                   for name, default in _OPTIMIZER_DEFAULTS.items()
                   if getattr(train, name) != default})
  return settings


def check_manifest(workdir, config: SweepConfig, *, chief: bool = True
                   ) -> None:
  """Writes ``sweep.json`` (if ``chief``), or checks ``config`` against it
  (see :func:`vcrnn_jax.training.sweep.check_manifest`)."""
  sweep.check_manifest(workdir, _manifest(config), _MUTABLE_SETTINGS,
                       chief=chief)


# ----------------------------------------------------------------------------
# Runs.


class RunOutcome(NamedTuple):
  """What :func:`run_one` produced."""
  result: dict            # the results.csv row
  difficulty: list        # the difficulty.csv rows
  trained_steps: int      # steps trained by this call (0: restored only)


def run_one(config: SweepConfig, run: RunSpec, run_dir, *,
            processes: distributed.Processes = distributed.LOCAL
            ) -> RunOutcome:
  """Trains (or resumes, or restores) one run and evaluates it by difficulty.

  Args:
    config: the sweep's settings.
    run: which run.
    run_dir: its workdir.
    processes: the processes that train it (default: this one alone).

  Returns:
    Its rows for ``results.csv`` and ``difficulty.csv``.

  Raises:
    TrainingDiverged: the loss became NaN or infinite.
    ValueError: the run has a checkpoint beyond ``config.train.steps``.
  """
  run_dir = pathlib.Path(run_dir)
  task = config.task.build()
  model = model_config(config, run)
  steps = config.train.steps
  experiment = act_tasks.task_experiment(
      task, model, batch_size=config.train.batch_size,
      eval_batch_size=config.eval_batch_size)
  start = sweep.latest_step(run_dir) or 0
  if start > steps:
    raise ValueError(
        f'{run_dir} has a checkpoint at step {start}, beyond steps='
        f'{steps}; give at least --steps={start} or another workdir.')
  trained = start < steps
  t0 = time.time()
  try:
    # Quiet when only restoring: there is no progress to show.
    result = train_and_evaluate(
        experiment, train_config(config, run, quiet=None if trained else True),
        run_dir, processes=processes)
  finally:
    if trained:   # Counted even when interrupted: the time was spent.
      sweep.add_wall_seconds(run_dir, time.time() - t0,
                             chief=processes.is_chief())
  if result.step != steps:
    raise ValueError(f'{run_dir}: training stopped at step {result.step}, '
                     f'expected {steps}.')
  metrics = dict(result.metrics)
  if not metrics:
    # Already at the final step: train_and_evaluate evaluated nothing.
    metrics = (sweep.final_metrics_from_log(run_dir, steps)
               or dict(experiment.evaluate(result.params)))
  key = dict(task=config.task.name, act=run.act,
             tau=run.tau if run.act else None, seed=run.seed)
  row = dict(key, steps=result.step,
             sequence_error=float(metrics['sequence_error']),
             ponder=float(metrics['ponder']), loss=float(metrics['loss']),
             wall_seconds=round(sweep.read_wall_seconds(run_dir), 3))
  by_difficulty = act_tasks.evaluate_by_difficulty(
      task, model, result.params, config.task.difficulties,
      batch_size=config.eval_batch_size,
      seq_len=config.task.difficulty_seq_len)
  diff_rows = [dict(key, difficulty=int(d['difficulty']),
                    sequence_error=float(d['sequence_error']),
                    ponder=float(d['ponder'])) for d in by_difficulty]
  # history is empty when nothing was trained (the checkpoint was final).
  return RunOutcome(row, diff_rows, steps - start if result.history else 0)


class SweepSummary(NamedTuple):
  """What :func:`run_sweep` did, and the CSV rows of the sweep's task."""
  results: list       # results.csv rows of config.task
  difficulty: list    # difficulty.csv rows of config.task
  trained: list       # RunSpecs trained (fully or resumed) by this call
  restored: list      # finished RunSpecs restored to redo their rows
  skipped: list       # finished RunSpecs whose rows were complete
  diverged: list      # RunSpecs whose loss became NaN (now or before)


def _complete_runs(config: SweepConfig, results_path: pathlib.Path,
                   difficulty_path: pathlib.Path) -> set:
  """Keys of the runs with a final results row and every difficulty row."""
  finished = {run_key(r, RUN_KEY) for r in read_rows(results_path)
              if r['steps'] == config.train.steps}
  seen: dict = {}
  for r in read_rows(difficulty_path):
    seen.setdefault(run_key(r, RUN_KEY), set()).add(r['difficulty'])
  wanted = set(config.task.difficulties)
  return {k for k in finished if wanted <= seen.get(k, set())}


def run_sweep(config: SweepConfig, runs: Sequence[RunSpec], workdir, *,
              log: Callable[[str], None] = print,
              processes: distributed.Processes = distributed.LOCAL
              ) -> SweepSummary:
  """Runs the grid ``runs`` in ``workdir`` (resumable; see module docstring).

  Args:
    config: the settings every run shares.
    runs: the grid (:func:`make_grid`).
    workdir: the sweep's folder (created if missing).
    log: receives one line per run.
    processes: the processes that train it, the handle
      :func:`vcrnn_jax.training.distributed.initialize` returned (default:
      this one alone).

  Returns:
    A :class:`SweepSummary`.

  Raises:
    ValueError: ``workdir`` holds a sweep with other settings, or a run there
      is past ``config.train.steps``.
  """
  workdir = pathlib.Path(workdir)
  if workdir.exists() and not workdir.is_dir():
    raise ValueError(f'workdir {str(workdir)!r} exists and is not a directory.')
  workdir.mkdir(parents=True, exist_ok=True)
  # Several processes: each checks, all stop with the first refusal.
  chief = processes.is_chief()
  processes.check_everywhere(
      'the sweep.json check',
      lambda: check_manifest(workdir, config, chief=chief))
  results_path = workdir / RESULTS_FILENAME
  difficulty_path = workdir / DIFFICULTY_FILENAME
  summary = SweepSummary([], [], [], [], [], [])
  # Read once: during the loop only this function changes the files.
  complete = _complete_runs(config, results_path, difficulty_path)
  for i, run in enumerate(runs, start=1):
    where = f'[{i}/{len(runs)}] {config.task.name} {run.name}'
    run_dir = workdir / run.name
    if (run_dir / DIVERGED_FILENAME).exists():
      log(f'{where}: diverged before (see {run_dir / DIVERGED_FILENAME}); '
          'skipped. Delete the folder to retry.')
      summary.diverged.append(run)
      continue
    key = (config.task.name, run.act, run.tau if run.act else None,
           run.seed)
    latest = sweep.latest_step(run_dir)
    if latest == config.train.steps and key in complete:
      log(f'{where}: finished at step {latest}; rows present, skipped.')
      summary.skipped.append(run)
      continue
    try:
      outcome = run_one(config, run, run_dir, processes=processes)
    except TrainingDiverged as e:
      if chief:
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(run_dir / DIVERGED_FILENAME, str(e) + '\n')
      log(f'{where}: {e}')
      summary.diverged.append(run)
      continue
    finally:
      # Each run compiles its own closures; dropping them keeps a long sweep's
      # memory flat.
      jax.clear_caches()
    upsert_rows(results_path, RESULTS_FIELDS, [outcome.result], key=RUN_KEY,
                chief=chief)
    upsert_rows(difficulty_path, DIFFICULTY_FIELDS, outcome.difficulty,
                key=RUN_KEY, chief=chief)
    (summary.trained if outcome.trained_steps else summary.restored).append(run)
    r = outcome.result
    what = (f'trained {outcome.trained_steps} steps' if outcome.trained_steps
            else f'restored from step {r["steps"]}')
    log(f'{where}: {what}; sequence_error={r["sequence_error"]:.4g}, '
        f'ponder={r["ponder"]:.4g}, wall={r["wall_seconds"]:.1f} s.')
  summary.results.extend(r for r in read_rows(results_path)
                         if r['task'] == config.task.name)
  summary.difficulty.extend(r for r in read_rows(difficulty_path)
                            if r['task'] == config.task.name)
  return summary
