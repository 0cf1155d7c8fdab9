r"""Run records: the small file that backs a published number, and its tables.

A *record* is one JSON file per training run, kept in the repository under
``docs/results/records/<paper>/<experiment>/<run>.json`` (a few KB; never a
checkpoint). It holds what a reader needs to trust and redo the number:

===============  =============================================================
key              what
===============  =============================================================
``format``       :data:`FORMAT`, the version of this layout
``command``      the command line that trained the run (from its manifest)
``binary``       the experiment binary (``act_parity``)
``flags``        the run-defining flags (the workdir's ``flags.json``)
``seed``         the training seed
``steps``        the last step trained
``commit``       the tree the run was trained on, and ``dirty`` (uncommitted
                 changes in it)
``versions``     Python and the packages that change numbers (jax, jaxlib,
                 flax, optax, numpy, orbax-checkpoint)
``machine``      the machine's name, CPU model, cores and memory
``wall_s``       seconds from the start of training to the last evaluation
                 (compilation included; several segments when resumed)
``final``        the last evaluation: held-out metrics, ``train_*`` means,
                 ``steps_per_sec``
``curve``        the evaluations thinned to at most ``max_points`` (held-out
                 metrics only), for learning-curve figures
``results``      the binary's ``results.json``; for binaries that train
                 several seeds in one process, the seed's entry, with what the
                 binary reported over all of them under ``shared``; lists
                 longer than :data:`MAX_LIST` left out
``tables``       each small CSV the run wrote (``difficulty.csv``, ...), as
                 rows, unless ``results`` holds it under the same name
``note``         free text: what the numbers do not say (a shared machine)
``starts``       the run's manifest, one entry per start
                 (:mod:`experiments.reports.manifest`): command, commit, dirty
                 state, versions, device, CPU and instruction sets, data
                 digests, as read when each segment started; ``[]`` for a run
                 that wrote none
``problems``     why the record is not clean (no manifest, a dirty tree,
                 segments on other code); ``[]`` when it is
``fingerprint``  the first evaluation at full precision (``step`` and the
                 held-out metrics): what ``experiments.verify`` re-runs to
                 check that today's code still computes this run
===============  =============================================================

Every key but ``commit``, ``dirty``, ``versions`` and ``machine`` comes from
the run's own files; those four come from its manifest when it has one, and
from the recorder's environment only for a run without (``problems`` then
says so, and ``experiments.record`` refuses it unless forced).

:func:`make_record` builds one from a finished workdir, :func:`find_runs`
finds the workdirs under a folder, :func:`read_records` loads a folder of
records and :func:`mean_std`, :func:`aggregate` and :func:`markdown_table`
turn them into tables. What a paper's pages show from its records is in
that paper's ``results`` module (:mod:`experiments.reports.results` lists
them).

Example::

  # The command, commit and versions come from the run's manifest.
  record = records.make_record('runs/act_parity/seed=0',
                               machine_info=records.machine('CPU-2'))
  records.write_record(record, 'docs/results/records/act/parity/seed=0.json')
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
import contextlib
import csv
import hashlib
import json
import math
import os
import pathlib
import re
import shlex
import statistics
from typing import Any, NamedTuple

from experiments.reports import manifest
from vcrnn_jax.files import atomic_write

__all__ = [
    'not_run_table',
    'FORMAT',
    'MAX_POINTS',
    'MAX_LIST',
    'MAX_TABLE_BYTES',
    'METRICS_FILE',
    'FLAGS_FILE',
    'RESULTS_FILE',
    'read_metrics',
    'held_out_keys',
    'thin',
    'curve',
    'wall_seconds',
    'machine',
    'read_table',
    'binary_of',
    'fingerprint',
    'make_record',
    'record_text',
    'write_record',
    'find_runs',
    'run_name',
    'read_records',
    'value',
    'mean_std',
    'mean_std_text',
    'by_seed',
    'aggregate',
    'markdown_table',
    'table',
    'span_text',
    'seeds_text',
    'commands',
    'provenance',
    'content_hash',
    'MANIFEST',
    'Output',
    'write_outputs',
    'stale_outputs',
    'marked_blocks',
    'fill_blocks',
    'stable_svg',
    'save_svg',
    'curve_series',
    'draw_curves',
]

FORMAT = 1
MAX_POINTS = 31
MAX_LIST = 200
MAX_TABLE_BYTES = 20_000
METRICS_FILE = 'metrics.jsonl'
FLAGS_FILE = 'flags.json'
RESULTS_FILE = 'results.json'
_SEED_DIR = re.compile(r'(?:^|[_/])seed=(\d+)(?:$|[_/])')


def read_metrics(workdir) -> list[dict]:
  """The evaluations of ``<workdir>/metrics.jsonl``, in step order; a step
  logged twice (a resumed run re-evaluating) keeps its last line.

  Raises:
    ValueError: the file is missing or holds no evaluation.
  """
  path = pathlib.Path(workdir) / METRICS_FILE
  if not path.is_file():
    raise ValueError(f'{path}: no such file; is {workdir} the workdir of a '
                     'finished run?')
  by_step = {}
  with open(path, encoding='utf-8') as f:
    for line in f:
      if line.strip():
        row = json.loads(line)
        by_step[row['step']] = row
  if not by_step:
    raise ValueError(f'{path} holds no evaluation.')
  return [by_step[s] for s in sorted(by_step)]


def held_out_keys(row: Mapping[str, Any]) -> list[str]:
  """The held-out metrics of a ``metrics.jsonl`` line (not the trainer's
  ``train_*`` means, its clock or its rate)."""
  return [k for k in row if k not in ('step', 'time', 'steps_per_sec')
          and not k.startswith('train_')]


def thin(rows: Sequence[Mapping[str, Any]], max_points: int = MAX_POINTS
         ) -> list[Mapping[str, Any]]:
  """At most ``max_points`` of ``rows``, evenly spaced by index, the first
  and the last always kept."""
  if max_points < 2:
    raise ValueError(f'max_points must be >= 2, got {max_points}.')
  n = len(rows)
  if n <= max_points:
    return list(rows)
  picks = sorted({round(i * (n - 1) / (max_points - 1))
                  for i in range(max_points)})
  return [rows[i] for i in picks]


def _round(value: Any, digits: int = 6) -> Any:
  if isinstance(value, float) and math.isfinite(value) and value != 0:
    return float(f'{value:.{digits}g}')
  return value


def curve(rows: Sequence[Mapping[str, Any]], max_points: int = MAX_POINTS
          ) -> list[dict]:
  """The held-out metrics of ``rows`` thinned by :func:`thin`, each value
  to 6 significant digits."""
  return [{'step': r['step'], **{k: _round(r[k]) for k in held_out_keys(r)}}
          for r in thin(rows, max_points)]


def _event_start(path: pathlib.Path) -> float | None:
  # TensorBoard names its event files events.out.tfevents.<unix time>.<host>.
  parts = path.name.split('.')
  try:
    return float(parts[3])
  except (IndexError, ValueError):
    return None


def wall_seconds(workdir, rows: Sequence[Mapping[str, Any]]) -> float | None:
  """Seconds of training, from the trainer's start to its last evaluation.

  Each invocation of the trainer opens one TensorBoard event file (named by
  its start time) and stamps every evaluation it logs; a resumed run is the
  sum of its segments. None when the workdir holds no event file.
  """
  starts = sorted(t for t in map(
      _event_start, (pathlib.Path(workdir) / 'tensorboard').glob(
          'events.out.tfevents.*')) if t is not None)
  if not starts:
    return None
  total = 0.0
  for i, start in enumerate(starts):
    end = starts[i + 1] if i + 1 < len(starts) else math.inf
    times = [r['time'] for r in rows if start <= r.get('time', -1) < end]
    if times:
      total += max(times) - start
  return round(total, 1)


def machine(name: str) -> dict:
  """``name`` with this machine's CPU model, cores and memory (GiB)."""
  cpu = manifest.cpu_info()
  return {'name': name, 'cpu': cpu['model'], 'cores': cpu['cores'],
          'memory_gib': cpu['memory_gib']}


