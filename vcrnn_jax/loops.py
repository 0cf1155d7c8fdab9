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
"""

from collections.abc import Callable
import dataclasses
import functools
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax.core import check_positive_int

PyTree = Any


@dataclasses.dataclass(frozen=True)
class LoopConfig:
  """How :func:`halting_loop` runs: the same maths at a different cost.

  Every field changes time or memory only; values and gradients agree up to
  float rounding (the tests compare each setting against ``kind='scan'``).

  Attributes:
    kind: ``'while'``: :func:`bounded_while_loop`, whose time and memory
      follow the steps taken, forward and backward. ``'scan'``: the
      :func:`masked_scan_loop` reference over ``max_steps``.
    checkpoints: the carries the ``'while'`` loop saves for its backward
      pass (memory is independent of ``max_steps``); a compacted stage of
      ``1/k`` of the rows keeps ``k`` times as many, up to ``max_steps``.
    save_residuals: with ``'while'``, also save each saved step's ``jax.vjp``
      residuals, so the backward pass transposes without re-running steps.
      Pays for matmul-bound bodies (large hidden size, small batch).
    compact_rows: with ``'while'`` and a 1-D batch, the smallest batch the
      still-running rows are gathered into as rows halt; None: never
      compact. Pays when a few rows run far longer than the rest.

  ``LoopConfig('scan')`` and the string ``'scan'`` are the same setting
  wherever a ``loop`` argument is taken (:func:`as_loop_config`):

  >>> from vcrnn_jax import loops
  >>> loops.as_loop_config('scan') == loops.LoopConfig('scan')
  True
  >>> loops.LoopConfig(checkpoints=4, save_residuals=True) == loops.LoopConfig(
  ...     kind='while', checkpoints=4, save_residuals=True, compact_rows=None)
  True
  >>> loops.LoopConfig('for')
  Traceback (most recent call last):
    ...
  ValueError: loop must be 'while' or 'scan', got 'for'.
  """
  kind: str = 'while'
  checkpoints: int = 8
  save_residuals: bool = False
  compact_rows: int | None = None

  def __post_init__(self):
    if self.kind not in ('while', 'scan'):
      raise ValueError(f"loop must be 'while' or 'scan', got {self.kind!r}.")
    check_positive_int('checkpoints', self.checkpoints)
    if not isinstance(self.save_residuals, (bool, np.bool_)):
      raise ValueError(
          f'save_residuals must be a bool, got {self.save_residuals!r}.')
    if self.compact_rows is not None:
      check_positive_int('compact_rows', self.compact_rows)


def as_loop_config(loop: Any) -> LoopConfig:
  """``loop`` as a :class:`LoopConfig`; a string is its ``kind``."""
  if isinstance(loop, LoopConfig):
    return loop
  if isinstance(loop, str):
    return LoopConfig(kind=loop)
  raise ValueError(
      f"loop must be a LoopConfig, 'while' or 'scan', got {loop!r}.")

_tree_flatten = jax.tree_util.tree_flatten
_tree_leaves = jax.tree_util.tree_leaves
_tree_map = jax.tree_util.tree_map
_tree_structure = jax.tree_util.tree_structure
_tree_unflatten = jax.tree_util.tree_unflatten
_CustomVJPPrimal = jax.custom_derivatives.CustomVJPPrimal
_SymbolicZero = jax.custom_derivatives.SymbolicZero


def bounded_while_loop(
    cond_fun: Callable[[PyTree], jax.Array],
    body_fun: Callable[[PyTree, PyTree], PyTree],
    params: PyTree,
    init_carry: PyTree,
    *,
    max_steps: int,
    checkpoints: int = 16,
    save_residuals: bool = False,
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
    Hence off by default. It relies on ``jax.vjp`` returning a
    pytree of its residuals; where a JAX version does not, it falls back to
    carries only.

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
    checkpoints: positive int, the number of carry slots (see above).
    save_residuals: whether slots also hold each saved step's ``jax.vjp``
      residuals (see above).

  Returns:
    ``(final_carry, num_steps)``, ``num_steps`` an int32 scalar.

  Raises:
    ValueError: if ``max_steps`` or ``checkpoints`` is not a positive int,
      ``save_residuals`` not a bool, ``cond_fun`` does not return a scalar
      bool, or ``body_fun`` does not return a carry of the structure, shapes
      and dtypes of ``init_carry``.
  """
  max_steps = check_positive_int('max_steps', max_steps)
  checkpoints = check_positive_int('checkpoints', checkpoints)
  if not isinstance(save_residuals, bool):
    raise ValueError(
        f'save_residuals must be a bool, got {save_residuals!r}.')
  traced = _trace_loop_functions(cond_fun, body_fun, params, init_carry)
  config = _Config(
      cond=traced.cond,
      body=traced.body,
      max_steps=max_steps,
      slots=min(checkpoints, max_steps),
      save_residuals=save_residuals,
  )
  return _loop(config, (traced.params, traced.body_consts), traced.carry,
               traced.cond_consts)


