r"""Skip-RNN's adding task (Campos et al. 2018, Sec. 4.1) for the family.

One :func:`experiment` trains any of :data:`MODELS` on
:mod:`vcrnn_jax.tasks.adding` with the same readout and trainer, so the
methods differ only in how much of the state they update:

* ``lstm``, ``gru``: every step updates the whole state (fraction 1);
* ``skip_lstm``, ``skip_gru``: :func:`vcrnn_jax.skip.skip` around the cell;
  the loss adds ``budget * sum_t u_t`` (S5), and the fraction reported is the
  mean of ``u_t``, the steps that update;
* ``vcgru``: :func:`vcrnn_jax.vc.vcgru`; the loss adds ``vc_penalty *
  Omega(m, vc_target)`` (VCRNN Eq. 10), and the fraction is the mean of
  ``m_t``, the share of hidden dimensions each step updates.

The prediction is a linear readout of the last step's output, as in the
authors' code; the loss is the mean squared error (the authors report half
of it, ``tf.nn.l2_loss / batch``).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax import registry, skip, vc
from vcrnn_jax.core import check_positive_int
from vcrnn_jax.models import sequence_model
from vcrnn_jax.tasks import adding
from vcrnn_jax.training.train import Experiment

__all__ = ['MODELS', 'AddingSpec', 'build_cell', 'build_model', 'experiment']

MODELS = ('lstm', 'gru', 'skip_lstm', 'skip_gru', 'vcgru')


class AddingSpec(NamedTuple):
  """The model of an adding-task run."""
  model: str = 'skip_lstm'   # one of MODELS
  hidden_size: int = 110     # the paper's Skip-LSTM
  budget: float = 1e-4       # S5's lambda (the paper's cost per sample)
  vc_target: float = 0.3     # VCRNN Eq. 10's target m-bar
  vc_penalty: float = 0.1    # its weight
  seq_len: int = 50


def _check(spec: AddingSpec) -> None:
  if spec.model not in MODELS:
    raise ValueError(f'model must be one of {", ".join(MODELS)}, got '
                     f'{spec.model!r}.')
  check_positive_int('hidden_size', spec.hidden_size)
  if not spec.budget >= 0:
    raise ValueError(f'budget must be a number >= 0, got {spec.budget!r}.')
  if not 0 < spec.vc_target <= 1:
    raise ValueError(f'vc_target must be in (0, 1], got {spec.vc_target!r}.')
  if not spec.vc_penalty >= 0:
    raise ValueError(f'vc_penalty must be >= 0, got {spec.vc_penalty!r}.')


def build_cell(spec: AddingSpec):
  """The recurrent cell of ``spec``."""
  _check(spec)
  name = spec.model.removeprefix('skip_')
  cell = registry.build_cell(name, spec.hidden_size)
  return skip.skip(cell) if spec.model.startswith('skip_') else cell


def build_model(spec: AddingSpec):
  """The sequence model of ``spec``: its cell and a linear readout of one
  output per step (the prediction is the last step's)."""
  return sequence_model(build_cell(spec), 1)


def _forward(net, spec: AddingSpec, params, batch: adding.AddingBatch):
  """``(squared errors [B], extra loss [B], update fraction [B])``."""
  preds, ys = net.apply(params, batch.inputs)
  errors = adding.squared_errors(preds[:, -1], batch)
  if spec.model.startswith('skip_'):
    extra = spec.budget * skip.budget_loss(ys)                       # (S5)
    fraction = jnp.mean(ys.update, axis=1)
  elif spec.model == 'vcgru':
    extra = spec.vc_penalty * vc.penalty(ys.m, spec.vc_target)      # Eq. 10
    fraction = jnp.mean(ys.m, axis=1)
  else:
    extra = jnp.zeros_like(errors)
    fraction = jnp.ones_like(errors)
  return errors, extra, fraction


def experiment(spec: AddingSpec, *, batch_size: int,
               eval_batch_size: int = 1000,
               eval_seed: int = 2**31 - 1) -> Experiment:
  """An :class:`Experiment` of the adding task for ``spec``.

  Evaluation reads one fixed held-out batch: ``mse`` and ``update_fraction``
  (the mean ``u_t`` for Skip cells, ``m_t`` for VCGRU, 1 otherwise).
  """
  batch_size = check_positive_int('batch_size', batch_size)
  eval_batch_size = check_positive_int('eval_batch_size', eval_batch_size)
  net = build_model(spec)
  adding.sample(jax.random.key(0), 1, spec.seq_len)  # Checks seq_len now.

  def loss(params, batch, info):
    del info  # No dropout and no schedules here.
    errors, extra, fraction = _forward(net, spec, params, batch)
    return jnp.mean(errors + extra), {'mse': jnp.mean(errors),
                                      'update_fraction': jnp.mean(fraction)}

  @jax.jit
  def sample(key, step):
    return adding.sample(jax.random.fold_in(key, step), batch_size,
                         spec.seq_len)

  held_out = adding.sample(jax.random.PRNGKey(eval_seed), eval_batch_size,
                           spec.seq_len)

  @jax.jit
  def eval_sums(params):
    errors, _, fraction = _forward(net, spec, params, held_out)
    return jnp.mean(errors), jnp.mean(fraction)

  def evaluate(params, step):
    del step  # The held-out batch is fixed.
    mse, fraction = (float(v) for v in eval_sums(params))
    return {'mse': mse, 'update_fraction': fraction,
            'mse_over_baseline': mse / adding.BASELINE_MSE}

  def init(key):
    return net.init(key, 2)

  return Experiment(init=init, loss=loss, sample=sample, evaluate=evaluate)

