r"""PonderNet (Banino, Balaguer, Blundell 2021) for any cell of the protocol.

:func:`pondernet` wraps a :class:`vcrnn_jax.Cell` so that it ponders each
input step for a data-dependent number of steps, scoring every intermediate
prediction; :func:`reconstruction_loss` and :func:`kl_to_geometric` are the two
terms of its training loss, which the caller adds. The equations are numbered
(P1)-(P5) as in :func:`pondernet`'s docstring. Its halting rule is its own;
the rest (the flagged input, the readout and halting units, the mean field)
is :mod:`vcrnn_jax.pondering`'s.
"""

import functools
import numbers
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp

from vcrnn_jax import loops, pondering, utils
from vcrnn_jax.core import (
  Cell,
  as_context,
  check_cell,
  check_positive_int,
  field_docs,
  select_rows,
)

__all__ = [
    'INFERENCE_MODES',
    'KL_DIRECTIONS',
    'PonderOutput',
    'pondernet',
    'reconstruction_loss',
    'kl_to_geometric',
]

INFERENCE_MODES = ('train', 'sample', 'median')
KL_DIRECTIONS = ('paper', 'reverse')

# fold_in constant of the halting draws' stream ('POND'), distinct from the
# key the wrapped cell sees and from small layer indices.
_HALT_STREAM = 0x504F4E44


@field_docs
class PonderOutput(NamedTuple):
  """Per-input-step outputs of a PonderNet cell (``M = max_steps``).

  Attributes:
    output: [batch, O] the answer: sum_n p_n y_n ('train'), or y_n at the
      halting step ('sample', 'median')
    outputs: [batch, M, O] every y_n (P1); zeros after the last step taken
    probs: [batch, M] p_n (P2); zeros after the last step taken
    steps: [batch] int32 steps taken (the halting step at inference)
  """
  output: jax.Array
  outputs: jax.Array
  probs: jax.Array
  steps: jax.Array


class _Spec(NamedTuple):
  """The static settings one ponder step needs."""
  max_steps: int
  epsilon: float
  inference: str


class _Rows(NamedTuple):
  """Per-row carry of the pondering loop (the loop adds ``running`` and n)."""
  state: Any             # h_n: the latest state
  acc_state: Any         # sum_n w_n h_n (w: p_n, or 1 at the halting step)
  acc_output: jax.Array  # sum_n w_n y_n
  outputs: jax.Array     # [batch, M, O] y_n so far
  probs: jax.Array       # [batch, M] p_n so far
  unhalted: jax.Array    # prod_{j<n} (1 - lambda_j)
  cum: jax.Array         # sum_{j<n} p_j
  steps: jax.Array       # int32 steps taken


def _initial_rows(state, batch_shape: tuple, output_size: int,
                  max_steps: int, dtype) -> _Rows:
  """The loop's rows before the first ponder step: nothing halted yet."""
  return _Rows(
      state=state,
      acc_state=jax.tree_util.tree_map(jnp.zeros_like, state),
      acc_output=jnp.zeros(batch_shape + (output_size,), dtype),
      outputs=jnp.zeros(batch_shape + (max_steps, output_size), dtype),
      probs=jnp.zeros(batch_shape + (max_steps,), dtype),
      unhalted=jnp.ones(batch_shape, dtype),
      cum=jnp.zeros(batch_shape, dtype),
      steps=jnp.zeros(batch_shape, jnp.int32),
  )


