r"""Skip RNN (Campos et al. 2018) for any cell of the protocol.

:func:`skip` wraps a :class:`vcrnn_jax.Cell` with a binary gate that decides,
at every step, whether the wrapped cell updates its state at all or copies it
(S1-S4); :func:`budget_loss` gives the number of updates, which the training
loss weights to trade accuracy for fewer updates (S5).

Example (the paper's adding task uses a Skip-LSTM with 110 units; 16 here):

>>> import jax, jax.numpy as jnp, vcrnn_jax
>>> from vcrnn_jax import cells, skip
>>> cell = skip.skip(cells.lstm(16))
>>> params = cell.init(jax.random.key(0), input_size=2)  # (value, marker)
>>> xs = jax.random.uniform(jax.random.key(1), (4, 50, 2))
>>> _, ys = vcrnn_jax.unroll(cell, params, cell.initial_state(4), xs)
>>> ys.output.shape, ys.update.shape               # h_t and u_t
((4, 50, 16), (4, 50))
>>> bool(jnp.all(ys.update[:, 0] == 1))              # u_1 = 1
True
>>> budget = 1e-4 * skip.budget_loss(ys).mean()         # S5, added to the loss

References:
  Campos, Jou, Giro-i-Nieto, Torres & Chang, Skip RNN: Learning to Skip State
  Updates in Recurrent Neural Networks, ICLR 2018. arXiv:1708.06834.
"""

from collections.abc import Callable
import functools
import math
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp

from vcrnn_jax import compaction, utils
from vcrnn_jax.core import (
  Cell,
  as_context,
  cell_output,
  check_bool,
  check_cell,
  check_positive_int,
  field_docs,
  param_dtype_of,
  select_rows,
  shape_probe_context,
)

__all__ = ['SkipState', 'SkipOutput', 'skip', 'budget_loss']


@field_docs
class SkipState(NamedTuple):
  """The carry of a skip cell (each ``[batch, ...]``).

  Attributes:
    cell: s_{t-1}: the wrapped cell's state
    update_prob: [batch] u~_t, read by the next step (S1)
    output: [batch, Y] the output of s_{t-1}, which a skipped step repeats
  """
  cell: Any
  update_prob: jax.Array
  output: jax.Array


@field_docs
class SkipOutput(NamedTuple):
  """Per-step outputs of a skip cell (each ``[batch, ...]``).

  Attributes:
    output: [batch, Y] the wrapped cell's output (repeated from the last
      update on a skipped step)
    update: [batch] u_t in {0, 1} (S1), straight-through
    update_prob: [batch] u~_t, the probability it was rounded from
  """
  output: jax.Array
  update: jax.Array
  update_prob: jax.Array


def _straight_through_round(p: jax.Array) -> jax.Array:
  """``round(p)`` forward, identity backward (S1).

  For ``p`` in ``[0, 2]`` the sum is exactly 0 or 1: ``round(p) - p`` is
  exact there (Sterbenz), and ``u~ <= 1`` by S4.
  """
  return p + lax.stop_gradient(jnp.round(p) - p)


@jax.custom_jvp
def _copy_or_update_leaf(u, new, old):
  """``u * new + (1 - u) * old`` for ``u`` in {0, 1} (S2), as a select.

  The forward is ``where(u, new, old)``: a skipped row's state is copied
  bit-exactly (no ``0 * new`` to turn an overflow into NaN or ``-0`` into
  ``+0``); the derivative is the product's, straight-through in ``u``.
  """
  return jnp.where(utils.broadcast_rows(u > 0.5, new), new, old)


@_copy_or_update_leaf.defjvp
def _copy_or_update_leaf_jvp(primals, tangents):
  u, new, old = primals
  du, dnew, dold = tangents
  take = utils.broadcast_rows(u > 0.5, new)
  # d/du of u * new + (1 - u) * old is new - old: the gradient that
  # teaches the gate (S1's straight-through u_t).
  dout = (jnp.where(take, dnew, dold)
          + (new - old) * utils.cast(utils.broadcast_rows(du, new), new.dtype))
  return jnp.where(take, new, old), dout


def _copy_or_update(u: jax.Array, new: Any, old: Any) -> Any:
  """:func:`_copy_or_update_leaf` over two pytrees (integer leaves: a plain
  select, they have no derivative)."""
  def leaf(a, b):
    if jnp.issubdtype(a.dtype, jnp.inexact):
      return _copy_or_update_leaf(u, a, b)
    return select_rows(u > 0.5, a, b)
  return jax.tree_util.tree_map(leaf, new, old)


def _default_features(state, y):
  del state  # The gate reads what the readout reads, as ACT's halting unit.
  return y