def _drop_long_lists(value: Any) -> Any:
  if isinstance(value, Mapping):
    return {k: _drop_long_lists(v) for k, v in value.items()
            if not (isinstance(v, list) and len(v) > MAX_LIST)}
  if isinstance(value, list):
    return [_drop_long_lists(v) for v in value]
  return value


def _results(workdir: pathlib.Path, seed: int | None) -> dict | None:
  """The run's ``results.json``: its own, or its seed's entry in the one of
  the folder above (binaries that train ``--seeds`` in one process)."""
  own = workdir / RESULTS_FILE
  if own.is_file():
    return _drop_long_lists(json.loads(own.read_text()))
  parent = workdir.parent / RESULTS_FILE
  if parent.is_file():
    results = json.loads(parent.read_text())
    for entry in results.get('seeds', []):
      if entry.get('seed') == seed:
        # What the binary reported over every seed of that process (means,
        # a summed confusion matrix) stays apart from the seed's own.
        shared = {k: v for k, v in results.items() if k != 'seeds'}
        return _drop_long_lists({**entry, 'shared': shared})
  return None


def _number(text: str) -> Any:
  for kind in (int, float):
    try:
      return kind(text)
    except ValueError:
      pass
  return text


def read_table(path) -> list[dict]:
  """A CSV file as rows, numbers parsed."""
  with open(path, encoding='utf-8', newline='') as f:
    return [{k: _number(v) for k, v in row.items()}
            for row in csv.DictReader(f)]


