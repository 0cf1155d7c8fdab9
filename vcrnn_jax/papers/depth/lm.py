r"""Adaptive Transformer depth in a character language model (PTB chars).

A causal character-level language model whose one shared Transformer block
is applied again and again, to compare at equal compute (multiplications
per character) and at equal measured time four ways of choosing how often:

* ``mode='fixed'``: exactly ``depth`` applications, no unit;
* ``mode='per_token'``: ACT per position (the Universal Transformer's
  dynamic halting, :func:`vcrnn_jax.depth.per_token`), at most
  ``max_depth``; the loss adds ``tau`` times the mean ponder ``N + R`` (ACT
  Eq. 12, :func:`vcrnn_jax.depth.mean_ponder`);
* ``mode='per_token_pondernet'``: PonderNet's halting distribution per
  position (``depth.per_token(halting='pondernet')``), at most
  ``max_depth``; the state read out is the mean field ``sum_n p_n s^n`` and
  the loss adds ``beta`` times the mean KL of each position's ``p`` to a
  geometric prior with ``lambda_p`` (PonderNet's P3,
  :func:`vcrnn_jax.ponder.kl_to_geometric`);
* ``mode='route'``: Mixture-of-Recursions' expert-choice routing
  (:func:`vcrnn_jax.routing.per_token`): ``max_depth`` steps, step ``r``
  runs the block on the ``k_r = max(1, floor(c_r T))`` top-scored
  characters of a window still routed (``capacity``; MoR's ``(M - r) / M``
  by default); the loss adds ``aux_weight`` times the routers' BCE
  (:func:`vcrnn_jax.routing.aux_loss`).

The model (:func:`init`, :func:`forward`): token and learned position
embeddings (added once, at the input), the shared pre-LayerNorm block of
:mod:`vcrnn_jax.papers.depth.logic` (its params,
:func:`~vcrnn_jax.papers.depth.logic.init_block`) with *causal* multi-head
self-attention (:func:`causal_block`: a query at position ``t`` reads the
keys at positions ``<= t``), then a LayerNorm and an untied linear softmax
over the vocabulary. The loss is the mean next-character cross-entropy plus the
mode's cost (:data:`MODES`).

**Causality of each mode.** ``fixed``, ``per_token`` and
``per_token_pondernet`` are causal: the block is, and ACT (or PonderNet)
halts each position on its own state (a halted position
is frozen and still read as a key by the later ones). ``route`` trains
with top-k, which ranks a character against the later ones of its window,
so its routing reads the future (MoR Sec. 2.2.1 and MoD Sec. 3.5 say so).
Its reported numbers (``bpc``, ``depth``, ``mults``) are therefore those of
the causal rule, ``selection='threshold'`` (a character goes on while its
router says ``z > 0``; :func:`vcrnn_jax.routing.per_token`), with the same
params, which the aux BCE trains to predict top-k's choice; top-k's own
numbers come beside them as ``bpc_top_k`` and ``depth_top_k``, for
reference only: they are not a language model's (a character's depth there
depends on the characters after it).

**Multiplications per character** (``mults``; :func:`application_cost`).
One application of the block to one character costs, in multiply-adds,

.. math::

  c(w) = \underbrace{3F^2 + F^2 + 2 \cdot F \cdot 2F}_{\text{QKV, output,
    MLP kernels}} + \underbrace{2 w F}_{\text{scores } q k^\top
    \text{ and } \sum_k a\,v} + u F

with ``F`` the features, ``w`` the key slots the application scores its
query against (the window ``T`` for ``fixed``, ``per_token`` and route's
threshold rule, which gathers every slot; ``k_r`` at route's top-k step
``r``, which gathers ``k_r``), ``u = 1`` for the halting unit or the
router read at every application (0 for ``fixed``); LayerNorms, GELU,
softmax exponentials, biases and the embedding look-up are not counted.
The dense part is read from the kernel shapes of
:func:`~vcrnn_jax.papers.depth.logic.init_block` (8F^2 with its 2F MLP).
A character that took ``s`` applications costs ``sum_{r < s} c(w_r)``,
and every character adds the softmax readout ``F V`` (``V`` the
vocabulary):

.. math::

  \text{mults} = \frac{1}{T}\sum_t \sum_{r < s_t} c(w_r) + F V

which is ``D c(T) + F V`` for ``fixed`` at depth ``D``, ``\bar N c(T) + F
V`` for ``per_token`` and ``per_token_pondernet`` at mean depth ``\bar N``
(the applications taken, not PonderNet's expected steps), and
``\frac{1}{T}\sum_r k_r c(k_r) + F V`` for route's top-k. ``mults_run`` is
what this implementation computes instead: ``per_token`` runs the block on
every position of the batch until its deepest halts
(``TokenDepthOutput.depth`` applications, so it depends on the batch), and
route's threshold rule runs all ``max_depth`` steps on all ``T`` slots.

**Per character class** (:func:`character_classes`, :func:`class_rows`):
the mean depth, ponder and bits of the next character at positions whose
*input* character is a space (``_`` in PTB's character files), the first
character of a word (after a space or a line end), inside a word, or
punctuation and the sentence end (the line end, any other character that
is neither a letter nor a digit); ACT Sec. 3.5 reports more ponder at
spaces and word boundaries on Wikipedia bytes.

``experiments.depth_lm`` trains :func:`run` of its flag values; its
docstring has the command and the measured speed.

Adding a mode is one row of :data:`MODES` (a :class:`Mode`: the depth
wrapper, the loss term, the key slots of each step, whether a unit is read
per application); ``'per_token_pondernet'`` is such a row: the same
halting wrapper with PonderNet's rule, and its KL as the loss term.

Example::

  from vcrnn_jax.papers.depth import lm
  model = lm.Model('per_token', vocab_size=50, features=64, heads=4,
                   context=64, max_depth=6, depth=3, tau=0.01)
  params = lm.init(model, jax.random.key(0))
  out = lm.forward(model, params, tokens)      # tokens [n, 64] int ids
  out.logits, out.steps                        # [n, 64, 50], [n, 64]

References:
  Graves, Adaptive Computation Time for Recurrent Neural Networks, 2016,
  Sec. 3.5. Dehghani et al., Universal Transformers, 2019, Sec. 2.2. Bae et
  al., Mixture-of-Recursions, 2025, Sec. 2.2.1. Raposo et al.,
  Mixture-of-Depths, 2024, Sec. 3.5.
"""