def _probe(cell: Cell, batch_size: int, input_size: int, params=None):
  """Shapes of ``cell``'s output, of its state and of its params' dtype.

  Without ``params`` the cell is initialised abstractly (nothing is drawn or
  computed) at ``input_size``.
  """
  def run(key):
    p = cell.init(key, input_size) if params is None else params
    dtype = param_dtype_of(p)
    x = jnp.zeros((batch_size, input_size), dtype)
    state, y = cell.apply(p, cell.initial_state(batch_size), x,
                          shape_probe_context())
    return cell_output(y), state, jnp.zeros((), dtype)
  return jax.eval_shape(run, jax.random.key(0))


def _checked_output(y: Any, previous: jax.Array) -> jax.Array:
  """The wrapped cell's output array; it must match the state's ``output``."""
  y = cell_output(y)
  if y.shape != previous.shape or y.dtype != previous.dtype:
    raise ValueError(
        f'skip.apply: the wrapped cell outputs {y.dtype}{list(y.shape)} but '
        f'the state holds an output {previous.dtype}{list(previous.shape)}; '
        'build the state with the skip cell\'s initial_state (it assumes '
        'that the output width does not depend on the input size).')
  return y


def _soft_step(cell: Cell, params, state: SkipState, x, context, u):
  """S2 for every row: the wrapped cell runs, skipped rows copy."""
  candidate, y = cell.apply(params, state.cell, x, context)
  y = _checked_output(y, state.output)
  return (_copy_or_update(u, candidate, state.cell),                 # (S2)
          _copy_or_update(u, y, state.output))


def _hard_step(cell: Cell, params, state: SkipState, x, context, u, active,
               compact_rows):
  """S2 where the wrapped cell runs only on a bucket of rows that holds
  every row that updates (nothing when none does), by
  :func:`vcrnn_jax.compaction.switch_rows`.

  Rows that skip but sit in the bucket are discarded, so the wrapped cell
  is told they are inactive (an adaptive cell does the least work for them).
  """
  runs = u > 0.5 if active is None else (u > 0.5) & active
  operands = (state.cell, state.output, x, u, runs)
  return compaction.switch_rows(
      functools.partial(_update, cell, params, context),
      lambda operands: operands[:2],                                 # (S2)
      operands, runs, compact_rows)


def _update(cell: Cell, params, context, operands):
  """S2 on ``operands``' rows: the wrapped cell runs, skipped rows copy."""
  cell_state, previous, x, u, runs = operands
  candidate, y = cell.apply(params, cell_state, x,
                            context._replace(active=runs))
  y = _checked_output(y, previous)
  return (_copy_or_update(u, candidate, cell_state),                # (S2)
          _copy_or_update(u, y, previous))


