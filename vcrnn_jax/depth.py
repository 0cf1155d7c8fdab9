r"""Adaptive depth for Transformer-style blocks: per token and per example.

A Universal Transformer (Dehghani et al. 2019) applies one shared block
again and again; with dynamic halting (its Sec. 2.2) each position decides
with ACT (Graves 2016) how many applications it takes. A PonderNet-style
exit (Banino et al. 2021) decides per example instead, or per position with
PonderNet's halting distribution. This module gives them for any pure block

.. code-block:: python

  block(params, h, context) -> h   # h: [batch, time, features]

(a Flax module's ``apply`` in a lambda will do; the block reads the padding
mask, the depth step and a key from its :class:`BlockContext`):

* :func:`per_token`: ACT per position, Universal-Transformer style; a
  halted position's state is frozen and still serves as key and value to
  the positions that go on; the ponder ``N + R`` of every position comes
  back for the loss (:func:`mean_ponder`), and the depth it took
  (:func:`mean_depth`). With ``halting='pondernet'`` every position has
  PonderNet's halting distribution instead: its ``p_n`` come back
  (``probs``) for :func:`vcrnn_jax.ponder.kl_to_geometric`, and the ponder
  is the expected number of steps.
* :func:`per_example`: one halting unit over the masked mean of the
  positions' states (:func:`masked_mean`), with PonderNet's halting
  distribution (its losses are :func:`vcrnn_jax.ponder.kl_to_geometric`
  and, with a ``readout``, :func:`vcrnn_jax.ponder.reconstruction_loss`)
  or with ACT's remainder rule; at inference PonderNet halts by sampling
  or at the median of the halting distribution.

Both run on :func:`vcrnn_jax.loops.halting_loop` over the batch axis: the
loop stops when every position (or example) has halted, not at
``max_depth``; its backward pass keeps ``loop.checkpoints`` carries, so
memory does not grow with ``max_depth``; ``loop.compact_rows`` gathers the
examples still running into smaller batches, so the block runs on them
only; ``loop='scan'`` is the masked ``lax.scan`` over ``max_depth`` that the
while loop is tested against. Padded positions (``mask`` False) never
count: they keep their input, take no step, add no ponder and are left out
of the pooled state; an example without a real position takes no step.

>>> import jax, jax.numpy as jnp
>>> from vcrnn_jax import depth
>>> def block(params, h, context):
...   del context                      # no attention: positions independent
...   return h + jnp.tanh(h @ params['w'])
>>> ut = depth.per_token(block, max_depth=6)
>>> params = ut.init(jax.random.key(0), 4, {'w': jnp.eye(4)})
>>> h = jax.random.normal(jax.random.key(1), (2, 5, 4))
>>> mask = jnp.arange(5)[None] < jnp.array([[5], [3]])   # lengths 5, 3
>>> out_h, out = ut.apply(params, h, mask)
>>> out_h.shape, out.ponder.shape, out.steps[1, 3:].tolist()
((2, 5, 4), (2, 5), [0, 0])
>>> loss = jnp.mean(out_h ** 2) + 0.01 * depth.mean_ponder(out)   # Eq. 12

References:
  Graves, Adaptive Computation Time for Recurrent Neural Networks, 2016.
  Dehghani, Gouws, Vinyals, Uszkoreit, Kaiser, Universal Transformers, 2019.
  Banino, Balaguer, Blundell, PonderNet: Learning to Ponder, 2021.
"""

from collections.abc import Callable
import functools
import numbers
from typing import Any, NamedTuple
import warnings

import jax
from jax import lax
import jax.numpy as jnp

from vcrnn_jax import act, loops, ponder, pondering, utils
from vcrnn_jax.core import (
  check_dtype,
  check_function,
  check_positive_int,
  field_docs,
  param_dtype_of,
)

__all__ = [
    'HALTING_READS',
    'HALTING_RULES',
    'BlockContext',
    'Depth',
    'ExampleDepthOutput',
    'TokenDepthOutput',
    'masked_mean',
    'mean_depth',
    'mean_ponder',
    'per_example',
    'per_token',
    'prepare_inputs',
]

HALTING_READS = ('input', 'output')
HALTING_RULES = ('pondernet', 'act')

# One source for each method's settings: ACT's (also tensor2tensor's UT
# defaults, act_epsilon 0.01 and act_halting_bias_init 1.0) and PonderNet's.
_ACT = utils.defaults(act.adaptive)
_PONDER = utils.defaults(ponder.pondernet)

# fold_in constant of the halting draws ('DEPT'), apart from the block's
# per-step keys fold_in(key, n), n < max_depth.
_HALT_STREAM = 0x44455054


@field_docs
class BlockContext(NamedTuple):
  """What a block is given beside its params and ``h`` at every depth step.

  Attributes:
    mask: [batch, time] bool, the real positions (False: padding); a block
      that mixes positions should attend only to these
    step: int32 scalar, the 0-based depth step n (for a per-step timing
      signal, UT Sec. 2.1)
    key: this step's PRNG key, fold_in(key, n), or None (no dropout)
    extra: what the caller passed as ``extra`` (e.g. an encoder's output
      for cross-attention), leaves [batch, ...]; gathered with the rows
      when the loop compacts them
  """
  mask: jax.Array
  step: jax.Array
  key: jax.Array | None
  extra: Any