from collections.abc import Callable, Mapping, Sequence
import functools
import math
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax import data, depth, ponder, routing
from vcrnn_jax.data.batching import random_windows
from vcrnn_jax.models import SequenceModel
from vcrnn_jax.papers.depth import logic
from vcrnn_jax.training import runs as training_runs
from vcrnn_jax.training.train import Experiment, TrainConfig

__all__ = [
    'CLASSES',
    'MODES',
    'Mode',
    'Model',
    'model_config',
    'causal_block',
    'depth_wrapper',
    'init',
    'Forward',
    'forward',
    'build_model',
    'application_cost',
    'statistics',
    'held_out_windows',
    'experiment',
    'character_classes',
    'depth_by_class',
    'class_rows',
    'LMRun',
    'run',
]

# A character class of the report, by the input character it reads.
CLASSES = ('space', 'word start', 'inside word', 'punctuation / end')
_SPACES = frozenset('_ \t')    # PTB's character files write a space as _
_END = '\n'


class Model(NamedTuple):
  """The static settings of the model and its loss."""
  mode: str          # one of MODES
  vocab_size: int    # V, the characters (the corpus's)
  features: int      # F, width of the character states
  heads: int         # attention heads (they split features)
  context: int       # T, characters per window (learned positions)
  max_depth: int     # most block applications M of per_token and route
  depth: int         # block applications of mode='fixed'
  tau: float         # ponder cost weight of per_token (ACT Eq. 12)
  capacity: float | tuple[float, ...] | None = None   # route's c_r; None:
                                                       # MoR's (M - r)/M
  aux_weight: float = 0.001   # weight of routing.aux_loss (MoR: 0.001)
  gate_scale: float | None = None   # alpha of route's gate; None: routing's
  beta: float = 0.01          # weight of per_token_pondernet's KL (P3)
  lambda_p: float = 0.2       # its geometric prior's lambda_p, in (0, 1)


