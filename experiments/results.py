r"""Every results table and figure, rebuilt from the run records.

The command (from the repository root)::

  python -m experiments.results

reads the records under ``docs/results/records`` (``experiments.record``
makes them from finished runs), writes each paper's Markdown fragments and
SVG figures to ``docs/results/generated`` with ``manifest.json`` (the hash
of each fragment's text and of each figure's inputs), and copies the
fragments that README.md, ``docs/getting_started.md`` and BUILD_NOTES.md
quote into their ``<!-- generated: NAME begin/end -->`` blocks. It also
reads the benchmark records under ``docs/performance/records`` (``python -m
benchmarks --record_dir=docs/performance/records`` makes them; there may be
none) and writes a table per benchmark, ``performance/<name>.md``, which
``docs/performance.md`` quotes. The results pages include the
fragments and figures. ``--check`` writes nothing and exits 1, listing
them, when a generated file or a quoted block differs from what the records
give (``tests/test_records.py`` runs the same check). It trains nothing.

It also lists the records made at another commit than the tree's HEAD,
and whether the library or the binaries changed since: such numbers
describe older code (the tables say which commit made them).
"""

import pathlib
import subprocess
import sys

from absl import flags

from experiments import _common
from experiments.reports import bench_records, records, results
from vcrnn_jax.files import atomic_write

flags.DEFINE_string('records', str(results.RECORDS), 'Folder of the run '
                    'records.')
flags.DEFINE_string('benchmark_records', str(results.BENCHMARK_RECORDS),
                    'Folder of the benchmark records (python -m benchmarks '
                    '--record_dir); a missing folder holds none.')
flags.DEFINE_string('out', str(results.GENERATED), 'Folder for the '
                    'generated fragments, figures and manifest.json.')
flags.DEFINE_bool('check', False, 'Write nothing; exit 1 if anything '
                  'generated or quoted differs from the records.')
flags.DEFINE_bool('quote', True, 'Also fill the marked blocks of README.md, '
                  'docs/getting_started.md, BUILD_NOTES.md and '
                  'docs/performance.md.')
FLAGS = flags.FLAGS


def _git(*args) -> str | None:
  try:
    return subprocess.run(['git', *args], check=True, capture_output=True,
                          text=True).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    return None


def _report_old(groups) -> None:
  head = _git('rev-parse', 'HEAD')
  if head is None:
    return
  for commit, paths in sorted(results.old_records(groups, head).items()):
    changed = _git('diff', '--stat', commit, 'HEAD', '--', 'vcrnn_jax',
                   'experiments')
    what = ('the library or the binaries changed since'
            if changed else 'no change to vcrnn_jax/ or experiments/ since'
            if changed is not None else 'commit not in this clone')
    print(f'{len(paths)} records made at {commit[:7]}, not HEAD '
          f'({head[:7]}): {what}')


def main(processes):
  del processes
  groups = records.read_records(FLAGS.records)
  benchmarks = bench_records.read_records(FLAGS.benchmark_records)
  outs = results.outputs(groups, benchmarks)
  fragments = results.fragments(outs)
  quoting = [p for p in results.QUOTING + results.PERFORMANCE
             if p.is_file()] if FLAGS.quote else []
  if FLAGS.check:
    stale = records.stale_outputs(outs, FLAGS.out)
    for path in quoting:
      text = path.read_text()
      if results.fill_blocks(text, fragments) != text:
        stale.append(f'{path}: a generated block differs from its fragment')
    for line in stale:
      print(line)
    if stale:
      print('stale: run python -m experiments.results', file=sys.stderr)
      sys.exit(1)
    print(f'{len(outs)} generated files and {len(quoting)} quoting files '
          f'match {sum(map(len, groups.values()))} records')
    return
  written = records.write_outputs(outs, FLAGS.out)
  for path in quoting:
    text = path.read_text()
    new = results.fill_blocks(text, fragments)
    if new != text:
      atomic_write(path, new)
      print(f'updated {path}')
  print(f'wrote {len(written)} files to {pathlib.Path(FLAGS.out)} from '
        f'{sum(map(len, groups.values()))} records in {len(groups)} '
        f'experiments and {len(benchmarks)} benchmark records')
  _report_old(groups)


if __name__ == '__main__':
  _common.run(main)