class Depth(NamedTuple):
  """Adaptive depth around a block, as two pure functions.

  ``init(key, features, block_params) -> params`` adds a halting unit to
  the block's params: ``{'block': block_params, 'halting': {'kernel':
  [features, 1], 'bias': [1]}}``.

  ``apply(params, h, mask=None, *, key=None, extra=None, caller=...) ->
  (h, output)`` runs the block to each position's (or example's) depth;
  ``h`` is ``[batch, time, features]``, ``mask`` ``[batch, time]`` bool
  (None: no padding), ``key`` the PRNG key the block's per-step keys are
  folded from (and PonderNet's sampled exits drawn from), ``extra`` a
  pytree of ``[batch, ...]`` leaves handed to the block in its
  :class:`BlockContext`; ``caller`` is the function its errors and warnings
  name (``'per_token.apply'``; a Flax module passes its own name).

  The block (and a readout) runs on every example of the batch the loop
  holds, halted and empty ones included, whose results are discarded, and
  ``loop='scan'`` runs it past the last step too: it must stay finite
  there, or a NaN reaches the gradients (a masked mean over no positions
  must not divide by zero; :func:`masked_mean` does not). With
  ``compact_rows`` the block sees smaller batches, so a dropout mask drawn
  from its key differs from the uncompacted loop's.
  """
  init: Callable[..., Any]
  apply: Callable[..., tuple[jax.Array, Any]]


@field_docs
class TokenDepthOutput(NamedTuple):
  """Per-position statistics of :func:`per_token` (0 at padding;
  ``M = max_depth``).

  With ``halting='pondernet'`` it has the fields
  :func:`vcrnn_jax.ponder.kl_to_geometric` reads, so the KL to the
  geometric prior (P3) takes it as it is, per position.

  Attributes:
    ponder: [batch, time] the ponder cost: rho = N + R (ACT Eq. 10), or the
      expected number of steps sum_n n p_n with PonderNet's halting
    steps: [batch, time] int32 N, the block applications a position took
    remainder: [batch, time] the weight of the halting step: R (ACT Eq. 8),
      or p_N with PonderNet's halting
    depth: int32 scalar, the steps the loop took (the batch's largest N)
    probs: [batch, time, M] PonderNet's p_n, zeros after the last step
      taken; None with halting='act'
  """
  ponder: jax.Array
  steps: jax.Array
  remainder: jax.Array
  depth: jax.Array
  probs: jax.Array | None = None


@field_docs
class ExampleDepthOutput(NamedTuple):
  """Per-example outputs of :func:`per_example` (``M = max_depth``).

  It has the fields :func:`vcrnn_jax.ponder.reconstruction_loss` and
  :func:`vcrnn_jax.ponder.kl_to_geometric` read, so PonderNet's loss
  (P3) takes it as it is.

  Attributes:
    output: the readout's answer, sum_n p_n y_n ('train') or y at the
      halting step (inference); None without a readout
    outputs: [batch, M, ...] every y_n, zeros after the last step taken;
      None without a readout
    probs: [batch, M] p_n, zeros after the last step taken
    steps: [batch] int32 N, the block applications (0: no real position)
    ponder: [batch] N + R (Eq. 10) with ACT's rule, the expected number of
      steps sum_n n p_n with PonderNet's
    depth: int32 scalar, the steps the loop took (the batch's largest N)
  """
  output: Any
  outputs: Any
  probs: jax.Array
  steps: jax.Array
  ponder: jax.Array
  depth: jax.Array


class _Spec(NamedTuple):
  """The static settings a depth step needs."""
  max_depth: int
  epsilon: float
  reads: str           # 'input': s^{n-1} feeds the halting unit; 'output': s^n
  rule: str            # 'act' or 'pondernet'
  inference: str       # 'train', 'sample' or 'median'


def masked_mean(h: jax.Array, mask: jax.Array) -> jax.Array:
  """The mean of ``h`` over the real positions: the pooled state.

  Args:
    h: ``[batch, time, features]``.
    mask: ``[batch, time]`` bool; padded positions are left out, whatever
      they hold (NaN included).

  Returns:
    ``[batch, features]``; zeros for an example without a real position.
  """
  total = jnp.sum(jnp.where(mask[..., None], h, 0.0), axis=1)
  count = jnp.sum(mask.astype(h.dtype), axis=1)
  return total / jnp.maximum(count, 1.0)[:, None]


def mean_ponder(out: TokenDepthOutput | ExampleDepthOutput) -> jax.Array:
  r"""The mean ponder over the positions (or examples) that took a step.

  The loss adds ``tau`` times it (ACT Eq. 12, with the batch mean of
  tensor2tensor's ``act_loss``). Padding and empty examples (``steps``
  0) are left out of the mean, where tensor2tensor's counts them.

  Args:
    out: a :class:`TokenDepthOutput` or an :class:`ExampleDepthOutput`.

  Returns:
    A scalar.
  """
  took = out.steps > 0
  count = jnp.sum(took.astype(out.ponder.dtype))
  return (jnp.sum(jnp.where(took, out.ponder, 0.0))
          / jnp.maximum(count, 1.0))


def mean_depth(out: TokenDepthOutput | ExampleDepthOutput) -> jax.Array:
  """The mean depth realised: block applications per position (or example)
  that took a step.

  What the halting learned, against ``max_depth`` (the bound) and
  ``out.depth`` (the steps the loop ran, the batch's deepest). Padding and
  empty examples (``steps`` 0) are left out, as in :func:`mean_ponder`.

  Args:
    out: a :class:`TokenDepthOutput` or an :class:`ExampleDepthOutput`.

  Returns:
    A float scalar in the ponder's dtype; 0 when nothing took a step.

  Example:

    >>> import jax.numpy as jnp
    >>> from vcrnn_jax import depth
    >>> out = depth.TokenDepthOutput(
    ...     ponder=jnp.zeros((1, 3)), steps=jnp.array([[2, 4, 0]]),
    ...     remainder=jnp.zeros((1, 3)), depth=jnp.array(4))
    >>> float(depth.mean_depth(out))                  # (2 + 4) / 2
    3.0
  """
  took = out.steps > 0
  dtype = out.ponder.dtype
  count = jnp.sum(took.astype(dtype))
  return (jnp.sum(jnp.where(took, out.steps, 0).astype(dtype))
          / jnp.maximum(count, 1.0))