def model_config(values: Mapping[str, Any], vocab_size: int) -> Model:
  """The model the flag ``values`` describe over ``vocab_size`` characters
  (:class:`Model`'s fields by name; ``capacity`` as comma-separated
  fractions, empty for the default); a bad combination raises
  ``ValueError`` naming the flag."""
  fields = {name: values.get(name, Model._field_defaults.get(name))
            for name in Model._fields}
  fields['vocab_size'] = vocab_size
  fields['capacity'] = logic.parse_capacity(fields['capacity'])
  model = Model(**fields)
  if model.mode not in MODES:
    raise ValueError(f'--mode must be one of {tuple(MODES)}, got '
                     f'{model.mode!r}.')
  if not 0.0 < model.lambda_p < 1.0:
    raise ValueError(f'--lambda_p must be in (0, 1), got {model.lambda_p}.')
  if model.beta < 0.0:
    raise ValueError(f'--beta must be >= 0, got {model.beta}.')
  if model.features % model.heads:
    raise ValueError(f'--features={model.features} must be a multiple of '
                     f'--heads={model.heads}.')
  if model.capacity is not None:
    if model.mode != 'route':
      raise ValueError(f'--capacity is read by --mode=route only, got '
                       f'--mode={model.mode}.')
    try:
      routing.capacities(model.capacity, model.max_depth)
    except ValueError as e:
      raise ValueError(f'--{e}') from None
  return model


# ----------------------------------------------------------------------------
# The model: pure functions of a params dict.


def _vector(v, x):
  """``v [F]`` shaped to add to ``x [..., F]`` (ranks are not promoted)."""
  return v.reshape((1,) * (x.ndim - 1) + (-1,))


def _layer_norm(p, x):
  mu = jnp.mean(x, -1, keepdims=True)
  y = (x - mu) * lax.rsqrt(jnp.var(x, -1, keepdims=True) + 1e-6)
  return y * _vector(p['scale'], y) + _vector(p['bias'], y)


def _positions(context, batch: int, time: int) -> jax.Array:
  """``[batch, time]`` original position of each slot: the gathered
  characters' under routing, else the slot index."""
  if isinstance(context, routing.RouteContext):
    return context.positions
  return jnp.broadcast_to(jnp.arange(time, dtype=jnp.int32), (batch, time))


