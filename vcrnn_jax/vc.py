r"""Variable Computation RNN and GRU (Jernite et al. 2017).

A *variable computation unit* (VCU) decides at every step how much of its
state to update: a scheduler (Eq. 7) emits :math:`m_t \in [0, 1]` and the
unit updates only (softly) the first :math:`m_t D` dimensions of its hidden
state, carrying the others over (Eq. 8-9, 11-16). This module gives

* the cells :func:`vcrnn` (Elman based, Eq. 13) and :func:`vcgru` (GRU based,
  Eq. 14-16), whose per-step output is a :class:`VCOutput` ``(output=h_t, m,
  dims)``; with ``hard=True`` the same cells skip the work of the carried
  dimensions instead of masking it (an inference path the paper does not
  have, see :func:`vcrnn`);
* the sharpness schedule of Sec. 5 (:func:`paper_sharpness`) and the soft
  mask itself (:func:`soft_mask`);
* the penalty :math:`\Omega(m, \bar m)` of Eq. 10 (:func:`penalty`), with the
  per-step targets of the "guide" setting of Sec. 5.2.2
  (:func:`guide_targets`);
* computation accounting: :func:`multiplications` per step and the
  "equivalent RNN" dimension RNN-d of Table 3 (:func:`rnn_equivalent_dim`).

Example (the paper's VCGRU is 1024 wide; 64 here):

>>> import jax, jax.numpy as jnp, vcrnn_jax
>>> from vcrnn_jax import vc
>>> cell = vc.vcgru(64, sharpness=vc.paper_sharpness(steps_per_epoch=2000))
>>> params = cell.init(jax.random.key(0), input_size=16)   # embedding size
>>> xs = jax.random.normal(jax.random.key(1), (4, 10, 16))
>>> _, ys = vcrnn_jax.unroll(cell, params, cell.initial_state(4), xs,
...                          context=vcrnn_jax.Context(step=jnp.int32(0)))
>>> ys.m.shape                        # m_t, the fraction updated at each step
(4, 10)
>>> omega = vc.penalty(ys.m, 0.3).mean()              # Eq. 10, added to the NLL
>>> rnn_d = vc.rnn_equivalent_dim('vcgru', 64, m=ys.m)          # Table 3
>>> 0 < rnn_d <= vc.rnn_equivalent_dim('gru', 64)
True

References:
  Jernite, Grave, Joulin & Mikolov, Variable Computation in Recurrent Neural
  Networks, ICLR 2017. arXiv:1611.06188.
"""

from collections.abc import Callable, Sequence
import functools
import math
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax import compaction, utils
from vcrnn_jax.cells.elman import ElmanState
from vcrnn_jax.cells.gru import GRUState
from vcrnn_jax.core import (
  Cell,
  Context,
  as_context,
  check_apply_args,
  check_bool,
  check_positive_int,
  field_docs,
)

__all__ = [
    'VCOutput',
    'paper_sharpness',
    'soft_mask',
    'SHELL_WIDTH',
    'vcrnn',
    'vcgru',
    'penalty',
    'guide_targets',
    'multiplications',
    'rnn_equivalent_dim',
]

# step (int32 scalar array) -> sharpness lambda, as an optax schedule.
Schedule = Callable[[jax.Array], jax.Array]


@field_docs
class VCOutput(NamedTuple):
  """Per-step output of :func:`vcrnn` and :func:`vcgru` (``[batch, ...]``).

  Attributes:
    output: [batch, hidden_size] h_t, what readouts read
    m: [batch] m_t of Eq. 7, in the params' dtype
    dims: [batch] int32 dimensions updated (e_i > 0; hard: d_t)
  """
  output: jax.Array
  m: jax.Array
  dims: jax.Array


# ----------------------------------------------------------------------------
# The sharpness, the soft mask and the scheduler (Eq. 7-8, 11).


def paper_sharpness(steps_per_epoch: int, *, initial: float = 0.1,
                    increment: float = 0.1, maximum: float = 1.0) -> Schedule:
  r"""The sharpness schedule of Sec. 5: 0.1, then +0.1 per epoch, up to 1.

  .. math::

    \lambda(s) = \min(\lambda_{max}, \lambda_0
        + \delta \lfloor s / \mathrm{steps\_per\_epoch} \rfloor)

  Args:
    steps_per_epoch: training steps in one epoch (positive int).
    initial: :math:`\lambda_0` (paper: 0.1).
    increment: :math:`\delta` per epoch (paper: 0.1).
    maximum: :math:`\lambda_{max}` (paper: 1).

  Returns:
    A schedule ``step -> lambda`` (float32) that takes a traced int32 step,
    for the ``sharpness`` of :func:`vcrnn` and :func:`vcgru`.

  Example::

    cell = vcrnn(1024, sharpness=paper_sharpness(steps_per_epoch=500))

  References:
    Jernite et al. 2017, Sec. 5 ("In all experiments, we start with a
    sharpness parameter lambda = 0.1, and increase it by 0.1 per epoch to a
    maximum value of 1").
  """
  steps_per_epoch = check_positive_int('steps_per_epoch', steps_per_epoch)
  for name, value in (('initial', initial), ('maximum', maximum)):
    if not value > 0:
      raise ValueError(f'{name} must be positive, got {value!r}.')
  if increment < 0:
    raise ValueError(f'increment must be >= 0, got {increment!r}.')

  def schedule(step):
    epoch = jnp.asarray(step) // steps_per_epoch
    value = initial + increment * epoch.astype(jnp.float32)
    return utils.cast(jnp.minimum(value, maximum), jnp.float32)

  return schedule