def _halting(spec: _Spec, r: _Rows, lam, active, uniforms, n):
  """``(lambda_n, p_n, halts)`` with the truncation of P2/P4 applied."""
  # The unroll stops where sum_{j<=n} p_j reaches 1 - epsilon (P4) or at
  # step M; that step is the last allowed one, so lambda_n := 1 (P2) and it
  # takes the remaining mass prod_{j<n} (1 - lambda_j). Padding rows and
  # rows whose lambda is not finite stop after one step too.
  stop = ((r.cum + lam * r.unhalted >= 1.0 - spec.epsilon)
          | (n + 1 >= spec.max_steps) | ~jnp.isfinite(lam) | ~active)  # (P4)
  lam = jnp.where(stop, 1.0, lam)                                     # (P2)
  p = lam * r.unhalted                                                # (P2)
  if spec.inference == 'sample':
    u = lax.dynamic_index_in_dim(uniforms, n, axis=uniforms.ndim - 1,
                                 keepdims=False)
    halts = stop | (u < lam)                                          # (P5)
  elif spec.inference == 'median':
    halts = stop | (r.cum + p >= 0.5)                                 # (P5)
  else:
    halts = stop
  return lam, p, halts


def _ponder_step(cell: Cell, spec: _Spec, shared, inputs, r: _Rows, running,
                 n):
  """Ponder step ``n`` of every row (P1, P2, P4, P5), for ``halting_loop``."""
  params, context = shared
  x, active, uniforms = inputs
  live = running & active
  new_state, out, lam = pondering.cell_step(
      cell, params, r.state, x, n, context._replace(active=live))     # (P1)
  lam, p, halts = _halting(spec, r, lam, active, uniforms, n)
  if spec.inference == 'train':
    w = jnp.where(live, p, 0.0)
  else:
    w = (live & halts).astype(p.dtype)
  axis = p.ndim  # the step axis of the buffers
  rows = _Rows(
      state=select_rows(running, new_state, r.state),
      acc_state=pondering.accumulate(r.acc_state, w, new_state),
      acc_output=r.acc_output + utils.broadcast_rows(w, out) * out,
      outputs=lax.dynamic_update_index_in_dim(
          r.outputs, jnp.where(utils.broadcast_rows(live, out), out, 0.0), n,
          axis),
      probs=lax.dynamic_update_index_in_dim(
          r.probs, jnp.where(live, p, 0.0), n, axis),
      unhalted=jnp.where(running, r.unhalted * (1.0 - lam), r.unhalted),
      cum=jnp.where(running, r.cum + p, r.cum),
      steps=r.steps + running.astype(jnp.int32),
  )
  return rows, running & ~halts


def _check_settings(output_size, max_steps, epsilon, inference):
  output_size = check_positive_int('output_size', output_size)
  max_steps = check_positive_int('max_steps', max_steps)
  if (isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real)
      or not 0.0 <= epsilon < 1.0):
    raise ValueError(f'epsilon must be a number in [0, 1), got {epsilon!r}.')
  if inference not in INFERENCE_MODES:
    raise ValueError(
        f'inference must be one of {INFERENCE_MODES}, got {inference!r}.')
  return output_size, _Spec(max_steps, float(epsilon), inference)


def _uniforms(spec: _Spec, context, batch_shape, dtype):
  """The draws of P5's Bernoulli halting, one per row and step, or None."""
  if spec.inference != 'sample':
    return None
  if context.key is None:
    raise ValueError(
        "pondernet(inference='sample').apply: context.key is None; pass "
        'Context(key=...) (halting is sampled from it).')
  key = jax.random.fold_in(context.key, _HALT_STREAM)
  return jax.random.uniform(key, batch_shape + (spec.max_steps,), dtype)


