"""A generic training loop: optax, data parallelism, Orbax resume, metrics.

Every experiment builds an :class:`Experiment` (pure functions for init,
loss, batch sampling and evaluation) and calls :func:`train_and_evaluate`.
The shared builders in :mod:`vcrnn_jax.training.lm` (language models) and
:mod:`vcrnn_jax.training.supervised` (fixed array datasets) make them.

Randomness and data are functions of the step. The seed gives an init key, a
data key and a loss key; the batch of step ``s`` is ``sample(data_key, s)``
(a fixed dataset reads epoch ``s // steps_per_epoch`` in an order drawn from
``fold_in(data_key, epoch)``; a stream reads contiguous windows) and the loss
of step ``s`` gets ``fold_in(loss_key, s)`` (dropout) and ``s`` itself
(schedules). The data key and the step are saved in every checkpoint, with the
params, the optimizer state and, for truncated BPTT, the recurrent state
carried from one step to the next, which is why a resumed run reproduces an
uninterrupted one bit for bit.

Data parallelism: the batch (and a carried state) is sharded over all devices
along a ``'data'`` mesh axis (``NamedSharding``), params and optimizer state
are replicated, and XLA inserts the gradient all-reduce. Several processes
(:mod:`vcrnn_jax.training.distributed`) extend the mesh over every process's
devices: the same global batch, split over more devices.
"""

from collections.abc import Callable, Mapping
import dataclasses
import functools
import math
import pathlib
import time
from typing import Any, NamedTuple

import jax
from jax import lax
from jax.experimental import multihost_utils
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec
import numpy as np
import optax

from vcrnn_jax.core import check_positive_int
from vcrnn_jax.training import distributed
from vcrnn_jax.training.checkpoint import Checkpointer
from vcrnn_jax.training.metric_writer import (
  METRICS_FILENAME,
  MetricsWriter,
  read_metrics,
)
from vcrnn_jax.training.progress import Progress, summary_table

__all__ = [
    'StepInfo',
    'Experiment',
    'TrainConfig',
    'OPTIMIZERS',
    'TrainState',
    'TrainResult',
    'TrainingDiverged',
    'learning_rate_schedule',
    'make_optimizer',
    'global_norm',
    'clip_by_global_norm',
    'clip_by_group_norm',
    'scale_by_key',
    'prepare_workdir',
    'run_keys',
    'initial_state',
    'restore_latest_params',
    'train_step',
    'evaluate',
    'train_and_evaluate',
]


class StepInfo(NamedTuple):
  """What the loss of one training step gets besides params and batch."""
  key: jax.Array        # PRNG key of this step: fold_in(loss_key, step)
  step: jax.Array       # int32 scalar: the step being taken (0-based)
  carry: Any = None     # recurrent state left by the previous step (TBPTT)


class Experiment(NamedTuple):
  """The pure functions a training run needs.

  Attributes:
    init: ``key -> params``.
    loss: ``(params, batch, info: StepInfo) -> (scalar loss, metrics)``, the
      loss a mean over the batch (so the gradient does not depend on
      sharding), ``metrics`` a dict of scalars (shown on the progress bar and
      averaged into ``train_*`` at each evaluation). With ``init_carry`` set,
      it returns ``(loss, (metrics, new_carry))`` instead and ``info.carry``
      is the previous step's ``new_carry``. ``info.step`` is a traced array:
      step-dependent hyperparameters never recompile.
    sample: ``(data_key, step) -> batch``, the training batch of ``step`` (a
      pytree whose leaves all have the global batch size as leading axis).
      It must be a pure function of its arguments (resume depends on it);
      it may jit itself.
    evaluate: ``(params, step) -> dict of float metrics`` on held-out data.
    init_carry: optional ``batch_size -> carry``, a recurrent state with
      leaves ``[batch, ...]`` carried from each step to the next (truncated
      BPTT) and checkpointed with the params. None: no carried state.
  """
  init: Callable[[jax.Array], Any]
  loss: Callable[..., tuple[jax.Array, Any]]
  sample: Callable[[jax.Array, Any], Any]
  evaluate: Callable[[Any, int], Mapping[str, float]]
  init_carry: Callable[[int], Any] | None = None


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """Hyperparameters of :func:`train_and_evaluate` (validated on use).

  The optimizer is ``optimizer`` ('adam' or 'sgd', with ``momentum``) with
  learning rate ``learning_rate``, multiplied by ``lr_decay`` once at step
  ``lr_decay_start`` and again every ``lr_decay_every`` steps after it (the
  RHN recipe: hold, then divide by a constant each epoch); before it,
  ``weight_decay * params`` is added to the gradient (an L2 penalty of
  ``weight_decay / 2 * |params|^2``) and the sum is clipped to
  ``grad_clip_norm`` in global norm, all through ``optax.chain``.
  ``lr_scales`` (``(name, factor)`` pairs) then multiplies the updates of
  every parameter with a key ``name`` on its path by ``factor``: a
  per-module learning rate, e.g. ``(('scheduler', 0.1),)`` for the VC
  scheduler of Eq. 7, whose ``D``-wide ``u`` moves :math:`m_t` by up to
  ``learning_rate * D`` per Adam step. ``clip_apart`` (key names) clips
  the gradient of the parameters under each name to ``grad_clip_norm`` by
  its own global norm, and the rest by theirs, so that one module's large
  gradient (the VC scheduler's grows with ``lambda * D``) does not scale
  down every other parameter's; each such group's norm before clipping is
  logged as ``grad_norm_<name>`` (``train_grad_norm_<name>`` per
  evaluation), next to the global ``grad_norm``.
  """
  steps: int = 10_000
  batch_size: int = 128
  learning_rate: float = 1e-3
  optimizer: str = 'adam'
  momentum: float = 0.0
  weight_decay: float = 0.0
  lr_decay: float = 1.0
  lr_decay_start: int | None = None
  lr_decay_every: int | None = None
  grad_clip_norm: float | None = None
  lr_scales: tuple = ()   # ((key name, factor), ...), see the docstring
  clip_apart: tuple = ()  # key names clipped by their own norm
  eval_every: int = 1000
  checkpoint_every: int | None = None   # None: same as eval_every
  keep_checkpoints: int = 3
  log_every: int = 50
  seed: int = 0
  desc: str = 'train'
  quiet: bool = False


