r"""A binary's trained run, rebuilt from its workdir: model, params, config.

After ``pip install .``, from any directory::

  from vcrnn_jax.papers.runs import load_run

  run = load_run('runs/act_parity/act=true_tau=0.01_seed=0')
  run.binary, run.step                 # 'experiments.act_parity', 300000
  run.flags['tau']                     # every flag the run was built from
  logits, ys = run.apply(inputs)       # inputs [batch, 1, 64]; ys.ponder
  run.experiment.evaluate(run.params, run.step)   # metrics.jsonl's last line

:func:`load_run` reads which binary trained the run and every flag value of
its last start from ``<workdir>/manifest.jsonl``, the run-defining flags
from ``<workdir>/flags.json`` (:func:`vcrnn_jax.training.runs.read_workdir`),
then rebuilds the run with the library function that binary trains
(:data:`BINARIES`: e.g. :func:`vcrnn_jax.papers.act.runs.task_run`) and
restores its latest checkpoint
(:func:`vcrnn_jax.training.train.restore_latest_params`). No binary is
imported and no absl flag is parsed.
"""

from collections.abc import Callable, Mapping
import dataclasses
import functools
import os
import pathlib
from typing import Any

import jax.numpy as jnp

from vcrnn_jax.core import Context
from vcrnn_jax.models import SequenceModel
from vcrnn_jax.papers.act import runs as act_runs
from vcrnn_jax.papers.depth import lm as depth_lm
from vcrnn_jax.papers.depth import logic as depth_logic
from vcrnn_jax.papers.family import runs as family_runs
from vcrnn_jax.papers.rehn import runs as rehn_runs
from vcrnn_jax.papers.vc import runs as vc_runs
from vcrnn_jax.training import runs as training_runs
from vcrnn_jax.training.train import (
  Experiment,
  TrainConfig,
  restore_latest_params,
)

__all__ = ['BINARIES', 'Run', 'load_run']

# Each binary whose runs load, and the library function it trains: flag
# values -> a NamedTuple with at least ``experiment``, ``config`` and
# ``model``. act_sweep's runs are rebuilt by its own sweep.json
# (vcrnn_jax.papers.act.sweep).
BINARIES: Mapping[str, Callable[[Mapping[str, Any]], Any]] = {
    **{f'experiments.act_{task}': functools.partial(act_runs.task_run,
                                                    task=task)
       for task in ('addition', 'logic', 'parity', 'sort')},
    'experiments.act_wikipedia': act_runs.wikipedia_run,
    'experiments.depth_lm': depth_lm.run,
    'experiments.depth_logic': depth_logic.run,
    'experiments.family_adding': family_runs.adding_run,
    'experiments.family_parity': family_runs.parity_run,
    'experiments.rehn_har': rehn_runs.har_run,
    'experiments.rehn_ptb': rehn_runs.ptb_run,
    'experiments.rehn_synthetic': rehn_runs.synthetic_run,
    'experiments.vc_europarl': vc_runs.europarl_run,
    'experiments.vc_music': vc_runs.music_run,
    'experiments.vc_ptb': vc_runs.ptb_run,
    'experiments.vc_text8': vc_runs.text8_run,
}

# The flags that say where a binary's corpus is, which a caller may move.
_DATA_FLAGS = ('data_dir', 'data_path')


