"""The ACT results page (Graves 2016, Sec. 3) and the paper's figures.

* :mod:`~experiments.reports.act.plots`: the tau sweep's figures and ponder
  along a text (Figs. 4-6, 8-10, 12-14, 17-19, 23);
* :mod:`~experiments.reports.act.task_claims`: logic, addition and sort from
  their records;
* :mod:`~experiments.reports.act.results`: the page's generated files.
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
