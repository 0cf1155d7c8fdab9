"""Experiments for the ACT paper's synthetic tasks (Section 3.1-3.4).

The paper's settings per task are :data:`PAPER_SETTINGS`; a run is described
by a :class:`TaskConfig` (the task, its arguments and the difficulties of the
paper's figures), a :class:`ModelConfig` and a
:class:`~vcrnn_jax.training.train.TrainConfig`. :func:`task_experiment` turns
a :class:`vcrnn_jax.tasks.Task` and a model description into an
:class:`~vcrnn_jax.training.train.Experiment`: the loss of ACT Eq. 12 (task
loss + ``tau`` times the ponder cost of Eq. 11) and an evaluation that reports
the sequence error rate and the mean ponder on fixed held-out batches drawn
from a key stream disjoint from training.
"""

from collections.abc import Mapping
import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax import act as act_lib
from vcrnn_jax import loops, registry, tasks
from vcrnn_jax.core import check_positive_int
from vcrnn_jax.models import sequence_model
from vcrnn_jax.training.train import Experiment

__all__ = [
    'CELLS',
    'PAPER_SETTINGS',
    'TASKS',
    'WIKIPEDIA_SETTINGS',
    'all_difficulties',
    'TaskConfig',
    'task_config',
    'ModelConfig',
    'paper_model',
    'step_mask',
    'build_cell',
    'build_model',
    'tail_share',
    'task_experiment',
    'evaluate_by_difficulty',
]

# The cells the ACT paper wraps (its binaries' --cell choices); any name of
# :mod:`vcrnn_jax.registry` builds.
CELLS = registry.names('baseline')

# The paper's model and task per synthetic task (ACT Sections 3.1-3.4) and our
# training budget, in one place: the binaries' flag defaults and the sweep's
# come from here. The loop (compaction, backward slots, residuals) is
# act.DEFAULT_LOOP for every task: it changes the speed, not the maths
# (docs/performance.md).
# 'difficulty_seq_len' is the sequence length of the paper's difficulty plots
# (Fig. 10: length 5; Fig. 14: length 3); None lets the task choose.
PAPER_SETTINGS = {
    'parity': dict(task_kwargs={'bits': 64, 'layout': 'prefix'},
                   cell='elman', hidden_size=128, batch_size=128,
                   max_steps=100, tau=0.01, learning_rate=1e-3,
                   steps=300_000, eval_every=10_000,
                   difficulty_seq_len=None),
    'logic': dict(task_kwargs={'max_len': 10, 'num_gates': 10}, cell='lstm',
                  hidden_size=128, batch_size=16, max_steps=100, tau=1e-3,
                  learning_rate=1e-3, steps=60_000, eval_every=1000,
                  difficulty_seq_len=5),
    'addition': dict(task_kwargs={'max_len': 5, 'max_digits': 5}, cell='lstm',
                     hidden_size=512, batch_size=32, max_steps=20, tau=1e-3,
                     learning_rate=1e-3, steps=20_000, eval_every=1000,
                     difficulty_seq_len=3),
    'sort': dict(task_kwargs={'min_len': 2, 'max_len': 15}, cell='lstm',
                 hidden_size=512, batch_size=16, max_steps=100, tau=1e-3,
                 learning_rate=1e-3, steps=20_000, eval_every=1000,
                 difficulty_seq_len=None),
}
# The task argument whose range is the x axis of each task's difficulty
# figure (Figs 6/10/14/19): parity by non-zero bits, logic by gates, addition
# by digits, sort by sequence length.
_DIFFICULTY_RANGE = {'parity': (None, 'bits'), 'logic': (None, 'num_gates'),
                     'addition': (None, 'max_digits'),
                     'sort': ('min_len', 'max_len')}
TASKS = tuple(PAPER_SETTINGS)
# ACT Sec. 3.5 (enwik8 bytes); not a synthetic task, same flags.
WIKIPEDIA_SETTINGS = dict(cell='lstm', hidden_size=1500, batch_size=16,
                          max_steps=100, tau=0.01, learning_rate=1e-3,
                          steps=10_000, eval_every=500)


def all_difficulties(task: str, task_kwargs: Mapping[str, Any]
                     ) -> tuple[int, ...]:
  """Every difficulty ``task`` can be forced to (the x axes of Figs 6-19)."""
  if task not in _DIFFICULTY_RANGE:
    raise ValueError(f'task must be one of {list(TASKS)}, got {task!r}.')
  low, high = _DIFFICULTY_RANGE[task]
  return tuple(range(task_kwargs[low] if low else 1,
                     task_kwargs[high] + 1))


