r"""Adaptive Transformer depth on ACT's logic task, as tokens.

One example is one logic vector of ACT Sec. 3.2 as tokens
(:mod:`vcrnn_jax.tasks.logic_tokens`): the two bits at position 0, then a
chain of ``B`` gates (``B`` uniform on 1..``num_gates``), padded. Gate ``i``
needs the result of gate ``i - 1``: a shared Transformer block applied again
and again resolves one more position per application, so position ``i``
needs about ``i`` applications and an example about ``B``. The model
(:func:`init`, :func:`forward`): token and learned position embeddings
(added once, at the input), one shared pre-LayerNorm block (multi-head
self-attention over the real positions, then a 2x GELU MLP) applied

* ``halting='per_token'``: to each position's own depth, ACT per position
  (the Universal Transformer's dynamic halting,
  :func:`vcrnn_jax.depth.per_token`);
* ``halting='per_token_pondernet'``: to each position's own depth,
  PonderNet's halting distribution per position
  (:func:`vcrnn_jax.depth.per_token` with ``halting='pondernet'``);
* ``halting='per_example'``: to each example's depth, ACT over the mean of
  its positions' states (:func:`vcrnn_jax.depth.per_example`);
* ``halting='route'``: by capacity, Mixture-of-Recursions' expert-choice
  routing (:func:`vcrnn_jax.routing.per_token`): ``max_depth`` steps, the
  ``k_r`` top-scored tokens of each example still routed at step ``r``
  (``capacity``; MoR's ``(M - r) / M`` by default);
* ``halting='fixed'``: exactly ``depth`` times, no halting unit;

then a LayerNorm and one logit per position. The loss (:func:`experiment`)
is binary cross-entropy at every gate position on the prefix result
``b_{i+1}`` (``targets='prefix'``) or at the last gate only
(``targets='final'``), plus ``tau`` times the mean ponder ``N + R`` (ACT Eq.
12, :func:`vcrnn_jax.depth.mean_ponder`) for the ACT kinds, ``beta`` times
the mean KL of the positions' halting distributions to a geometric prior
with ``lambda_p`` (PonderNet's P3, :func:`vcrnn_jax.ponder.kl_to_geometric`)
for ``per_token_pondernet``, or ``aux_weight`` times the routers' BCE
(:func:`vcrnn_jax.routing.aux_loss`) for ``route``. The BCE of
``per_token_pondernet`` reads the prediction of the mean-field state
``sum_n p_n s^n`` (PonderNet's P3 weighs the loss of every step's
prediction instead; this keeps one readout for every kind).

``experiments.depth_logic`` trains :func:`run` of its flag values; its
docstring has the command and what it reaches.

Example::

  from vcrnn_jax.papers.depth import logic
  model = logic.Model('per_example', features=64, heads=4, max_depth=12,
                      depth=12, tau=0.01, targets='prefix', num_gates=10)
  params = logic.init(model, jax.random.key(0))
  batch = logic_tokens.sample(jax.random.key(1), 8)
  out = logic.forward(model, params, batch)   # logits, steps, ponder
"""

from collections.abc import Mapping
import functools
import math
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax import depth, ponder, routing
from vcrnn_jax.models import SequenceModel
from vcrnn_jax.tasks import logic_tokens
from vcrnn_jax.training import runs as training_runs
from vcrnn_jax.training.train import Experiment, TrainConfig

__all__ = [
    'HALTING',
    'TARGETS',
    'Model',
    'model_config',
    'parse_capacity',
    'init_block',
    'block',
    'init',
    'Forward',
    'forward',
    'build_model',
    'statistics',
    'experiment',
    'difficulty_rows',
    'LogicRun',
    'run',
]

HALTING = ('per_token', 'per_token_pondernet', 'per_example', 'route',
           'fixed')
# The kinds whose depth is per position.
_PER_POSITION = ('per_token', 'per_token_pondernet', 'route')
TARGETS = ('prefix', 'final')
_EVAL_SEED = 2**31 - 1        # held-out examples, apart from training's
_REPORT_SEED = 2**31 - 2      # the per-B report's
_MLP = 2                      # MLP width, times features


