"""The halting driver: a batch of rows that halt one by one.

ACT's pondering, PonderNet's and EI-REHN's elastic depth step every row of a
batch until it halts. :func:`halting_loop` owns that loop: it counts the
steps, stops a row at ``max_steps``, runs on
:func:`~vcrnn_jax.loops.bounded_while_loop` or the
:func:`~vcrnn_jax.loops.masked_scan_loop` reference as its
:class:`~vcrnn_jax.loops.LoopConfig` says, and, with ``compact_rows``,
gathers the rows still running into smaller batches as the others halt
(:mod:`vcrnn_jax.compaction`'s halving ladder), each stage a loop of its
own. The paper's maths stays in the body it is given.
"""

from collections.abc import Callable
import functools
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp

from vcrnn_jax import compaction
from vcrnn_jax.core import check_positive_int
from vcrnn_jax.loops.bounded import bounded_while_loop
from vcrnn_jax.loops.config import LoopConfig, as_loop_config
from vcrnn_jax.loops.scan import masked_scan_loop

__all__ = ['HaltingCarry', 'stage_sizes', 'halting_loop']

PyTree = Any


class HaltingCarry(NamedTuple):
  """The carry of :func:`halting_loop`."""
  rows: PyTree          # per-row carry, every leaf [batch, ...]
  running: jax.Array    # [batch] bool: rows still computing
  n: jax.Array          # int32 scalar: steps taken so far


def stage_sizes(batch_shape: tuple, compact_rows: Any) -> tuple[int, ...]:
  """Batch sizes of :func:`halting_loop`'s stages: halving to ``compact_rows``.

  :func:`vcrnn_jax.compaction.halving_sizes` of a 1-D batch; ``(batch,)``
  when ``compact_rows`` is None or the batch is not 1-D.
  """
  if compact_rows is None or len(batch_shape) != 1:
    return tuple(batch_shape[:1]) or (1,)
  return compaction.halving_sizes(batch_shape[0], compact_rows)


