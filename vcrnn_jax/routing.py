r"""Capacity routing over depth: Mixture-of-Recursions beside halting.

Where :mod:`vcrnn_jax.depth` lets every position decide *when to stop*
(ACT's halting), a router with a capacity decides *which tokens go on*:
at recursion step ``r`` the shared block runs on the ``k_r`` tokens of
each sequence that a learned router scores highest among those still
routed, gathered into a ``[batch, k_r, features]`` array, and the others
keep their state. This is the expert-choice routing of Mixture-of-
Recursions (Bae et al. 2025) over one shared block; Mixture-of-Depths
(Raposo et al. 2024) is its one-step case (``max_depth=1``) per layer.

* :func:`per_token`: the router, the capacity schedule and the gather /
  block / scatter of every step, for any pure block

  .. code-block:: python

    block(params, h, context) -> h   # h: [batch, k_r, features]

  whose :class:`RouteContext` holds the gathered mask, the step, a key,
  ``extra`` and the gathered tokens' original ``positions`` (a causal
  block masks by position).
* :func:`aux_loss`: the BCE of the router logits against top-k
  membership (MoD Sec. 3.5), which teaches the router to predict its own
  selection, so that ``selection='threshold'`` routes causally at
  inference.
* :func:`mean_depth`, :func:`block_tokens`, :func:`capacity_tokens`: the
  depth realised and the exact block computation, for comparisons at equal
  compute with :mod:`vcrnn_jax.depth`.

Shapes are static: step ``r`` always gathers ``k_r`` slots, so the block
computes ``sum_r k_r`` tokens per sequence instead of ``max_depth`` times
the sequence, whatever the router says, and no loop waits for the
deepest token. The price is that the capacity is fixed in advance, and
top-k over a sequence is not causal (see :func:`per_token`).

>>> import jax, jax.numpy as jnp
>>> from vcrnn_jax import routing
>>> def block(params, h, context):
...   del context                      # no attention: tokens independent
...   return h + jnp.tanh(h @ params['w'])
>>> mor = routing.per_token(block, max_depth=3)      # capacity 1, 2/3, 1/3
>>> params = mor.init(jax.random.key(0), 4, {'w': jnp.eye(4)})
>>> h = jax.random.normal(jax.random.key(1), (2, 6, 4))
>>> mask = jnp.arange(6)[None] < jnp.array([[6], [3]])   # lengths 6, 3
>>> out_h, out = mor.apply(params, h, mask)
>>> routing.capacity_tokens(6, max_depth=3), routing.capacity_tokens(
...     3, max_depth=3)
((6, 4, 2), (3, 2, 1))
>>> out.steps.sum(axis=1).tolist(), routing.block_tokens(out).tolist()
([12, 6], [12, 6])
>>> out.steps[1, 3:].tolist()                        # padding: no step
[0, 0, 0]
>>> loss = jnp.mean(out_h ** 2) + 0.001 * routing.aux_loss(out)

References:
  Bae et al., Mixture-of-Recursions: Learning Dynamic Recursive Depths
  for Adaptive Token-Level Computation, 2025.
  Raposo et al., Mixture-of-Depths: Dynamically allocating compute in
  transformer-based language models, 2024.
"""

from collections.abc import Callable, Sequence
import math
import numbers
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax import compaction, depth, utils
from vcrnn_jax.core import (
  check_dtype,
  check_function,
  check_positive_int,
  field_docs,
  param_dtype_of,
)

__all__ = [
    'GATES',
    'SELECTIONS',
    'RouteContext',
    'Routing',
    'RoutingOutput',
    'aux_loss',
    'block_tokens',
    'capacities',
    'capacity_tokens',
    'mean_depth',
    'per_token',
]

GATES = ('sigmoid', 'logit')
SELECTIONS = ('top_k', 'threshold')
# The gate's scale alpha when none is given: MoR's released expert-choice
# configurations (sigmoid, alpha 0.1); MoD multiplies by the raw logit.
_GATE_SCALE = {'sigmoid': 0.1, 'logit': 1.0}
# floor(c n) with this slack, so that 0.29 * 100 (28.999999999999996 in
# floating point) gives 29 tokens, not 28.
_SLACK = 1e-9


