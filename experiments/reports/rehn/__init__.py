"""The EI-REHN results page (Park & Yoo 2017, Sec. 4).

* :mod:`~experiments.reports.rehn.plots`: realized depth along a sequence,
  its histograms and its mean per class;
* :mod:`~experiments.reports.rehn.table3`: Table 3 at a small width;
* :mod:`~experiments.reports.rehn.results`: the page's generated files.
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