def masked_scan_loop(
    cond_fun: Callable[[PyTree], jax.Array],
    body_fun: Callable[[PyTree, PyTree], PyTree],
    params: PyTree,
    init_carry: PyTree,
    *,
    max_steps: int,
) -> tuple[PyTree, jax.Array]:
  """Reference for :func:`bounded_while_loop`: a masked ``lax.scan``.

  Runs ``body_fun`` ``max_steps`` times and keeps each new carry only while the
  loop would still be running, i.e. until the first step at which
  ``cond_fun(carry)`` is false; from then on the carry is frozen. Plain autodiff
  differentiates it, at the cost of ``max_steps`` steps of time and of saved
  memory whatever ``num_steps`` is. The frozen steps still run ``body_fun``, so
  their cotangents are zeros multiplied by its Jacobian: a body that overflows
  after the loop would have stopped can turn those into NaNs.

  Args:
    cond_fun: ``carry -> bool[]``, as for :func:`bounded_while_loop`.
    body_fun: ``(params, carry) -> carry``, as for :func:`bounded_while_loop`.
    params: pytree of arrays.
    init_carry: pytree of arrays.
    max_steps: positive int, the scan length.

  Returns:
    ``(final_carry, num_steps)``, ``num_steps`` an int32 scalar.

  Raises:
    ValueError: as :func:`bounded_while_loop`.
  """
  max_steps = check_positive_int('max_steps', max_steps)
  traced = _trace_loop_functions(cond_fun, body_fun, params, init_carry)
  carry_avals = traced.carry_avals

  def step(state, _):
    carry, num_steps, running = state
    running = running & cond_fun(carry)
    new_carry = _cast_like(body_fun(params, carry), carry_avals)
    carry = _tree_map(lambda new, old: jnp.where(running, new, old), new_carry,
                      carry)
    return (carry, num_steps + running.astype(jnp.int32), running), None

  init = (traced.carry, jnp.zeros((), jnp.int32), jnp.ones((), jnp.bool_))
  (carry, num_steps, _), _ = lax.scan(step, init, None, length=max_steps)
  return carry, num_steps


class HaltingCarry(NamedTuple):
  """The carry of :func:`halting_loop`."""
  rows: PyTree          # per-row carry, every leaf [batch, ...]
  running: jax.Array    # [batch] bool: rows still computing
  n: jax.Array          # int32 scalar: steps taken so far