def soft_mask(m: jax.Array, hidden_size: int, sharpness: Any,
              epsilon: float = 0.01) -> jax.Array:
  r"""The soft mask :math:`e_t` of Eq. 8 (and 11), ``[..., hidden_size]``.

  .. math::

    (e_t)_i = \mathrm{Thres}_\epsilon\big(\sigma(\lambda (m_t D - i))\big),
    \quad i = 0, \dots, D - 1                                   \quad (8)

  :math:`\mathrm{Thres}_\epsilon` maps values above :math:`1 - \epsilon` to
  1 and values below :math:`\epsilon` to 0; the gradient through those
  entries is zero (they are constants of ``m``). The mask is non-increasing
  in ``i``. It is computed in at least float32 (``m_t D - i`` in bfloat16
  would be off by several dimensions at ``D = 1024``).

  .. warning:: Eq. 8 indexes dimensions from 1, so at :math:`m_t = 1` the
    last one gets :math:`\sigma(0) = 1/2` whatever :math:`\lambda`: the unit
    could never update its whole state, and as :math:`\lambda \to \infty` it
    would update :math:`\lfloor m_t D \rfloor` dimensions. We index from 0
    (the paper's :math:`i - 1`), so that as :math:`\lambda \to \infty` the
    mask selects exactly the first :math:`\lceil m_t D \rceil` dimensions
    (for :math:`m_t D` not an integer), the partial update of Sec. 4.1, and
    :math:`m_t = 1` is the full Elman or GRU update.

  Args:
    m: ``[...]`` scheduler outputs :math:`m_t`.
    hidden_size: ``D``.
    sharpness: :math:`\lambda` (positive float or scalar array).
    epsilon: :math:`\epsilon` of :math:`\mathrm{Thres}_\epsilon`, in
      ``[0, 0.5)``.

  Returns:
    ``e_t`` of shape ``m.shape + (hidden_size,)``, in ``m``'s floating dtype
    promoted to at least float32.

  Example:

    >>> import jax.numpy as jnp
    >>> from vcrnn_jax import vc
    >>> e = vc.soft_mask(jnp.array([0.3]), 8, sharpness=1.0)   # m_t D = 2.4
    >>> e.shape
    (1, 8)
    >>> [round(float(v), 2) for v in e[0]]
    [0.92, 0.8, 0.6, 0.35, 0.17, 0.07, 0.03, 0.0]
    >>> sharp = vc.soft_mask(jnp.array([0.3]), 8, sharpness=10.0)
    >>> [round(float(v), 2) for v in sharp[0]]     # -> the first ceil(2.4) = 3
    [1.0, 1.0, 0.98, 0.0, 0.0, 0.0, 0.0, 0.0]

  References:
    Jernite et al. 2017, Eq. 8 and 11.
  """
  m = jnp.asarray(m)
  dtype = utils.at_least_float32(m.dtype)
  m = utils.cast(m, dtype)
  # i gets m's batch axes explicitly (rank promotion may be an error).
  i = jnp.arange(hidden_size, dtype=dtype).reshape(
      (1,) * m.ndim + (hidden_size,))
  lam = jnp.asarray(sharpness, dtype)
  s = jax.nn.sigmoid(lam * (m[..., None] * hidden_size - i))         # (8)
  # jnp.where passes no gradient to the branch it does not select, so the
  # thresholded entries are constants (Thres_eps).
  return jnp.where(s > 1.0 - epsilon, jnp.ones_like(s),
                   jnp.where(s < epsilon, jnp.zeros_like(s), s))      # (8)


def _sharpness_at(sharpness, context: Context, name: str) -> Any:
  if not callable(sharpness):
    return sharpness
  if context.step is None:
    raise ValueError(
        f'{name}.apply: sharpness is a schedule (step -> lambda), so the cell '
        'needs the training step: pass context=vcrnn_jax.Context(step=...) '
        '(an int32 array; unroll forwards it), or build the cell with a '
        'float sharpness for evaluation.')
  return sharpness(context.step)


def _scheduler(params, h, x):
  p = params['scheduler']
  logit = utils.add_bias(
      h @ p['recurrent_kernel'] + x @ p['input_kernel'], p['bias'])[..., 0]
  return jax.nn.sigmoid(logit)                                        # (7)


def _projected(params, x):
  """``x`` brought to the hidden size (the cell's projection, if any)."""
  if 'input_projection' in params:
    return x @ params['input_projection']
  return x


def _keep_or_update(e, new, old):
  # Dimensions with e = 0 are copied, not recomputed as 0 * g + 1 * h, so
  # they stay bit-exact even where g overflows.
  return jnp.where(e > 0, new, old)


# ----------------------------------------------------------------------------
# The hard inference path: only the first d_t rows and columns are computed.


def _block_sizes(hidden_size: int, block_sizes: Any) -> tuple[int, ...]:
  """The static update sizes of the hard path, ascending, ending at D."""
  if isinstance(block_sizes, (int, np.integer)) and not isinstance(
      block_sizes, bool):
    n = check_positive_int('block_sizes', block_sizes)
    sizes = sorted({math.ceil(hidden_size * k / n) for k in range(1, n + 1)})
  else:
    try:
      sizes = [int(s) for s in block_sizes]
    except (TypeError, ValueError):
      raise ValueError(
          'block_sizes must be a positive int (that many equal blocks) or an '
          f'increasing sequence of sizes in [1, hidden_size], got '
          f'{block_sizes!r}.') from None
    if (not sizes or sizes[0] < 1 or sizes[-1] > hidden_size
        or any(b <= a for a, b in zip(sizes, sizes[1:]))):
      raise ValueError(
          'block_sizes must be strictly increasing sizes in [1, '
          f'hidden_size={hidden_size}], got {block_sizes!r}.')
    if sizes[-1] != hidden_size:
      sizes.append(hidden_size)
  return tuple(sizes)


def _shells(kernels, sizes):
  """The ``[D, D]`` kernels re-laid out for products with their prefixes.

  With blocks ``[lo_j, s_j)`` of the sizes, the upper-left ``s_k x s_k``
  block of a kernel ``W`` is covered exactly once by the column shells
  ``W[:s_j, lo_j:s_j]`` and the row shells ``W[lo_j:s_j, :lo_j]``, ``j <=
  k``, each a whole contiguous array. The kernels, which multiply
  concatenated inputs, are stacked along their rows. The relayout copies
  each kernel once (a copy per size would take about ``K / 3`` times
  more, rebuilt for every sequence). The full size's own update reads the
  kernels as they are; its shells serve :func:`_ragged_matmul`.
  """
  lo = (0,) + sizes[:-1]
  cols = [jnp.concatenate([w[:s, a:s] for w in kernels], axis=0)
          for a, s in zip(lo, sizes)]
  rows = [jnp.concatenate([w[a:s, :a] for w in kernels], axis=0)
          for a, s in zip(lo[1:], sizes[1:])]
  return cols, rows, list(kernels)


def _shell_matmul(shells, inputs, k, sizes):
  """``sum_i inputs[i][:, :s] @ kernels[i][:s, :s]``, ``s = sizes[k]``.

  ``2 k + 1`` matmuls over whole shells (no weight slicing per step, which
  XLA would materialise as copies); the full size is the plain product.
  """
  cols, rows, kernels = shells
  if k == len(sizes) - 1:
    return sum(a @ w for a, w in zip(inputs, kernels))
  lo = (0,) + sizes[:-1]
  out = jnp.concatenate(
      [jnp.concatenate([a[:, :sizes[j]] for a in inputs], axis=-1) @ cols[j]
       for j in range(k + 1)], axis=-1)
  for j in range(1, k + 1):
    part = jnp.concatenate([a[:, lo[j]:sizes[j]] for a in inputs], axis=-1)
    out = out.at[:, :lo[j]].add(part @ rows[j - 1])
  return out


