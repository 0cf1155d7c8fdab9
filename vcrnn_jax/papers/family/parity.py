r"""RNN, ACT, Repeat-RNN and PonderNet on parity (PonderNet Sec. 3.1).

:func:`parity_experiment` turns a method and a setting into an
:class:`~vcrnn_jax.training.train.Experiment`, as
:func:`vcrnn_jax.papers.act.tasks.task_experiment` does for ACT alone. All
methods wrap the same inner cell (:mod:`vcrnn_jax.registry`) of the same
width and read one logit; only the wrapper and its loss differ. The methods
(:data:`METHODS`) are the cell alone, ``'rnn'``, and every pondering wrapper
of the registry's table (a row with ``flagged``: it presents each input
several times), each built by its row's factory; what the comparison sets
and reads comes from the row, so a new row joins it with nothing written
here:

* the factory's arguments come from :class:`ModelConfig` by name:
  ``output_size=1`` (the method reads out itself; else the sequence model
  adds a linear readout), ``max_steps`` (``eval_max_steps`` at evaluation
  for a method that samples), ``repetitions`` (``rho``), ``inference``,
  ``loop``; a method that reports a ponder cost (its row's
  :class:`~vcrnn_jax.registry.Reports`) takes ACT's ``epsilon``
  (``act_epsilon``) and ``halting_bias``, the others PonderNet's
  ``ponder_epsilon``;
* the loss: binary cross-entropy (BCE), plus ``tau`` times the ponder
  cost for a method that reports one (ACT Eq. 11-12); a method whose
  output is a halting distribution (:class:`vcrnn_jax.ponder.PonderOutput`)
  trains on :func:`~vcrnn_jax.ponder.reconstruction_loss` with BCE +
  ``beta`` * :func:`~vcrnn_jax.ponder.kl_to_geometric` (P3) in the
  direction ``kl``: ``'paper'``, KL(p || p_G), or ``'reverse'``, KL(p_G ||
  p) as the public reproductions compute it (they also unroll every row to
  N: ``ponder_epsilon=0``);
* a method whose factory takes ``inference`` (PonderNet) is evaluated with
  both halting rules of P5 on the same params: the median (deterministic;
  ``accuracy``) and sampled (``sample_accuracy``), with at most
  ``eval_max_steps`` steps (default: the training ``max_steps``).

The four of the paper: ``'rnn'``, the cell and a linear readout;
``'act'``, :func:`vcrnn_jax.act.adaptive` (its own readout, ACT Eq. 4);
``'repeat'``, :func:`vcrnn_jax.repeat.repeat` with ``rho`` presentations
(R1) and a linear readout; ``'pondernet'``, :func:`vcrnn_jax.ponder.pondernet`.

Settings (PonderNet Sec. 3.1; :data:`SETTINGS`): ``'interpolation'``: 64
elements, 1-64 of them non-zero at training and test; ``'extrapolation'``: 96
elements, 1-48 non-zero at training, 49-96 at test (read as: the number of
non-zero elements is uniform on each range; :mod:`vcrnn_jax.tasks.parity`).

Ponder, the steps an input costs, per method: its ponder cost where its
row reports one (ACT: N + R, Eq. 10), else the steps its row reports
(PonderNet: the halting step at inference; in training the ``ponder``
metric is the expected halting step sum_n n p_n), else its fixed steps
(Repeat-RNN ``rho``; the RNN 1); ``steps`` are the steps reported (ACT:
N) or fixed (:func:`steps_measured`, :func:`step_caps`). Compute per input
is :func:`multiplications`: the steps times the matrices one step uses.

One protocol for every method: Adam at :data:`LEARNING_RATE` (1e-3, the
rate of ACT's binaries), batch :data:`BATCH_SIZE` (128), gradients clipped
to global norm :data:`GRAD_CLIP_NORM` (1.0, as the public PonderNet
reproductions), the same number of updates; each method keeps its own
hyperparameters, which the comparison grids. Defaults
(:class:`ModelConfig`) and their sources: a GRU of 128 units (public
PonderNet reproductions), at most 20 ponder steps for ACT and PonderNet
(PonderNet's N <= 20; ACT's paper used M = 100, which its parity ponder of
2-4 steps never reaches); PonderNet beta = 0.01, lambda_p = 0.2 (public
reproductions, with the reverse KL) and epsilon = 0.05; ACT tau = 0.01
(ACT's parity grid) and epsilon = 0.01 (ACT Sec. 2), initial halting bias 1
(ACT Sec. 3); Repeat rho = 3 (a small rho, as Fojo et al. compare).
A method *solves* a range at accuracy :data:`SOLVED` (0.95); the
extrapolation of a method that did not solve its training range is not
judged.
"""