OPTIMIZERS = ('adam', 'sgd')


class TrainState(NamedTuple):
  params: Any
  opt_state: Any
  step: jax.Array       # int32 scalar
  data_key: jax.Array   # uint32[2] raw PRNG key of the data stream
  carry: Any = None     # recurrent state carried across steps, or None


class TrainResult(NamedTuple):
  params: Any
  step: int
  metrics: dict         # the last evaluation
  history: list         # every evaluation, as written to metrics.jsonl


class TrainingDiverged(RuntimeError):
  """The loss became NaN or infinite; the message names the step."""


def _finite_number(name, value, *, low=0.0, strict=True, high=None):
  ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
        and math.isfinite(value) and (value > low if strict else value >= low)
        and (high is None or value <= high))
  if not ok:
    bound = f'{">" if strict else ">="} {low:g}' + (
        f' and <= {high:g}' if high is not None else '')
    raise ValueError(f'{name} must be a finite number {bound}, got {value!r}.')


def _check_config(config: TrainConfig) -> None:
  for name in ('steps', 'batch_size', 'eval_every', 'keep_checkpoints',
               'log_every'):
    check_positive_int(name, getattr(config, name))
  for name in ('checkpoint_every', 'lr_decay_every'):
    if getattr(config, name) is not None:
      check_positive_int(name, getattr(config, name))
  if config.lr_decay_start is not None and not (
      isinstance(config.lr_decay_start, int) and config.lr_decay_start >= 0):
    raise ValueError('lr_decay_start must be an integer >= 0 or None, got '
                     f'{config.lr_decay_start!r}.')
  _finite_number('learning_rate', config.learning_rate)
  _finite_number('momentum', config.momentum, strict=False, high=1.0)
  _finite_number('weight_decay', config.weight_decay, strict=False)
  _finite_number('lr_decay', config.lr_decay, high=1.0)
  if config.grad_clip_norm is not None:
    _finite_number('grad_clip_norm', config.grad_clip_norm)
  for pair in config.lr_scales:
    if not (isinstance(pair, tuple) and len(pair) == 2
            and isinstance(pair[0], str)):
      raise ValueError('lr_scales must hold (key name, factor) pairs, got '
                       f'{pair!r}.')
    _finite_number(f'lr_scales[{pair[0]!r}]', pair[1], strict=False)
  if config.clip_apart and config.grad_clip_norm is None:
    raise ValueError(f'clip_apart={config.clip_apart!r} needs '
                     'grad_clip_norm.')
  if not all(isinstance(n, str) for n in config.clip_apart):
    raise ValueError('clip_apart must hold key names, got '
                     f'{config.clip_apart!r}.')
  if config.optimizer not in OPTIMIZERS:
    raise ValueError(f'optimizer must be one of {OPTIMIZERS}, got '
                     f'{config.optimizer!r}.')
  if config.optimizer == 'adam' and config.momentum:
    raise ValueError('momentum applies to optimizer=sgd only (Adam has its '
                     f'own), got momentum={config.momentum!r}.')
  if config.lr_decay != 1.0 and config.lr_decay_every is None:
    raise ValueError(f'lr_decay={config.lr_decay!r} needs lr_decay_every '
                     '(steps between two decays).')


def _sum_of_squares_norm(tree) -> jax.Array:
  # optax.global_norm is deprecated and optax.tree.norm is recent: spell it out.
  return jnp.sqrt(sum(jnp.sum(jnp.square(g))
                      for g in jax.tree_util.tree_leaves(tree)))


