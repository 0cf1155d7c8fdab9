"""The family results page: PonderNet, Repeat-RNN and Skip-RNN compared.

* :mod:`~experiments.reports.family.summary`: the runs of
  ``family_parity`` and ``family_adding``, collected into tables (mean and
  spread over seeds); :mod:`~experiments.reports.family.plots` draws them;
* :mod:`~experiments.reports.family.conclusions` judges each claim from the
  records; :mod:`~experiments.reports.family.results` gives the page's
  generated files.
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
