r"""Adaptive Computation Time (Graves 2016) for any cell of the protocol.

:func:`adaptive` wraps a :class:`vcrnn_jax.Cell` so that it *ponders* each
input for a data-dependent number of steps ``N(t) <= M`` and emits mean-field
states and outputs; :func:`ponder_cost` gives the ponder cost added to the loss.
"""

from collections.abc import Callable
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax import loops
from vcrnn_jax.cells import _common
from vcrnn_jax.core import (
  Cell,
  InputSizeError,
  as_context,
  cell_output,
  check_cell,
  check_positive_int,
  field_docs,
  param_dtype_of,
  select_rows,
  shape_probe_context,
)


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


class _Rows(NamedTuple):
  """Per-row carry of the pondering loop (the loop adds ``running`` and n)."""
  state: Any            # s_t^{n}: the latest intermediate state
  acc_state: Any        # sum_n p_t^n s_t^n so far
  acc_output: jax.Array  # sum_n p_t^n y_t^n so far
  cum_halt: jax.Array   # sum of h_t^n over the steps that did not halt
  steps: jax.Array      # int32 N(t) so far
  remainder: jax.Array  # R(t), set on the halting step


def _default_halt_features(state, y):
  del state  # The halting unit reads what the output layer reads (Eq. 4-5).
  return y


def _bcast(v, a):
  """``v`` (``[batch]``) cast to ``a``'s dtype, broadcast against it."""
  return v.reshape(v.shape + (1,) * (a.ndim - v.ndim)).astype(a.dtype)


def _output_sizes(cell: Cell, feats, cell_params, input_size: int, dtype
                  ) -> tuple[int, int]:
  """The widths of the wrapped cell's output and of the halting features."""
  state = cell.initial_state(1)
  x = jnp.zeros((1, input_size + 1), dtype)
  new_state, y = jax.eval_shape(cell.apply, cell_params, state, x,
                                shape_probe_context())
  y = cell_output(y)
  return y.shape[-1], jax.eval_shape(feats, new_state, y).shape[-1]


def _dense_params(kernel_init, key, fan_in: int, fan_out: int, bias: float,
                  dtype) -> dict:
  """A dense layer's params: ``kernel`` ``[fan_in, fan_out]``, ``bias``
  filled with ``bias`` (ACT's and PonderNet's output and halting units)."""
  return {'kernel': _common.initialize(kernel_init, key, (fan_in, fan_out),
                                       dtype),
          'bias': jnp.full((fan_out,), bias, dtype)}


def _with_step_flag(x: jax.Array, first: Any) -> jax.Array:
  r"""``[x; \delta_{n,1}]``: the input with the first-step flag appended
  (Eq. 3; also PonderNet's and Repeat-RNN's input). ``first`` is a bool,
  a scalar or ``[batch]``."""
  flag = jnp.broadcast_to(jnp.asarray(first).astype(x.dtype),
                          x.shape[:-1] + (1,))
  return jnp.concatenate([x, flag], axis=-1)


def _restated(error: InputSizeError, owner: str, x) -> InputSizeError:
  """A wrapped cell's input-size error in the terms of ``owner``'s ``x``.

  The wrapped cell reads ``x`` with the first-step flag appended, so its
  own message names one input too many.
  """
  name = f'{owner}({error.name})'
  return InputSizeError(
      f'{name}.apply: x must have shape [batch, {error.input_size - 1}] '
      f'(input_size from the params), got shape {tuple(x.shape)}.',
      name, error.input_size - 1)


def _output_width(cell: Cell, cell_params, state, x, owner: str) -> int:
  """The output width of ``cell`` reading the flagged ``x``, traced
  abstractly; an input-size error is restated for ``owner``."""
  flagged = jax.ShapeDtypeStruct(x.shape[:-1] + (x.shape[-1] + 1,), x.dtype)
  try:
    _, y = jax.eval_shape(cell.apply, cell_params, state, flagged,
                          shape_probe_context())
  except InputSizeError as e:
    raise _restated(e, owner, x) from None
  return cell_output(y).shape[-1]


def _initial_rows(state, batch_shape: tuple, y_size: int, dtype) -> _Rows:
  """The loop's rows before the first ponder step: nothing accumulated."""
  return _Rows(
      state=state,
      acc_state=jax.tree_util.tree_map(jnp.zeros_like, state),
      acc_output=jnp.zeros(batch_shape + (y_size,), dtype),
      cum_halt=jnp.zeros(batch_shape, dtype),
      steps=jnp.zeros(batch_shape, jnp.int32),
      remainder=jnp.zeros(batch_shape, dtype),
  )