@field_docs
class RouteContext(NamedTuple):
  """What a block is given beside its params and the gathered ``h``.

  The four fields of :class:`vcrnn_jax.depth.BlockContext`, by the same
  names, so a block written for halting reads them unchanged, plus the
  gathered tokens' original positions.

  Attributes:
    mask: [batch, k_r] bool, the slots that hold a selected token (False:
      a filler slot, zeros; a block that mixes tokens must not read it)
    step: int32 scalar, the 0-based recursion step r
    key: this step's PRNG key, fold_in(key, r), or None (no dropout)
    extra: what the caller passed as ``extra``, leaves [batch, ...], as
      given (rows are never dropped; gather a per-token extra with
      ``positions``)
    positions: [batch, k_r] int32, the original position of each slot,
      ascending over the selected slots (a causal block attends from q to
      k where positions[k] <= positions[q])
  """
  mask: jax.Array
  step: jax.Array
  key: jax.Array | None
  extra: Any
  positions: jax.Array


class Routing(NamedTuple):
  """Capacity routing around a block, as two pure functions.

  ``init(key, features, block_params) -> params`` adds one router per step
  to the block's params: ``{'block': block_params, 'router': {'kernel':
  [features, max_depth], 'bias': [max_depth]}}``.

  ``apply(params, h, mask=None, *, key=None, extra=None, caller=...) ->
  (h, output)`` routes ``h`` ``[batch, time, features]`` through
  ``max_depth`` steps; ``mask`` ``[batch, time]`` bool (None: no
  padding), ``key`` the PRNG key the block's per-step keys are folded
  from, ``extra`` a pytree of ``[batch, ...]`` leaves for the block's
  :class:`RouteContext`; ``caller`` is the function its errors name.
  """
  init: Callable[..., Any]
  apply: Callable[..., tuple[jax.Array, Any]]


@field_docs
class RoutingOutput(NamedTuple):
  """Per-token statistics of :func:`per_token` (``M = max_depth``).

  Attributes:
    steps: [batch, time] int32, the block applications a token took (0 at
      padding)
    logits: [batch, time, M] the router logit z_t^r of each token eligible
      at step r (0 elsewhere)
    probs: [batch, time, M] sigmoid(z_t^r) there (0 elsewhere): what the
      threshold rule compares with 1/2
    selected: [batch, time, M] bool, t in S^r: the top-k membership the
      aux loss targets (the threshold's choice with selection='threshold')
    eligible: [batch, time, M] bool, t in S^{r-1} (step 0: the real
      tokens), the tokens the router chose among at step r
  """
  steps: jax.Array
  logits: jax.Array
  probs: jax.Array
  selected: jax.Array
  eligible: jax.Array


class _Spec(NamedTuple):
  """The static settings of a routing step."""
  max_depth: int
  capacity: tuple[float, ...]   # c_r, one per step, non-increasing
  gate: str                     # one of GATES
  gate_scale: float             # alpha
  selection: str                # one of SELECTIONS


def capacities(capacity: Any, max_depth: int) -> tuple[float, ...]:
  """The capacity schedule ``(c_0, ..., c_{M-1})``, checked.

  Args:
    capacity: None (MoR's default, ``c_r = (M - r) / M``: 1, then linearly
      down to ``1/M``), one fraction for every step (MoD's single one), or
      a sequence of ``max_depth`` fractions; each in ``(0, 1]``, and the
      sequence non-increasing (a token leaves and never returns, so a later
      step cannot hold more).
    max_depth: ``M``, the number of steps.

  Returns:
    ``max_depth`` floats.

  Raises:
    ValueError: a fraction outside ``(0, 1]``, a sequence of another
      length, or one that increases.
  """
  m = check_positive_int('max_depth', max_depth)
  if capacity is None:
    return tuple((m - r) / m for r in range(m))
  values = ((capacity,) * m if _is_fraction(capacity)
            else tuple(capacity) if isinstance(capacity, Sequence)
            and not isinstance(capacity, str) else None)
  if values is None or not all(map(_is_fraction, values)):
    raise ValueError(f'capacity must be None, a fraction in (0, 1] or a '
                     f'sequence of them, got {capacity!r}.')
  if len(values) != m:
    raise ValueError(f'capacity must have max_depth={m} fractions, one per '
                     f'step, got {len(values)}: {capacity!r}.')
  if any(b > a for a, b in zip(values, values[1:])):
    raise ValueError(f'capacity must not increase from step to step (a '
                     f'token leaves and never returns), got {capacity!r}.')
  return tuple(float(c) for c in values)


