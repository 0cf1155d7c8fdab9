r"""Fixed array datasets with train/valid/test splits: classification,
regression.

:func:`array_experiment` turns a sequence model and ``(inputs, targets)``
splits into an :class:`~vcrnn_jax.training.train.Experiment` read in epochs:
step ``s`` is batch ``s mod n`` of epoch ``s // n`` (``n = N // batch_size``,
the last partial batch dropped so every batch has one shape), in an order
drawn from ``fold_in(data_key, epoch)``, so each epoch is reshuffled and a
resumed run sees the same batches. Two tasks:

* ``'classification'``: one label per sequence, read from the model's output
  at the last step (EI-REHN Sec. 4.2: "a six-class softmax layer is added to
  the last hidden units"); cross-entropy; reports accuracy (and the confusion
  matrix through :meth:`ArrayTask.evaluate_split`).
* ``'regression'``: a target vector per step (EI-REHN Sec. 4.1: next-step
  prediction); squared error averaged over every element of every step;
  reports MSE.

Each evaluation reports every non-empty held-out split (``valid_*``,
``test_*``) and the mean of each per-step statistic (EI-REHN's realized
depth).
"""

from collections.abc import Callable, Iterator, Mapping
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax.core import Context, check_positive_int
from vcrnn_jax.metrics import classification_sums, squared_error_sums
from vcrnn_jax.models import SequenceModel
from vcrnn_jax.training.train import Experiment, StepInfo

__all__ = ['TASKS', 'ArrayBatch', 'ArrayTask', 'array_experiment']

TASKS = ('classification', 'regression')

# ys -> {name: [batch, time] per-step values}, averaged over steps and rows.
Statistics = Callable[[Any], Mapping[str, jax.Array]]


class ArrayBatch(NamedTuple):
  inputs: jax.Array    # [B, T, F]
  targets: jax.Array   # [B] int labels, or [B, T, O] regression targets


class ArrayTask(NamedTuple):
  """What :func:`array_experiment` built."""
  experiment: Experiment
  steps_per_epoch: int
  # (params, split_name, step=None) -> metrics (+ 'confusion' for classes)
  evaluate_split: Callable[..., dict]
  # (params, inputs [N, T, F], step=None) -> (outputs, {stat: [N, T]})
  predict: Callable[..., tuple]


def _check_split(name, split, task):
  if split is None:
    return None
  inputs, targets = (np.asarray(a) for a in split)
  if not len(inputs):
    return None
  if inputs.ndim != 3:
    raise ValueError(f'{name} inputs must be [N, time, features], got shape '
                     f'{inputs.shape}.')
  if len(targets) != len(inputs):
    raise ValueError(f'{name} has {len(inputs)} inputs but {len(targets)} '
                     'targets.')
  if task == 'classification' and targets.ndim != 1:
    raise ValueError(f'{name} targets must be [N] class labels, got shape '
                     f'{targets.shape}.')
  if task == 'regression' and targets.shape[:2] != inputs.shape[:2]:
    raise ValueError(f'{name} targets must be [N, time, outputs] like the '
                     f'inputs {inputs.shape[:2]}, got {targets.shape}.')
  return inputs, targets


# The sums eval_batch returns besides those of the statistics.
_TASK_SUMS = ('loss', 'correct', 'confusion', 'sq', 'count')


def _outputs(model: SequenceModel, task: str, params, inputs: jax.Array,
             context: Context) -> tuple[jax.Array, Any]:
  """The model's outputs (a classifier's at the last step only) and ys."""
  out, ys = model.apply(params, inputs, context=context)
  if task == 'classification':
    out = out[:, -1]
  return out, ys


def _loss_terms(task: str, out: jax.Array, targets: jax.Array
                ) -> tuple[jax.Array, dict]:
  """The batch-mean loss (cross-entropy or squared error) and its metric."""
  if task == 'classification':
    ce, correct, _ = classification_sums(out, targets)
    n = targets.shape[0]
    return ce / n, {'accuracy': correct / n}
  sq, count = squared_error_sums(out, targets)
  return sq / count, {'mse': sq / count}