def _rescaled_norm(leaves) -> jax.Array:
  """The norm of ``leaves`` computed as ``s * |g / s|``, ``s = max |g|``."""
  scale = functools.reduce(jnp.maximum, [jnp.max(jnp.abs(g)) for g in leaves])
  # s = 0 (every entry 0) or s = inf (an infinite entry): divide by 1, so
  # the norm is 0 or inf as it should be, never 0 / 0.
  scale = jnp.where((scale > 0) & jnp.isfinite(scale), scale,
                    jnp.ones_like(scale))
  return scale * jnp.sqrt(sum(jnp.sum(jnp.square(g / scale)) for g in leaves))


def _finite_or_rescaled(norm: jax.Array, leaves) -> jax.Array:
  """``norm`` where it is finite; the rescaled norm of ``leaves`` where not.

  A sum of squares overflows float32 once one entry passes about 1.8e19,
  far below the largest finite gradient (3.4e38): every gradient finite,
  the norm ``inf``, and a clip by ``max_norm / norm`` turns the update into
  zero. The rescaled norm is computed only then (a ``lax.cond``), so a norm
  that does not overflow is the plain one, to the bit.
  """
  if not leaves:
    return norm
  return lax.cond(jnp.isfinite(norm), lambda: norm,
                  lambda: _rescaled_norm(leaves).astype(norm.dtype))


def global_norm(tree) -> jax.Array:
  r"""The global L2 norm of a pytree, finite whenever every entry is.

  :math:`\sqrt{\sum_i g_i^2}`, as ``optax.global_norm``; where that sum of
  squares overflows (float32: one entry above about 1.8e19) it is computed
  as :math:`s \sqrt{\sum_i (g_i / s)^2}`, :math:`s = \max_i |g_i|`. It is
  ``inf`` only when an entry is, and NaN only when an entry is.

  Example:

    >>> import jax.numpy as jnp
    >>> from vcrnn_jax.training import train
    >>> float(train.global_norm({'a': jnp.array([3e20, 4e20], jnp.float32)}))
    5.000000...e+20
  """
  leaves = jax.tree_util.tree_leaves(tree)
  return _finite_or_rescaled(_sum_of_squares_norm(leaves), leaves)


def clip_by_global_norm(max_norm: float) -> optax.GradientTransformation:
  """``optax.clip_by_global_norm`` with the norm of :func:`global_norm`.

  The same update as optax's, to the bit, whenever the sum of squares of
  the updates is finite; where it overflows, optax's norm is ``inf`` and its
  clip returns zero updates (a step that silently does nothing), this one
  rescales them to ``max_norm`` in the direction they had. Stateless, with
  optax's (empty) state, so checkpoints keep their layout.
  """
  optax_norm = getattr(getattr(optax, 'tree', None), 'norm', None)

  def update_fn(updates, state, params=None):
    del params
    leaves = jax.tree_util.tree_leaves(updates)
    # optax's own norm first (the bit-exact path), then the fallback.
    norm = (optax_norm(updates) if optax_norm is not None
            else optax.global_norm(updates))
    norm = _finite_or_rescaled(norm, leaves)
    trigger = jnp.squeeze(norm < max_norm)

    def clip(t):
      return lax.select(trigger, t, (t / norm.astype(t.dtype)) * max_norm)

    return jax.tree_util.tree_map(clip, updates), state

  return optax.GradientTransformation(optax.init_empty_state, update_fn)


def learning_rate_schedule(config: TrainConfig):
  """The learning rate as a float, or as an optax schedule when it decays."""
  if config.lr_decay == 1.0 or config.lr_decay_every is None:
    return config.learning_rate
  lr, decay = config.learning_rate, config.lr_decay
  start = config.lr_decay_start or 0
  every = config.lr_decay_every

  def schedule(count):
    times = jnp.where(count >= start, (count - start) // every + 1, 0)
    return lr * decay ** times.astype(jnp.float32)

  return schedule


def make_optimizer(config: TrainConfig) -> optax.GradientTransformation:
  """The optax optimizer ``config`` describes (see :class:`TrainConfig`).

  A plain Adam (the ACT paper's optimizer, and the default) is
  ``optax.adam(learning_rate)`` itself, so checkpoints of earlier versions
  keep their optimizer-state layout.
  """
  lr = learning_rate_schedule(config)
  if config.optimizer == 'adam':
    core = optax.adam(lr)
  else:
    core = optax.sgd(lr, momentum=config.momentum or None)
  parts = []
  if config.weight_decay:
    parts.append(optax.add_decayed_weights(config.weight_decay))
  if config.clip_apart:
    parts.append(clip_by_group_norm(config.grad_clip_norm, config.clip_apart))
  elif config.grad_clip_norm is not None:
    parts.append(clip_by_global_norm(config.grad_clip_norm))
  after = [scale_by_key(config.lr_scales)] if config.lr_scales else []
  tx = optax.chain(*parts, core, *after) if parts or after else core
  return _standard_promotion(tx)


def _standard_promotion(
    tx: optax.GradientTransformation) -> optax.GradientTransformation:
  """``tx`` with its update under JAX's standard dtype promotion.

  optax computes Adam's bias correction as ``b ** count`` (a Python float and
  an int32 array), which ``jax_numpy_dtype_promotion='strict'`` refuses; the
  optimizer's own arithmetic keeps the standard rules whatever the caller's
  setting. The state is ``tx``'s, so checkpoints keep their layout.
  """

  def update(updates, state, params=None, **extra_args):
    with jax.numpy_dtype_promotion('standard'):
      return tx.update(updates, state, params, **extra_args)

  return optax.GradientTransformationExtraArgs(tx.init, update)


def _path_keys(path) -> set:
  return {getattr(k, 'key', getattr(k, 'name', None)) for k in path}


def _leaves_under(tree, name) -> list:
  return [leaf for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]
          if name in _path_keys(path)]


