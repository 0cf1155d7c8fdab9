"""Every paper's generated results, from the run records.

:func:`outputs` reads ``docs/results/records`` (one folder per paper, one
per experiment, one JSON record per run: :mod:`experiments.reports.records`)
and asks each paper's ``results`` module for its fragments and figures;
``python -m experiments.results`` writes them to ``docs/results/generated``
and copies the fragments that README.md, getting started and BUILD_NOTES.md
quote into their marked blocks. ``tests/test_records.py`` fails when a
generated file or a marked block differs from what the records give.
"""

from collections.abc import Mapping, Sequence
import pathlib
import re
from typing import Any

from experiments.reports import bench_records, plan, records, verdicts, verify
from experiments.reports.act import results as act_results
from experiments.reports.depth import results as depth_results
from experiments.reports.family import results as family_results
from experiments.reports.rehn import results as rehn_results
from experiments.reports.vc import results as vc_results

__all__ = [
    'PAPERS',
    'RECORDS',
    'GENERATED',
    'QUOTING',
    'RESULT_PAGES',
    'HISTORY',
    'BENCHMARK_RECORDS',
    'PERFORMANCE',
    'PLANS',
    'outputs',
    'plan_outputs',
    'verification_table',
    'benchmark_outputs',
    'fill_blocks',
    'fragments',
    'old_records',
    'typed_results',
]

# The paper modules that turn records into outputs, in page order.
PAPERS = {'act': act_results, 'vc': vc_results, 'rehn': rehn_results,
          'family': family_results, 'depth': depth_results}
RECORDS = pathlib.Path('docs', 'results', 'records')
GENERATED = pathlib.Path('docs', 'results', 'generated')
# Hand-written files with blocks copied from generated fragments.
QUOTING = (pathlib.Path('README.md'),
           pathlib.Path('docs', 'getting_started.md'),
           pathlib.Path('BUILD_NOTES.md'))
# Pages whose results must all be generated (:func:`typed_results`).
RESULT_PAGES = (pathlib.Path('README.md'),
                pathlib.Path('docs', 'getting_started.md'),
                *(pathlib.Path('docs', 'results', f'{name}.md') for name in
                  ('act', 'vc', 'rehn', 'family', 'depth',
                   'reproducing')),
                *(pathlib.Path('docs', 'results', 'notebooks', f'{name}.md')
                  for name in ('act', 'vc', 'rehn', 'family', 'depth')))
# The one marked appendix of a page that may keep typed history: from this
# heading to the end of the page, with no verdict.
HISTORY = '## History: typed runs, no verdicts'
BENCHMARK_RECORDS = pathlib.Path('docs', 'performance', 'records')
# The planned runs of each results page (:mod:`experiments.reports.plan`).
PLANS = pathlib.Path('docs', 'results', 'plans')
# Hand-written files with blocks copied from the benchmark tables (checked
# by tests/test_bench_records.py: the page's own figures are typed history).
PERFORMANCE = (pathlib.Path('docs', 'performance.md'),)
# This source tree, whose benchmark records :func:`outputs` reads by default.
_TREE = pathlib.Path(__file__).resolve().parents[2]


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            benchmarks: Sequence[Mapping[str, Any]] | None = None,
            statuses: Mapping[str, Mapping[str, Any]] | None = None
            ) -> list[records.Output]:
  """Every paper's outputs from the records grouped by experiment, and a
  table per benchmark record of ``benchmarks`` (None: those of this source
  tree's :data:`BENCHMARK_RECORDS`, none in an installed package).

  ``statuses``: experiment folder -> its verification against today's code
  (:func:`experiments.reports.verify.read_statuses`; None: this source
  tree's ``docs/results/verification.json``), which the pages show."""
  if statuses is None:
    statuses = verify.read_statuses(_TREE / verify.FILE)
  statuses = verify.applicable(groups, statuses)
  out = []
  for module in PAPERS.values():
    out += module.outputs(groups, statuses)
  if groups:
    out.append(records.Output('legend.md', verdicts.LEGEND + '\n'))
    out.append(records.Output('verification.md',
                              verification_table(groups, statuses)))
    out += plan_outputs(groups)
  if benchmarks is None:
    benchmarks = bench_records.read_records(_TREE / BENCHMARK_RECORDS)
  return out + benchmark_outputs(benchmarks)


def plan_outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
                 folder=None) -> list[records.Output]:
  """Per plan file in ``folder`` (None: this source tree's :data:`PLANS`,
  none in an installed package), ``plans/<name>.md``: which planned seeds
  are recorded and which are missing."""
  folder = _TREE / PLANS if folder is None else pathlib.Path(folder)
  out = []
  for path in sorted(folder.glob('*.toml')):
    rows = plan.status(plan.read_plan(path), groups)
    done = sum(len(r['recorded']) for r in rows)
    total = sum(len(r['entry'].seeds) for r in rows)
    text = (plan.status_table(rows) + f'\n{done} of {total} planned seeds '
            f'recorded with the planned command (`{PLANS / path.name}`; '
            '*trains on*: the commit a missing seed is trained on).\n')
    out.append(records.Output(f'plans/{path.stem}.md', text))
  return out


