"""The results machinery: what turns runs into the results pages.

It serves this repository, not a user of the library: it imports
:mod:`vcrnn_jax`, and nothing in :mod:`vcrnn_jax` imports it. The binaries
beside it (``experiments.record``, ``results``, ``verify``, ``plan``,
``family_summary``) are its commands; the training binaries use it for their
run manifest and their figures.

Its modules, each below the ones that import it:

* :mod:`~experiments.reports.manifest`: what a run was when it started (the
  binary's command, the commit, versions, CPU, data digests);
* :mod:`~experiments.reports.verdicts`: the symmetric scale of every claim
  and its criteria;
* :mod:`~experiments.reports.plots`: the plot helpers every figure shares;
* :mod:`~experiments.reports.bench_records`: benchmark records and their
  tables;
* :mod:`~experiments.reports.records`: run records, their tables and the
  generated files made from them;
* :mod:`~experiments.reports.verify`: whether the records are still what
  today's code computes;
* :mod:`~experiments.reports.plan`: the planned runs of each results page;
* one package per results page (:mod:`~experiments.reports.act`,
  :mod:`~experiments.reports.vc`, :mod:`~experiments.reports.rehn`,
  :mod:`~experiments.reports.family`, :mod:`~experiments.reports.depth`):
  its figures, its tables and its verdicts from the records;
* :mod:`~experiments.reports.results`: every page's generated files, from
  the records (``python -m experiments.results``).
"""

# Nothing at the package level: the modules listed above are the API.
__all__ = []
