"""The adaptive-depth results page: :mod:`vcrnn_jax.depth` on ACT's logic
task and in a character language model.

No paper trains these experiments; they test the papers' claims. On the
logic task: the Universal Transformer's (Dehghani et al. 2019: a shared
block with dynamic per-position halting, its ponder time longer on inputs
that need more reasoning steps) and ACT's (Graves 2016, Fig. 6: ponder
grows with difficulty). In the character language model on PTB: adaptive
depth against fixed depth at equal compute (the Universal Transformer;
Mixture-of-Recursions, Bae et al. 2025), routing's saving on the clock, and
ACT's more ponder at spaces (Graves 2016, Sec. 3.5).

* :mod:`~experiments.reports.depth.results`: the results page's fragments and
  figures from the run records of ``experiments.depth_logic``, and those of
  :mod:`~experiments.reports.depth.lm`;
* :mod:`~experiments.reports.depth.lm`: the character language model's
  claims, tables and figures from the run records of
  ``experiments.depth_lm``.
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