def stage_sizes(batch_shape: tuple, compact_rows: Any) -> tuple[int, ...]:
  """Batch sizes of :func:`halting_loop`'s stages: halving to ``compact_rows``.

  ``(batch,)`` when ``compact_rows`` is None or the batch is not 1-D. A stage
  is added only while halving still shrinks the batch, so every
  ``compact_rows >= 1`` ends (``compact_rows=1`` halves down to one row).
  """
  if compact_rows is None or len(batch_shape) != 1:
    return tuple(batch_shape[:1]) or (1,)
  compact_rows = check_positive_int('compact_rows', compact_rows)
  sizes = [batch_shape[0]]
  while ((sizes[-1] + 1) // 2 >= compact_rows
         and (sizes[-1] + 1) // 2 < sizes[-1]):
    sizes.append((sizes[-1] + 1) // 2)
  return tuple(sizes)


def _running_first(running: jax.Array) -> jax.Array:
  """The row indices, running rows first, each group in order.

  A stable partition without a sort (XLA's CPU sort costs tens of
  microseconds even for a hundred rows): each row's place is a running count.
  """
  running = running.astype(jnp.int32)
  before = jnp.cumsum(running, dtype=jnp.int32) - running
  count = before[-1] + running[-1]
  place = jnp.where(running > 0, before,
                    count + jnp.arange(running.shape[0], dtype=jnp.int32)
                    - before)
  rows = jnp.arange(running.shape[0], dtype=jnp.int32)
  return jnp.zeros_like(rows).at[place].set(
      rows, mode='promise_in_bounds', unique_indices=True)


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

  Args:
    body_fun: ``(params, inputs, rows, running, n) -> (rows, running)``. It
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

  def body(args, c: HaltingCarry) -> HaltingCarry:
    params, inputs = args
    rows, running = body_fun(params, inputs, c.rows, c.running, c.n)
    # Each stage of a compacted loop counts to max_steps on its own; this
    # keeps the total there too.
    return HaltingCarry(rows, running & (c.n + 1 < max_steps), c.n + 1)

  carry = HaltingCarry(rows, running, jnp.zeros((), jnp.int32))
  if loop.kind == 'scan':
    final, _ = masked_scan_loop(lambda c: jnp.any(c.running), body,
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
    slots = min(max_steps, loop.checkpoints * max(1, sizes[0] // rows))
    carry, _ = bounded_while_loop(
        cond, body, (params, inputs), carry, max_steps=max_steps,
        checkpoints=slots, save_residuals=loop.save_residuals)
    return carry

  ends = sizes[1:] + (0,)
  carry = run(inputs, carry, ends[0])
  for size, rest in zip(sizes[1:], ends[1:]):

    def stage(carry, size=size, rest=rest):
      # At most ``size`` rows still run: gather them (and some halted rows,
      # which stay frozen) into a batch of ``size`` rows. Halted rows are
      # never touched again, so scattering the smaller batch back is exact.
      rows = _running_first(carry.running)[:size]
      take = lambda a: a.at[rows].get(mode='promise_in_bounds',
                                      unique_indices=True)
      sub = _tree_map(take, carry._replace(n=None))
      sub = run(_tree_map(take, inputs), sub._replace(n=carry.n), rest)
      merged = _tree_map(
          lambda a, b: a.at[rows].set(b, mode='promise_in_bounds',
                                      unique_indices=True),
          carry._replace(n=None), sub._replace(n=None))
      return merged._replace(n=sub.n)

    # A stage runs only if more rows than the next stage holds still run:
    # usually every row has halted long before, and the gathers are skipped.
    carry = lax.cond(jnp.sum(carry.running.astype(jnp.int32)) > rest, stage,
                     lambda carry: carry, carry)
  return carry.rows, carry.n


# ----------------------------------------------------------------------------
# Entry: validation and closure conversion.


class _Traced(NamedTuple):
  """``cond_fun`` and ``body_fun`` with their traced closures made explicit."""

  cond: Callable[[list[Any], PyTree], jax.Array]
  cond_consts: list[Any]
  body: Callable[[tuple[PyTree, list[Any]], PyTree], PyTree]
  body_consts: list[Any]
  params: PyTree
  carry: PyTree
  carry_avals: PyTree


def _trace_loop_functions(cond_fun, body_fun, params, init_carry) -> _Traced:
  """Validates the loop functions and closure-converts them.

  ``custom_vjp``'s backward pass runs in a different trace than its forward
  pass (inside ``lax.scan``'s transpose, for instance), so a ``body_fun`` that
  closes over a tracer (``x_t`` of a time scan) would leak it there. Tracing
  both functions to jaxprs here and hoisting every traced constant into an
  explicit argument makes the functions pure in their arguments.
  ``jax.closure_convert`` only hoists float constants, which leaves integer
  ones (a time index) to leak.
  """
  if not callable(cond_fun):
    raise ValueError(f'cond_fun must be callable, got {cond_fun!r}.')
  if not callable(body_fun):
    raise ValueError(f'body_fun must be callable, got {body_fun!r}.')
  params = _tree_map(jnp.asarray, params)
  carry = _tree_map(jnp.asarray, init_carry)
  in_avals = jax.eval_shape(lambda t: t, carry)
  body, body_consts, out_avals = _closure_convert(body_fun, params, carry)
  carry, recast = _check_body_output(in_avals, out_avals, carry)
  if recast:
    # Weakly typed initial leaves took the body's dtypes; trace again so the
    # jaxpr sees the dtypes the loop will run with.
    body, body_consts, out_avals = _closure_convert(body_fun, params, carry)
    in_avals = jax.eval_shape(lambda t: t, carry)
    _check_body_output(in_avals, out_avals, carry)
  cond, cond_consts, cond_aval = _closure_convert(cond_fun, carry)
  cond_leaves = _tree_leaves(cond_aval)
  if (len(cond_leaves) != 1 or cond_leaves[0] is not cond_aval or
      cond_aval.shape != () or cond_aval.dtype != jnp.bool_):
    raise ValueError(
        'cond_fun must return a scalar bool (reduce over the batch inside it, '
        f'e.g. jnp.any(running)), got {cond_aval}.')

  def converted_body(diff, carry):
    params, consts = diff
    return _cast_like(body(consts, params, carry), in_avals)

  return _Traced(cond, cond_consts, converted_body, body_consts, params, carry,
                 in_avals)


def _closure_convert(fun, *example_args):
  """Returns ``(converted, hoisted, out_avals)``.

  ``converted(hoisted, *args) == fun(*args)``, with every tracer ``fun`` closes
  over moved into ``hoisted``; concrete constants stay inside.
  """
  closed, out_avals = jax.make_jaxpr(fun, return_shape=True)(*example_args)
  consts = list(closed.consts)
  is_traced = [isinstance(c, jax.core.Tracer) for c in consts]
  hoisted = [c for c, t in zip(consts, is_traced) if t]
  kept = [c for c, t in zip(consts, is_traced) if not t]
  jaxpr = closed.jaxpr
  out_tree = _tree_structure(out_avals)

  def converted(hoisted_values, *args):
    hoisted_iter, kept_iter = iter(hoisted_values), iter(kept)
    all_consts = [next(hoisted_iter) if t else next(kept_iter)
                  for t in is_traced]
    out = jax.core.eval_jaxpr(jaxpr, all_consts, *_tree_leaves(args))
    return _tree_unflatten(out_tree, out)

  return converted, hoisted, out_avals


def _check_body_output(in_avals, out_avals, carry):
  """Checks ``body_fun``'s output against the carry; casts weak leaves.

  Returns ``(carry, recast)``. A weakly typed initial leaf (a Python scalar)
  takes the dtype the body returns, as in ``lax.while_loop``.
  """
  in_tree, out_tree = _tree_structure(in_avals), _tree_structure(out_avals)
  if in_tree != out_tree:
    raise ValueError(
        'body_fun must return a carry with the pytree structure of '
        f'init_carry, {in_tree}, got {out_tree}.')
  paths = [jax.tree_util.keystr(path) for path, _ in
           jax.tree_util.tree_flatten_with_path(in_avals)[0]]
  recast = False
  new_leaves = []
  for path, leaf, a_in, a_out in zip(paths, _tree_leaves(carry),
                                     _tree_leaves(in_avals),
                                     _tree_leaves(out_avals)):
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
  return _tree_unflatten(in_tree, new_leaves), recast


def _cast_like(tree, avals):
  # A body output can be weakly typed where the carry is not; while_loop and
  # scan need identical carry types.
  return _tree_map(lambda x, a: lax.convert_element_type(x, a.dtype), tree,
                   avals)


# ----------------------------------------------------------------------------
# The custom_vjp loop.


class _Config(NamedTuple):
  """Static description of one loop (a ``custom_vjp`` non-diff argument)."""

  cond: Callable[[list[Any], PyTree], jax.Array]
  body: Callable[[tuple[PyTree, list[Any]], PyTree], PyTree]
  max_steps: int
  slots: int
  save_residuals: bool


class _Layout(NamedTuple):
  """Where each leaf of one step's ``jax.vjp`` function comes from.

  ``sources[i]`` is ``('diff', k)``: leaf ``k`` of the flat differentiable
  arguments; ``('carry', k)``: leaf ``k`` of the carry before the step;
  ``('const', k)``: a concrete constant saved once; ``('stored', k)``: saved per
  slot in residual buffer ``k``, whose per-step shape is ``stored_avals[k]``.
  """

  treedef: Any
  sources: tuple[tuple[str, int], ...]
  stored_avals: tuple[jax.ShapeDtypeStruct, ...]


class _Static:
  """A childless pytree node: carries Python metadata through residuals."""

  def __init__(self, value):
    self.value = value


jax.tree_util.register_pytree_node(
    _Static, lambda s: ((), s.value), lambda value, _: _Static(value))


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


def _make_step(config, diff_tree, active, diff_leaves):
  """Returns ``step(active_leaves, carry)``: the body, inactive leaves fixed.

  Only the perturbed inexact leaves of the differentiable arguments are
  ``jax.vjp`` inputs, so no cotangent is computed for data (say an input frame
  that the body closed over) that nothing differentiates.
  """

  def step(active_leaves, carry):
    it = iter(active_leaves)
    leaves = [next(it) if a else x for a, x in zip(active, diff_leaves)]
    return config.body(_tree_unflatten(diff_tree, leaves), carry)

  return step


def _active_leaves(active, diff_leaves):
  return [x for a, x in zip(active, diff_leaves) if a]


def _residual_layout(config, diff_tree, active, diff_leaves, carry):
  """Traces one linearized step abstractly and sorts its ``jax.vjp`` leaves.

  Returns ``(layout, const_values)``, or ``(None, [])`` when this JAX's
  ``jax.vjp`` function is not a pytree of arrays (then slots hold carries only).
  Leaves that are the step's own inputs are recognised by identity, which is
  how ``jax.vjp`` itself saves them, and are not stored per slot.
  """
  found = []

  def probe(diff_leaves, carry):
    step = _make_step(config, diff_tree, active, diff_leaves)
    _, vjp_fn = jax.vjp(step, _active_leaves(active, diff_leaves), carry)
    leaves, treedef = _tree_flatten(vjp_fn)
    if (len(leaves) == 1 and leaves[0] is vjp_fn) or not all(
        isinstance(x, (jax.Array, np.ndarray, np.generic)) for x in leaves):
      found.append(None)
      return []
    diff_ids = {id(x): k for k, x in enumerate(diff_leaves)}
    carry_ids = {id(x): k for k, x in enumerate(_tree_leaves(carry))}
    stored_ids, stored, consts, sources = {}, [], [], []
    for leaf in leaves:
      if id(leaf) in diff_ids:
        sources.append(('diff', diff_ids[id(leaf)]))
      elif id(leaf) in carry_ids:
        sources.append(('carry', carry_ids[id(leaf)]))
      elif not isinstance(leaf, jax.core.Tracer):
        sources.append(('const', len(consts)))
        consts.append(leaf)
      else:
        if id(leaf) not in stored_ids:
          stored_ids[id(leaf)] = len(stored)
          stored.append(leaf)
        sources.append(('stored', stored_ids[id(leaf)]))
    found.append((treedef, tuple(sources), consts))
    return stored

  stored_avals = jax.eval_shape(probe, diff_leaves, carry)
  if found[0] is None:
    return None, []
  treedef, sources, consts = found[0]
  stored_avals = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype)
                       for a in stored_avals)
  return _Layout(treedef, sources, stored_avals), [jnp.asarray(c)
                                                   for c in consts]


def _linearized_step(step, layout, active, diff_leaves, carry):
  """One forward step that also returns its per-slot residuals."""
  if layout is None:
    return step(_active_leaves(active, diff_leaves), carry), []
  new_carry, vjp_fn = jax.vjp(step, _active_leaves(active, diff_leaves), carry)
  leaves = _tree_leaves(vjp_fn)
  stored = [None] * len(layout.stored_avals)
  if len(leaves) == len(layout.sources):
    for leaf, (kind, k) in zip(leaves, layout.sources):
      if kind == 'stored' and stored[k] is None:
        stored[k] = leaf
  if any(s is None or s.shape != a.shape or s.dtype != a.dtype
         for s, a in zip(stored, layout.stored_avals)):
    raise RuntimeError(
        'bounded_while_loop: the residuals of body_fun changed between two '
        'traces of the same step; is body_fun pure? Pass save_residuals=False '
        'to avoid relying on them.')
  return new_carry, stored


def _empty(shape, dtype):
  # Slots are read only after being written; lax.empty skips the zero fill on
  # GPU and TPU (it lowers to zeros on CPU).
  if hasattr(lax, 'empty'):
    return lax.empty(shape, dtype)
  return jnp.zeros(shape, dtype)


def _index(buffers, j):
  return _tree_map(lambda b: lax.dynamic_index_in_dim(b, j, 0, keepdims=False),
                   buffers)


def _write(buffers, values, j):
  return _tree_map(lambda b, x: lax.dynamic_update_index_in_dim(b, x, j, 0),
                   buffers, values)


def _masked_write(buffers, values, j, do_write):
  # Branch-free conditional write: a lax.cond would become a select of the
  # whole buffer under vmap.
  def write(b, x):
    old = lax.dynamic_index_in_dim(b, j, 0, keepdims=False)
    return lax.dynamic_update_index_in_dim(b, jnp.where(do_write, x, old), j, 0)

  return _tree_map(write, buffers, values)


def _compact(buffers, slots):
  """Moves slot ``2 i`` to slot ``i``, to save every ``2 * stride`` steps.

  A loop of in-place slot copies rather than a gather, so that no second copy
  of the buffers is ever live. Slot ``2 i`` is read before any write reaches
  it, since writes go to slots ``< i``.
  """

  def move(i, buffers):
    return _write(buffers, _index(buffers, 2 * i), i)

  return lax.fori_loop(1, (slots + 1) // 2, move, buffers)


def _unwrap(tree):
  is_primal = lambda x: isinstance(x, _CustomVJPPrimal)
  values = _tree_map(lambda p: p.value, tree, is_leaf=is_primal)
  perturbed = [p.perturbed for p in _tree_leaves(tree, is_leaf=is_primal)]
  return values, perturbed


def _is_inexact(x) -> bool:
  return jnp.issubdtype(x.dtype, jnp.inexact)


def _loop_fwd(config, diff, carry, cond_consts):
  diff, perturbed = _unwrap(diff)
  carry, _ = _unwrap(carry)
  cond_consts, _ = _unwrap(cond_consts)
  diff_leaves, diff_tree = _tree_flatten(diff)
  active = tuple(p and _is_inexact(x) for p, x in zip(perturbed, diff_leaves))
  if config.save_residuals:
    layout, const_values = _residual_layout(config, diff_tree, active,
                                            diff_leaves, carry)
  else:
    layout, const_values = None, []
  slots = config.slots
  stored_avals = layout.stored_avals if layout is not None else ()
  carry_buf = _tree_map(lambda x: _empty((slots,) + x.shape, x.dtype), carry)
  res_buf = [_empty((slots,) + a.shape, a.dtype) for a in stored_avals]

  def cond(c):
    return config.cond(cond_consts, c)

  def advance(dl, c):
    step = _make_step(config, diff_tree, active, dl)
    return _linearized_step(step, layout, active, dl, c)

  # Phase 1, the hot path: stride 1, every step fills the next slot.
  def fill_cond(state):
    n, _, c, _, _ = state
    return (n < slots) & cond(c)

  def fill_body(state):
    n, dl, c, cb, rb = state
    new_c, stored = advance(dl, c)
    return n + 1, dl, new_c, _write(cb, c, n), _write(rb, stored, n)

  # The differentiable leaves travel as loop-invariant carry so that the step
  # sees tracers exactly as _residual_layout's probe did.
  n, _, carry, carry_buf, res_buf = lax.while_loop(
      fill_cond, fill_body,
      (jnp.zeros((), jnp.int32), diff_leaves, carry, carry_buf, res_buf))
  stride = jnp.ones((), jnp.int32)

  if config.max_steps > slots:
    # Phase 2: each round halves the slots' density and doubles the stride.
    def round_cond(state):
      n, _, _, c, _, _ = state
      return (n < config.max_steps) & cond(c)

    def round_body(state):
      n, stride, dl, c, cb, rb = state
      cb, rb = _compact(cb, slots), _compact(rb, slots)
      stride = 2 * stride
      limit = jnp.minimum(slots * stride, config.max_steps)

      def step_cond(state):
        n, _, c, _, _ = state
        return (n < limit) & cond(c)

      def step_body(state):
        n, dl, c, cb, rb = state
        new_c, stored = advance(dl, c)
        slot, do_write = n // stride, n % stride == 0
        cb = _masked_write(cb, c, slot, do_write)
        rb = _masked_write(rb, stored, slot, do_write)
        return n + 1, dl, new_c, cb, rb

      n, dl, c, cb, rb = lax.while_loop(step_cond, step_body,
                                        (n, dl, c, cb, rb))
      return n, stride, dl, c, cb, rb

    n, stride, _, carry, carry_buf, res_buf = lax.while_loop(
        round_cond, round_body,
        (n, stride, diff_leaves, carry, carry_buf, res_buf))

  static = _Static((diff_tree, active, layout, _tree_structure(carry)))
  residuals = (diff_leaves, carry_buf, res_buf, const_values, n, stride, static)
  return (carry, n), residuals


def _loop_bwd(config, residuals, cotangents):
  diff_leaves, carry_buf, res_buf, const_values, n, stride, static = residuals
  diff_tree, active, layout, carry_tree = static.value
  carry_ct, _ = cotangents
  carry_avals = [jax.ShapeDtypeStruct(b.shape[1:], b.dtype)
                 for b in _tree_leaves(carry_buf)]
  inexact = [_is_inexact(a) for a in carry_avals]

  def instantiate(ct, aval):
    if isinstance(ct, _SymbolicZero) or ct is None:
      return jnp.zeros(aval.shape, aval.dtype)
    return ct

  ct_leaves = _tree_leaves(carry_ct, is_leaf=lambda x: isinstance(
      x, _SymbolicZero) or x is None)
  ct_c = [instantiate(ct, a)
          for ct, a, f in zip(ct_leaves, carry_avals, inexact) if f]

  def full_ct(ct_c):
    # jax.vjp wants float0 cotangents for integer and bool carry leaves.
    it = iter(ct_c)
    return _tree_unflatten(carry_tree, [
        next(it) if f else np.zeros(a.shape, jax.dtypes.float0)
        for a, f in zip(carry_avals, inexact)])

  def inexact_part(ct_tree):
    return [ct for ct, f in zip(_tree_leaves(ct_tree), inexact) if f]

  step = _make_step(config, diff_tree, active, diff_leaves)
  act = _active_leaves(active, diff_leaves)
  acc = [jnp.zeros_like(x) for x in act]

  def apply(vjp_fn, ct_c, acc):
    g_act, g_c = vjp_fn(full_ct(ct_c))
    return inexact_part(g_c), [a + g for a, g in zip(acc, g_act)]

  def recompute_and_apply(c, ct_c, acc):
    _, vjp_fn = jax.vjp(step, act, c)
    return apply(vjp_fn, ct_c, acc)

  def segment_cond(state):
    return state[0] > 0

  def segment_body(state):
    j, ct_c, acc = state
    j = j - 1
    slot_carry = _index(carry_buf, j)
    if config.max_steps > config.slots:
      # Steps j*stride + r for r = length-1 .. 1: run the slot's carry r steps
      # forward, then linearize and transpose that step. Zero trips at
      # stride 1.
      length = jnp.minimum(stride, n - j * stride)

      def offset_cond(state):
        return state[0] > 1

      def offset_body(state):
        r, ct_c, acc = state
        r = r - 1
        c = lax.fori_loop(0, r, lambda _, c: step(act, c), slot_carry)
        ct_c, acc = recompute_and_apply(c, ct_c, acc)
        return r, ct_c, acc

      _, ct_c, acc = lax.while_loop(offset_cond, offset_body,
                                    (length, ct_c, acc))
    # Step j*stride: its residuals are in the slot.
    if layout is None:
      ct_c, acc = recompute_and_apply(slot_carry, ct_c, acc)
    else:
      stored = _index(res_buf, j)
      carry_leaves = _tree_leaves(slot_carry)
      pools = {'diff': diff_leaves, 'carry': carry_leaves,
               'const': const_values, 'stored': stored}
      vjp_fn = _tree_unflatten(
          layout.treedef, [pools[kind][k] for kind, k in layout.sources])
      ct_c, acc = apply(vjp_fn, ct_c, acc)
    return j, ct_c, acc

  num_segments = (n + stride - 1) // stride
  _, ct_c, acc = lax.while_loop(segment_cond, segment_body,
                                (num_segments, ct_c, acc))
  acc_iter, ct_iter = iter(acc), iter(ct_c)
  diff_ct = _tree_unflatten(diff_tree,
                            [next(acc_iter) if a else None for a in active])
  init_ct = _tree_unflatten(carry_tree,
                            [next(ct_iter) if f else None for f in inexact])
  return diff_ct, init_ct, None


_loop.defvjp(_loop_fwd, _loop_bwd, symbolic_zeros=True)
