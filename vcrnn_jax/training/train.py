"""A generic training loop: optax, data parallelism, Orbax resume, metrics.

Every experiment binary builds an :class:`Experiment` (pure functions for init,
loss, batch sampling and evaluation) and calls :func:`train_and_evaluate`.

Randomness is explicit: the seed gives an init key and a data key; the batch of
step ``s`` is ``sample(fold_in(data_key, s))``. The data RNG is therefore fully
described by ``(data_key, step)``, both saved in every checkpoint, which is why
a resumed run reproduces an uninterrupted one bit for bit.

Data parallelism: the batch is sharded over all devices along a ``'data'`` mesh
axis (``NamedSharding``), params and optimizer state are replicated, and XLA
inserts the gradient all-reduce. Multi-host: call
``jax.distributed.initialize()`` at the top of the binary on every host; the
mesh then spans ``jax.devices()`` (all hosts), each host computes the same
global batch from the same key and contributes its addressable shards
(``jax.make_array_from_callback``), and only process 0 writes metrics.
"""

import dataclasses
import math
import pathlib
import time
from typing import Any, Callable, Mapping, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from vcrnn_jax.training.checkpoint import Checkpointer
from vcrnn_jax.training.metrics import MetricsWriter
from vcrnn_jax.training.progress import Progress, summary_table


class Experiment(NamedTuple):
  """The pure functions a training run needs.

  Attributes:
    init: ``key -> params``.
    loss: ``(params, batch) -> (scalar loss, dict of scalar metrics)``, the
      mean over the batch (so the gradient does not depend on sharding).
    sample: ``key -> batch``, the training batch (a pytree whose leaves all
      have the global batch size as leading axis).
    evaluate: ``params -> dict of float metrics`` on held-out data.
  """
  init: Callable[[jax.Array], Any]
  loss: Callable[[Any, Any], tuple[jax.Array, Mapping[str, jax.Array]]]
  sample: Callable[[jax.Array], Any]
  evaluate: Callable[[Any], Mapping[str, float]]


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """Hyperparameters of :func:`train_and_evaluate` (validated on use)."""
  steps: int = 10_000
  batch_size: int = 128
  learning_rate: float = 1e-3
  grad_clip_norm: Optional[float] = None
  eval_every: int = 1000
  checkpoint_every: Optional[int] = None   # None: same as eval_every
  keep_checkpoints: int = 3
  log_every: int = 50
  seed: int = 0
  desc: str = 'train'
  quiet: bool = False


class TrainState(NamedTuple):
  params: Any
  opt_state: Any
  step: jax.Array       # int32 scalar
  data_key: jax.Array   # uint32[2] raw PRNG key of the data stream


class TrainResult(NamedTuple):
  params: Any
  step: int
  metrics: dict         # the last evaluation
  history: list         # every evaluation, as written to metrics.jsonl


class TrainingDiverged(RuntimeError):
  """The loss became NaN or infinite; the message names the step."""


def _check_config(config: TrainConfig) -> None:
  for name in ('steps', 'batch_size', 'eval_every', 'keep_checkpoints',
               'log_every'):
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'{name} must be a positive integer, got {value!r}.')
  if config.checkpoint_every is not None and (
      not isinstance(config.checkpoint_every, int)
      or config.checkpoint_every < 1):
    raise ValueError('checkpoint_every must be a positive integer, got '
                     f'{config.checkpoint_every!r}.')
  lr = config.learning_rate
  if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
    raise ValueError(f'learning_rate must be a finite number > 0, got {lr!r}.')
  clip = config.grad_clip_norm
  if clip is not None and not (math.isfinite(clip) and clip > 0):
    raise ValueError(f'grad_clip_norm must be > 0 or None, got {clip!r}.')


def _global_norm(tree) -> jax.Array:
  # optax.global_norm is deprecated and optax.tree.norm is recent: spell it out.
  return jnp.sqrt(sum(jnp.sum(jnp.square(g))
                      for g in jax.tree_util.tree_leaves(tree)))