def _check_epsilon(epsilon: Any, low_closed: bool) -> float:
  ok = (not isinstance(epsilon, bool) and isinstance(epsilon, numbers.Real)
        and (0.0 <= epsilon if low_closed else 0.0 < epsilon)
        and epsilon < 1.0)
  if not ok:
    allowed = '[0, 1)' if low_closed else '(0, 1)'
    raise ValueError(f'epsilon must be a number in {allowed}, got '
                     f'{epsilon!r}.')
  return float(epsilon)


def _check_choice(name: str, value: Any, allowed: tuple) -> str:
  if value not in allowed:
    raise ValueError(f'{name} must be one of {allowed}, got {value!r}.')
  return value


def _init_fn(kernel_init, halting_bias: float, param_dtype):
  """``init(key, features, block_params)``: the block's params, a halting
  unit beside them."""

  def init(key, features, block_params):
    features = check_positive_int('features', features)
    dtype = param_dtype or param_dtype_of(block_params)
    return {'block': block_params,
            'halting': pondering.dense_params(kernel_init, key, features, 1,
                                              halting_bias, dtype)}
  return init


def prepare_inputs(caller: str, params: dict, h: Any, mask: Any, extra: Any,
                   dtype: Any, *, unit: str = 'halting',
                   unit_name: str = "the halting unit's",
                   min_time: int = 0) -> tuple[dict, jax.Array, jax.Array]:
  """What a depth method's ``apply`` checks and casts before its loop.

  ``h`` and the params' ``unit`` (the halting unit of :func:`per_token`
  and :func:`per_example`, the routers of
  :func:`vcrnn_jax.routing.per_token`) in the computation dtype, and a
  bool ``mask``, all checked: errors are one line that names ``caller``.
  The computation dtype is ``dtype``, or else the unit's params' (which
  follow the block's): a floating ``h`` of another dtype is cast, with a
  warning that names the choice (and points at the caller of ``apply``).

  Args:
    caller: the function the errors and warnings name
      (``'per_token.apply'``).
    params: ``{'block': ..., unit: {'kernel': [features, ...], ...}}``.
    h: ``[batch, time, features]``, ``time >= min_time``.
    mask: ``[batch, time]``, the real positions; None: all real.
    extra: a pytree whose leaves lead with the batch axis.
    dtype: the computation dtype, or None (the unit's param dtype).
    unit: the params' entry beside ``'block'``.
    unit_name: how the warning names the unit's owner (``"the halting
      unit's"``, ``"the routers'"``).
    min_time: the fewest positions ``h`` may have.

  Returns:
    ``(params, h, mask)``: the params with the unit cast, ``h`` cast, and
    ``mask`` as bool.

  Raises:
    ValueError: ``h`` is not ``[batch, time, features]`` with ``time >=
      min_time``, its width is not the params', ``mask`` is not ``[batch,
      time]``, or a leaf of ``extra`` does not lead with the batch axis.
  """
  h = jnp.asarray(h)
  if h.ndim != 3 or h.shape[1] < min_time:
    least = f' with time >= {min_time}' if min_time else ''
    raise ValueError(f'{caller}: h must be [batch, time, features]{least}, '
                     f'got shape {tuple(h.shape)}.')
  kernel = params[unit]['kernel']
  if h.shape[-1] != kernel.shape[0]:
    raise ValueError(
        f'{caller}: h has {h.shape[-1]} features, the params were made for '
        f'{kernel.shape[0]} (init(key, features, block_params)).')
  compute = jnp.dtype(dtype if dtype is not None else kernel.dtype)
  if (dtype is None and jnp.issubdtype(h.dtype, jnp.floating)
      and h.dtype != compute):
    warnings.warn(
        f'{caller}: h is {h.dtype} but {unit_name} params are {compute}, so '
        f'it computes in {compute} and returns {compute}; pass '
        f'dtype=jnp.{h.dtype.name} to compute in {h.dtype.name} (the block '
        f'must then return {h.dtype.name}), or give h in {compute}.',
        stacklevel=3)
  h = utils.cast(h, compute)
  params = {**params, unit: jax.tree_util.tree_map(
      lambda a: utils.cast(a, compute), params[unit])}
  if mask is None:
    mask = jnp.ones(h.shape[:2], bool)
  elif tuple(jnp.shape(mask)) != h.shape[:2]:
    raise ValueError(f'{caller}: mask must be [batch, time] = '
                     f'{h.shape[:2]}, got shape {tuple(jnp.shape(mask))}.')
  for leaf in jax.tree_util.tree_leaves(extra):
    if jnp.ndim(leaf) < 1 or jnp.shape(leaf)[0] != h.shape[0]:
      raise ValueError(
          f'{caller}: every leaf of extra must lead with the batch axis '
          f'({h.shape[0]}), got shape {tuple(jnp.shape(leaf))}.')
  return params, h, jnp.asarray(mask, bool)


def _context(mask, extra, key, n) -> BlockContext:
  key = None if key is None else jax.random.fold_in(key, n)
  return BlockContext(mask=mask, step=n, key=key, extra=extra)


def _check_block(caller: str, fun: Callable, name: str, params: Any,
                 h: jax.Array, mask, extra, key, same_shape: bool):
  """The shape of ``fun``'s result, traced abstractly; one line if wrong."""
  context = _context(mask, extra, key, jnp.zeros((), jnp.int32))
  out = jax.eval_shape(fun, params, h, context)
  if same_shape:
    ok = getattr(out, 'shape', None) == h.shape and out.dtype == h.dtype
    want = f"h's shape {h.shape} and dtype {h.dtype}"
  else:
    ok = getattr(out, 'shape', ())[:1] == h.shape[:1]
    want = f'an array [batch, ...] with batch {h.shape[0]}'
  if not ok:
    got = (f'shape {tuple(out.shape)} and dtype {out.dtype}'
           if hasattr(out, 'shape') else type(out).__name__)
    hint = ''
    if same_shape and getattr(out, 'shape', None) == h.shape:
      hint = (f' (a Flax block computes in {h.dtype} with '
              f'dtype=jnp.{h.dtype.name})')
    raise ValueError(f'{caller}: {name} must return {want}, got '
                     f'{got}{hint}.')
  return out