def _ponder_step(cell: Cell, feats, output_size: int | None,
                 epsilon: float, max_steps: int, shared, inputs, r: _Rows,
                 running, n):
  """Ponder step ``n`` of every row (Eq. 3-9), for ``loops.halting_loop``."""
  params, context = shared
  x, active = inputs
  # Halted rows are frozen below; telling the cell lets an adaptive inner
  # cell (EI-REHN) skip their work.
  new_state, y = cell.apply(
      params['cell'], r.state, _with_step_flag(x, n == 0),
      context._replace(active=running & active))                    # (3)
  y = cell_output(y)
  if output_size is None:
    out = y                                                         # (4)
  else:
    out = _common.add_bias(y @ params['output']['kernel'],
                           params['output']['bias'])                # (4)
  h = jax.nn.sigmoid(_common.add_bias(
      feats(new_state, y) @ params['halting']['kernel'],
      params['halting']['bias']))[..., 0]                           # (5)
  # Comparisons carry no gradient, so N(t) is a constant (Sec. 2.2).
  halts = (r.cum_halt + h >= 1.0 - epsilon) | (n + 1 >= max_steps)  # (13)
  # Inactive rows (padding) halt at n=1 so they never extend the loop, and
  # so does a row whose halting value is not finite (NaN would otherwise
  # keep it, and the whole batch, pondering to M).
  halts = halts | ~active | ~jnp.isfinite(h)
  p = jnp.where(halts, 1.0 - r.cum_halt, h)                         # (6, 8)
  w = jnp.where(running, p, 0.0)
  acc_state = jax.tree_util.tree_map(
      lambda acc, s: acc + _bcast(w, s) * s, r.acc_state, new_state)  # (9)
  acc_output = r.acc_output + _bcast(w, out) * out                  # (9)
  stops = running & halts
  # Halted rows keep their last state so nothing grows in padded steps.
  state = select_rows(running, new_state, r.state)
  rows = _Rows(
      state=state,
      acc_state=acc_state,
      acc_output=acc_output,
      cum_halt=jnp.where(running & ~halts, r.cum_halt + h, r.cum_halt),
      steps=r.steps + running.astype(jnp.int32),
      remainder=jnp.where(stops, 1.0 - r.cum_halt, r.remainder),
  )
  return rows, running & ~halts


def adaptive(
    cell: Cell,
    output_size: int | None,
    *,
    max_steps: int = 100,
    epsilon: float = 0.01,
    halting_bias: float = 1.0,
    halt_features: Callable[[Any, jax.Array], jax.Array] | None = None,
    loop: loops.LoopConfig | str = loops.LoopConfig(),
    kernel_init: Any = _common.default_kernel_init,
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
  wrapped cell is initialised with ``input_size + 1``. ``N(t)`` is a constant
  for differentiation (Section 2.2): the gradient w.r.t. the halting
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
      measurements of each).
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
  check_cell('act.adaptive', cell)
  if output_size is not None:
    output_size = check_positive_int('output_size', output_size)
  max_steps = check_positive_int('max_steps', max_steps)
  if not 0.0 < epsilon < 1.0:
    raise ValueError(f'epsilon must be in (0, 1), got {epsilon!r}.')
  loop = loops.as_loop_config(loop)
  feats = halt_features or _default_halt_features

  def init(key, input_size):
    input_size = check_positive_int('input_size', input_size)
    k_cell, k_out, k_halt = jax.random.split(key, 3)
    cell_params = cell.init(k_cell, input_size + 1)
    dtype = param_dtype or param_dtype_of(cell_params)
    y_size, f_size = _output_sizes(cell, feats, cell_params, input_size, dtype)
    params = {'cell': cell_params}
    if output_size is not None:                                       # (4)
      params['output'] = _dense_params(kernel_init, k_out, y_size,
                                       output_size, 0.0, dtype)
    params['halting'] = _dense_params(kernel_init, k_halt, f_size, 1,
                                      halting_bias, dtype)            # (5)
    return params

  def apply(params, state, x, context=None):
    context = as_context(context)
    dtype = params['halting']['kernel'].dtype
    if x.ndim < 1:
      raise ValueError(f'adaptive.apply: x must be [batch, input_size], got '
                       f'shape {tuple(x.shape)}.')
    x = x.astype(dtype) if x.dtype != dtype else x
    batch_shape = x.shape[:-1]
    y_size = _output_width(cell, params['cell'], state, x, 'act.adaptive')
    # ``active`` ([batch] bool, optional): rows whose result the caller will
    # discard (e.g. padded steps in ``unroll``) take exactly one step.
    active = (jnp.ones(batch_shape, bool) if context.active is None
              else jnp.broadcast_to(jnp.asarray(context.active, bool),
                                    batch_shape))
    rows = _initial_rows(state, batch_shape, output_size or y_size, dtype)
    step = functools.partial(_ponder_step, cell, feats, output_size,
                             epsilon, max_steps)
    final, _ = loops.halting_loop(
        step, (params, context._replace(active=None)), (x, active), rows,
        jnp.ones(batch_shape, bool), max_steps=max_steps, loop=loop)
    ponder = final.steps.astype(dtype) + final.remainder              # (10)
    return final.acc_state, ACTOutput(
        output=final.acc_output, ponder=ponder, steps=final.steps,
        remainder=final.remainder)

  return Cell(init, cell.initial_state, apply)


def ponder_cost(out: ACTOutput, mask: jax.Array | None = None) -> jax.Array:
  r"""The ponder cost :math:`P(x) = \sum_t \rho_t` (Eq. 11) per sequence.

  Args:
    out: an :class:`ACTOutput`, either of one step (``ponder: [batch]``) or
      of a sequence from :func:`vcrnn_jax.unroll` (``ponder: [batch, time]``).
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
