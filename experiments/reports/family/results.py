"""The family page's generated files, from the run records.

:func:`outputs` is what ``python -m experiments.results`` asks of this
paper: the conclusions (:mod:`~experiments.reports.family.conclusions`), and
the tables and figures of each parity setup and of the adding task
(:mod:`~experiments.reports.family.summary`).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from experiments.reports import records
from experiments.reports.family import conclusions, summary

__all__ = ['outputs']


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            statuses: Mapping[str, Mapping[str, Any]] | None = None
            ) -> list[records.Output]:
  """The family page's generated files: the conclusions
  (``family/conclusions.md``); per parity setup the two-stage table with
  the step caps and the verification status (``family/parity_<slug>.md``),
  the per-count figure (``family/by_count_<slug>.svg``) and accuracy
  against compute (``family/compute_<slug>.svg``); the adding task's table
  and figure when it has records. ``statuses``: experiment -> its
  verification (None: none).
  """
  if not any(name.split('/')[0] == summary.PAPER for name in groups):
    return []
  statuses = statuses or {}
  runs = summary.runs_from_records(groups)
  out = [records.Output('family/conclusions.md',
                        conclusions.conclusions(groups))]
  return (out + summary.parity_outputs(groups, runs, statuses)
          + summary.adding_outputs(groups, runs, statuses))
