r"""Recurrent Highway Networks and the Recurrent Elastic Highway Networks.

Four cells of the :class:`vcrnn_jax.Cell` protocol, from the fixed-depth
Recurrent Highway Network (Zilly et al. 2017) to the Early Improving Recurrent
Elastic Highway Network (Park & Yoo 2017, "EI-REHN"):

* :func:`rhn`: ``depth`` micro-layers per time step, each with its own
  weights (EI-REHN paper Eq. 6-8);
* :func:`srhn`: the same with one set of weights shared by the micro-layers
  (the paper's SRHN baseline, Section 4.1);
* :func:`srehn`: shared weights and the elastic gate (Eq. 9-15): every row
  runs its own data-dependent number of micro-layers ``R_t <= max_depth``;
* :func:`ei_rehn`: the elastic gate and the dynamic diagonal weights of a
  hypernetwork (Eq. 16-22, Algorithm 1).

The fixed-depth cells return ``h_t`` as their per-step output; the elastic
ones return :class:`REHNOutput` ``(output=h_t, depth=R_t)``. The elastic depth
runs on :func:`vcrnn_jax.loops.halting_loop`, as ACT's pondering does: forward
and backward cost follow the depth the rows realize, not ``max_depth``.

All four take variational dropout inside the cell as in Zilly et al.'s code:
one mask on ``x_t`` (read at the first micro-layer) and one on the state
``h^{r-1}`` (read at every micro-layer), drawn from ``context.key``. The same
key reaches every time step through :func:`vcrnn_jax.unroll`, so the masks are
shared over time; ``context.key=None`` (evaluation) means no dropout.

References:
  Park & Yoo, Early Improving Recurrent Elastic Highway Network, 2017.
  Zilly, Srivastava, Koutnik & Schmidhuber, Recurrent Highway Networks, ICML
  2017. arXiv:1607.03474.
"""

from collections.abc import Callable
import functools
import math
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp

from vcrnn_jax import loops, utils
from vcrnn_jax.core import (
  Cell,
  Context,
  as_context,
  check_apply_args,
  check_bool,
  check_positive_int,
  field_docs,
  select_rows,
)

__all__ = [
    'RHNState',
    'REHNOutput',
    'rhn',
    'srhn',
    'ELASTIC_LOOP',
    'elastic_gate',
    'depth_bound',
    'srehn',
    'ei_rehn',
]


@field_docs
class RHNState(NamedTuple):
  """The state of every cell of this module (``h^0_{t+1} = h_t``).

  Attributes:
    h: [batch, hidden_size]
  """
  h: jax.Array


@field_docs
class REHNOutput(NamedTuple):
  """Per-step output of the elastic cells (:func:`srehn`, :func:`ei_rehn`).

  Attributes:
    output: [batch, hidden_size] h_t, what readouts read
    depth: [batch] int32 R_t, the micro-layers the row ran
  """
  output: jax.Array
  depth: jax.Array


# ----------------------------------------------------------------------------
# Argument checks and pieces shared by the four cells.


def _check_rate(name: str, value: Any) -> float:
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    raise ValueError(f'{name} must be a float in [0, 1), got {value!r}.')
  if not 0.0 <= value < 1.0:
    raise ValueError(f'{name} must be a float in [0, 1), got {value!r}.')
  return float(value)


def _check_float(name: str, value: Any) -> float:
  if isinstance(value, bool) or not isinstance(value, (int, float)) or (
      not math.isfinite(value)):
    raise ValueError(f'{name} must be a finite float, got {value!r}.')
  return float(value)


def _dropout_masks(context: Context, batch: int, input_size: int,
                   hidden_size: int, input_rate: float, state_rate: float,
                   dtype: Any) -> tuple[jax.Array | None,
                                        jax.Array | None]:
  """Inverted-dropout masks ``([batch, input_size], [batch, hidden_size])``.

  ``None`` for a mask whose rate is 0 or when there is no key. The input and
  state masks come from different sub-keys (``fold_in`` 0 and 1), so they are
  independent; the same key gives the same masks at every time step.
  """
  if context.key is None:
    return None, None

  def mask(data, shape, rate):
    if rate == 0.0:
      return None
    keep = jax.random.bernoulli(jax.random.fold_in(context.key, data),
                                1.0 - rate, shape)
    return keep.astype(dtype) * jnp.asarray(1.0 / (1.0 - rate), dtype)

  return (mask(0, (batch, input_size), input_rate),
          mask(1, (batch, hidden_size), state_rate))


def _drop(a: jax.Array, mask: jax.Array | None) -> jax.Array:
  return a if mask is None else a * mask


def _gate_biases(hidden_size: int, blocks: tuple[float, ...],
                 dtype: Any) -> jax.Array:
  """A fused bias ``[len(blocks) * hidden_size]``; block ``i`` is ``blocks[i]``.
  """
  return jnp.concatenate(
      [jnp.full((hidden_size,), v, dtype) for v in blocks])


def _highway(h: jax.Array, pre: jax.Array, coupled: bool) -> jax.Array:
  """One RHN micro-layer from its pre-activations ``W_H^r [h; x; 1]``."""
  if coupled:
    s, t = jnp.split(pre, 2, axis=-1)
    t = jax.nn.sigmoid(t)
    return t * jnp.tanh(s) + (1 - t) * h                        # (7), c = 1 - t
  s, t, c = jnp.split(pre, 3, axis=-1)
  return (jax.nn.sigmoid(t) * jnp.tanh(s)
          + jax.nn.sigmoid(c) * h)                              # (7), (8)


def _check_depth_args(depth, coupled, transform_bias, input_dropout,
                      state_dropout):
  depth = check_positive_int('depth', depth)
  check_bool('coupled', coupled)
  return (depth, _check_float('transform_bias', transform_bias),
          _check_rate('input_dropout', input_dropout),
          _check_rate('state_dropout', state_dropout))


# ----------------------------------------------------------------------------
# Fixed depth: RHN and SRHN.


