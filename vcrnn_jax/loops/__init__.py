"""Data-dependent loops with a reverse-mode derivative and bounded memory.

ACT pondering and EI-REHN elastic depth both run a cell a data-dependent number
of times. ``lax.while_loop`` expresses that but has no reverse-mode derivative,
and the usual workaround, a ``lax.scan`` over ``max_steps`` that masks the
finished steps, pays for ``max_steps`` steps in time and memory however few the
loop takes. :func:`bounded_while_loop` is a ``while_loop`` with a
``jax.custom_vjp`` whose backward pass runs over exactly the steps the forward
pass took and whose saved state never exceeds ``checkpoints`` slots, whatever
``max_steps`` is. :func:`masked_scan_loop` is the masked ``lax.scan`` with the
same signature, kept as the reference the tests compare against.
:func:`halting_loop` drives a batch of rows that halt one by one on top of
either (the loop ACT's pondering and EI-REHN's elastic depth share), with an
optional compaction of the rows that still run, configured by one
:class:`LoopConfig` that ACT, the elastic cells, their Flax modules and the
binaries pass along as a single value.

The first two take the loop as two pure functions::

  cond_fun(carry) -> scalar bool      # e.g. jnp.any(carry.running)
  body_fun(params, carry) -> carry    # same pytree, shapes and dtypes

and return ``(final_carry, num_steps)``. Everything that should receive a
gradient must reach ``body_fun`` through ``params`` or ``init_carry``; values
that ``body_fun`` closes over (an input frame ``x_t`` inside a time
``lax.scan``, say) are hoisted into explicit arguments, so closures are safe
and get gradients too, but passing differentiable values explicitly is clearer.

The package, one part per module:

* :mod:`~vcrnn_jax.loops.config`: :class:`LoopConfig`, the halting loop's
  settings;
* :mod:`~vcrnn_jax.loops.halting`: :func:`halting_loop`, the halting driver
  (with the row compaction of :mod:`vcrnn_jax.compaction`);
* :mod:`~vcrnn_jax.loops.bounded`: :func:`bounded_while_loop` and its
  ``custom_vjp``;
* :mod:`~vcrnn_jax.loops.slots`: the checkpoint slots it saves carries in;
* :mod:`~vcrnn_jax.loops.residuals`: one step differentiated, recomputed or
  from saved residuals;
* :mod:`~vcrnn_jax.loops.tracing`: the loop functions validated and
  closure-converted;
* :mod:`~vcrnn_jax.loops.scan`: :func:`masked_scan_loop`, the reference.
"""

from vcrnn_jax.loops.bounded import bounded_while_loop
from vcrnn_jax.loops.config import LoopConfig, as_loop_config
from vcrnn_jax.loops.halting import HaltingCarry, halting_loop, stage_sizes
from vcrnn_jax.loops.scan import masked_scan_loop
from vcrnn_jax.loops.tracing import PyTree

__all__ = [
    'HaltingCarry',
    'LoopConfig',
    'PyTree',
    'as_loop_config',
    'bounded_while_loop',
    'halting_loop',
    'masked_scan_loop',
    'stage_sizes',
]
