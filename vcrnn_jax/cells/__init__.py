"""Recurrent cells following the :class:`vcrnn_jax.Cell` protocol."""

from vcrnn_jax.cells.elman import ElmanState
from vcrnn_jax.cells.elman import elman
from vcrnn_jax.cells.gru import GRUState
from vcrnn_jax.cells.gru import gru
from vcrnn_jax.cells.lstm import LSTMState
from vcrnn_jax.cells.lstm import lstm
from vcrnn_jax.cells.stack import StackOutput
from vcrnn_jax.cells.stack import stack

__all__ = ['ElmanState', 'GRUState', 'LSTMState', 'StackOutput', 'elman',
           'gru', 'lstm', 'stack']