def skip(
    cell: Cell,
    *,
    update_bias: float = 1.0,
    features: Callable[[Any, jax.Array], jax.Array] | None = None,
    hard: bool = False,
    compact_rows: int | None = None,
    kernel_init: Any = utils.default_kernel_init,
    param_dtype: Any = None,
) -> Cell:
  r"""Wraps ``cell`` with Skip RNN's update gate (Skip RNN paper, Section 3).

  At step ``t``, with ``S`` the wrapped cell:

  .. math::

    u_t = \mathrm{round}(\tilde u_t),\quad
        \partial u_t / \partial \tilde u_t := 1                \quad (S1)

    s_t = u_t\, S(s_{t-1}, x_t) + (1 - u_t)\, s_{t-1}           \quad (S2)

    \Delta\tilde u_t = \sigma(W_p\, \mathrm{feat}(s_t) + b_p)   \quad (S3)

    \tilde u_{t+1} = u_t\, \Delta\tilde u_t + (1 - u_t)\,
        (\tilde u_t + \min(\Delta\tilde u_t, 1 - \tilde u_t)),\quad
        \tilde u_1 = 1                                          \quad (S4)

  S2 mixes *every* leaf of the state (``h`` and ``c`` of an LSTM). Its
  forward is a select, so a skipped step copies the state bit-exactly; its
  derivative is the product's, with the straight-through :math:`u_t` of S1
  (a row that skips gets the gradient :math:`S(s_{t-1}, x_t) - s_{t-1}`
  through :math:`u_t`, as in the authors' code). ``round`` rounds half to
  even (:math:`\tilde u = 1/2` skips), as ``tf.round`` in their code. While
  skipping, :math:`s_t = s_{t-1}`, so :math:`\Delta\tilde u_t` repeats and
  :math:`\tilde u` grows by it until it reaches 1/2: the cell cannot skip
  forever.

  The output :math:`y_t` is the wrapped cell's output on a step that updates
  and, on a skipped step, the output of the last update, carried in the
  state (``SkipState.output``): the output the copied state gave. The
  authors' cells output :math:`h_t = u_t \tilde h_t + (1 - u_t) h_{t-1}`,
  the same thing; reading a state's output back from the state would only
  work for cells whose state holds it (an LSTM's ``h``), while the carried
  output works for any cell. :math:`\mathrm{feat}(s_t)` is
  ``features(s_t, y_t)``, by default :math:`y_t` (what the readout reads, as
  ACT's halting unit), so a skipped step gives the same
  :math:`\Delta\tilde u_t` as the update it repeats.

  .. warning:: Two readings of the authors' code. Their Skip-LSTM's gate
    reads the memory cell :math:`c_t` (pass ``features=lambda s, y: s.c``
    for that); the default here reads the output :math:`h_t`. And their
    code takes :math:`\Delta\tilde u_t` from the candidate
    :math:`S(s_{t-1}, x_t)` and mixes it with the previous one by
    :math:`u_t`, where we read it from the mixed :math:`s_t` as S3 is
    written: the same values, straight-through gradients that differ in
    which path carries :math:`u_t`'s.

  .. warning:: Structured outputs of the wrapped cell (ACT's ponder, VC's
    :math:`m_t`) are not passed on: ``SkipOutput.output`` is their
    ``output`` array.

  **Hard inference path** (``hard=True``; same params): the wrapped cell
  runs under a ``lax.cond`` on whether any row of the batch updates, so a
  step on which every row skips costs only the gate (a ``[F, 1]`` product):
  with one row, every skipped step. With ``compact_rows=m`` the cell runs
  on the smallest multiple of ``m`` rows that holds every row that updates
  (:mod:`vcrnn_jax.compaction`): those rows are gathered first, and their
  new state is scattered back, so with ``k`` rows updating a step costs a
  cell step on ``ceil(k / m) m`` rows plus the gather and the scatter.
  Skipped rows the bucket takes in are passed to the cell as inactive, and
  discarded. The values and states equal the soft path's (bit for bit
  without ``compact_rows``; with it the cell computes on fewer rows, which
  can change the last bit of a product). A wrapped cell that draws per-row
  noise from ``context.key`` draws it for the bucket's rows. Under ``vmap``
  a ``cond`` runs both branches (correct, no savings). Its gradients are
  not the soft path's (a step on which no row updates has no
  straight-through term): train with ``hard=False``.

  Rows whose ``context.active`` is False (padding) keep their whole state
  (the wrapped cell's and :math:`\tilde u`) and output zeros, ``update``
  included, as :func:`vcrnn_jax.unroll` makes them: they count nothing in
  :func:`budget_loss`.

  Args:
    cell: any cell of the protocol (Elman, GRU, LSTM, VC, ACT, ...).
    update_bias: initial :math:`b_p` (the authors' default: 1, so
      :math:`\Delta\tilde u \approx \sigma(1) \approx 0.73` at
      initialisation and the cell starts by updating at almost every step,
      learning to skip under the budget loss).
    features: ``(state, y) -> [batch, F]`` features the gate reads (S3);
      defaults to ``y``.
    hard: False (default): the training path. True: the inference path
      (see above), which saves time on a CPU; on a GPU the branch costs
      more than the skipped step saves (0.95-1.95x the soft path on an
      H200; docs/performance.md, "On a GPU").
    compact_rows: the hard path's batching: None (default) runs the cell
      on the whole batch when any row updates; ``m`` runs it on the
      smallest multiple of ``m`` rows that holds the updating rows (pays
      when rows update on different steps).
    kernel_init: initialiser of :math:`W_p` (default LeCun normal, as
      ``flax.linen.Dense``).
    param_dtype: dtype of :math:`W_p`, :math:`b_p` and :math:`\tilde u`;
      None (default) follows the wrapped cell's params.

  Params: ``{'cell': <wrapped cell params>, 'update': {'kernel': [F, 1],
  'bias': [1]}}`` (:math:`W_p^T`, :math:`b_p`), ``F`` the width of the
  features.

  State: :class:`SkipState` ``(cell, update_prob, output)``; its
  ``initial_state`` has :math:`\tilde u_1 = 1` and zero output, and learns
  the output's width by tracing the wrapped cell abstractly (nothing is
  computed), assuming that width does not depend on the input size (true of
  every cell of this library).

  Returns:
    A :class:`vcrnn_jax.Cell` whose ``apply`` returns ``(SkipState,
    SkipOutput)``.

  Raises:
    ValueError: ``cell`` is not a :class:`vcrnn_jax.Cell`, ``update_bias``
      is not a finite number, ``features`` is not callable, ``hard`` is not
      a bool, or ``compact_rows`` is not None or a positive int.

  References:
    Campos, Jou, Giro-i-Nieto, Torres & Chang, Skip RNN: Learning to Skip
    State Updates in Recurrent Neural Networks, ICLR 2018, Sec. 3.
  """
  check_cell('skip.skip', cell)
  _check_args(update_bias, features)
  hard = check_bool('hard', hard)
  compact_rows = compaction.check_compact_rows(compact_rows)
  feats = features or _default_features

  def init(key, input_size):
    input_size = check_positive_int('input_size', input_size)
    k_cell, k_update = jax.random.split(key)
    cell_params = cell.init(k_cell, input_size)
    dtype = param_dtype or param_dtype_of(cell_params)
    y, state, _ = _probe(cell, 1, input_size, cell_params)
    f_size = jax.eval_shape(feats, state, y).shape[-1]
    return {'cell': cell_params, 'update': {                         # (S3)
        'kernel': utils.initialize(kernel_init, k_update, (f_size, 1),
                                   dtype),
        'bias': jnp.full((1,), update_bias, dtype)}}

  def initial_state(batch_size):
    batch_size = check_positive_int('batch_size', batch_size)
    y, _, dtype = _probe(cell, batch_size, 1)
    return SkipState(
        cell=cell.initial_state(batch_size),
        update_prob=jnp.ones((batch_size,), param_dtype or dtype.dtype),  # (S4)
        output=jnp.zeros(y.shape, y.dtype))

  def apply(params, state, x, context=None):
    context = as_context(context)
    active = (None if context.active is None
              else jnp.asarray(context.active, bool))
    u_prob = state.update_prob
    u = _straight_through_round(u_prob)                             # (S1)
    if hard:
      new_cell, y = _hard_step(cell, params['cell'], state, x, context, u,
                               active, compact_rows)
    else:
      new_cell, y = _soft_step(cell, params['cell'], state, x, context, u)
    new_prob = _next_update_prob(params['update'], feats(new_cell, y), u,
                                 u_prob)
    new_state = SkipState(cell=new_cell, update_prob=new_prob, output=y)
    out = SkipOutput(output=y, update=u, update_prob=u_prob)
    if active is not None:
      new_state = select_rows(active, new_state, state)
      out = select_rows(active, out,
                        jax.tree_util.tree_map(jnp.zeros_like, out))
    return new_state, out

  return Cell(init, initial_state, apply)


