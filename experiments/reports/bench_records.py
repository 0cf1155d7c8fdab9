r"""Benchmark records: repeated timings joined into medians and ranges.

A benchmark (``python -m benchmarks.<name>``) returns its table as rows:
dicts of settings (a batch size, a variant's name) and measurements (times
and ratios of times). ``python -m benchmarks`` runs each benchmark several
times, each run in a fresh process, some with the default thread pool
(``unpinned``: every core, as a user runs it) and some pinned to one core
(``pinned``), and :func:`aggregate` joins the repeats:

* rows are matched across repeats by their non-numeric columns and, among
  rows that agree on those, by their position;
* a numeric column the benchmark names as a ratio or a time, or one whose
  value differs between repeats, is a *measurement*: per affinity, the
  median, min, max and count of its finite values;
* the other columns are *settings*, kept as they are.

A *benchmark record* is one JSON file per benchmark
(``docs/performance/records/<name>.json``) holding what a reader needs to
trust and redo the numbers:

==============  ==============================================================
key             what
==============  ==============================================================
``format``      :data:`FORMAT`, the version of this layout
``benchmark``   the benchmark's module name (``act_loop``)
``command``     the command line that made the record
``commit``      the tree's HEAD, and ``dirty`` (uncommitted changes in it)
``machine``     the machine's name, CPU model, cores and memory, and the
                ``device`` the benchmark ran on
``versions``    Python and the packages that change numbers
``started``     when the runs started (UTC, ISO 8601)
``seconds``     wall seconds of all of the benchmark's runs
``settings``    ``quick``, ``repeats`` (per affinity), ``affinities``,
                ``pinned_cpu``, ``flags`` (given instead of the defaults)
``ratios``      the headline ratio columns (``fnmatch`` patterns)
``times``       the time columns shown beside them
``rows``        :func:`aggregate`'s rows
``note``        optional: what a reader must know of the provenance
==============  ==============================================================

:func:`fragment` turns a record into the Markdown that docs/performance.md
quotes: a provenance line, then a table whose ratio and time columns give
the unpinned median with its range, and the pinned one beside it.

Example:

>>> rows = aggregate({'unpinned': [[{'n': 4, 'a/b': 1.1}],
...                                [{'n': 4, 'a/b': 1.3}],
...                                [{'n': 4, 'a/b': 1.2}]]}, ratios=('a/b',))
>>> rows[0]['n'], rows[0]['a/b']['unpinned']['median']
(4, 1.2)
>>> cell(rows[0]['a/b']['unpinned'], ratio=True)
'1.2× (1.1–1.3)'
"""

from collections.abc import Mapping, Sequence
import fnmatch
import json
import math
import pathlib
import statistics
from typing import Any

__all__ = [
    'FORMAT',
    'AFFINITIES',
    'named',
    'stats',
    'aggregate',
    'measured',
    'headline',
    'cell',
    'markdown_table',
    'provenance',
    'fragment',
    'record_text',
    'read_records',
]

FORMAT = 1
# The affinities in the order the tables show them: the first one run is
# the headline.
AFFINITIES = ('unpinned', 'pinned')


def _number(value: Any) -> bool:
  return isinstance(value, (int, float)) and not isinstance(value, bool)


def named(column: str, patterns: Sequence[str]) -> bool:
  """Whether ``column`` matches one of the ``fnmatch`` ``patterns``."""
  return any(fnmatch.fnmatchcase(column, p) for p in patterns)


def stats(values: Sequence[Any]) -> dict | None:
  """``{'median', 'min', 'max', 'n'}`` of the finite numbers of
  ``values``; None when there are none."""
  xs = [float(v) for v in values if _number(v) and math.isfinite(v)]
  if not xs:
    return None
  # Six figures: the records stay small, and no timing is that precise.
  return {k: float(f'{v:.6g}') for k, v in (
      ('median', statistics.median(xs)), ('min', min(xs)),
      ('max', max(xs)))} | {'n': len(xs)}


def _keys(rows: Sequence[Mapping[str, Any]], numeric: set) -> list[tuple]:
  """Each row's identity: its non-numeric values and its position among
  the rows that share them."""
  seen: dict[str, int] = {}
  out = []
  for row in rows:
    text = json.dumps({k: v for k, v in row.items() if k not in numeric},
                      sort_keys=True, default=str)
    out.append((text, seen.get(text, 0)))
    seen[text] = seen.get(text, 0) + 1
  return out