def halting_loop(
    body_fun: Callable[..., tuple[PyTree, jax.Array]],
    params: PyTree,
    inputs: PyTree,
    rows: PyTree,
    running: jax.Array,
    *,
    max_steps: int,
    loop: LoopConfig | str = LoopConfig(),
) -> tuple[PyTree, jax.Array]:
  """Steps a batch of rows until every row has halted: ACT pondering, EI-REHN
  depth.

  Runs ``rows, running = body_fun(params, inputs, rows, running, n)`` for
  ``n = 0, 1, ...`` while any row is running and ``n < max_steps``.

  The paper-specific maths lives in ``body_fun``; this driver owns the loop
  (:class:`LoopConfig`): ``kind='while'`` runs :func:`bounded_while_loop`
  (time and memory follow the steps taken; reverse-mode gradients),
  ``kind='scan'`` the :func:`masked_scan_loop` reference over ``max_steps``.

  Row compaction (``compact_rows``, ``kind='while'``, 1-D batch): the loop
  runs on the whole batch while more than half of its rows still run, then
  gathers the running rows (and their ``inputs``) into a batch of half the
  size and goes on there, halving again as rows halt, down to
  ``compact_rows`` rows; the results are scattered back. A step then costs
  about the rows that actually run rather than the whole batch times the
  slowest row's steps. Each stage is its own :func:`bounded_while_loop`, so
  gradients stay exact. The stages run one after the other, each gathering
  from and scattering back into the whole batch behind a ``lax.cond`` that
  skips it unless more rows run than the next stage holds: rows that halt
  together skip every later stage, and a drop from 22 to 8 running rows goes
  straight to the 8-row stage.

  With ``unroll=k`` (``kind='while'``) each loop iteration runs ``k``
  steps and tests once: a step taken after every row has halted is
  discarded whole (rows, ``running`` and the count stay), so the results
  are those of ``unroll=1`` up to float rounding (the parameters'
  cotangents are summed in another order); the loop pays up to ``k - 1``
  idle steps after the last row halts, moves to a compaction stage up to
  ``k - 1`` steps late, and saves ``k - 1`` of every ``k`` continue
  tests.

  Args:
    body_fun: ``(params, inputs, rows, running, n) -> (rows, running)``,
      ``0 <= n < max_steps`` (with ``unroll > 1`` it is also called, its
      result discarded, once every row has halted). It
      must leave rows whose ``running`` is False unchanged (compaction
      carries some halted rows along in the smaller batch), and may only
      switch rows from running to halted.
    params: pytree shared by all rows (weights); gets gradients.
    inputs: pytree of per-row data, leaves ``[batch, ...]`` (an input frame,
      a mask); gathered with the rows; gets gradients.
    rows: the per-row carry, leaves ``[batch, ...]``.
    running: ``[batch]`` bool, the rows that start running (rows that start
      halted take no step).
    max_steps: the most steps.
    loop: a :class:`LoopConfig`, or its ``kind`` alone.

  Returns:
    ``(rows, num_steps)``: the final rows and the (int32 scalar) number of
    loop steps, the maximum over rows.
  """
  max_steps = check_positive_int('max_steps', max_steps)
  loop = as_loop_config(loop)

  def step(args, c: HaltingCarry) -> HaltingCarry:
    params, inputs = args
    rows, running = body_fun(params, inputs, c.rows, c.running, c.n)
    # Each stage of a compacted loop counts to max_steps on its own; this
    # keeps the total there too.
    return HaltingCarry(rows, running & (c.n + 1 < max_steps), c.n + 1)

  def body(args, c: HaltingCarry) -> HaltingCarry:
    # The loop tests once per ``unroll`` steps. A step taken after every
    # row has halted is discarded whole (body_fun would leave the rows, but
    # it may write by n, and the count must stop), and it reads n clamped
    # below max_steps: a read past a per-step table can be NaN (jnp.take's
    # fill), and the select's gradient would carry 0 * NaN. While a row
    # runs, n < max_steps already.
    c = step(args, c)
    for _ in range(loop.unroll - 1):
      live = jnp.any(c.running)
      new = step(args, c._replace(n=jnp.minimum(c.n, max_steps - 1)))
      c = jax.tree_util.tree_map(functools.partial(jnp.where, live), new, c)
    return c

  carry = HaltingCarry(rows, running, jnp.zeros((), jnp.int32))
  if loop.kind == 'scan':
    final, _ = masked_scan_loop(lambda c: jnp.any(c.running), step,
                                (params, inputs), carry, max_steps=max_steps)
    return final.rows, final.n

  sizes = stage_sizes(running.shape, loop.compact_rows)

  def run(inputs, carry, rest):
    """The while loop until at most ``rest`` rows still run."""
    def cond(c):
      return jnp.sum(c.running.astype(jnp.int32)) > rest

    # A stage of fewer rows keeps proportionally more slots in the memory
    # of the first stage's: the tail's few rows often run longest, and
    # every step past the slots is recomputed in the backward pass.
    rows = carry.running.shape[0] if carry.running.ndim else 1
    iterations = -(-max_steps // loop.unroll)
    slots = min(iterations, loop.checkpoints * max(1, sizes[0] // rows))
    carry, _ = bounded_while_loop(
        cond, body, (params, inputs), carry, max_steps=iterations,
        checkpoints=slots, save_residuals=loop.save_residuals)
    return carry

  ends = sizes[1:] + (0,)
  carry = run(inputs, carry, ends[0])
  for size, rest in zip(sizes[1:], ends[1:]):

    def stage(carry, size=size, rest=rest):
      # At most ``size`` rows still run: gather them (and some halted rows,
      # which stay frozen) into a batch of ``size`` rows. Halted rows are
      # never touched again, so scattering the smaller batch back is exact.
      rows = compaction.order_rows(carry.running)[:size]
      sub = compaction.take(carry._replace(n=None), rows)
      sub = run(compaction.take(inputs, rows), sub._replace(n=carry.n), rest)
      merged = compaction.put(carry._replace(n=None), rows,
                              sub._replace(n=None))
      return merged._replace(n=sub.n)

    # A stage runs only if more rows than the next stage holds still run:
    # usually every row has halted long before, and the gathers are skipped.
    carry = lax.cond(jnp.sum(carry.running.astype(jnp.int32)) > rest, stage,
                     lambda carry: carry, carry)
  return carry.rows, carry.n