class Model(NamedTuple):
  """The static settings of the model and its loss."""
  halting: str       # one of HALTING
  features: int      # width of the token states
  heads: int         # attention heads (they split features)
  max_depth: int     # most block applications M of the adaptive kinds
  depth: int         # block applications of halting='fixed'
  tau: float         # ponder cost weight (ACT Eq. 12) of the ACT kinds
  targets: str       # one of TARGETS
  num_gates: int     # longest chain B
  # halting='route' (runs recorded before it existed have no such flags):
  capacity: float | tuple[float, ...] | None = None   # c_r; None: MoR's
  aux_weight: float = 0.001   # weight of routing.aux_loss (MoR: 0.001)
  gate_scale: float | None = None   # alpha of the gate; None: routing's
  # halting='per_token_pondernet' (PonderNet's P3):
  beta: float = 0.01          # weight of the KL (PonderNet's reproductions)
  lambda_p: float = 0.2       # the geometric prior's lambda_p, in (0, 1)


def model_config(values: Mapping[str, Any]) -> Model:
  """The model the flag ``values`` describe (:class:`Model`'s fields by
  name; ``capacity`` as comma-separated fractions, empty for the default);
  a bad combination raises ``ValueError``."""
  fields = {name: values.get(name, Model._field_defaults.get(name))
            for name in Model._fields}
  model = Model(**{**fields, 'capacity': parse_capacity(fields['capacity'])})
  if model.features % model.heads:
    raise ValueError(f'--features={model.features} must be a multiple of '
                     f'--heads={model.heads}.')
  if not 0.0 < model.lambda_p < 1.0:
    raise ValueError(f'--lambda_p must be in (0, 1), got {model.lambda_p}.')
  if model.capacity is not None:
    if model.halting != 'route':
      raise ValueError(f'--capacity is read by --halting=route only, got '
                       f'--halting={model.halting}.')
    try:
      routing.capacities(model.capacity, model.max_depth)
    except ValueError as e:
      raise ValueError(f'--{e}') from None
  return model


def parse_capacity(text: Any) -> float | tuple[float, ...] | None:
  """The ``--capacity`` flag of route: ``'1,0.5'`` as ``(1.0, 0.5)``,
  ``'0.5'`` as ``0.5`` (every step); empty (or None): None."""
  if text is None or isinstance(text, (float, tuple, list)):
    values = text if not isinstance(text, list) else tuple(text)
  else:
    try:
      values = tuple(float(c) for c in text.split(',') if c.strip())
    except ValueError:
      raise ValueError(f'--capacity must be comma-separated fractions, got '
                       f'{text!r}.') from None
  if isinstance(values, tuple) and len(values) == 1:
    return values[0]
  return values or None


# ----------------------------------------------------------------------------
# The model: pure functions of a params dict.


def _dense(key, fan_in, fan_out, gain=1.0):
  return gain * jax.random.normal(key, (fan_in, fan_out)) / math.sqrt(fan_in)


def _norm_params(features):
  return {'scale': jnp.ones((features,)), 'bias': jnp.zeros((features,))}


def _vector(v, x):
  """``v [F]`` shaped to add to ``x [..., F]`` (ranks are not promoted)."""
  return v.reshape((1,) * (x.ndim - 1) + (-1,))


def _layer_norm(p, x):
  mu = jnp.mean(x, -1, keepdims=True)
  y = (x - mu) * lax.rsqrt(jnp.var(x, -1, keepdims=True) + 1e-6)
  return y * _vector(p['scale'], y) + _vector(p['bias'], y)


def init_block(key, features: int) -> dict:
  """The shared block's weights; the residual branches start small so that
  twelve applications keep the states' scale."""
  k = jax.random.split(key, 4)
  return {'ln1': _norm_params(features),
          'qkv': _dense(k[0], features, 3 * features),
          'out': _dense(k[1], features, features, 0.5),
          'ln2': _norm_params(features),
          'w1': _dense(k[2], features, _MLP * features),
          'b1': jnp.zeros((_MLP * features,)),
          'w2': _dense(k[3], _MLP * features, features, 0.5),
          'b2': jnp.zeros((features,))}


