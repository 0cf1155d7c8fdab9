"""The bounded while loop: ``lax.while_loop`` with a reverse-mode derivative.

:func:`bounded_while_loop` runs a body while a condition holds, at most
``max_steps`` times, and is differentiable in reverse mode at the cost of the
steps it took. ``_loop`` is a ``jax.custom_vjp``:

* undifferentiated, it is one ``lax.while_loop``;
* its forward rule (``_loop_fwd``) runs the same loop and saves carries in
  the fixed slots of :mod:`vcrnn_jax.loops.slots` (and, with
  ``save_residuals``, each saved step's residuals,
  :mod:`vcrnn_jax.loops.residuals`);
* its backward rule (``_loop_bwd``) walks the steps taken in reverse, one
  slot's segment at a time, differentiating each step from its slot.

The loop functions reach it closure-converted
(:mod:`vcrnn_jax.loops.tracing`), so nothing of the forward trace leaks into
the backward one.
"""

from collections.abc import Callable
import functools
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp

from vcrnn_jax.core import check_bool, check_positive_int
from vcrnn_jax.loops import residuals as res
from vcrnn_jax.loops import slots as slot_buffers
from vcrnn_jax.loops import tracing

__all__ = ['bounded_while_loop']

PyTree = Any


def bounded_while_loop(
    cond_fun: Callable[[PyTree], jax.Array],
    body_fun: Callable[[PyTree, PyTree], PyTree],
    params: PyTree,
    init_carry: PyTree,
    *,
    max_steps: int,
    checkpoints: int,
    save_residuals: bool,
) -> tuple[PyTree, jax.Array]:
  """Runs ``carry = body_fun(params, carry)`` while ``cond_fun(carry)``.

  That is, while ``n < max_steps and cond_fun(carry)``, ``n`` counting steps
  from 0. The forward pass is one ``lax.while_loop``. Under reverse-mode
  autodiff (``jax.grad``, ``jax.vjp``) the backward pass is a reverse
  ``while_loop`` over exactly the ``num_steps`` steps taken, so a loop that
  stops after 3 of at most 400 steps costs 3 steps each way, and the memory
  saved for it is ``checkpoints`` slots whatever ``max_steps`` is.

  Checkpoint scheme. Let ``K = min(checkpoints, max_steps)``. Slot ``j`` holds
  the carry before step ``j * stride``. ``stride`` starts at 1, so while
  ``num_steps <= K`` every step's input carry is saved. When the ``K`` slots
  are full and the loop goes on, slot ``2 i`` moves to slot ``i`` (in place)
  and ``stride`` doubles, so the final stride is the smallest power of two
  with ``num_steps <= K * stride``. Backward, step ``n`` is differentiated
  from slot ``n // stride``: the slot's carry is run ``n % stride`` steps
  forward (none at stride 1), then that step goes through ``jax.vjp`` and its
  ``params`` cotangent is accumulated. Saving the carry after each step instead
  would spare the slot that duplicates ``init_carry`` but not any step of
  work, since ``jax.vjp`` must re-run the step to linearize it anyway, and it
  would complicate the compaction; slot 0 therefore holds ``init_carry``.

  Cost model, with F one forward step and B one transposed step (a
  ``lax.scan`` of ``num_steps`` steps costs ``num_steps * (F + B)`` under
  ``jax.grad``):

  * ``num_steps <= K`` (the common case; ACT ponders a few steps): forward
    ``num_steps * F`` plus one carry copy per step, backward
    ``num_steps * (F + B)``: one ``jax.vjp`` per step, no other recomputation.
    When ``max_steps <= checkpoints`` XLA also drops the slot writes of carry
    leaves the backward pass never reads (accumulators, say).
  * ``num_steps > K``: forward as above plus ``log2(stride)`` compactions of
    ``K / 2`` slot copies each; the backward pass additionally recomputes
    ``stride * (stride - 1) / 2`` forward steps per full segment, about
    ``num_steps * (stride - 1) / 2`` in all, i.e. under ``num_steps**2 / K``
    since ``stride < 2 * num_steps / K``.
  * ``save_residuals=True`` also saves in each slot the residuals that
    ``jax.vjp`` of that slot's step keeps (minus those that are ``params`` or
    carry leaves, stored once), so the ``K`` saved steps are transposed
    without re-running them: backward ``num_steps * B`` for
    ``num_steps <= K``, exactly ``lax.scan``'s work. The slots grow by the
    residuals (two to three carries' worth for a tanh RNN cell), and the
    buffers are copied whole wherever they are saved (per time step inside a
    ``lax.scan``), so it pays off only for matmul-bound bodies (large hidden
    size, small batch, few slots); docs/performance.md has the measurements.
    Hence off by default. The residuals are those of the step's
    ``jax.vjp``, made explicit by closure conversion
    (:mod:`vcrnn_jax.loops.residuals`).

  Memory: ``K`` slots, so constant in ``max_steps`` once
  ``max_steps > checkpoints``; a smaller ``max_steps`` uses ``max_steps``
  slots. The slots are allocated with ``lax.empty``, which CPU backends
  zero-fill, so on CPU every call also pays a ``K``-carry memset: choose
  ``checkpoints`` near the usual number of steps rather than far above it.

  Transformations: composes with ``jax.jit``, ``jax.grad``/``jax.vjp``,
  ``jax.vmap`` (a vmapped loop runs until all its instances stop, each keeping
  its own ``num_steps``), ``lax.scan`` and nesting (``body_fun`` may itself call
  this function). Forward-mode autodiff (``jax.jvp``, ``jax.jacfwd``,
  ``jax.hessian``) is not supported, as for any ``jax.custom_vjp``, nor is
  differentiating the backward pass (reverse-over-reverse). Use it under
  ``jax.jit``: each call traces ``cond_fun`` and ``body_fun`` to convert their
  closures.

  Args:
    cond_fun: ``carry -> bool[]``, a scalar: reduce over any batch inside it,
      e.g. ``jnp.any(carry.running)``. Not differentiated.
    body_fun: ``(params, carry) -> carry`` with the pytree structure, shapes and
      dtypes of ``init_carry``. Must be pure.
    params: pytree of arrays that ``body_fun`` is differentiated with respect
      to. Leaves that nothing differentiates (data passed alongside the
      weights) cost no cotangent work.
    init_carry: pytree of arrays. Inexact (floating) leaves get cotangents;
      integer and bool leaves (step counters, running masks) are allowed and
      get zero cotangents.
    max_steps: positive int, the most steps the loop may take.
    checkpoints: positive int, the number of carry slots (see above). No
      default here: :class:`vcrnn_jax.loops.LoopConfig` holds the one
      default (``LoopConfig().checkpoints``).
    save_residuals: whether slots also hold each saved step's ``jax.vjp``
      residuals (see above); ``LoopConfig().save_residuals`` is the default.

  Returns:
    ``(final_carry, num_steps)``, ``num_steps`` an int32 scalar.

  Raises:
    ValueError: if ``max_steps`` or ``checkpoints`` is not a positive int,
      ``save_residuals`` not a bool, ``cond_fun`` does not return a scalar
      bool, or ``body_fun`` does not return a carry of the structure, shapes
      and dtypes of ``init_carry``.
  """
  # The validators LoopConfig runs where a config is written, run again for
  # a direct call: both accept and refuse the same values.
  max_steps = check_positive_int('max_steps', max_steps)
  checkpoints = check_positive_int('checkpoints', checkpoints)
  save_residuals = check_bool('save_residuals', save_residuals)
  traced = tracing.trace_loop_functions(cond_fun, body_fun, params,
                                        init_carry)
  config = _Config(
      cond=traced.cond,
      body=traced.body,
      max_steps=max_steps,
      slots=min(checkpoints, max_steps),
      save_residuals=save_residuals,
  )
  return _loop(config, (traced.params, traced.body_consts), traced.carry,
               traced.cond_consts)


