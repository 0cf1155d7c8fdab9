"""The family binaries' runs from their flag values.

``experiments.family_parity`` trains :func:`parity_run` and
``experiments.family_adding`` :func:`adding_run`; each takes the binary's
flag values by name (what ``manifest.jsonl`` records;
:func:`vcrnn_jax.papers.runs.load_run` reads them) and returns the run's
experiment, training configuration and model.
"""

from collections.abc import Mapping
from typing import Any, NamedTuple

from vcrnn_jax.models import SequenceModel
from vcrnn_jax.papers.family import adding as family_adding
from vcrnn_jax.papers.family import parity as family_parity
from vcrnn_jax.training import runs as training_runs
from vcrnn_jax.training.train import Experiment, TrainConfig

__all__ = [
    'PARITY_MODEL_FLAGS',
    'parity_model',
    'ParityRun',
    'parity_run',
    'adding_spec',
    'AddingRun',
    'adding_run',
]

# The flags of family_parity that parity_model reads (ModelConfig's fields).
PARITY_MODEL_FLAGS = ('method', 'cell', 'hidden_size', 'max_steps', 'tau',
                      'act_epsilon', 'halting_bias', 'rho', 'beta',
                      'lambda_p', 'ponder_epsilon', 'kl', 'eval_max_steps')


def parity_model(values: Mapping[str, Any]) -> family_parity.ModelConfig:
  """The model the flag ``values`` describe (:data:`PARITY_MODEL_FLAGS`),
  checked."""
  return family_parity.check_model(family_parity.ModelConfig(
      **{name: values[name] for name in PARITY_MODEL_FLAGS}))


class ParityRun(NamedTuple):
  """A run of ``experiments.family_parity`` (:func:`parity_run`)."""
  experiment: Experiment
  config: TrainConfig
  model: SequenceModel     # family_parity.evaluation_model: apply(params,
                           # inputs [batch, 1, bits]) -> (logits, ys)
  settings: family_parity.ModelConfig


def parity_run(values: Mapping[str, Any]) -> ParityRun:
  """The run of ``experiments.family_parity`` with the flag ``values``
  (``setting``, ``layout``, ``bits``, ``eval_batch_size`` and the training
  flags besides the model's)."""
  settings = parity_model(values)
  experiment = family_parity.parity_experiment(
      settings, values['setting'], layout=values['layout'],
      bits=values['bits'], batch_size=values['batch_size'],
      eval_batch_size=values['eval_batch_size'])
  config = training_runs.train_config(
      values, f'family_parity ({values["method"]}, {values["setting"]})')
  return ParityRun(experiment, config,
                   family_parity.evaluation_model(settings), settings)


def adding_spec(values: Mapping[str, Any]) -> family_adding.AddingSpec:
  """The model the flag ``values`` of ``experiments.family_adding``
  describe."""
  return family_adding.AddingSpec(
      model=values['model'], hidden_size=values['hidden_size'],
      budget=values['budget'], vc_target=values['vc_target'],
      vc_penalty=values['vc_penalty'], seq_len=values['seq_len'])


class AddingRun(NamedTuple):
  """A run of ``experiments.family_adding`` (:func:`adding_run`)."""
  experiment: Experiment
  config: TrainConfig
  model: SequenceModel     # apply(params, inputs [batch, time, 2]) ->
                           # (predictions [batch, time, 1], ys)
  spec: family_adding.AddingSpec


def adding_run(values: Mapping[str, Any]) -> AddingRun:
  """The run of ``experiments.family_adding`` with the flag ``values``."""
  spec = adding_spec(values)
  experiment = family_adding.experiment(
      spec, batch_size=values['batch_size'],
      eval_batch_size=values['eval_batch_size'])
  config = training_runs.train_config(values,
                                      f'family_adding {values["model"]}')
  return AddingRun(experiment, config, family_adding.build_model(spec), spec)
