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

from vcrnn_jax.analysis import bench_records, records
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
BENCHMARK_RECORDS = pathlib.Path('docs', 'performance', 'records')
# Hand-written files with blocks copied from the benchmark tables (checked
# by tests/test_bench_records.py: the page's own figures are typed history).
PERFORMANCE = (pathlib.Path('docs', 'performance.md'),)
# This source tree, whose benchmark records :func:`outputs` reads by default.
_TREE = pathlib.Path(__file__).resolve().parents[2]


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            benchmarks: Sequence[Mapping[str, Any]] | None = None
            ) -> list[records.Output]:
  """Every paper's outputs from the records grouped by experiment, and a
  table per benchmark record of ``benchmarks`` (None: those of this source
  tree's :data:`BENCHMARK_RECORDS`, none in an installed package)."""
  out = []
  for module in PAPERS.values():
    out += module.outputs(groups)
  if benchmarks is None:
    benchmarks = bench_records.read_records(_TREE / BENCHMARK_RECORDS)
  return out + benchmark_outputs(benchmarks)


def benchmark_outputs(benchmarks: Sequence[Mapping[str, Any]]
                      ) -> list[records.Output]:
  """``performance/<benchmark>.md`` per benchmark record: its provenance
  line and table (:func:`~vcrnn_jax.analysis.bench_records.fragment`)."""
  return [records.Output(f'performance/{r["benchmark"]}.md',
                         text=bench_records.fragment(r)) for r in benchmarks]


def fill_blocks(text: str, fragments: Mapping[str, str]) -> str:
  """:func:`~vcrnn_jax.analysis.records.fill_blocks`, a ``performance/``
  block of a benchmark with no record yet left empty.

  Raises:
    ValueError: another block names no fragment.
  """
  empty = {name: '' for name in records.marked_blocks(text)
           if name.startswith('performance/') and name not in fragments}
  return records.fill_blocks(text, {**empty, **fragments})


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
