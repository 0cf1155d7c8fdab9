"""The rest of the adaptive-computation family, compared on one stack.

* :mod:`~vcrnn_jax.papers.family.parity`: a plain RNN, ACT, Repeat-RNN and
  PonderNet on ACT's parity task, in PonderNet's interpolation and
  extrapolation settings (Banino et al. 2021, Sec. 3.1).
* :mod:`~vcrnn_jax.papers.family.adding`: LSTM, GRU, Skip-LSTM, Skip-GRU and
  VCGRU on Skip-RNN's adding task (Campos et al. 2018, Sec. 4.1).
* :mod:`~vcrnn_jax.papers.family.runs`: the two binaries' runs from their
  flag values.
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
