r"""The family comparisons' tables and figures, from their runs' results.

The command::

  python -m experiments.family_summary --runs=runs/family_adding

reads every ``results.json`` under ``--runs`` (runs of
``experiments.family_parity`` and ``experiments.family_adding``, in any
sub-directory layout) and writes, in ``--out`` (default: ``--runs``):

* ``parity_runs.csv``, ``adding_runs.csv``: one row per run (parity:
  setup, method, grid value, seed, training-range and test-range accuracy,
  steps, share capped, multiplications per input, seconds per update,
  PonderNet's sampled-rule accuracy and mass at the cap; adding: model,
  budget, seed, updates, MSE, MSE over the mean-predicting baseline,
  fraction of the state updated);
* ``summary.md``: the same over seeds (``mean ± std``) as Markdown tables,
  parity in two stages: the training range, then the test range judged
  only for the seeds that solved the training range (accuracy >= 0.95);
* ``error_vs_updates.png`` (adding runs: MSE against the fraction of the
  state updated, Skip-RNN Sec. 4.1), and per parity setup
  ``by_count_<setup>.png`` (steps and accuracy per number of non-zero
  elements, averaged over seeds, PonderNet Fig. 3) and
  ``compute_<setup>.png`` (accuracy against multiplications per input),
  after the tables.

It trains nothing; rerun it as runs finish. The results page's tables and
figures are not made here but from run records (``experiments.record``, then
``python -m experiments.results``, which calls
``experiments.reports.family.summary.outputs``), so that they carry their
commit and machine.
"""

import csv
import io
import pathlib

from absl import flags

from experiments import _common
from experiments.reports.family import plots as family_plots
from experiments.reports.family import summary
from vcrnn_jax.files import atomic_write

flags.DEFINE_string('runs', None, 'Directory of the runs to summarise '
                    '(searched recursively for results.json).')
flags.DEFINE_string('out', None, 'Directory for the CSVs, summary.md and '
                    'the figures (default: --runs).')
flags.mark_flag_as_required('runs')
FLAGS = flags.FLAGS

_PARITY_COLUMNS = ('run', 'seed', 'setup', 'method', 'grid',
                   'training_range_accuracy', 'accuracy', 'steps', 'capped',
                   'multiplications', 'seconds_per_update', 'sample_accuracy',
                   'last_step_mass')
_ADDING_COLUMNS = (('run', 'seed') + summary.ADDING_KEYS + ('updates',)
                   + summary.ADDING_VALUES)


def _csv(rows, columns) -> str:
  out = io.StringIO()
  writer = csv.DictWriter(out, columns, extrasaction='ignore',
                          lineterminator='\n')
  writer.writeheader()
  writer.writerows(rows)
  return out.getvalue()


def main(processes):
  root = pathlib.Path(FLAGS.runs)
  if not root.is_dir():
    _common.fail(f'--runs: no such directory: {root}', processes=processes)
  out = pathlib.Path(FLAGS.out or root)
  out.mkdir(parents=True, exist_ok=True)
  runs = summary.read_runs(root)
  parity, adding = summary.parity_rows(runs), summary.adding_rows(runs)
  sections, written = [], []
  if parity:
    written.append(out / 'parity_runs.csv')
    atomic_write(written[-1], _csv(parity, _PARITY_COLUMNS))
    sections.append('## Parity\n\n' + '\n'.join(
        f'Setup: {setup}.\n\n' + summary.parity_table(
            [r for r in parity if r['setup'] == setup])
        for setup in dict.fromkeys(r['setup'] for r in parity)))
  if adding:
    written.append(out / 'adding_runs.csv')
    atomic_write(written[-1], _csv(adding, _ADDING_COLUMNS))
    sections.append('## Adding task\n\n' + summary.markdown_table(
        summary.aggregate(adding, summary.ADDING_KEYS,
                          summary.ADDING_VALUES),
        summary.ADDING_KEYS + summary.ADDING_VALUES))
  written.append(out / 'summary.md')
  atomic_write(written[-1], '\n'.join(sections))
  print('\n'.join(sections))
  print(f'wrote {", ".join(map(str, written))} ({len(parity)} parity runs, '
        f'{len(adding)} adding runs)')
  if adding:
    path = out / family_plots.ERROR_VS_UPDATES_PNG
    if _common.plot(path.name, lambda: family_plots.plot_error_vs_updates(
        adding, path)):
      print(f'wrote {path}')
  for setup in dict.fromkeys(r['setup'] for r in parity):
    rows = [r for r in parity if r['setup'] == setup]
    slug = summary.setup_slug(rows[0])
    path = out / f'by_count_{slug}.png'
    series = summary.by_count_means(runs, setup)
    if series and _common.plot(path.name, lambda s=series, p=path, t=setup:
                               family_plots.plot_by_count(
                                   s, p, title=f'Parity, {t}')):
      print(f'wrote {path}')
    path = out / f'compute_{slug}.png'
    points = summary.pareto_points(rows)
    if _common.plot(path.name, lambda d=points, p=path, t=setup:
                    family_plots.plot_accuracy_vs_compute(
                        d, p, title=f'Parity, {t}')):
      print(f'wrote {path}')


if __name__ == '__main__':
  _common.run(main)
