"""VCRNN / VCGRU (Jernite et al. 2017, Sec. 5): language models and analysis.

* :mod:`~vcrnn_jax.papers.vc.lm`: the five cells compared, the penalty of
  Eq. 10 and the sharpness schedule, the scheduler's analysis (the data of
  Fig. 2, 3, 5 and Table 2);
* :mod:`~vcrnn_jax.papers.vc.runs`: the binaries' runs from their flag
  values.
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
