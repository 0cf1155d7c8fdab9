"""The layer of the three papers, above the generic stack.

Everything that exists for one paper lives with that paper, as flax's
examples keep each example's configuration, model and training code
together: its task builders, its settings and tables and its analysis of a
trained model. The generic layers below (cells, loops, ``training``) name
no paper, and nothing below imports from here. What turns runs into the
results pages (records, verdicts, figures) is not part of the library: it
lives beside the experiment binaries.

* :mod:`vcrnn_jax.papers.act`: Graves 2016 (the synthetic tasks, the
  character-level Wikipedia model, the tau sweep);
* :mod:`vcrnn_jax.papers.rehn`: Park & Yoo 2017 (the cells compared, Tables
  1 and 2, seeds);
* :mod:`vcrnn_jax.papers.vc`: Jernite et al. 2017 (the language models, the
  scheduler's analysis);
* :mod:`vcrnn_jax.papers.family`: PonderNet, Repeat-RNN and Skip-RNN
  against ACT and VCGRU on one stack (parity, adding);
* :mod:`vcrnn_jax.papers.depth`: adaptive Transformer depth on ACT's logic
  task, no paper's experiment (the model that tests the Universal
  Transformer's and ACT's claims on it).

Each paper's ``runs`` module (adaptive depth's ``logic``) builds its
binaries' runs from their flag values;
:func:`vcrnn_jax.papers.runs.load_run` rebuilds a trained run from its
workdir with them.
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