from collections.abc import Mapping
import inspect
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from vcrnn_jax import loops, ponder, registry
from vcrnn_jax.core import Context, check_positive_int
from vcrnn_jax.models import sequence_model
from vcrnn_jax.tasks import parity
from vcrnn_jax.tasks.base import check_int
from vcrnn_jax.training.train import Experiment

__all__ = [
    'METHODS',
    'CELLS',
    'SETTINGS',
    'BATCH_SIZE',
    'LEARNING_RATE',
    'GRAD_CLIP_NORM',
    'SOLVED',
    'default_loop',
    'grid',
    'steps_measured',
    'step_caps',
    'ModelConfig',
    'check_model',
    'ranges',
    'tasks_of',
    'build_model',
    'evaluation_model',
    'multiplications',
    'parity_experiment',
    'evaluate_by_count',
]

CELLS = registry.names('baseline')

# PonderNet Sec. 3.1: vector size and the (inclusive) ranges of the number of
# non-zero elements in training and at test.
SETTINGS = {
    'interpolation': dict(bits=64, train=(1, 64), test=(1, 64)),
    'extrapolation': dict(bits=96, train=(1, 48), test=(49, 96)),
}
BATCH_SIZE = 128
LEARNING_RATE = 1e-3
GRAD_CLIP_NORM = 1.0
# A method "solves" a range when its accuracy there is at least this; only
# then is its extrapolation judged.
SOLVED = 0.95


def default_loop(model: 'ModelConfig') -> loops.LoopConfig:
  """The cheapest loop of ``model`` on CPU (measured; the maths is the same).

  ACT: the parity binaries' loop (rows halt together, so compaction would
  only add overhead, and 4 slots with their vjp residuals make the backward
  pass a plain transpose). PonderNet with ``ponder_epsilon = 0`` runs every
  row to ``M``: the masked scan (half the while loop's time at GRU 64, M
  20); with the epsilon stop, the while loop's defaults.
  """
  if _samples(model):
    return loops.LoopConfig('scan' if model.ponder_epsilon == 0 else 'while')
  return loops.LoopConfig(checkpoints=4, save_residuals=True)


class ModelConfig(NamedTuple):
  """One method's model; fields of the other methods are ignored."""
  method: str = 'pondernet'   # one of METHODS
  cell: str = 'gru'           # the inner cell, one of CELLS
  hidden_size: int = 128
  max_steps: int = 20         # ACT's M and PonderNet's N
  tau: float = 0.01           # ACT Eq. 12
  act_epsilon: float = 0.01   # ACT Eq. 7
  halting_bias: float = 1.0   # ACT's initial b_h (Eq. 5)
  rho: int = 3                # Repeat-RNN (R1)
  beta: float = 0.01          # PonderNet (P3)
  lambda_p: float = 0.2       # PonderNet's geometric prior (P3)
  ponder_epsilon: float = 0.05   # PonderNet (P4); 0: unroll every row to M
  kl: str = 'paper'           # PonderNet's KL direction (ponder.KL_DIRECTIONS)
  eval_max_steps: int | None = None   # PonderNet's M at evaluation (None: M)
  loop: loops.LoopConfig | None = None   # cost, not maths; None:
  #                                         default_loop(model)