def aggregate(runs: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]],
              ratios: Sequence[str] = (), times: Sequence[str] = ()
              ) -> list[dict]:
  """Joins repeats of one benchmark (see the module docstring).

  Args:
    runs: per affinity (``unpinned``, ``pinned``), the rows of each repeat.
    ratios: ``fnmatch`` patterns of the ratio columns.
    times: ``fnmatch`` patterns of the time columns.

  Returns:
    The rows in the first repeat's order: settings as they are, each
    measurement as ``{affinity: stats(...) or None}``.

  Raises:
    ValueError: no repeat, or repeats whose rows do not match.
  """
  repeats = [(a, rows) for a, reps in runs.items() for rows in reps]
  if not repeats:
    raise ValueError('aggregate needs at least one repeat.')
  every = [row for _, rows in repeats for row in rows]
  columns = list(dict.fromkeys(k for row in every for k in row))
  numeric = {c for c in columns if any(_number(r.get(c)) for r in every)}
  keyed = [(a, dict(zip(_keys(rows, numeric), rows))) for a, rows in repeats]
  order = _keys(repeats[0][1], numeric)
  for affinity, rows in keyed:
    if set(rows) != set(order):
      raise ValueError(f'the {affinity} repeats give other rows than the '
                       f'first: {sorted(set(rows) ^ set(order))[:3]}')
  out = []
  for key in order:
    members = [(a, rows[key]) for a, rows in keyed]
    row = {}
    for c in columns:
      values = [m.get(c) for _, m in members]
      if c not in numeric or (not named(c, (*ratios, *times))
                              and len(set(values)) == 1):
        row[c] = values[0]
      else:
        row[c] = {a: stats([m.get(c) for b, m in members if b == a])
                  for a in runs if runs[a]}
    out.append(row)
  return out


def measured(value: Any) -> bool:
  """Whether an aggregated row's ``value`` is a measurement."""
  return isinstance(value, Mapping)


def headline(rows: Sequence[Mapping[str, Any]]) -> list[dict]:
  """The aggregated ``rows`` as plain rows: each measurement replaced by
  its median in the first affinity measured (unpinned when run)."""
  def first(value):
    for a in AFFINITIES:
      if value.get(a) is not None:
        return value[a]['median']
    return None
  return [{k: first(v) if measured(v) else v for k, v in row.items()}
          for row in rows]


def _number_text(x: float) -> str:
  return f'{x:.3g}'


def cell(stat: Mapping[str, Any] | None, ratio: bool) -> str:
  """``median× (min–max)`` (no ``×`` for a time; no range for one
  value); ``-`` for None."""
  if stat is None:
    return '-'
  unit = '×' if ratio else ''
  text = _number_text(stat['median']) + unit
  low, high = _number_text(stat['min']), _number_text(stat['max'])
  if stat['n'] > 1 and low != high:
    text += f' ({low}–{high})'
  return text


def _setting(value: Any) -> str:
  if value is None:
    return '-'
  if isinstance(value, float):
    return f'{value:.4g}'
  return str(value)


def markdown_table(record: Mapping[str, Any]) -> str:
  """The record's table: the settings, then for each ratio column and each
  time column its first affinity's cell and the other's beside it (headed
  ``pinned``)."""
  rows = record['rows']
  if not rows:
    return '(no rows)\n'
  columns = list(dict.fromkeys(k for row in rows for k in row))
  shown = [c for c in columns
           if named(c, record.get('ratios', ())) or named(
               c, record.get('times', ()))]
  shown.sort(key=lambda c: not named(c, record.get('ratios', ())))
  settings = [c for c in columns if c not in shown and not any(
      measured(r.get(c)) for r in rows) and any(
          r.get(c) is not None for r in rows)]
  affinities = [a for a in AFFINITIES
                if a in record['settings']['affinities']]
  header = list(settings)
  for c in shown:
    header.append(c if affinities[0] == 'unpinned' else f'{c} (pinned)')
    header += ['pinned'] * (len(affinities) - 1)
  lines = ['| ' + ' | '.join(header) + ' |', '|' + ' --- |' * len(header)]
  for row in rows:
    cells = [_setting(row.get(c)) for c in settings]
    for c in shown:
      value = row.get(c)
      ratio = named(c, record.get('ratios', ()))
      cells += [cell(value.get(a), ratio) if measured(value) else '-'
                for a in affinities]
    lines.append('| ' + ' | '.join(cells) + ' |')
  return '\n'.join(lines) + '\n'


