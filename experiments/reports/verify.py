r"""Are the records still what today's code computes?

A record keeps its run's first evaluation (``fingerprint``: the step and
the held-out metrics, unrounded; older records only have their curve's
first point, to 6 significant digits). :func:`prefix_command` turns the
record's command into the same run stopped at that step in another workdir;
``python -m experiments.verify`` runs it for one record per configuration
(an experiment folder) and :func:`status` compares what it gives with the
record:

* ``current``: every held-out metric recorded at that step is within
  :data:`RTOL` (relative) of today's; ``exact`` says whether they are
  equal to the digits the record keeps (all of them for a fingerprint, 6
  significant ones for an older record's curve). Within the tolerance but
  not exact means the same maths rounded differently (another CPU, or code
  that orders a sum otherwise): over a long run such a difference grows,
  so the run's final numbers need not be what the record says;
* ``stale``: one is not: the code now computes other numbers;
* ``unverifiable``: the prefix could not be run here (a missing corpus, a
  binary that failed), or it evaluated nothing at that step.

The verdicts are kept in ``docs/results/verification.json``
(:func:`read_statuses`), which the results pages show beside each table.
"""

from collections.abc import Mapping, Sequence
import json
import math
import pathlib
import shlex
from typing import Any

__all__ = [
    'RTOL',
    'ATOL',
    'STATUSES',
    'FILE',
    'first_evaluation',
    'other_device',
    'prefix_command',
    'status',
    'representative',
    'read_statuses',
    'applies',
    'applicable',
    'Tracked',
    'states',
    'status_line',
]

# The tolerance of ``current``, relative. A run is deterministic on one
# machine (the same command gives the same bits), so any difference comes
# from the code or from how XLA compiled it for another CPU. Records made
# before fingerprints keep the curve to 6 significant digits (5e-6
# relative). Another instruction set moved a first evaluation by about 1e-7
# relative (`python -m experiments.verify --only=rehn/synthetic_rnn20,
# act/parity_noact` with and without XLA_FLAGS=--xla_cpu_max_isa=AVX2 on an
# AVX-512 CPU: the EI-REHN prefix moved in the 7th digit, ACT's not at all),
# so 1e-4 is far above what a machine moves and far below what a change of
# the maths does; the ACT page records what the same change does to a whole
# run.
RTOL = 1e-4
# Below this a metric counts as zero (an error rate of 0).
ATOL = 1e-12
STATUSES = ('current', 'stale', 'unverifiable')
FILE = pathlib.Path('docs', 'results', 'verification.json')
_DROP = ('--workdir', '--steps', '--seeds', '--seed', '--difficulty_report',
         '--eval_batches')


def first_evaluation(record: Mapping[str, Any]) -> dict | None:
  """``{'step', 'metrics'}`` of the record's first evaluation: its
  fingerprint, or its curve's first point in a record made before
  fingerprints."""
  if record.get('fingerprint'):
    return record['fingerprint']
  curve = record.get('curve') or []
  if not curve:
    return None
  return {'step': curve[0]['step'],
          'metrics': {k: v for k, v in curve[0].items() if k != 'step'}}


def _flag_name(word: str) -> str:
  return word.split('=', 1)[0]


def other_device(record: Mapping[str, Any], platform: str) -> str | None:
  """Why ``record`` cannot be checked on a ``platform`` (``'cpu'``,
  ``'gpu'``, ``'tpu'``) machine, or None when it can.

  A run trained on a GPU rounds otherwise from its first step: re-running
  it on a CPU would call it stale whatever the code does, so it is
  *unverifiable* here instead.
  """
  for start in record.get('starts') or ():
    device = start.get('device') or {}
    if device.get('platform') not in (None, platform):
      return (f'recorded on {device.get("kind", device["platform"])} '
              f'({device["platform"]}); this machine runs {platform}')
  return None


def prefix_command(record: Mapping[str, Any], workdir, *,
                   data_dir: str | None = None) -> list[str]:
  """The record's command, stopped at its first evaluation, in ``workdir``.

  ``--workdir``, ``--steps`` and the seed flags are replaced (one seed,
  ``--seed`` or ``--seeds``, whichever the command used); an evaluation-only
  flag (``--difficulty_report``) is dropped; ``DIR`` (the records' stand-in
  for the data folder) becomes ``data_dir``.

  Raises:
    ValueError: the record has no first evaluation, or its command is not
      ``python -m experiments.<binary> ...``.
  """
  first = first_evaluation(record)
  if first is None:
    raise ValueError(f'{record.get("path")}: no evaluation recorded.')
  words = shlex.split(record['command'])
  if words[:2] != ['python', '-m'] or not words[2].startswith('experiments.'):
    raise ValueError(f'{record.get("path")}: not a binary\'s command: '
                     f'{record["command"]!r}')
  seed_flag = ('--seeds' if any(_flag_name(w) == '--seeds' for w in words)
               else '--seed')
  args = []
  for word in words[3:]:
    if _flag_name(word) in _DROP:
      continue
    if data_dir is not None and 'DIR' in word:
      word = word.replace('=DIR', f'={data_dir}')
    args.append(word)
  if record.get('seed') is not None:
    args.append(f'{seed_flag}={record["seed"]}')
  args += [f'--steps={first["step"]}', f'--workdir={workdir}']
  return ['python', '-m', words[2], *args]