def _next_update_prob(p, features, u, u_prob):
  """S3 and S4: the next step's update probability."""
  dtype = p['kernel'].dtype
  features = utils.cast(features, dtype)
  delta = jax.nn.sigmoid(utils.add_bias(features @ p['kernel'],
                                        p['bias']))[..., 0]         # (S3)
  accumulated = u_prob + jnp.minimum(delta, 1.0 - u_prob)
  return _copy_or_update(u, delta, accumulated)                     # (S4)


def _check_args(update_bias, features) -> None:
  if (isinstance(update_bias, bool)
      or not isinstance(update_bias, (int, float))
      or not math.isfinite(update_bias)):
    raise ValueError(
        f'update_bias must be a finite number, got {update_bias!r}.')
  if features is not None and not callable(features):
    raise ValueError(
        'features must be a function (state, y) -> [batch, F] or None, got '
        f'{features!r}.')


def budget_loss(out: SkipOutput, mask: jax.Array | None = None) -> jax.Array:
  r"""The number of updates :math:`\sum_t u_t` (S5) per sequence.

  The training loss adds :math:`\lambda` times it (S5); :math:`\lambda` is
  the caller's, as ACT's :math:`\tau` is for :func:`vcrnn_jax.act.ponder_cost`.
  Its gradient reaches the gate through the straight-through :math:`u_t`.

  Args:
    out: a :class:`SkipOutput`, of one step (``update: [batch]``) or of a
      sequence from :func:`vcrnn_jax.unroll` (``update: [batch, time]``,
      where padded steps are already 0).
    mask: optional weights of ``update``'s shape; steps with mask 0 count
      nothing.

  Returns:
    ``[batch]``: the updates of each sequence.

  Raises:
    ValueError: ``mask`` does not have ``update``'s shape (a silent
      broadcast would weight the wrong steps).
  """
  update = out.update
  if mask is not None:
    if tuple(jnp.shape(mask)) != tuple(update.shape):
      raise ValueError(
          f'budget_loss: mask must have the shape of the updates '
          f'{tuple(update.shape)}, got {tuple(jnp.shape(mask))}.')
    update = update * jnp.asarray(mask, update.dtype)
  if update.ndim == 1:
    return update
  return jnp.sum(update, axis=-1)                                   # (S5)