def verification_table(groups: Mapping[str, Sequence[Mapping[str, Any]]],
                       statuses: Mapping[str, Mapping[str, Any]]) -> str:
  """Per folder of records: the commit its records were made at and what
  ``experiments.verify`` found today's code computes."""
  rows = []
  for group, runs in sorted(groups.items()):
    commits = ', '.join(sorted({r['commit'][:7] for r in runs}))
    entry = statuses.get(group)
    if not verify.applies(entry, runs):
      rows.append([group, len(runs), commits, 'not verified', '-', '-'])
      continue
    differ = ', '.join(entry.get('differ') or []) or entry.get(
        'reason', '') or '-'
    status = f'**{entry["status"]}**'
    if entry['status'] == 'current':
      status += (', to every digit kept' if entry.get('exact')
                 else ', within the tolerance only')
    rows.append([group, len(runs), commits, status,
                 f'{entry["verified_at"][:7]}, seed {entry["seed"]}, step '
                 f'{entry["step"]:,}', differ])
  counts = {s: sum(1 for r in rows if r[3].startswith(f'**{s}**'))
            for s in verify.STATUSES}
  return (records.table(['records', 'runs', 'made at', 'status',
                         'verified at', 'what differs'], rows)
          + '\n' + ', '.join(f'{n} {s}' for s, n in counts.items())
          + f' of {len(rows)} folders; a record is current when every '
          f'held-out metric of its first evaluation is within '
          f'{verify.RTOL:g} relative of what today\'s code computes; "to '
          f'every digit kept" when it is equal (all digits of a fingerprint, '
          f'6 of an older curve). Equal at the first evaluation is not equal '
          f'at the end: a difference below the digits kept grows over a long '
          f'run (the ACT page measures it).\n')


def benchmark_outputs(benchmarks: Sequence[Mapping[str, Any]]
                      ) -> list[records.Output]:
  """``performance/<name>.md`` per benchmark record (``name`` as
  :func:`~experiments.reports.bench_records.read_records` gives it, else the
  benchmark's): its provenance line and table
  (:func:`~experiments.reports.bench_records.fragment`)."""
  return [records.Output(f'performance/{r.get("name", r["benchmark"])}.md',
                         text=bench_records.fragment(r)) for r in benchmarks]


def fill_blocks(text: str, fragments: Mapping[str, str]) -> str:
  """:func:`~experiments.reports.records.fill_blocks`, a ``performance/``
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


_GENERATED_BLOCK = re.compile(r'<!-- generated: (\S+) begin -->.*?'
                              r'<!-- generated: \1 end -->', re.S)
_INCLUDE = re.compile(r'```\{include\} generated/\S+\n```')
_FENCE = re.compile(r'```.*?```', re.S)
_CODE = re.compile(r'`[^`\n]+`')
_MATH = re.compile(r'\$[^$\n]+\$')
_FIGURE = re.compile(r'!\[[^\]]*\]\(generated/[^)]+\)', re.S)
_LINK = re.compile(r'\]\([^)]*\)')
# A reference to the paper's text, not a result: Sec. 3.1, Eqs. 9-11,
# Table 2, Fig. 4, Algorithm 2, Graves 2016.
_REFERENCE = re.compile(
    r'\b(?:Secs?\.|Sections?|Eqs?\.|Equations?|Figs?\.|Figures?|Tables?|'
    r'Algorithms?|Appendix|Graves|Jernite et al\.|Park & Yoo|Banino et al\.|'
    r'Fojo et al\.|Campos et al\.|Dehghani et al\.|Python|jax|jaxlib|flax|'
    r'optax)\s*\(?[\d.,\- –and]*\d')
# A measured-looking number: a decimal, a percentage or a ratio (1.2×).
# Whole counts are settings (300k steps, 1,000 vectors, 3 seeds); "the 5%
# largest m_t" names a measure.
_NUMBER = re.compile(r'\d+\.\d+|\d\s?%(?! largest)|\d\s?×')
# "holds" is a verb as often as a verdict: as a verdict it stands alone in
# a table cell or in bold.
_VERDICT = re.compile(r'\b(?:reproduced|does not hold)\b|\*\*holds\*\*|'
                      r'\|\s*holds\s*\|', re.I)


def _prose(text: str) -> str:
  """``text`` less what is generated or is not a claim: generated blocks
  and includes, figures drawn from records, code, maths, links' targets
  and references to the papers' sections."""
  for pattern in (_GENERATED_BLOCK, _INCLUDE, _FIGURE, _FENCE, _CODE, _MATH,
                  _LINK, _REFERENCE):
    text = pattern.sub(' ', text)
  return text


def typed_results(text: str) -> list[str]:
  """The lines of a page that type a number or a verdict outside what the
  generator wrote (:data:`HISTORY` holds typed numbers, but no verdict).

  A number counts when it looks measured (a decimal, a percentage, a
  ratio); settings belong in code (``--tau=0.01``) or maths, whole counts
  (300k steps) are settings, references to the papers are skipped. Empty
  when the page is clean.
  """
  body, _, history = text.partition(HISTORY)
  bad = [line.strip() for line in _prose(body).splitlines()
         if _NUMBER.search(line) or _VERDICT.search(line)]
  bad += [f'(history) {line.strip()}'
          for line in _prose(history).splitlines() if _VERDICT.search(line)]
  return bad