def pondernet(
    cell: Cell,
    output_size: int,
    *,
    max_steps: int = 20,
    epsilon: float = 0.05,
    halting_bias: float = 0.0,
    inference: str = 'train',
    loop: loops.LoopConfig | str = loops.LoopConfig(),
    kernel_init: Any = utils.default_kernel_init,
    param_dtype: Any = None,
) -> Cell:
  r"""Wraps ``cell`` with PonderNet (Banino et al. 2021; equations P1-P5).

  At every input step ``x_t`` the wrapped cell ``s`` runs repeatedly from the
  previous time step's state, on the same input with ACT's first-step flag
  (so its inputs are exactly those of :func:`vcrnn_jax.act.adaptive`):

  .. math::

    h_n = s(h_{n-1}, [x_t; \delta_{n,1}]),\ h_0 = h_{t-1}, \quad
    \hat y_n = W_y\, \mathrm{out}(h_n) + b_y, \quad
    \lambda_n = \sigma(w_\lambda \cdot \mathrm{out}(h_n) + b_\lambda)
        \quad (P1)

    p_n = \lambda_n \textstyle\prod_{j<n} (1 - \lambda_j),\quad
    \lambda_N := 1                                             \quad (P2)

    N = \min\{M, \min\{n : \textstyle\sum_{j \le n} p_j
        \ge 1 - \epsilon\}\}                                   \quad (P4)

  ``out(h)`` is the wrapped cell's output (``h`` for an LSTM), read by both
  the readout and the halting unit, as in ACT. Truncation (P2, P4): the step
  ``N`` where the unroll stops is treated as the last allowed step, so
  ``lambda_N := 1`` and ``p_N = prod_{j<N} (1 - lambda_j) = 1 - sum_{j<N}
  p_j``: it takes the mass of all later steps (at most ``epsilon`` more than
  its own), and ``sum_n p_n = 1`` for every row, up to rounding. ``N`` is a
  constant for differentiation, as ACT's ``N(t)``. ``epsilon = 0`` unrolls
  every row to ``M`` (labml's implementation, which has no epsilon stop).

  ``inference`` picks what a call computes:

  * ``'train'``: the unroll above; ``output = sum_n p_n y_n`` (the expected
    prediction, for monitoring; the loss of P3 scores each ``y_n`` through
    :func:`reconstruction_loss` and :func:`kl_to_geometric`).
  * ``'sample'`` (P5): at step ``n`` halt with probability ``lambda_n``
    (drawn from ``context.key``; required), with the truncated ``lambda``
    above, so the halting step is distributed exactly as ``p``; ``output``
    is ``y`` at the halting step, and a row stops computing there.
  * ``'median'`` (P5, deterministic): halt at the first ``n`` with
    ``sum_{j <= n} p_j >= 0.5`` (the lower median of ``p``).

  ``outputs`` and ``probs`` hold the steps taken and zeros after them
  (at inference they stop at the halting step, so ``probs`` sums to less
  than one).

  The state passed to the next time step is
  ``sum_n w_n h_n`` over every state leaf, with ``w = p`` in training (the
  mean field of ACT's Eq. 9) and ``w`` one-hot at the halting step at
  inference (the state of that step). The training state is thus the
  expectation, under the same ``p`` that weighs the losses, of the state
  that sampling inference passes on, and it is differentiable in every
  ``lambda_n``, so the losses of later time steps also teach the halting
  unit; the last unrolled state would ignore ``p``, and a sampled one would
  pass no gradient to ``lambda``. For one-shot inputs (parity) it is unused.

  Padding (``context.active`` False, set by :func:`vcrnn_jax.unroll`): the
  row takes one step (``steps = 1``), its ``output``, ``outputs`` and
  ``probs`` are zero and its state is returned unchanged, so it adds
  nothing to the losses and the other rows' values and gradients do not
  notice it.

  Cost: pondering runs on :func:`vcrnn_jax.loops.halting_loop`; with
  ``loop.kind = 'while'`` time follows the steps taken and the saved cell
  states are ``loop.checkpoints`` slots whatever ``M`` is, but the loop
  carry includes the ``[batch, M, O]`` buffers of ``outputs`` and ``probs``
  (their size is ``M`` by definition), each slot copying them;
  ``'scan'`` is the masked reference over ``M`` steps.

  .. warning:: :func:`vcrnn_jax.unroll` gives every time step the same
    ``context.key``, so with ``'sample'`` the draws are shared across the
    time steps of a sequence (each step's halting is still distributed as
    its ``p``; the steps are not independent). Different rows draw
    independently.

  Args:
    cell: any cell of the protocol (Elman, GRU, LSTM, VCRNN, ACT, ...).
    output_size: size ``O`` of each prediction ``y_n``.
    max_steps: ``M``, the most ponder steps (public reproductions: ``N <=
      20``).
    epsilon: the halting mass left unexplored (P4), in ``[0, 1)``.
    halting_bias: initial ``b_lambda``; 0 gives ``lambda ~ 0.5`` at first.
    inference: ``'train'``, ``'sample'`` or ``'median'`` (above).
    loop: a :class:`vcrnn_jax.loops.LoopConfig` (or its ``kind``), as for
      :func:`vcrnn_jax.act.adaptive`; the same values and gradients up to
      rounding whatever it says.
    kernel_init: initialiser of ``W_y`` and ``w_lambda`` (LeCun normal).
    param_dtype: dtype of the readout and halting params; None follows the
      wrapped cell's params.

  Params: ``{'cell': <wrapped cell params, input_size + 1>, 'output':
  {'kernel': [Y, O], 'bias': [O]}, 'halting': {'kernel': [Y, 1], 'bias':
  [1]}}``, ``Y`` the width of the wrapped cell's output.

  Returns:
    A :class:`vcrnn_jax.Cell` whose state is the wrapped cell's state and
    whose ``apply`` returns ``(state, PonderOutput)``.

  Example (parity at width 16, with the loss of P3):

    >>> import jax, jax.numpy as jnp, optax
    >>> from vcrnn_jax import cells, ponder
    >>> net = ponder.pondernet(cells.gru(16), output_size=1)
    >>> params = net.init(jax.random.key(0), input_size=8)
    >>> x = jax.random.bernoulli(jax.random.key(1), 0.5, (4, 8)).astype(float)
    >>> _, out = net.apply(params, net.initial_state(4), x)
    >>> out.outputs.shape, out.probs.shape               # [B, M, O], [B, M]
    ((4, 20, 1), (4, 20))
    >>> bce = lambda y_hat, y: optax.sigmoid_binary_cross_entropy(y_hat, y)
    >>> loss = (ponder.reconstruction_loss(out, jnp.ones((4, 1)), bce)
    ...         + 0.01 * ponder.kl_to_geometric(out, 0.2)).mean()

  References:
    Banino, Balaguer, Blundell, PonderNet: Learning to Ponder, 2021.
  """
  check_cell('ponder.pondernet', cell)
  output_size, spec = _check_settings(output_size, max_steps, epsilon,
                                      inference)
  loop = loops.as_loop_config(loop)

  def init(key, input_size):
    return pondering.init_params(
        cell, key, input_size, output_size, halting_bias=halting_bias,
        kernel_init=kernel_init, param_dtype=param_dtype)             # (P1)

  def apply(params, state, x, context=None):
    context = as_context(context)
    dtype = params['halting']['kernel'].dtype
    x = pondering.check_input('pondernet', x, dtype)
    batch_shape = x.shape[:-1]
    pondering.output_width(cell, params['cell'], state, x, 'pondernet')
    active = pondering.active_rows(context, batch_shape)
    uniforms = _uniforms(spec, context, batch_shape, dtype)
    rows = _initial_rows(state, batch_shape, output_size, spec.max_steps,
                         dtype)
    step = functools.partial(_ponder_step, cell, spec)
    final, _ = loops.halting_loop(
        step, (params, context._replace(active=None)),
        (x, active, uniforms), rows, jnp.ones(batch_shape, bool),
        max_steps=spec.max_steps, loop=loop)
    new_state = select_rows(active, final.acc_state, state)
    return new_state, PonderOutput(
        output=final.acc_output, outputs=final.outputs, probs=final.probs,
        steps=final.steps)

  return Cell(init, cell.initial_state, apply)


