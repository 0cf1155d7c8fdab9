r"""The results pages' planned runs: which are recorded, which are missing.

A *plan* is a TOML file (``docs/results/plans/<page>.toml``) listing, in the
order to train them, the runs a results page is built from::

  [[run]]
  folder = "act/parity_tau0.001"       # the records' folder
  seeds = "0-2"
  command = "python -m experiments.act_parity --tau=0.001 --seed={seed}"
  then = "--difficulty_report"         # optional: the command again, with this

  [[run]]
  folder = "rehn/synthetic_rnn30"
  seeds = "0-4"
  together = true                      # one command trains every seed
  command = ["python -m experiments.rehn_synthetic --cell=rnn",
             "--hidden_size=30 --seeds={seeds}"]

A command is a string, or a list of strings joined with spaces. ``{seed}``
is the run's seed (``{seeds}``: the entry's seeds, for a ``together``
entry), ``{data_dir}`` the corpora root and ``{workdir}`` the run's workdir,
added as ``--workdir={workdir}`` where the command does not place it.
:func:`status` compares a plan with the records: a seed is *recorded* when
its folder holds a record of that seed whose command is the planned one
(the same flags and values, in any order, apart from the seed, the workdir
and the flags whose planned value is a path under ``{workdir}`` or
``{data_dir}``); a record of other settings (fewer steps, say) does not
count, and its seed is trained again. Every seed still missing is a
:class:`Job`, trained on the commit of the folder's matching records when
they all share one, so that a new seed runs on the code its siblings ran
on (and its folder's verification still holds); on today's code
otherwise.
``python -m experiments.plan`` prints the status and trains the jobs.
"""

from collections.abc import Mapping, Sequence
import dataclasses
import pathlib
import shlex
import tomllib
from typing import Any

from vcrnn_jax.training import sweep

__all__ = ['Entry', 'Job', 'read_plan', 'matching', 'status', 'jobs',
           'status_table']

_KEYS = {'folder', 'seeds', 'command', 'then', 'together'}


@dataclasses.dataclass(frozen=True)
class Entry:
  """One planned configuration: a records folder and its seeds."""
  folder: str
  seeds: tuple[int, ...]
  command: str
  then: str | None = None
  together: bool = False


@dataclasses.dataclass(frozen=True)
class Job:
  """Runs to train: one seed, or every seed of a ``together`` entry.

  ``commit`` is the commit to train on (None: the tree at hand), and
  ``workdir`` the run's path under the runs root.
  """
  entry: Entry
  seeds: tuple[int, ...]
  commit: str | None

  @property
  def workdir(self) -> str:
    if self.entry.together:
      return self.entry.folder
    return f'{self.entry.folder}/seed={self.seeds[0]}'

  def commands(self, workdir, data_dir) -> list[str]:
    """The command lines, placeholders filled."""
    fill = {'workdir': str(workdir), 'data_dir': str(data_dir),
            'seed': str(self.seeds[0]),
            'seeds': ','.join(map(str, self.entry.seeds))}
    first = self.entry.command.format(**fill)
    if self.entry.then is None:
      return [first]
    return [first, f'{first} {self.entry.then}']


def _entry(raw: Mapping[str, Any], where: str) -> Entry:
  unknown = sorted(set(raw) - _KEYS)
  if unknown:
    raise ValueError(f'{where}: unknown key {unknown[0]!r} (a [[run]] has '
                     f'{", ".join(sorted(_KEYS))}).')
  command = raw.get('command')
  if isinstance(command, list) and all(isinstance(c, str) for c in command):
    command = ' '.join(command)
  for key, value in (('folder', raw.get('folder')),
                     ('seeds', raw.get('seeds')), ('command', command)):
    if not isinstance(value, str):
      kind = ' or a list of strings' if key == 'command' else ''
      raise ValueError(f'{where}: {key!r} must be a string{kind}.')
  if '{workdir}' not in command:
    command += ' --workdir={workdir}'
  together = raw.get('together', False)
  need = '{seeds}' if together else '{seed}'
  if need not in command:
    raise ValueError(f'{where}: the command has no {need}.')
  try:
    seeds = sweep.parse_ints('seeds', raw['seeds'])
  except ValueError as e:
    raise ValueError(f'{where}: {e}') from None
  return Entry(raw['folder'], seeds, command, raw.get('then'),
               bool(together))