def _act_rule(spec: _Spec, cum: jax.Array, h: jax.Array, n: jax.Array):
  """ACT's halting and remainder (Eq. 6-8, 13) on halting values ``h``.

  ``cum`` is the sum of the earlier steps' values. Returns ``(p, halts)``:
  the step's weight (``h``, or ``R = 1 - cum`` on the halting step) and
  whether the unit halts here. A value that is not finite halts at once, so
  a NaN cannot keep the loop running to ``max_depth``. Comparisons carry no
  gradient: ``N`` is a constant for differentiation (ACT Sec. 2.2).
  """
  halts = ((cum + h >= 1.0 - spec.epsilon)
           | (n + 1 >= spec.max_depth) | ~jnp.isfinite(h))         # (7, 13)
  return jnp.where(halts, 1.0 - cum, h), halts                     # (6, 8)


def _act_halting(spec: _Spec, rows, lam, running, n, u):
  """ACT's halting (Eq. 6-8, 13): ``(p_n, halts, rows)``.

  ``rows`` holds ``cum`` and ``remainder`` of the shape of ``lam``
  (``[B]`` per example, ``[B, T]`` per position); ``running`` marks the
  entries still pondering, the others are left as they are.
  """
  del u  # ACT halts deterministically.
  p, halts = _act_rule(spec, rows.cum, lam, n)
  go_on = running & ~halts
  return p, halts, rows._replace(
      cum=jnp.where(go_on, rows.cum + lam, rows.cum),
      remainder=jnp.where(running & halts, 1.0 - rows.cum, rows.remainder))


def _pondernet_halting(spec: _Spec, rows, lam, running, n, u):
  """PonderNet's halting (P2, P4, P5): ``(p_n, halts, rows)``.

  ``rows`` holds ``cum`` and ``unhalted`` of the shape of ``lam`` (per
  example or per position), ``u`` the P5 draws with a last axis of ``M``;
  ``running`` as for :func:`_act_halting`.

  The step where the unroll stops (the mass reaches ``1 - epsilon``, or
  ``n = M``) is the last allowed one: ``lambda := 1`` there (P2), so the
  ``p_n`` of every example (or position) sum to 1, as in
  :func:`vcrnn_jax.ponder.pondernet`.
  """
  stop = ((rows.cum + lam * rows.unhalted >= 1.0 - spec.epsilon)
          | (n + 1 >= spec.max_depth) | ~jnp.isfinite(lam))         # (P4)
  lam = jnp.where(stop, 1.0, lam)                                   # (P2)
  p = lam * rows.unhalted                                           # (P2)
  if spec.inference == 'sample':
    draw = lax.dynamic_index_in_dim(u, n, u.ndim - 1, keepdims=False)
    halts = stop | (draw < lam)                                     # (P5)
  elif spec.inference == 'median':
    halts = stop | (rows.cum + p >= 0.5)                            # (P5)
  else:
    halts = stop
  return p, halts, rows._replace(
      cum=jnp.where(running, rows.cum + p, rows.cum),
      unhalted=jnp.where(running, rows.unhalted * (1.0 - lam),
                         rows.unhalted))


class _TokenRows(NamedTuple):
  """Per-example carry of :func:`per_token`'s loop (positions inside)."""
  state: jax.Array      # [B, T, F] s^n; a halted position keeps its last
  acc: jax.Array        # [B, T, F] sum_n p^n s^n (Eq. 9)
  live: jax.Array       # [B, T] bool, the positions still pondering
  cum: jax.Array        # [B, T] ACT: sum of h^n not halting; PonderNet: sum p_j
  steps: jax.Array      # [B, T] int32 N
  remainder: jax.Array  # [B, T] R (PonderNet: p_N), set on the halting step
  # PonderNet only, () with ACT (whose carry stays as it was):
  unhalted: Any         # [B, T] prod_{j<n} (1 - lambda_j)
  probs: Any            # [B, T, M] p_n


def _token_rows(h: jax.Array, mask: jax.Array, spec: _Spec) -> _TokenRows:
  """The loop's rows before the first depth step."""
  zeros = jnp.zeros(h.shape[:2], h.dtype)
  pondernet = spec.rule == 'pondernet'
  return _TokenRows(
      state=h, acc=jnp.zeros_like(h), live=mask, cum=zeros,
      steps=jnp.zeros(h.shape[:2], jnp.int32), remainder=zeros,
      unhalted=jnp.ones(h.shape[:2], h.dtype) if pondernet else (),
      probs=(jnp.zeros(h.shape[:2] + (spec.max_depth,), h.dtype)
             if pondernet else ()))


def _token_step(block, spec: _Spec, shared, inputs, rows: _TokenRows,
                running, n):
  """Depth step ``n`` of every position, for ``halting_loop``."""
  params, key = shared
  mask, extra, uniforms = inputs
  new = block(params['block'], rows.state, _context(mask, extra, key, n))
  feats = rows.state if spec.reads == 'input' else new
  lam = pondering.halting_probability(params['halting'], feats)    # [B, T]
  live = rows.live & running[:, None]
  halting = _act_halting if spec.rule == 'act' else _pondernet_halting
  p, halts, nxt = halting(spec, rows, lam, live, n, uniforms)
  # The state's weights: p_n in training, one-hot at the halting step at
  # inference (P5), so the state passed on is s^N there.
  w = p if spec.inference == 'train' else halts.astype(p.dtype)
  w = jnp.where(live, w, 0.0)[..., None]
  live3 = live[..., None]
  nxt = nxt._replace(
      # A halted position is frozen, but the block still reads it (as key
      # and value) while the others go on.
      state=jnp.where(live3, new, rows.state),
      acc=rows.acc + jnp.where(live3, w * new, 0.0),                # (9)
      live=live & ~halts,
      steps=rows.steps + live.astype(jnp.int32))
  if spec.rule == 'pondernet':
    nxt = nxt._replace(
        remainder=jnp.where(live & halts, p, rows.remainder),
        probs=lax.dynamic_update_index_in_dim(
            rows.probs, jnp.where(live, p, 0.0), n, 2))
  return nxt, running & jnp.any(nxt.live, axis=-1)


