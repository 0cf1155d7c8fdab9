r"""Finished runs into run records: the data behind every published number.

The command::

  python -m experiments.record --workdir=runs/act_parity \
      --out=docs/results/records/act/parity --machine=CPU-2

turns each run under ``--workdir`` (the workdir of one finished run, or a
folder of them: every folder holding a ``metrics.jsonl``) into one small
JSON file in ``--out``, named by the run's path under ``--workdir``
(``seed=0.json``). A record holds the run's manifest (written by the binary
when each segment of the run started: the exact command, the commit and
whether the tree was dirty, Python and package versions, device, CPU model
and instruction sets, data digests), the run-defining flags
(``flags.json``), the seed, the wall time, the final metrics, a thinned
evaluation curve, its first evaluation at full precision (what
``experiments.verify`` re-runs), the binary's ``results.json`` and its small
CSV tables (``difficulty.csv``, ``by_count.csv``, ...); never a checkpoint.
``experiments.reports.records`` documents every key.

A run without a manifest, from a dirty tree, or resumed on other code, is
refused with the reason; ``--force`` records it anyway, the reason kept in
the record's ``problems`` (and then ``--command`` and ``--commit`` or
``--tree`` say what trained a run without a manifest). Then
``python -m experiments.results`` rebuilds the tables and figures.
"""

import pathlib

from absl import flags

from experiments import _common
from experiments.reports import manifest, records

flags.DEFINE_multi_string('workdir', None, 'A finished run\'s workdir, or a '
                          'folder of them (searched for metrics.jsonl); may '
                          'be repeated.')
flags.DEFINE_string('out', None, 'Folder for the records, e.g. '
                    'docs/results/records/<paper>/<experiment>.')
flags.DEFINE_string('command', None, 'Only for a run without a manifest '
                    '(with --force): the command that trained it; {seed} '
                    'stands for each run\'s seed.')
flags.DEFINE_string('commit', None, 'Only for a run without a manifest: '
                    'the commit of the tree it was trained on (default: '
                    'HEAD of --tree).')
flags.DEFINE_string('tree', '.', 'Only for a run without a manifest: the '
                    'git work tree it was trained in.')
flags.DEFINE_bool('dirty', False, 'With --commit: the tree had uncommitted '
                  'changes.')
flags.DEFINE_bool('force', False, 'Record runs that have a problem (no '
                  'manifest, a dirty tree, segments on other code); the '
                  'record keeps the reason in its "problems".')
flags.DEFINE_string('machine', None, 'Name of the machine the runs were '
                    'trained on (its CPU, cores and memory are read here).')
flags.DEFINE_string('note', None, 'What the numbers do not say, e.g. that '
                    'the machine was shared.')
_common.define_positive_int('max_points', records.MAX_POINTS,
                            'Evaluations kept in a record\'s curve.')
for _name in ('workdir', 'out', 'machine'):
  flags.mark_flag_as_required(_name)
FLAGS = flags.FLAGS


def main(processes):
  del processes
  if FLAGS.max_points < 2:
    raise ValueError(f'--max_points must be >= 2, got {FLAGS.max_points}.')
  runs = [(root, w) for root in FLAGS.workdir
          for w in records.find_runs(root)]
  commit, dirty = FLAGS.commit, FLAGS.dirty
  if not commit and not all(manifest.read(w) for _, w in runs):
    commit, dirty = manifest.tree_commit(FLAGS.tree)
  machine = records.machine(FLAGS.machine)
  out = pathlib.Path(FLAGS.out)
  built = []
  for root, workdir in runs:
    record = records.make_record(
        workdir, command=FLAGS.command, commit=commit, dirty=dirty,
        machine_info=machine, note=FLAGS.note, max_points=FLAGS.max_points)
    if record['problems'] and not FLAGS.force:
      raise ValueError(f'{workdir}: {"; ".join(record["problems"])}. '
                       'Rerun it from a clean tree, or pass --force to '
                       'record it with the reason.')
    built.append((root, workdir, record))
  for root, workdir, record in built:
    path = records.write_record(
        record, out / f'{records.run_name(workdir, root)}.json')
    final = ', '.join(f'{k}={v:.4g}' for k, v in record['final'].items()
                      if isinstance(v, float) and not k.startswith('train_'))
    print(f'wrote {path} (seed {record["seed"]}, step {record["steps"]}, '
          f'{final})' + (f'; problems: {"; ".join(record["problems"])}'
                         if record['problems'] else ''))


if __name__ == '__main__':
  _common.run(main)
