"""The VCRNN / VCGRU results page (Jernite et al. 2017, Sec. 5).

* :mod:`~experiments.reports.vc.plots`: where the scheduler computes (Fig. 2,
  3, 5; Table 2);
* :mod:`~experiments.reports.vc.frontier`: held-out likelihood against
  computation;
* :mod:`~experiments.reports.vc.results`: the page's generated files.
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