def per_token(
    block: Callable[[Any, jax.Array, BlockContext], jax.Array],
    *,
    max_depth: int,
    halting: str = 'act',
    epsilon: float | None = None,
    halting_bias: float | None = None,
    inference: str = 'train',
    halting_reads: str | None = None,
    loop: loops.LoopConfig | str = loops.LoopConfig(),
    kernel_init: Any = utils.default_kernel_init,
    param_dtype: Any = None,
    dtype: Any = None,
) -> Depth:
  r"""Halting per position over a shared block: Universal Transformer ACT
  (or PonderNet per position).

  The block ``B`` maps all positions ``S = (s_1, ..., s_T)`` at once. From
  ``s_t^0``, the input at position ``t``, at depth step ``n = 1, 2, ...``
  every position still pondering takes (``h_t^n`` is ACT's halting value)

  .. math::

    h_t^n = \sigma(w_h \cdot s_t^{n-1} + b_h)\ \text{(reads='input')}
      \quad\text{or}\quad \sigma(w_h \cdot s_t^n + b_h)\ \text{('output')}
                                                         \quad (5)

    s_t^n = B(S^{n-1})_t, \quad S^{n-1} \text{ with halted positions frozen}

    N(t) = \min\{M, \min\{n' : \textstyle\sum_{n \le n'} h_t^n
        \ge 1 - \epsilon\}\}                                 \quad (7, 13)

    R(t) = 1 - \textstyle\sum_{n < N(t)} h_t^n, \quad
    p_t^n = R(t) \text{ if } n = N(t) \text{ else } h_t^n     \quad (6, 8)

    \mathrm{out}_t = \textstyle\sum_{n \le N(t)} p_t^n s_t^n,  \quad
    \rho_t = N(t) + R(t)                                      \quad (9, 10)

  (ACT paper equation numbers; the UT paper's Sec. 2.2 and the
  dynamic-halting listing of its appendix apply them per position.) The
  loss adds ``tau *`` :func:`mean_ponder` (Eq. 12). ``N(t)`` is a constant
  for differentiation (ACT Sec. 2.2); gradients reach the halting unit
  through ``R(t)`` and the ``p_t^n``.

  ``halting='pondernet'`` puts PonderNet's halting distribution (the
  equations of :func:`vcrnn_jax.ponder.pondernet` and of
  :func:`per_example`, numbered as there) on every real position ``t``
  instead, with its own ``lambda_t^n``; the block, the frozen halted
  positions and the loop are as above:

  .. math::

    \lambda_t^n = \sigma(w_\lambda \cdot s_t^n + b_\lambda)\
      \text{(reads='output', the default)} \quad\text{or}\quad
      \sigma(w_\lambda \cdot s_t^{n-1} + b_\lambda)\ \text{('input')}
                                                              \quad (P1)

    p_t^n = \lambda_t^n \textstyle\prod_{j<n} (1 - \lambda_t^j), \quad
    \lambda_t^{N(t)} := 1                                     \quad (P2)

    N(t) = \min\{M, \min\{n' : \textstyle\sum_{n \le n'} p_t^n
        \ge 1 - \epsilon\}\}                                  \quad (P4)

    \mathrm{out}_t = \textstyle\sum_{n \le N(t)} p_t^n s_t^n, \quad
    \rho_t = \textstyle\sum_{n \le N(t)} n\, p_t^n

    L = \mathcal{L}(\mathrm{out}) + \beta \textstyle\sum_t
        \mathrm{KL}(p_t \,\|\, p_G), \quad
    p_G(n) = \lambda_p (1 - \lambda_p)^{n - 1}                \quad (P3)

  so the ``p_t^n`` of a position sum to 1 (``out.probs``, ``[batch, time,
  M]``); ``rho_t`` is the expected number of steps and ``out.remainder``
  the last step's ``p_t^{N(t)}``. ``N(t)`` is a constant for
  differentiation; gradients reach the halting unit through every
  ``p_t^n``. The KL term is :func:`vcrnn_jax.ponder.kl_to_geometric` of
  ``out`` (``[batch]``, summed over the positions; padding, which takes no
  step, adds 0). The task loss reads the mean field ``out_t``, where
  PonderNet's P3 weighs a loss of every step's prediction (``sum_n p_n
  L(y_n)``, which :func:`per_example` gives with a ``readout``). At
  inference (P5) ``inference='sample'`` halts a position at step ``n``
  with probability ``lambda_t^n`` (drawn from ``key``), and ``'median'``
  where ``sum_{j <= n} p_t^j`` first reaches 1/2; either passes on
  ``s_t^{N(t)}``, the position stops there (frozen, still read by the
  others, so theirs are not the training path's states), and ``probs``
  end at that step.

  >>> import jax, jax.numpy as jnp
  >>> from vcrnn_jax import depth, ponder
  >>> def block(params, h, context):
  ...   del context                      # no attention: positions independent
  ...   return h + jnp.tanh(h @ params['w'])
  >>> net = depth.per_token(block, max_depth=6, halting='pondernet')
  >>> params = net.init(jax.random.key(0), 4, {'w': jnp.eye(4)})
  >>> h = jax.random.normal(jax.random.key(1), (2, 5, 4))
  >>> mask = jnp.arange(5)[None] < jnp.array([[5], [3]])   # lengths 5, 3
  >>> out_h, out = net.apply(params, h, mask)
  >>> out.probs.shape, out.steps[1, 3:].tolist()
  ((2, 5, 6), [0, 0])
  >>> kl = ponder.kl_to_geometric(out, 0.2, mask)          # [batch] (P3)
  >>> kl_mean = jnp.sum(kl) / jnp.sum(mask, dtype=kl.dtype)  # per position
  >>> loss = jnp.mean(out_h ** 2) + 0.01 * kl_mean          # beta = 0.01

  What the ACT rule follows of tensor2tensor's ``universal_transformer_act``
  (``tensor2tensor/models/research/universal_transformer_util.py`` at
  commit ``bafdc1b6``, lines 1023-1195) and where it differs:

  * Same: one halting unit ``sigmoid(dense(state))`` per position, read
    *before* the block at each step with the default ``halting_reads=
    'input'`` (lines 1093-1114; ``'output'`` reads ``s_t^n``, ACT's Eq. 5);
    its bias starts at 1 and ``epsilon`` is 0.01 (``act_halting_bias_init``
    and ``act_epsilon``, ``universal_transformer.py`` lines 437-438);
    remainders and update counts as lines 1117-1141; the loop stops when
    no position is still pondering (lines 1177-1188).
  * Threshold: halting at ``sum >= 1 - epsilon`` (Eq. 7); tensor2tensor
    halts at ``> 1 - epsilon`` (line 1121). They differ only at equality.
  * Bound: at ``n = M`` a position halts with weight ``R`` (Eq. 13), so its
    weights sum to 1; tensor2tensor stops its update count at ``M`` and
    gives no remainder, so the weights of such a position sum to less.
  * State: ``out_t`` is Eq. 9's sum, tensor2tensor's ``act_type=
    'accumulated'`` (line 1162); its default ``'basic'`` interpolates,
    ``new = w s^n + (1 - w) prev`` (line 1159).
  * Halted positions: their state is frozen (UT Sec. 2.2: "its state is
    simply copied to the next step"), and the block reads the frozen state
    as key and value; tensor2tensor runs the block on every position and
    keeps transforming the halted ones' states (line 1156), freezing only
    their weighted output. Here too the block computes every position of
    an example that still runs; only examples whose positions have all
    halted leave the computation (``loop.compact_rows``).
  * Timing signals (``step_preprocess``, line 1093) are the block's: it
    gets the step in :class:`BlockContext`, and the halting unit reads the
    state without them.
  * Ponder cost: tensor2tensor's ``act_loss`` is ``act_loss_weight *
    reduce_mean(N + R)`` over every position, padding included
    (``universal_transformer.py`` lines 209-221); :func:`mean_ponder`
    leaves padding out.

  Args:
    block: ``block(params, h, context) -> h``, pure, shape and dtype kept;
      ``context`` is a :class:`BlockContext` (mask the padded keys).
    max_depth: ``M``, the most block applications (tensor2tensor:
      ``act_max_steps``, twice the layers).
    halting: ``'act'`` (ACT per position, the Universal Transformer's) or
      ``'pondernet'`` (PonderNet's halting distribution per position).
    epsilon: ``epsilon`` of Eq. 7 (P4); None: the method's (ACT 0.01 in
      ``(0, 1)``, PonderNet 0.05 in ``[0, 1)``).
    halting_bias: initial ``b_h``; None: the method's (ACT 1, PonderNet 0).
    inference: ``'train'``, ``'sample'`` or ``'median'`` (PonderNet only).
    halting_reads: ``'input'`` (``s^{n-1}``, tensor2tensor) or
      ``'output'`` (``s^n``, ACT Eq. 5, PonderNet's P1); None: the
      method's (ACT ``'input'``, PonderNet ``'output'``).
    loop: a :class:`vcrnn_jax.loops.LoopConfig` or its ``kind``; the same
      values and gradients whatever it says (``'scan'``: the masked scan).
    kernel_init: initialiser of ``w_h`` (LeCun normal).
    param_dtype: the halting unit's dtype; None: the block params'.
    dtype: the computation dtype (Flax's meaning): ``h`` and the halting
      unit are cast to it, and the block must return it (a Flax block
      built with the same ``dtype`` does); None: the halting unit's param
      dtype, and a floating ``h`` of another dtype is cast to it with a
      warning (``h`` in bfloat16 over float32 params computes in float32).

  Returns:
    A :class:`Depth`; ``apply`` returns the mean-field ``out`` (padded
    positions: their input, in the computation dtype) and a
    :class:`TokenDepthOutput`.

  References:
    Dehghani et al., Universal Transformers, 2019, Sec. 2.2; Graves,
    Adaptive Computation Time, 2016, Eq. 5-13; Banino et al., PonderNet,
    2021.
  """
  block = check_function('block', block)
  pondernet = halting == 'pondernet'
  if halting_reads is None:    # tensor2tensor's for ACT, P1's for PonderNet
    halting_reads = 'output' if pondernet else 'input'
  spec = _method_spec(max_depth, halting, epsilon, inference, halting_reads)
  if halting_bias is None:
    halting_bias = (_PONDER if pondernet else _ACT).halting_bias
  loop = loops.as_loop_config(loop)
  dtype = check_dtype('dtype', dtype, optional=True)

  def apply(params, h, mask=None, *, key=None, extra=None,
            caller='per_token.apply'):
    params, h, mask = prepare_inputs(caller, params, h, mask, extra,
                                     dtype)
    _check_block(caller, block, 'block', params['block'], h, mask, extra,
                 key, same_shape=True)
    uniforms = _uniforms(spec, key, h.shape[:2], h.dtype, caller)
    final, taken = loops.halting_loop(
        functools.partial(_token_step, block, spec), (params, key),
        (mask, extra, uniforms), _token_rows(h, mask, spec),
        jnp.any(mask, axis=-1), max_steps=spec.max_depth, loop=loop)
    if spec.rule == 'act':
      ponder = final.steps.astype(h.dtype) + final.remainder         # (10)
      probs = None
    else:
      ponder, probs = _expected_steps(final.probs), final.probs
    return jnp.where(mask[..., None], final.acc, h), TokenDepthOutput(
        ponder=ponder, steps=final.steps, remainder=final.remainder,
        depth=taken, probs=probs)

  return Depth(_init_fn(kernel_init, halting_bias, param_dtype), apply)


