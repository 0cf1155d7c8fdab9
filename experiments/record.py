r"""Finished runs into run records: the data behind every published number.

The command::

  python -m experiments.record --workdir=runs/act_parity \
      --out=docs/results/records/act/parity --machine=CPU-2 \
      --command='python -m experiments.act_parity --tau=0.01 --seed={seed}'

turns each run under ``--workdir`` (the workdir of one finished run, or a
folder of them: every folder holding a ``metrics.jsonl``) into one small
JSON file in ``--out``, named by the run's path under ``--workdir``
(``seed=0.json``). A record holds the command (``{seed}`` replaced by the
run's seed), the run-defining flags (``flags.json``), the seed, the commit
of the tree the run was trained on (``--commit``, or read from ``--tree``
with whether it was dirty), the versions of Python and the numeric
packages, the machine, the wall time, the final metrics, a thinned
evaluation curve, the binary's ``results.json`` and its small CSV tables
(``difficulty.csv``, ``by_count.csv``, ...); never a checkpoint.
``vcrnn_jax.analysis.records`` documents every key.

Run it in the environment and on the machine that trained the runs: the
versions and the CPU are read from here. Then
``python -m experiments.results`` rebuilds the tables and figures.
"""

import pathlib

from absl import flags

from experiments import _common
from vcrnn_jax.analysis import records

flags.DEFINE_multi_string('workdir', None, 'A finished run\'s workdir, or a '
                          'folder of them (searched for metrics.jsonl); may '
                          'be repeated.')
flags.DEFINE_string('out', None, 'Folder for the records, e.g. '
                    'docs/results/records/<paper>/<experiment>.')
flags.DEFINE_string('command', None, 'The command that trained the runs, as '
                    'a user types it; {seed} stands for each run\'s seed.')
flags.DEFINE_string('commit', None, 'Commit of the tree the runs were '
                    'trained on (default: HEAD of --tree).')
flags.DEFINE_string('tree', '.', 'The git work tree the runs were trained '
                    'in, for the commit and whether it was dirty.')
flags.DEFINE_bool('dirty', False, 'With --commit: the tree had uncommitted '
                  'changes.')
flags.DEFINE_string('machine', None, 'Name of the machine the runs were '
                    'trained on (its CPU, cores and memory are read here).')
flags.DEFINE_string('note', None, 'What the numbers do not say, e.g. that '
                    'the machine was shared.')
_common.define_positive_int('max_points', records.MAX_POINTS,
                            'Evaluations kept in a record\'s curve.')
for _name in ('workdir', 'out', 'command', 'machine'):
  flags.mark_flag_as_required(_name)
FLAGS = flags.FLAGS


def main(processes):
  del processes
  if FLAGS.max_points < 2:
    raise ValueError(f'--max_points must be >= 2, got {FLAGS.max_points}.')
  if FLAGS.commit:
    commit, dirty = FLAGS.commit, FLAGS.dirty
  else:
    commit, dirty = records.tree_commit(FLAGS.tree)
  machine = records.machine(FLAGS.machine)
  versions = records.versions()
  out = pathlib.Path(FLAGS.out)
  for root in FLAGS.workdir:
    for workdir in records.find_runs(root):
      record = records.make_record(
          workdir, command=FLAGS.command, commit=commit, dirty=dirty,
          machine_info=machine, versions_info=versions, note=FLAGS.note,
          max_points=FLAGS.max_points)
      path = records.write_record(
          record, out / f'{records.run_name(workdir, root)}.json')
      final = ', '.join(f'{k}={v:.4g}' for k, v in record['final'].items()
                        if isinstance(v, float) and not k.startswith('train_'))
      print(f'wrote {path} (seed {record["seed"]}, step {record["steps"]}, '
            f'{final})')


if __name__ == '__main__':
  _common.run(main)
