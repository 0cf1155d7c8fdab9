r"""Checks the run records against today's code.

The command (from the repository root, before ``python -m
experiments.results``)::

  python -m experiments.verify --data_dir=../shared/data

re-runs, for every configuration (a folder of records under
``docs/results/records``), the record of its lowest seed up to its first
evaluation, in a temporary workdir, and compares the held-out metrics there
with the record's (``experiments.reports.verify`` gives the tolerance and
why). Each configuration is then *current*, *stale* (today's code computes
other numbers) or *unverifiable* (the prefix could not run here, e.g. a
corpus is missing), written to ``docs/results/verification.json`` with the
commit it was checked at; the results pages show it beside each table, and
``python -m experiments.results --check`` fails when a page quotes a stale
record without saying so. ``--only`` checks some folders (the others keep
their last verdict). A prefix costs a tenth to a third of its run: about
20 minutes for every record on a 2-core CPU.
"""

import pathlib
import subprocess
import sys
import tempfile
import time

from absl import flags
import jax

from experiments import _common
from experiments.reports import manifest, records, results, verify
from vcrnn_jax.files import atomic_write

flags.DEFINE_string('records', str(results.RECORDS), 'Folder of the run '
                    'records.')
flags.DEFINE_string('out', str(verify.FILE), 'The verification file the '
                    'results pages read.')
flags.DEFINE_string('data_dir', '../shared/data', 'The corpora root that '
                    'replaces DIR in the records\' commands.')
flags.DEFINE_list('only', [], 'Experiment folders to check (e.g. '
                  'act/parity,vc/ptb_elman224); default: all.')
_common.define_positive_int('timeout', 1800, 'Seconds one prefix may run '
                            'before it counts as unverifiable.')
FLAGS = flags.FLAGS


def _check(group: str, runs, tmp: pathlib.Path) -> dict:
  record = verify.representative(runs)
  workdir = tmp / group.replace('/', '_')
  entry = {'record': record['path'], 'record_commit': record['commit'][:7],
           'seed': record.get('seed'),
           'fingerprint': bool(record.get('fingerprint'))}
  elsewhere = verify.other_device(record, jax.default_backend())
  if elsewhere:
    return {**entry, **verify.status(record, None), 'reason': elsewhere}
  try:
    command = verify.prefix_command(record, workdir,
                                    data_dir=FLAGS.data_dir)
  except ValueError as e:
    return {**entry, **verify.status(record, None), 'reason': str(e)}
  entry['command'] = ' '.join(command)
  t0 = time.time()
  try:
    proc = subprocess.run([sys.executable, *command[1:]], text=True,
                          capture_output=True, timeout=FLAGS.timeout,
                          check=False)
    failed = (proc.stderr.strip().splitlines() or ['failed'])[-1] if (
        proc.returncode) else None
  except subprocess.TimeoutExpired:
    failed = f'ran past --timeout={FLAGS.timeout} s'
  entry['seconds'] = round(time.time() - t0, 1)
  rows = None
  if failed is None:
    found = [w for w in records.find_runs(workdir)
             if records.run_name(w, workdir) in (workdir.name,
                                                 f'seed={record.get("seed")}')]
    rows = records.read_metrics(found[0]) if found else None
    if found:
      start = manifest.read(found[0])[-1]
      entry['cpu_isa'] = start['cpu']['isa']
      entry['env'] = start['env']
  out = {**entry, **verify.status(record, rows)}
  if failed is not None:
    out['reason'] = failed
  return out


def main(processes):
  del processes
  groups = records.read_records(FLAGS.records)
  unknown = sorted(set(FLAGS.only) - set(groups))
  if unknown:
    raise ValueError(f'--only names no record folder: {", ".join(unknown)} '
                     f'(there are: {", ".join(sorted(groups))}).')
  head, dirty = manifest.source_tree(pathlib.Path(__file__).parent)
  out_path = pathlib.Path(FLAGS.out)
  statuses = verify.read_statuses(out_path)
  chosen = FLAGS.only or sorted(groups)
  with tempfile.TemporaryDirectory(prefix='verify.') as tmp:
    for i, group in enumerate(chosen):
      entry = _check(group, groups[group], pathlib.Path(tmp))
      entry.update(verified_at=head or 'unknown', dirty=bool(dirty))
      statuses[group] = entry
      # Written after each configuration: an interrupted check keeps what
      # it found.
      atomic_write(out_path, records.record_text(
          dict(sorted(statuses.items()))))
      differ = ', '.join(entry.get('differ', []))
      print(f'[{i + 1}/{len(chosen)}] {group}: {entry["status"]}'
            + (f' ({differ})' if differ else '')
            + (f' ({entry["reason"]})' if entry.get('reason') else '')
            + f' in {entry.get("seconds", 0):.0f} s', flush=True)
  counts = {s: sum(statuses[g]['status'] == s for g in chosen)
            for s in verify.STATUSES}
  print(', '.join(f'{n} {s}' for s, n in counts.items()) + f' of '
        f'{len(chosen)} configurations, at {(head or "unknown")[:7]}'
        + (' (dirty tree)' if dirty else ''))


if __name__ == '__main__':
  _common.run(main)