def _is_fraction(c: Any) -> bool:
  return (isinstance(c, numbers.Real) and not isinstance(c, bool)
          and 0.0 < c <= 1.0)


def capacity_tokens(length: int, *, max_depth: int,
                    capacity: Any = None) -> tuple[int, ...]:
  r"""``k_r``: the tokens step ``r`` selects in a sequence of ``length``.

  .. math::

    k_r(n) = \max(1, \lfloor c_r n \rfloor) \ (n \ge 1), \qquad k_r(0) = 0

  (MoR's ``max(1, int(capacity * seq_len))``, with ``n`` the sequence's
  real tokens rather than its padded length, and ``10^-9`` added to ``c_r
  n`` before the floor, so that a product such as ``0.29 * 100``, which is
  28.999999999999996 in floating point, gives 29). :func:`per_token`
  gathers ``k_r(time)`` slots per sequence at step ``r`` (``time``: the
  static, padded length) and fills the first ``k_r(n)`` of them; since
  ``c_r`` never increases, ``k_r(n) <= k_{r-1}(n) <= n``. The block
  computes ``sum_r k_r(n)`` tokens of a sequence.

  Args:
    length: ``n``, a sequence's real tokens (``>= 0``).
    max_depth: ``M``.
    capacity: as for :func:`capacities`.

  Returns:
    ``(k_0, ..., k_{M-1})``.
  """
  if isinstance(length, bool) or not isinstance(length, numbers.Integral) \
      or length < 0:
    raise ValueError(f'length must be an integer >= 0, got {length!r}.')
  if length == 0:
    return (0,) * check_positive_int('max_depth', max_depth)
  return tuple(max(1, math.floor(c * length + _SLACK))
               for c in capacities(capacity, max_depth))


def aux_loss(out: RoutingOutput) -> jax.Array:
  r"""The routers' BCE against their own top-k membership (MoD Sec. 3.5).

  .. math::

    L_{aux} = \sum_r \frac{1}{|S^{r-1}|} \sum_{t \in S^{r-1}}
      \big(\log(1 + e^{z_t^r}) - [t \in S^r]\, z_t^r\big)

  summed over the steps, averaged over the tokens eligible at each step
  (the batch's; a step with none adds 0), as MoR's ``aux_loss`` sampling
  does (``BCEWithLogitsLoss`` over the gathered tokens, summed over the
  recursions). Its gradient reaches the routers and, through ``z``, the
  states; the loss adds it times a small weight (MoR: 0.001). A router it
  has trained puts ``z > 0`` where top-k selects, which is the rule of
  ``selection='threshold'``.

  Args:
    out: a :class:`RoutingOutput`.

  Returns:
    A scalar in the logits' dtype.
  """
  z = out.logits
  bce = jnp.logaddexp(0.0, z) - out.selected.astype(z.dtype) * z
  total = jnp.sum(jnp.where(out.eligible, bce, 0.0), axis=(0, 1))
  count = jnp.sum(out.eligible.astype(z.dtype), axis=(0, 1))
  return jnp.sum(total / jnp.maximum(count, 1.0))


def mean_depth(out: RoutingOutput) -> jax.Array:
  """The mean block applications per real token (padding left out).

  Unlike :func:`vcrnn_jax.depth.mean_depth`, a real token that took no
  step (a capacity below 1 at step 0) counts, with 0: routing decides for
  every token, and ``block_tokens / real tokens`` is this mean.

  Returns:
    A float scalar in the logits' dtype; 0 without a real token.
  """
  dtype = out.logits.dtype
  real = out.eligible[..., 0]
  return (jnp.sum(out.steps.astype(dtype))
          / jnp.maximum(jnp.sum(real.astype(dtype)), 1.0))


def block_tokens(out: RoutingOutput) -> jax.Array:
  """``[batch]`` int32: the tokens the block computed per sequence,
  ``sum_r k_r`` (with ``selection='threshold'``: those above the
  threshold), which is also ``sum_t steps``.

  Against :func:`vcrnn_jax.depth.per_token`'s ``sum_t N(t)`` for a
  comparison at equal compute; the block's cost per token is the same
  either way, up to attention's quadratic term over ``k_r`` instead of
  ``time``. Filler slots (``k_r(time) - k_r(n)`` of a padded sequence)
  are not counted.
  """
  return jnp.sum(out.selected, axis=(1, 2), dtype=jnp.int32)