def make_optimizer(config: TrainConfig) -> optax.GradientTransformation:
  """Adam (the ACT paper's optimiser), with optional global-norm clipping."""
  adam = optax.adam(config.learning_rate)
  if config.grad_clip_norm is None:
    return adam
  return optax.chain(optax.clip_by_global_norm(config.grad_clip_norm), adam)


def prepare_workdir(workdir) -> pathlib.Path:
  """Creates ``workdir``; a ``ValueError`` if it exists and is not a folder."""
  path = pathlib.Path(workdir)
  if path.exists() and not path.is_dir():
    raise ValueError(f'workdir {str(path)!r} exists and is not a directory.')
  path.mkdir(parents=True, exist_ok=True)
  return path


def _shard_batch(batch: Any, sharding: NamedSharding) -> Any:
  if jax.process_count() == 1:
    return jax.device_put(batch, sharding)
  def put(leaf):
    host = np.asarray(leaf)
    return jax.make_array_from_callback(host.shape, sharding,
                                        lambda idx: host[idx])
  return jax.tree_util.tree_map(put, batch)


def _initial_state(experiment: Experiment, config: TrainConfig):
  """The optimizer and the step-0 :class:`TrainState` of ``config``."""
  init_key, data_key = jax.random.split(jax.random.PRNGKey(config.seed))
  tx = make_optimizer(config)
  params = experiment.init(init_key)
  return tx, TrainState(params, tx.init(params), jnp.zeros((), jnp.int32),
                        data_key)


def restore_latest_params(experiment: Experiment, config: TrainConfig,
                          workdir) -> tuple[int, Any]:
  """``(step, params)`` of the latest checkpoint a run in ``workdir`` saved.

  ``config`` must describe the optimizer the run trained with (its state is
  part of the checkpoint's structure); the steps and evaluation settings do
  not matter.

  Raises:
    ValueError: ``workdir`` holds no checkpoint.
  """
  _, target = _initial_state(experiment, config)
  directory = pathlib.Path(workdir) / 'checkpoints'
  checkpointer = Checkpointer(directory)
  try:
    restored = checkpointer.restore_latest(target)
  finally:
    checkpointer.close()
  if restored is None:
    raise ValueError(f'no checkpoint in {directory}.')
  step, state = restored
  return step, TrainState(*state).params