def _seed(workdir: pathlib.Path, flags: Mapping[str, Any]) -> int | None:
  if isinstance(flags.get('seed'), int):
    return flags['seed']
  match = _SEED_DIR.search(workdir.as_posix())
  return int(match.group(1)) if match else None


def binary_of(command: str) -> str | None:
  """``act_parity`` from ``python -m experiments.act_parity ...``."""
  words = shlex.split(command)
  for i, word in enumerate(words[:-1]):
    if word == '-m' and words[i + 1].startswith('experiments.'):
      return words[i + 1].split('.', 1)[1]
  return None


def fingerprint(rows: Sequence[Mapping[str, Any]]) -> dict:
  """The first evaluation of a run, its held-out metrics unrounded."""
  first = rows[0]
  return {'step': first['step'],
          'metrics': {k: first[k] for k in held_out_keys(first)}}


def make_record(workdir, *, command: str | None = None,
                commit: str | None = None, dirty: bool = False,
                machine_info: Mapping[str, Any],
                versions_info: Mapping[str, Any] | None = None,
                note: str | None = None, max_points: int = MAX_POINTS
                ) -> dict:
  """The record of the finished run in ``workdir`` (see the module doc).

  The command, commit, dirty state, versions and CPU come from the run's
  manifest (``manifest.jsonl``, written when it started) when it has one;
  ``command``, ``commit``, ``dirty`` and ``versions_info`` are used only for
  a run without (``command`` may hold ``{seed}``, replaced by the run's
  seed; the versions default to this interpreter's). ``machine_info``
  names the machine; its CPU is the manifest's where there is one.

  Raises:
    ValueError: ``workdir`` holds no ``metrics.jsonl``, or has no manifest
      and no ``command`` or ``commit`` was given.
  """
  workdir = pathlib.Path(workdir)
  rows = read_metrics(workdir)
  flags_path = workdir / FLAGS_FILE
  flags = (json.loads(flags_path.read_text()) if flags_path.is_file()
           else {})
  seed = _seed(workdir, flags)
  starts = manifest.read(workdir)
  machine_info = dict(machine_info)
  if starts:
    first = starts[0]
    command, commit = first['command'], first['commit'] or 'unknown'
    dirty = any(bool(s.get('dirty')) for s in starts)
    versions_info = first['versions']
    cpu = first['cpu']
    machine_info.update(cpu=cpu['model'], cores=cpu['cores'],
                        memory_gib=cpu['memory_gib'], isa=cpu['isa'])
  elif command is None or commit is None:
    raise ValueError(f'{workdir} has no {manifest.FILE}: give the command '
                     'and the commit that trained it.')
  command = command.replace('{seed}', str(seed))
  final = {k: v for k, v in rows[-1].items() if k != 'time'}
  results = _results(workdir, seed)
  tables = {}
  for path in sorted(workdir.glob('*.csv')):
    # A table results.json already holds under its name (family_parity's
    # by_count) is kept once, there.
    if (path.stat().st_size <= MAX_TABLE_BYTES
        and path.stem not in (results or {})):
      tables[path.stem] = [{k: _round(v) for k, v in row.items()}
                           for row in read_table(path)]
  record = {
      'format': FORMAT, 'command': command, 'binary': binary_of(command),
      'flags': flags, 'seed': seed, 'steps': rows[-1]['step'],
      'commit': commit, 'dirty': bool(dirty),
      'versions': dict(versions_info or manifest.package_versions()),
      'machine': dict(machine_info),
      'wall_s': wall_seconds(workdir, rows),
      'final': final, 'curve': curve(rows, max_points),
      'results': results, 'tables': tables,
      'note': note, 'starts': starts,
      'problems': manifest.problems(starts),
      'fingerprint': fingerprint(rows)}
  return record


