"""Adaptive Transformer depth (:mod:`vcrnn_jax.depth`) on ACT's logic task.

No paper trains this experiment; it tests two papers' claims on one task:
the Universal Transformer's (Dehghani et al. 2019: a shared block with
dynamic per-position halting, its ponder time longer on inputs that need
more reasoning steps) and ACT's (Graves 2016, Fig. 6: ponder grows with
difficulty).

* :mod:`~vcrnn_jax.papers.depth.logic`: the model (a shared Transformer
  block, its depth per token, per example or fixed), its experiment on the
  token logic task and the run of ``experiments.depth_logic``'s flags.
* :mod:`~vcrnn_jax.papers.depth.lm`: a causal character language model
  on the same shared block (fixed depth, ACT per character, or capacity
  routing evaluated by its causal threshold rule), its multiplications per
  character, its depth per character class and the run of
  ``experiments.depth_lm``'s flags.
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
