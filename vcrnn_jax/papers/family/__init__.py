"""ACT's rivals (specification: shared/papers/family.md): their experiments.

* :mod:`~vcrnn_jax.papers.family.parity`: a plain RNN, ACT, Repeat-RNN and
  PonderNet on ACT's parity task, in PonderNet's interpolation and
  extrapolation settings (Banino et al. 2021, Sec. 3.1).
"""