def _flat(value: Any) -> bool:
  if isinstance(value, Mapping):
    return all(not isinstance(v, (Mapping, list, tuple))
               for v in value.values())
  if isinstance(value, (list, tuple)):
    return all(not isinstance(v, (Mapping, list, tuple)) for v in value)
  return True


def _dump(value: Any, indent: int) -> str:
  # A container of scalars on one line, others one item per line: a curve
  # or a table reads as one row per line, and the file stays small.
  if _flat(value):
    return json.dumps(value, sort_keys=True, allow_nan=False,
                      separators=(', ', ': '))
  pad, inner = ' ' * indent, ' ' * (indent + 1)
  if isinstance(value, Mapping):
    items = [f'{inner}{json.dumps(str(k))}: {_dump(value[k], indent + 1)}'
             for k in sorted(value)]
    return '{\n' + ',\n'.join(items) + f'\n{pad}}}'
  items = [f'{inner}{_dump(v, indent + 1)}' for v in value]
  return '[\n' + ',\n'.join(items) + f'\n{pad}]'


def record_text(record: Mapping[str, Any]) -> str:
  """The JSON text a record is stored as: sorted keys, NaN as null, a
  container of scalars on one line."""
  def clean(v):
    if isinstance(v, float) and not math.isfinite(v):
      return None
    if isinstance(v, Mapping):
      return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
      return [clean(x) for x in v]
    return v
  return _dump(clean(record), 0) + '\n'


def write_record(record: Mapping[str, Any], path) -> pathlib.Path:
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  atomic_write(path, record_text(record))
  return path


def find_runs(root) -> list[pathlib.Path]:
  """``root`` if it is a run's workdir, else every workdir under it (a
  folder holding ``metrics.jsonl``), in path order.

  Raises:
    ValueError: none there.
  """
  root = pathlib.Path(root)
  if (root / METRICS_FILE).is_file():
    return [root]
  runs = sorted(p.parent for p in root.glob(f'**/{METRICS_FILE}'))
  if not runs:
    raise ValueError(f'no {METRICS_FILE} under {root}: give the workdir of '
                     'a finished run or a folder of them.')
  return runs


def run_name(workdir, root) -> str:
  """The record's file stem: the workdir's path under ``root``, ``/`` as
  ``_`` (``seed=0``), or the workdir's own name when it is ``root``."""
  workdir, root = pathlib.Path(workdir), pathlib.Path(root)
  if workdir == root:
    return workdir.name
  return '_'.join(workdir.relative_to(root).parts)


def read_records(root) -> dict[str, list[dict]]:
  """Every record under ``root`` grouped by experiment: ``'<paper>/
  <experiment>'`` (the record's folder under ``root``) to its records in
  file order, each with its ``path`` under ``root`` added."""
  root = pathlib.Path(root)
  out: dict[str, list[dict]] = {}
  for path in sorted(root.glob('**/*.json')):
    record = json.loads(path.read_text())
    if record.get('format') != FORMAT:
      raise ValueError(f'{path}: not a run record of format {FORMAT}.')
    rel = path.relative_to(root)
    record['path'] = rel.as_posix()
    out.setdefault(rel.parent.as_posix(), []).append(record)
  return out


def value(record: Mapping[str, Any], key: str) -> Any:
  """``record``'s value at a dotted ``key`` (``final.sequence_error``,
  ``results.test.bpc``); None when a part is missing."""
  node: Any = record
  for part in key.split('.'):
    if not isinstance(node, Mapping) or part not in node:
      return None
    node = node[part]
  return node


def mean_std(values: Iterable[float]) -> tuple[float, float | None, int]:
  """``(mean, sample standard deviation, count)`` of the values that are
  not None; the deviation is None for fewer than two.

  Raises:
    ValueError: no value.
  """
  xs = [float(v) for v in values if v is not None]
  if not xs:
    raise ValueError('no values to average.')
  return (statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else None,
          len(xs))


def mean_std_text(values: Sequence[float], fmt: Callable[[float], str]
                  ) -> str:
  """``'mean ± std'`` over seeds, each by ``fmt`` (the deviation left out
  for one seed)."""
  mean, std, _ = mean_std(values)
  return fmt(mean) + (f' ± {fmt(std)}' if std is not None else '')