def _fixed_depth_cell(name, hidden_size, depth, shared, coupled,
                      transform_bias, input_dropout, state_dropout,
                      kernel_init, recurrent_kernel_init, param_dtype) -> Cell:
  """:func:`rhn` (``shared=False``) and :func:`srhn` (``shared=True``)."""
  hidden_size = check_positive_int('hidden_size', hidden_size)
  depth, transform_bias, input_dropout, state_dropout = _check_depth_args(
      depth, coupled, transform_bias, input_dropout, state_dropout)
  blocks = 2 if coupled else 3
  # s, t (and c): c starts near 1 - t, as in the coupled cell.
  bias_blocks = (0.0, transform_bias) + (() if coupled else (-transform_bias,))

  def init(key, input_size):
    input_size = check_positive_int('input_size', input_size)
    k_in, k_rec = jax.random.split(key)
    layers = 1 if shared else depth
    kernels = [utils.stacked_init(recurrent_kernel_init, k, hidden_size,
                                  hidden_size, blocks, param_dtype)
               for k in jax.random.split(k_rec, layers)]
    bias = _gate_biases(hidden_size, bias_blocks, param_dtype)
    return {
        'input_kernel': utils.stacked_init(
            kernel_init, k_in, input_size, hidden_size, blocks, param_dtype),
        'recurrent_kernel': kernels[0] if shared else jnp.stack(kernels),
        'bias': bias if shared else jnp.tile(bias, (depth, 1)),
    }

  def initial_state(batch_size):
    batch_size = check_positive_int('batch_size', batch_size)
    return RHNState(h=jnp.zeros((batch_size, hidden_size), param_dtype))

  def apply(params, state, x, context=None):
    context = as_context(context)
    w_in = params['input_kernel']
    x = check_apply_args(name, w_in.shape[0], state, x, w_in.dtype,
                         width=hidden_size)
    mask_x, mask_h = _dropout_masks(context, x.shape[0], x.shape[1],
                                    hidden_size, input_dropout,
                                    state_dropout, w_in.dtype)
    w_rec, bias = params['recurrent_kernel'], params['bias']
    if shared:
      w_first, b_first = w_rec, bias
    else:
      w_first, b_first = w_rec[0], bias[0]
    # The input enters the first micro-layer only (I_{r=1} of Eq. 8).
    pre = utils.add_bias(
        _drop(x, mask_x) @ w_in + _drop(state.h, mask_h) @ w_first, b_first)
    h = _highway(state.h, pre, coupled)

    def layer(h, weights):
      w, b = (w_rec, bias) if shared else weights
      pre = utils.add_bias(_drop(h, mask_h) @ w, b)
      return _highway(h, pre, coupled), None                        # (8)

    if depth > 1:
      rest = None if shared else (w_rec[1:], bias[1:])
      h, _ = lax.scan(layer, h, rest, length=depth - 1)
    return RHNState(h=h), h                                          # (6)

  return Cell(init, initial_state, apply)


def rhn(
    hidden_size: int,
    depth: int,
    *,
    coupled: bool = True,
    transform_bias: float = -2.0,
    input_dropout: float = 0.0,
    state_dropout: float = 0.0,
    kernel_init: utils.Initializer = utils.default_kernel_init,
    recurrent_kernel_init: utils.Initializer = (
        utils.default_recurrent_kernel_init),
    param_dtype: Any = jnp.float32,
) -> Cell:
  r"""Recurrent Highway Network of fixed depth ``R`` (EI-REHN Eq. 6-8).

  .. math::

    h_t^0 = h_{t-1}, \qquad S_{RHN}(h_{t-1}, x_t) = h_t^R          \quad (6)

    h_t^r = t_t^r \otimes s_t^r + c_t^r \otimes h_t^{r-1}          \quad (7)

    (s_t^r, t_t^r, c_t^r) = (\tanh, \sigma, \sigma)\,
        W_H^r [h_t^{r-1}; \mathbb{I}_{\{r=1\}} x_t; 1]             \quad (8)

  Every micro-layer ``r = 1..R`` has its own ``W_H^r``; the input is read
  at ``r = 1`` only. With ``coupled=True`` (the default, as in Zilly et al.'s
  code and the paper's parameter counts) the carry gate is tied,
  ``c_t^r = 1 - t_t^r``, and ``W_H^r`` has only the ``s`` and ``t`` rows.

  Variational dropout as in Zilly et al.'s code: with a ``context.key``,
  ``x_t`` is multiplied by one mask (rate ``input_dropout``) where the first
  micro-layer reads it, and ``h_t^{r-1}`` by one mask (rate
  ``state_dropout``) wherever a micro-layer's matmul reads it, the same mask
  at every micro-layer, gate and time step. The carry term of Eq. 7 reads the
  undropped state.

  Params (fused per micro-layer, block order ``s, t`` or ``s, t, c``; ``k``
  is 2 when coupled, else 3; the leading axis of the recurrent arrays is
  ``r - 1``):

  * ``input_kernel``: ``[input_size, k * hidden_size]``: the ``x`` columns of
    ``W_H^1``
  * ``recurrent_kernel``: ``[depth, hidden_size, k * hidden_size]``
  * ``bias``: ``[depth, k * hidden_size]``: the ``t`` block starts at
    ``transform_bias``, the ``c`` block at ``-transform_bias``, ``s`` at 0.

  State: :class:`RHNState` ``(h,)``; output ``y = h_t`` (an array).

  Args:
    hidden_size: ``D_h``.
    depth: ``R``, the micro-layers per time step (Zilly et al.: 10 on PTB;
      the EI-REHN paper's Table 1 counts imply 5).
    coupled: tie the carry gate, ``c = 1 - t``; False gives Eq. 7-8's
      separate carry gate.
    transform_bias: initial bias of the transform gate ``t`` (Zilly et al.:
      -2 on PTB), so that at initialisation the layers mostly carry.
    input_dropout: dropout rate on ``x_t`` (Zilly et al. PTB: 0.25).
    state_dropout: dropout rate on ``h_t^{r-1}`` (Zilly et al. PTB: 0.25).
    kernel_init: initialiser of the input columns.
    recurrent_kernel_init: initialiser of each ``[hidden_size,
      hidden_size]`` block of the recurrent columns.
    param_dtype: dtype of the params and of the computation.

  Example::

    cell = rhn(128, depth=5)
    params = cell.init(jax.random.key(0), input_size=10)
    state, h = cell.apply(params, cell.initial_state(4), jnp.ones((4, 10)))

  .. warning:: Zilly et al. initialise every weight uniformly in
    ``[-0.04, 0.04]``; the defaults here are flax's (LeCun-normal input
    blocks, orthogonal recurrent blocks, one block per gate). Pass
    ``kernel_init`` and ``recurrent_kernel_init`` to match them.

  References:
    Zilly et al., Recurrent Highway Networks, 2017.
    Park & Yoo, Early Improving Recurrent Elastic Highway Network, 2017.
  """
  return _fixed_depth_cell('rhn', hidden_size, depth, False, coupled,
                           transform_bias, input_dropout, state_dropout,
                           kernel_init, recurrent_kernel_init, param_dtype)