def _check_names_found(what, names, params):
  found = set()
  for path, _ in jax.tree_util.tree_flatten_with_path(params)[0]:
    found |= _path_keys(path)
  missing = [name for name in names if name not in found]
  if missing:
    raise ValueError(f'{what}: no parameter is under {missing}.')


def clip_by_group_norm(max_norm: float, names) -> optax.GradientTransformation:
  """``optax.clip_by_global_norm`` applied to groups of leaves apart.

  A leaf belongs to the first of ``names`` that is a key on its path, or to
  the group of the rest; each group is scaled by ``max_norm / norm`` when
  its own global norm exceeds ``max_norm``. Stateless; ``init`` raises
  ``ValueError`` when a name matches no parameter.
  """
  names = tuple(names)

  def group(path):
    keys = _path_keys(path)
    return next((i for i, n in enumerate(names) if n in keys), len(names))

  def init_fn(params):
    _check_names_found('clip_apart', names, params)
    return optax.EmptyState()

  def update_fn(updates, state, params=None):
    del params
    flat, treedef = jax.tree_util.tree_flatten_with_path(updates)
    ids = [group(path) for path, _ in flat]
    squares, members = {}, {}
    for i, (_, leaf) in zip(ids, flat):
      squares[i] = squares.get(i, 0.0) + jnp.sum(jnp.square(leaf))
      members.setdefault(i, []).append(leaf)
    norms = {i: _finite_or_rescaled(jnp.sqrt(sq), members[i])
             for i, sq in squares.items()}
    scale = {i: jnp.minimum(1.0, max_norm / jnp.maximum(norm, 1e-30))
             for i, norm in norms.items()}
    leaves = [(leaf * scale[i]).astype(leaf.dtype)
              for i, (_, leaf) in zip(ids, flat)]
    return jax.tree_util.tree_unflatten(treedef, leaves), state

  return optax.GradientTransformation(init_fn, update_fn)


def scale_by_key(scales) -> optax.GradientTransformation:
  """Multiplies the updates under each ``(name, factor)`` of ``scales``.

  A leaf whose path has the dict key (or attribute) ``name`` is multiplied
  by ``factor``; a leaf under several names by their product. Stateless.
  ``init`` raises ``ValueError`` when a name matches no parameter (a typo
  would otherwise silently train at the full rate).
  """
  scales = tuple(scales)

  def factor(path):
    keys = _path_keys(path)
    return math.prod(f for name, f in scales if name in keys)

  def init_fn(params):
    _check_names_found('lr_scales', [name for name, _ in scales], params)
    return optax.EmptyState()

  def scaled(path, u):
    f = factor(path)
    return u if f == 1 else u * f

  def update_fn(updates, state, params=None):
    del params
    return jax.tree_util.tree_map_with_path(scaled, updates), state

  return optax.GradientTransformation(init_fn, update_fn)


def prepare_workdir(workdir) -> pathlib.Path:
  """Creates ``workdir``; a ``ValueError`` if it exists and is not a folder."""
  path = pathlib.Path(workdir)
  if path.exists() and not path.is_dir():
    raise ValueError(f'workdir {str(path)!r} exists and is not a directory.')
  path.mkdir(parents=True, exist_ok=True)
  return path


def _put(leaf: Any, target: NamedSharding) -> jax.Array:
  """A host value (the same on every process) as a global array."""
  if jax.process_count() == 1:
    return jax.device_put(leaf, target)
  # Each process places only the slices its own devices hold.
  host = np.asarray(leaf)
  return jax.make_array_from_callback(host.shape, target,
                                      lambda idx: host[idx])


def _shard_batch(batch: Any, sharding: NamedSharding,
                 replicated: NamedSharding) -> Any:
  # Leaves with a batch axis are split over the devices; scalars (a reset
  # flag) are replicated.
  return jax.tree_util.tree_map(
      lambda leaf: _put(leaf, sharding if np.ndim(leaf) else replicated),
      batch)


def _to_host(tree: Any) -> Any:
  """Every leaf as a numpy array of its global value.

  A leaf split over the devices of several processes (a carried state) is
  gathered; a replicated one (params) is read from a local device.
  """
  def get(leaf):
    if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
      if leaf.is_fully_replicated:
        return np.asarray(leaf.addressable_data(0))
      return np.asarray(multihost_utils.process_allgather(leaf, tiled=True))
    return jax.device_get(leaf)
  return jax.tree_util.tree_map(get, tree)