def by_seed(runs: Sequence[Mapping[str, Any]]) -> list:
  """``runs`` in seed order, those without a seed last."""
  return sorted(runs, key=lambda r: (r.get('seed') is None, r.get('seed')))


def aggregate(rows: Sequence[Mapping[str, Any]], keys: Sequence[str],
              values: Sequence[str]) -> list[dict]:
  """Rows grouped by ``keys``: per value its mean over the group
  (``<value>``), the sample standard deviation (``<value>_std``, None for
  one run) and the group's size (``runs``), in first-seen order."""
  groups: dict[tuple, list[Mapping[str, Any]]] = {}
  for row in rows:
    groups.setdefault(tuple(row[k] for k in keys), []).append(row)
  out = []
  for key, members in groups.items():
    row = dict(zip(keys, key), runs=len(members))
    for v in values:
      xs = [m[v] for m in members if m.get(v) is not None]
      row[v] = statistics.fmean(xs) if xs else None
      row[f'{v}_std'] = statistics.stdev(xs) if len(xs) > 1 else None
    out.append(row)
  return out


def _cell(value: Any, measured: bool, spread: Any = None) -> str:
  if value is None:
    return '-'
  if not isinstance(value, float):
    return str(value)
  if not measured:        # a setting (a budget, a bit count): as given
    return f'{value:g}'
  text = f'{value:.2e}' if abs(value) < 1e-2 or abs(value) >= 1e3 else (
      f'{value:.3f}')
  if spread is not None and math.isfinite(spread):
    text += f' ± {spread:.2g}'
  return text


def markdown_table(rows: Sequence[Mapping[str, Any]],
                   columns: Sequence[str]) -> str:
  """A Markdown table of ``columns``; a column with a ``<name>_std`` in the
  rows is a measurement, written ``mean ± std`` to three figures, the others
  as given; a ``runs`` column is added when the rows have one."""
  if rows and 'runs' in rows[0] and 'runs' not in columns:
    columns = [*columns, 'runs']
  lines = ['| ' + ' | '.join(columns) + ' |',
           '|' + ' --- |' * len(columns)]
  for row in rows:
    lines.append('| ' + ' | '.join(
        _cell(row.get(c), f'{c}_std' in row, row.get(f'{c}_std'))
        for c in columns) + ' |')
  return '\n'.join(lines) + '\n'


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
  """A Markdown table of already formatted cells."""
  lines = ['| ' + ' | '.join(header) + ' |', '|' + ' --- |' * len(header)]
  lines += ['| ' + ' | '.join(str(c) for c in row) + ' |' for row in rows]
  return '\n'.join(lines) + '\n'


def not_run_table(groups: Mapping[str, Sequence[Any]],
                  items: Sequence[tuple[str, str, str]]) -> str:
  """What a page's paper has that is not run here, each ``(what, folder
  prefix, command)``: the records that exist under the prefix are counted
  from ``groups`` (folder -> runs), so the table says what exists and never
  goes out of date."""
  rows = []
  for what, prefix, command in items:
    found = {name: runs for name, runs in groups.items()
             if name.startswith(prefix)}
    runs = sum(len(r) for r in found.values())
    folders = f'{len(found)} folder' + ('s' if len(found) > 1 else '')
    have = f'{runs} records in {folders} (`{prefix}*`)' if runs else 'no record'
    rows.append([what, have, command])
  return table(['experiment', 'records here', 'command'], rows)


def span_text(values: Iterable[int]) -> str:
  """``'0-4'``, ``'0, 2'`` or ``'3'``: distinct integers, a run of
  consecutive ones as its ends."""
  xs = sorted(set(values))
  if len(xs) > 1 and xs == list(range(xs[0], xs[-1] + 1)):
    return f'{xs[0]}-{xs[-1]}'
  return ', '.join(map(str, xs))


def seeds_text(records: Sequence[Mapping[str, Any]]) -> str:
  """``'seeds 0-4'``, ``'seeds 0, 2'`` or ``'seed 3'``: the distinct seeds
  of ``records``."""
  seeds = {r['seed'] for r in records if r.get('seed') is not None}
  return ('seed ' if len(seeds) == 1 else 'seeds ') + span_text(seeds)


_SEED_FLAG = re.compile(r'(?<=seed=)\d+')