def srhn(
    hidden_size: int,
    depth: int,
    *,
    coupled: bool = True,
    transform_bias: float = -2.0,
    input_dropout: float = 0.0,
    state_dropout: float = 0.0,
    kernel_init: utils.Initializer = utils.default_kernel_init,
    recurrent_kernel_init: utils.Initializer = (
        utils.default_recurrent_kernel_init),
    param_dtype: Any = jnp.float32,
) -> Cell:
  r"""RHN with weights shared across micro-layers (SRHN, EI-REHN Sec. 4.1).

  .. math::

    h_t^r = t_t^r \otimes s_t^r + c_t^r \otimes h_t^{r-1}          \quad (7)

    (s_t^r, t_t^r, c_t^r) = (\tanh, \sigma, \sigma)\,
        (W_H [h_t^{r-1}; 1] + \mathbb{I}_{\{r=1\}} W_X x_t)       \quad (8)

  :func:`rhn` with ``W_H^r = W_H`` for every ``r``; the input columns
  ``W_X`` are still read at ``r = 1`` only. Arguments and dropout as in
  :func:`rhn`.

  Params (block order ``s, t`` or ``s, t, c``, ``k`` = 2 or 3):

  * ``input_kernel``: ``[input_size, k * hidden_size]``
  * ``recurrent_kernel``: ``[hidden_size, k * hidden_size]``
  * ``bias``: ``[k * hidden_size]``

  State: :class:`RHNState` ``(h,)``; output ``y = h_t`` (an array).

  Example::

    cell = srhn(20, depth=3)
    params = cell.init(jax.random.key(0), input_size=2)
    state, h = cell.apply(params, cell.initial_state(8), jnp.ones((8, 2)))

  References:
    Park & Yoo, Early Improving Recurrent Elastic Highway Network, 2017.
    Zilly et al., Recurrent Highway Networks, 2017.
  """
  return _fixed_depth_cell('srhn', hidden_size, depth, True, coupled,
                           transform_bias, input_dropout, state_dropout,
                           kernel_init, recurrent_kernel_init, param_dtype)


# ----------------------------------------------------------------------------
# The elastic gate and its loop, shared by SREHN and EI-REHN.


# The elastic cells' default loop. Six backward-pass slots: a row realizing
# up to 6 micro-layers (the Eq. 15 bound is 6.96 at the default
# initialisation, about 4 realized) is differentiated without recomputing a
# step, and the slots, saved per time step, cap the memory once R_max > 6:
# at D_h = 128, D_z = 64, batch 20 and 20 time steps each slot (h, z and
# sum w: 448 floats per row) costs 720 KiB of a 5.4 MiB train step, so the
# step's memory at R_max = 10 is 1.17 times that at R_max = 5 (8 slots:
# 1.45 times). Deeper rows thin the slots (stride 2 up to 12 micro-layers,
# about half a forward step recomputed per step); pass
# ``loops.LoopConfig(checkpoints=...)`` to trade memory for that. It is the
# default of srehn's and ei_rehn's ``loop`` (their Flax modules read it from
# there), the one place these 6 are written; a string ``loop`` is
# ``LoopConfig(kind)``, as for every cell.
ELASTIC_LOOP = loops.LoopConfig(checkpoints=6)


class _GateConstants(NamedTuple):
  """What Eq. 11 needs besides ``alpha_t`` and ``r``, once per time step."""
  alpha: jax.Array    # alpha = softplus(alpha_hat) (Eq. 13)
  beta: jax.Array     # beta = sigm(beta_hat) (Eq. 12)
  scale: jax.Array    # e^alpha, clipped below overflow (d = 0 there)
  q_open: jax.Array   # d^r > 0 iff q < q_open = log(1 + beta e^{-alpha})


def _gate_constants(alpha: jax.Array, beta_hat: jax.Array) -> _GateConstants:
  beta = jax.nn.sigmoid(beta_hat)                                   # (12)
  # Above log(max) / 2 the gate is closed from r = 1 on (q_open ~ 0), so
  # clipping e^alpha there changes no value and keeps its gradient finite.
  cap = 0.5 * math.log(jnp.finfo(alpha.dtype).max)
  return _GateConstants(alpha=alpha, beta=beta,
                        scale=jnp.exp(jnp.minimum(alpha, cap)),
                        q_open=jnp.log1p(beta * jnp.exp(-alpha)))


def _exponent(c: _GateConstants, alpha_t: jax.Array, r: Any) -> jax.Array:
  """``q = (alpha + alpha_t) r - alpha``, the exponent beyond ``alpha``."""
  r = jnp.asarray(r, c.alpha.dtype)
  return c.alpha * (r - 1) + alpha_t * r


def _gate(c: _GateConstants, alpha_t: jax.Array, r: Any) -> jax.Array:
  q = _exponent(c, alpha_t, r)
  # expm1 of the clipped exponent: finite values and gradients however
  # large r or alpha; the clipped branch is the closed one, d = 0.
  d = c.beta - c.scale * jnp.expm1(jnp.minimum(q, c.q_open))
  return jnp.maximum(jnp.where(q < c.q_open, d, jnp.zeros_like(d)), 0)  # (11)