class _Config(NamedTuple):
  """Static description of one loop (a ``custom_vjp`` non-diff argument)."""

  cond: Callable[[list[Any], PyTree], jax.Array]
  body: Callable[[tuple[PyTree, list[Any]], PyTree], PyTree]
  max_steps: int
  slots: int
  save_residuals: bool


class _Static:
  """A childless pytree node: carries Python metadata through residuals."""

  def __init__(self, value):
    self.value = value


jax.tree_util.register_pytree_node(
    _Static, lambda s: ((), s.value), lambda value, _: _Static(value))


class _Saved(NamedTuple):
  """What the forward rule saves for the backward rule.

  ``carry_buf`` and ``res_buf`` are the slots; slot ``j`` holds step ``j *
  stride``'s carry and stored residuals. ``static`` holds ``(diff_tree,
  active, linearization, carry)``: Python values, no arrays.
  """

  diff_leaves: list
  carry_buf: PyTree
  res_buf: list
  consts: list
  n: jax.Array
  stride: jax.Array
  static: _Static


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _loop(config, diff, carry, cond_consts):
  # Primal (not differentiated) evaluation: a plain while loop, no slots.
  def cond(state):
    n, c = state
    return (n < config.max_steps) & config.cond(cond_consts, c)

  def body(state):
    n, c = state
    return n + 1, config.body(diff, c)

  n, carry = lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), carry))
  return carry, n