def check_model(model: ModelConfig) -> ModelConfig:
  """Returns ``model`` or raises ``ValueError`` naming the bad field."""
  if model.method not in METHODS:
    raise ValueError(f'method must be one of {list(METHODS)}, got '
                     f'{model.method!r}.')
  check_positive_int('hidden_size', model.hidden_size)
  check_positive_int('max_steps', model.max_steps)
  check_positive_int('rho', model.rho)
  if not model.tau >= 0:
    raise ValueError(f'tau must be a number >= 0, got {model.tau!r}.')
  if not model.beta >= 0:
    raise ValueError(f'beta must be a number >= 0, got {model.beta!r}.')
  if not 0 < model.lambda_p < 1:
    raise ValueError(f'lambda_p must be in (0, 1), got {model.lambda_p!r}.')
  if model.kl not in ponder.KL_DIRECTIONS:
    raise ValueError(f'kl must be one of {list(ponder.KL_DIRECTIONS)}, got '
                     f'{model.kl!r}.')
  if model.eval_max_steps is not None:
    check_positive_int('eval_max_steps', model.eval_max_steps)
  return model


def ranges(setting: str, bits: int | None = None):
  """``(bits, (train lo, hi), (test lo, hi))`` of a setting.

  ``bits`` (default: the setting's, 64 or 96) scales it for small runs:
  interpolation trains and tests on ``1..bits``; extrapolation trains on
  ``1..bits // 2`` and tests on ``bits // 2 + 1..bits`` (96: 1-48, 49-96).
  """
  if setting not in SETTINGS:
    raise ValueError(f'setting must be one of {list(SETTINGS)}, got '
                     f'{setting!r}.')
  s = SETTINGS[setting]
  if bits is None:
    return s['bits'], s['train'], s['test']
  low = 2 if setting == 'extrapolation' else 1
  bits = check_int('bits', bits, low)
  if setting == 'interpolation':
    return bits, (1, bits), (1, bits)
  return bits, (1, bits // 2), (bits // 2 + 1, bits)


def tasks_of(setting: str, layout: str = 'random', bits: int | None = None):
  """``(train task, test task)`` of a setting (see :func:`ranges`)."""
  bits, train, test = ranges(setting, bits)
  return tuple(parity.task(bits, layout, min_count=lo, max_count=hi)
               for lo, hi in (train, test))


def _row(method: str) -> 'registry.Entry | None':
  """The registry row of ``method`` (None: the RNN, the cell alone)."""
  return None if method == 'rnn' else registry.METHODS[method]


# The pondering wrappers of the registry's table (each feeds its cell the
# first-step flag, ACT's Eq. 3), after the cell alone: a row of the table
# joins the comparison with nothing written here.
METHODS = ('rnn',) + tuple(n for n in registry.names('wrapper')
                           if registry.METHODS[n].flagged)


def _costed(row: 'registry.Entry | None') -> bool:
  """Whether the method reports a ponder cost, which training adds ``tau``
  times (ACT's Eq. 12) and which takes ACT's flags."""
  return row is not None and row.reports.ponder is not None


def _options(model: 'ModelConfig', row: 'registry.Entry', loop,
             inference: str) -> dict:
  """The factory's arguments from the model's fields (module docstring)."""
  costed = _costed(row)
  values = {
      'output_size': 1,
      'max_steps': (model.max_steps if inference == 'train'
                    else model.eval_max_steps or model.max_steps),
      'epsilon': model.act_epsilon if costed else model.ponder_epsilon,
      'halting_bias': model.halting_bias if costed else None,
      'repetitions': model.rho,
      'inference': inference,
      'loop': loop,
  }
  takes = inspect.signature(row.factory).parameters
  return {k: v for k, v in values.items() if k in takes and v is not None}


def _samples(model: 'ModelConfig') -> bool:
  """Whether the method halts by a rule chosen at evaluation (PonderNet's
  ``inference``: the median and sampled rules of P5)."""
  row = _row(model.method)
  return row is not None and 'inference' in row.options


def steps_measured(method: str) -> bool:
  """Whether ``method``'s steps per input are measured (its row reports
  them: ACT, PonderNet) rather than fixed (the RNN's one step, Repeat-RNN's
  rho), which are its step caps (:func:`step_caps`).

  Raises:
    ValueError: ``method`` is not one of :data:`METHODS`.
  """
  row = _row(_check_method(method))
  return row is not None and row.reports.steps is not None


def step_caps(method: str, model: Mapping[str, Any]) -> tuple[int, int]:
  """The most steps per input in training and at evaluation.

  Args:
    method: one of :data:`METHODS`.
    model: a :class:`ModelConfig`'s fields by name (a run record's
      ``model``); missing ones take the defaults.

  Returns:
    ``(training cap, evaluation cap)``: ``max_steps`` for a halting method
    (``eval_max_steps`` at evaluation when it samples), the fixed steps
    (Repeat-RNN's ``rho``, the RNN's 1) otherwise.
  """
  fields = {k: v for k, v in dict(model).items()
            if k in ModelConfig._fields and v is not None}
  config = ModelConfig(**{**fields, 'method': _check_method(method)})
  return _cap(config, 'train'), _cap(config)


def grid(method: str) -> tuple[str, ...]:
  """The :class:`ModelConfig` fields a comparison grids for ``method``:
  ``tau`` for a method with a ponder cost (ACT's paper grids it), the
  prior of one whose halting is a distribution (PonderNet Sec. 3.1:
  ``kl``, ``ponder_epsilon``, ``lambda_p``, ``beta``), ``rho`` for a fixed
  number of steps (Fojo et al.), nothing for the RNN."""
  row = _row(_check_method(method))
  if row is None:
    return ()
  if _costed(row):
    return ('tau',)
  if 'inference' in row.options:
    return ('kl', 'ponder_epsilon', 'lambda_p', 'beta')
  return ('rho',) if row.reports.fixed_steps else ()


def _check_method(method: str) -> str:
  if method not in METHODS:
    raise ValueError(f'method must be one of {list(METHODS)}, got '
                     f'{method!r}.')
  return method


def build_model(model: ModelConfig, *, inference: str = 'train'):
  """The sequence model of ``model`` (``inference`` for PonderNet only)."""
  model = check_model(model)
  row = _row(model.method)
  inner = registry.build_cell(model.cell, model.hidden_size)
  if row is None:
    return sequence_model(inner, 1)
  options = _options(model, row, model.loop or default_loop(model),
                     inference)
  cell = row.factory(inner, **options)
  return sequence_model(cell, None if 'output_size' in options else 1)


def evaluation_model(model: ModelConfig):
  """The sequence model :func:`parity_experiment`'s ``accuracy`` scores:
  :func:`build_model`, with PonderNet's deterministic halting rule (P5's
  median) for a method that samples its halting step."""
  return _scorer(model).median


def _bce(logits, targets):
  return optax.sigmoid_binary_cross_entropy(logits, targets)


def _ponder_and_steps(model: ModelConfig, ys, batch_size: int):
  """Per-row ``(ponder, steps)`` of one-step parity sequences: the fields
  the row reports (its steps; its ponder cost, or the steps), else the
  fixed steps."""
  row = _row(model.method)
  if row is None or row.reports.steps is None:
    per_row = jnp.full((batch_size,), _cap(model), jnp.float32)
    return per_row, per_row
  steps = getattr(ys, row.reports.steps)[:, 0].astype(jnp.float32)
  if row.reports.ponder is None:
    return steps, steps
  return getattr(ys, row.reports.ponder)[:, 0], steps


def _matmul_size(tree) -> int:
  """Multiplications of one pass through the matrices of ``tree`` per row."""
  return sum(int(x.size) for x in jax.tree_util.tree_leaves(tree)
             if x.ndim >= 2)


def multiplications(params, steps) -> float:
  """Multiplications per input of a model of :func:`build_model`.

  Every matrix of ``params['cell']`` (the inner cell and, for ACT and
  PonderNet, their readout and halting unit) is used once per step; the
  readout of the RNN and Repeat-RNN once per input. ``steps``: the mean
  steps per input (ACT: N; PonderNet: the halting step at inference;
  Repeat: rho; RNN: 1). Biases and elementwise products are not counted.
  """
  return (float(steps) * _matmul_size(params['cell'])
          + _matmul_size(params.get('readout', {})))


def _cap(model: ModelConfig, inference: str | None = None) -> int:
  """The most steps an input can take at evaluation (in training with
  ``inference='train'``)."""
  row = _row(model.method)
  if row is None:
    return 1
  if inference is None:
    inference = 'median' if _samples(model) else 'train'
  options = _options(model, row, None, inference)
  if row.reports.steps is None:
    return options.get(row.reports.fixed_steps, 1)
  return options['max_steps']


class _Scorer(NamedTuple):
  """Per-row scores of one model at evaluation, under each halting rule."""
  model: ModelConfig
  median: Any   # the deterministic rule (PonderNet P5's median; the others)
  sample: Any   # PonderNet's sampled rule (P5), else None
  train: Any    # PonderNet's training unroll, for its last step's mass

  def __call__(self, task, params, batch, key) -> dict:
    """Per-row ``errors``, ``bce``, ``ponder``, ``steps`` and ``capped``
    (the step cap decided); PonderNet adds ``sample_errors``,
    ``sample_steps`` and ``last_step_mass`` (p at the training cap)."""
    logits, ys = self.median.apply(params, batch.inputs)
    ponder_cost, steps = _ponder_and_steps(self.model, ys,
                                           batch.inputs.shape[0])
    out = {'errors': task.sequence_errors(logits, batch),
           'bce': task.loss(logits, batch), 'ponder': ponder_cost,
           'steps': steps, 'capped': (steps >= _cap(self.model)).astype(
               jnp.float32)}
    if self.sample is not None:
      logits, ys = self.sample.apply(params, batch.inputs,
                                     context=Context(key=key))
      out['sample_errors'] = task.sequence_errors(logits, batch)
      out['sample_steps'] = ys.steps[:, 0].astype(jnp.float32)
      _, ys = self.train.apply(params, batch.inputs)
      out['last_step_mass'] = ys.probs[:, 0, -1]
    return out


def _scorer(model: ModelConfig) -> _Scorer:
  if not _samples(model):
    return _Scorer(model, build_model(model), None, None)
  return _Scorer(model, build_model(model, inference='median'),
                 build_model(model, inference='sample'), build_model(model))


def _means(scores: dict, params) -> dict:
  """The evaluation's metrics from per-row scores (module docstring)."""
  m = {k: float(jnp.mean(v)) for k, v in scores.items()}
  out = {'accuracy': 1.0 - m['errors'], 'sequence_error': m['errors'],
         'loss': m['bce'], 'ponder': m['ponder'], 'steps': m['steps'],
         'capped': m['capped'],
         'multiplications': multiplications(params, m['steps'])}
  if 'sample_errors' in m:
    out.update(sample_accuracy=1.0 - m['sample_errors'],
               sample_steps=m['sample_steps'],
               sample_multiplications=multiplications(params,
                                                      m['sample_steps']),
               last_step_mass=m['last_step_mass'])
  return out


def _train_loss(model: ModelConfig, net, train_task):
  """The training loss of ``model``: the task's, plus ACT's ponder cost
  (Eq. 12) or PonderNet's P3."""

  def loss(params, batch, info):
    del info  # No dropout, no schedules.
    logits, ys = net.apply(params, batch.inputs)
    n = batch.inputs.shape[0]
    metrics = {}
    if isinstance(ys, ponder.PonderOutput):   # a halting distribution
      task_loss = ponder.reconstruction_loss(ys, batch.targets, _bce)
      kl = ponder.kl_to_geometric(ys, model.lambda_p, direction=model.kl)
      total = task_loss + model.beta * kl                             # (P3)
      probs = ys.probs[:, 0]
      n = jnp.arange(1, probs.shape[-1] + 1, dtype=probs.dtype)
      expected = jnp.sum(probs * n[None, :], axis=-1)
      metrics.update(kl=jnp.mean(kl), ponder=jnp.mean(expected),
                     steps=jnp.mean(ys.steps.astype(jnp.float32)))
    else:
      task_loss = train_task.loss(logits, batch)
      ponder_cost, steps = _ponder_and_steps(model, ys, n)
      penalty = model.tau if _costed(_row(model.method)) else None
      total = task_loss + (penalty * ponder_cost if penalty is not None
                           else 0.0)                                  # (12)
      metrics.update(ponder=jnp.mean(ponder_cost), steps=jnp.mean(steps))
    metrics['loss'] = jnp.mean(task_loss)
    return jnp.mean(total), metrics

  return loss


def parity_experiment(model: ModelConfig, setting: str = 'interpolation', *,
                      layout: str = 'random', bits: int | None = None,
                      batch_size: int = BATCH_SIZE,
                      eval_batch_size: int = 1000,
                      eval_seed: int = 2**31 - 1) -> Experiment:
  """An :class:`Experiment` of one method in one setting.

  Training draws from the setting's training range. The evaluation scores
  fixed held-out batches of ``eval_batch_size`` vectors, from a key stream
  disjoint from training's (``bits``: see :func:`ranges`): one of the test
  range, giving ``accuracy`` (1 - sequence error), ``sequence_error``,
  ``loss`` (BCE of the answer), ``ponder``, ``steps``, ``capped`` (the share
  of inputs that stopped at the step cap) and ``multiplications`` (per
  input, :func:`multiplications`); and, in the extrapolation setting, one of
  the training range, giving ``training_range_accuracy`` (in interpolation it is
  ``accuracy``). PonderNet adds the sampled rule's ``sample_accuracy``,
  ``sample_steps`` and ``sample_multiplications``, and
  ``last_step_mass``: the mean ``p`` its training unroll puts on step
  ``M``, the mass the cap decides.
  """
  model = check_model(model)
  check_positive_int('batch_size', batch_size)
  check_positive_int('eval_batch_size', eval_batch_size)
  train_task, test_task = tasks_of(setting, layout, bits)
  net = build_model(model)
  scorer = _scorer(model)
  _, train_range, test_range = ranges(setting, bits)
  same_range = train_range == test_range

  @jax.jit
  def sample(key, step):
    return train_task.sample(jax.random.fold_in(key, step), batch_size)

  eval_key = jax.random.PRNGKey(eval_seed)
  halt_key = jax.random.fold_in(eval_key, 1)

  @jax.jit
  def eval_batch(params):
    test = scorer(test_task, params, test_task.sample(eval_key,
                                                      eval_batch_size),
                  halt_key)
    if same_range:
      return test, None
    train = scorer(train_task, params, train_task.sample(
        jax.random.fold_in(eval_key, 2), eval_batch_size), halt_key)
    return test, train['errors']

  def evaluate(params, step):
    del step  # The held-out batches are fixed.
    test, train_errors = eval_batch(params)
    out = _means(test, params)
    out['training_range_accuracy'] = (out['accuracy'] if train_errors is None
                             else 1.0 - float(jnp.mean(train_errors)))
    return out

  def init(key):
    return net.init(key, train_task.input_size)

  return Experiment(init=init, loss=_train_loss(model, net, train_task),
                    sample=sample, evaluate=evaluate)


def evaluate_by_count(model: ModelConfig, setting: str, params, *,
                      layout: str = 'random', bits: int | None = None,
                      batch_size: int = 1000,
                      seed: int = 2**31 - 2) -> list[dict]:
  """A row per number of non-zero elements, from 1 to the vector size.

  Each row: ``count``, ``split`` ('train', 'test' or 'both': which ranges
  hold it; 'none' for counts of neither), and the metrics of
  :func:`parity_experiment`'s evaluation (``accuracy``, ``ponder``,
  ``steps``, ``capped``, ``multiplications``; PonderNet's sampled rule and
  ``last_step_mass``) on ``batch_size`` fresh vectors with that many
  non-zero elements.
  """
  model = check_model(model)
  check_positive_int('batch_size', batch_size)
  _, test_task = tasks_of(setting, layout, bits)
  bits, train, test = ranges(setting, bits)
  scorer = _scorer(model)
  score = jax.jit(lambda p, b, k: scorer(test_task, p, b, k))
  rows = []
  for count in range(1, bits + 1):
    key = jax.random.fold_in(jax.random.PRNGKey(seed), count)
    batch = test_task.sample(key, batch_size, difficulty=count)
    metrics = _means(score(params, batch, jax.random.fold_in(key, 1)),
                     params)
    in_train = train[0] <= count <= train[1]
    in_test = test[0] <= count <= test[1]
    split = {(True, True): 'both', (True, False): 'train',
             (False, True): 'test', (False, False): 'none'}[in_train, in_test]
    rows.append({'count': count, 'split': split,
                 **{k: v for k, v in metrics.items()
                    if k not in ('sequence_error', 'loss')}})
  return rows