def block(params, h, context, *, heads: int):
  """``block(params, h, context) -> h``: pre-LN attention over the real
  positions (``context.mask``), then an MLP, both residual."""
  b, t, f = h.shape
  x = _layer_norm(params['ln1'], h)
  q, k, v = jnp.split((x @ params['qkv']).reshape(b, t, heads, 3 * f // heads),
                      3, axis=-1)
  logits = jnp.einsum('bqhd,bkhd->bhqk', q, k) / math.sqrt(f // heads)
  logits = jnp.where(context.mask[:, None, None, :], logits, -1e9)
  att = jnp.einsum('bhqk,bkhd->bqhd', jax.nn.softmax(logits, axis=-1), v)
  h = h + att.reshape(b, t, f) @ params['out']
  x = _layer_norm(params['ln2'], h)
  y = jax.nn.gelu(x @ params['w1'] + _vector(params['b1'], x))
  return h + y @ params['w2'] + _vector(params['b2'], h)


def _adaptive(model: Model):
  """The :class:`depth.Depth` (or :class:`routing.Routing`) of
  ``model.halting``; None for fixed."""
  step = functools.partial(block, heads=model.heads)
  if model.halting == 'per_token':
    return depth.per_token(step, max_depth=model.max_depth)
  if model.halting == 'per_token_pondernet':
    return depth.per_token(step, max_depth=model.max_depth,
                           halting='pondernet')
  if model.halting == 'per_example':
    return depth.per_example(step, max_depth=model.max_depth, halting='act')
  if model.halting == 'route':
    # The block attends over every real position: top-k needs no causal
    # remedy here, and the aux loss only keeps the routers calibrated.
    return routing.per_token(step, max_depth=model.max_depth,
                             capacity=model.capacity,
                             gate_scale=model.gate_scale)
  return None


def init(model: Model, key) -> dict:
  """``{'embed', 'depth': {'block'[, 'halting' | 'router']}, 'readout'}``."""
  k = jax.random.split(key, 4)
  f = model.features
  block_params = init_block(k[0], f)
  adaptive = _adaptive(model)
  return {
      'embed': {'tokens': jax.random.normal(
          k[1], (logic_tokens.vocab_size(), f)),
                'positions': jax.random.normal(k[2],
                                               (model.num_gates + 1, f))},
      'depth': ({'block': block_params} if adaptive is None
                else adaptive.init(k[3], f, block_params)),
      'readout': {'ln': _norm_params(f), 'kernel': jnp.zeros((f, 1)),
                  'bias': jnp.zeros((1,))},
  }


class Forward(NamedTuple):
  """What the model gives for a batch."""
  logits: jax.Array   # [n, T] one per position
  steps: jax.Array    # [n, T] block applications of each position
  ponder: jax.Array   # scalar, depth.mean_ponder (fixed: the depth; route:
                      # routing.mean_depth)
  aux: Any = 0.0      # scalar, the kind's regulariser: routing.aux_loss
                      # (route), the mean KL to the geometric prior per
                      # position (per_token_pondernet), else 0


def _forward(model: Model, params, tokens: jax.Array,
             mask: jax.Array) -> Forward:
  e = params['embed']
  h = e['tokens'][tokens] + e['positions'][None]
  adaptive = _adaptive(model)
  if adaptive is None:
    def apply(h, n):
      context = depth.BlockContext(mask=mask, step=n, key=None, extra=None)
      return block(params['depth']['block'], h, context,
                   heads=model.heads), None
    h, _ = lax.scan(apply, h, jnp.arange(model.depth, dtype=jnp.int32))
    steps = jnp.full(tokens.shape, model.depth, jnp.int32)
    ponder, aux = jnp.asarray(model.depth, h.dtype), 0.0
  else:
    h, out = adaptive.apply(params['depth'], h, mask)
    steps = (out.steps if out.steps.ndim == 2
             else jnp.broadcast_to(out.steps[:, None], tokens.shape))
    routed = isinstance(out, routing.RoutingOutput)
    ponder = routing.mean_depth(out) if routed else depth.mean_ponder(out)
    if routed:
      aux = routing.aux_loss(out)
    elif model.halting == 'per_token_pondernet':
      aux = _mean_kl(out, model.lambda_p, mask)
    else:
      aux = 0.0
  r = params['readout']
  logits = (_layer_norm(r['ln'], h) @ r['kernel'])[..., 0] + r['bias'][0]
  steps = jnp.where(mask, steps, 0)
  return Forward(logits, steps, ponder, aux)


def _mean_kl(out: depth.TokenDepthOutput, lambda_p: float,
             mask: jax.Array) -> jax.Array:
  """KL(p_t || p_G) (P3) averaged over the real positions, as
  :func:`vcrnn_jax.depth.mean_ponder` averages the ponder."""
  kl = ponder.kl_to_geometric(out, lambda_p, mask)   # [n], summed over t
  count = jnp.sum(mask.astype(kl.dtype))
  return jnp.sum(kl) / jnp.maximum(count, 1.0)


def forward(model: Model, params, batch: logic_tokens.TokenBatch) -> Forward:
  """The logits and the depth of every position of ``batch``."""
  return _forward(model, params, batch.tokens, batch.mask)


def build_model(model: Model) -> SequenceModel:
  """``model`` as a :class:`~vcrnn_jax.models.SequenceModel`.

  ``init(key, input_size=None) -> params`` (:func:`init`; the vocabulary
  is the task's, so ``input_size`` is ignored) and ``apply(params, tokens,
  mask=None, *, context=None) -> (logits [n, T], Forward)``: ``tokens [n,
  T]`` int ids (``logic_tokens.TokenBatch.tokens``), ``mask`` the real
  positions (default: the tokens that are not ``logic_tokens.PAD``); the
  block takes no context.
  """
  def init_(key, input_size=None):
    del input_size
    return init(model, key)

  def apply(params, tokens, mask=None, *, context=None):
    del context
    tokens = jnp.asarray(tokens)
    if mask is None:
      mask = tokens != logic_tokens.PAD
    out = _forward(model, params, tokens, mask)
    return out.logits, out

  return SequenceModel(init_, apply)


def _bce(logits, y):
  return jnp.logaddexp(0.0, logits) - y * logits


def _masked_mean(x, mask):
  return jnp.sum(jnp.where(mask, x, 0.0)) / jnp.maximum(
      jnp.sum(mask.astype(x.dtype)), 1.0)


def _last_gate(batch):
  """[n, T] bool: the position of the last gate, B."""
  return jnp.arange(batch.tokens.shape[1])[None, :] == batch.gates[:, None]


def statistics(model: Model, params, batch) -> dict:
  """Loss and held-out numbers of ``batch`` (scalars, ``depth_by_position``
  [T]): error on the final result, per-gate error, depth, ponder."""
  out = forward(model, params, batch)
  on = batch.target_mask if model.targets == 'prefix' else _last_gate(batch)
  wrong = (out.logits > 0) != (batch.targets > 0.5)
  per_position = model.halting in _PER_POSITION
  unit = out.steps if per_position else out.steps[:, :1]
  real = batch.mask if per_position else batch.mask[:, :1]
  counts = jnp.maximum(jnp.sum(batch.mask, axis=0), 1)
  return {
      'loss': _masked_mean(_bce(out.logits, batch.targets), on),
      'error': _masked_mean(wrong.astype(jnp.float32), _last_gate(batch)),
      'token_error': _masked_mean(wrong.astype(jnp.float32),
                                  batch.target_mask),
      'depth': _masked_mean(unit.astype(jnp.float32), real),
      'ponder': out.ponder,
      'aux': out.aux,
      'depth_by_position': (jnp.sum(out.steps, axis=0).astype(jnp.float32)
                            / counts.astype(jnp.float32)),
  }


# ----------------------------------------------------------------------------
# The run.


def experiment(model: Model, *, batch_size: int,
               eval_batch_size: int) -> Experiment:
  """The :class:`Experiment` of ``model`` on the token logic task.

  Every evaluation gives, on ``eval_batch_size`` fixed held-out examples:
  ``error`` (the fraction of examples whose final result ``b_{B+1}`` is
  wrong), ``token_error`` (the fraction of gate positions wrong), ``depth``
  (block applications per position for per_token, per_token_pondernet and
  route, per example otherwise), ``ponder`` (per_token_pondernet: the
  expected steps ``sum_n n p_n``; route: the depth again) and ``loss``.
  The loss adds the kind's cost: ``tau`` times the ponder (ACT kinds),
  ``beta`` times the mean KL (per_token_pondernet), ``aux_weight`` times
  the routers' BCE (route), nothing for fixed.
  """
  def loss(params, batch, info):
    del info  # No dropout and no schedules.
    stats = statistics(model, params, batch)
    cost = {'fixed': 0.0, 'route': model.aux_weight * stats['aux'],
            'per_token_pondernet': model.beta * stats['aux']}.get(
                model.halting, model.tau * stats['ponder'])
    return stats['loss'] + cost, {k: stats[k] for k in (
        'loss', 'ponder', 'depth', 'error')}

  @jax.jit
  def sample(key, step):
    return logic_tokens.sample(jax.random.fold_in(key, step), batch_size,
                               num_gates=model.num_gates)

  held_out = logic_tokens.sample(jax.random.key(_EVAL_SEED), eval_batch_size,
                                 num_gates=model.num_gates)
  stats = jax.jit(functools.partial(statistics, model))

  def evaluate(params, step):
    del step  # The held-out examples are fixed.
    s = stats(params, held_out)
    return {k: float(s[k]) for k in ('error', 'token_error', 'loss', 'depth',
                                      'ponder')}

  return Experiment(init=functools.partial(init, model), loss=loss,
                    sample=sample, evaluate=evaluate)


def _round(x) -> float:
  return float(f'{float(x):.6g}')   # float32's digits, not repr's


def difficulty_rows(model: Model, params, batch_size: int) -> list[dict]:
  """Per chain length ``B``: error, per-gate error, depth, ponder (and, per
  token, the mean depth of each position index), on fresh examples."""
  stats = jax.jit(functools.partial(statistics, model))
  rows = []
  for b in range(1, model.num_gates + 1):
    batch = logic_tokens.sample(jax.random.fold_in(
        jax.random.key(_REPORT_SEED), b), batch_size,
                                num_gates=model.num_gates, difficulty=b)
    s = stats(params, batch)
    row = {'gates': b, **{k: _round(s[k]) for k in (
        'error', 'token_error', 'depth', 'ponder')}}
    if model.halting in _PER_POSITION:
      by_position = np.asarray(s['depth_by_position'])
      row.update({f'depth_{i}': (_round(by_position[i]) if i <= b else '')
                  for i in range(model.num_gates + 1)})
    rows.append(row)
  return rows


class LogicRun(NamedTuple):
  """A run of ``experiments.depth_logic`` (:func:`run`)."""
  experiment: Experiment
  config: TrainConfig
  model: SequenceModel     # build_model: apply(params, tokens, mask=None)
                           # -> (logits, Forward)
  settings: Model


def run(values: Mapping[str, Any]) -> LogicRun:
  """The run of ``experiments.depth_logic`` with the flag ``values``
  (:class:`Model`'s fields, ``eval_batch_size`` and the training flags)."""
  model = model_config(values)
  config = training_runs.train_config(values,
                                      f'depth_logic ({model.halting})')
  return LogicRun(experiment(model, batch_size=values['batch_size'],
                             eval_batch_size=values['eval_batch_size']),
                  config, build_model(model), model)