def _check_mask(name: str, mask, shape: tuple):
  if mask is not None and tuple(jnp.shape(mask)) != shape:
    raise ValueError(
        f'{name}: mask must have the shape of the steps {shape}, got '
        f'{tuple(jnp.shape(mask))}.')


def _per_sequence(per_row: jax.Array, mask) -> jax.Array:
  """Masks ``[batch]`` or ``[batch, time]`` values; sums over time."""
  if mask is not None:
    per_row = per_row * jnp.asarray(mask).astype(per_row.dtype)
  return per_row if per_row.ndim == 1 else jnp.sum(per_row, axis=-1)


def _taken(out: PonderOutput) -> jax.Array:
  """``[..., M]`` bool: the steps each row took."""
  m = out.probs.shape[-1]
  n = jnp.arange(m, dtype=jnp.int32).reshape((1,) * out.steps.ndim + (m,))
  return n < out.steps[..., None]


def reconstruction_loss(out: PonderOutput, targets: Any, loss_fn,
                        mask: jax.Array | None = None) -> jax.Array:
  r"""The reconstruction term :math:`\sum_n p_n\, \ell(y, \hat y_n)` (P3).

  Args:
    out: a :class:`PonderOutput` of one step (``probs: [batch, M]``) or of a
      sequence from :func:`vcrnn_jax.unroll` (``[batch, time, M]``).
    targets: the targets ``y``, a pytree whose leaves lead with the rows'
      axes (``[batch, ...]`` or ``[batch, time, ...]``).
    loss_fn: ``loss_fn(prediction, target) -> loss`` on one step's
      predictions ``[rows..., O]`` (optax's argument order); any axes beyond
      the rows' are summed (an elementwise optax loss gives ``[rows..., O]``).
      It is also evaluated on the zero predictions of the steps not taken,
      whose terms are dropped: it must be finite there for gradients.
    mask: optional weights of the steps' shape (``[batch]`` or ``[batch,
      time]``); padded steps (mask 0) cost nothing.

  Returns:
    ``[batch]``, summed over time for a sequence; the loss adds ``beta *``
    :func:`kl_to_geometric` to it (P3).

  Raises:
    ValueError: ``mask`` does not have the steps' shape.
  """
  rows = tuple(out.steps.shape)
  _check_mask('reconstruction_loss', mask, rows)

  def per_row(prediction):
    loss = jnp.asarray(loss_fn(prediction, targets))
    return jnp.sum(loss, axis=tuple(range(len(rows), loss.ndim)))

  losses = jax.vmap(per_row, in_axes=len(rows), out_axes=-1)(out.outputs)
  terms = jnp.where(_taken(out),
                    out.probs * utils.cast(losses, out.probs.dtype),
                    0.0)                                              # (P3)
  return _per_sequence(jnp.sum(terms, axis=-1), mask)


