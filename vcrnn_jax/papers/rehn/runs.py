"""The EI-REHN binaries' runs from their flag values.

``experiments.rehn_synthetic`` (Table 1) trains :func:`synthetic_run`,
``experiments.rehn_har`` (Table 2) :func:`har_run` and
``experiments.rehn_ptb`` (Tables 3-4) :func:`ptb_run`. Each takes the
binary's flag values by name (what ``manifest.jsonl`` records;
:func:`vcrnn_jax.papers.runs.load_run` reads them), reads its data and
returns the run's experiment, training configuration and model, whose
per-step outputs carry the realized depth of the elastic cells
(:func:`vcrnn_jax.papers.rehn.tasks.depth_statistics`). The two binaries of
several seeds train one run per seed: their values hold the run's ``seed``.
"""

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from vcrnn_jax import cells, data, loops
from vcrnn_jax.core import Cell
from vcrnn_jax.models import (
  SequenceModel,
  language_model,
  sequence_model,
  symmetric_uniform,
)
from vcrnn_jax.papers.rehn import tasks as rehn_tasks
from vcrnn_jax.tasks import elastic_depth
from vcrnn_jax.training import lm, supervised
from vcrnn_jax.training import runs as training_runs
from vcrnn_jax.training.train import Experiment, TrainConfig

__all__ = [
    'model_spec',
    'epoch_train_config',
    'ArrayRun',
    'synthetic_data',
    'synthetic_tasks',
    'synthetic_run',
    'har_cell',
    'har_name',
    'har_tasks',
    'har_run',
    'PtbRun',
    'ptb_setup',
    'ptb_run',
]


def model_spec(values: Mapping[str, Any]) -> rehn_tasks.ModelSpec:
  """The model the flag ``values`` of ``rehn_synthetic`` and ``rehn_har``
  describe (``cell``, ``hidden_size``, ``depth``, ``max_depth``,
  ``hyper_size``, ``loop``, ``ponder_slots``)."""
  return rehn_tasks.ModelSpec(
      cell=values['cell'], hidden_size=values['hidden_size'],
      depth=values['depth'], max_depth=values['max_depth'],
      hyper_size=values['hyper_size'], loop=loops.LoopConfig(
          values['loop'], checkpoints=values['ponder_slots']))


def epoch_train_config(values: Mapping[str, Any], desc: str, per_epoch: int,
                       seed: int) -> TrainConfig:
  """The run's TrainConfig: ``steps`` or ``epochs`` of ``per_epoch``
  updates, evaluated every ``eval_every`` or every epoch."""
  return training_runs.train_config(
      values, desc, steps=values['steps'] or values['epochs'] * per_epoch,
      eval_every=values['eval_every'] or per_epoch, seed=seed)


class ArrayRun(NamedTuple):
  """A run of ``rehn_synthetic`` or ``rehn_har`` (one seed's)."""
  experiment: Experiment
  config: TrainConfig
  model: SequenceModel     # apply(params, inputs [batch, time, features])
                           # -> (outputs, ys)
  spec: rehn_tasks.ModelSpec
  task: supervised.ArrayTask     # evaluate_split, predict
  dataset: data.Dataset


def synthetic_data(values: Mapping[str, Any]) -> data.Dataset:
  """EI-REHN Algorithm 2's dataset of the flag ``values`` (``data_seed``,
  ``num_sequences``, ``noise_variance``)."""
  return elastic_depth.load(values['data_seed'],
                            num_sequences=values['num_sequences'],
                            noise_variance=values['noise_variance'])


def synthetic_tasks(values: Mapping[str, Any], spec: rehn_tasks.ModelSpec,
                    ds: data.Dataset) -> Callable[[], supervised.ArrayTask]:
  """The maker of each seed's task on ``ds`` (the same data and cell for
  all): next-step regression, 2 outputs."""
  cell = rehn_tasks.build_cell(spec)
  splits = {'train': ds.train, 'valid': ds.valid, 'test': ds.test}

  def make():
    return supervised.array_experiment(
        sequence_model(cell, output_size=2), splits, task='regression',
        batch_size=values['batch_size'],
        eval_batch_size=values['eval_batch_size'],
        statistics=rehn_tasks.depth_statistics)

  return make


def synthetic_run(values: Mapping[str, Any]) -> ArrayRun:
  """The run of ``experiments.rehn_synthetic`` with the flag ``values``,
  for seed ``values['seed']``."""
  spec = model_spec(values)
  ds = synthetic_data(values)
  task = synthetic_tasks(values, spec, ds)()
  config = epoch_train_config(
      values, f'rehn_synthetic {spec.name} seed {values["seed"]}',
      task.steps_per_epoch, values['seed'])
  model = sequence_model(rehn_tasks.build_cell(spec), output_size=2)
  return ArrayRun(task.experiment, config, model, spec, task, ds)


