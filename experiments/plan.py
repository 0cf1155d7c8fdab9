r"""The results pages' planned runs: what is recorded, and training the rest.

The command::

  python -m experiments.plan

prints, for each plan in ``docs/results/plans/`` (``act.toml``, ``vc.toml``,
``rehn.toml``: every run a results page is built from, in the order to
train them; :mod:`experiments.reports.plan` gives the format), which seeds of
each records folder are recorded and which are missing. Then::

  python -m experiments.plan --run --runs=/scratch/runs --data_dir=DIR \
      --record --machine=CPU-2

trains the missing runs one after another, each in its workdir
``<runs>/<folder>/seed=<seed>`` and on the commit of its folder's records
(a clone at ``<runs>/trees/<commit>``; for a new folder, the commit its
workdir first started on, or today's HEAD), the
output in the workdir's ``run.log``; a finished run gets a ``.done``
marker and, with ``--record``, its record in the folder (then
``experiments.verify`` and ``experiments.results`` as usual). Start the same
command N times to train N runs at a time: each takes the next run nobody
has claimed (a ``.claim`` file in the workdir, taken over when the process
that wrote it is gone). A killed run resumes from its checkpoint when the
command is started again (``kill`` on the process stops its run too);
``--plans`` and ``--only`` choose what to train (``--plans=vc
--only='vc/frontier_music_*'``).
"""

import datetime
import fnmatch
import os
import pathlib
import shlex
import signal
import socket
import subprocess
import sys
import time

from absl import flags

from experiments import _common
from experiments.reports import manifest, plan, records, results

PLANS = pathlib.Path(__file__).resolve().parent.parent / 'docs/results/plans'
REPO = PLANS.parent.parent.parent

flags.DEFINE_string('plan_dir', str(PLANS), 'Folder of the plan files.')
flags.DEFINE_list('plans', [], 'Plans to read, by name (act, vc, rehn: '
                  'the .toml files in --plan_dir); default: all.')
flags.DEFINE_list('only', [], 'Records folders to consider, as shell '
                  'patterns (act/parity_tau*); default: every planned one.')
flags.DEFINE_string('records', str(results.RECORDS), 'Folder of the run '
                    'records.')
flags.DEFINE_bool('run', False, 'Train the missing runs (needs --runs).')
flags.DEFINE_string('runs', None, 'Root of the workdirs and of the source '
                    'trees (outside the repository, kept across restarts).')
flags.DEFINE_string('data_dir', '../shared/data', 'The corpora root, '
                    '{data_dir} in the plans\' commands.')
flags.DEFINE_bool('record', False, 'Record each run as it finishes (needs '
                  '--machine).')
flags.DEFINE_string('machine', None, 'With --record: the machine\'s name '
                    'in the records (e.g. CPU-2).')
FLAGS = flags.FLAGS


def _say(text: str) -> None:
  now = datetime.datetime.now().strftime('%H:%M:%S')
  print(f'[{now}] {text}', flush=True)


def _plan_files() -> list[pathlib.Path]:
  folder = pathlib.Path(FLAGS.plan_dir)
  have = sorted(folder.glob('*.toml'))
  if not have:
    raise ValueError(f'--plan_dir: no .toml plan in {folder}.')
  if not FLAGS.plans:
    return have
  paths = [folder / f'{name}.toml' for name in FLAGS.plans]
  missing = [p.stem for p in paths if not p.is_file()]
  if missing:
    have = ', '.join(p.stem for p in have)
    raise ValueError(f'--plans: no plan named {missing[0]} (there are: '
                     f'{have}).')
  return paths


def _entries() -> list[plan.Entry]:
  entries = [e for path in _plan_files() for e in plan.read_plan(path)]
  if FLAGS.only:
    entries = [e for e in entries
               if any(fnmatch.fnmatch(e.folder, p) for p in FLAGS.only)]
    if not entries:
      raise ValueError(f'--only matches no planned folder: '
                       f'{",".join(FLAGS.only)}.')
  return entries


def _status() -> list[dict]:
  return plan.status(_entries(), records.read_records(FLAGS.records))


def _git(*args, cwd=None) -> str:
  return subprocess.run(['git', *args], cwd=cwd, check=True, text=True,
                        capture_output=True).stdout.strip()