def train_and_evaluate(experiment: Experiment, config: TrainConfig,
                       workdir) -> TrainResult:
  """Trains ``experiment`` in ``workdir``, resuming from its latest checkpoint.

  Writes ``<workdir>/checkpoints/`` (Orbax; params, optimizer state, step and
  data key every ``checkpoint_every`` steps and at the end, the last
  ``keep_checkpoints`` kept), ``<workdir>/metrics.jsonl`` and TensorBoard
  events in ``<workdir>/tensorboard/`` at every evaluation, and a progress bar
  on stderr.

  Raises:
    ValueError: a bad config or workdir, or a batch size the devices do not
      divide.
    TrainingDiverged: the loss became NaN/inf; nothing after the last good
      checkpoint was saved.
  """
  _check_config(config)
  workdir = prepare_workdir(workdir)
  devices = np.array(jax.devices())
  if config.batch_size % devices.size:
    raise ValueError(
        f'batch_size={config.batch_size} must be divisible by the number of '
        f'devices ({devices.size}).')
  mesh = Mesh(devices, ('data',))
  replicated = NamedSharding(mesh, PartitionSpec())
  batch_sharding = NamedSharding(mesh, PartitionSpec('data'))
  checkpoint_every = config.checkpoint_every or config.eval_every
  is_chief = jax.process_index() == 0

  tx, state = _initial_state(experiment, config)

  checkpointer = Checkpointer(workdir / 'checkpoints',
                              max_to_keep=config.keep_checkpoints)
  restored = checkpointer.restore_latest(state)
  start = 0
  if restored is not None:
    start, state = restored
    state = TrainState(*state)
  state = jax.device_put(state, replicated)
  writer = MetricsWriter(workdir, resume_step=start) if is_chief else None

  def train_step(state: TrainState, batch):
    (loss, metrics), grads = jax.value_and_grad(
        experiment.loss, has_aux=True)(state.params, batch)
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    metrics = dict(metrics, grad_norm=_global_norm(grads))
    return TrainState(params, opt_state, state.step + 1,
                      state.data_key), loss, metrics

  donate = (0,) if jax.default_backend() != 'cpu' else ()
  train_step = jax.jit(train_step, donate_argnums=donate,
                       out_shardings=(replicated, replicated, replicated))
  sample = jax.jit(experiment.sample)

  progress = Progress(config.steps, initial=start, desc=config.desc) \
      if is_chief and not config.quiet else None
  history: list = []
  last_eval: dict = {}
  last_saved = checkpointer.latest_step()
  pending: list = []    # (step, loss, metrics) not yet checked on the host
  train_window: list = []
  t_start = time.time()

  def say(line):
    if progress is not None:
      progress.write(line)
    elif is_chief and not config.quiet:
      print(line, flush=True)

  def flush_pending(step):
    for s, loss, metrics in pending:
      value = float(loss)
      if not math.isfinite(value):
        where = (f'step {last_saved} in {workdir / "checkpoints"}'
                 if last_saved is not None else 'none')
        raise TrainingDiverged(
            f'loss is {value} at step {s}; training stopped. Last good '
            f'checkpoint: {where} (not overwritten).')
      train_window.append({k: float(v) for k, v in metrics.items()})
      train_window[-1]['loss_total'] = value
    pending.clear()
    if progress is not None and train_window:
      progress.update(step, loss=f'{train_window[-1]["loss_total"]:.4f}')

  if restored is not None:
    say(f'Resumed from step {start} ({workdir / "checkpoints"}).')
  try:
    step = start
    while step < config.steps:
      batch = _shard_batch(
          sample(jax.random.fold_in(state.data_key, step)), batch_sharding)
      state, loss, metrics = train_step(state, batch)
      step += 1
      pending.append((step, loss, metrics))
      last = step == config.steps
      do_eval = step % config.eval_every == 0 or last
      do_save = step % checkpoint_every == 0 or last
      if step % config.log_every == 0 or do_eval or do_save:
        flush_pending(step)
      if do_eval:
        results = {f'train_{k}': float(np.mean([m[k] for m in train_window]))
                   for k in (train_window[0] if train_window else {})}
        train_window.clear()
        results.update({k: float(v) for k, v in
                        experiment.evaluate(state.params).items()})
        results['steps_per_sec'] = (step - start) / max(
            time.time() - t_start, 1e-9)
        last_eval = results
        history.append(dict(step=step, **results))
        if writer is not None:
          writer.write(step, results)
        say(f'step {step}: ' + ', '.join(
            f'{k}={v:.4g}' for k, v in results.items()))
      if do_save:
        checkpointer.save(step, jax.device_get(state))
        last_saved = step
  finally:
    if progress is not None:
      progress.close()
    if writer is not None:
      writer.close()
    checkpointer.close()

  final_step = int(state.step)
  if not last_eval:
    # Already trained to `steps` (a rerun of a finished command): report the
    # checkpoint's metrics; metrics.jsonl already holds this step.
    say(f'Already at step {final_step} >= --steps={config.steps}; '
        'evaluating the checkpoint only.')
    last_eval = {k: float(v) for k, v in
                 experiment.evaluate(state.params).items()}
  if is_chief and not config.quiet:
    elapsed = time.time() - t_start
    rows = {'steps': f'{start} -> {final_step}',
            'wall time': f'{elapsed:.1f} s',
            'devices': f'{devices.size} x {jax.default_backend()}'}
    rows.update({k: f'{v:.4g}' for k, v in last_eval.items()})
    rows['workdir'] = str(workdir)
    print(summary_table(rows, title=config.desc), flush=True)
  return TrainResult(jax.device_get(state.params), final_step, last_eval,
                     history)