def commands(runs: Sequence[Mapping[str, Any]]) -> list[str]:
  """The distinct commands that made ``runs`` (each start of each run, the
  seed written ``S``), in the order first met: the training command, then
  a report's rerun (``--difficulty_report``, ``--class_report``)."""
  out = []
  for run in runs:
    starts = [s.get('command') for s in run.get('starts') or []]
    for command in [c for c in starts if c] or [run.get('command')]:
      if command:
        out.append(_SEED_FLAG.sub('S', command))
  return list(dict.fromkeys(out))


def provenance(records: Sequence[Mapping[str, Any]]) -> str:
  """One line saying where ``records`` were made: commit(s), machine(s),
  versions, and a warning for a dirty tree."""
  def distinct(key):
    return list(dict.fromkeys(key(r) for r in records))
  commits = distinct(lambda r: r['commit'][:7] + (' (dirty)' if r.get('dirty')
                                                  else ''))
  machines = distinct(lambda r: r['machine'].get('name'))
  stacks = distinct(lambda r: ', '.join(
      f'{k} {r["versions"][k]}' for k in ('python', 'jax', 'flax', 'optax')
      if r['versions'].get(k)))
  return (f'Recorded at commit {" / ".join(commits)} on '
          f'{" / ".join(map(str, machines))} ({"; ".join(stacks)}); '
          f'{len(records)} run{"s" if len(records) != 1 else ""}, '
          f'{seeds_text(records)}.')


def content_hash(data: Any) -> str:
  """sha256 of ``data``'s canonical JSON: a figure's inputs, for checking
  that a committed figure matches its records without comparing pixels."""
  text = json.dumps(data, sort_keys=True, separators=(',', ':'),
                    default=str)
  return hashlib.sha256(text.encode('utf-8')).hexdigest()


# ----------------------------------------------------------------------------
# Generated files: Markdown fragments and figures, checked against records.

MANIFEST = 'manifest.json'


class Output(NamedTuple):
  """One generated file, under the generated folder.

  A Markdown fragment has ``text``; a figure has ``draw(path)`` and
  ``data``, the inputs it draws (their hash goes in the manifest: a figure
  is current when its inputs are, whatever the pixels).
  """
  path: str
  text: str | None = None
  draw: Callable[[pathlib.Path], Any] | None = None
  data: Any = None

  def digest(self) -> str:
    if self.text is not None:
      return hashlib.sha256(self.text.encode('utf-8')).hexdigest()
    return content_hash({'file': self.path, 'data': self.data})


def write_outputs(outputs: Sequence[Output], folder, *,
                  figures: bool = True) -> list[pathlib.Path]:
  """Writes every output under ``folder`` and ``manifest.json`` (each
  file's digest: the text's hash, or a figure's inputs' hash); returns the
  paths written. Files under ``folder`` that no output names are removed
  (a table whose records went). ``figures=False`` leaves the figures
  undrawn (the manifest still lists them)."""
  folder = pathlib.Path(folder)
  paths = [o.path for o in outputs]
  if len(set(paths)) != len(paths):
    raise ValueError(f'two outputs share a path: {sorted(paths)}')
  written = []
  for out in outputs:
    path = folder / out.path
    path.parent.mkdir(parents=True, exist_ok=True)
    if out.text is not None:
      atomic_write(path, out.text)
    elif figures:
      with stable_svg():
        out.draw(path)
    else:
      continue
    written.append(path)
  keep = {folder / p for p in paths} | {folder / MANIFEST}
  for path in sorted(folder.glob('**/*')):
    if path.is_file() and path not in keep:
      path.unlink()
  atomic_write(folder / MANIFEST, json.dumps(
      {o.path: o.digest() for o in outputs}, indent=1, sort_keys=True)
      + '\n')
  return written


def stale_outputs(outputs: Sequence[Output], folder) -> list[str]:
  """What in ``folder`` does not match ``outputs``: a fragment whose text
  differs, a figure whose inputs' hash differs from the manifest's or whose
  file is missing, a file no output names. Empty when current."""
  folder = pathlib.Path(folder)
  manifest_path = folder / MANIFEST
  hashes = (json.loads(manifest_path.read_text())
            if manifest_path.is_file() else {})
  stale = []
  for out in outputs:
    path = folder / out.path
    if not path.is_file():
      stale.append(f'{out.path}: missing')
    elif out.text is not None and path.read_text() != out.text:
      stale.append(f'{out.path}: text differs from the records')
    elif hashes.get(out.path) != out.digest():
      stale.append(f'{out.path}: drawn from other inputs than the records')
  names = {o.path for o in outputs} | {MANIFEST}
  for path in sorted(folder.glob('**/*')):
    rel = path.relative_to(folder).as_posix()
    if path.is_file() and rel not in names:
      stale.append(f'{rel}: no record makes it')
  return stale


