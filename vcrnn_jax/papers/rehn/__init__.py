"""EI-REHN (Park & Yoo 2017, Sec. 4): the models compared, Tables 1 and 2,
seeds.

* :mod:`~vcrnn_jax.papers.rehn.tasks`: the six cells from one spec, the
  paper's table rows, several seeds of one model into one table;
* :mod:`~vcrnn_jax.papers.rehn.runs`: the binaries' runs from their flag
  values.
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
