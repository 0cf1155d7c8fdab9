"""ACT (Graves 2016, Sec. 3): what the paper's experiments need beyond the cell.

* :mod:`~vcrnn_jax.papers.act.tasks`: the synthetic tasks' experiments
  (parity, logic, addition, sort) and their paper settings;
* :mod:`~vcrnn_jax.papers.act.lm`: the character-level Wikipedia model
  (Sec. 3.5) on the shared language-model trainer;
* :mod:`~vcrnn_jax.papers.act.sweep`: the tau grid of the paper's figures;
* :mod:`~vcrnn_jax.papers.act.runs`: the binaries' runs from their flag
  values.
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
