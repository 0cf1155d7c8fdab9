"""The reference loop: a masked ``lax.scan`` over the most steps.

:func:`masked_scan_loop` runs the body ``max_steps`` times and keeps each new
carry only while the loop would still be running. Plain autodiff
differentiates it, so it is what :func:`vcrnn_jax.loops.bounded_while_loop`
and every ``LoopConfig`` setting of the halting loop are tested against, and
what ``LoopConfig('scan')`` runs.
"""

from collections.abc import Callable
from typing import Any

import jax
from jax import lax
import jax.numpy as jnp

from vcrnn_jax.core import check_positive_int, select_rows
from vcrnn_jax.loops import tracing

__all__ = ['masked_scan_loop']

PyTree = Any


def masked_scan_loop(
    cond_fun: Callable[[PyTree], jax.Array],
    body_fun: Callable[[PyTree, PyTree], PyTree],
    params: PyTree,
    init_carry: PyTree,
    *,
    max_steps: int,
) -> tuple[PyTree, jax.Array]:
  """Reference for :func:`~vcrnn_jax.loops.bounded_while_loop`: a masked
  ``lax.scan``.

  Runs ``body_fun`` ``max_steps`` times and keeps each new carry only while the
  loop would still be running, i.e. until the first step at which
  ``cond_fun(carry)`` is false; from then on the carry is frozen. Plain autodiff
  differentiates it, at the cost of ``max_steps`` steps of time and of saved
  memory whatever ``num_steps`` is. The frozen steps still run ``body_fun``, so
  their cotangents are zeros multiplied by its Jacobian: a body that overflows
  after the loop would have stopped can turn those into NaNs.

  Args:
    cond_fun: ``carry -> bool[]``, as for
      :func:`~vcrnn_jax.loops.bounded_while_loop`.
    body_fun: ``(params, carry) -> carry``, as for
      :func:`~vcrnn_jax.loops.bounded_while_loop`.
    params: pytree of arrays.
    init_carry: pytree of arrays.
    max_steps: positive int, the scan length.

  Returns:
    ``(final_carry, num_steps)``, ``num_steps`` an int32 scalar.

  Raises:
    ValueError: as :func:`~vcrnn_jax.loops.bounded_while_loop`.
  """
  max_steps = check_positive_int('max_steps', max_steps)
  traced = tracing.trace_loop_functions(cond_fun, body_fun, params,
                                        init_carry)
  carry_avals = traced.carry_avals

  def step(state, _):
    carry, num_steps, running = state
    running = running & cond_fun(carry)
    new_carry = tracing.cast_like(body_fun(params, carry), carry_avals)
    carry = select_rows(running, new_carry, carry)
    return (carry, num_steps + running.astype(jnp.int32), running), None

  init = (traced.carry, jnp.zeros((), jnp.int32), jnp.ones((), jnp.bool_))
  (carry, num_steps, _), _ = lax.scan(step, init, None, length=max_steps)
  return carry, num_steps