def run_keys(seed: int) -> tuple[jax.Array, jax.Array, jax.Array]:
  """``(init_key, data_key, loss_key)`` of a run: pure functions of the seed."""
  init_key, data_key = jax.random.split(jax.random.PRNGKey(seed))
  # A key of its own, derived so that the init and data keys stay those of
  # earlier versions (same seed, same numbers).
  loss_key = jax.random.fold_in(init_key, 0x10552)
  return init_key, data_key, loss_key


def initial_state(experiment: Experiment, config: TrainConfig
                  ) -> tuple[optax.GradientTransformation, TrainState]:
  """``(tx, state)``: the optimizer and the step-0 :class:`TrainState` of
  ``config`` (the run's seed gives the init and data keys), as
  :func:`train_and_evaluate` starts; what :func:`train_step` takes."""
  init_key, data_key, _ = run_keys(config.seed)
  tx = make_optimizer(config)
  params = experiment.init(init_key)
  carry = (experiment.init_carry(config.batch_size)
           if experiment.init_carry is not None else None)
  return tx, TrainState(params, tx.init(params), jnp.zeros((), jnp.int32),
                        data_key, carry)


def restore_latest_params(experiment: Experiment, config: TrainConfig,
                          workdir) -> tuple[int, Any]:
  """``(step, params)`` of the latest checkpoint a run in ``workdir`` saved.

  A checkpoint holds the leaves of the training state, not the model that
  made them: ``experiment`` and ``config`` say what they are. For a
  binary's run, :func:`vcrnn_jax.papers.runs.load_run` rebuilds both from
  the flags the run recorded and calls this.

  Args:
    experiment: the run's :class:`Experiment`, built as the run built it.
      Only its ``init`` is called (with ``config.seed``): the params it
      returns give the structure, shapes and dtypes the checkpoint is
      restored into, so it must make the run's model (cell, sizes); its
      data and evaluation settings do not matter.
    config: the optimizer the run trained with (its state is part of the
      checkpoint's structure); the steps and evaluation settings do not
      matter.
    workdir: the run's workdir (the checkpoints are under
      ``<workdir>/checkpoints``).

  Raises:
    ValueError: ``workdir`` holds no checkpoint, none is readable, or the
      latest does not have the structure of ``experiment``'s params and
      ``config``'s optimizer state (another model or optimizer).
  """
  _, target = initial_state(experiment, config)
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


def _progress_values(window: list) -> dict:
  """What the bar shows: the loss function's own metrics, else the loss."""
  last = window[-1]
  shown = {k: v for k, v in last.items()
           if k != 'loss_total' and not k.startswith('grad_norm')}
  if not shown:
    shown = {'loss': last['loss_total']}
  return {k: f'{v:.4g}' for k, v in list(shown.items())[:4]}


def train_step(experiment: Experiment, tx: optax.GradientTransformation,
               state: TrainState, batch: Any, key: jax.Array, *,
               clip_apart: tuple = ()) -> tuple[TrainState, dict]:
  """One update of ``state`` on ``batch``: ``(new_state, metrics)``.

  Pure, so a test or a benchmark can call it (jitted with ``experiment`` and
  ``tx`` static) and get what :func:`train_and_evaluate` computes:

    tx, state = initial_state(experiment, config)
    step = jax.jit(train_step, static_argnums=(0, 1))
    state, metrics = step(experiment, tx, state, batch, key)

  Args:
    experiment: the run's functions (its ``loss`` is differentiated).
    tx: the optimizer (:func:`make_optimizer`).
    state: params, optimizer state, step, data key and carried state.
    batch: the step's batch (``experiment.sample(data_key, step)``).
    key: the step's PRNG key for the loss (dropout); the trainer passes
      ``fold_in(loss_key, step)``.
    clip_apart: groups whose gradient norm is logged apart
      (``grad_norm_<name>``), as :class:`TrainConfig` clips them.

  Returns:
    The next state (step + 1) and the loss function's metrics with
    ``grad_norm`` (before clipping, :func:`global_norm`),
    ``grad_norm_rescaled`` (1.0 where the plain sum of squares overflowed
    and the norm is the rescaled one, else 0.0) and ``loss_total`` (the loss
    itself).
  """
  info = StepInfo(key, state.step, state.carry)
  (loss, aux), grads = jax.value_and_grad(
      experiment.loss, has_aux=True)(state.params, batch, info)
  metrics, carry = aux if experiment.init_carry is not None else (aux, None)
  # A caller's own optax transformation may not run under strict promotion
  # (see _standard_promotion); the loss above keeps the caller's setting.
  with jax.numpy_dtype_promotion('standard'):
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
  params = optax.apply_updates(state.params, updates)
  leaves = jax.tree_util.tree_leaves(grads)
  plain = _sum_of_squares_norm(leaves)
  norm = _finite_or_rescaled(plain, leaves)
  # Steps whose plain norm overflowed and were clipped by the rescaled one
  # (counted at each evaluation, logged only where there were some).
  rescaled = (~jnp.isfinite(plain)) & jnp.isfinite(norm)
  metrics = dict(metrics, grad_norm=norm,
                 grad_norm_rescaled=rescaled.astype(jnp.float32))
  for name in clip_apart:   # the share of each group clipped apart
    metrics[f'grad_norm_{name}'] = global_norm(_leaves_under(grads, name))
  metrics['loss_total'] = loss
  return TrainState(params, opt_state, state.step + 1, state.data_key,
                    carry), metrics