def elastic_gate(alpha: jax.Array, beta_hat: jax.Array, alpha_t: jax.Array,
                 r: Any) -> jax.Array:
  r"""The elastic gate :math:`d_t^r` of Eq. 11, safe from overflow.

  .. math::

    d_t^r = \max(\beta + e^{\alpha} - e^{(\alpha + \alpha_t) r}, 0)
          = \max(\beta - e^{\alpha} (e^{q} - 1), 0),\quad
      q = \alpha (r - 1) + \alpha_t r                               \quad (11)

  The gate is open (:math:`d > 0`) iff :math:`q < \log(1 + \beta
  e^{-\alpha})`; :math:`e^q - 1` is evaluated at ``q`` clipped to that
  bound, and :math:`e^\alpha` clipped below overflow, so a huge ``alpha`` or
  ``r`` (where ``d`` is 0 anyway) overflows neither the values nor the
  gradients. Since :math:`\alpha_t > 0`, :math:`0 \le d_t^r < \beta < 1`
  and ``d`` decreases in ``r``. The cells compute the bound and
  :math:`e^\alpha` once per time step, so each micro-layer costs one
  ``expm1`` per unit, and deciding whether the next micro-layer runs costs
  a comparison.

  Args:
    alpha: :math:`\alpha = \mathrm{softplus}(\hat\alpha)` (Eq. 13),
      ``[hidden_size]`` or broadcastable.
    beta_hat: :math:`\hat\beta`, with :math:`\beta = \sigma(\hat\beta)`
      (Eq. 12).
    alpha_t: :math:`\alpha_t` of Eq. 14, in ``(0, 1)``.
    r: the micro-layer, ``1, 2, ...``.

  Returns:
    :math:`d_t^r`, the broadcast shape of the arguments.
  """
  dtype = jnp.result_type(alpha, beta_hat, alpha_t)
  args = [jnp.asarray(a, dtype) for a in (alpha, beta_hat, alpha_t, r)]
  # The arguments broadcast as documented; their ranks are matched here, so
  # that no implicit rank promotion is needed.
  ndim = max(a.ndim for a in args)
  alpha, beta_hat, alpha_t, r = (
      jnp.reshape(a, (1,) * (ndim - a.ndim) + a.shape) for a in args)
  return _gate(_gate_constants(alpha, beta_hat), alpha_t, r)


def depth_bound(params: Any) -> jax.Array:
  r"""The upper bound of Eq. 15 on every :math:`R_t` of an elastic cell.

  .. math::

    R_t \le \max_i \frac{1}{\alpha_i} \log(\beta_i + e^{\alpha_i})  \quad (15)

  Args:
    params: params of :func:`srehn` or :func:`ei_rehn`.

  Returns:
    The bound, a scalar (``max_depth`` caps the realized depth as well).
  """
  elastic = params['elastic']
  alpha = jax.nn.softplus(elastic['alpha_hat'])                     # (13)
  beta = jax.nn.sigmoid(elastic['beta_hat'])                        # (12)
  return jnp.max(jnp.logaddexp(jnp.log(beta), alpha) / alpha)        # (15)


class _Rows(NamedTuple):
  """Per-row carry of the elastic-depth loop (the loop adds running, n)."""
  h: jax.Array       # h_t^r, the latest intermediate state
  extra: Any         # EI-REHN: (z_t^{r+1}, sum_{k<=r} w_t^k); SREHN: ()
  depth: jax.Array   # int32 R_t so far


class _Inputs(NamedTuple):
  """Per-row loop inputs, gathered with the rows when they are compacted."""
  u: jax.Array                  # [batch, 2 D] W_x x_t, read at r = 1 only
  alpha_t: jax.Array            # [batch, D] alpha_t of Eq. 14
  mask_h: jax.Array | None   # [batch, D] state dropout mask, or None
  # Eq. 11's constants broadcast to [batch, D]: as per-row inputs their
  # cotangents are summed over the batch once, after the loop, rather than
  # reduced over the batch at every micro-layer of the backward pass.
  gate: _GateConstants


# (shared params, hm, u, extra) -> (s, g_hat, new extra). ``hm`` is
# h^{r-1} after dropout, ``u`` the input term (zero after r = 1).
_LayerFn = Callable[[Any, jax.Array, jax.Array, Any],
                    tuple[jax.Array, jax.Array, Any]]


def _check_elastic(transform_bias, rate_bias, alpha_init, beta_init,
                   input_dropout, state_dropout) -> tuple[float, ...]:
  """The elastic cells' float settings, checked, in the order given."""
  transform_bias = _check_float('transform_bias', transform_bias)
  rate_bias = _check_float('rate_bias', rate_bias)
  alpha_init = _check_float('alpha_init', alpha_init)
  beta_init = _check_float('beta_init', beta_init)
  if alpha_init <= 0:
    raise ValueError(f'alpha_init must be > 0 (alpha = softplus(alpha_hat) '
                     f'of Eq. 13), got {alpha_init!r}.')
  if not 0.0 < beta_init < 1.0:
    raise ValueError(f'beta_init must be in (0, 1) (beta = sigm(beta_hat) '
                     f'of Eq. 12), got {beta_init!r}.')
  return (transform_bias, rate_bias, alpha_init, beta_init,
          _check_rate('input_dropout', input_dropout),
          _check_rate('state_dropout', state_dropout))


def _elastic_params(keys, input_size: int, d: int, *, transform_bias: float,
                    rate_bias: float, alpha_init: float, beta_init: float,
                    kernel_init, recurrent_kernel_init, param_dtype) -> dict:
  """The params the elastic cells share (one RHN layer and the gate's)."""
  k_in, k_rec, k_ax, k_ah = keys
  full = lambda v: jnp.full((d,), v, param_dtype)
  return {
      'input_kernel': utils.stacked_init(kernel_init, k_in, input_size,
                                         d, 2, param_dtype),
      'recurrent_kernel': utils.stacked_init(
          recurrent_kernel_init, k_rec, d, d, 2, param_dtype),
      'bias': _gate_biases(d, (0.0, transform_bias), param_dtype),
      'elastic': {
          'input_kernel': utils.initialize(kernel_init, k_ax,
                                           (input_size, d), param_dtype),
          'recurrent_kernel': utils.initialize(recurrent_kernel_init, k_ah,
                                               (d, d), param_dtype),
          'bias': full(rate_bias),
          # Inverse of Eq. 13 and 12 at the initial alpha and beta.
          'alpha_hat': full(alpha_init + math.log(-math.expm1(-alpha_init))),
          'beta_hat': full(math.log(beta_init / (1.0 - beta_init))),
      },
  }


def _elastic_gate(elastic: dict, x: jax.Array, h_prev: jax.Array, dtype):
  """The depth gate's constants and ``alpha_t`` (Eq. 12-14) of one step."""
  # The gate is decided in at least float32, so that a 16-bit cell's
  # depth is not set by rounding.
  gate_dtype = utils.at_least_float32(dtype)
  # The constants ([1, D]) get alpha_t's batch axis explicitly.
  gate = _gate_constants(
      jax.nn.softplus(utils.cast(elastic['alpha_hat'][None, :],
                                 gate_dtype)),                       # (13)
      utils.cast(elastic['beta_hat'][None, :], gate_dtype))
  alpha_t = jax.nn.sigmoid(utils.cast(utils.add_bias(
      x @ elastic['input_kernel'] + h_prev @ elastic['recurrent_kernel'],
      elastic['bias']), gate_dtype))                                 # (14)
  return gate, alpha_t


