r"""The family comparisons' tables and figures, from their runs' results.

The command::

  python -m experiments.family_summary --runs=runs/family_adding

reads every ``results.json`` under ``--runs`` (runs of
``experiments.family_parity`` and ``experiments.family_adding``, in any
sub-directory layout) and writes, in ``--out`` (default: ``--runs``):

* ``parity_runs.csv``, ``adding_runs.csv``: one row per run (parity:
  setting, bits, method, grid value, seed, test-range accuracy,
  training-range accuracy, ponder, seconds per update; adding: model,
  budget, seed, updates, MSE, MSE over the mean-predicting baseline,
  fraction of the state updated);
* ``summary.md``: the same, averaged over seeds (``mean ± std``, and the
  number of runs), as Markdown tables for the docs;
* ``error_vs_updates.png`` (adding runs: MSE against the fraction of the
  state updated, Skip-RNN Sec. 4.1) and ``by_count_<setting>.png`` (parity
  runs: steps and accuracy per number of non-zero elements, averaged over
  seeds, PonderNet Fig. 3), after the tables.

It trains nothing; rerun it as runs finish. The results page's tables and
figures are not made here but from run records (``experiments.record``, then
``python -m experiments.results``, which calls
``vcrnn_jax.papers.family.summary.outputs``), so that they carry their
commit and machine.
"""

import csv
import io
import pathlib

from absl import flags

from experiments import _common
from vcrnn_jax.files import atomic_write
from vcrnn_jax.papers.family import plots as family_plots
from vcrnn_jax.papers.family import summary

flags.DEFINE_string('runs', None, 'Directory of the runs to summarise '
                    '(searched recursively for results.json).')
flags.DEFINE_string('out', None, 'Directory for the CSVs, summary.md and '
                    'the figures (default: --runs).')
flags.mark_flag_as_required('runs')
FLAGS = flags.FLAGS

_PARITY_COLUMNS = ('run', 'seed') + summary.PARITY_KEYS + summary.PARITY_VALUES
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
    sections.append('## Parity\n\n' + summary.markdown_table(
        summary.aggregate(parity, summary.PARITY_KEYS,
                          summary.PARITY_VALUES),
        summary.PARITY_KEYS + summary.PARITY_VALUES))
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
  for setting in dict.fromkeys(r['setting'] for r in parity):
    path = out / f'by_count_{setting}.png'
    series = summary.by_count_means(runs, setting)
    if series and _common.plot(path.name, lambda s=series, p=path, t=setting:
                               family_plots.plot_by_count(
                                   s, p, title=f'Parity, {t}')):
      print(f'wrote {path}')


if __name__ == '__main__':
  _common.run(main)