def _ragged_matmul(shells, inputs, counts, sizes, row_sizes):
  """``sum_i inputs[i] @ kernels[i]`` where row ``r`` needs its first
  ``s_r`` dimensions only, the rows sorted by ``s_r``, largest first.

  Shell ``j`` (:func:`_shells`) is multiplied for the first
  ``row_sizes[counts[j] - 1]`` rows only (the smallest bucket of
  :func:`vcrnn_jax.compaction.bucket_sizes` that holds every row with
  ``s_r > sizes[j - 1]``, that reaches into the shell; none when
  ``counts[j]`` is 0), one ``lax.switch``
  per shell over the static row counts. The work is then about ``sum_r
  s_r**2`` rather than the batch times the largest ``s_r**2``. A row's
  inputs beyond its ``s_r`` must be zero and its outputs there are not
  meaningful (the caller keeps the old state).
  """
  cols, rows, _ = shells
  batch = inputs[0].shape[0]
  lo = (0,) + sizes[:-1]
  out = jnp.zeros((batch, sizes[-1]), jnp.result_type(*inputs))

  def shell(j, n):
    def run(out):
      a = jnp.concatenate([x[:n, :sizes[j]] for x in inputs], axis=-1)
      out = out.at[:n, lo[j]:sizes[j]].add(a @ cols[j])
      if j > 0:
        b = jnp.concatenate([x[:n, lo[j]:sizes[j]] for x in inputs], axis=-1)
        out = out.at[:n, :lo[j]].add(b @ rows[j - 1])
      return out
    return run

  for j in range(len(sizes)):
    out = lax.switch(counts[j], [lambda out: out]
                     + [shell(j, n) for n in row_sizes], out)
  return out


def _hard_apply(prepare, update, sizes, compact_rows, params, h, x, m,
                context):
  """Partial updates of Sec. 4.1 with d_t rounded up to a static size.

  ``prepare(params, sizes)`` re-lays out the weights into the shells of
  ``sizes`` (:func:`_shells`); it is built once per ``apply``: inside
  ``lax.scan`` it does not depend on the carry, so XLA's loop-invariant
  code motion moves it out of the loop.
  ``update(operands, k, h_s, x_s)`` returns the new first ``sizes[k]``
  dimensions from the first ``sizes[k]`` of ``h`` and of the input.
  """
  hidden_size = h.shape[-1]
  branch_sizes = jnp.asarray((0,) + sizes, jnp.int32)
  need = jnp.ceil(utils.cast(m, jnp.float32) * hidden_size).astype(jnp.int32)
  need = jnp.clip(need, 0, hidden_size)
  if context.active is not None:
    # Rows the caller discards (padding) update nothing.
    need = jnp.where(context.active, need, 0)
  # The smallest size >= need (index 0: no update).
  bucket = jnp.sum(need[:, None] > branch_sizes[None, :], axis=-1,
                   dtype=jnp.int32)
  dims = branch_sizes[bucket]
  projection = params.get('input_projection')
  row_sizes = compaction.bucket_sizes(h.shape[0], compact_rows)
  if len(row_sizes) > 1:
    return _compacted_apply(prepare, update, sizes, row_sizes, params, h, x,
                            bucket, dims, projection), dims
  # The projection's column blocks: the update of size sizes[k] reads the
  # first k + 1 of them (I * sizes[k] multiplications), the full one P.
  operands = (prepare(params, sizes), None if projection is None else (
      [projection[:, a:s] for a, s in zip((0,) + sizes[:-2], sizes[:-1])],
      projection))

  def branch(k):
    def run(operands, h, x, d):
      if k == 0:
        return h
      s = sizes[k - 1]
      cell_operands, projection = operands
      if projection is None:
        x_s = x[:, :s]
      elif k == len(sizes):
        x_s = x @ projection[1]
      else:
        x_s = jnp.concatenate([x @ c for c in projection[0][:k]], axis=-1)
      # A row may need fewer dimensions than its group computes: its inputs
      # beyond them are zeroed, as Eq. 12's mask does, and its state there
      # is carried.
      keep = jnp.arange(s, dtype=jnp.int32)[None, :] < d[:, None]
      h_s = h[:, :s]
      matmul = functools.partial(_shell_matmul, k=k - 1, sizes=sizes)
      new = update(cell_operands, matmul, jnp.where(keep, h_s, 0),
                   jnp.where(keep, x_s, 0))
      return jnp.concatenate([jnp.where(keep, new, h_s), h[:, s:]], axis=-1)
    return run

  branches = [branch(k) for k in range(len(sizes) + 1)]
  # One switch on the batch's largest size: outside vmap only that branch
  # runs (under vmap a switch becomes a select that runs all of them).
  return lax.switch(jnp.max(bucket), branches, operands, h, x, dims), dims


# The compacted path's shells are at least min(SHELL_WIDTH, D / 4) columns
# wide: its matmuls are [rows, 2 s] x [2 s, width], and narrower ones leave
# the matmul kernels idle. VCRNN at batch 64, m-bar 0.3, spread rows, D/8
# sizes, on 2 CPU cores: D 1024, 0.78-0.81x Elman with 128-wide shells,
# 0.59-0.62x with 256, 0.65-0.67x with 512; D 2048, 0.50-0.52x with 256,
# 0.64-0.65x with 1024; D 256, 0.80x with 32, 0.69x with 64.
SHELL_WIDTH = 256