def _elastic_step(layer: _LayerFn, shared, inputs: _Inputs, rows: _Rows,
                  running, n):
  """Micro-layer ``r = n + 1`` of every row (Eq. 9-10, Algorithm 1).

  ``shared`` holds the weights only; Eq. 11's constants come per row in
  ``inputs.gate``, so that the backward pass of each micro-layer adds their
  cotangents elementwise instead of reducing them over the batch.
  """
  weights, gate = shared, inputs.gate
  r = n + 1
  hm = _drop(rows.h, inputs.mask_h)
  u = jnp.where(n == 0, inputs.u, jnp.zeros_like(inputs.u))  # I_{r=1}
  s, g_hat, extra = layer(weights, hm, u, rows.extra)  # (16)/(22)
  g = utils.cast(_gate(gate, inputs.alpha_t, r), s.dtype) * g_hat   # (10)
  # Algorithm 1: the first r with ||g_t^r||_1 = 0 ends the row without
  # updating h (g >= 0, so the norm is positive iff some unit is).
  update = running & jnp.any(g > 0, axis=-1)
  h = g * s + (1 - g) * rows.h                                      # (9)
  rows = _Rows(h=select_rows(update, h, rows.h),
               extra=select_rows(update, extra, rows.extra),
               depth=rows.depth + update.astype(jnp.int32))
  # Stop before a micro-layer whose gate is zero in every unit: no step is
  # spent finding out (d decreases in r, so no later one would open).
  opens = _exponent(gate, inputs.alpha_t, r + 1) < gate.q_open
  return rows, update & jnp.any(opens, axis=-1)


def _open_step(layer: _LayerFn, shared, inputs: _Inputs, rows: _Rows,
               running, n):
  """Micro-layer ``r = n + 1`` with the gate held open: ``g = g_hat``.

  Eq. 9 with :math:`d_t^r = 1` in Eq. 10: every running row takes the
  micro-layer, so each runs ``max_depth`` of them (the ablation of the
  elastic gate, not in the paper).
  """
  hm = _drop(rows.h, inputs.mask_h)
  u = jnp.where(n == 0, inputs.u, jnp.zeros_like(inputs.u))  # I_{r=1}
  s, g, extra = layer(shared, hm, u, rows.extra)  # (16)/(22)
  h = g * s + (1 - g) * rows.h                                      # (9)
  rows = _Rows(h=select_rows(running, h, rows.h),
               extra=select_rows(running, extra, rows.extra),
               depth=rows.depth + running.astype(jnp.int32))
  return rows, running


def _elastic_cell(name: str, hidden_size: int, max_depth: int, *,
                  init_extra: Callable[[jax.Array, int], dict],
                  prepare: Callable[[Any, int], tuple[Any, Any]],
                  layer: _LayerFn, transform_bias: float, alpha_init: float,
                  beta_init: float, rate_bias: float, input_dropout: float,
                  state_dropout: float, loop: loops.LoopConfig | str,
                  kernel_init, recurrent_kernel_init, param_dtype,
                  open_gate: bool) -> Cell:
  """The elastic-depth driver of :func:`srehn` and :func:`ei_rehn`.

  ``init_extra(key, input_size)`` adds params beside the shared ones;
  ``prepare(params, batch) -> (shared, extra_rows)`` gives the loop's
  ``layer`` its (loop-invariant) weights and the initial per-row extras.
  ``open_gate=True`` holds the gate open (:func:`_open_step`), without the
  gate's params.
  """
  d = hidden_size = check_positive_int('hidden_size', hidden_size)
  max_depth = check_positive_int('max_depth', max_depth)
  loop = loops.as_loop_config(loop)
  (transform_bias, rate_bias, alpha_init, beta_init, input_dropout,
   state_dropout) = _check_elastic(transform_bias, rate_bias, alpha_init,
                                   beta_init, input_dropout, state_dropout)
  open_gate = check_bool('open_gate', open_gate)
  step = functools.partial(_open_step if open_gate else _elastic_step, layer)

  def init(key, input_size):
    input_size = check_positive_int('input_size', input_size)
    k_in, k_rec, k_ax, k_ah, k_extra = jax.random.split(key, 5)
    params = _elastic_params(
        (k_in, k_rec, k_ax, k_ah), input_size, d,
        transform_bias=transform_bias, rate_bias=rate_bias,
        alpha_init=alpha_init, beta_init=beta_init, kernel_init=kernel_init,
        recurrent_kernel_init=recurrent_kernel_init, param_dtype=param_dtype)
    params.update(init_extra(k_extra, input_size))
    if open_gate:
      del params['elastic']
    return params

  def initial_state(batch_size):
    batch_size = check_positive_int('batch_size', batch_size)
    return RHNState(h=jnp.zeros((batch_size, d), param_dtype))

  def apply(params, state, x, context=None):
    context = as_context(context)
    w_in = params['input_kernel']
    dtype = w_in.dtype
    x = check_apply_args(name, w_in.shape[0], state, x, dtype, width=d)
    batch = x.shape[0]
    mask_x, mask_h = _dropout_masks(context, batch, x.shape[1], d,
                                    input_dropout, state_dropout, dtype)
    x = _drop(x, mask_x)
    running = (jnp.ones((batch,), bool) if context.active is None
               else jnp.broadcast_to(jnp.asarray(context.active, bool),
                                     (batch,)))
    inputs = _Inputs(u=x @ w_in, alpha_t=None, mask_h=mask_h, gate=None)
    if not open_gate:
      gate, alpha_t = _elastic_gate(params['elastic'], x,
                                    _drop(state.h, mask_h), dtype)
      # Rows whose first gate is closed everywhere, and padded rows, take
      # no micro-layer: R_t = 0, h_t = h_{t-1} (Section 3.1, Algorithm 1).
      running &= jnp.any(_exponent(gate, alpha_t, 1) < gate.q_open, axis=-1)
      inputs = inputs._replace(alpha_t=alpha_t, gate=_GateConstants(*(
          jnp.broadcast_to(c, alpha_t.shape) for c in gate)))
    weights, extra = prepare(params, batch)
    rows = _Rows(h=state.h, extra=extra,
                 depth=jnp.zeros((batch,), jnp.int32))
    final, _ = loops.halting_loop(step, weights, inputs, rows,
                                  running, max_steps=max_depth, loop=loop)
    return RHNState(h=final.h), REHNOutput(output=final.h, depth=final.depth)

  return Cell(init, initial_state, apply)