class _ExampleRows(NamedTuple):
  """Per-example carry of :func:`per_example`'s loop."""
  state: jax.Array      # [B, T, F] h^n (padded positions keep their input)
  acc: jax.Array        # [B, T, F] sum_n w_n h^n
  # (sum_n w_n y_n [B, ...], y_n [B, M, ...]); () without a readout. Not
  # None: a None in the carry misaligns bounded_while_loop's cotangents.
  answer: tuple
  probs: jax.Array      # [B, M] p_n
  cum: jax.Array        # [B] ACT: sum of h_n not halting; PonderNet: sum p_j
  unhalted: jax.Array   # [B] PonderNet: prod_{j<n} (1 - lambda_j)
  remainder: jax.Array  # [B] ACT: R
  steps: jax.Array      # [B] int32 N


def _example_step(block, readout, spec: _Spec, shared, inputs,
                  rows: _ExampleRows, running, n):
  """Depth step ``n`` of every example, for ``halting_loop``."""
  params, key = shared
  mask, extra, uniforms = inputs
  context = _context(mask, extra, key, n)
  new = block(params['block'], rows.state, context)
  new = jnp.where(mask[..., None], new, rows.state)    # padding keeps h
  feats = masked_mean(rows.state if spec.reads == 'input' else new, mask)
  lam = pondering.halting_probability(params['halting'], feats)    # [B]
  halting = _act_halting if spec.rule == 'act' else _pondernet_halting
  p, halts, nxt = halting(spec, rows, lam, running, n, uniforms)
  # The answer's weights: p_n in training, one-hot at the halting step at
  # inference (P5), so the state passed on is h^N there.
  w = p if spec.inference == 'train' else halts.astype(p.dtype)
  w = jnp.where(running, w, 0.0)
  on = running[:, None, None]
  nxt = nxt._replace(
      state=jnp.where(on, new, rows.state),
      acc=rows.acc + jnp.where(on, w[:, None, None] * new, 0.0),
      probs=lax.dynamic_update_index_in_dim(
          rows.probs, jnp.where(running, p, 0.0), n, 1),
      steps=rows.steps + running.astype(jnp.int32))
  if readout is not None:
    acc_y, ys = rows.answer
    y = readout(params['block'], new, context)
    y = jnp.where(utils.broadcast_rows(running, y), y, 0.0)
    nxt = nxt._replace(answer=(
        acc_y + utils.cast(utils.broadcast_rows(w, y), y.dtype) * y,
        lax.dynamic_update_index_in_dim(ys, y, n, 1)))
  return nxt, running & ~halts