def causal_block(params, h, context, *, heads: int):
  """``block(params, h, context) -> h``: pre-LN causal self-attention, then
  a 2x GELU MLP, both residual (the params of
  :func:`~vcrnn_jax.papers.depth.logic.init_block`).

  A query reads the keys that hold a character (``context.mask``) at an
  original position no later than its own: the slot index for the fixed
  and halting depths (:class:`vcrnn_jax.depth.BlockContext`), the gathered
  characters' ``positions`` under routing
  (:class:`vcrnn_jax.routing.RouteContext`), which keep their order.
  """
  b, t, f = h.shape
  pos = _positions(context, b, t)
  allowed = ((pos[:, None, :] <= pos[:, :, None])
             & context.mask[:, None, :])                    # [b, q, k]
  x = _layer_norm(params['ln1'], h)
  q, k, v = jnp.split((x @ params['qkv']).reshape(b, t, heads, 3 * f // heads),
                      3, axis=-1)
  logits = jnp.einsum('bqhd,bkhd->bhqk', q, k) / math.sqrt(f // heads)
  # A masked key's weight is exactly 0 (exp underflows), so a later
  # character changes nothing before it.
  logits = jnp.where(allowed[:, None], logits, -1e9)
  att = jnp.einsum('bhqk,bkhd->bqhd', jax.nn.softmax(logits, axis=-1), v)
  h = h + att.reshape(b, t, f) @ params['out']
  x = _layer_norm(params['ln2'], h)
  y = jax.nn.gelu(x @ params['w1'] + _vector(params['b1'], x))
  return h + y @ params['w2'] + _vector(params['b2'], h)


class Mode(NamedTuple):
  """One way of choosing the depth: a row of :data:`MODES`.

  Attributes:
    wrap: ``(model, block, evaluation) -> Depth | Routing | None``, the
      wrapper around the block (None: ``model.depth`` plain applications);
      ``evaluation`` asks for the causal rule the reported numbers use.
    cost: ``(model, stats) -> scalar``, the term the loss adds to the
      cross-entropy (``stats``: :func:`statistics`' dict, ``ponder`` and
      ``aux`` among it).
    widths: ``(model, time, evaluation) -> tuple``, the key slots of each
      step (:func:`application_cost`'s ``w_r``), one per step it may run.
    unit: whether a unit (halting or router) is read at every application.
  """
  wrap: Callable[..., Any]
  cost: Callable[..., Any]
  widths: Callable[..., tuple[int, ...]]
  unit: bool


def _route_widths(model: Model, time: int, evaluation: bool):
  if evaluation:                 # the threshold rule gathers every slot
    return (time,) * model.max_depth
  return routing.capacity_tokens(time, max_depth=model.max_depth,
                                 capacity=model.capacity)


# The modes; a new one is a row (the binary's --mode reads the keys).
MODES: Mapping[str, Mode] = {
    'fixed': Mode(
        wrap=lambda model, block, evaluation: None,
        cost=lambda model, stats: 0.0,
        widths=lambda model, time, evaluation: (time,) * model.depth,
        unit=False),
    'per_token': Mode(
        wrap=lambda model, block, evaluation: depth.per_token(
            block, max_depth=model.max_depth),
        cost=lambda model, stats: model.tau * stats['ponder'],   # ACT (12)
        widths=lambda model, time, evaluation: (time,) * model.max_depth,
        unit=True),
    # PonderNet's halting distribution per character: the loss adds beta
    # times the mean KL of each character's p to the geometric prior (P3).
    'per_token_pondernet': Mode(
        wrap=lambda model, block, evaluation: depth.per_token(
            block, max_depth=model.max_depth, halting='pondernet'),
        cost=lambda model, stats: model.beta * stats['aux'],
        widths=lambda model, time, evaluation: (time,) * model.max_depth,
        unit=True),
    'route': Mode(
        # Top-k in training (MoR); the causal threshold z > 0 to evaluate,
        # with the same routers, which the aux BCE trains to agree.
        wrap=lambda model, block, evaluation: routing.per_token(
            block, max_depth=model.max_depth, capacity=model.capacity,
            gate_scale=model.gate_scale,
            selection='threshold' if evaluation else 'top_k'),
        cost=lambda model, stats: model.aux_weight * stats['aux'],
        widths=_route_widths,
        unit=True),
}


def depth_wrapper(model: Model, *, evaluation: bool = False):
  """The wrapper around :func:`causal_block` of ``model.mode``: a
  :class:`vcrnn_jax.depth.Depth`, a :class:`vcrnn_jax.routing.Routing`, or
  None (fixed); ``evaluation``: route's causal threshold rule."""
  block = functools.partial(causal_block, heads=model.heads)
  return MODES[model.mode].wrap(model, block, evaluation)


def init(model: Model, key) -> dict:
  """``{'embed': {'tokens' [V, F], 'positions' [T, F]}, 'depth':
  {'block'[, 'halting' | 'router']}, 'readout': {'ln', 'kernel' [F, V],
  'bias' [V]}}``."""
  k = jax.random.split(key, 4)
  f, v = model.features, model.vocab_size
  block_params = logic.init_block(k[0], f)
  wrapper = depth_wrapper(model)
  return {
      'embed': {'tokens': jax.random.normal(k[1], (v, f)),
                'positions': jax.random.normal(k[2], (model.context, f))},
      'depth': ({'block': block_params} if wrapper is None
                else wrapper.init(k[3], f, block_params)),
      'readout': {'ln': {'scale': jnp.ones((f,)), 'bias': jnp.zeros((f,))},
                  'kernel': jnp.zeros((f, v)), 'bias': jnp.zeros((v,))},
  }


class Forward(NamedTuple):
  """What the model gives for a batch of windows ``[n, T]``."""
  logits: jax.Array   # [n, T, V] next-character logits at every position
  steps: jax.Array    # [n, T] int32 block applications of each position
  ponder: jax.Array   # scalar: depth.mean_ponder (per_token), the mean
                      # depth (route, fixed)
  ponders: jax.Array  # [n, T] per position: N + R (per_token), else steps
  aux: Any            # scalar routing.aux_loss (route), the mean KL to
                      # the geometric prior per character
                      # (per_token_pondernet), else 0
  run_depth: jax.Array  # int32 scalar: the steps the implementation ran
                        # (fixed: depth; per_token: the batch's deepest;
                        # route: max_depth)


def _apply_fixed(model: Model, params, h):
  def apply(h, n):
    context = depth.BlockContext(mask=jnp.ones(h.shape[:2], bool), step=n,
                                 key=None, extra=None)
    return causal_block(params['depth']['block'], h, context,
                        heads=model.heads), None
  h, _ = lax.scan(apply, h, jnp.arange(model.depth, dtype=jnp.int32))
  steps = jnp.full(h.shape[:2], model.depth, jnp.int32)
  return h, Forward(None, steps, jnp.asarray(model.depth, h.dtype),
                    steps.astype(h.dtype), 0.0,
                    jnp.asarray(model.depth, jnp.int32))


def forward(model: Model, params, tokens: jax.Array, *,
            evaluation: bool = False) -> Forward:
  """The logits and the depth of every position of ``tokens`` ``[n, T]``
  (``T <= model.context``); ``evaluation``: route by the causal threshold
  rule instead of top-k (the other modes are the same either way)."""
  tokens = jnp.asarray(tokens)
  e = params['embed']
  h = e['tokens'][tokens] + e['positions'][None, :tokens.shape[1]]
  wrapper = depth_wrapper(model, evaluation=evaluation)
  if wrapper is None:
    h, out = _apply_fixed(model, params, h)
  else:
    h, raw = wrapper.apply(params['depth'], h)
    if isinstance(raw, routing.RoutingOutput):
      out = Forward(None, raw.steps, routing.mean_depth(raw),
                    raw.steps.astype(h.dtype), routing.aux_loss(raw),
                    jnp.asarray(model.max_depth, jnp.int32))
    else:
      aux = 0.0
      if raw.probs is not None:          # PonderNet's P3, per character
        kl = ponder.kl_to_geometric(raw, model.lambda_p)     # [n], over t
        aux = jnp.sum(kl) / raw.steps.size
      out = Forward(None, raw.steps, depth.mean_ponder(raw), raw.ponder,
                    aux, raw.depth)
  r = params['readout']
  logits = _layer_norm(r['ln'], h) @ r['kernel'] + _vector(r['bias'], h)
  return out._replace(logits=logits)


def build_model(model: Model) -> SequenceModel:
  """``model`` as a :class:`~vcrnn_jax.models.SequenceModel`.

  ``init(key, input_size=None) -> params`` (:func:`init`; the vocabulary is
  the model's, so ``input_size`` is ignored) and ``apply(params, tokens,
  lengths=None, *, context=None, evaluation=True) -> (logits [n, T, V],
  Forward)``: ``tokens [n, T]`` int ids, every window full (``lengths``
  must be None); route evaluates by the causal threshold rule unless
  ``evaluation=False``.
  """
  def init_(key, input_size=None):
    del input_size
    return init(model, key)

  def apply(params, tokens, lengths=None, *, context=None, evaluation=True):
    del context   # No dropout and no schedules.
    if lengths is not None:
      raise ValueError('depth_lm: the model reads full windows; lengths '
                       'must be None.')
    out = forward(model, params, tokens, evaluation=evaluation)
    return out.logits, out

  return SequenceModel(init_, apply)


# ----------------------------------------------------------------------------
# Statistics and the run.


def application_cost(model: Model, keys: int) -> int:
  r"""``c(w)``: multiply-adds of one block application to one character
  that scores its query against ``keys`` slots (module docstring).

  The dense part is the sizes of the block's kernels (each weight is one
  multiply-add per character), read from
  :func:`~vcrnn_jax.papers.depth.logic.init_block`'s shapes; attention adds
  ``2 keys F`` (``q k`` and the weighted sum of ``v``); a halting unit or
  router adds ``F``.
  """
  shapes = jax.eval_shape(functools.partial(
      logic.init_block, features=model.features), jax.random.key(0))
  dense = sum(math.prod(shapes[k].shape) for k in ('qkv', 'out', 'w1', 'w2'))
  f = model.features
  return dense + 2 * keys * f + (f if MODES[model.mode].unit else 0)


def _cost_tables(model: Model, time: int, evaluation: bool):
  """``(cum [S + 1], run [S + 1])``: ``cum[s]`` the multiply-adds of a
  character's first ``s`` applications, ``run[s]`` per character of the
  first ``s`` steps as computed (``w_r c(w_r) / T`` summed)."""
  widths = MODES[model.mode].widths(model, time, evaluation)
  costs = [application_cost(model, w) for w in widths]
  cum = np.concatenate([[0.0], np.cumsum(costs)])
  run = np.concatenate([[0.0], np.cumsum(
      [w * c / time for w, c in zip(widths, costs)])])
  return jnp.asarray(cum, jnp.float32), jnp.asarray(run, jnp.float32)


def statistics(model: Model, params, windows: jax.Array, *,
               evaluation: bool = False) -> dict:
  """Loss terms and held-out numbers of ``windows`` ``[n, T + 1]`` (inputs
  ``[:, :-1]``, targets ``[:, 1:]``): scalars ``loss`` (mean nats per
  character), ``bpc``, ``depth``, ``ponder``, ``aux``, ``mults``,
  ``mults_run`` and per position ``nll`` (nats), ``steps``, ``ponders``."""
  inputs, targets = windows[:, :-1], windows[:, 1:]
  out = forward(model, params, inputs, evaluation=evaluation)
  logp = jax.nn.log_softmax(out.logits.astype(jnp.float32))
  nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
  cum, run = _cost_tables(model, inputs.shape[1], evaluation)
  readout = model.features * model.vocab_size
  return {
      'loss': jnp.mean(nll),
      'bpc': jnp.mean(nll) / math.log(2.0),
      'depth': jnp.mean(out.steps.astype(jnp.float32)),
      'ponder': out.ponder,
      'aux': jnp.asarray(out.aux, jnp.float32),
      'mults': jnp.mean(cum[out.steps]) + readout,
      'mults_run': run[out.run_depth] + readout,
      'nll': nll, 'steps': out.steps, 'ponders': out.ponders,
  }


def held_out_windows(stream, context: int, count: int) -> np.ndarray:
  """``[count, context + 1]`` windows that tile the start of ``stream``
  (window ``i`` starts at ``i * context``), so each of the first ``count *
  context`` characters is predicted once; a ``ValueError`` names
  ``--eval_windows`` if the stream is too short."""
  stream = np.asarray(stream, np.int32)
  fit = (len(stream) - 1) // context
  if count > fit:
    raise ValueError(f'--eval_windows={count} windows of --context='
                     f'{context} characters need {count * context + 1} '
                     f'validation characters; the split has {len(stream)} '
                     f'(at most {fit} windows).')
  idx = np.arange(count)[:, None] * context + np.arange(context + 1)
  return stream[idx]


_SUMMED = ('loss', 'bpc', 'depth', 'ponder', 'mults', 'mults_run')


def _evaluator(model: Model, held_out: np.ndarray, batch_size: int):
  """``evaluate(params, step)``: the means of :data:`_SUMMED` over the
  held-out windows (batches weighted by their windows); route adds top-k's
  ``bpc_top_k`` and ``depth_top_k``."""
  kinds = {'': True} | ({'_top_k': False} if model.mode == 'route' else {})
  stats = {suffix: jax.jit(functools.partial(
      statistics, model, evaluation=evaluation))
           for suffix, evaluation in kinds.items()}

  def evaluate(params, step):
    del step  # The held-out windows are fixed.
    out = {}
    for suffix, fn in stats.items():
      sums = dict.fromkeys(_SUMMED, 0.0)
      for i in range(0, len(held_out), batch_size):
        chunk = held_out[i:i + batch_size]
        s = fn(params, jnp.asarray(chunk))
        for k in _SUMMED:
          sums[k] += float(s[k]) * len(chunk)
      means = {k: v / len(held_out) for k, v in sums.items()}
      keep = _SUMMED if not suffix else ('bpc', 'depth')
      out.update({k + suffix: means[k] for k in keep})
    return out

  return evaluate


def experiment(model: Model, train_stream, valid_stream, *, batch_size: int,
               eval_windows: int, eval_batch_size: int) -> Experiment:
  """The :class:`Experiment` of ``model`` on a character corpus.

  Training draws ``batch_size`` windows of ``model.context + 1``
  characters at random offsets of ``train_stream`` per step
  (``fold_in(key, step)``). Every evaluation gives, over the first
  ``eval_windows * context`` characters of ``valid_stream`` in
  non-overlapping windows (:func:`held_out_windows`), each from no earlier
  context: ``bpc``, ``loss`` (nats), ``depth`` (block applications per
  character), ``ponder``, ``mults`` and ``mults_run`` (module docstring);
  route evaluates by the causal threshold rule and adds top-k's
  ``bpc_top_k`` and ``depth_top_k``.
  """
  mode = MODES[model.mode]
  stream = jnp.asarray(np.asarray(train_stream, np.int32))
  held_out = held_out_windows(valid_stream, model.context, eval_windows)

  def loss(params, batch, info):
    del info  # No dropout and no schedules.
    stats = statistics(model, params, batch)
    return stats['loss'] + mode.cost(model, stats), {
        k: stats[k] for k in ('bpc', 'ponder', 'depth')}

  @jax.jit
  def sample(key, step):
    return random_windows(jax.random.fold_in(key, step), stream, batch_size,
                          model.context)

  return Experiment(init=functools.partial(init, model), loss=loss,
                    sample=sample,
                    evaluate=_evaluator(model, held_out, eval_batch_size))


# ----------------------------------------------------------------------------
# Depth per character class.


def character_classes(chars: Sequence[str], previous: str = _END
                      ) -> list[str]:
  """The class (one of :data:`CLASSES`) of each character of ``chars``.

  ``'space'``: a word boundary (``_`` in PTB's character files, a space or
  a tab); ``'punctuation / end'``: the line end (PTB's sentence end) and
  any other character that is neither a letter nor a digit; ``'word
  start'``: any other character after a space or a line end (``previous``
  is the one before ``chars[0]``; default: a line end); ``'inside word'``:
  the rest.

  >>> character_classes(list('ab_c.\\nd'))[:4]
  ['word start', 'inside word', 'space', 'word start']
  >>> character_classes(list('ab_c.\\nd'))[4:]
  ['punctuation / end', 'punctuation / end', 'word start']
  """
  out, before = [], previous
  for c in chars:
    if c in _SPACES:
      out.append('space')
    elif c == _END or not c.isalnum():
      out.append('punctuation / end')
    elif before in _SPACES or before == _END:
      out.append('word start')
    else:
      out.append('inside word')
    before = c
  return out


def _round(x) -> float:
  return float(f'{float(x):.6g}')   # float32's digits, not repr's


def depth_by_class(classes: Sequence[str], steps, ponders, nll
                   ) -> list[dict]:
  """Per class of :data:`CLASSES` present: ``count``, mean ``depth``
  (applications), ``ponder`` and ``bpc`` (bits of the next character,
  predicted at that position), from per-position values in one order."""
  classes = np.asarray(list(classes))
  steps, ponders, nll = (np.asarray(a, np.float64).reshape(-1)
                         for a in (steps, ponders, nll))
  if not len(classes) == len(steps) == len(ponders) == len(nll):
    raise ValueError(f'depth_by_class: {len(classes)} classes for '
                     f'{len(steps)} steps, {len(ponders)} ponders and '
                     f'{len(nll)} nll values.')
  rows = []
  for name in CLASSES:
    on = classes == name
    if on.any():
      rows.append({'class': name, 'count': int(on.sum()),
                   'depth': _round(steps[on].mean()),
                   'ponder': _round(ponders[on].mean()),
                   'bpc': _round(nll[on].mean() / math.log(2.0))})
  return rows


def class_rows(model: Model, params, windows: np.ndarray,
               decode: Callable[[Any], Sequence[str]], *,
               batch_size: int, previous: str = _END) -> list[dict]:
  """:func:`depth_by_class` of the trained ``params`` on ``windows``
  ``[n, T + 1]`` (:func:`held_out_windows`, which tile a text: the
  classes read each input character after the one before it), evaluated
  as :func:`experiment` evaluates (route: the threshold rule); ``decode``
  maps ids to characters."""
  stats = jax.jit(functools.partial(statistics, model, evaluation=True))
  keys = ('steps', 'ponders', 'nll')
  parts = {k: [] for k in keys}
  for i in range(0, len(windows), batch_size):
    s = stats(params, jnp.asarray(windows[i:i + batch_size]))
    for k in keys:
      parts[k].append(np.asarray(s[k]))
  chars = list(decode(np.asarray(windows)[:, :-1].reshape(-1)))
  return depth_by_class(character_classes(chars, previous),
                        *(np.concatenate(parts[k]) for k in keys))


class LMRun(NamedTuple):
  """A run of ``experiments.depth_lm`` (:func:`run`)."""
  experiment: Experiment
  config: TrainConfig
  model: SequenceModel     # build_model: apply(params, tokens) -> (logits,
                           # Forward)
  settings: Model
  corpus: data.Dataset     # PTB characters
  held_out: np.ndarray     # [eval_windows, context + 1] the evaluation's


def run(values: Mapping[str, Any]) -> LMRun:
  """The run of ``experiments.depth_lm`` with the flag ``values``
  (:class:`Model`'s fields but ``vocab_size``, ``data_dir``,
  ``eval_windows``, ``eval_batch_size`` and the training flags); PTB
  characters from ``data_dir`` (None: the download cache)."""
  corpus = data.load('ptb_char', values['data_dir'])
  model = model_config(values, corpus.vocab.size)
  config = training_runs.train_config(values, f'depth_lm ({model.mode})')
  exp = experiment(model, corpus.train, corpus.valid,
                   batch_size=values['batch_size'],
                   eval_windows=values['eval_windows'],
                   eval_batch_size=values['eval_batch_size'])
  held_out = held_out_windows(corpus.valid, model.context,
                              values['eval_windows'])
  return LMRun(exp, config, build_model(model), model, corpus, held_out)
