"""Every paper's generated results, from the run records.

:func:`outputs` reads ``docs/results/records`` (one folder per paper, one
per experiment, one JSON record per run: :mod:`vcrnn_jax.analysis.records`)
and asks each paper's ``results`` module for its fragments and figures;
``python -m experiments.results`` writes them to ``docs/results/generated``
and copies the fragments that README.md, getting started and BUILD_NOTES.md
quote into their marked blocks. ``tests/test_records.py`` fails when a
generated file or a marked block differs from what the records give.
"""

from collections.abc import Mapping, Sequence
import pathlib
from typing import Any

from vcrnn_jax.analysis import records
from vcrnn_jax.papers.act import results as act_results
from vcrnn_jax.papers.family import summary as family_summary
from vcrnn_jax.papers.rehn import results as rehn_results
from vcrnn_jax.papers.vc import results as vc_results

# The paper modules that turn records into outputs, in page order.
PAPERS = {'act': act_results, 'vc': vc_results, 'rehn': rehn_results,
          'family': family_summary}
RECORDS = pathlib.Path('docs', 'results', 'records')
GENERATED = pathlib.Path('docs', 'results', 'generated')
# Hand-written files with blocks copied from generated fragments.
QUOTING = (pathlib.Path('README.md'),
           pathlib.Path('docs', 'getting_started.md'),
           pathlib.Path('BUILD_NOTES.md'))


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]]
            ) -> list[records.Output]:
  """Every paper's outputs from the records grouped by experiment."""
  out = []
  for module in PAPERS.values():
    out += module.outputs(groups)
  return out


def fragments(outs: Sequence[records.Output]) -> dict[str, str]:
  """The Markdown fragments by name (their path without ``.md``)."""
  return {o.path[:-len('.md')]: o.text for o in outs if o.text is not None}


def old_records(groups: Mapping[str, Sequence[Mapping[str, Any]]],
                head: str) -> dict[str, list[str]]:
  """Per commit other than ``head``, the records made at it: results made on
  an older tree than the code they describe."""
  out: dict[str, list[str]] = {}
  for runs in groups.values():
    for r in runs:
      if not head.startswith(r['commit'][:7]):
        out.setdefault(r['commit'], []).append(r['path'])
  return out