def _example_rows(h, y_shape, spec: _Spec) -> _ExampleRows:
  """The loop's rows before the first depth step."""
  batch, dtype = h.shape[0], h.dtype
  zeros = jnp.zeros((batch,), dtype)
  answer = ()
  if y_shape is not None:
    y, dt = y_shape.shape, y_shape.dtype
    answer = (jnp.zeros(y, dt),
              jnp.zeros(y[:1] + (spec.max_depth,) + y[1:], dt))
  return _ExampleRows(
      state=h, acc=jnp.zeros_like(h), answer=answer,
      probs=jnp.zeros((batch, spec.max_depth), dtype), cum=zeros,
      unhalted=jnp.ones((batch,), dtype), remainder=zeros,
      steps=jnp.zeros((batch,), jnp.int32))


def _uniforms(spec: _Spec, key, rows: tuple[int, ...], dtype, caller: str):
  """The draws of P5's Bernoulli halting, one per row (an example, or a
  position: ``rows`` is ``(batch,)`` or ``(batch, time)``) and step."""
  if spec.inference != 'sample':
    return None
  if key is None:
    raise ValueError(f"{caller}: key is None; pass key=... (inference="
                     "'sample' samples the halting from it).")
  return jax.random.uniform(jax.random.fold_in(key, _HALT_STREAM),
                            rows + (spec.max_depth,), dtype)


def _expected_steps(probs: jax.Array) -> jax.Array:
  """PonderNet's ponder, ``sum_n n p_n`` over the last axis (``M``)."""
  n = jnp.arange(1, probs.shape[-1] + 1, dtype=probs.dtype)
  return jnp.sum(probs * n.reshape((1,) * (probs.ndim - 1) + (-1,)), axis=-1)


def _method_spec(max_depth, halting, epsilon, inference,
                 halting_reads) -> _Spec:
  """The settings checked; ``epsilon`` None: the method's."""
  rule = _check_choice('halting', halting, HALTING_RULES)
  pondernet = rule == 'pondernet'
  if epsilon is None:
    epsilon = _PONDER.epsilon if pondernet else _ACT.epsilon
  inference = _check_choice('inference', inference, ponder.INFERENCE_MODES)
  if not pondernet and inference != 'train':
    raise ValueError("inference must be 'train' with halting='act' (ACT "
                     f'halts deterministically), got {inference!r}.')
  return _Spec(check_positive_int('max_depth', max_depth),
               _check_epsilon(epsilon, low_closed=pondernet),
               _check_choice('halting_reads', halting_reads, HALTING_READS),
               rule, inference)