def read_plan(path) -> list[Entry]:
  """The entries of the plan file at ``path``, in its order.

  Raises:
    ValueError: not TOML, an unknown key, a missing placeholder, bad seeds
      or a folder planned twice.
  """
  path = pathlib.Path(path)
  try:
    raw = tomllib.loads(path.read_text())
  except tomllib.TOMLDecodeError as e:
    raise ValueError(f'{path}: not TOML ({e}).') from None
  runs = raw.get('run', [])
  entries = [_entry(r, f'{path.name}, run {i + 1} ({r.get("folder")})')
             for i, r in enumerate(runs)]
  folders = [e.folder for e in entries]
  twice = sorted({f for f in folders if folders.count(f) > 1})
  if twice:
    raise ValueError(f'{path}: {twice[0]} is planned twice.')
  return entries


_ALWAYS_FREE = ('--seed', '--seeds', '--workdir')


def _flags(command: str, free: set[str]) -> frozenset[str]:
  """The command's tokens, less the flags that differ between seeds."""
  return frozenset(t for t in shlex.split(command)
                   if t.split('=', 1)[0] not in free)


def _free(entry: Entry) -> set[str]:
  paths = {t.split('=', 1)[0] for t in shlex.split(entry.command)
           if '{workdir}' in t or '{data_dir}' in t}
  return paths | set(_ALWAYS_FREE)


def matching(entry: Entry, group: Sequence[Mapping[str, Any]]
             ) -> list[Mapping[str, Any]]:
  """The records of ``group`` trained with ``entry``'s command."""
  free = _free(entry)
  planned = _flags(entry.command, free)
  return [r for r in group if r.get('seed') is not None
          and _flags(r.get('command') or '', free) == planned]


def _commit(group: Sequence[Mapping[str, Any]]) -> str | None:
  commits = {r.get('commit') for r in group}
  return commits.pop() if len(commits) == 1 else None


def status(entries: Sequence[Entry],
           groups: Mapping[str, Sequence[Mapping[str, Any]]]
           ) -> list[dict[str, Any]]:
  """Per entry: its seeds, those recorded, those missing, the number of
  records of other settings in its folder and the commit a missing seed
  trains on (``groups``: :func:`records.read_records`)."""
  out = []
  for entry in entries:
    group = groups.get(entry.folder, [])
    match = matching(entry, group)
    recorded = {r['seed'] for r in match}
    out.append({'entry': entry,
                'recorded': sorted(recorded & set(entry.seeds)),
                'missing': [s for s in entry.seeds if s not in recorded],
                'other': len(group) - len(match),
                'commit': _commit(match)})
  return out


def jobs(rows: Sequence[Mapping[str, Any]]) -> list[Job]:
  """What is left to train, in plan order (``rows``: :func:`status`)."""
  out = []
  for row in rows:
    entry, missing = row['entry'], row['missing']
    if not missing:
      continue
    if entry.together:  # its binary trains the seeds in one process
      out.append(Job(entry, entry.seeds, row['commit']))
    else:
      out += [Job(entry, (s,), row['commit']) for s in missing]
  return out


def _seeds(seeds: Sequence[int]) -> str:
  return ','.join(map(str, seeds)) or '-'


def status_table(rows: Sequence[Mapping[str, Any]]) -> str:
  """A Markdown table of :func:`status`."""
  lines = ['| folder | seeds | recorded | missing | trains on | other '
           'records |', '| --- | --- | --- | --- | --- | --- |']
  for row in rows:
    commit = row['commit'][:7] if row['commit'] else 'today\'s code'
    lines.append(f'| {row["entry"].folder} | {_seeds(row["entry"].seeds)} '
                 f'| {_seeds(row["recorded"])} | {_seeds(row["missing"])} '
                 f'| {commit if row["missing"] else "-"} '
                 f'| {row["other"] or "-"} |')
  return '\n'.join(lines) + '\n'