_BEGIN = '<!-- generated: {name} begin -->'
_END = '<!-- generated: {name} end -->'
_BLOCK = re.compile(r'<!-- generated: (\S+) begin -->\n(.*?)'
                    r'<!-- generated: \1 end -->', re.S)


def marked_blocks(text: str) -> dict[str, str]:
  """The generated blocks of a hand-written file: name to body, where a
  block is ``<!-- generated: NAME begin -->`` ... ``<!-- generated: NAME
  end -->`` and NAME is the generated fragment it copies."""
  return {m.group(1): m.group(2) for m in _BLOCK.finditer(text)}


def fill_blocks(text: str, fragments: Mapping[str, str]) -> str:
  """``text`` with each marked block's body replaced by its fragment.

  Raises:
    ValueError: a block names no fragment.
  """
  def body(match):
    name = match.group(1)
    if name not in fragments:
      raise ValueError(f'a block is marked "{name}", which no generated '
                       f'fragment is (there are: {sorted(fragments)}).')
    return (_BEGIN.format(name=name) + '\n' + fragments[name]
            + _END.format(name=name))
  return _BLOCK.sub(body, text)


@contextlib.contextmanager
def stable_svg():
  """Within it, matplotlib writes the same SVG bytes for the same figure (no
  date, fixed element ids), so a regenerated figure shows no change."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  saved = os.environ.get('SOURCE_DATE_EPOCH')
  os.environ['SOURCE_DATE_EPOCH'] = '0'
  try:
    with matplotlib.rc_context({'svg.hashsalt': 'vcrnn_jax',
                                'svg.fonttype': 'none'}):
      yield
  finally:
    if saved is None:
      del os.environ['SOURCE_DATE_EPOCH']
    else:
      os.environ['SOURCE_DATE_EPOCH'] = saved


def save_svg(fig, path) -> pathlib.Path:
  """Writes ``fig`` as SVG under :func:`stable_svg`."""
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  from experiments.reports import plots  # pylint: disable=g-import-not-at-top
  plots.legible(fig)
  with stable_svg():
    fig.savefig(path, format='svg', metadata={'Date': None})
  return path


def curve_series(runs: Sequence[Mapping[str, Any]], key: str) -> dict:
  """``{'seed S': [[step, value], ...]}`` of ``key`` in each run's curve,
  for :func:`draw_curves`."""
  return {f'seed {r["seed"]}': [[p['step'], p[key]] for p in r['curve']
                                if p.get(key) is not None]
          for r in sorted(runs, key=lambda r: (r['seed'] is None, r['seed']))}


def draw_curves(series: Mapping[str, Mapping[str, Sequence]], path, *,
                xlabel: str, ylabel: str, title: str, log: bool = False,
                scale: float = 1.0, steps_per_unit: float = 1.0):
  """Learning curves, one colour per group and one line per seed.

  Args:
    series: group label -> :func:`curve_series` of its runs.
    path: the SVG to write.
    xlabel, ylabel, title: the axes' words.
    log: a log-scale y axis.
    scale: multiplies every value (100 for percentages).
    steps_per_unit: divides every step (1000 for thousands of steps).
  """
  from experiments.reports import plots  # pylint: disable=g-import-not-at-top
  fig = plots.new_figure((7.0, 4.0))
  ax = fig.subplots()
  for i, (label, runs) in enumerate(series.items()):
    colour = f'C{i % 10}'
    for j, points in enumerate(runs.values()):
      ax.plot([s / steps_per_unit for s, _ in points],
              [scale * v for _, v in points], color=colour, linewidth=1.1,
              alpha=0.85, marker='o' if len(points) <= 12 else None,
              markersize=3, label=label if j == 0 else None)
  if log:
    ax.set_yscale('log')
  ax.set_xlabel(xlabel)
  ax.set_ylabel(ylabel)
  ax.set_title(title, fontsize=10)
  ax.grid(alpha=0.3, which='both')
  ax.legend(fontsize=8)
  return save_svg(fig, path)
