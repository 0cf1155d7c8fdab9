"""The ACT binaries' runs from their flag values: model, task and training.

``experiments.act_parity``, ``act_logic``, ``act_addition`` and ``act_sort``
train :func:`task_run`; ``experiments.act_wikipedia`` trains
:func:`wikipedia_run`. Both take the binary's flag values by name (what
``manifest.jsonl`` records; :func:`vcrnn_jax.papers.runs.load_run` reads
them) and return the run's experiment, training configuration and model::

  from vcrnn_jax.papers.act import runs
  run = runs.task_run(values, 'parity')   # values: act_parity's flags
  run.experiment, run.config              # what the binary trains
  logits, ys = run.model.apply(params, inputs)   # ys.ponder, ys.steps
"""

from collections.abc import Mapping
from typing import Any, NamedTuple

from vcrnn_jax import data, loops
from vcrnn_jax.models import SequenceModel
from vcrnn_jax.papers.act import lm as act_lm
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.training import lm
from vcrnn_jax.training import runs as training_runs
from vcrnn_jax.training.train import Experiment, TrainConfig

__all__ = [
    'model_config',
    'train_config',
    'with_paper_defaults',
    'task_kwargs',
    'TaskRun',
    'task_run',
    'wikipedia_corpus',
    'WikipediaRun',
    'wikipedia_run',
]

def model_config(values: Mapping[str, Any]) -> act_tasks.ModelConfig:
  """The recurrent model the flags in ``values`` describe (the loop flags:
  ``loop``, ``ponder_slots``, ``save_residuals``, ``compact_rows``, 0 for
  none)."""
  return act_tasks.ModelConfig(
      cell=values['cell'], hidden_size=values['hidden_size'],
      act=values['act'], tau=values['tau'], max_steps=values['max_steps'],
      epsilon=values['epsilon'], halting_bias=values['halting_bias'],
      loop=loops.LoopConfig(
          values['loop'], checkpoints=values['ponder_slots'],
          save_residuals=values['save_residuals'],
          compact_rows=values['compact_rows'] or None))


def train_config(values: Mapping[str, Any], name: str,
                 **overrides) -> TrainConfig:
  """The training configuration the flags in ``values`` describe
  (``overrides`` win); ``name`` labels the progress bar."""
  return training_runs.train_config(
      values, f'{name} (act={values["act"]}, tau={values["tau"]:g})',
      **overrides)


def with_paper_defaults(values: Mapping[str, Any],
                        task: str) -> dict:
  """``values`` with each None that the paper sets for ``task`` replaced by
  the paper's value (``act_tasks.PAPER_SETTINGS``)."""
  paper = act_tasks.PAPER_SETTINGS[task]
  return {**values, **{k: v for k, v in paper.items()
                       if k in values and values[k] is None}}


def task_kwargs(values: Mapping[str, Any], task: str) -> dict:
  """The arguments of ``task`` (one of ``act_tasks.TASKS``) in ``values``:
  those the paper's settings name, e.g. ``bits`` and ``layout`` for
  parity."""
  if task not in act_tasks.PAPER_SETTINGS:
    raise ValueError(f'task must be one of {list(act_tasks.TASKS)}, got '
                     f'{task!r}.')
  return {k: values[k] for k in act_tasks.PAPER_SETTINGS[task]['task_kwargs']}


class TaskRun(NamedTuple):
  """A synthetic-task run (:func:`task_run`)."""
  experiment: Experiment
  config: TrainConfig
  model: SequenceModel           # apply(params, inputs, lengths) -> (logits,
                                 # ys): ys an ACTOutput with ACT
  task: act_tasks.TaskConfig     # the task and its difficulties
  settings: act_tasks.ModelConfig


def task_run(values: Mapping[str, Any], task: str, *,
             name: str | None = None) -> TaskRun:
  """The run of ``experiments.act_<task>`` with the flag ``values``.

  Args:
    values: every flag of the binary by name (a None that the paper sets for
      ``task`` takes the paper's value, as ``act_sweep``'s flags do).
    task: one of ``act_tasks.TASKS``.
    name: the progress bar's label (default ``act_<task>``).

  Returns:
    A :class:`TaskRun`; its model reads the task's inputs ``[batch, time,
    task.input_size]`` (ACT appends its first-step flag itself).
  """
  values = with_paper_defaults(values, task)
  config = act_tasks.task_config(task, task_kwargs(values, task))
  settings = model_config(values)
  built = config.build()
  train = train_config(values, name or f'act_{task}')
  experiment = act_tasks.task_experiment(
      built, settings, batch_size=train.batch_size,
      eval_batch_size=values['eval_batch_size'],
      eval_batches=values['eval_batches'])
  return TaskRun(experiment, train, act_tasks.build_model(built, settings),
                 config, settings)


def wikipedia_corpus(values: Mapping[str, Any]) -> tuple[str, data.Dataset]:
  """The kind of corpus (``'enwik8'``, ``'bytes'`` or ``'text'``) the flags
  in ``values`` name (``data``, ``data_dir``, ``data_path``, ``split_unit``,
  ``max_bytes``), and its dataset."""
  kind = ('bytes' if values['data'] == 'enwik8' and values['data_path']
          else values['data'])
  if values['split_unit'] != 'line' and kind != 'text':
    raise ValueError('--split_unit is for --data=text (the other corpora '
                     'split at bytes).')
  if kind == 'enwik8':
    return kind, data.load('enwik8', values['data_dir'],
                           max_length=values['max_bytes'])
  if not values['data_path']:
    raise ValueError(f'--data={kind} reads --data_path; give the file.')
  options = {'split_unit': values['split_unit']} if kind == 'text' else {}
  return kind, data.load(kind, path=values['data_path'],
                         max_length=values['max_bytes'], **options)


class WikipediaRun(NamedTuple):
  """A character-level run of ACT Sec. 3.5 (:func:`wikipedia_run`)."""
  experiment: Experiment
  config: TrainConfig
  model: SequenceModel           # apply(params, ids [batch, time]) ->
                                 # (logits, ys): ys an ACTOutput with ACT
  task: lm.LanguageModelTask
  kind: str                      # 'enwik8', 'bytes' or 'text'
  dataset: data.Dataset


def wikipedia_run(values: Mapping[str, Any]) -> WikipediaRun:
  """The run of ``experiments.act_wikipedia`` with the flag ``values``
  (its corpus read again, :func:`wikipedia_corpus`)."""
  settings = model_config(values)
  kind, ds = wikipedia_corpus(values)
  vocab = act_lm.BYTES if kind != 'text' else ds.vocab.size
  task = act_lm.lm_task(
      ds.train, ds.valid, settings, batch_size=values['batch_size'],
      seq_len=values['seq_len'], vocab_size=vocab,
      eval_windows=values['eval_windows'])
  return WikipediaRun(task.experiment, train_config(values, 'act_wikipedia'),
                      act_lm.build_model(settings, vocab), task, kind, ds)