def evaluate(experiment: Experiment, params: Any, step: int) -> dict:
  """The held-out metrics of ``params`` at ``step``, as Python floats."""
  return {k: float(v) for k, v in experiment.evaluate(params, step).items()}


def _logged_training_metrics(workdir: pathlib.Path, step: int) -> dict:
  """The ``train_*`` metrics and ``steps_per_sec`` logged at ``step``.

  A finished run that is rerun evaluates its checkpoint again, but the
  training metrics of its last interval exist only in ``metrics.jsonl``
  (written before the checkpoint): reading them back gives the rerun the
  same metrics as the run that trained, whatever happened in between.
  """
  path = workdir / METRICS_FILENAME
  if not path.is_file():
    return {}
  lines = [l for l in read_metrics(path) if l['step'] == step]
  if not lines:
    return {}
  return {k: v for k, v in lines[-1].items()
          if k.startswith('train_') or k == 'steps_per_sec'}


class _Shardings(NamedTuple):
  """Where the state and the batches live: a ``'data'`` mesh over devices."""
  devices: int
  replicated: NamedSharding
  batch: NamedSharding
  state: TrainState


def _shardings(config: TrainConfig, has_carry: bool) -> _Shardings:
  devices = np.array(jax.devices())
  if config.batch_size % devices.size:
    # Every process finds this alike (AgreedError is a ValueError).
    raise distributed.AgreedError(
        f'batch_size={config.batch_size} must be divisible by the number of '
        f'devices ({devices.size}).')
  mesh = Mesh(devices, ('data',))
  replicated = NamedSharding(mesh, PartitionSpec())
  batch = NamedSharding(mesh, PartitionSpec('data'))
  state = TrainState(replicated, replicated, replicated, replicated,
                     batch if has_carry else None)
  return _Shardings(devices.size, replicated, batch, state)


def _restore(checkpointer: Checkpointer, state: TrainState, workdir,
             config: TrainConfig, processes: distributed.Processes
             ) -> tuple[int, TrainState]:
  """The latest checkpoint's step and state (``(0, state)`` if none).

  Every process restores the same step from the shared folder; one beyond
  ``config.steps`` is refused in one line.
  """
  restored = checkpointer.restore_latest(state)
  start = 0
  if restored is not None:
    start, state = restored[0], TrainState(*restored[1])
  steps = processes.agree('the restored step', str(start))
  if len(set(steps)) > 1:
    raise distributed.AgreedError(
        f'the processes restored different steps from {workdir / "checkpoints"}'
        f' ({", ".join(steps)} on processes 0..{len(steps) - 1}): --workdir '
        'must be one folder that every process shares.')
  if start > config.steps:
    # Every process restored the same step, so every one raises this alike.
    raise distributed.AgreedError(
        f'{workdir} is already at step {start}, beyond --steps='
        f'{config.steps}: rerun with --steps={start} to evaluate that '
        'checkpoint only (more to train on), or pass another --workdir.')
  return start, state


def _place(state: TrainState, sharding: TrainState) -> TrainState:
  if jax.process_count() == 1:
    return jax.device_put(state, sharding)
  return jax.tree_util.tree_map(
      lambda target, part: jax.tree_util.tree_map(
          lambda leaf: _put(leaf, target), part), sharding, state)