def _unwrap(tree):
  """Values and ``perturbed`` flags of ``custom_vjp`` primals."""
  is_primal = lambda x: isinstance(x, jax.custom_derivatives.CustomVJPPrimal)
  values = jax.tree_util.tree_map(lambda p: p.value, tree, is_leaf=is_primal)
  perturbed = [p.perturbed
               for p in jax.tree_util.tree_leaves(tree, is_leaf=is_primal)]
  return values, perturbed


def _loop_fwd(config, diff, carry, cond_consts):
  """The forward rule: the loop, saving what the backward rule needs.

  With ``symbolic_zeros=True`` every primal arrives wrapped with whether it
  is perturbed; only perturbed inexact leaves of ``diff`` are ``active``
  (get cotangents). The step is the body with the inactive leaves fixed,
  linearized once ahead when residuals are saved. The loop then runs in two
  phases: :func:`_fill`, the hot path, at stride 1 while the steps fit the
  slots, and, only when ``max_steps`` exceeds them, :func:`_fill_thinned`,
  which thins the slots and doubles the stride each time they fill up.

  Returns:
    ``((final_carry, num_steps), saved)``, ``saved`` a :class:`_Saved`.
  """
  diff, perturbed = _unwrap(diff)
  carry, _ = _unwrap(carry)
  cond_consts, _ = _unwrap(cond_consts)
  diff_leaves, diff_tree = jax.tree_util.tree_flatten(diff)
  active = tuple(p and res.is_inexact(x)
                 for p, x in zip(perturbed, diff_leaves))
  info = res.Carry.of(carry)
  lin, consts = None, []
  if config.save_residuals:
    lin, consts = res.linearize(config.body, diff_tree, active, diff_leaves,
                                carry, info)
  step = res.make_step(config.body, diff_tree, active, diff_leaves)

  def advance(c):
    if lin is None:
      return step(res.active_leaves(active, diff_leaves), c), []
    return res.forward(lin, diff_leaves, c)

  buffers = (slot_buffers.empty(config.slots, carry),
             slot_buffers.empty(config.slots,
                                list(lin.stored_avals) if lin else []))
  cond = functools.partial(config.cond, cond_consts)
  n, carry, buffers = _fill(config.slots, advance, cond, carry, buffers)
  stride = jnp.ones((), jnp.int32)
  if config.max_steps > config.slots:
    n, stride, carry, buffers = _fill_thinned(config, advance, cond, n,
                                              carry, buffers)
  static = _Static((diff_tree, active, lin, info))
  return (carry, n), _Saved(diff_leaves, buffers[0], buffers[1], consts, n,
                            stride, static)


def _fill(slots, advance, cond, carry, buffers):
  """Steps at stride 1 until the slots are full or the loop ends: step
  ``n`` writes its input carry (and residuals) to slot ``n``.

  Returns ``(n, carry, buffers)``.
  """

  def fill_cond(state):
    n, c, _ = state
    return (n < slots) & cond(c)

  def fill_body(state):
    n, c, (cb, rb) = state
    new_c, stored = advance(c)
    return n + 1, new_c, (slot_buffers.write(cb, c, n),
                          slot_buffers.write(rb, stored, n))

  return lax.while_loop(fill_cond, fill_body,
                        (jnp.zeros((), jnp.int32), carry, buffers))


def _fill_thinned(config, advance, cond, n, carry, buffers):
  """The steps past the slots: rounds of thinning and doubling the stride.

  Each round moves slot ``2 i`` to slot ``i`` (:func:`slots.thin
  <vcrnn_jax.loops.slots.thin>`), doubles the stride, and steps on until
  the slots are full again at that stride, writing step ``n``'s carry to
  slot ``n // stride`` when ``n`` is a multiple of it.

  Returns ``(n, stride, carry, buffers)``.
  """
  slots = config.slots

  def round_cond(state):
    n, _, c, _ = state
    return (n < config.max_steps) & cond(c)

  def round_body(state):
    n, stride, c, buffers = state
    buffers = tuple(slot_buffers.thin(b, slots) for b in buffers)
    stride = 2 * stride
    limit = jnp.minimum(slots * stride, config.max_steps)

    def step_cond(state):
      n, c, _ = state
      return (n < limit) & cond(c)

    def step_body(state):
      n, c, (cb, rb) = state
      new_c, stored = advance(c)
      slot, do_write = n // stride, n % stride == 0
      return n + 1, new_c, (
          slot_buffers.masked_write(cb, c, slot, do_write),
          slot_buffers.masked_write(rb, stored, slot, do_write))

    n, c, buffers = lax.while_loop(step_cond, step_body, (n, c, buffers))
    return n, stride, c, buffers

  return lax.while_loop(round_cond, round_body,
                        (n, jnp.ones((), jnp.int32), carry, buffers))


