"""The VCRNN binaries' runs from their flag values.

``experiments.vc_ptb``, ``vc_text8``, ``vc_europarl`` and ``vc_music`` each
read their corpus (:func:`ptb_corpus`, :func:`text8_corpus`,
:func:`europarl_corpus`, :func:`music_corpus`) and train :func:`setup`'s
language model on it; :func:`ptb_run`, :func:`text8_run`,
:func:`europarl_run` and :func:`music_run` do both from the binary's flag
values by name (what ``manifest.jsonl`` records;
:func:`vcrnn_jax.papers.runs.load_run` reads them). The model's per-step
outputs carry the scheduler's ``m`` (:math:`m_t`, Eq. 7) of the VC cells.

Training defaults the paper does not give, and why the scheduler's gradient
is clipped apart, are in ``experiments/_vc.py``'s docstring.
"""

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from vcrnn_jax import data
from vcrnn_jax.models import SequenceModel
from vcrnn_jax.papers.vc import lm as vc_lm
from vcrnn_jax.training import lm
from vcrnn_jax.training import runs as training_runs
from vcrnn_jax.training.train import Experiment, TrainConfig

__all__ = [
    'SCHEDULER_DEFAULTS',
    'truncate',
    'model_spec',
    'VCRun',
    'setup',
    'ptb_corpus',
    'text8_corpus',
    'europarl_corpus',
    'music_corpus',
    'ptb_run',
    'text8_run',
    'europarl_run',
    'music_run',
]

# The scheduler's flags and their defaults: another value is refused for a
# cell without a scheduler (a value check, so that setup stays pure).
SCHEDULER_DEFAULTS = {'scheduler_lr_scale': 1.0, 'clip_scheduler_apart': True}


def truncate(values: Mapping[str, Any], stream):
  """``stream`` cut to ``max_symbols`` (of the flag ``values``)."""
  most = values['max_symbols']
  if most and len(stream) > most:
    return stream[:most]
  return stream


def model_spec(values: Mapping[str, Any], steps_per_epoch: int,
               boundary_target: float | None = None) -> vc_lm.ModelSpec:
  """The model the flag ``values`` describe, its sharpness rising every
  ``sharpness_every`` steps or else every ``steps_per_epoch``."""
  return vc_lm.check_spec(vc_lm.ModelSpec(
      cell=values['cell'], hidden_size=values['hidden_size'],
      steps_per_epoch=values['sharpness_every'] or steps_per_epoch,
      target=min(values['target'], 1.0),
      boundary_target=(None if boundary_target is None
                       else min(boundary_target, 1.0)),
      penalty_weight=values['penalty_weight'],
      penalty_norm=values['penalty_norm'],
      symmetric=values['penalty_symmetric'],
      sharpness_initial=values['sharpness_initial'],
      sharpness_increment=values['sharpness_increment'],
      sharpness_maximum=values['sharpness_max'], epsilon=values['epsilon'],
      kernel_init=values['kernel_init']))


class VCRun(NamedTuple):
  """A run of a VC binary (:func:`setup`)."""
  experiment: Experiment
  config: TrainConfig
  model: SequenceModel     # apply(params, ids [batch, time]) -> (logits,
                           # ys): ys.m is m_t of the VC cells
  spec: vc_lm.ModelSpec
  task: lm.LanguageModelTask     # evaluate_stream, per_step


