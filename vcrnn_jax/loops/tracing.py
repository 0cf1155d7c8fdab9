"""Loop functions as jaxprs: validation and closure conversion.

``bounded_while_loop``'s backward pass runs in another trace than its
forward pass (inside ``lax.scan``'s transpose, for instance), so a
``body_fun`` that closes over a tracer (the input frame ``x_t`` of a time
scan) would leak it there. :func:`trace_loop_functions` therefore traces
``cond_fun`` and ``body_fun`` once with ``jax.make_jaxpr``, checks what they
return against the carry, and hoists every traced constant of their jaxprs
into an explicit argument (:func:`closure_convert`): the functions it returns
are pure in their arguments, and the hoisted values travel as ordinary
inputs, with gradients. ``jax.closure_convert`` hoists only floating-point
constants, which would leave integer ones (a time index) to leak.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp

__all__ = ['Traced', 'trace_loop_functions', 'closure_convert', 'cast_like']

PyTree = Any


class Traced(NamedTuple):
  """``cond_fun`` and ``body_fun`` with their traced closures made explicit.

  ``cond(cond_consts, carry)`` and ``body((params, body_consts), carry)``;
  ``carry`` is the initial carry as the loop runs it (weakly typed leaves
  cast to the body's dtypes) and ``carry_avals`` its shapes and dtypes.
  """

  cond: Callable[[list[Any], PyTree], jax.Array]
  cond_consts: list[Any]
  body: Callable[[tuple[PyTree, list[Any]], PyTree], PyTree]
  body_consts: list[Any]
  params: PyTree
  carry: PyTree
  carry_avals: PyTree


def trace_loop_functions(cond_fun, body_fun, params, init_carry) -> Traced:
  """Validates the loop functions and closure-converts them.

  Raises:
    ValueError: a function is not callable, ``cond_fun`` does not return a
      scalar bool, or ``body_fun`` does not return a carry of the
      structure, shapes and dtypes of ``init_carry``.
  """
  if not callable(cond_fun):
    raise ValueError(f'cond_fun must be callable, got {cond_fun!r}.')
  if not callable(body_fun):
    raise ValueError(f'body_fun must be callable, got {body_fun!r}.')
  params = jax.tree_util.tree_map(jnp.asarray, params)
  carry = jax.tree_util.tree_map(jnp.asarray, init_carry)
  in_avals = jax.eval_shape(lambda t: t, carry)
  body, body_consts, out_avals = closure_convert(body_fun, params, carry)
  carry, recast = _check_body_output(in_avals, out_avals, carry)
  if recast:
    # Weakly typed initial leaves took the body's dtypes; trace again so the
    # jaxpr sees the dtypes the loop will run with.
    body, body_consts, out_avals = closure_convert(body_fun, params, carry)
    in_avals = jax.eval_shape(lambda t: t, carry)
    _check_body_output(in_avals, out_avals, carry)
  cond, cond_consts, cond_aval = closure_convert(cond_fun, carry)
  cond_leaves = jax.tree_util.tree_leaves(cond_aval)
  if (len(cond_leaves) != 1 or cond_leaves[0] is not cond_aval or
      cond_aval.shape != () or cond_aval.dtype != jnp.bool_):
    raise ValueError(
        'cond_fun must return a scalar bool (reduce over the batch inside it, '
        f'e.g. jnp.any(running)), got {cond_aval}.')

  def converted_body(diff, carry):
    params, consts = diff
    return cast_like(body(consts, params, carry), in_avals)

  return Traced(cond, cond_consts, converted_body, body_consts, params, carry,
                in_avals)


def closure_convert(fun, *example_args):
  """Returns ``(converted, hoisted, out_avals)``.

  ``converted(hoisted, *args) == fun(*args)``, with every tracer ``fun``
  closes over (a value of an enclosing trace) moved into ``hoisted``;
  concrete constants stay inside. ``converted`` evaluates ``fun``'s jaxpr,
  so it may be called in any trace.
  """
  closed, out_avals = jax.make_jaxpr(fun, return_shape=True)(*example_args)
  consts = list(closed.consts)
  is_traced = [isinstance(c, jax.core.Tracer) for c in consts]
  hoisted = [c for c, t in zip(consts, is_traced) if t]
  kept = [c for c, t in zip(consts, is_traced) if not t]
  jaxpr = closed.jaxpr
  out_tree = jax.tree_util.tree_structure(out_avals)

  def converted(hoisted_values, *args):
    hoisted_iter, kept_iter = iter(hoisted_values), iter(kept)
    all_consts = [next(hoisted_iter) if t else next(kept_iter)
                  for t in is_traced]
    out = jax.core.eval_jaxpr(jaxpr, all_consts,
                              *jax.tree_util.tree_leaves(args))
    return jax.tree_util.tree_unflatten(out_tree, out)

  return converted, hoisted, out_avals


def _check_body_output(in_avals, out_avals, carry):
  """Checks ``body_fun``'s output against the carry; casts weak leaves.

  Returns ``(carry, recast)``. A weakly typed initial leaf (a Python scalar)
  takes the dtype the body returns, as in ``lax.while_loop``.
  """
  in_tree = jax.tree_util.tree_structure(in_avals)
  out_tree = jax.tree_util.tree_structure(out_avals)
  if in_tree != out_tree:
    raise ValueError(
        'body_fun must return a carry with the pytree structure of '
        f'init_carry, {in_tree}, got {out_tree}.')
  paths = [jax.tree_util.keystr(path) for path, _ in
           jax.tree_util.tree_flatten_with_path(in_avals)[0]]
  recast = False
  new_leaves = []
  for path, leaf, a_in, a_out in zip(paths, jax.tree_util.tree_leaves(carry),
                                     jax.tree_util.tree_leaves(in_avals),
                                     jax.tree_util.tree_leaves(out_avals)):
    if a_in.shape != a_out.shape:
      raise ValueError(
          f'body_fun must keep the shape of every carry leaf: carry{path} '
          f'is {a_in.shape} in init_carry but {a_out.shape} after body_fun.')
    if a_in.dtype != a_out.dtype:
      if not getattr(a_in, 'weak_type', False):
        raise ValueError(
            f'body_fun must keep the dtype of every carry leaf: carry{path} is '
            f'{a_in.dtype} in init_carry but {a_out.dtype} after body_fun.')
      leaf = leaf.astype(a_out.dtype)
      recast = True
    new_leaves.append(leaf)
  return jax.tree_util.tree_unflatten(in_tree, new_leaves), recast


def cast_like(tree, avals):
  """``tree`` cast to the dtypes of ``avals``.

  A body output can be weakly typed where the carry is not; ``while_loop``
  and ``scan`` need identical carry types.
  """
  return jax.tree_util.tree_map(
      lambda x, a: lax.convert_element_type(x, a.dtype), tree, avals)