def _check_choice(name: str, value: Any, allowed: tuple) -> str:
  if value not in allowed:
    raise ValueError(f'{name} must be one of {allowed}, got {value!r}.')
  return value


def _spec(max_depth, capacity, gate, gate_scale, selection) -> _Spec:
  gate = _check_choice('gate', gate, GATES)
  if gate_scale is None:
    gate_scale = _GATE_SCALE[gate]
  if (isinstance(gate_scale, bool) or not isinstance(gate_scale, numbers.Real)
      or not 0.0 < gate_scale < math.inf):
    raise ValueError(f'gate_scale must be a positive number or None, got '
                     f'{gate_scale!r}.')
  return _Spec(check_positive_int('max_depth', max_depth),
               capacities(capacity, max_depth), gate, float(gate_scale),
               _check_choice('selection', selection, SELECTIONS))


def _init_fn(kernel_init, router_bias: float, max_depth: int, param_dtype):
  """``init(key, features, block_params)``: the block's params, one
  router per step beside them (MoR: theta_r)."""

  def init(key, features, block_params):
    features = check_positive_int('features', features)
    dtype = param_dtype or param_dtype_of(block_params)
    return {'block': block_params, 'router': {
        'kernel': utils.initialize(kernel_init, key, (features, max_depth),
                                   dtype),
        'bias': jnp.full((max_depth,), router_bias, dtype)}}
  return init


def _check_block(caller: str, block: Callable, params: Any, h: jax.Array,
                 extra: Any, key: Any) -> None:
  """One line unless ``block`` keeps the gathered ``h``'s shape and dtype."""
  b, t, _ = h.shape
  context = RouteContext(
      mask=jnp.ones((b, t), bool), step=jnp.zeros((), jnp.int32),
      key=None if key is None else jax.random.fold_in(key, 0), extra=extra,
      positions=jnp.zeros((b, t), jnp.int32))
  out = jax.eval_shape(block, params, h, context)
  if getattr(out, 'shape', None) != h.shape or out.dtype != h.dtype:
    got = (f'shape {tuple(out.shape)} and dtype {out.dtype}'
           if hasattr(out, 'shape') else type(out).__name__)
    raise ValueError(f"{caller}: block must return the gathered h's shape "
                     f'{h.shape} and dtype {h.dtype}, got {got}.')


def _gate(spec: _Spec, z: jax.Array) -> jax.Array:
  """``g = alpha sigmoid(z)`` (MoR) or ``alpha z`` (MoD's raw weight)."""
  g = jax.nn.sigmoid(z) if spec.gate == 'sigmoid' else z
  return spec.gate_scale * g


def _choose(spec: _Spec, table: np.ndarray, r: int, z, eligible, lengths):
  """``(S^r [B, T] bool, width)``: top-k_r of the eligible tokens, or
  those above the threshold (then all ``T`` slots are gathered)."""
  if spec.selection == 'threshold':
    return eligible & (z > 0), z.shape[1]
  width = int(table[r, -1])                  # k_r(time): the static slots
  k = jnp.asarray(table[r], jnp.int32)[lengths]                    # k_r(n)
  # lax.top_k breaks ties by the lower position; ineligible tokens score
  # -inf, and k_r(n) <= |S^{r-1}| keeps them out.
  _, top = lax.top_k(jnp.where(eligible, z, -jnp.inf), width)
  rows = jnp.arange(z.shape[0])[:, None]
  keep = jnp.arange(width, dtype=jnp.int32)[None, :] < k[:, None]
  return jnp.zeros_like(eligible).at[rows, top].set(
      keep, unique_indices=True), width