def provenance(record: Mapping[str, Any]) -> str:
  """One line: the command, commit, machine, versions and repeats."""
  m, v, s = record['machine'], record['versions'], record['settings']
  stack = ', '.join(f'{k} {v[k]}' for k in
                    ('python', 'jax', 'jaxlib', 'flax', 'optax') if v.get(k))
  memory = f', {m["memory_gib"]} GiB' if m.get('memory_gib') else ''
  pinned = (f' (pinned: to CPU {s["pinned_cpu"]})'
            if 'pinned' in s['affinities'] else '')
  device = m.get('device') or ''
  device = '' if device.endswith('(cpu)') or not device else f'{device}; '
  flags = s.get('flags') or []
  settings = ('quick settings' if s['quick'] else
              f'flags `{" ".join(flags)}`' if flags else 'default settings')
  if s.get('xla_flags'):
    settings += f', XLA_FLAGS `{s["xla_flags"]}`'
  return (f'`{record["command"]}` at commit {record["commit"][:7]}'
          f'{" (dirty)" if record.get("dirty") else ""} on '
          f'{m.get("name") or "an unnamed machine"} ({device}{m.get("cpu")}, '
          f'{m.get("cores")} cores{memory}), {record["started"][:10]}; '
          f'{stack}; {settings}; {_runs_text(s)}{pinned}.'
          + (f' Note: {record["note"]}.' if record.get('note') else ''))


def _runs_text(settings: Mapping[str, Any]) -> str:
  if settings.get('in_process'):
    return "one run in the suite's own process"
  n = settings['repeats']
  runs = (f'median (min–max) of {n} runs per affinity' if n > 1 else
          'one run per affinity') + ', each in a fresh process'
  if len(settings['affinities']) > 1:
    runs += ', ' + ' and '.join(settings['affinities']) + ' taking turns'
  return runs + f'; {settings["affinities"][0]} first'


def fragment(record: Mapping[str, Any]) -> str:
  """The Markdown a results page quotes: the benchmark's name and
  :func:`provenance`, then :func:`markdown_table`."""
  return (f'**`benchmarks.{record["benchmark"]}`**: {provenance(record)}'
          '\n\n' + markdown_table(record) + '\n')


def _dump(value: Any, indent: int) -> str:
  # A container of scalars on one line (a measurement's median, min, max),
  # others one item per line, in the order given.
  if not isinstance(value, (Mapping, list, tuple)) or all(
      not isinstance(v, (Mapping, list, tuple)) for v in (
          value.values() if isinstance(value, Mapping) else value)):
    return json.dumps(value, ensure_ascii=False, allow_nan=False,
                      separators=(', ', ': '))
  pad, inner = ' ' * indent, ' ' * (indent + 1)
  if isinstance(value, Mapping):
    items = [f'{inner}{json.dumps(str(k), ensure_ascii=False)}: '
             f'{_dump(v, indent + 1)}' for k, v in value.items()]
    return '{\n' + ',\n'.join(items) + f'\n{pad}}}'
  items = [f'{inner}{_dump(v, indent + 1)}' for v in value]
  return '[\n' + ',\n'.join(items) + f'\n{pad}]'


def record_text(record: Mapping[str, Any]) -> str:
  """The JSON text a record is stored as: keys in the order given (the
  columns keep the benchmark's order), a container of scalars on one
  line."""
  return _dump(record, 0) + '\n'


def read_records(folder) -> list[dict]:
  """Every benchmark record in ``folder`` (``*.json``) and in its
  subfolders, one per machine (``h200/act_loop.json``), in path order; none
  when the folder is missing. Each record read gets ``name``: its path in
  ``folder`` without ``.json`` (``act_loop``, ``h200/act_loop``), the name
  of its table.

  Raises:
    ValueError: a file that is not a benchmark record of :data:`FORMAT`.
  """
  folder = pathlib.Path(folder)
  out = []
  for path in sorted(folder.rglob('*.json')):
    record = json.loads(path.read_text(encoding='utf-8'))
    if record.get('format') != FORMAT or 'benchmark' not in record:
      raise ValueError(f'{path}: not a benchmark record of format '
                       f'{FORMAT}.')
    record['name'] = path.relative_to(folder).with_suffix('').as_posix()
    out.append(record)
  return out