def har_cell(values: Mapping[str, Any], spec: rehn_tasks.ModelSpec) -> Cell:
  """``layers`` recurrent layers of ``spec``'s cell."""
  layer = rehn_tasks.build_cell(spec)
  if values['layers'] > 1:
    return cells.stack([rehn_tasks.build_cell(spec)
                        for _ in range(values['layers'])])
  return layer


def har_name(values: Mapping[str, Any], spec: rehn_tasks.ModelSpec) -> str:
  """The model's row name: ``spec.name``, ``_x<layers>`` unless 2."""
  return spec.name + (f'_x{values["layers"]}' if values['layers'] != 2
                      else '')


def har_tasks(values: Mapping[str, Any], cell: Cell,
              ds: data.Dataset) -> Callable[[], supervised.ArrayTask]:
  """The maker of each seed's task on UCI HAR ``ds`` (the same data and
  cell for all): classification at the last step."""
  splits = {'train': ds.train, 'valid': ds.valid, 'test': ds.test}

  def make():
    return supervised.array_experiment(
        sequence_model(cell, output_size=len(ds.meta['classes'])), splits,
        task='classification', batch_size=values['batch_size'],
        eval_batch_size=values['eval_batch_size'],
        statistics=rehn_tasks.depth_statistics)

  return make


def har_run(values: Mapping[str, Any]) -> ArrayRun:
  """The run of ``experiments.rehn_har`` with the flag ``values`` (UCI HAR
  read from ``data_dir``), for seed ``values['seed']``."""
  spec = model_spec(values)
  cell = har_cell(values, spec)
  ds = data.load('uci_har', values['data_dir'])
  task = har_tasks(values, cell, ds)()
  config = epoch_train_config(
      values, f'rehn_har {har_name(values, spec)} seed {values["seed"]}',
      task.steps_per_epoch, values['seed'])
  model = sequence_model(cell, output_size=len(ds.meta['classes']))
  return ArrayRun(task.experiment, config, model, spec, task, ds)


class PtbRun(NamedTuple):
  """A run of ``experiments.rehn_ptb`` (:func:`ptb_run`)."""
  experiment: Experiment
  config: TrainConfig
  model: SequenceModel     # apply(params, ids [batch, time]) -> (logits, ys)
  spec: rehn_tasks.ModelSpec
  task: lm.LanguageModelTask     # evaluate_stream, per_step
  dataset: data.Dataset


def _ptb_spec(values: Mapping[str, Any]) -> rehn_tasks.ModelSpec:
  return rehn_tasks.ModelSpec(
      cell=values['cell'], hidden_size=values['hidden_size'],
      depth=values['depth'], max_depth=values['max_depth'],
      hyper_size=values['hyper_size'] or values['hidden_size'] // 2,
      transform_bias=(
          -2.0 if values['transform_bias'] is None
          and values['cell'] in ('rhn', 'srhn')
          else values['transform_bias']),
      state_dropout=values['drop_state'], init_scale=values['init_scale'],
      loop=loops.LoopConfig(values['loop'],
                            checkpoints=values['ponder_slots']),
      # Flags added after the first runs: older runs' values lack them.
      open_gate=values.get('gate', 'elastic') == 'open',
      alpha_init=values.get('alpha_init'))


def ptb_setup(values: Mapping[str, Any], ds: data.Dataset) -> PtbRun:
  """The run of ``experiments.rehn_ptb`` with the flag ``values`` on the
  word-level PTB ``ds``."""
  spec = _ptb_spec(values)
  init = symmetric_uniform(values['init_scale'])
  model = language_model(
      rehn_tasks.build_cell(spec), ds.vocab.size,
      embed_size=values['hidden_size'], readout='tied',
      embedding_dropout=values['drop_word'],
      input_dropout=values['drop_input'],
      output_dropout=values['drop_output'], embedding_init=init,
      readout_init=init)

  def statistics(ys, inputs):
    del inputs
    return rehn_tasks.depth_statistics(ys)

  batch, seq_len = values['batch_size'], values['seq_len']
  task = lm.lm_experiment(
      model, ds.train, ds.valid, batch_size=batch, seq_len=seq_len,
      mode='bptt', eval_mode='stream',
      eval_batch_size=values['eval_batch_size'], statistics=statistics)
  _, per_epoch = lm.bptt_rows(ds.train, batch, seq_len)
  start = values['lr_decay_start']
  config = training_runs.train_config(
      values, f'rehn_ptb {spec.name}',
      steps=values['steps'] or values['epochs'] * per_epoch,
      eval_every=values['eval_every'] or per_epoch,
      lr_decay_every=values['lr_decay_every'] or per_epoch,
      lr_decay_start=start if start is not None else 20 * per_epoch)
  return PtbRun(task.experiment, config, model, spec, task, ds)


def ptb_run(values: Mapping[str, Any]) -> PtbRun:
  """:func:`ptb_setup` on word-level PTB read from ``data_dir``."""
  return ptb_setup(values, data.load('ptb_word', values['data_dir']))