def _route(block, spec: _Spec, params, h, chosen, width, z, r, key, extra):
  """Gathers ``S^r`` in its original order, applies the block there and
  scatters ``h + g (B(h) - h)`` back; the other tokens keep ``h``."""
  # Selected tokens first, each group in position order: a stable
  # partition, so the gathered tokens keep their causal order.
  order = jax.vmap(compaction.order_rows)(chosen)[:, :width]
  live = jnp.take_along_axis(chosen, order, axis=1)
  gathered = jnp.take_along_axis(h, order[..., None], axis=1)
  gathered = jnp.where(live[..., None], gathered, 0.0)   # fillers: zeros
  step = jnp.asarray(r, jnp.int32)
  context = RouteContext(
      mask=live, step=step,
      key=None if key is None else jax.random.fold_in(key, r), extra=extra,
      positions=order)
  new = block(params['block'], gathered, context)
  g = _gate(spec, jnp.take_along_axis(z, order, axis=1))[..., None]
  delta = jnp.where(live[..., None], g * (new - gathered), 0.0)   # (MoD 1)
  rows = jnp.arange(h.shape[0])[:, None]
  return h.at[rows, order].add(delta, unique_indices=True)


def per_token(
    block: Callable[[Any, jax.Array, RouteContext], jax.Array],
    *,
    max_depth: int,
    capacity: float | Sequence[float] | None = None,
    gate: str = 'sigmoid',
    gate_scale: float | None = None,
    selection: str = 'top_k',
    router_bias: float = 0.0,
    kernel_init: Any = utils.default_kernel_init,
    param_dtype: Any = None,
    dtype: Any = None,
) -> Routing:
  r"""Expert-choice routing over recursion steps: Mixture-of-Recursions.

  From ``h^0 = h``, at recursion step ``r = 0, ..., M - 1`` a router of
  its own scores every token, the tokens still routed compete, and the
  shared block ``B`` runs on the winners only:

  .. math::

    z_t^r = w_r \cdot h_t^r + b_r, \qquad
    g_t^r = \alpha\,\sigma(z_t^r)\ \text{(gate='sigmoid', MoR)} \ \text{or}\
      \alpha\, z_t^r\ \text{(gate='logit', MoD)}

    S^r = \operatorname{top-}k_r\{t \in S^{r-1}\}\ \text{by}\ z_t^r,
      \qquad S^{-1} = \{t : \mathrm{mask}_t\}

    h_t^{r+1} = \begin{cases}
      h_t^r + g_t^r\,\big(B(H^r_{S^r})_t - h_t^r\big) & t \in S^r \\
      h_t^r & \text{otherwise}
    \end{cases}

  ``k_r = max(1, floor(c_r n))`` of a sequence of ``n`` real tokens
  (:func:`capacity_tokens`); ``H^r_{S^r}`` is the ``[k_r, features]``
  array of the selected tokens in their original order. The update is MoD's
  Eq. 1 (``x^{l+1}_i = r_i f_i(\tilde X^l) + x^l_i`` above the
  ``beta``-percentile of the router weights, ``x^l_i`` below) and the
  expert-choice update of MoR Sec. 2.2.1 (``H^{r+1}_t = g^r_t f(H^r_t,
  \Phi') + H^r_t`` for the selected tokens), with the residual branch
  ``f = B - identity``, since ``block`` is a whole residual block. Top-k is
  the percentile with ``beta = 1 - k_r / n``; hierarchical filtering (MoR)
  makes a token that missed step ``r`` miss every later step, so a token's
  depth is the steps it survived (``out.steps``), and the block computes
  exactly ``sum_r k_r`` tokens of each sequence (:func:`block_tokens`).
  The selection carries no gradient; the router learns through ``g``, which
  multiplies the block's update (MoD Sec. 3.4), and through :func:`aux_loss`.

  **Causality.** Top-k compares a token with the later ones of its
  sequence, so in a causal language model a token's routing would depend on
  the future, which decoding does not have. ``selection='threshold'`` routes
  by ``z_t^r > 0`` (sigmoid above 1/2) among ``S^{r-1}`` instead, which
  reads each token alone: with a causal block, changing a later token leaves
  the earlier ones' outputs unchanged. Train with ``'top_k'`` and
  ``aux_loss`` (MoD Sec. 3.5's first remedy; MoR's ``aux_loss``
  sampling), then route by threshold at inference; the number of tokens is
  then data dependent, and this implementation gathers all ``time`` slots
  (the selected first, the rest masked), so it saves no computation there.

  Where it departs from the papers and from MoR's code
  (``raymin0223/mixture_of_recursions``, ``expert_choice_router.py``):

  * Update: MoR's code scatter-adds ``g * B(h)``, the Llama decoder
    layer's output *with* its residual (``h + g h + g f(h)``); this
    implements the papers' equation, ``h + g f(h)``.
  * Router: one per step, as MoR's code (``theta_r``), with a bias (MoR's
    linear router has none): top-k ignores a shift, but the threshold rule
    and the aux loss read it, so the BCE can learn the capacity's base rate.
  * ``gate_scale`` ``alpha``: MoR's configurations use 0.1 with the sigmoid
    (the default here); with ``gate='logit'`` the default is 1, MoD's raw
    weight.
  * Capacity: of the sequence's real tokens, not of its padded length; MoR
    trains on packed sequences without padding. Its default schedule is
    MoR's, ``c_r = (M - r) / M``.
  * Padding is never selected and keeps its input; the filler slots of a
    padded sequence (``k_r(time) - k_r(n)``) hold zeros, are masked in the
    context and their results are discarded.

  Args:
    block: ``block(params, h, context) -> h``, pure, shape and dtype kept,
      for any number of tokens ``h`` ``[batch, k, features]``; ``context``
      is a :class:`RouteContext` (mask the filler slots; a causal block
      also masks by ``context.positions``).
    max_depth: ``M``, the recursion steps (the most a token takes).
    capacity: the schedule ``c_r`` (:func:`capacities`): None (MoR's
      linear ``(M - r) / M``), one fraction for every step, or ``M``
      non-increasing fractions in ``(0, 1]``.
    gate: ``'sigmoid'`` (MoR) or ``'logit'`` (MoD), how ``z`` weighs the
      update.
    gate_scale: ``alpha`` (> 0); None: 0.1 with the sigmoid, 1 with the
      logit.
    selection: ``'top_k'`` (expert choice, for training and non-causal
      models) or ``'threshold'`` (``z > 0``, causal, for inference).
    router_bias: initial ``b_r``.
    kernel_init: initialiser of the routers' ``w`` (LeCun normal).
    param_dtype: the routers' dtype; None: the block params'.
    dtype: the computation dtype (Flax's meaning), as for
      :func:`vcrnn_jax.depth.per_token`.

  Returns:
    A :class:`Routing`; ``apply`` returns ``h^M`` (padding: its input, in
    the computation dtype) and a :class:`RoutingOutput`.

  References:
    Bae et al., Mixture-of-Recursions, 2025, Sec. 2.2.1; Raposo et al.,
    Mixture-of-Depths, 2024, Sec. 3.4-3.5, Eq. 1.
  """
  block = check_function('block', block)
  spec = _spec(max_depth, capacity, gate, gate_scale, selection)
  dtype = check_dtype('dtype', dtype, optional=True)
  m = spec.max_depth

  def apply(params, h, mask=None, *, key=None, extra=None,
            caller='per_token.apply'):
    params, h, mask = depth.prepare_inputs(
        caller, params, h, mask, extra, dtype, unit='router',
        unit_name="the routers'", min_time=1)
    _check_block(caller, block, params['block'], h, extra, key)
    time = h.shape[1]
    # k_r(n) for every n in 0..time, one row per step: static.
    table = np.array([capacity_tokens(n, max_depth=m, capacity=spec.capacity)
                      for n in range(time + 1)], np.int32).T
    lengths = jnp.sum(mask, axis=1, dtype=jnp.int32)
    w, b = params['router']['kernel'], params['router']['bias']
    eligible, taken = mask, []
    for r in range(m):
      z = h @ w[:, r] + b[r]                                       # [B, T]
      chosen, width = _choose(spec, table, r, z, eligible, lengths)
      taken.append((jnp.where(eligible, z, 0.0), chosen, eligible))
      h = _route(block, spec, params, h, chosen, width, z, r, key, extra)
      eligible = chosen                       # hierarchical filtering
    logits, chosen, eligible = (jnp.stack(a, axis=-1) for a in zip(*taken))
    return h, RoutingOutput(
        steps=jnp.sum(chosen, axis=-1, dtype=jnp.int32), logits=logits,
        probs=jnp.where(eligible, jax.nn.sigmoid(logits), 0.0),
        selected=chosen, eligible=eligible)

  return Routing(_init_fn(kernel_init, router_bias, m, param_dtype), apply)
