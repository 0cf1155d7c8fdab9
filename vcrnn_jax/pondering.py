r"""The pieces a pondering method is made of: ACT, PonderNet and Repeat-RNN.

A pondering method runs a wrapped cell several times on one input step. The
pieces here are what :func:`vcrnn_jax.act.adaptive`,
:func:`vcrnn_jax.ponder.pondernet` and :func:`vcrnn_jax.repeat.repeat` share,
as pure functions and ``NamedTuple`` s, so a new halting method is its own
maths plus a call:

* ACT's settings checked, :func:`check_act_settings`; the input of a ponder
  step, :func:`with_step_flag` (ACT's Eq. 3), checked and cast by
  :func:`check_input`, and the rows that really compute,
  :func:`active_rows`;
* the params of the readout and halting units, :func:`init_params` (built
  from :func:`dense_params`), and the cell's output width,
  :func:`output_width` (its input-size errors restated by
  :func:`restated_input_error`);
* one step of the wrapped cell with its readout and halting probability,
  :func:`cell_step` (Eq. 3-5; :func:`dense`, :func:`halting_probability`);
* ACT's halting and remainder rule on per-row accumulators:
  :class:`Rows`, :func:`initial_rows`, :func:`accumulate` and
  :func:`act_step` (Eq. 6-9, 13), which also gives each step's
  :class:`StepStats` (``p_n`` among them).

A step has the signature of :func:`vcrnn_jax.loops.halting_loop`'s body,
``(shared, inputs, rows, running, n)`` with ``shared = (params, context)``
and ``inputs = (x, active)``; the loop owns the while loop, its gradient and
the row compaction. Equation numbers are the ACT paper's (Graves 2016).

Example: ACT's pondering, with the expected number of steps
:math:`\sum_n n\, p_n` summed alongside (PonderNet's ponder cost):

>>> import jax, jax.numpy as jnp
>>> from vcrnn_jax import Context, cells, loops, pondering
>>> cell = cells.elman(8)
>>> params = pondering.init_params(cell, jax.random.key(0), input_size=3,
...                                output_size=2, halting_bias=-1.0)
>>> x = jax.random.normal(jax.random.key(1), (4, 3), jnp.float32)
>>> def body(shared, inputs, carry, running, n):
...   rows, cost = carry
...   rows, running, stats = pondering.act_step(
...       cell, shared, inputs, rows, running, n, epsilon=0.01, max_steps=5)
...   return (rows, cost + stats.p * (n + 1).astype(cost.dtype)), running
>>> rows = pondering.initial_rows(cell.initial_state(4), (4,), 2, x.dtype)
>>> (final, cost), _ = loops.halting_loop(
...     body, (params, Context()), (x, jnp.ones(4, bool)),
...     (rows, jnp.zeros(4, x.dtype)), jnp.ones(4, bool), max_steps=5)
>>> final.acc_output.shape, final.steps.shape, cost.shape
((4, 2), (4,), (4,))
>>> steps = final.steps.astype(cost.dtype)
>>> bool(jnp.all((1 <= cost) & (cost <= steps + 1e-5)))   # 1 <= E[N] <= N(t)
True
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax import utils
from vcrnn_jax.core import (
  Cell,
  Context,
  InputSizeError,
  cell_output,
  check_cell,
  check_positive_int,
  field_docs,
  param_dtype_of,
  select_rows,
  shape_probe_context,
)

__all__ = [
    'Rows',
    'StepStats',
    'accumulate',
    'act_step',
    'active_rows',
    'cell_step',
    'check_act_settings',
    'check_input',
    'dense',
    'dense_params',
    'halting_probability',
    'init_params',
    'initial_rows',
    'output_width',
    'restated_input_error',
    'with_step_flag',
]


@field_docs
class Rows(NamedTuple):
  """Per-row accumulators of ACT's pondering loop (each ``[batch, ...]``).

  :func:`vcrnn_jax.loops.halting_loop` adds ``running`` and ``n``.

  Attributes:
    state: s_t^n, the latest intermediate state (a halted row keeps its last)
    acc_state: sum_n p_t^n s_t^n so far, over every leaf of the state (Eq. 9)
    acc_output: [batch, O] sum_n p_t^n y_t^n so far (Eq. 9)
    cum_halt: [batch] the sum of h_t^n over the steps that did not halt
    steps: [batch] int32 N(t) so far (Eq. 13)
    remainder: [batch] R(t) (Eq. 8), set on the halting step, 0 before
  """
  state: Any
  acc_state: Any
  acc_output: jax.Array
  cum_halt: jax.Array
  steps: jax.Array
  remainder: jax.Array


@field_docs
class StepStats(NamedTuple):
  """What one ponder step of :func:`act_step` computed, per row (``[batch]``).

  Attributes:
    output: [batch, O] y_t^n, this step's output (Eq. 4), for every row
    halting: [batch] h_t^n, the halting unit's value (Eq. 5), for every row
    p: [batch] p_t^n, the step's weight in the mean field (Eq. 6, 8): h_t^n,
      or R(t) on the halting step; 0 for rows that had halted before. Over
      the steps taken it sums to 1 (up to rounding), so sum_n (n + 1) p
      over the loop's 0-based ``n`` is the expected number of steps.
    halted: [batch] bool, the rows that halted at this step
  """
  output: jax.Array
  halting: jax.Array
  p: jax.Array
  halted: jax.Array


def with_step_flag(x: jax.Array, first: Any) -> jax.Array:
  r"""``[x; \delta_{n,1}]``: ``x`` with the first-ponder-step flag appended.

  ACT's Eq. 3; also PonderNet's and Repeat-RNN's input, so the wrapped cell
  reads ``input_size + 1`` features.

  Args:
    x: ``[..., input_size]`` input.
    first: whether this is the first ponder step: a bool, a scalar (e.g.
      ``n == 0`` inside a loop) or ``[batch]``.

  Returns:
    ``[..., input_size + 1]``, the flag (1 or 0 in ``x``'s dtype) last.
  """
  flag = jnp.asarray(first).astype(x.dtype)
  if flag.ndim:                                 # [batch]: one flag per row
    flag = flag[..., None]
  flag = jnp.broadcast_to(flag, x.shape[:-1] + (1,))
  return jnp.concatenate([x, flag], axis=-1)


def check_input(owner: str, x: jax.Array, dtype: Any) -> jax.Array:
  """``x`` checked to have a feature axis and cast to ``dtype``.

  Args:
    owner: the method's name, for the error (``'adaptive'``: the message
      says ``adaptive.apply``).
    x: the input step, ``[batch, input_size]``.
    dtype: the dtype the method computes in (its params').

  Returns:
    ``x`` in ``dtype`` (``x`` itself when it already is).

  Raises:
    ValueError: ``x`` is a scalar.
  """
  if x.ndim < 1:
    raise ValueError(f'{owner}.apply: x must be [batch, input_size], got '
                     f'shape {tuple(x.shape)}.')
  return utils.cast(x, dtype)


def check_act_settings(owner: str, cell: Any, output_size: Any,
                       max_steps: Any, epsilon: Any) -> tuple[Any, int]:
  """ACT's settings checked, as a method on ACT's halting takes them.

  Args:
    owner: the factory's name, for the errors (``'act.adaptive'``).
    cell: the wrapped cell.
    output_size: the readout's width, a positive integer, or None (no
      readout).
    max_steps: ``M`` of Eq. 13, a positive integer.
    epsilon: ``epsilon`` of Eq. 7, in ``(0, 1)``.

  Returns:
    ``(output_size, max_steps)`` as Python ints (``output_size`` None kept).

  Raises:
    ValueError: one line naming the argument, its value and what is allowed.
  """
  check_cell(owner, cell)
  if output_size is not None:
    output_size = check_positive_int('output_size', output_size)
  max_steps = check_positive_int('max_steps', max_steps)
  if not 0.0 < epsilon < 1.0:
    raise ValueError(f'epsilon must be in (0, 1), got {epsilon!r}.')
  return output_size, max_steps


def active_rows(context: Context, batch_shape: tuple) -> jax.Array:
  """The rows whose result is kept: ``context.active``, or every row.

  Rows that are not active (padding in :func:`vcrnn_jax.unroll`) take one
  ponder step and do not extend the loop.

  Args:
    context: the :class:`vcrnn_jax.core.Context` the method was called with.
    batch_shape: the input's batch axes.

  Returns:
    ``batch_shape`` bool.
  """
  if context.active is None:
    return jnp.ones(batch_shape, bool)
  return jnp.broadcast_to(jnp.asarray(context.active, bool), batch_shape)


def restated_input_error(error: InputSizeError, owner: str,
                         x: Any) -> InputSizeError:
  """A wrapped cell's input-size error in the terms of ``owner``'s ``x``.

  The wrapped cell reads ``x`` with the first-step flag appended, so its own
  message names one input too many. Where ``x`` is one feature off, the
  message says which of the two mistakes the flag invites it is: ``x``
  given with the flag already appended, or params initialised with the
  flag counted in ``input_size`` (``init`` takes ``x``'s width).

  Args:
    error: the wrapped cell's error.
    owner: the method's name (``'act.adaptive'``, ``'repeat'``).
    x: the input the method was given, ``[batch, input_size]``.

  Returns:
    The error to raise, naming ``owner(cell)`` and one input fewer.
  """
  name = f'{owner}({error.name})'
  width, got = error.input_size - 1, x.shape[-1] if x.ndim else None
  if got == width + 1:
    hint = (': one feature more than the params read; if x carries the '
            f'first-step flag, give it without: {name} appends the flag '
            'itself')
  elif got == width - 1:
    hint = (': one feature fewer than the params read; if init was given '
            f'input_size={width} counting the first-step flag, give it the '
            f'width of x, input_size={got}: {name} adds the flag\'s weights '
            'itself')
  else:
    hint = ''
  return InputSizeError(
      f'{name}.apply: x must have shape [batch, {width}] (input_size from '
      f'the params), got shape {tuple(x.shape)}{hint}.', name, width)


def output_width(cell: Cell, cell_params: Any, state: Any, x: Any,
                 owner: str) -> int:
  """The width of ``cell``'s output when it reads the flagged ``x``.

  Traced abstractly (``jax.eval_shape``): nothing is computed.

  Args:
    cell: the wrapped cell.
    cell_params: its params (initialised with ``input_size + 1``).
    state: a state of it (or its shapes).
    x: the method's input (or a ``jax.ShapeDtypeStruct``), without the flag.
    owner: the method's name, for a restated input-size error.

  Returns:
    The last axis of :func:`vcrnn_jax.cell_output` of the cell's output.

  Raises:
    InputSizeError: ``x`` has the wrong width, in ``owner``'s terms.
  """
  flagged = jax.ShapeDtypeStruct(x.shape[:-1] + (x.shape[-1] + 1,), x.dtype)
  try:
    _, y = jax.eval_shape(cell.apply, cell_params, state, flagged,
                          shape_probe_context())
  except InputSizeError as e:
    raise restated_input_error(e, owner, x) from None
  return cell_output(y).shape[-1]


def dense_params(kernel_init: Any, key: jax.Array, fan_in: int, fan_out: int,
                 bias: float, dtype: Any) -> dict:
  """A dense unit's params (a readout or a halting unit).

  Args:
    kernel_init: the kernel's initialiser, ``init(key, shape, dtype)``.
    key: a PRNG key.
    fan_in: the input width.
    fan_out: the output width.
    bias: the value every entry of the bias starts at.
    dtype: the params' dtype.

  Returns:
    ``{'kernel': [fan_in, fan_out], 'bias': [fan_out]}``.
  """
  return {'kernel': utils.initialize(kernel_init, key, (fan_in, fan_out),
                                     dtype),
          'bias': jnp.full((fan_out,), bias, dtype)}


def dense(params: dict, x: jax.Array) -> jax.Array:
  """``x @ kernel + bias``, a dense unit of :func:`dense_params`.

  Args:
    params: ``{'kernel': [F, O], 'bias': [O]}``.
    x: ``[..., F]``.

  Returns:
    ``[..., O]``.
  """
  return utils.add_bias(x @ params['kernel'], params['bias'])


def halting_probability(params: dict, features: jax.Array) -> jax.Array:
  r"""``sigmoid(W_h features + b_h)``: ACT's ``h_t^n`` (Eq. 5), PonderNet's
  ``lambda_n``.

  Args:
    params: the halting unit, ``{'kernel': [F, 1], 'bias': [1]}``.
    features: ``[batch, F]``, what the halting unit reads.

  Returns:
    ``[batch]`` values in ``(0, 1)``.
  """
  return jax.nn.sigmoid(dense(params, features))[..., 0]


def _output_features(state, y):
  del state  # The halting unit reads what the output layer reads (Eq. 4-5).
  return y


def init_params(
    cell: Cell,
    key: jax.Array,
    input_size: int,
    output_size: int | None,
    *,
    halting_bias: float,
    kernel_init: Any = utils.default_kernel_init,
    param_dtype: Any = None,
    halt_features: Callable[[Any, jax.Array], jax.Array] | None = None,
) -> dict:
  """The params of a pondering method: the cell, a readout, a halting unit.

  Args:
    cell: the wrapped cell; it is initialised with ``input_size + 1`` (the
      flag of :func:`with_step_flag`).
    key: a PRNG key, split in three (cell, readout, halting unit).
    input_size: the width of the method's input.
    output_size: the readout's width ``O``; None: no readout (the cell's
      own output is the method's, ``W_y = I``).
    halting_bias: the halting unit's initial bias ``b_h``.
    kernel_init: initialiser of the readout and halting kernels (LeCun
      normal).
    param_dtype: the readout's and halting unit's dtype; None: the cell
      params'.
    halt_features: ``(state, y) -> [batch, F]``, what the halting unit
      reads; None: the cell's output ``y``.

  Returns:
    ``{'cell': ..., 'output': {'kernel': [Y, O], 'bias': [O]}, 'halting':
    {'kernel': [F, 1], 'bias': [1]}}``, ``Y`` the cell's output width; no
    ``'output'`` when ``output_size`` is None.
  """
  input_size = check_positive_int('input_size', input_size)
  feats = halt_features or _output_features
  k_cell, k_out, k_halt = jax.random.split(key, 3)
  cell_params = cell.init(k_cell, input_size + 1)
  dtype = param_dtype or param_dtype_of(cell_params)
  x = jnp.zeros((1, input_size + 1), dtype)
  new_state, y = jax.eval_shape(cell.apply, cell_params,
                                cell.initial_state(1), x,
                                shape_probe_context())
  y = cell_output(y)
  y_size = y.shape[-1]
  f_size = jax.eval_shape(feats, new_state, y).shape[-1]
  params = {'cell': cell_params}
  if output_size is not None:                                         # (4)
    params['output'] = dense_params(kernel_init, k_out, y_size, output_size,
                                    0.0, dtype)
  params['halting'] = dense_params(kernel_init, k_halt, f_size, 1,
                                   halting_bias, dtype)               # (5)
  return params


def cell_step(
    cell: Cell,
    params: dict,
    state: Any,
    x: jax.Array,
    n: jax.Array,
    context: Context,
    halt_features: Callable[[Any, jax.Array], jax.Array] | None = None,
) -> tuple[Any, jax.Array, jax.Array]:
  """One ponder step of the wrapped cell with its readout and halting unit.

  Args:
    cell: the wrapped cell.
    params: as :func:`init_params` makes them; without ``'output'`` the
      readout is the identity.
    state: ``s_t^{n-1}``.
    x: the input step ``[batch, input_size]``, without the flag.
    n: the 0-based ponder step (the flag is ``n == 0``).
    context: what the cell is given; its ``active`` should mark the rows
      still pondering (an adaptive inner cell skips the others' work).
    halt_features: ``(state, y) -> [batch, F]``; None: ``y``.

  Returns:
    ``(s_t^n, y_t^n, h_t^n)`` (Eq. 3, 4, 5): the new state, the readout
    ``[batch, O]`` and the halting value ``[batch]``.
  """
  new_state, y = cell.apply(params['cell'], state, with_step_flag(x, n == 0),
                            context)                                  # (3)
  y = cell_output(y)
  out = y if 'output' not in params else dense(params['output'], y)   # (4)
  feats = halt_features or _output_features
  h = halting_probability(params['halting'], feats(new_state, y))     # (5)
  return new_state, out, h


def accumulate(acc: Any, weights: jax.Array, tree: Any) -> Any:
  """``acc + weights * tree`` on every leaf, ``weights`` one per row.

  The running sum of a mean field (ACT's Eq. 9, PonderNet's expectation).

  Args:
    acc: a pytree of ``[batch, ...]`` leaves.
    weights: ``[batch]``, cast to each leaf's dtype.
    tree: a pytree of ``acc``'s structure and shapes.

  Returns:
    The updated ``acc``.
  """
  def add(a, s):
    return a + utils.cast(utils.broadcast_rows(weights, s), s.dtype) * s
  return jax.tree_util.tree_map(add, acc, tree)


def initial_rows(state: Any, batch_shape: tuple, output_size: int,
                 dtype: Any) -> Rows:
  """ACT's accumulators before the first ponder step: nothing summed yet.

  Args:
    state: ``s_{t-1}``, the state pondering starts from.
    batch_shape: the input's batch axes.
    output_size: the width ``O`` of the output summed (the readout's, or the
      cell's own, :func:`output_width`).
    dtype: the dtype of the sums (the params').

  Returns:
    :class:`Rows` with zero sums, ``steps`` and ``remainder``.
  """
  return Rows(
      state=state,
      acc_state=jax.tree_util.tree_map(jnp.zeros_like, state),
      acc_output=jnp.zeros(batch_shape + (output_size,), dtype),
      cum_halt=jnp.zeros(batch_shape, dtype),
      steps=jnp.zeros(batch_shape, jnp.int32),
      remainder=jnp.zeros(batch_shape, dtype),
  )


def act_step(
    cell: Cell,
    shared: tuple[dict, Context],
    inputs: tuple[jax.Array, jax.Array],
    rows: Rows,
    running: jax.Array,
    n: jax.Array,
    *,
    epsilon: float,
    max_steps: int,
    halt_features: Callable[[Any, jax.Array], jax.Array] | None = None,
) -> tuple[Rows, jax.Array, StepStats]:
  """Ponder step ``n`` of every row with ACT's halting rule (Eq. 3-9, 13).

  A row halts when its halting values reach ``1 - epsilon`` or at step
  ``max_steps``; that step weighs the remainder ``R(t)``. Rows that are not
  ``active`` halt at once, and so does a row whose halting value is not
  finite (a NaN would keep it, and the batch, pondering to ``max_steps``).
  Rows that are not ``running`` are left unchanged, as
  :func:`vcrnn_jax.loops.halting_loop` requires. ``N(t)`` is a constant for
  differentiation (Section 2.2).

  Args:
    cell: the wrapped cell.
    shared: ``(params, context)``: :func:`init_params`'s params and the
      context for the cell, whose ``active`` should be None (the rows'
      ``active`` comes through ``inputs``, so a compacted loop gathers it).
    inputs: ``(x, active)``: the input step ``[batch, input_size]`` and the
      :func:`active_rows`.
    rows: the accumulators, from :func:`initial_rows` at ``n = 0``.
    running: ``[batch]`` bool, the rows still pondering.
    n: the 0-based ponder step.
    epsilon: ``epsilon`` of Eq. 7, in ``(0, 1)``.
    max_steps: ``M`` of Eq. 13.
    halt_features: ``(state, y) -> [batch, F]``; None: ``y``.

  Returns:
    ``(rows, running, stats)``: the updated accumulators, the rows still
    pondering after this step, and the step's :class:`StepStats`.
  """
  params, context = shared
  x, active = inputs
  # Halted rows are frozen below; telling the cell lets an adaptive inner
  # cell (EI-REHN) skip their work.
  new_state, out, h = cell_step(cell, params, rows.state, x, n,
                                context._replace(active=running & active),
                                halt_features)                      # (3-5)
  # Comparisons carry no gradient, so N(t) is a constant (Sec. 2.2).
  halts = ((rows.cum_halt + h >= 1.0 - epsilon)
           | (n + 1 >= max_steps))                                  # (13)
  halts = halts | ~active | ~jnp.isfinite(h)
  p = jnp.where(halts, 1.0 - rows.cum_halt, h)                      # (6, 8)
  w = jnp.where(running, p, 0.0)
  # The order below is the order of the sums of the backward pass: keep it,
  # so that the gradients stay bit for bit the same.
  acc_state = accumulate(rows.acc_state, w, new_state)               # (9)
  acc_output = accumulate(rows.acc_output, w, out)                   # (9)
  stops = running & halts
  # Halted rows keep their last state so nothing grows in padded steps.
  state = select_rows(running, new_state, rows.state)
  new_rows = Rows(
      state=state,
      acc_state=acc_state,
      acc_output=acc_output,
      cum_halt=jnp.where(running & ~halts, rows.cum_halt + h,
                         rows.cum_halt),
      steps=rows.steps + running.astype(jnp.int32),
      remainder=jnp.where(stops, 1.0 - rows.cum_halt, rows.remainder),
  )
  stats = StepStats(output=out, halting=h, p=w, halted=stops)
  return new_rows, running & ~halts, stats
