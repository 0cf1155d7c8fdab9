r"""Adaptive Computation Time (Graves 2016) for any cell of the protocol.

:func:`adaptive` wraps a :class:`vcrnn_jax.Cell` so that it *ponders* each
input for a data-dependent number of steps ``N(t) <= M`` and emits mean-field
states and outputs; :func:`ponder_cost` gives the ponder cost added to the loss.
Its step is :func:`vcrnn_jax.pondering.act_step`, whose pieces
(:mod:`vcrnn_jax.pondering`) also build PonderNet and Repeat-RNN.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax import loops, pondering, utils
from vcrnn_jax.core import Cell, as_context, field_docs

__all__ = ['ACTOutput', 'DEFAULT_LOOP', 'adaptive', 'ponder_cost']


@field_docs
class ACTOutput(NamedTuple):
  """Per-input-step outputs of an ACT cell (each ``[batch, ...]``).

  Attributes:
    output: ``[batch, output_size]`` mean-field output y_t (Eq. 9); with
      no readout, ``[batch, Y]``, the mean field of the wrapped cell's own
      output
    ponder: [batch] rho_t = N(t) + R(t) (Eq. 10)
    steps: [batch] int32 N(t) (Eq. 13)
    remainder: [batch] R(t) (Eq. 8)
  """
  output: jax.Array
  ponder: jax.Array
  steps: jax.Array
  remainder: jax.Array


# Compaction on: a pondering tail (a few rows running to M while the rest
# have halted) costs the rows it runs, not the whole batch. Measured on
# trained parity checkpoints (benchmarks.ponder_tail --time): 4-10x faster
# at tau = 1e-3 (N up to 100), 0.97-1.01x at tau = 1e-2 (N 1-4, no tail).
DEFAULT_LOOP = loops.LoopConfig(compact_rows=8)


def adaptive(
    cell: Cell,
    output_size: int | None,
    *,
    max_steps: int = 100,
    epsilon: float = 0.01,
    halting_bias: float = 1.0,
    halt_features: Callable[[Any, jax.Array], jax.Array] | None = None,
    loop: loops.LoopConfig | str = DEFAULT_LOOP,
    kernel_init: Any = utils.default_kernel_init,
    param_dtype: Any = None,
) -> Cell:
  r"""Wraps ``cell`` with Adaptive Computation Time (ACT paper, Section 2).

  At input step ``t`` the wrapped cell ``S`` is applied repeatedly:

  .. math::

    s_t^n = S(s_t^{n-1}, x_t^n),\ s_t^0 = s_{t-1},\
        x_t^n = [x_t; \delta_{n,1}]                            \quad (3)

    y_t^n = W_y\, \mathrm{out}(s_t^n) + b_y                    \quad (4)

    h_t^n = \sigma(W_h\, \mathrm{feat}(s_t^n) + b_h)           \quad (5)

    N(t) = \min\{M, \min\{n' : \textstyle\sum_{n \le n'} h_t^n
        \ge 1 - \epsilon\}\}                                  \quad (7, 13)

    R(t) = 1 - \textstyle\sum_{n < N(t)} h_t^n,\quad
    p_t^n = R(t) \text{ if } n = N(t) \text{ else } h_t^n      \quad (6, 8)

    s_t = \textstyle\sum_n p_t^n s_t^n, \quad
    y_t = \textstyle\sum_n p_t^n y_t^n                          \quad (9)

  The mean field of Eq. 9 is taken over *every* leaf of the state (both ``h``
  and ``c`` of an LSTM). ``out(s)`` is the wrapped cell's output ``y`` (``h``
  for an LSTM: the columns of ``W_y`` on ``c`` are fixed to zero, as the paper
  allows); the halting unit reads ``halt_features(state, y)``, by default the
  same ``y``. The first-step flag of Eq. 3 is an extra input feature, so the
  wrapped cell is initialised with ``input_size + 1``: ``init(key,
  input_size)`` takes the width of ``x`` as ``apply`` gets it, without the
  flag (64 for the paper's 64-bit parity vectors, not 65), and ``apply``
  appends the flag itself. An ``x`` of another width than the params read
  is a ``ValueError`` naming both; one feature off, it also names the flag
  counted twice as the likely cause. ``N(t)`` is a constant for
  differentiation (Section 2.2): the gradient w.r.t. the halting
  activations is Eq. 19-20.

  Pondering runs as a ``lax.while_loop`` over the batch that stops when every
  element has halted (``loop='while'``, the default), with a reverse-mode
  derivative that runs only over the steps taken (:mod:`vcrnn_jax.loops`);
  ``loop='scan'`` is the masked ``lax.scan`` over all ``M`` steps it is tested
  against.

  Args:
    cell: any cell of the protocol (Elman, GRU, LSTM, RHN, ...).
    output_size: size of ``y_t``; ``None``: no output layer, ``W_y = I`` and
      ``b_y = 0`` in Eq. 4, so ``y_t`` is the mean field of the wrapped cell's
      own output (the mean-field state ``h`` for Elman, GRU and LSTM), for a
      model that puts its own layers on top.
    max_steps: ``M`` of Eq. 13 (paper: 100; 20 for addition).
    epsilon: ``epsilon`` of Eq. 7 (paper: 0.01), in ``(0, 1)``: with 0 no
      row could halt after one step, which is what it exists for.
    halting_bias: initial ``b_h`` (paper: 1).
    halt_features: ``(state, y) -> [batch, F]`` features the halting unit
      reads; defaults to ``y``.
    loop: how pondering runs, a :class:`vcrnn_jax.loops.LoopConfig` (or its
      ``kind``, ``'while'`` or ``'scan'``); the same values and gradients up
      to float rounding whatever it says. ``kind='while'`` costs the steps
      taken; ``checkpoints`` carries are saved for the backward pass (up to
      that many ponder steps are differentiated without recomputation);
      ``save_residuals`` pays for one-step sequences that ponder a few steps
      and costs inside a time ``lax.scan``; ``compact_rows`` gathers the
      rows still pondering into halving batches, which pays when a few rows
      ponder much longer than the rest (docs/performance.md has the
      measurements of each). Default :data:`DEFAULT_LOOP`: the while loop
      with ``compact_rows=8``; a string gives ``LoopConfig(kind)``, without
      compaction.
    kernel_init: initialiser of ``W_y`` and ``W_h`` (default LeCun normal,
      as ``flax.linen.Dense``).
    param_dtype: dtype of the ACT params; None (default) follows the wrapped
      cell's params, so ``adaptive(cells.gru(8, param_dtype=jnp.bfloat16),
      ...)`` is bfloat16 throughout.

  Params: ``{'cell': <wrapped cell params, input_size + 1>, 'output':
  {'kernel': [Y, output_size], 'bias': [output_size]}, 'halting': {'kernel':
  [F, 1], 'bias': [1]}}`` where ``Y`` is the size of the wrapped cell's output
  and ``F`` that of the halting features; no ``'output'`` entry when
  ``output_size`` is None.

  Returns:
    A :class:`vcrnn_jax.Cell` whose state is the wrapped cell's state and whose
    ``apply`` returns ``(state, ACTOutput)``.

  A row whose input or state holds a NaN halts at its first step (a NaN
  halting probability fails the continue test of Eq. 7), so its ``ponder``
  is a finite 2 (N = 1, R = 1) while its ``output`` is NaN: look for NaN in
  the outputs or the loss, not in the ponder.

  Example (the paper's parity network, Elman 128 on 64 bits, at width 16):

    >>> import jax, jax.numpy as jnp, optax
    >>> from vcrnn_jax import act, cells
    >>> act_cell = act.adaptive(cells.elman(16), output_size=1)
    >>> params = act_cell.init(jax.random.key(0), input_size=64)
    >>> x = jax.random.bernoulli(jax.random.key(1), 0.5, (4, 64)) * 1.0
    >>> state, out = act_cell.apply(params, act_cell.initial_state(4), x)
    >>> out.output.shape, out.steps.shape                # y_t and N(t)
    ((4, 1), (4,))
    >>> bce = optax.sigmoid_binary_cross_entropy(out.output, jnp.ones((4, 1)))
    >>> loss = bce.mean() + 0.01 * act.ponder_cost(out).mean()      # Eq. 12

  References:
    Graves, Adaptive Computation Time for Recurrent Neural Networks, 2016.
  """
  output_size, max_steps = pondering.check_act_settings(
      'act.adaptive', cell, output_size, max_steps, epsilon)
  loop = loops.as_loop_config(loop)

  def init(key, input_size):
    return pondering.init_params(
        cell, key, input_size, output_size, halting_bias=halting_bias,
        kernel_init=kernel_init, param_dtype=param_dtype,
        halt_features=halt_features)                                # (4, 5)

  def step(shared, inputs, rows, running, n):
    rows, running, _ = pondering.act_step(
        cell, shared, inputs, rows, running, n, epsilon=epsilon,
        max_steps=max_steps, halt_features=halt_features)           # (3-9, 13)
    return rows, running

  def apply(params, state, x, context=None):
    context = as_context(context)
    dtype = params['halting']['kernel'].dtype
    x = pondering.check_input('adaptive', x, dtype)
    batch_shape = x.shape[:-1]
    y_size = pondering.output_width(cell, params['cell'], state, x,
                                    'act.adaptive')
    # ``active`` ([batch] bool, optional): rows whose result the caller will
    # discard (e.g. padded steps in ``unroll``) take exactly one step.
    active = pondering.active_rows(context, batch_shape)
    rows = pondering.initial_rows(state, batch_shape, output_size or y_size,
                                  dtype)
    final, _ = loops.halting_loop(
        step, (params, context._replace(active=None)), (x, active), rows,
        jnp.ones(batch_shape, bool), max_steps=max_steps, loop=loop)
    ponder = final.steps.astype(dtype) + final.remainder              # (10)
    return final.acc_state, ACTOutput(
        output=final.acc_output, ponder=ponder, steps=final.steps,
        remainder=final.remainder)

  return Cell(init, cell.initial_state, apply)


def ponder_cost(out: Any, mask: jax.Array | None = None) -> jax.Array:
  r"""The ponder cost :math:`P(x) = \sum_t \rho_t` (Eq. 11) per sequence.

  Args:
    out: an :class:`ACTOutput`, either of one step (``ponder: [batch]``) or
      of a sequence from :func:`vcrnn_jax.unroll` (``ponder: [batch, time]``);
      or the output of any method whose ponder cost is its field ``ponder``
      (what a registry row's :class:`vcrnn_jax.registry.Reports` names).
    mask: optional weights of the ponder's shape (``[batch]`` or ``[batch,
      time]``); padded steps (mask 0) cost nothing.

  Returns:
    ``[batch]`` ponder cost; the training loss adds ``tau * P(x)`` (Eq. 12).

  Raises:
    ValueError: ``mask`` does not have the ponder's shape (a silent
      broadcast would weight the wrong steps).
  """
  ponder = out.ponder
  if mask is not None and tuple(jnp.shape(mask)) != tuple(ponder.shape):
    raise ValueError(
        f'ponder_cost: mask must have the shape of the ponder '
        f'{tuple(ponder.shape)}, got {tuple(jnp.shape(mask))}.')
  if ponder.ndim == 1:
    return ponder if mask is None else ponder * mask
  if mask is not None:
    ponder = ponder * mask
  return jnp.sum(ponder, axis=-1)