@dataclasses.dataclass(frozen=True)
class Run:
  """A binary's run as :func:`load_run` rebuilt it.

  Attributes:
    workdir: the run's workdir.
    binary: the binary's module, e.g. ``'experiments.act_parity'``.
    flags: every flag value the run was rebuilt from (a binary of several
      seeds adds the run's ``seed``; ``data_dir=``/``data_path=`` of
      :func:`load_run` replace the recorded ones).
    experiment: the :class:`~vcrnn_jax.training.train.Experiment` it
      trained (``init``, ``loss``, ``sample``, ``evaluate``).
    config: the :class:`~vcrnn_jax.training.train.TrainConfig` it trained
      with.
    step: the step of the checkpoint restored (its latest).
    params: that checkpoint's params.
    model: the network, a :class:`~vcrnn_jax.models.SequenceModel` whose
      ``apply(params, inputs, ...)`` the experiment trains and evaluates
      (see :meth:`apply`).
  """
  workdir: pathlib.Path
  binary: str
  flags: dict
  experiment: Experiment
  config: TrainConfig
  step: int
  params: Any
  model: SequenceModel

  def apply(self, inputs, *args, **kwargs):
    """The model on ``inputs`` with the run's params: ``(outputs, ys)``.

    ``self.model.apply(self.params, inputs, *args, **kwargs)``, with
    ``context=Context(step=self.step)`` unless given (a VC cell's sharpness
    follows the step; no key, so no dropout, as in evaluation). What
    ``inputs`` and ``ys`` are depends on the binary:

    * ACT tasks (``act_parity``, ...): ``inputs [batch, time,
      task.input_size]`` floats, without ACT's first-step flag (ACT adds
      it); pass ``lengths`` ``[batch]`` for padded sequences, as the
      evaluation does. ``ys`` is an :class:`~vcrnn_jax.act.ACTOutput` with
      ACT (``ponder``, ``steps`` per step), else the cell's outputs.
    * ``family_parity``: ``inputs [batch, 1, bits]``; ``ys`` the method's
      outputs (ACT's ``ponder``, PonderNet's ``steps`` and ``probs``).
    * ``family_adding``, ``rehn_synthetic``, ``rehn_har``: ``inputs
      [batch, time, features]``; ``ys`` the cell's outputs (Skip-RNN's
      ``update``, VCGRU's ``m``, the elastic cells' realized depth).
    * language models (``act_wikipedia``, ``vc_*``, ``rehn_ptb``): int ids
      ``[batch, time]``; logits over the vocabulary (VC's ``ys.m`` is
      :math:`m_t`).
    * ``depth_logic``: token ids ``[batch, T]`` (and ``mask``); ``ys`` is
      a :class:`~vcrnn_jax.papers.depth.logic.Forward` (``steps``,
      ``ponder``).
    * ``depth_lm``: character ids ``[batch, T]``, full windows of at most
      ``context``; logits ``[batch, T, V]`` and ``ys`` a
      :class:`~vcrnn_jax.papers.depth.lm.Forward` (``steps``, ``ponder``;
      route by its causal threshold rule, as evaluated).

    Example (a tiny ACT parity run trained in ``workdir``)::

      run = load_run(workdir)
      task = vcrnn_jax.tasks.get('parity', bits=run.flags['bits'])
      batch = task.sample(jax.random.key(0), 16)
      logits, ys = run.apply(batch.inputs)
      errors = task.sequence_errors(logits, batch)    # [16]
      ys.ponder                                        # [16, 1]: N + R

    Raises:
      ValueError: inputs of the wrong width (the cell's message names the
        width the params read).
    """
    if 'context' not in kwargs:
      kwargs['context'] = Context(step=jnp.asarray(self.step, jnp.int32))
    return self.model.apply(self.params, inputs, *args, **kwargs)


def _first_line(e: BaseException) -> str:
  return str(e).splitlines()[0] if str(e) else type(e).__name__


def _with_data(values: dict, binary: str, **given) -> dict:
  """``values`` with the data flags of ``given`` replaced."""
  out = dict(values)
  for name, value in given.items():
    if value is None:
      continue
    if name not in values:
      raise ValueError(f'{binary} has no --{name}: {name}= does not apply '
                       'to its run.')
    out[name] = str(value)
  return out


def load_run(workdir: str | os.PathLike[str], *,
             data_dir: str | os.PathLike[str] | None = None,
             data_path: str | os.PathLike[str] | None = None) -> Run:
  """Rebuilds the run in ``workdir`` and restores its latest checkpoint.

  Args:
    workdir: a binary's ``--workdir`` (for ``rehn_synthetic`` and
      ``rehn_har``, one of its ``seed=<s>`` folders).
    data_dir: replaces the run's ``--data_dir``, for a corpus that has moved
      since (the data-reading binaries: ``vc_*``, ``rehn_har``, ``rehn_ptb``,
      ``act_wikipedia``).
    data_path: replaces the run's ``--data_path`` likewise (``vc_music``,
      ``vc_europarl``, ``act_wikipedia``).

  Returns:
    The :class:`Run`.

  Raises:
    FileNotFoundError: no such folder; a folder that holds no run (empty,
      or a folder of runs: the message lists them); a run without a
      checkpoint or ``flags.json``; a run whose corpus is not where its
      flags say.
    ValueError: a run of a binary not in :data:`BINARIES`, a data flag the
      binary does not have, a manifest without the flag values (or without
      one the binary has gained since), or a checkpoint that does not match
      the rebuilt model.
  """
  workdir = pathlib.Path(workdir)
  start = training_runs.read_workdir(workdir, list(BINARIES))
  values = _with_data(start.values, start.binary, data_dir=data_dir,
                      data_path=data_path)
  try:
    built = BINARIES[start.binary](values)
  except KeyError as e:
    raise ValueError(
        f'the {start.binary} run in {workdir} recorded no --{e.args[0]}, a '
        'flag its binary has gained since; rerun its command once, '
        f'`{start.command}`, which resumes the run and records it.'
    ) from None
  except OSError as e:
    where = ' or '.join(f'{n}=' for n in _DATA_FLAGS if n in values)
    raise FileNotFoundError(
        f'the data of the {start.binary} run in {workdir} is missing: '
        f'{_first_line(e).rstrip(".")}; give load_run\'s {where} where it '
        'is now.') from None
  step, params = restore_latest_params(built.experiment, built.config,
                                       workdir)
  return Run(workdir, start.binary, values, built.experiment, built.config,
             step, params, built.model)
