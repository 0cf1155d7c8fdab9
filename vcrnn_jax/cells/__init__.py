"""Recurrent cells following the :class:`vcrnn_jax.Cell` protocol."""

from vcrnn_jax.cells.elman import ElmanState, elman
from vcrnn_jax.cells.gru import GRUState, gru
from vcrnn_jax.cells.lstm import LSTMState, lstm
from vcrnn_jax.cells.stack import StackOutput, stack

__all__ = ['ElmanState', 'GRUState', 'LSTMState', 'StackOutput', 'elman',
           'gru', 'lstm', 'stack']
