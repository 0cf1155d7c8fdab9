"""One loop step, differentiated: recomputed, or transposed from residuals.

For each step ``n`` it differentiates, the backward pass of
:func:`vcrnn_jax.loops.bounded_while_loop` needs the VJP of the step
``carry -> body(params, carry)`` at the carry before step ``n``. It gets it
one of two ways:

* **Recomputed** (:func:`recompute_vjp`): ``jax.vjp`` of the step from the
  saved carry, i.e. the step once more forward, then its transpose.
* **From saved residuals** (:class:`Linearization`, ``save_residuals=True``):
  the forward pass also saves what the step's transpose reads (its
  residuals) and the backward pass applies the transpose to them, without
  running the step again.

How the residuals are captured, with public JAX only. :func:`linearize`
traces, once per loop, ``probe(diff_leaves, carry) -> (new_carry,
residuals)``: ``jax.vjp`` of the step, whose pullback is closure-converted
(:func:`vcrnn_jax.loops.tracing.closure_convert`) against the cotangent of
the carry. The values the pullback closes over, hoisted into explicit
arguments, are the residuals, and the converted pullback is the step's
transpose as a function of ``(residuals, cotangent)``, callable in any
trace. ``jax.make_jaxpr`` of the probe then says where each residual comes
from: an output that is one of the probe's inputs is a parameter or a carry
leaf (the parameters are saved once, the carry is in its slot already); a
constant is saved once; every other residual is stored per slot. The forward
loop takes each step by evaluating the probe's jaxpr (:func:`forward`), which
gives the new carry and the residuals at once; the backward loop applies the
transpose (:func:`transpose`). Both come from the one trace, so they agree
by construction.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax.loops import tracing

__all__ = [
    'is_inexact',
    'Carry',
    'active_leaves',
    'make_step',
    'recompute_vjp',
    'Linearization',
    'linearize',
    'forward',
    'transpose',
]

PyTree = Any


def is_inexact(x) -> bool:
  """Whether ``x`` (an array or aval) gets a cotangent."""
  return jnp.issubdtype(x.dtype, jnp.inexact)


class Carry(NamedTuple):
  """The static layout of the carry: its tree and per-leaf avals.

  Integer and bool leaves (step counters, running masks) get ``float0``
  cotangents from ``jax.vjp`` and none from the loop; the loop passes the
  inexact leaves' cotangents around as a list (``ct_c``).
  """

  tree: Any
  avals: tuple[jax.ShapeDtypeStruct, ...]
  inexact: tuple[bool, ...]

  @classmethod
  def of(cls, carry: PyTree) -> 'Carry':
    leaves, tree = jax.tree_util.tree_flatten(carry)
    avals = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in leaves)
    return cls(tree, avals, tuple(is_inexact(a) for a in avals))

  def full_cotangent(self, ct_c: list) -> PyTree:
    """``ct_c`` as the carry's cotangent (``float0`` zeros elsewhere)."""
    it = iter(ct_c)
    return jax.tree_util.tree_unflatten(self.tree, [
        next(it) if f else np.zeros(a.shape, jax.dtypes.float0)
        for a, f in zip(self.avals, self.inexact)])

  def inexact_part(self, tree: PyTree) -> list:
    """The inexact leaves of a carry-shaped tree."""
    return [x for x, f in zip(jax.tree_util.tree_leaves(tree), self.inexact)
            if f]


def active_leaves(active: tuple[bool, ...], diff_leaves: list) -> list:
  """The differentiable leaves that get cotangents."""
  return [x for a, x in zip(active, diff_leaves) if a]


def make_step(body, diff_tree, active: tuple[bool, ...], diff_leaves: list):
  """Returns ``step(active_leaves, carry)``: the body, inactive leaves fixed.

  Only the perturbed inexact leaves of the differentiable arguments are
  ``jax.vjp`` inputs, so no cotangent is computed for data (say an input frame
  that the body closed over) that nothing differentiates.
  """

  def step(active_values, carry):
    it = iter(active_values)
    leaves = [next(it) if a else x for a, x in zip(active, diff_leaves)]
    return body(jax.tree_util.tree_unflatten(diff_tree, leaves), carry)

  return step


def _pullback(vjp_fn, carry: Carry, ct_c: list) -> tuple[list, list]:
  """``(cotangent of the active leaves, ct_c of the carry before)``."""
  g_act, g_c = vjp_fn(carry.full_cotangent(ct_c))
  return list(g_act), carry.inexact_part(g_c)