class _Logbook:
  """The host side of a run: NaN guard, ``train_*`` means, rate, outputs.

  Steps are dispatched ahead of the host; their losses are fetched in
  groups (:meth:`flush`), every ``log_every`` steps and before any
  evaluation or checkpoint, so nothing is saved after a non-finite loss.
  """

  def __init__(self, config: TrainConfig, workdir: pathlib.Path, start: int,
               last_saved: int | None, clock: Callable[[], float]):
    chief = jax.process_index() == 0
    self.config, self.workdir, self.clock = config, workdir, clock
    self.writer = MetricsWriter(workdir, resume_step=start) if chief else None
    self.progress = (Progress(config.steps, initial=start, desc=config.desc)
                     if chief and not config.quiet else None)
    self.echo = chief and not config.quiet
    self.last_saved = last_saved
    self.pending: list = []       # (step, metrics) not yet checked on host
    self.window: list = []        # host metrics since the last evaluation
    self.history: list = []
    self.last_eval: dict = {}
    # The rate of an interval starts after its first step, so neither the
    # compilation nor the evaluation before it counts.
    self.rate_ref: tuple[float, int] | None = None

  def say(self, line: str) -> None:
    if self.progress is not None:
      self.progress.write(line)
    elif self.echo:
      print(line, flush=True)

  def stepped(self, step: int, metrics: dict) -> None:
    self.pending.append((step, metrics))
    if self.rate_ref is None:
      jax.block_until_ready(metrics['loss_total'])
      self.rate_ref = (self.clock(), step)

  def flush(self, step: int) -> None:
    for s, metrics in self.pending:
      host = {k: float(v) for k, v in metrics.items()}
      if not math.isfinite(host['loss_total']):
        where = (f'step {self.last_saved} in {self.workdir / "checkpoints"}'
                 if self.last_saved is not None else 'none')
        raise TrainingDiverged(
            f'loss is {host["loss_total"]} at step {s}; training stopped. '
            f'Last good checkpoint: {where} (not overwritten).')
      self.window.append(host)
    self.pending.clear()
    if self.progress is not None and self.window:
      self.progress.update(step, **_progress_values(self.window))

  def rate(self, step: int) -> float:
    """Steps per second since the interval's first step (NaN if none)."""
    ref_time, ref_step = self.rate_ref
    return ((step - ref_step) / max(self.clock() - ref_time, 1e-9)
            if step > ref_step else float('nan'))

  def evaluated(self, step: int, rate: float, held_out: dict) -> None:
    results = {f'train_{k}': float(np.mean([m[k] for m in self.window]))
               for k in (self.window[0] if self.window else {})
               if k != 'grad_norm_rescaled'}
    # Updates whose sum of squares overflowed, clipped by the rescaled norm
    # (global_norm): present only when some were.
    rescaled = sum(m.get('grad_norm_rescaled', 0.0) > 0 for m in self.window)
    if rescaled:
      results['train_rescaled_grad_norm_steps'] = float(rescaled)
    # A finite loss with an overflowing gradient passes the NaN guard, and
    # clipping by global norm turns its update into zero: a run can stop
    # learning silently. The count appears only when some update had one.
    overflowed = sum(not math.isfinite(m.get('grad_norm', 0.0))
                     for m in self.window)
    if overflowed:
      results['train_nonfinite_grad_steps'] = float(overflowed)
    updates = len(self.window)
    self.window.clear()
    results.update(held_out)
    results['steps_per_sec'] = rate
    self.last_eval = results
    self.history.append(dict(step=step, **results))
    if self.writer is not None:
      self.writer.write(step, results)
    self.say(f'step {step}: ' + ', '.join(
        f'{k}={v:.4g}' for k, v in results.items()))
    if overflowed:
      self.say(f'warning: {overflowed} of the {updates} updates before step '
               f'{step} had a non-finite gradient norm; with gradient '
               'clipping each left the parameters unchanged (without it '
               'they turn NaN and training stops).')
    self.rate_ref = None

  def saved(self, step: int) -> None:
    self.last_saved = step
    self.rate_ref = None

  def close(self) -> None:
    if self.progress is not None:
      self.progress.close()
    if self.writer is not None:
      self.writer.close()


def _train_loop(experiment: Experiment, config: TrainConfig, state, start,
                step_fn, shardings: _Shardings, checkpointer: Checkpointer,
                log: _Logbook, on_checkpoint) -> TrainState:
  """Steps ``start`` to ``config.steps``: evaluate, log and save on schedule."""
  checkpoint_every = config.checkpoint_every or config.eval_every
  # The batch of a step is sampled from host values on this process's own
  # default device: from the state's arrays (which span every process) the
  # sampler would be a computation of all processes, synchronised each step.
  data_key = _to_host(state.data_key)
  step = start
  while step < config.steps:
    batch = _shard_batch(experiment.sample(data_key, np.int32(step)),
                         shardings.batch, shardings.replicated)
    state, metrics = step_fn(state, batch)
    step += 1
    log.stepped(step, metrics)
    last = step == config.steps
    do_eval = step % config.eval_every == 0 or last
    do_save = step % checkpoint_every == 0 or last
    if step % config.log_every == 0 or do_eval or do_save:
      log.flush(step)
    if do_eval:
      jax.block_until_ready(metrics['loss_total'])
      rate = log.rate(step)
      log.evaluated(step, rate, evaluate(experiment, state.params, step))
    if do_save:
      checkpointer.save(step, _to_host(state))
      log.saved(step)
      if on_checkpoint is not None:
        on_checkpoint(step)
  return state


def _summary_label(key: str) -> str:
  """A metric's line in the end-of-run summary: which data it is on."""
  if key == 'steps_per_sec':
    return 'steps/s (last interval)'
  if key.startswith('train_'):
    return f'train {key[len("train_"):]} (last interval)'
  return f'held-out {key}'