def _tree(commit: str | None, runs: pathlib.Path) -> pathlib.Path:
  """A clean clone of the repository at ``commit`` (HEAD when None), shared
  by every run on that commit."""
  commit = commit or _git('rev-parse', 'HEAD', cwd=REPO)
  tree = runs / 'trees' / commit[:12]
  if not tree.is_dir():
    staging = runs / 'trees' / f'.{commit[:12]}.{os.getpid()}'
    _git('clone', '-q', '--no-checkout', str(REPO), str(staging))
    _git('checkout', '-q', '--detach', commit, cwd=staging)
    try:
      staging.rename(tree)
    except OSError:  # another process made it first
      subprocess.run(['rm', '-rf', str(staging)], check=True)
  return tree


def _alive(claim: pathlib.Path) -> bool:
  try:
    host, pid = claim.read_text().split()
    os.kill(int(pid), 0)
  except (OSError, ValueError):
    return False
  return host == socket.gethostname()


def _claim(workdir: pathlib.Path) -> bool:
  workdir.mkdir(parents=True, exist_ok=True)
  claim = workdir / '.claim'
  if claim.exists() and not _alive(claim):
    claim.unlink(missing_ok=True)
  try:
    fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
  except FileExistsError:
    return False
  os.write(fd, f'{socket.gethostname()} {os.getpid()}'.encode())
  os.close(fd)
  return True


def _execute(line: str, cwd: pathlib.Path, log: pathlib.Path) -> int:
  argv = shlex.split(line)
  if argv and argv[0] == 'python':  # the interpreter running this binary
    argv[0] = sys.executable
  with log.open('a') as out:
    out.write(f'$ {line}\n')
    out.flush()
    child = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=out)
    try:
      return child.wait()
    finally:  # stopped: the run must not go on unclaimed
      if child.poll() is None:
        child.terminate()
        child.wait()


def _record(job: plan.Job, workdir: pathlib.Path) -> None:
  out = pathlib.Path(FLAGS.records) / job.entry.folder
  done = subprocess.run(
      [sys.executable, '-m', 'experiments.record', f'--workdir={workdir}',
       f'--out={out}', f'--machine={FLAGS.machine}'],
      cwd=REPO, text=True, capture_output=True)
  text = (done.stdout + done.stderr).strip().splitlines()
  _say(f'  record: {text[-1] if text else done.returncode}')


def _started_on(workdir: pathlib.Path) -> str | None:
  """The commit the workdir's run first started on, from its manifests
  (one per seed for a binary that trains its seeds together); None when it
  never started."""
  starts = [s for path in [workdir, *sorted(workdir.glob('seed=*'))]
            for s in manifest.read(path)]
  if not starts:
    return None
  return min(starts, key=lambda s: s.get('started', 0.0))['commit']


def _train(job: plan.Job, runs: pathlib.Path) -> None:
  workdir = runs / job.workdir
  if not (workdir / '.done').exists():
    # A new folder's run resumes on the commit it started on, not on
    # today's HEAD: a record's starts must share one commit.
    tree = _tree(job.commit or _started_on(workdir), runs)
    _say(f'start {job.workdir} on {tree.name[:7]}')
    start = time.monotonic()
    for line in job.commands(workdir, FLAGS.data_dir):
      rc = _execute(line, tree, workdir / 'run.log')
      if rc:
        _say(f'failed {job.workdir} (exit {rc}; {workdir / "run.log"})')
        return
    (workdir / '.done').touch()
    _say(f'done {job.workdir} in {(time.monotonic() - start) / 60:.0f} min')
  if FLAGS.record:
    _record(job, workdir)


def _stop(signum, frame) -> None:
  del frame
  raise SystemExit(128 + signum)


def _run(runs: pathlib.Path) -> None:
  # `kill` ends the run it trains too, and frees its claim.
  signal.signal(signal.SIGTERM, _stop)
  tried = set()
  while True:
    todo = [j for j in plan.jobs(_status()) if j.workdir not in tried]
    for job in todo:
      # A run claimed by another process is tried again later: that
      # process may end before finishing it.
      if _claim(runs / job.workdir):
        tried.add(job.workdir)
        try:
          _train(job, runs)
        finally:
          (runs / job.workdir / '.claim').unlink(missing_ok=True)
        break
    else:
      _say('nothing left to take')
      return


def main(processes):
  del processes
  if FLAGS.run and not FLAGS.runs:
    raise ValueError('--run needs --runs, the root of the workdirs.')
  if FLAGS.record and not FLAGS.machine:
    raise ValueError('--record needs --machine, the machine\'s name.')
  rows = _status()
  print(plan.status_table(rows), end='')
  left = plan.jobs(rows)
  print(f'{sum(len(r["recorded"]) for r in rows)} seeds recorded, '
        f'{len(left)} runs to train.')
  if FLAGS.run:
    _run(pathlib.Path(FLAGS.runs).resolve())


if __name__ == '__main__':
  _common.run(main)