def _loop_bwd(config, saved: _Saved, cotangents):
  """The backward rule: the steps taken, last first, from the slots.

  The loop took ``n`` steps, saved at ``stride``: slot ``j`` starts segment
  ``j``, the steps ``j * stride .. j * stride + stride - 1``. A reverse
  ``while_loop`` over the segments (:func:`_segment`) differentiates each
  segment's steps last first, carrying the carry's cotangent back and
  summing the active parameters' cotangents. Integer carry leaves and
  symbolic-zero cotangents are handled at the two ends: the cotangent in is
  instantiated for the inexact leaves only, and the cotangents out are
  ``None`` for everything that got none.

  Returns:
    ``(diff_ct, init_carry_ct, None)``, the last for ``cond_consts``.
  """
  diff_tree, active, lin, info = saved.static.value
  carry_ct, _ = cotangents
  ct_c = _instantiate(carry_ct, info)
  step = res.make_step(config.body, diff_tree, active, saved.diff_leaves)
  act = res.active_leaves(active, saved.diff_leaves)
  acc = [jnp.zeros_like(x) for x in act]
  segment = _segment(config, saved, step, act, lin, info)
  num_segments = (saved.n + saved.stride - 1) // saved.stride
  _, ct_c, acc = lax.while_loop(lambda state: state[0] > 0, segment,
                                (num_segments, ct_c, acc))
  acc_iter, ct_iter = iter(acc), iter(ct_c)
  diff_ct = jax.tree_util.tree_unflatten(
      diff_tree, [next(acc_iter) if a else None for a in active])
  init_ct = jax.tree_util.tree_unflatten(
      info.tree, [next(ct_iter) if f else None for f in info.inexact])
  return diff_ct, init_ct, None


def _instantiate(carry_ct, info: res.Carry) -> list:
  """The cotangent of the final carry, inexact leaves, zeros for symbolic
  zeros."""
  is_zero = lambda x: isinstance(
      x, jax.custom_derivatives.SymbolicZero) or x is None
  # Flattened against the carry's own structure: a None field of the carry
  # has no leaf there, so reading None cotangents as leaves would misalign.
  leaves = info.tree.flatten_up_to(carry_ct)
  return [jnp.zeros(a.shape, a.dtype) if is_zero(ct) else ct
          for ct, a, f in zip(leaves, info.avals, info.inexact) if f]


def _segment(config, saved: _Saved, step, act, lin, info: res.Carry):
  """The body of the backward loop: segment ``j - 1``'s steps, last first.

  Steps ``j * stride + r`` for ``r = length - 1 .. 1`` are recomputed from
  the slot's carry (``r`` steps forward, then ``jax.vjp``; none at stride 1,
  and none traced when ``max_steps`` fits the slots). Step ``j * stride``
  itself is differentiated from the slot: transposed from its residuals
  when they were saved, recomputed otherwise.
  """

  def accumulate(acc, g_act):
    return [a + g for a, g in zip(acc, g_act)]

  def segment(state):
    j, ct_c, acc = state
    j = j - 1
    slot_carry = slot_buffers.index(saved.carry_buf, j)
    if config.max_steps > config.slots:
      length = jnp.minimum(saved.stride, saved.n - j * saved.stride)

      def offset_body(state):
        r, ct_c, acc = state
        r = r - 1
        c = lax.fori_loop(0, r, lambda _, c: step(act, c), slot_carry)
        g_act, ct_c = res.recompute_vjp(step, act, c, info, ct_c)
        return r, ct_c, accumulate(acc, g_act)

      _, ct_c, acc = lax.while_loop(lambda state: state[0] > 1, offset_body,
                                    (length, ct_c, acc))
    if lin is None:
      g_act, ct_c = res.recompute_vjp(step, act, slot_carry, info, ct_c)
    else:
      g_act, ct_c = res.transpose(lin, saved.diff_leaves, slot_carry,
                                  saved.consts,
                                  slot_buffers.index(saved.res_buf, j), ct_c)
    return j, ct_c, accumulate(acc, g_act)

  return segment


_loop.defvjp(_loop_fwd, _loop_bwd, symbolic_zeros=True)