def _summary_value(key: str, value: float) -> str:
  # Rates are fractions in metrics.jsonl; the docs quote them as percentages.
  if (key.endswith(('error', 'accuracy')) and math.isfinite(value)
      and 0 <= value <= 1):
    return f'{value:.4g} ({100 * value:.2f}%)'
  return f'{value:.4g}'


def _print_summary(config, start, final_step, elapsed, devices, metrics,
                   workdir) -> None:
  rows = {'steps': f'{start} -> {final_step}',
          'wall time': f'{elapsed:.1f} s',
          'devices': f'{devices} x {jax.default_backend()}'}
  rows.update({_summary_label(k): _summary_value(k, v)
               for k, v in metrics.items()})
  rows['workdir'] = str(workdir)
  print(summary_table(rows, title=config.desc), flush=True)


def train_and_evaluate(experiment: Experiment, config: TrainConfig,
                       workdir, *,
                       on_checkpoint: Callable[[int], None] | None = None,
                       clock: Callable[[], float] = time.perf_counter,
                       processes: distributed.Processes = distributed.LOCAL,
                       ) -> TrainResult:
  """Trains ``experiment`` in ``workdir``, resuming from its latest checkpoint.

  Writes ``<workdir>/checkpoints/`` (Orbax; params, optimizer state, step,
  data key and carried state every ``checkpoint_every`` steps and at the end,
  the last ``keep_checkpoints`` kept), ``<workdir>/metrics.jsonl`` and
  TensorBoard events in ``<workdir>/tensorboard/`` at every evaluation, and a
  progress bar. Each evaluation logs the held-out metrics, the mean of the
  loss's metrics since the last one (``train_*``) and ``steps_per_sec``,
  the rate over that interval (compilation and evaluation excluded). Each
  step is :func:`train_step`, jitted; each evaluation :func:`evaluate`.

  Args:
    experiment: the pure functions of the run.
    config: its hyperparameters.
    workdir: the run's folder (created if missing).
    on_checkpoint: called with the step after every checkpoint is saved, on
      every process (the binaries record their run-defining flags there: a
      workdir without a checkpoint holds no run; only process 0 writes).
    clock: seconds, for ``steps_per_sec`` (a test passes its own).
    processes: the run's processes, the handle
      :func:`vcrnn_jax.training.distributed.initialize` returned (default:
      this process alone).

  Several processes (:mod:`vcrnn_jax.training.distributed`): every process
  calls this with the same arguments, its own handle, and one ``workdir``
  they all see. Each builds the batch of each step from ``(data key, step)``
  and feeds its own devices' rows, so the numbers do not depend on the
  number of processes; all of them save and restore the checkpoints
  together, and process 0 alone writes the metrics, the progress bar and
  the summary.

  Raises:
    ValueError: a bad config or workdir, a workdir already beyond
      ``config.steps``, or a batch size the devices do not divide
      (:class:`distributed.AgreedError`, on every process, for a workdir the
      processes do not share).
    TrainingDiverged: the loss became NaN/inf; nothing after the last good
      checkpoint was saved.
  """
  _check_config(config)
  workdir = prepare_workdir(workdir)
  shardings = _shardings(config, experiment.init_carry is not None)
  _, _, loss_key = run_keys(config.seed)
  tx, state = initial_state(experiment, config)
  # Every process saves and restores with Orbax, in one shared folder.
  processes.check_shared_folder(workdir)
  checkpointer = Checkpointer(workdir / 'checkpoints',
                              max_to_keep=config.keep_checkpoints)
  try:
    start, state = _restore(checkpointer, state, workdir, config, processes)
  except BaseException:
    checkpointer.close()
    raise
  state = _place(state, shardings.state)

  def step_fn(state, batch):
    return train_step(experiment, tx, state, batch,
                      jax.random.fold_in(loss_key, state.step),
                      clip_apart=config.clip_apart)

  donate = (0,) if jax.default_backend() != 'cpu' else ()
  step_fn = jax.jit(step_fn, donate_argnums=donate,
                    out_shardings=(shardings.state, shardings.replicated))
  t_start = time.time()
  log = _Logbook(config, workdir, start, checkpointer.latest_step(), clock)
  if start:
    log.say(f'Resumed from step {start} ({workdir / "checkpoints"}).')
  try:
    state = _train_loop(experiment, config, state, start, step_fn, shardings,
                        checkpointer, log, on_checkpoint)
  finally:
    log.close()
    checkpointer.close()
  final_step = int(state.step)
  metrics = log.last_eval
  if not metrics:
    # Already trained to `steps` (a rerun of a finished command): report the
    # checkpoint's metrics; metrics.jsonl already holds this step.
    log.say(f'Already at step {final_step} >= --steps={config.steps}; '
            'evaluating the checkpoint only.')
    metrics = {**_logged_training_metrics(workdir, final_step),
               **evaluate(experiment, state.params, final_step)}
  if log.echo:
    _print_summary(config, start, final_step, time.time() - t_start,
                   shardings.devices, metrics, workdir)
  return TrainResult(_to_host(state.params), final_step, metrics,
                     log.history)
