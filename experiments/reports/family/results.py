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


# The papers' own sizes and lengths, and the grids this page samples: what
# has records here is counted from them.
NOT_RUN = (
    ('PonderNet\'s parity at its size: 64 bits, GRU 128 (interpolation)',
     'family/interp64',
     '`python -m experiments.family_parity --method=pondernet '
     '--setting=interpolation`'),
    ('PonderNet\'s parity at its size: 96 bits, trained on 1-48 '
     '(extrapolation)', 'family/extrap96',
     '`python -m experiments.family_parity --method=pondernet '
     '--setting=extrapolation`'),
    ('the one-factor PonderNet variants (KL direction and the epsilon stop) '
     'at 16 bits', 'family/interp16_pondernet',
     '`python -m experiments.family_parity --method=pondernet --bits=16 '
     '--kl=reverse` (`paper`)'),
    ('Repeat-RNN, $\\rho = 4$, in the extrapolation setup',
     'family/extrap16_repeat_rho4', '`python -m experiments.family_parity '
     '--method=repeat --setting=extrapolation --bits=16 --rho=4`'),
    ('the adding task trained to convergence (the Skip-RNN authors\' '
     'criterion)', 'family/adding_converged',
     '`python -m experiments.family_adding`'),
)


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
                        conclusions.conclusions(groups, statuses)),
         records.Output('family/not_run.md',
                        records.not_run_table(groups, NOT_RUN))]
  return (out + summary.parity_outputs(groups, runs, statuses)
          + summary.adding_outputs(groups, runs, statuses))