def _shell_sizes(sizes: tuple[int, ...]) -> tuple[int, ...]:
  """``sizes`` thinned for :func:`_ragged_matmul`: a size is kept where it
  is at least the shell width above the last one kept and below ``D``.

  A row then computes up to the end of the shell its size falls in; its
  inputs beyond its size are zero and its outputs there are dropped, so
  the values are those of the sizes themselves (up to rounding).
  """
  hidden_size = sizes[-1]
  width = max(1, min(SHELL_WIDTH, hidden_size // 4))
  shells = []
  for s in sizes[:-1]:
    if s - (shells[-1] if shells else 0) >= width and hidden_size - s >= width:
      shells.append(s)
  return tuple(shells) + (hidden_size,)


def _compacted_apply(prepare, update, sizes, row_sizes, params, h, x, bucket,
                     dims, projection):
  """:func:`_hard_apply` with ``compact_rows``: the rows sorted by size,
  largest first (:mod:`vcrnn_jax.compaction`), and each weight shell of
  :func:`_shell_sizes` multiplied for the smallest bucket of rows that
  holds the rows that reach into it (:func:`_ragged_matmul`)."""
  hidden_size = h.shape[-1]
  shell_sizes = _shell_sizes(sizes)
  order = compaction.order_rows(bucket, levels=len(sizes) + 1)
  h_sorted, x_sorted, dims_sorted = compaction.take((h, x, dims), order)
  if projection is not None:
    x_sorted = x_sorted @ projection
  lo = jnp.asarray((0,) + shell_sizes[:-1], jnp.int32)
  needs = jnp.sum(dims[:, None] > lo[None, :], axis=0, dtype=jnp.int32)
  counts = compaction.bucket_index(needs, row_sizes)
  keep = (jnp.arange(hidden_size, dtype=jnp.int32)[None, :]
          < dims_sorted[:, None])
  matmul = functools.partial(_ragged_matmul, counts=counts,
                             sizes=shell_sizes, row_sizes=row_sizes)
  new = update(prepare(params, shell_sizes), matmul,
               jnp.where(keep, h_sorted, 0), jnp.where(keep, x_sorted, 0))
  h_new = jnp.where(keep, new, h_sorted)
  return compaction.put(jnp.zeros_like(h), order, h_new)


# ----------------------------------------------------------------------------
# The cells.


def _check_cell_args(hidden_size, sharpness, epsilon, block_sizes):
  hidden_size = check_positive_int('hidden_size', hidden_size)
  if not callable(sharpness):
    if isinstance(sharpness, bool) or not isinstance(
        sharpness, (int, float, np.floating, np.integer)) or not sharpness > 0:
      raise ValueError(
          'sharpness must be a positive float or a schedule step -> lambda '
          f'(e.g. vc.paper_sharpness(steps_per_epoch)), got {sharpness!r}.')
    sharpness = float(sharpness)
  if not 0.0 <= epsilon < 0.5:
    raise ValueError(f'epsilon must be in [0, 0.5), got {epsilon!r}.')
  sizes = _block_sizes(hidden_size, block_sizes)
  return hidden_size, sharpness, sizes


def _init_scheduler(key, input_size, hidden_size, scheduler_init,
                    scheduler_bias, kernel_init, dtype):
  """Scheduler (Eq. 7) params, and the input projection when ``I != D``."""
  k1, k2, k3 = jax.random.split(key, 3)
  params = {
      'scheduler': {
          'input_kernel': utils.initialize(scheduler_init, k1,
                                           (input_size, 1), dtype),
          'recurrent_kernel': utils.initialize(scheduler_init, k2,
                                               (hidden_size, 1), dtype),
          'bias': jnp.full((1,), scheduler_bias, dtype),
      }
  }
  if input_size != hidden_size:
    params['input_projection'] = utils.initialize(
        kernel_init, k3, (input_size, hidden_size), dtype)
  return params


def _vc_cell(name: str, hidden_size: int, state_type, init_weights,
             prepare, update, soft_update, *, sharpness, epsilon,
             scheduler_bias, scheduler_init, hard, block_sizes, compact_rows,
             kernel_init, param_dtype) -> Cell:
  """The variable-computation driver of :func:`vcrnn` and :func:`vcgru`.

  It owns what the two share: the scheduler (Eq. 7), the soft mask and the
  masked inputs (Eq. 11-12), the carried dimensions, and the hard path
  (:func:`_hard_apply`). Each cell gives its own equations:

  * ``init_weights(key) -> (weights, scheduler_key)``;
  * ``prepare`` and ``update``: the hard path's (:func:`_hard_apply`);
  * ``soft_update(params, e, h_bar, x_bar, h) -> h_t``: the soft update
    from the masked state and input (Eq. 13; Eq. 14-16).
  """
  _, sharpness, sizes = _check_cell_args(hidden_size, sharpness, epsilon,
                                         block_sizes)
  hard = check_bool('hard', hard)

  def init(key, input_size):
    input_size = check_positive_int('input_size', input_size)
    params, k_scheduler = init_weights(key)
    params.update(_init_scheduler(k_scheduler, input_size, hidden_size,
                                  scheduler_init, scheduler_bias,
                                  kernel_init, param_dtype))
    return params

  def initial_state(batch_size):
    batch_size = check_positive_int('batch_size', batch_size)
    return state_type(h=jnp.zeros((batch_size, hidden_size), param_dtype))

  def apply(params, state, x, context=None):
    context = as_context(context)
    dtype = params['input_kernel'].dtype
    x = check_apply_args(name, params['scheduler']['input_kernel'].shape[0],
                         state, x, dtype, width=hidden_size)
    h = state.h
    m = _scheduler(params, h, x)                                      # (7)
    if hard:
      h_new, dims = _hard_apply(prepare, update, sizes, compact_rows, params,
                                h, x, m, context)
      return state_type(h=h_new), VCOutput(output=h_new, m=m, dims=dims)
    lam = _sharpness_at(sharpness, context, name)
    e = soft_mask(m, hidden_size, lam, epsilon)                      # (11)
    dims = jnp.sum(e > 0, axis=-1, dtype=jnp.int32)
    e = utils.cast(e, dtype)
    h_bar, x_bar = e * h, e * _projected(params, x)                  # (12)
    h_new = _keep_or_update(e, soft_update(params, e, h_bar, x_bar, h), h)
    return state_type(h=h_new), VCOutput(output=h_new, m=m, dims=dims)

  return Cell(init, initial_state, apply)




def vcrnn(
    hidden_size: int,
    *,
    sharpness: float | Schedule = 1.0,
    epsilon: float = 0.01,
    scheduler_bias: float = 0.0,
    scheduler_init: utils.Initializer = jax.nn.initializers.zeros,
    hard: bool = False,
    block_sizes: int | Sequence[int] = 8,
    compact_rows: int | None = None,
    kernel_init: utils.Initializer = utils.default_kernel_init,
    recurrent_kernel_init: utils.Initializer = (
        utils.default_recurrent_kernel_init),
    bias_init: utils.Initializer = utils.default_bias_init,
    param_dtype: Any = jnp.float32,
) -> Cell:
  r"""The Variable Computation RNN, Eq. 7, 11-13 (Elman based).

  .. math::

    m_t = \sigma(u \cdot h_{t-1} + v \cdot x_t + b)             \quad (7)

    (e_t)_i = \mathrm{Thres}_\epsilon(\sigma(\lambda(m_t D - i)))
        \quad (11)

    \bar h_{t-1} = e_t \odot h_{t-1}, \quad
    \bar x_t = e_t \odot \tilde x_t                             \quad (12)

    h_t = e_t \odot \tanh(U \bar h_{t-1} + V \bar x_t + b_h)
        + (1 - e_t) \odot h_{t-1}                               \quad (13)

  (Eq. 9 and 13 print :math:`(1 - e_t) \odot h_t` for the carried term; it
  is :math:`h_{t-1}`.) The mask is :func:`soft_mask` (its warning: we index
  the dimensions from 0). :math:`\tilde x_t` is the input at the hidden size
  ``D``, as the paper assumes: when ``init``'s ``input_size`` is ``D`` it is
  ``x_t`` itself (a language model feeds an embedding of size ``D``, a
  lookup with no multiplications); otherwise the cell owns an input
  projection :math:`\tilde x_t = P x_t` (``[input_size, D]``, no bias),
  applied before the mask, whose cost (``input_size`` times the dimensions
  updated) :func:`multiplications` counts.

  .. warning:: The scheduler reads the raw input: ``v`` has ``input_size``
    entries and dots with :math:`x_t`, not :math:`\tilde x_t` (the same for
    ``input_size = D``). Reading :math:`\tilde x_t` would need the full
    projection before :math:`m_t` is known, i.e. all its ``D`` columns,
    which is the work the mask is there to skip.

  **Hard inference path** (``hard=True``; not in the paper, whose savings
  are operation counts only). Each row updates exactly its first
  :math:`d_t` dimensions with the upper-left :math:`d_t \times d_t` blocks
  (the partial update of Sec. 4.1) and carries the rest, where
  :math:`d_t = \lceil m_t D \rceil` rounded up to the next of a few static
  ``block_sizes``. The work is one ``lax.switch`` over those sizes, so
  only the blocks a step needs are read and multiplied. It equals the soft
  mask as :math:`\lambda \to \infty` whenever :math:`\lceil m_t D \rceil`
  is one of the sizes and :math:`m_t D` is not an integer. Rows whose
  ``context.active`` is False update nothing. Each ``apply`` re-lays out
  the weights once into contiguous "shells" (a copy of each kernel, so
  that a step never slices a weight matrix, which XLA would copy at every
  step); inside ``lax.scan`` (:func:`vcrnn_jax.unroll`) XLA hoists that
  out of the loop, so the hard path pays over sequences, not for a lone
  jitted step. Under ``vmap`` a switch runs every branch (correct, no
  savings). ``benchmarks/vc_inference.py`` measures the speed-ups
  (docs/performance.md has the numbers).

  Params (names shared with :func:`vcrnn_jax.cells.elman`, whose params
  are this tree without ``scheduler`` and ``input_projection``):

  * ``input_kernel``: ``[D, D]`` (``V^T``)
  * ``recurrent_kernel``: ``[D, D]`` (``U^T``)
  * ``bias``: ``[D]`` (``b_h``)
  * ``scheduler``: ``{'input_kernel': [input_size, 1]`` (``v``),
    ``'recurrent_kernel': [D, 1]`` (``u``), ``'bias': [1]`` (``b``) ``}``
  * ``input_projection``: ``[input_size, D]`` (``P^T``), only when
    ``input_size != D``

  State: :class:`vcrnn_jax.cells.ElmanState` ``(h,)``; output
  :class:`VCOutput` ``(output=h_t, m=m_t, dims)``, ``dims`` the number of
  dimensions with :math:`(e_t)_i > 0` (hard path: :math:`d_t`).

  Args:
    hidden_size: ``D``.
    sharpness: :math:`\lambda` of Eq. 8: a positive float, or a schedule
      ``step -> lambda`` (e.g. :func:`paper_sharpness`) evaluated at
      ``context.step`` (an int32 array, so a new step does not recompile).
      With a schedule, ``apply`` without ``context.step`` raises
      ``ValueError`` (there is no right default: evaluation should use the
      step's value, or a float-sharpness cell with the same params).
    epsilon: :math:`\epsilon` of :math:`\mathrm{Thres}_\epsilon`, in
      ``[0, 0.5)``. The paper gives no value; 0.01 leaves a soft band of
      about :math:`2 \ln(99) / \lambda \approx 9.2 / \lambda` dimensions.
    scheduler_bias: initial ``b`` of Eq. 7 (0: :math:`m_t = 1/2` at init).
    scheduler_init: initialiser of ``u`` and ``v`` (zeros: :math:`m_t =
      \sigma(b)` at init, whatever the input).
    hard: False (default): the paper's soft mask, differentiable, full
      cost. True: the inference path (see above); ignores ``sharpness`` and
      ``epsilon``; gives no gradient to the scheduler. It saves time on a
      CPU only: on a GPU each step is a few small kernels whatever its
      size, and the hard path measured 2.6-4.8x slower than the full step
      (7x with ``compact_rows``) on an H200 (docs/performance.md, "On a
      GPU").
    block_sizes: the hard path's static sizes: an int ``n`` (the multiples
      of ``D / n``, rounded up; default 8) or an increasing sequence (``D``
      is added when missing).
    compact_rows: the hard path's batching: None (default) computes every
      row at the batch's largest size; ``m`` sorts the rows by size and
      multiplies each weight shell only for the rows that need it, in
      multiples of ``m`` rows (:mod:`vcrnn_jax.compaction`), so the work
      follows the sum over rows of ``d_t**2`` (pays when rows differ a
      lot). The shells are the sizes thinned to at least
      ``min(256, D / 4)`` columns each (``SHELL_WIDTH``): fewer, wider
      matmuls, the same values.
    kernel_init, recurrent_kernel_init, bias_init: initialisers of ``V``
      (and of the input projection), ``U`` and the biases, as in the cell it
      extends.
    param_dtype: dtype of the params and the state.

  Returns:
    A :class:`vcrnn_jax.Cell`.

  Example::

    cell = vcrnn(1024, sharpness=paper_sharpness(steps_per_epoch=500))
    params = cell.init(jax.random.key(0), input_size=1024)
    state, out = cell.apply(params, cell.initial_state(8), x,
                            vcrnn_jax.Context(step=jnp.int32(step)))
    fast = vcrnn(1024, hard=True)          # same params, inference

  References:
    Jernite et al., Variable Computation in Recurrent Neural Networks, ICLR
    2017, Sec. 4 and Appendix A.
  """
  hidden_size = check_positive_int('hidden_size', hidden_size)
  sizes = _block_sizes(hidden_size, block_sizes)
  compact_rows = compaction.check_compact_rows(compact_rows)

  def init_weights(key):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return {
        'input_kernel': utils.initialize(
            kernel_init, k1, (hidden_size, hidden_size), param_dtype),
        'recurrent_kernel': utils.initialize(
            recurrent_kernel_init, k2, (hidden_size, hidden_size), param_dtype),
        'bias': utils.initialize(
            bias_init, k3, (hidden_size,), param_dtype),
    }, k4

  def prepare(params, sizes):
    return _shells([params['input_kernel'], params['recurrent_kernel']],
                   sizes), params['bias']

  def update(operands, matmul, h_s, x_s):
    shells, bias = operands
    return jnp.tanh(utils.add_bias(
        matmul(shells, [x_s, h_s]),
        bias[:h_s.shape[-1]]))                                         # (3)

  def soft_update(params, e, h_bar, x_bar, h):
    g = jnp.tanh(utils.add_bias(
        x_bar @ params['input_kernel'] + h_bar @ params['recurrent_kernel'],
        params['bias']))
    return e * g + (1.0 - e) * h                                     # (13)

  return _vc_cell(
      'vcrnn', hidden_size, ElmanState, init_weights, prepare, update,
      soft_update, sharpness=sharpness, epsilon=epsilon,
      scheduler_bias=scheduler_bias, scheduler_init=scheduler_init,
      hard=hard, block_sizes=sizes, compact_rows=compact_rows,
      kernel_init=kernel_init, param_dtype=param_dtype)




def vcgru(
    hidden_size: int,
    *,
    sharpness: float | Schedule = 1.0,
    epsilon: float = 0.01,
    scheduler_bias: float = 0.0,
    scheduler_init: utils.Initializer = jax.nn.initializers.zeros,
    hard: bool = False,
    block_sizes: int | Sequence[int] = 8,
    compact_rows: int | None = None,
    kernel_init: utils.Initializer = utils.default_kernel_init,
    recurrent_kernel_init: utils.Initializer = (
        utils.default_recurrent_kernel_init),
    bias_init: utils.Initializer = utils.default_bias_init,
    param_dtype: Any = jnp.float32,
) -> Cell:
  r"""The Variable Computation GRU, Eq. 7, 11, 12, 14-16 (GRU based).

  .. math::

    m_t = \sigma(u \cdot h_{t-1} + v \cdot x_t + b)             \quad (7)

    (e_t)_i = \mathrm{Thres}_\epsilon(\sigma(\lambda(m_t D - i)))
        \quad (11)

    \bar h_{t-1} = e_t \odot h_{t-1}, \quad
    \bar x_t = e_t \odot \tilde x_t                             \quad (12)

    r_t = \sigma(U_r \bar h_{t-1} + V_r \bar x_t + b_r), \quad
    z_t = e_t \odot \sigma(U_z \bar h_{t-1} + V_z \bar x_t + b_z)
        \quad (14)

    \tilde h_t = \tanh(U (r_t \odot \bar h_{t-1}) + V \bar x_t + b_h)
        \quad (15)

    h_t = z_t \odot \tilde h_t + (1 - z_t) \odot h_{t-1}        \quad (16)

  Dimensions with :math:`(e_t)_i = 0` have :math:`z_t = 0` and are carried
  unchanged. The biases (absent from the paper's equations) are those of
  :func:`vcrnn_jax.cells.gru`; the input :math:`\tilde x_t`, the scheduler's
  input, the mask's indexing and the hard inference path (``hard=True``:
  the GRU's upper-left :math:`d_t \times d_t` blocks only) are as in
  :func:`vcrnn`, whose warnings apply.

  Params (names and layout shared with :func:`vcrnn_jax.cells.gru`, whose
  params are this tree without ``scheduler`` and ``input_projection``):

  * ``input_kernel``: ``[D, 3 D]`` (``V_r, V_z, V``)
  * ``recurrent_gates_kernel``: ``[D, 2 D]`` (``U_r, U_z``)
  * ``recurrent_kernel``: ``[D, D]`` (``U``)
  * ``bias``: ``[3 D]`` (``b_r, b_z, b_h``)
  * ``scheduler`` and ``input_projection``: as in :func:`vcrnn`

  State: :class:`vcrnn_jax.cells.GRUState` ``(h,)``; output
  :class:`VCOutput` ``(output=h_t, m=m_t, dims)``.

  Args:
    hidden_size: ``D``.
    sharpness: :math:`\lambda` of Eq. 8: a positive float, or a schedule
      ``step -> lambda`` (e.g. :func:`paper_sharpness`) evaluated at
      ``context.step`` (an int32 array, so a new step does not recompile).
      With a schedule, ``apply`` without ``context.step`` raises
      ``ValueError`` (there is no right default: evaluation should use the
      step's value, or a float-sharpness cell with the same params).
    epsilon: :math:`\epsilon` of :math:`\mathrm{Thres}_\epsilon`, in
      ``[0, 0.5)``. The paper gives no value; 0.01 leaves a soft band of
      about :math:`2 \ln(99) / \lambda \approx 9.2 / \lambda` dimensions.
    scheduler_bias: initial ``b`` of Eq. 7 (0: :math:`m_t = 1/2` at init).
    scheduler_init: initialiser of ``u`` and ``v`` (zeros: :math:`m_t =
      \sigma(b)` at init, whatever the input).
    hard: False (default): the paper's soft mask, differentiable, full
      cost. True: the inference path (see above); ignores ``sharpness`` and
      ``epsilon``; gives no gradient to the scheduler. It saves time on a
      CPU only: on a GPU each step is a few small kernels whatever its
      size, and the hard path measured 2.6-4.8x slower than the full step
      (7x with ``compact_rows``) on an H200 (docs/performance.md, "On a
      GPU").
    block_sizes: the hard path's static sizes: an int ``n`` (the multiples
      of ``D / n``, rounded up; default 8) or an increasing sequence (``D``
      is added when missing).
    compact_rows: the hard path's batching: None (default) computes every
      row at the batch's largest size; ``m`` sorts the rows by size and
      multiplies each weight shell only for the rows that need it, in
      multiples of ``m`` rows (:mod:`vcrnn_jax.compaction`), so the work
      follows the sum over rows of ``d_t**2`` (pays when rows differ a
      lot). The shells are the sizes thinned to at least
      ``min(256, D / 4)`` columns each (``SHELL_WIDTH``): fewer, wider
      matmuls, the same values.
    kernel_init, recurrent_kernel_init, bias_init: initialisers of ``V``
      (and of the input projection), ``U`` and the biases, as in the cell it
      extends.
    param_dtype: dtype of the params and the state.

  Returns:
    A :class:`vcrnn_jax.Cell`.

  Example::

    cell = vcgru(1024, sharpness=paper_sharpness(steps_per_epoch=500))
    params = cell.init(jax.random.key(0), input_size=1024)
    state, out = cell.apply(params, cell.initial_state(8), x,
                            vcrnn_jax.Context(step=jnp.int32(step)))
    omega = penalty(out.m, 0.3)                          # Eq. 10, [8]

  References:
    Jernite et al., Variable Computation in Recurrent Neural Networks, ICLR
    2017, Appendix A.
  """
  n = hidden_size = check_positive_int('hidden_size', hidden_size)
  sizes = _block_sizes(hidden_size, block_sizes)
  compact_rows = compaction.check_compact_rows(compact_rows)

  def init_weights(key):
    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    return {
        'input_kernel': utils.stacked_init(
            kernel_init, k1, n, n, 3, param_dtype),
        'recurrent_gates_kernel': utils.stacked_init(
            recurrent_kernel_init, k2, n, n, 2, param_dtype),
        'recurrent_kernel': utils.initialize(
            recurrent_kernel_init, k3, (n, n), param_dtype),
        'bias': utils.initialize(bias_init, k4, (3 * n,), param_dtype),
    }, k5

  def prepare(params, sizes):
    v, u = params['input_kernel'], params['recurrent_gates_kernel']
    return ([_shells([v[:, g * n:(g + 1) * n], u[:, g * n:(g + 1) * n]],
                     sizes) for g in range(2)]
            + [_shells([v[:, 2 * n:], params['recurrent_kernel']], sizes),
               params['bias']])

  def update(operands, matmul, h_s, x_s):
    shells_r, shells_z, shells_h, b = operands
    s = h_s.shape[-1]
    r = jax.nn.sigmoid(utils.add_bias(
        matmul(shells_r, [x_s, h_s]), b[:s]))                          # (4)
    z = jax.nn.sigmoid(utils.add_bias(
        matmul(shells_z, [x_s, h_s]), b[n:n + s]))                     # (4)
    h_tilde = jnp.tanh(utils.add_bias(
        matmul(shells_h, [x_s, r * h_s]),
        b[2 * n:2 * n + s]))                                            # (5)
    return z * h_tilde + (1.0 - z) * h_s                                # (6)

  def soft_update(params, e, h_bar, x_bar, h):
    x_r, x_z, x_h = jnp.split(
        utils.add_bias(x_bar @ params['input_kernel'], params['bias']), 3,
        axis=-1)
    g_r, g_z = jnp.split(h_bar @ params['recurrent_gates_kernel'], 2,
                         axis=-1)
    r = jax.nn.sigmoid(x_r + g_r)                                    # (14)
    z = e * jax.nn.sigmoid(x_z + g_z)                                # (14)
    h_tilde = jnp.tanh((r * h_bar) @ params['recurrent_kernel'] + x_h)  # (15)
    return z * h_tilde + (1.0 - z) * h                               # (16)

  return _vc_cell(
      'vcgru', hidden_size, GRUState, init_weights, prepare, update,
      soft_update, sharpness=sharpness, epsilon=epsilon,
      scheduler_bias=scheduler_bias, scheduler_init=scheduler_init,
      hard=hard, block_sizes=sizes, compact_rows=compact_rows,
      kernel_init=kernel_init, param_dtype=param_dtype)




# ----------------------------------------------------------------------------
# The penalty of Eq. 10 and the "guide" targets of Sec. 5.2.2.


def penalty(m: jax.Array, target: Any, *, norm: str = 'l1',
            symmetric: bool = True,
            mask: jax.Array | None = None) -> jax.Array:
  r"""The scheduler penalty :math:`\Omega(m, \bar m)` of Eq. 10, per sequence.

  .. math::

    \mathcal{O} = \mathcal{L} + \Omega(m, \bar m), \qquad
    \Omega(m, \bar m) = \sum_t w_t\, \rho(m_t - \bar m_t)        \quad (10)

  with :math:`\rho(a) = |a|` (``'l1'``) or :math:`a^2` (``'l2'``) when
  ``symmetric`` (penalising :math:`m_t` above and below the target, the
  paper's experiments: symmetric l1), or :math:`\rho(\max(a, 0))` otherwise
  (only above the target). The paper gives no weight; scale the result in
  the loss.

  Args:
    m: ``[batch, time]`` scheduler outputs (``ys.m`` from
      :func:`vcrnn_jax.unroll`) or ``[batch]`` for one step.
    target: :math:`\bar m`: a scalar, or an array of ``m``'s shape (a
      target per step, e.g. from :func:`guide_targets`).
    norm: ``'l1'`` or ``'l2'``.
    symmetric: penalise both sides of the target (True) or only above it.
    mask: optional weights :math:`w_t` of ``m``'s shape; padded steps (0)
      cost nothing.

  Returns:
    ``[batch]``: the penalty of each sequence (summed over time).

  Raises:
    ValueError: bad ``norm``, ``m`` not 1-D or 2-D, or a ``target`` or
      ``mask`` that is not of ``m``'s shape (a silent broadcast would weight
      the wrong steps).

  Example::

    _, ys = unroll(cell, params, state, xs, lengths)
    mask = jnp.arange(xs.shape[1])[None, :] < lengths[:, None]
    loss = nll + 0.1 * penalty(ys.m, 0.3, mask=mask).mean()

  References:
    Jernite et al. 2017, Sec. 4.2 (Eq. 10) and Sec. 5.
  """
  if norm not in ('l1', 'l2'):
    raise ValueError(f"norm must be 'l1' or 'l2', got {norm!r}.")
  m = jnp.asarray(m)
  if m.ndim not in (1, 2):
    raise ValueError(
        f'penalty: m must be [batch, time] or [batch], got shape '
        f'{tuple(m.shape)}.')
  target = jnp.asarray(target)
  if target.shape not in ((), m.shape):
    raise ValueError(
        f'penalty: target must be a scalar or have the shape of m '
        f'{tuple(m.shape)}, got {tuple(target.shape)}.')
  if mask is not None and tuple(jnp.shape(mask)) != tuple(m.shape):
    raise ValueError(
        f'penalty: mask must have the shape of m {tuple(m.shape)}, got '
        f'{tuple(jnp.shape(mask))}.')
  diff = m - utils.cast(target, m.dtype)
  if not symmetric:
    diff = jnp.maximum(diff, 0.0)
  omega = jnp.abs(diff) if norm == 'l1' else jnp.square(diff)       # (10)
  if mask is not None:
    omega = omega * jnp.asarray(mask).astype(m.dtype)
  return omega if m.ndim == 1 else jnp.sum(omega, axis=-1)


def guide_targets(is_boundary: jax.Array, target: float,
                  boundary_target: float, dtype: Any = jnp.float32
                  ) -> jax.Array:
  r"""Per-step targets of the "guide" setting (Sec. 5.2.2).

  .. math::

    \bar m_t = \bar m_{boundary} \text{ if } x_t \text{ is a boundary
    symbol, else } \bar m

  In the guide setting the penalty of Eq. 10 "encourage[s] the model to use
  more dimensions on white spaces": pass the result as :func:`penalty`'s
  ``target``. ``is_boundary`` is aligned with the steps whose :math:`m_t`
  it targets, i.e. with the inputs :math:`x_t` the scheduler reads (Eq. 7).

  Args:
    is_boundary: ``[batch, time]`` bool, True on boundary symbols (e.g.
      ``jnp.isin(tokens, space_ids)``).
    target: :math:`\bar m` elsewhere, in ``[0, 1]``.
    boundary_target: the higher :math:`\bar m` on boundaries, in ``[0, 1]``.
    dtype: dtype of the result.

  Returns:
    ``[batch, time]`` targets.

  Example::

    targets = guide_targets(tokens == space_id, 0.2, 0.6)
    omega = penalty(ys.m, targets, mask=mask)

  References:
    Jernite et al. 2017, Sec. 5.2.2 (Europarl "guide" setting).
  """
  for name, value in (('target', target), ('boundary_target',
                                           boundary_target)):
    if not 0.0 <= float(value) <= 1.0:
      raise ValueError(f'{name} must be in [0, 1], got {value!r}.')
  return utils.cast(jnp.where(jnp.asarray(is_boundary, bool),
                             boundary_target, target), dtype)


# ----------------------------------------------------------------------------
# Computation accounting: multiplications and the equivalent RNN of Table 3.

# Gate blocks (pairs U, V of D x D matrices) each cell computes.
_GATE_BLOCKS = {'elman': 1, 'gru': 3, 'lstm': 4, 'vcrnn': 1, 'vcgru': 3}
# Table 3's cost of each cell, in Elman units of the same dimension.
_PAPER_ELMAN_UNITS = {'elman': 1, 'gru': 2, 'lstm': 4, 'vcrnn': 1, 'vcgru': 2}
_VC_CELLS = ('vcrnn', 'vcgru')


def _check_cell_name(cell_name):
  if cell_name not in _GATE_BLOCKS:
    raise ValueError(
        f'cell_name must be one of {sorted(_GATE_BLOCKS)}, got '
        f'{cell_name!r}.')


def _check_dims(dims, hidden_size, cell_name):
  if cell_name not in _VC_CELLS:
    raise ValueError(
        f'dims is only for the variable computation cells {_VC_CELLS}; '
        f'{cell_name!r} always updates all hidden_size={hidden_size} '
        'dimensions.')
  dims = np.asarray(dims, np.float64)
  if dims.size and (dims.min() < 0 or dims.max() > hidden_size):
    raise ValueError(
        f'dims must be in [0, hidden_size={hidden_size}], got values from '
        f'{dims.min()} to {dims.max()}.')
  return dims


def multiplications(cell_name: str, hidden_size: int, dims: Any = None, *,
                    input_size: int | None = None) -> Any:
  r"""Multiplications with possibly non-zero operands in one step.

  The paper's cost (Sec. 4.1: "the number of multiplications involving
  possibly non-zero elements", :math:`O(m_t^2 D^2)`), counting the
  matrix-vector products (the :math:`O(D)` element-wise products are left
  out, as in the paper). With :math:`d` the dimensions updated and ``I``
  the input size:

  .. math::

    \mathrm{cost} = k\,(I D + D^2) \text{ (Elman, GRU, LSTM: } k = 1, 3, 4)

    \mathrm{cost} = 2 k\, d^2 + (D + I) + [I \ne D]\, I d
    \text{ (VCRNN } k = 1 \text{, VCGRU } k = 3)

  For the VC cells :math:`2 k d^2` are the masked :math:`U_d, V_d` blocks
  (Eq. 12 zeroes the other rows and columns), :math:`D + I` the scheduler
  (Eq. 7) and :math:`I d` the columns of the input projection the mask
  keeps (:func:`vcrnn`; none when the input is an embedding of size ``D``).

  Args:
    cell_name: ``'elman'``, ``'gru'``, ``'lstm'``, ``'vcrnn'`` or
      ``'vcgru'``.
    hidden_size: ``D``.
    dims: for the VC cells, the dimensions updated (``VCOutput.dims``),
      a number or an array (counted element-wise); None means ``D``.
    input_size: ``I``; None means ``D`` (the paper's setting, where
      :math:`x_t` is ``D``-dimensional).

  Returns:
    A float, or a float64 array of ``dims``'s shape.

  Example::

    multiplications('elman', 1024)                 # 2 * 1024**2
    multiplications('vcrnn', 1024, out.dims)        # per row

  References:
    Jernite et al. 2017, Sec. 3 and 4.1.
  """
  _check_cell_name(cell_name)
  n = check_positive_int('hidden_size', hidden_size)
  i = n if input_size is None else check_positive_int('input_size',
                                                      input_size)
  k = _GATE_BLOCKS[cell_name]
  if cell_name not in _VC_CELLS:
    if dims is not None:
      _check_dims(dims, n, cell_name)
    return float(k * (i * n + n * n))
  d = float(n) if dims is None else _check_dims(dims, n, cell_name)
  cost = 2.0 * k * np.square(d) + (n + i) + (i * d if i != n else 0.0)
  return float(cost) if np.ndim(cost) == 0 else cost


def rnn_equivalent_dim(cell_name: str, hidden_size: int, dims: Any = None,
                       *, m: Any = None, mask: Any = None,
                       convention: str = 'paper') -> float:
  r"""The "equivalent RNN" dimension RNN-d of Table 3.

  The dimension of an Elman RNN that performs as many operations per step,
  on average over the steps (Sec. 5). An Elman unit of dimension
  :math:`d` costs :math:`c\, d^2`, so

  .. math::

    \text{RNN-}d = \sqrt{\textstyle\frac{1}{T} \sum_t
        \mathrm{cost}_t / c}.

  ``convention='paper'`` (default) reproduces Table 3: a cell of dimension
  :math:`d` costs :math:`w\, d^2` Elman units with :math:`w = 1` (Elman,
  VCRNN), 2 (GRU, VCGRU), 4 (LSTM), so LSTM-:math:`d` is RNN-:math:`2d` and
  GRU-:math:`d` is RNN-:math:`\sqrt 2 d`: LSTM-380 = RNN-760, GRU-538 =
  RNN-760, GRU-1024 = RNN-1450, LSTM-1024 = RNN-2048, GRU-512 = RNN-725,
  LSTM-324 and GRU-458 = RNN-648 (up to the paper's rounding to 5). For a
  VC cell the cost of step :math:`t` is :math:`w\, d_t^2`, :math:`d_t` the
  dimensions it updated, or :math:`w (m_t D)^2` from :math:`m_t` (Sec. 4.1:
  :math:`O(m_t^2 D^2)`); the scheduler's :math:`O(D)` is left out.

  .. warning:: The LSTM's 4 is its four gate blocks (each a ``U`` and a
    ``V`` as in Elman's Eq. 3, or only the ``U``: the ratio is the same).
    The GRU's 2 is not a count of its blocks: it has three (Eq. 4-5), which
    would make GRU-538 an RNN-932, not RNN-760. Every GRU and VCGRU row of
    Table 3 uses :math:`\sqrt 2` nonetheless; we found neither a text nor
    the authors' code that explains it, and keep it so that our numbers
    compare with the paper's. ``convention='count'`` is the honest count
    instead: :func:`multiplications` (three GRU blocks, the scheduler, an
    Elman of dimension :math:`d` costing :math:`2 d^2`), so GRU-:math:`d`
    is RNN-:math:`\sqrt 3 d`.

  Args:
    cell_name: ``'elman'``, ``'gru'``, ``'lstm'``, ``'vcrnn'`` or
      ``'vcgru'``.
    hidden_size: ``D``.
    dims: VC cells: per-step dimensions updated (``VCOutput.dims``, any
      shape). At most one of ``dims`` and ``m``; with neither, the cell
      updates all ``D`` dimensions every step.
    m: VC cells: per-step :math:`m_t` (``VCOutput.m``), counted as
      :math:`m_t D` dimensions.
    mask: optional weights of the shape of ``dims`` or ``m`` (0 for
      padding).
    convention: ``'paper'`` (Table 3) or ``'count'``.

  Returns:
    RNN-d as a float.

  Raises:
    ValueError: unknown ``cell_name`` or ``convention``; ``dims`` or ``m``
      for a fixed cell, both given, out of range, or a ``mask`` of another
      shape.

  Example::

    rnn_equivalent_dim('gru', 538)                       # 760.8
    _, ys = unroll(cell, params, state, xs)
    rnn_equivalent_dim('vcrnn', 1024, dims=ys.dims)

  References:
    Jernite et al. 2017, Sec. 5 and Table 3.
  """
  _check_cell_name(cell_name)
  n = check_positive_int('hidden_size', hidden_size)
  if convention not in ('paper', 'count'):
    raise ValueError(
        f"convention must be 'paper' or 'count', got {convention!r}.")
  if dims is not None and m is not None:
    raise ValueError('give at most one of dims and m, got both.')
  if m is not None:
    m = np.asarray(m, np.float64)
    if m.size and (m.min() < 0 or m.max() > 1):
      raise ValueError(
          f'm must be in [0, 1], got values from {m.min()} to {m.max()}.')
    dims = m * n
  if dims is None:
    d = np.asarray(float(n))
  else:
    d = _check_dims(dims, n, cell_name)
  if convention == 'paper':
    cost = _PAPER_ELMAN_UNITS[cell_name] * np.square(d)
  else:
    cost = np.asarray(multiplications(
        cell_name, n, None if dims is None else d)) / 2.0
    cost = np.broadcast_to(cost, d.shape)
  if mask is None:
    mean = float(np.mean(cost))
  else:
    mask = np.asarray(mask, np.float64)
    if mask.shape != d.shape:
      raise ValueError(
          f'mask must have the shape of dims or m {d.shape}, got '
          f'{mask.shape}.')
    total = float(mask.sum())
    if total <= 0:
      raise ValueError('mask selects no step (its sum is 0).')
    mean = float((cost * mask).sum() / total)
  return math.sqrt(mean)