@dataclasses.dataclass(frozen=True)
class TaskConfig:
  """A synthetic task of the paper and the difficulties it is reported at.

  Built by :func:`task_config`, which validates it.

  Attributes:
    name: one of :data:`TASKS`.
    kwargs: the arguments of :func:`vcrnn_jax.tasks.get`.
    difficulties: those of the per-difficulty evaluation (the x axis of the
      paper's figure).
    difficulty_seq_len: the sequence length of that evaluation (None: the
      task's own distribution).
  """
  name: str
  kwargs: Mapping[str, Any]
  difficulties: tuple[int, ...]
  difficulty_seq_len: int | None = None

  def build(self) -> tasks.Task:
    """The task, ``vcrnn_jax.tasks.get(name, **kwargs)``."""
    return tasks.get(self.name, **self.kwargs)


def task_config(name: str, task_kwargs: Mapping[str, Any] | None = None, *,
                difficulties: tuple[int, ...] | None = None,
                difficulty_seq_len: int | None = None) -> TaskConfig:
  """Task ``name`` with the paper's arguments, ``task_kwargs`` replacing some.

  Args:
    name: one of :data:`TASKS`.
    task_kwargs: task arguments replacing the paper's (e.g. ``{'bits': 8}``).
    difficulties: the difficulties to report (default: every difficulty of
      the task).
    difficulty_seq_len: the sequence length of the per-difficulty evaluation
      (default: the paper figure's, ``PAPER_SETTINGS``); capped at the task's
      ``max_len``.

  Raises:
    ValueError: an unknown task or task argument, a value the task refuses,
      or a difficulty the task cannot be forced to.
  """
  if name not in PAPER_SETTINGS:
    raise ValueError(f'task must be one of {list(TASKS)}, got {name!r}.')
  paper = PAPER_SETTINGS[name]
  kwargs = dict(paper['task_kwargs'])
  for key, value in (task_kwargs or {}).items():
    if key not in kwargs:
      raise ValueError(f'task {name!r} has no argument {key!r}; its arguments '
                       f'are {sorted(kwargs)}.')
    kwargs[key] = value
  tasks.get(name, **kwargs)   # Validates the values, with the task's message.
  every = all_difficulties(name, kwargs)
  chosen = tuple(int(d) for d in (every if difficulties is None
                                  else difficulties))
  # Checked now, not after a run has trained: the task would only reject a
  # difficulty in the evaluation.
  if not chosen or not all(1 <= d <= max(every) for d in chosen):
    raise ValueError(f'difficulties must be in 1..{max(every)} for {name} '
                     f'with {kwargs}, got {list(chosen)}.')
  seq_len = (paper['difficulty_seq_len'] if difficulty_seq_len is None
             else difficulty_seq_len)
  if seq_len is not None and 'max_len' in kwargs:
    seq_len = min(seq_len, kwargs['max_len'])
  return TaskConfig(name, kwargs, chosen, seq_len)


class ModelConfig(NamedTuple):
  """The recurrent model of a synthetic-task run."""
  cell: str = 'elman'          # one of CELLS
  hidden_size: int = 128
  act: bool = True
  tau: float = 0.01            # ACT Eq. 12 time penalty
  max_steps: int = 100         # ACT Eq. 13 M
  epsilon: float = 0.01        # ACT Eq. 7
  halting_bias: float = 1.0    # initial b_h (Eq. 5)
  loop: loops.LoopConfig = act_lib.DEFAULT_LOOP   # cost, not maths


def paper_model(task: str) -> ModelConfig:
  """The paper's model for ``task`` (:data:`PAPER_SETTINGS`), with ACT."""
  s = PAPER_SETTINGS[task]
  return ModelConfig(
      cell=s['cell'], hidden_size=s['hidden_size'], act=True, tau=s['tau'],
      max_steps=s['max_steps'])


def step_mask(mask: jax.Array) -> jax.Array:
  """Input-validity mask ``[B, T]``: every step up to the last target step.

  Tasks pad only after their last target, so a sequence's length is one past
  its last target step (the addition task's first step and the sort task's
  input steps carry no target but are real inputs).
  """
  t = jnp.arange(mask.shape[1])
  lengths = jnp.max(jnp.where(mask > 0, t + 1, 0), axis=1)
  return (t[None, :] < lengths[:, None]).astype(jnp.float32), lengths


def build_cell(model: ModelConfig, output_size: int):
  """The recurrent cell of ``model``: ACT around the inner cell, or the cell."""
  if not (model.tau >= 0):
    raise ValueError(f'tau must be a number >= 0, got {model.tau!r}.')
  inner = registry.build_cell(model.cell, model.hidden_size)
  if not model.act:
    return inner
  return act_lib.adaptive(
      inner, output_size, max_steps=model.max_steps,
      epsilon=model.epsilon, halting_bias=model.halting_bias,
      loop=model.loop)


def build_model(task, model: ModelConfig):
  """The sequence model of ``model`` for ``task`` (ACT wrapped or not)."""
  cell = build_cell(model, task.output_size)
  if model.act:
    return sequence_model(cell)      # ACT's own output layer (Eq. 4)
  return sequence_model(cell, task.output_size)


