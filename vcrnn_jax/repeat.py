r"""Repeat-RNN (Fojo et al. 2018): each input presented a fixed number of times.

:func:`repeat` wraps any :class:`vcrnn_jax.Cell` so that it reads each input
:math:`\rho` times in a row before moving on: ACT's extra steps without ACT's
halting unit, the control every claim about ACT's adaptivity needs.

Example (ACT's parity network with a fixed :math:`\rho = 3`, at width 16):

>>> import jax, jax.numpy as jnp
>>> from vcrnn_jax import cells, repeat
>>> cell = repeat.repeat(cells.elman(16), repetitions=3)
>>> params = cell.init(jax.random.key(0), input_size=64)
>>> params['cell']['input_kernel'].shape        # x_t plus the first-step flag
(65, 16)
>>> state, y = cell.apply(params, cell.initial_state(4), jnp.ones((4, 64)))
>>> y.shape
(4, 16)

References:
  Fojo, Campos & Giro-i-Nieto, Comparing Fixed and Adaptive Computation Time
  for Recurrent Neural Networks, ICLR 2018 workshop. arXiv:1803.08165.
"""

import jax
from jax import lax
import jax.numpy as jnp

from vcrnn_jax import pondering
from vcrnn_jax.core import (
  Cell,
  Context,
  InputSizeError,
  as_context,
  check_cell,
  check_positive_int,
  param_dtype_of,
  select_rows,
)

__all__ = ['repeat']


def _first_presentation(cell: Cell, params, state, x, context: Context):
  """The first presentation, with an input-size error in repeat's terms."""
  try:
    return cell.apply(params, state, pondering.with_step_flag(x, True),
                      context)
  except InputSizeError as e:
    raise pondering.restated_input_error(e, 'repeat', x) from None


def repeat(cell: Cell, repetitions: int) -> Cell:
  r"""Wraps ``cell`` so that it reads every input ``repetitions`` times (R1).

  With :math:`\rho` = ``repetitions`` and ``S`` the wrapped cell, input step
  ``t`` runs

  .. math::

    s_t^n = S(s_t^{n-1}, [x_t; \delta_{n,1}]),\quad s_t^0 = s_{t-1},\quad
    n = 1, \dots, \rho                                          \quad (R1)

    s_t = s_t^\rho, \qquad y_t = y_t^\rho

  The flag :math:`\delta_{n,1}` is ACT's (its Eq. 3): 1 on the first
  presentation only, an extra input feature, so the wrapped cell is
  initialised with ``input_size + 1``. The state carries across the
  repetitions and the output is the wrapped cell's output after the last
  one, structured outputs included (a VC cell's :class:`VCOutput` of its
  last repetition). Nothing is learned about how long to ponder.

  The first presentation runs on its own (its flag differs, and it gives the
  output's structure); the other :math:`\rho - 1` run in a ``lax.scan`` that
  carries the state and the latest output. A Python loop would unroll
  :math:`\rho` copies of the cell into the graph, inside
  :func:`vcrnn_jax.unroll`'s scan too, so compile time would grow with
  :math:`\rho`; the scan keeps it at two copies whatever :math:`\rho`, and
  reverse mode saves the same residuals either way.

  The same ``context`` reaches every repetition: a dropout key gives the
  same masks to all of them, as to all time steps. Rows whose
  ``context.active`` is False (padding) keep their state and output zeros,
  as :func:`vcrnn_jax.unroll` makes them; the wrapped cell is told, so an
  adaptive one (ACT) does the least work for them.

  Args:
    cell: any cell of the protocol (Elman, GRU, LSTM, VC, ACT, ...).
    repetitions: :math:`\rho`, a positive Python int (static: it sets the
      loop's length). 1 is the wrapped cell fed :math:`[x_t; 1]`.

  Params: ``{'cell': <wrapped cell params, input_size + 1>}``; no params of
  its own.

  Returns:
    A :class:`vcrnn_jax.Cell` whose state is the wrapped cell's state and
    whose output is the wrapped cell's output after the last repetition.

  Raises:
    ValueError: ``cell`` is not a :class:`vcrnn_jax.Cell`, or
      ``repetitions`` is not a positive integer.

  References:
    Fojo, Campos & Giro-i-Nieto, Comparing Fixed and Adaptive Computation
    Time for Recurrent Neural Networks, ICLR 2018 workshop.
    Graves, Adaptive Computation Time for Recurrent Neural Networks, 2016
    (the flag, Eq. 3).
  """
  cell = check_cell('repeat.repeat', cell)
  repetitions = check_positive_int('repetitions', repetitions)

  def init(key, input_size):
    input_size = check_positive_int('input_size', input_size)
    return {'cell': cell.init(key, input_size + 1)}                 # (R1)

  def apply(params, state, x, context=None):
    context = as_context(context)
    x = pondering.check_input('repeat', x, param_dtype_of(params['cell']))
    inner = params['cell']
    new_state, y = _first_presentation(cell, inner, state, x, context)  # (R1)
    if repetitions > 1:
      again = pondering.with_step_flag(x, False)                    # (R1)

      def presentation(carry, _):
        s, _ = carry
        return cell.apply(inner, s, again, context), None

      (new_state, y), _ = lax.scan(presentation, (new_state, y), None,
                                   length=repetitions - 1)
    new_state = select_rows(context.active, new_state, state)
    y = select_rows(context.active, y,
                    jax.tree_util.tree_map(jnp.zeros_like, y))
    return new_state, y

  return Cell(init, cell.initial_state, apply)