def close(recorded: float | None, now: float | None) -> bool:
  if recorded is None or now is None:
    return recorded is None and now is None
  if math.isnan(recorded) or math.isnan(now):
    return math.isnan(recorded) and math.isnan(now)
  return abs(now - recorded) <= ATOL + RTOL * abs(recorded)


def _same(recorded: Any, now: Any, digits: int | None) -> bool:
  """``now`` equals ``recorded`` to the digits the record keeps."""
  if not isinstance(recorded, float) or not isinstance(now, float):
    return recorded == now
  if digits is None:
    return recorded == now
  return float(f'{now:.{digits}g}') == recorded


def status(record: Mapping[str, Any],
           rows: Sequence[Mapping[str, Any]] | None) -> dict:
  """The verdict on ``record`` from the ``metrics.jsonl`` rows its prefix
  wrote (None: the prefix could not run): ``{'status', 'exact', 'step',
  'recorded', 'now', 'differ'}``."""
  first = first_evaluation(record)
  out = {'status': 'unverifiable', 'exact': False,
         'step': first and first['step'],
         'recorded': first and first['metrics'], 'now': None, 'differ': []}
  if first is None or rows is None:
    return out
  row = next((r for r in rows if r['step'] == first['step']), None)
  if row is None:
    return out
  now = {k: row.get(k) for k in first['metrics']}
  differ = [k for k, v in first['metrics'].items()
            if not close(v, now.get(k))]
  digits = None if record.get('fingerprint') else 6
  exact = all(_same(v, now.get(k), digits)
              for k, v in first['metrics'].items())
  return {**out, 'status': 'stale' if differ else 'current', 'now': now,
          'differ': differ, 'exact': exact}


def representative(runs: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
  """The record of a configuration that is verified: its lowest seed."""
  return min(runs, key=lambda r: (r.get('seed') is None, r.get('seed') or 0,
                                  r['path']))


def read_statuses(path=FILE) -> dict[str, dict]:
  """Experiment folder -> its verification (``{}`` when none was run)."""
  path = pathlib.Path(path)
  if not path.is_file():
    return {}
  return json.loads(path.read_text())


def applies(entry: Mapping[str, Any] | None,
            runs: Sequence[Mapping[str, Any]]) -> bool:
  """Whether a verification ``entry`` checked one of ``runs``' records: a
  folder re-recorded since its verification has none, and the old verdict
  (stale or current) says nothing about the new records."""
  return entry is not None and entry.get('record_commit') in {
      r['commit'][:7] for r in runs}


def applicable(groups: Mapping[str, Sequence[Mapping[str, Any]]],
               statuses: Mapping[str, Mapping[str, Any]]
               ) -> dict[str, Mapping[str, Any]]:
  """The entries of ``statuses`` that apply to the records in ``groups``
  (:func:`applies`), so that every page marks a verdict by the
  verification of the records it reads, never of records since replaced."""
  return {g: e for g, e in statuses.items()
          if g in groups and applies(e, groups[g])}


class Tracked(Mapping):
  """``groups`` (experiment folder -> records) that logs the folders read
  through it (``groups[name]``, ``groups.get(name)``), so that a verdict
  built from it knows which records it rests on: :meth:`take`."""

  def __init__(self, groups: Mapping[str, Any]):
    self._groups = groups
    self._read: set[str] = set()

  def __getitem__(self, name: str):
    value = self._groups[name]
    self._read.add(name)
    return value

  def __iter__(self):
    return iter(self._groups)

  def __len__(self) -> int:
    return len(self._groups)

  def take(self) -> tuple[str, ...]:
    """The folders read since the last call, sorted; forgets them."""
    read, self._read = tuple(sorted(self._read)), set()
    return read


def states(folders: Sequence[str],
           statuses: Mapping[str, Mapping[str, Any]]) -> list[str]:
  """The verification status of each of ``folders`` that has one."""
  return [statuses[f]['status'] for f in folders
          if f in statuses and 'status' in statuses[f]]


def status_line(group: str, runs: Sequence[Mapping[str, Any]],
                statuses: Mapping[str, Mapping[str, Any]]) -> str:
  """One sentence for a results page: whether today's code still computes
  the records of ``group``."""
  entry = statuses.get(group)
  commits = sorted({r['commit'][:7] for r in runs})
  if not applies(entry, runs):
    return (f'Not verified against today\'s code (records made at '
            f'{", ".join(commits)}; `python -m experiments.verify` checks '
            'them).')
  where = (f'`python -m experiments.verify` at commit '
           f'{entry["verified_at"][:7]}, seed {entry["seed"]} stopped at '
           f'step {entry["step"]:,}')
  if entry['status'] == 'current' and entry.get('exact'):
    kept = ('bit for bit' if entry.get('fingerprint', True)
            else 'to the 6 digits the record keeps')
    return (f'**Current**: {where} gives the recorded first evaluation '
            f'{kept}.')
  if entry['status'] == 'current':
    return (f'**Current**: {where} gives the recorded first evaluation '
            f'within {RTOL:g} relative, not digit for digit: the same '
            'maths rounded otherwise, so a long run may end elsewhere.')
  if entry['status'] == 'stale':
    differ = ', '.join(
        f'{k} {entry["recorded"][k]:.6g} recorded, {entry["now"][k]:.6g} now'
        for k in entry['differ'])
    return (f'**Stale**: {where} no longer gives the recorded numbers '
            f'({differ}): these records describe the code at '
            f'{", ".join(commits)}, not today\'s.')
  return (f'**Unverifiable** here: {where} could not be run '
          f'({entry.get("reason", "no evaluation at that step")}).')