def _epoch_sampler(inputs: jax.Array, targets: jax.Array, batch_size: int
                   ) -> Callable[[jax.Array, jax.Array], ArrayBatch]:
  """``sample(key, step)``: batch ``step mod n`` of epoch ``step // n``, in
  an order drawn from ``fold_in(key, epoch)``; the last partial batch is
  dropped."""
  n_train = len(inputs)
  steps_per_epoch = n_train // batch_size

  @jax.jit
  def sample(key, step):
    epoch, i = step // steps_per_epoch, step % steps_per_epoch
    order = jax.random.permutation(jax.random.fold_in(key, epoch), n_train)
    rows = jax.lax.dynamic_slice_in_dim(order, i * batch_size, batch_size)
    return ArrayBatch(jnp.take(inputs, rows, axis=0),
                      jnp.take(targets, rows, axis=0))

  return sample


def _train_loss(outputs: Callable[..., tuple], task: str,
                statistics: Statistics) -> Callable[..., tuple]:
  """The :class:`Experiment` loss: the task's loss, its metric and the mean
  of each statistic."""
  def loss(params, batch: ArrayBatch, info: StepInfo):
    out, ys = outputs(params, batch.inputs,
                      Context(step=info.step, key=info.key))
    value, metrics = _loss_terms(task, out, batch.targets)
    metrics.update({k: jnp.mean(v) for k, v in statistics(ys).items()})
    return value, metrics

  return loss


# ---- evaluation


def _batch_sums(outputs: Callable[..., tuple], task: str,
                statistics: Statistics) -> Callable[..., dict]:
  """Jitted ``(params, inputs, targets, mask, step) -> {name: sum}`` over the
  rows of a padded batch that ``mask`` keeps."""
  @jax.jit
  def batch_sums(params, inputs, targets, mask, step):
    out, ys = outputs(params, inputs, Context(step=step))
    # Summed over the real rows, so that the split's sum over N is the mean.
    stats = {k: jnp.sum(jnp.mean(v.reshape(v.shape[0], -1), axis=1) * mask)
             for k, v in statistics(ys).items()}
    if task == 'classification':
      ce, correct, confusion = classification_sums(out, targets, mask)
      return {'loss': ce, 'correct': correct, 'confusion': confusion,
              **stats}
    sq, count = squared_error_sums(out, targets, mask)
    return {'sq': sq, 'count': count, **stats}

  return batch_sums


def _padded_batches(inputs: np.ndarray, targets: np.ndarray,
                    batch_size: int) -> Iterator[tuple]:
  """``(inputs, targets, mask)`` batches of a split, the last one padded with
  zeros (``mask`` False), so that every batch has one shape."""
  n = len(inputs)
  for lo in range(0, n, batch_size):
    x = inputs[lo:lo + batch_size]
    y = targets[lo:lo + batch_size]
    pad = batch_size - len(x)
    mask = np.arange(batch_size) < len(x)
    if pad:
      x = np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)])
      y = np.concatenate([y, np.zeros((pad,) + y.shape[1:], y.dtype)])
    yield x.astype(np.float32), y, mask


def _split_metrics(task: str, totals: dict, n: int) -> dict:
  """The metrics of a split of ``n`` examples from its sums."""
  stats = {k: float(totals[k]) / n for k in totals if k not in _TASK_SUMS}
  if task == 'classification':
    out = {'loss': float(totals['loss']) / n,
           'accuracy': float(totals['correct']) / n,
           'confusion': totals['confusion'].astype(np.int64)}
  else:
    out = {'mse': float(totals['sq']) / float(totals['count'])}
  out.update(stats)
  return out


def _split_evaluator(data: Mapping[str, Any], batch_sums: Callable[..., dict],
                     batch_size: int, task: str) -> Callable[..., dict]:
  """``evaluate_split(params, split, step=None)``: the metrics of one split,
  summed over its padded batches on the host, in float64."""
  def evaluate_split(params, split, step=None):
    """Metrics of one split: loss/accuracy/confusion or MSE, and statistics."""
    if data.get(split) is None:
      raise ValueError(f'split {split!r} is empty or missing.')
    step = jnp.asarray(0 if step is None else step, jnp.int32)
    totals: dict = {}
    for x, y, mask in _padded_batches(*data[split], batch_size):
      sums = batch_sums(params, jnp.asarray(x), jnp.asarray(y),
                        jnp.asarray(mask, jnp.float32), step)
      for k, v in sums.items():
        totals[k] = totals.get(k, 0.0) + np.asarray(v, np.float64)
    return _split_metrics(task, totals, len(data[split][0]))

  return evaluate_split