def tail_share(steps: jax.Array, valid: jax.Array) -> jax.Array:
  """Share of a batch's ponder loop spent on rows that have halted.

  The loop runs at each input step until the batch's slowest row halts;
  without compaction every row is computed at every iteration. This is the
  share of those row-steps whose row had already halted: near 0 when rows
  halt together, near 1 when a few rows ponder far longer than the rest
  (the tail that ``compact_rows`` stops paying for). The training progress
  line shows it as ``tail``.

  Args:
    steps: ``[batch, time]`` int N(t) of each row (``ACTOutput.steps``).
    valid: ``[batch, time]`` bool, the input steps that count.
  """
  steps = jnp.where(valid, steps, 0).astype(jnp.float32)
  computed = steps.shape[0] * jnp.sum(jnp.max(steps, axis=0))
  return 1.0 - jnp.sum(steps) / jnp.maximum(computed, 1.0)


def task_experiment(task, model: ModelConfig, *, batch_size: int,
                    eval_batch_size: int = 1000, eval_batches: int = 1,
                    eval_seed: int = 2**31 - 1) -> Experiment:
  """An :class:`Experiment` for a synthetic ACT task.

  Args:
    task: a :class:`vcrnn_jax.tasks.Task`.
    model: the model (cell, size, ACT settings).
    batch_size: training batch size.
    eval_batch_size: sequences per held-out batch.
    eval_batches: held-out batches per evaluation (the same ones each time).
    eval_seed: seed of the held-out key stream (disjoint from training, whose
      keys derive from the run's seed).
  """
  check_positive_int('batch_size', batch_size)
  check_positive_int('eval_batch_size', eval_batch_size)
  check_positive_int('eval_batches', eval_batches)
  net = build_model(task, model)

  def forward(params, batch):
    valid, lengths = step_mask(batch.mask)
    logits, ys = net.apply(params, batch.inputs, lengths)
    seq_loss = task.loss(logits, batch)
    if model.act:
      ponder = act_lib.ponder_cost(ys, valid)                      # (11)
    else:
      ponder = jnp.sum(valid, axis=1)   # one step per input without ACT
    steps = ys.steps if model.act else None
    return logits, seq_loss, ponder, jnp.sum(valid, axis=1), steps

  def loss(params, batch, info):
    del info  # No dropout and no schedules in the ACT tasks.
    _, seq_loss, ponder, n_steps, steps = forward(params, batch)
    total = seq_loss + (model.tau * ponder if model.act else 0.0)  # (12)
    metrics = {'loss': jnp.mean(seq_loss),
               'ponder': jnp.sum(ponder) / jnp.sum(n_steps)}
    if model.act:
      metrics['tail'] = tail_share(steps, step_mask(batch.mask)[0])
    return jnp.mean(total), metrics

  @jax.jit
  def sample(key, step):
    return task.sample(jax.random.fold_in(key, step), batch_size)

  eval_keys = [jax.random.fold_in(jax.random.PRNGKey(eval_seed), i)
               for i in range(eval_batches)]

  @jax.jit
  def eval_batch(params, key):
    batch = task.sample(key, eval_batch_size)
    logits, seq_loss, ponder, n_steps, _ = forward(params, batch)
    errors = task.sequence_errors(logits, batch)
    return (jnp.sum(errors), jnp.sum(seq_loss), jnp.sum(ponder),
            jnp.sum(n_steps))

  def evaluate(params, step):
    del step  # The held-out batches are fixed.
    totals = np.zeros(4)
    for key in eval_keys:
      totals += np.array([float(v) for v in eval_batch(params, key)])
    n = eval_batch_size * eval_batches
    return {
        'sequence_error': totals[0] / n,
        'loss': totals[1] / n,
        'ponder': totals[2] / totals[3],
    }

  def init(key):
    return net.init(key, task.input_size)

  return Experiment(init=init, loss=loss, sample=sample, evaluate=evaluate)


def evaluate_by_difficulty(task, model: ModelConfig, params, difficulties,
                           *, batch_size: int = 1000,
                           seq_len: int | None = None,
                           seed: int = 2**31 - 2) -> list[dict]:
  """Sequence error and ponder per forced difficulty (ACT Fig. 6/10/14/19)."""
  net = build_model(task, model)

  rows = []
  for d in difficulties:
    def one(params, key, d=d):
      batch = task.sample(key, batch_size, difficulty=d, seq_len=seq_len)
      valid, lengths = step_mask(batch.mask)
      logits, ys = net.apply(params, batch.inputs, lengths)
      errors = task.sequence_errors(logits, batch)
      ponder = (act_lib.ponder_cost(ys, valid) if model.act
                else jnp.sum(valid, axis=1))
      return jnp.mean(errors), jnp.sum(ponder) / jnp.sum(valid)
    err, ponder = jax.jit(one)(params, jax.random.fold_in(
        jax.random.PRNGKey(seed), d))
    rows.append({'difficulty': int(d), 'sequence_error': float(err),
                 'ponder': float(ponder)})
  return rows
