r"""EI-REHN's results, from its run records (``docs/results/records/rehn``).

The experiments (folders of records) this module reads:

* ``rehn/synthetic_<model>``: ``experiments.rehn_synthetic`` (Table 1's
  next-step regression), one record per seed; the final parameters' test
  MSE and the test MSE at the best validation epoch, in units of
  :math:`10^{-3}`;
* ``rehn/har_<model>``: ``experiments.rehn_har`` (Table 2, UCI HAR), one
  record per seed; the test accuracy.

:func:`outputs` gives the page's tables (``rehn/table1.md``,
``rehn/table2.md``: mean ± standard deviation over seeds, every seed
listed, the paper's row beside) and figures (``rehn/table1_curves.svg``:
validation MSE per epoch; ``rehn/table2_curves.svg``: held-out accuracy).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from vcrnn_jax.analysis import records

SYNTHETIC = 'rehn/synthetic_'
HAR = 'rehn/har_'


def _experiments(groups, prefix) -> dict[str, list]:
  return {name[len(prefix):]: runs for name, runs in sorted(groups.items())
          if name.startswith(prefix)}


def _test(run: Mapping[str, Any], key: str) -> Any:
  return records.value(run, f'results.test.{key}')


def _paper(runs) -> Mapping[str, Any] | None:
  return records.value(runs[0], 'results.shared.paper')


def _mean_std(values, digits: int) -> str:
  mean, std, _ = records.mean_std(values)
  return f'{mean:.{digits}f}' + (f' ± {std:.{digits}f}' if std is not None
                                 else '')


def _per_seed(runs, key: str, digits: int, scale: float = 1.0) -> str:
  return ' / '.join(f'{scale * _test(r, key):.{digits}f}' for r in
                    sorted(runs, key=lambda r: r['seed']))


def _settings(runs) -> str:
  """``'2 epochs (74 steps)'``: how long the runs trained."""
  steps = ', '.join(f'{s:,}' for s in sorted({r['steps'] for r in runs}))
  epochs = sorted({r['flags'].get('epochs') for r in runs} - {None})
  if len(epochs) == 1:
    return f'{epochs[0]} epochs ({steps} steps)'
  return f'{steps} steps'


def order_text(models: Mapping[str, list], key: str, what: str, *,
               lower: bool) -> str:
  """The models ordered by their mean ``key`` (best first), beside the
  paper's order of the same models."""
  sign = 1 if lower else -1
  ours = sorted(models, key=lambda n: sign * records.mean_std(
      _test(r, key) for r in models[n])[0])
  paper = {n: (_paper(runs) or {}).get('mean') for n, runs in models.items()}
  rel = ' < ' if lower else ' > '
  text = f'Mean {what}, best first: {rel.join(ours)}'
  if None not in paper.values():
    theirs = sorted(models, key=lambda n: sign * paper[n])
    text += (f'; the paper: {rel.join(theirs)}'
             + (' (the same order)' if theirs == ours else ''))
  return text + '.\n'


def table1(groups) -> str:
  """Table 1 at the recorded size: per model, the test MSE (x 1e-3) of the
  final parameters and at the best validation epoch, over seeds."""
  models = _experiments(groups, SYNTHETIC)
  if not models:
    return ''
  rows = []
  for name, runs in models.items():
    paper = _paper(runs) or {}
    depth = [_test(r, 'mean_depth') for r in runs]
    rows.append([
        name, f'{_test(runs[0], "params")} ({paper.get("params") or "-"})',
        _mean_std([_test(r, 'test_mse_e3') for r in runs], 3),
        _per_seed(runs, 'test_mse_e3', 3),
        _mean_std([_test(r, 'best_test_mse_e3') for r in runs], 3),
        '-' if None in depth else _mean_std(depth, 2),
        '-' if paper.get('mean') is None else (
            f'{paper["mean"]:.2f}' + (f' ± {paper["std"]:.2f}'
                                      if paper.get('std') else '')),
        records.seeds_text(runs), _settings(runs)])
  every = [r for runs in models.values() for r in runs]
  return (records.table(
      ['model', 'params (paper)', 'test MSE', 'per seed', 'at best valid',
       'mean depth', 'paper', 'seeds', 'trained'], rows)
          + '\nTest MSE in units of $10^{-3}$, of the final parameters and '
          'at the epoch of least validation MSE. '
          + records.provenance(every) + '\n\n'
          + order_text(models, 'test_mse_e3', 'test MSE', lower=True))


def table2(groups) -> str:
  """Table 2 at the recorded size: per model, the test accuracy over
  seeds."""
  models = _experiments(groups, HAR)
  if not models:
    return ''
  rows = []
  for name, runs in models.items():
    paper = _paper(runs) or {}
    depth = [_test(r, 'mean_depth') for r in runs]
    rows.append([
        name, f'{_test(runs[0], "params"):,}',
        _mean_std([100 * _test(r, 'test_accuracy') for r in runs], 2) + '%',
        _per_seed(runs, 'test_accuracy', 2, 100.0),
        '-' if None in depth else _mean_std(depth, 2),
        '-' if paper.get('mean') is None else
        f'{paper["mean"]:.2f} ± {paper["std"]:.2f}%',
        records.seeds_text(runs), _settings(runs)])
  every = [r for runs in models.values() for r in runs]
  return (records.table(
      ['model', 'params', 'test accuracy', 'per seed', 'mean depth',
       'paper (100 epochs)', 'seeds', 'trained'], rows)
          + '\n' + records.provenance(every) + '\n\n'
          + order_text(models, 'test_accuracy', 'test accuracy',
                       lower=False))


def _curves(models: Mapping[str, list], key: str) -> dict:
  return {name: records.curve_series(runs, key)
          for name, runs in models.items()}


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            statuses: Mapping[str, Mapping[str, Any]] | None = None
            ) -> list[records.Output]:
  """Every generated EI-REHN file, from the records grouped by experiment."""
  out = []
  synthetic = _experiments(groups, SYNTHETIC)
  if synthetic:
    data = _curves(synthetic, 'valid_mse')
    out += [records.Output('rehn/table1.md', table1(groups)),
            records.Output('rehn/table1_curves.svg', data=data,
                           draw=lambda p: records.draw_curves(
                               data, p, xlabel='training step (thousands)',
                               ylabel='validation MSE (×10⁻³, log scale)',
                               title='Table 1 task, noise variance 0.001: '
                               'validation MSE per seed', log=True,
                               scale=1e3, steps_per_unit=1e3))]
  har = _experiments(groups, HAR)
  if har:
    data = _curves(har, 'test_accuracy')
    out += [records.Output('rehn/table2.md', table2(groups)),
            records.Output('rehn/table2_curves.svg', data=data,
                           draw=lambda p: records.draw_curves(
                               data, p, xlabel='training step',
                               ylabel='held-out accuracy, %',
                               title='UCI HAR: held-out accuracy per seed',
                               scale=100.0))]
  return out