def kl_to_geometric(out: PonderOutput, lambda_p: float,
                    mask: jax.Array | None = None, *,
                    direction: str = 'paper') -> jax.Array:
  r"""The regulariser of P3: a KL divergence between ``p`` and the prior.

  ``direction='paper'`` (default) is PonderNet's P3,

  .. math::

    \mathrm{KL}(p \,\|\, p_G) = \textstyle\sum_{n \le N} p_n
        \log \frac{p_n}{p_G(n)}, \quad
    p_G(n) = \lambda_p (1 - \lambda_p)^{n - 1}.

  ``p_G`` is *not* renormalised: ``p`` is zero after the ``N`` steps taken,
  so this is the exact divergence from ``p`` to the geometric prior on all
  of ``n = 1, 2, ...``, which is ``>= 0``. Renormalising ``p_G`` over the
  first ``N`` (or ``M``) steps would only subtract the constant ``-log(1 -
  (1 - lambda_p)^N)``: since ``sum_n p_n = 1`` the gradients are the same.
  Terms with ``p_n = 0`` count zero (``0 log 0 = 0``). In this direction
  the term is ``-H(p)`` plus ``-log(1 - lambda_p)`` times the expected
  number of steps: an entropy bonus and a small cost per step.

  ``direction='reverse'`` is what the public reproductions compute (labml's
  ``KLDivLoss(log p, p_G)``): ``KL(p_G || p) = sum_{n <= N} p_G(n) log(p_G(n)
  / p_n)`` over the steps taken, with ``p_G`` truncated there and not
  renormalised. They unroll every row to ``M`` (``epsilon=0`` in
  :func:`pondernet`); with the epsilon stop the sum ends at each row's
  ``N``. It punishes a ``p`` that leaves any step the prior weighs without
  mass, so it pushes mass to later steps where the paper's direction does
  not. ``p_n`` is floored at the dtype's smallest normal number inside the
  log, so a step whose ``p_n`` underflowed costs a large finite amount.

  .. note:: Both directions are exact KL divergences of their truncations;
    they are different regularisers, and the hyperparameters of one
    (``beta``, ``lambda_p``) do not carry over to the other.

  Args:
    out: a :class:`PonderOutput` (one step, or a sequence from
      :func:`vcrnn_jax.unroll`).
    lambda_p: the prior's halting probability, in ``(0, 1)`` (public
      reproductions: 0.1 to 0.2; mean ``1 / lambda_p`` steps).
    mask: optional weights of the steps' shape (``[batch]`` or ``[batch,
      time]``); padded steps cost nothing.
    direction: ``'paper'`` (``KL(p || p_G)``, P3) or ``'reverse'``
      (``KL(p_G || p)``).

  Returns:
    ``[batch]``, summed over time for a sequence; the loss adds ``beta``
    times it (P3; public reproductions: ``beta = 0.01``).

  Raises:
    ValueError: ``lambda_p`` is not in ``(0, 1)``, ``direction`` is not one
      of :data:`KL_DIRECTIONS`, or ``mask`` does not have the steps' shape.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from vcrnn_jax import cells, ponder
    >>> net = ponder.pondernet(cells.gru(8), 1, max_steps=5, epsilon=0.0)
    >>> params = net.init(jax.random.key(0), input_size=3)
    >>> _, out = net.apply(params, net.initial_state(2), jnp.ones((2, 3)))
    >>> [ponder.kl_to_geometric(out, 0.2, direction=d).shape
    ...  for d in ponder.KL_DIRECTIONS]
    [(2,), (2,)]
  """
  if not isinstance(lambda_p, jax.core.Tracer) and not 0.0 < lambda_p < 1.0:
    raise ValueError(f'lambda_p must be in (0, 1), got {lambda_p!r}.')
  if direction not in KL_DIRECTIONS:
    raise ValueError(f'direction must be one of {KL_DIRECTIONS}, got '
                     f'{direction!r}.')
  _check_mask('kl_to_geometric', mask, tuple(out.steps.shape))
  probs = out.probs
  m = probs.shape[-1]
  n = jnp.arange(m, dtype=probs.dtype).reshape((1,) * (probs.ndim - 1)
                                               + (m,))
  log_prior = (jnp.log(lambda_p).astype(probs.dtype)
               + n * jnp.log1p(-lambda_p).astype(probs.dtype))
  if direction == 'reverse':
    floor = jnp.finfo(probs.dtype).tiny
    terms = jnp.where(_taken(out), jnp.exp(log_prior) * (
        log_prior - jnp.log(jnp.maximum(probs, floor))), 0.0)
    return _per_sequence(jnp.sum(terms, axis=-1), mask)
  keep = _taken(out) & (probs > 0.0)
  safe = jnp.where(keep, probs, 1.0)
  terms = jnp.where(keep, probs * (jnp.log(safe) - log_prior), 0.0)  # (P3)
  return _per_sequence(jnp.sum(terms, axis=-1), mask)
