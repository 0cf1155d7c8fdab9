"""vcrnn_jax: adaptive-computation recurrent networks (ACT, VCRNN, EI-REHN) in
JAX.

Public API: the :class:`Cell` protocol (with the checks and, in
:mod:`vcrnn_jax.utils`, the toolbox a new cell is written with),
:func:`unroll`, the cells in :mod:`vcrnn_jax.cells`, ACT in
:mod:`vcrnn_jax.act`, the RHN family and EI-REHN in :mod:`vcrnn_jax.rehn`,
VCRNN and VCGRU in :mod:`vcrnn_jax.vc`, the loop primitives in
:mod:`vcrnn_jax.loops`, flax wrappers in :mod:`vcrnn_jax.linen`, data in
:mod:`vcrnn_jax.data` and :mod:`vcrnn_jax.tasks`, training in
:mod:`vcrnn_jax.training`.
"""

from vcrnn_jax import act, cells, linen, loops, nnx, rehn, vc
from vcrnn_jax.core import Cell, Context, cell_output
from vcrnn_jax.models import SequenceModel, sequence_model
from vcrnn_jax.unroll import unroll

__version__ = '0.1.0'

__all__ = ['Cell', 'Context', 'SequenceModel', 'act', 'cell_output', 'cells',
           'linen', 'loops', 'nnx', 'rehn', 'sequence_model', 'unroll', 'vc']