# ----------------------------------------------------------------------------
# SREHN and EI-REHN.


def srehn(
    hidden_size: int,
    max_depth: int,
    *,
    transform_bias: float = 0.0,
    alpha_init: float = 0.1,
    beta_init: float = 0.9,
    rate_bias: float = -3.0,
    input_dropout: float = 0.0,
    state_dropout: float = 0.0,
    loop: loops.LoopConfig | str = ELASTIC_LOOP,
    kernel_init: utils.Initializer = utils.default_kernel_init,
    recurrent_kernel_init: utils.Initializer = (
        utils.default_recurrent_kernel_init),
    param_dtype: Any = jnp.float32,
    open_gate: bool = False,
) -> Cell:
  r"""Shared-weight RHN with the elastic gate (SREHN, EI-REHN Eq. 9-15).

  .. math::

    h_t^r = g_t^r \otimes s_t^r + (1 - g_t^r) \otimes h_t^{r-1},\quad
        h_t^0 = h_{t-1}                                            \quad (9)

    g_t^r = d_t^r \otimes \hat g_t^r                               \quad (10)

    d_t^r = \max(\beta + e^{\alpha} - e^{(\alpha + \alpha_t) r}, 0)  \quad (11)

    \beta = \sigma(\hat\beta), \quad \alpha = \mathrm{softplus}(\hat\alpha),
    \quad \alpha_t = \sigma(W_a [h_{t-1}; x_t; 1])         \quad (12, 13, 14)

    (s_t^r, \hat g_t^r) = (\tanh, \sigma)(W_x x_t \mathbb{I}_{r=1}
        + W h_t^{r-1} + b)                                          \quad (16)

    R_t = \max_{\|g_t^r\|_1 > 0} r \le \max_i \tfrac{1}{\alpha_i}
        \log(\beta_i + e^{\alpha_i})                                \quad (15)

  Each row runs micro-layers until the first ``r`` whose gate is zero in
  every unit, or ``max_depth`` (Algorithm 1); that ``r`` does not update
  ``h``, so a row whose :math:`d_t^1` is zero everywhere keeps
  :math:`h_t = h_{t-1}` with :math:`R_t = 0`. Rows passed
  ``Context(active=False)`` (padding, from :func:`vcrnn_jax.unroll`) also take
  no micro-layer. The loop is :func:`vcrnn_jax.loops.halting_loop`:
  ``loop='while'`` costs the depth the rows realize (forward and backward);
  ``loop='scan'`` is the masked scan over ``max_depth`` it is tested against.
  ``R_t`` is a constant for differentiation; the gradient reaches
  :math:`\hat\alpha, \hat\beta, W_a` through the values of :math:`d_t^r`.
  Eq. 11 is evaluated overflow-free (:func:`elastic_gate`).

  Dropout as in :func:`rhn`: the ``x`` mask wherever ``x_t`` is read (the
  first micro-layer and Eq. 14), the state mask wherever a matmul reads
  :math:`h^{r-1}` (every micro-layer, and :math:`h_{t-1}` in Eq. 14).

  Params (``s`` and :math:`\hat g` fused, block order ``s, g``):

  * ``input_kernel``: ``[input_size, 2 * hidden_size]`` (:math:`W_x`)
  * ``recurrent_kernel``: ``[hidden_size, 2 * hidden_size]`` (:math:`W`)
  * ``bias``: ``[2 * hidden_size]`` (:math:`b`; the ``g`` block starts at
    ``transform_bias``)
  * ``elastic``: ``{'input_kernel': [input_size, hidden_size],
    'recurrent_kernel': [hidden_size, hidden_size], 'bias': [hidden_size]}``
    (:math:`W_a` of Eq. 14) and ``'alpha_hat'``, ``'beta_hat'``:
    ``[hidden_size]`` (Eq. 12-13)

  State: :class:`RHNState` ``(h,)``; output :class:`REHNOutput` ``(output=h_t,
  depth=R_t)``.

  Args:
    hidden_size: ``D_h``.
    max_depth: ``R_max`` of Algorithm 1.
    transform_bias: initial bias of :math:`\hat g`. 0 rather than RHN's -2:
      :math:`d_t^r < \beta` already scales the gate down.
    alpha_init: initial :math:`\alpha` (> 0); ``alpha_hat`` starts at its
      inverse softplus.
    beta_init: initial :math:`\beta` in (0, 1); ``beta_hat`` starts at its
      logit.
    rate_bias: initial bias of :math:`W_a`, so that :math:`\alpha_t \approx
      \sigma(\text{rate\_bias})` at first. The defaults (0.1, 0.9, -3) give a
      bound (Eq. 15) of 6.96 micro-layers at initialisation, about 4 realized
      at :math:`\alpha_t = 0.05`; the paper does not state its
      initialisation.
    input_dropout: dropout rate on ``x_t``.
    state_dropout: dropout rate on the state.
    loop: how the depth loop runs, a :class:`vcrnn_jax.loops.LoopConfig`
      (or its ``kind``): ``'while'`` costs the realized depth, ``'scan'`` is
      the masked scan over ``max_depth``; its ``compact_rows`` gathers the
      rows of the deep tail into halving batches. Same values and gradients
      up to float rounding. Default :data:`ELASTIC_LOOP`: the while loop
      with 6 backward-pass slots; a ``kind`` alone is ``LoopConfig(kind)``
      (8 slots).
    kernel_init: initialiser of the input kernels.
    recurrent_kernel_init: initialiser of each square recurrent block.
    param_dtype: dtype of the params and of the computation (the elastic
      gate is evaluated in at least float32).
    open_gate: ``True`` holds the gate open, :math:`d_t^r = 1` in Eq. 10
      (:math:`g_t^r = \hat g_t^r`), so every row runs ``max_depth``
      micro-layers and the params have no ``elastic`` entry: the ablation
      that judges the elastic gate apart from the rest of the cell (not in
      the paper).

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from vcrnn_jax import rehn
    >>> cell = rehn.srehn(20, max_depth=10)
    >>> params = cell.init(jax.random.key(0), input_size=2)
    >>> state, out = cell.apply(params, cell.initial_state(8),
    ...                         jnp.ones((8, 2)))
    >>> out.output.shape, out.depth.shape, out.depth.dtype   # h_t, R_t
    ((8, 20), (8,), dtype('int32'))
    >>> bool(jnp.all((1 <= out.depth) & (out.depth <= 10)))
    True

  .. note:: The paper names SREHN (Section 4.1) without writing it out; this
    is EI-REHN without the hypernetwork: Eq. 16 with :math:`W_s^r = W` and
    :math:`b_s^r = b` for every ``r``, the residual gating with its own
    shared weights.

  References:
    Park & Yoo, Early Improving Recurrent Elastic Highway Network, 2017.
  """

  def init_extra(key, input_size):
    del key, input_size  # SREHN has only the shared params.
    return {}

  def prepare(params, batch):
    del batch  # No per-row extras.
    return (params['recurrent_kernel'], params['bias']), ()

  def layer(weights, hm, u, extra):
    w, b = weights
    s, g_hat = jnp.split(utils.add_bias(u + hm @ w, b), 2, axis=-1)
    return jnp.tanh(s), jax.nn.sigmoid(g_hat), extra              # (16)

  return _elastic_cell(
      'srehn', hidden_size, max_depth, init_extra=init_extra,
      prepare=prepare, layer=layer, transform_bias=transform_bias,
      alpha_init=alpha_init, beta_init=beta_init, rate_bias=rate_bias,
      input_dropout=input_dropout, state_dropout=state_dropout, loop=loop,
      kernel_init=kernel_init,
      recurrent_kernel_init=recurrent_kernel_init, param_dtype=param_dtype,
      open_gate=open_gate)