def recompute_vjp(step, act: list, c: PyTree, carry: Carry,
                  ct_c: list) -> tuple[list, list]:
  """The step's VJP at ``c``, running the step forward again."""
  _, vjp_fn = jax.vjp(step, act, c)
  return _pullback(vjp_fn, carry, ct_c)


class Linearization(NamedTuple):
  """A step with its residuals made explicit (see the module docstring).

  ``jaxpr`` maps ``(diff_leaves, carry_leaves)`` to ``(new_carry_leaves,
  residuals)``; ``pullback(residuals, ct_c) -> (g_act, ct_c)``. Residual
  ``i`` comes from ``sources[i]``: ``('diff', k)``, leaf ``k`` of the
  differentiable arguments; ``('carry', k)``, leaf ``k`` of the carry
  before the step; ``('const', k)``, constant ``k``, saved once;
  ``('stored', k)``, stored per slot in buffer ``k``, of per-step shape
  ``stored_avals[k]``.
  """

  jaxpr: Any
  pullback: Callable[[list, list], tuple[list, list]]
  sources: tuple[tuple[str, int], ...]
  stored_avals: tuple[jax.ShapeDtypeStruct, ...]
  stored_at: tuple[int, ...]      # a residual index of each stored buffer


def linearize(body, diff_tree, active, diff_leaves: list, carry: PyTree,
              info: Carry) -> tuple[Linearization, list]:
  """Traces the step once and sorts its residuals by where they come from.

  Returns ``(linearization, const_values)``.
  """
  found = []

  def probe(diff_leaves, carry):
    step = make_step(body, diff_tree, active, diff_leaves)
    new_carry, vjp_fn = jax.vjp(step, active_leaves(active, diff_leaves),
                                carry)
    ct_example = [jax.ShapeDtypeStruct(a.shape, a.dtype)
                  for a, f in zip(info.avals, info.inexact) if f]
    pullback, residuals, _ = tracing.closure_convert(
        lambda ct_c: _pullback(vjp_fn, info, ct_c), ct_example)
    found.append(pullback)
    return new_carry, residuals

  closed, out_avals = jax.make_jaxpr(probe, return_shape=True)(diff_leaves,
                                                               carry)
  num_diff, num_out = len(diff_leaves), len(info.avals)
  inputs = {v: k for k, v in enumerate(closed.jaxpr.invars)}
  constvars = {v: k for k, v in enumerate(closed.jaxpr.constvars)}
  residual_avals = out_avals[1]
  stored, sources, consts, stored_at = {}, [], [], []
  for i, v in enumerate(closed.jaxpr.outvars[num_out:]):
    if isinstance(v, jax.extend.core.Literal):
      sources.append(('const', len(consts)))
      consts.append(jnp.asarray(v.val, residual_avals[i].dtype))
    elif v in constvars:
      sources.append(('const', len(consts)))
      consts.append(jnp.asarray(closed.consts[constvars[v]]))
    elif v in inputs and inputs[v] < num_diff:
      sources.append(('diff', inputs[v]))
    elif v in inputs:
      sources.append(('carry', inputs[v] - num_diff))
    else:
      if v not in stored:
        stored[v] = len(stored_at)
        stored_at.append(i)
      sources.append(('stored', stored[v]))
  stored_avals = tuple(jax.ShapeDtypeStruct(residual_avals[i].shape,
                                            residual_avals[i].dtype)
                       for i in stored_at)
  return Linearization(closed, found[0], tuple(sources), stored_avals,
                       tuple(stored_at)), consts


def forward(lin: Linearization, diff_leaves: list, carry: PyTree
            ) -> tuple[PyTree, list]:
  """One step: ``(new_carry, stored residuals)``."""
  carry_leaves, tree = jax.tree_util.tree_flatten(carry)
  out = jax.core.eval_jaxpr(lin.jaxpr.jaxpr, lin.jaxpr.consts, *diff_leaves,
                            *carry_leaves)
  new_carry = jax.tree_util.tree_unflatten(tree, out[:len(carry_leaves)])
  residuals = out[len(carry_leaves):]
  return new_carry, [residuals[i] for i in lin.stored_at]


def transpose(lin: Linearization, diff_leaves: list, carry: PyTree,
              consts: list, stored: list, ct_c: list) -> tuple[list, list]:
  """The step's VJP at ``carry`` from its saved residuals."""
  pools = {'diff': diff_leaves, 'carry': jax.tree_util.tree_leaves(carry),
           'const': consts, 'stored': stored}
  return lin.pullback([pools[kind][k] for kind, k in lin.sources], ct_c)