def per_example(
    block: Callable[[Any, jax.Array, BlockContext], jax.Array],
    *,
    max_depth: int,
    halting: str = 'pondernet',
    epsilon: float | None = None,
    halting_bias: float | None = None,
    inference: str = 'train',
    halting_reads: str = 'output',
    readout: Callable[[Any, jax.Array, BlockContext], jax.Array] | None = None,
    loop: loops.LoopConfig | str = loops.LoopConfig(),
    kernel_init: Any = utils.default_kernel_init,
    param_dtype: Any = None,
    dtype: Any = None,
) -> Depth:
  r"""Halting per example over a pooled state: PonderNet (or ACT) depth.

  From ``h^0 = h``, at depth step ``n = 1, 2, ...`` every example still
  running applies the block to all its positions (padded ones keep their
  input), pools the real positions and halts on the pooled state:

  .. math::

    h^n = B(h^{n-1}), \quad
    \lambda_n = \sigma(w_\lambda \cdot \bar h + b_\lambda), \quad
    \bar h = \mathrm{mean}_{t:\,\mathrm{mask}_t}\, h^n_t\
        (\text{or } h^{n-1}_t \text{ with reads='input'})   \quad (P1)

  ``halting='pondernet'`` (the equations of
  :func:`vcrnn_jax.ponder.pondernet`):

  .. math::

    p_n = \lambda_n \textstyle\prod_{j<n} (1 - \lambda_j), \quad
    \lambda_N := 1                                            \quad (P2)

    N = \min\{M, \min\{n : \textstyle\sum_{j \le n} p_j
        \ge 1 - \epsilon\}\}                                  \quad (P4)

  and in training the state passed on is ``sum_n p_n h^n``; the loss is
  :func:`vcrnn_jax.ponder.reconstruction_loss` (with a ``readout``) plus
  ``beta *`` :func:`vcrnn_jax.ponder.kl_to_geometric` (P3), and ``ponder``
  is the expected number of steps ``sum_n n p_n``. At inference (P5)
  ``'sample'`` halts at step ``n`` with probability ``lambda_n`` (from
  ``key``), ``'median'`` where ``sum_{j <= n} p_j`` first reaches 1/2;
  either passes on ``h^N`` and the readout's ``y_N``, and an example stops
  computing there.

  ``halting='act'``: ACT's Eq. 5-10 on ``lambda_n`` as the halting value,
  the mean field ``sum_n p_n h^n`` with the remainder on the last step and
  ``ponder = N + R`` (tensor2tensor's ``act_type='global'`` averages the
  positions' halting values and counts padding; this pools the states).

  Halted examples need no more computation: the loop stops when all have
  halted, and ``loop.compact_rows`` gathers the ones still running into
  smaller batches, so the block runs on those only (without it, every
  step runs the block on the whole batch and discards the halted
  examples' results).

  Args:
    block: ``block(params, h, context) -> h`` as for :func:`per_token`.
    max_depth: ``M``, the most block applications.
    halting: ``'pondernet'`` or ``'act'``.
    epsilon: the halting mass left unexplored; None: the method's default
      (PonderNet 0.05 in ``[0, 1)``, ACT 0.01 in ``(0, 1)``).
    halting_bias: initial ``b_lambda``; None: the method's (PonderNet 0,
      ACT 1).
    inference: ``'train'``, ``'sample'`` or ``'median'`` (PonderNet only).
    halting_reads: ``'output'`` (``h^n``, PonderNet's P1) or ``'input'``
      (``h^{n-1}``).
    readout: ``readout(block_params, h, context) -> y [batch, ...]``, the
      prediction of every step (its params live in the block's); None: no
      ``outputs`` (the loop then carries no ``[batch, M, ...]`` buffer).
    loop: a :class:`vcrnn_jax.loops.LoopConfig` or its ``kind``.
    kernel_init: initialiser of ``w_lambda`` (LeCun normal).
    param_dtype: the halting unit's dtype; None: the block params'.
    dtype: the computation dtype, as for :func:`per_token`.

  Returns:
    A :class:`Depth`; ``apply`` returns the state passed on (padded
    positions: their input) and an :class:`ExampleDepthOutput`.

  References:
    Banino et al., PonderNet, 2021; Graves, Adaptive Computation Time, 2016.
  """
  block = check_function('block', block)
  if readout is not None:
    readout = check_function('readout', readout)
  spec = _method_spec(max_depth, halting, epsilon, inference,
                      halting_reads)
  if halting_bias is None:
    halting_bias = (_PONDER if spec.rule == 'pondernet'
                    else _ACT).halting_bias
  loop = loops.as_loop_config(loop)
  dtype = check_dtype('dtype', dtype, optional=True)

  def apply(params, h, mask=None, *, key=None, extra=None,
            caller='per_example.apply'):
    params, h, mask = prepare_inputs(caller, params, h, mask, extra,
                                     dtype)
    _check_block(caller, block, 'block', params['block'], h, mask, extra,
                 key, same_shape=True)
    y_shape = None if readout is None else _check_block(
        caller, readout, 'readout', params['block'], h, mask, extra, key,
        same_shape=False)
    uniforms = _uniforms(spec, key, h.shape[:1], h.dtype, caller)
    final, taken = loops.halting_loop(
        functools.partial(_example_step, block, readout, spec),
        (params, key), (mask, extra, uniforms), _example_rows(h, y_shape, spec),
        jnp.any(mask, axis=-1), max_steps=spec.max_depth, loop=loop)
    if spec.rule == 'act':
      cost = final.steps.astype(h.dtype) + final.remainder            # (10)
    else:
      cost = _expected_steps(final.probs)
    output, outputs = final.answer or (None, None)
    return jnp.where(mask[..., None], final.acc, h), ExampleDepthOutput(
        output=output, outputs=outputs, probs=final.probs,
        steps=final.steps, ponder=cost, depth=taken)

  return Depth(_init_fn(kernel_init, halting_bias, param_dtype), apply)