def _hyper_params(key, hidden: int, hyper_size: int, kernel_init,
                  recurrent_kernel_init, hyper_init, param_dtype) -> dict:
  """EI-REHN's hypernetwork params (Eq. 17-21; listed in :func:`ei_rehn`)."""
  ks = jax.random.split(key, 5)
  init = lambda i, f, shape: utils.initialize(f, ks[i], shape, param_dtype)
  zeros = lambda n: jnp.zeros((n,), param_dtype)
  return {
      'residual_kernel': init(0, kernel_init, (hidden, hyper_size)),
      'gate_kernel': init(1, kernel_init, (hidden, hyper_size)),
      'recurrent_kernel': init(2, recurrent_kernel_init,
                               (hyper_size, hyper_size)),
      'bias': zeros(hyper_size),
      'delta_kernel': init(3, hyper_init, (hyper_size, 2 * hidden)),
      'update_gate_kernel': init(4, hyper_init, (hyper_size, 2 * hidden)),
      'update_gate_bias': zeros(2 * hidden),
      'initial_residual': zeros(hidden),
      'initial_gate': zeros(hidden),
      'initial_state': zeros(hyper_size),
  }


def ei_rehn(
    hidden_size: int,
    hyper_size: int,
    max_depth: int,
    *,
    transform_bias: float = 0.0,
    alpha_init: float = 0.1,
    beta_init: float = 0.9,
    rate_bias: float = -3.0,
    input_dropout: float = 0.0,
    state_dropout: float = 0.0,
    loop: loops.LoopConfig | str = ELASTIC_LOOP,
    kernel_init: utils.Initializer = utils.default_kernel_init,
    recurrent_kernel_init: utils.Initializer = (
        utils.default_recurrent_kernel_init),
    hyper_init: utils.Initializer = jax.nn.initializers.normal(0.01),
    param_dtype: Any = jnp.float32,
    open_gate: bool = False,
) -> Cell:
  r"""EI-REHN: the elastic gate plus hypernetwork weights (Eq. 9-22, Alg. 1).

  :func:`srehn` (Eq. 9-15, same depth rule, loop and dropout) in which the
  recurrent weight of both :math:`s_t^r` and :math:`\hat g_t^r` changes from
  micro-layer to micro-layer by a diagonal that a small RNN, the
  hypernetwork, emits:

  .. math::

    z_t^r = \tanh(W_{zh} s_t^{r-1} + W_{zg} \hat g_t^{r-1}
        + W_z z_t^{r-1} + b_z)                                    \quad (18)

    w_t^r = P z_t^r, \quad \Delta W_t^r = \mathrm{diag}(w_t^r)   \quad (19, 20)

    W_t^r = W_t^{r-1} + \Delta W_t^r, \quad W_t^0 = W             \quad (17)

    \bar g_t^r = \sigma(\bar P z_t^r + \bar b)                    \quad (21)

    s_t^r = \tanh(\bar g_t^r \otimes W_t^{r-1} h_t^{r-1}
        + (1 - \bar g_t^r) \otimes \Delta W_t^r h_t^{r-1}
        + W_x x_t \mathbb{I}_{r=1} + b)                           \quad (22)

  and :math:`\hat g_t^r` likewise with :math:`\sigma` for :math:`\tanh` and
  its own :math:`W_x, W, b, P, \bar P, \bar b`. Then Eq. 9-11 as in
  :func:`srehn`. Since :math:`\Delta W` is diagonal, :math:`W_t^{r-1} h =
  W h + (\sum_{k<r} w_t^k) \otimes h`: one ``[D, 2D]`` matmul per micro-layer.

  Readings of what the paper leaves open, chosen so that the parameter count
  is the paper's: :math:`3D_h^2 + 3D_hD_x + 9D_h + 6D_hD_z + D_z^2 + 2D_z`
  reproduces all six EI-REHN counts of Tables 1 and 2 (807/1732/2862 with a
  2-way readout and :math:`D_z = \lceil D_h/2 \rceil` = 5/8/10;
  8102/12126/16950 with one layer, a 6-way readout, :math:`D_z = D_h/2` and
  the :math:`10 D_h` extra parameters every model of Table 2 has; see
  ``tests/test_rehn.py``) and the PTB models' 25.3M and 19M
  (:math:`D_h = 1200, 1000`, :math:`D_z = D_h/2`, tied embeddings):

  * Eq. 18 at ``r = 1``: :math:`s_t^0, \hat g_t^0, z_t^0` are learned
    vectors (``initial_residual``, ``initial_gate``, ``initial_state``), the
    same for every row and time step; so :math:`z_t^1` and :math:`W_t^1` do
    not depend on the data, and :math:`z` is not carried across time steps.
  * Eq. 17: :math:`W_t^0` is the learned ``recurrent_kernel`` :math:`W`.
  * :math:`\hat g` has its own dynamic weights: its own :math:`P, \bar P,
    \bar b` read the same :math:`z_t^r` (the ``g`` blocks below).
  * Eq. 16 vs 22: one static bias ``b`` per gate (Eq. 22's); Eq. 16's
    layer-dependent :math:`b_s^r` is read as that :math:`b`.

  Params: those of :func:`srehn`, with ``recurrent_kernel`` :math:`W =
  W_t^0`, plus ``hyper`` (block order ``s, g`` in the ``2 * hidden_size``
  columns):

  * ``residual_kernel``: ``[hidden_size, hyper_size]`` (:math:`W_{zh}`)
  * ``gate_kernel``: ``[hidden_size, hyper_size]`` (:math:`W_{zg}`)
  * ``recurrent_kernel``: ``[hyper_size, hyper_size]`` (:math:`W_z`)
  * ``bias``: ``[hyper_size]`` (:math:`b_z`)
  * ``delta_kernel``: ``[hyper_size, 2 * hidden_size]`` (:math:`P`, Eq. 19)
  * ``update_gate_kernel``: ``[hyper_size, 2 * hidden_size]``
    (:math:`\bar P`, Eq. 21)
  * ``update_gate_bias``: ``[2 * hidden_size]`` (:math:`\bar b`)
  * ``initial_residual``, ``initial_gate``: ``[hidden_size]``
    (:math:`s_t^0, \hat g_t^0`); ``initial_state``: ``[hyper_size]``
    (:math:`z_t^0`). All three start at zero.

  State: :class:`RHNState` ``(h,)``; output :class:`REHNOutput` ``(output=h_t,
  depth=R_t)``.

  Args:
    hidden_size: ``D_h``.
    hyper_size: ``D_z``, the hypernetwork's state size (paper: ``D_h / 2``,
      e.g. 600 for ``D_h = 1200``; the Table 1 counts imply
      ``ceil(D_h / 2)``).
    max_depth: ``R_max`` of Algorithm 1.
    hyper_init: initialiser of :math:`P` and :math:`\bar P`; small, so that
      the weights start near the static :math:`W` (:math:`\bar g \approx
      0.5`).
    (others): as for :func:`srehn`.

  Example::

    cell = ei_rehn(20, hyper_size=10, max_depth=10)
    params = cell.init(jax.random.key(0), input_size=2)
    state, out = cell.apply(params, cell.initial_state(8), jnp.ones((8, 2)))

  .. warning:: The paper does not say what the hypernetwork reads at
    ``r = 1`` or where its state starts; the learned constants above are the
    reading its parameter counts support (Tables 1-2 add exactly
    :math:`2D_h + D_z` to the obvious parameters). The initialisation of
    every parameter is this library's choice, not the paper's.

  References:
    Park & Yoo, Early Improving Recurrent Elastic Highway Network, 2017.
    Ha, Dai & Le, HyperNetworks, 2016.
  """
  hyper_size = check_positive_int('hyper_size', hyper_size)
  hidden = check_positive_int('hidden_size', hidden_size)

  def init_extra(key, input_size):
    del input_size  # The hypernetwork reads s and g only.
    return {'hyper': _hyper_params(key, hidden, hyper_size, kernel_init,
                                   recurrent_kernel_init, hyper_init,
                                   param_dtype)}

  def prepare(params, batch):
    hp = params['hyper']
    # Fused once per time step, outside the loop: [s; g; z] -> z (Eq. 18)
    # and z -> [w; g_bar pre-activation] (Eq. 19, 21).
    z_kernel = jnp.concatenate([hp['residual_kernel'], hp['gate_kernel'],
                                hp['recurrent_kernel']], axis=0)
    p_kernel = jnp.concatenate([hp['delta_kernel'],
                                hp['update_gate_kernel']], axis=1)
    p_bias = jnp.concatenate([jnp.zeros_like(hp['update_gate_bias']),
                              hp['update_gate_bias']])
    z1 = jnp.tanh(jnp.concatenate([hp['initial_residual'],
                                   hp['initial_gate'],
                                   hp['initial_state']]) @ z_kernel
                  + hp['bias'])                                     # (18)
    extra = (jnp.broadcast_to(z1, (batch, hyper_size)),
             jnp.zeros((batch, 2 * hidden), z1.dtype))
    weights = (params['recurrent_kernel'], params['bias'], z_kernel,
               hp['bias'], p_kernel, p_bias)
    return weights, extra

  def layer(weights, hm, u, extra):
    w0, b, z_kernel, z_bias, p_kernel, p_bias = weights
    z, w_sum = extra                     # z_t^r, sum_{k<r} w_t^k
    w, g_bar = jnp.split(utils.add_bias(z @ p_kernel, p_bias), 2, axis=-1)
    g_bar = jax.nn.sigmoid(g_bar)                                   # (21)
    hm2 = jnp.concatenate([hm, hm], axis=-1)     # h for the s and g blocks
    pre = utils.add_bias(
        g_bar * (hm @ w0 + w_sum * hm2)          # W_t^{r-1} h   (17, 20)
        + (1 - g_bar) * (w * hm2)                # Delta W_t^r h (19, 20)
        + u, b)                                                     # (22)
    s, g_hat = jnp.split(pre, 2, axis=-1)
    s, g_hat = jnp.tanh(s), jax.nn.sigmoid(g_hat)
    # The next micro-layer's hypernetwork state, computed here so the loop
    # carries z and not (s, g, z).
    z_next = jnp.tanh(utils.add_bias(
        jnp.concatenate([s, g_hat, z], axis=-1) @ z_kernel, z_bias))  # (18)
    return s, g_hat, (z_next, w_sum + w)                            # (17)

  return _elastic_cell(
      'ei_rehn', hidden, max_depth, init_extra=init_extra,
      prepare=prepare, layer=layer, transform_bias=transform_bias,
      alpha_init=alpha_init, beta_init=beta_init, rate_bias=rate_bias,
      input_dropout=input_dropout, state_dropout=state_dropout, loop=loop,
      kernel_init=kernel_init,
      recurrent_kernel_init=recurrent_kernel_init, param_dtype=param_dtype,
      open_gate=open_gate)