def _held_out_evaluator(data: Mapping[str, Any],
                        evaluate_split: Callable[..., dict]
                        ) -> Callable[..., dict]:
  """``evaluate(params, step)``: ``valid_*`` and ``test_*`` metrics of the
  non-empty held-out splits (no confusion matrix: metrics are scalars)."""
  def evaluate(params, step):
    results = {}
    for split in ('valid', 'test'):
      if data[split] is not None:
        metrics = evaluate_split(params, split, step)
        metrics.pop('confusion', None)
        results.update({f'{split}_{k}': v for k, v in metrics.items()})
    return results

  return evaluate


def _predictor(outputs: Callable[..., tuple], statistics: Statistics
               ) -> Callable[..., tuple]:
  """``predict(params, inputs, step=None)``: outputs and statistics as numpy
  arrays."""
  @jax.jit
  def jitted(params, inputs, step):
    out, ys = outputs(params, inputs, Context(step=step))
    return out, statistics(ys)

  def predict(params, inputs, step=None):
    """Model outputs (and per-step statistics) for ``inputs``."""
    step = jnp.asarray(0 if step is None else step, jnp.int32)
    out, stats = jitted(params, jnp.asarray(inputs, jnp.float32), step)
    return np.asarray(out), {k: np.asarray(v) for k, v in stats.items()}

  return predict


def array_experiment(
    model: SequenceModel,
    splits: Mapping[str, Any],
    *,
    task: str,
    batch_size: int,
    eval_batch_size: int = 1000,
    statistics: Statistics | None = None,
) -> ArrayTask:
  """An :class:`Experiment` on fixed arrays (see module docstring).

  Args:
    model: a sequence model over float inputs ``[B, T, F]`` whose ``apply``
      takes ``context=`` and returns ``(outputs [B, T, O], ys)``.
    splits: ``{'train': (inputs, targets), 'valid': ..., 'test': ...}``;
      valid and test may be missing or empty.
    task: ``'classification'`` or ``'regression'``.
    batch_size: training batch.
    eval_batch_size: rows per held-out batch (padded; each row counted once).
    statistics: ``ys -> {name: [B, T]}`` per-step values to report.

  Returns:
    An :class:`ArrayTask`.
  """
  if task not in TASKS:
    raise ValueError(f'task must be one of {TASKS}, got {task!r}.')
  batch_size = check_positive_int('batch_size', batch_size)
  eval_batch_size = check_positive_int('eval_batch_size', eval_batch_size)
  data = {name: _check_split(name, splits.get(name), task)
          for name in ('train', 'valid', 'test')}
  if data['train'] is None:
    raise ValueError('the train split is empty.')
  n_train = len(data['train'][0])
  if n_train < batch_size:
    raise ValueError(f'the train split has {n_train} examples, fewer than '
                     f'batch_size={batch_size}.')
  train_x = jnp.asarray(data['train'][0], jnp.float32)
  train_y = jnp.asarray(data['train'][1])
  stats_fn = statistics or (lambda ys: {})
  outputs = functools.partial(_outputs, model, task)

  evaluate_split = _split_evaluator(
      data, _batch_sums(outputs, task, stats_fn), eval_batch_size, task)

  def init(key):
    return model.init(key, int(train_x.shape[-1]))

  experiment = Experiment(init=init,
                          loss=_train_loss(outputs, task, stats_fn),
                          sample=_epoch_sampler(train_x, train_y, batch_size),
                          evaluate=_held_out_evaluator(data, evaluate_split))
  return ArrayTask(experiment, n_train // batch_size, evaluate_split,
                   _predictor(outputs, stats_fn))
