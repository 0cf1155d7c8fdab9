"""The settings of a halting loop, as one frozen, hashable value.

:class:`LoopConfig` is what :func:`vcrnn_jax.loops.halting_loop` reads, and
what ACT, PonderNet, the elastic-depth cells, their Flax modules and the
binaries pass along untouched: a static ``jit`` argument and a Flax field,
as equinox's ``while_loop`` takes its loop kind and checkpoints as one
thing. It validates itself when made, so a bad setting fails where it is
written, not at the first trace. Its fields change the cost of the loop,
never its values.
"""

import dataclasses
from typing import Any

from vcrnn_jax import compaction
from vcrnn_jax.core import check_bool, check_positive_int

__all__ = ['LoopConfig', 'as_loop_config']


@dataclasses.dataclass(frozen=True)
class LoopConfig:
  """How :func:`vcrnn_jax.loops.halting_loop` runs: the same maths at a
  different cost.

  Every field changes time or memory only; values and gradients agree up to
  float rounding (the tests compare each setting against ``kind='scan'``).

  Attributes:
    kind: ``'while'``: :func:`vcrnn_jax.loops.bounded_while_loop`, whose
      time and memory follow the steps taken, forward and backward.
      ``'scan'``: the :func:`vcrnn_jax.loops.masked_scan_loop` reference
      over ``max_steps``.
    checkpoints: the carries the ``'while'`` loop saves for its backward
      pass (memory is independent of ``max_steps``); a compacted stage of
      ``1/k`` of the rows keeps ``k`` times as many, up to ``max_steps``.
    save_residuals: with ``'while'``, also save each saved step's
      linearisation residuals, so the backward pass transposes without
      re-running steps. Pays for matmul-bound bodies (large hidden size,
      small batch).
    compact_rows: with ``'while'`` and a 1-D batch, the smallest batch the
      still-running rows are gathered into as rows halt (the halving
      ladder of :mod:`vcrnn_jax.compaction`); None: never compact. Pays
      when a few rows run far longer than the rest.
    unroll: with ``'while'``, the steps each loop iteration runs: the
      continue test is evaluated once per ``unroll`` steps, and the steps
      an iteration takes after every row has halted change nothing (the
      rows stay as they are, the step count stops). Pays where the test is
      dear, on a GPU, where each iteration's predicate goes to the host;
      costs up to ``unroll - 1`` idle steps after the last row halts,
      forward and backward, and moves to a compaction stage up to
      ``unroll - 1`` steps late. The backward slots then hold one carry
      per iteration (with ``save_residuals``, ``unroll`` steps' residuals
      each), and the backward pass differentiates an iteration's ``unroll``
      steps at once.

  ``LoopConfig('scan')`` and the string ``'scan'`` are the same setting
  wherever a ``loop`` argument is taken (:func:`as_loop_config`):

  >>> from vcrnn_jax import loops
  >>> loops.as_loop_config('scan') == loops.LoopConfig('scan')
  True
  >>> loops.LoopConfig(checkpoints=4, save_residuals=True) == loops.LoopConfig(
  ...     kind='while', checkpoints=4, save_residuals=True, compact_rows=None,
  ...     unroll=1)
  True
  >>> loops.LoopConfig('for')
  Traceback (most recent call last):
    ...
  ValueError: loop must be 'while' or 'scan', got 'for'.
  >>> loops.LoopConfig('scan', unroll=4)
  Traceback (most recent call last):
    ...
  ValueError: unroll=4 is for kind='while', not 'scan'.
  """
  kind: str = 'while'
  checkpoints: int = 8
  save_residuals: bool = False
  compact_rows: int | None = None
  unroll: int = 1

  def __post_init__(self):
    if self.kind not in ('while', 'scan'):
      raise ValueError(f"loop must be 'while' or 'scan', got {self.kind!r}.")
    # Stored as the validators return them (np.True_ as True, np.int64(4)
    # as 4), so the loop that reads them needs no check of its own and the
    # config hashes as the plain values do.
    object.__setattr__(self, 'checkpoints',
                       check_positive_int('checkpoints', self.checkpoints))
    object.__setattr__(self, 'save_residuals',
                       check_bool('save_residuals', self.save_residuals))
    object.__setattr__(self, 'compact_rows',
                       compaction.check_compact_rows(self.compact_rows))
    object.__setattr__(self, 'unroll',
                       check_positive_int('unroll', self.unroll))
    if self.kind == 'scan' and self.unroll != 1:
      # The masked scan is the reference: it runs every step already.
      raise ValueError(f"unroll={self.unroll} is for kind='while', not "
                       "'scan'.")


def as_loop_config(loop: Any) -> LoopConfig:
  """``loop`` as a :class:`LoopConfig`; a string is its ``kind``."""
  if isinstance(loop, LoopConfig):
    return loop
  if isinstance(loop, str):
    return LoopConfig(kind=loop)
  raise ValueError(
      f"loop must be a LoopConfig, 'while' or 'scan', got {loop!r}.")