def setup(values: Mapping[str, Any], name: str, train_stream: np.ndarray,
          valid_stream: np.ndarray, vocab_size: int, *,
          boundary_ids: Sequence[int] | None = None,
          boundary_target: float | None = None) -> VCRun:
  """The model, LM task and training the flag ``values`` describe.

  Args:
    values: the binary's flags by name.
    name: the binary's name (it labels the progress bar).
    train_stream, valid_stream: 1-D id streams (already cut by
      :func:`truncate`).
    vocab_size: the number of symbols.
    boundary_ids: the guide setting's boundary symbols.
    boundary_target: the guide setting's boundary target (None: learn).

  Raises:
    ValueError: a train split too short for one batch, or a scheduler flag
      set for a cell without a scheduler.
  """
  batch, seq_len = values['batch_size'], values['seq_len']
  _, per_epoch = lm.bptt_rows(train_stream, batch, seq_len)
  if per_epoch < 1:
    raise ValueError(f'the train split ({len(train_stream)} symbols) is too '
                     f'short for --batch_size={batch} rows of '
                     f'--seq_len={seq_len}.')
  spec = model_spec(values, per_epoch, boundary_target)
  for flag, default in SCHEDULER_DEFAULTS.items():
    if values[flag] != default and not spec.has_scheduler:
      raise ValueError(f'--{flag} is for the VC cells {vc_lm.VC_CELLS}; '
                       f'--cell={values["cell"]} has no scheduler.')
  task = vc_lm.lm_task(spec, train_stream, valid_stream, vocab_size,
                       batch_size=batch, seq_len=seq_len,
                       boundary_ids=boundary_ids,
                       eval_batch_size=min(values['eval_batch_size'], max(
                           1, len(valid_stream) // (seq_len + 1))))
  scale = values['scheduler_lr_scale']
  config = training_runs.train_config(
      values, f'{name} {spec.name}',
      steps=values['steps'] or values['epochs'] * per_epoch,
      eval_every=values['eval_every'] or per_epoch,
      lr_scales=(('scheduler', scale),) if scale != 1.0 else (),
      clip_apart=(('scheduler',) if values['clip_scheduler_apart'] and
                  spec.has_scheduler else ()))
  return VCRun(task.experiment, config, vc_lm.build_model(spec, vocab_size),
               spec, task)


def _setup_on(values: Mapping[str, Any], name: str, ds: data.Dataset, *,
              boundary_ids: Sequence[int] | None = None,
              boundary_target: float | None = None) -> VCRun:
  """:func:`setup` on the truncated splits of ``ds``."""
  return setup(values, name, truncate(values, ds.train),
               truncate(values, ds.valid), ds.vocab.size,
               boundary_ids=boundary_ids, boundary_target=boundary_target)


def ptb_corpus(values: Mapping[str, Any]
               ) -> tuple[data.Dataset, list[int] | None]:
  """PTB at ``level`` (``'char'`` or ``'bit'``) from ``data_dir`` and, at
  char level, its word boundaries (``_`` and the line end)."""
  if values['buffer_bits'] and values['level'] != 'bit':
    raise ValueError('--buffer_bits is for --level=bit only.')
  if values['boundary_target'] is not None and values['level'] != 'char':
    raise ValueError('--boundary_target is for --level=char only.')
  if values['level'] == 'char':
    ds = data.load('ptb_char', values['data_dir'], word_boundaries=True)
    return ds, [ds.vocab.token_to_id[c] for c in ('_', '\n')
                if c in ds.vocab]
  ds = data.load('ptb_bit', values['data_dir'],
                 buffer_bits=values['buffer_bits'])
  return ds, None


def text8_corpus(values: Mapping[str, Any]
                 ) -> tuple[data.Dataset, list[int]]:
  """Text8 from ``data_dir`` (its first ``max_chars``) and its word
  boundary, the space."""
  ds = data.load('text8', values['data_dir'], max_length=values['max_chars'],
                 word_boundaries=True)
  return ds, [ds.vocab.token_to_id[' ']]


def europarl_corpus(values: Mapping[str, Any]
                    ) -> tuple[data.Dataset, list[int]]:
  """The UTF-8 corpus of ``data_path`` and its whitespace symbols."""
  if not values['data_path']:
    raise ValueError('--data_path is required: the UTF-8 corpus to model '
                     '(e.g. europarl-v7.cs-en.cs).')
  ds = data.load('text', path=values['data_path'],
                 min_count=values['min_count'],
                 max_length=values['max_chars'],
                 split_unit=values['split_unit'], word_boundaries=True)
  return ds, [i for i, t in enumerate(ds.vocab.id_to_token)
              if t != ds.vocab.unk_token and t.isspace()]


def music_corpus(values: Mapping[str, Any]) -> data.Dataset:
  """The tunes of ``data_path`` or ``data_dir`` (one of them), shuffled
  with ``shuffle_seed``, (pitch, length) pairs as symbols."""
  if values['data_path'] and values['data_dir']:
    raise ValueError('give --data_path (the tune file) or --data_dir (the '
                     'folder holding thesession/), not both.')
  options = {'pair_durations': True, 'shuffle_seed': values['shuffle_seed']}
  if values['data_path']:
    return data.load('thesession', path=values['data_path'], **options)
  return data.load('thesession', values['data_dir'], **options)


def ptb_run(values: Mapping[str, Any]) -> VCRun:
  """The run of ``experiments.vc_ptb`` with the flag ``values``."""
  ds, bounds = ptb_corpus(values)
  return _setup_on(values, 'vc_ptb', ds, boundary_ids=bounds,
                   boundary_target=values['boundary_target'])


def text8_run(values: Mapping[str, Any]) -> VCRun:
  """The run of ``experiments.vc_text8`` with the flag ``values``."""
  ds, bounds = text8_corpus(values)
  return _setup_on(values, 'vc_text8', ds, boundary_ids=bounds)


def europarl_run(values: Mapping[str, Any]) -> VCRun:
  """The run of ``experiments.vc_europarl`` with the flag ``values`` (the
  guide setting's boundary target only with ``setting='guide'``)."""
  ds, bounds = europarl_corpus(values)
  target = values['boundary_target'] if values['setting'] == 'guide' else None
  return _setup_on(values, 'vc_europarl', ds, boundary_ids=bounds,
                   boundary_target=target)


def music_run(values: Mapping[str, Any]) -> VCRun:
  """The run of ``experiments.vc_music`` with the flag ``values``."""
  return _setup_on(values, 'vc_music', music_corpus(values))
