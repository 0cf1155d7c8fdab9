r"""ACT's results, from its run records (``docs/results/records/act``).

The experiments (folders of records) this module reads:

* ``act/parity``: the main command, ``python -m experiments.act_parity
  --tau=0.01 --seed=S``, each run followed by ``--difficulty_report``
  (its ``difficulty.csv``: error and ponder per number of non-zero bits);
* ``act/parity_noact``: the same network without ACT (``--act=false``).

:func:`outputs` turns them into the fragments the pages and README.md
include (``act/main_command.md``: the headline, mean ± standard deviation
over seeds with every seed listed; ``act/parity_seeds.md``;
``act/parity_difficulty.md``) and two figures: the learning curves of every
seed (``act/parity_curves.svg``) and error and ponder per difficulty
(``act/parity_difficulty.svg``). The paper's claim for this task is a
sequence error below 5% for :math:`\tau \le 0.03` (Graves 2016, Fig. 4).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from vcrnn_jax.analysis import plots, records

MAIN = 'act/parity'
NO_ACT = 'act/parity_noact'
# Graves 2016, Fig. 4: ACT with tau <= 0.03 ends below this sequence error.
PAPER_ERROR = 0.05
DIFFICULTY_BINS = ((1, 8), (9, 16), (17, 24), (25, 32), (33, 40), (41, 48),
                   (49, 56), (57, 64))


def _pct(x: float, digits: int = 1) -> str:
  return f'{100 * x:.{digits}f}%'


def _mean_std_pct(values: Sequence[float]) -> str:
  mean, std, _ = records.mean_std(values)
  return _pct(mean, 2) + (f' ± {_pct(std, 2)}' if std is not None else '')


def _errors(runs: Sequence[Mapping[str, Any]]) -> list[float]:
  return [r['final']['sequence_error'] for r in runs]


def _steps_k(runs: Sequence[Mapping[str, Any]]) -> str:
  steps = sorted({r['steps'] for r in runs})
  return ' / '.join(f'{s // 1000}k' for s in steps)


def _machine(runs: Sequence[Mapping[str, Any]]) -> str:
  m, v = runs[0]['machine'], runs[0]['versions']
  return (f'{m["name"]} ({m["cores"]} cores, {m["cpu"]}; Python '
          f'{v["python"]}, jax {v["jax"]}, flax {v["flax"]}, optax '
          f'{v["optax"]})')


def _error_at(run: Mapping[str, Any], step: int) -> float | None:
  for point in run['curve']:
    if point['step'] == step:
      return point['sequence_error']
  return None


def main_command_text(main: Sequence[Mapping[str, Any]],
                      no_act: Sequence[Mapping[str, Any]]) -> str:
  """The headline of README.md and getting started: the main command's
  seeds (mean ± std, every seed listed), its wall time and the baseline."""
  errors = _errors(main)
  ponder = [r['final']['ponder'] for r in main]
  walls = [r['wall_s'] for r in main if r.get('wall_s') is not None]
  above = [r for r in main if r['final']['sequence_error'] >= PAPER_ERROR]
  text = (
      f'On {_machine(main)}, {len(main)} runs of this command '
      f'({records.seeds_text(main)}) end after {_steps_k(main)} steps at '
      f'**{_mean_std_pct(errors)}** sequence error (mean ± standard '
      f'deviation; per seed '
      + ' / '.join(_pct(e) for e in errors)
      + f') and ponder {records.mean_std(ponder)[0]:.2f} '
      f'(± {records.mean_std(ponder)[1] or 0:.2f}).')
  if above:
    text += (' ' + ', '.join(f'Seed {r["seed"]} ends at '
                             f'{_pct(r["final"]["sequence_error"])}'
                             for r in above)
             + f', at or above the paper\'s {_pct(PAPER_ERROR, 0)}.')
  else:
    text += (f' Every seed is below the paper\'s {_pct(PAPER_ERROR, 0)} '
             '(Graves 2016, Fig. 4).')
  if walls:
    text += (f' Training took {min(walls):.0f}-{max(walls):.0f} s a seed '
             '(compilation included) on a machine shared with other jobs, '
             'so these are upper bounds.')
  if no_act:
    text += (f' The same network without ACT (`--act=false`, '
             f'{_steps_k(no_act)} steps, {records.seeds_text(no_act)}) stays '
             f'at {_mean_std_pct(_errors(no_act))}.')
  return text + '\n'


def headline_text(main: Sequence[Mapping[str, Any]],
                  no_act: Sequence[Mapping[str, Any]]) -> str:
  """One line for BUILD_NOTES: the main command's mean ± std and the
  baseline's."""
  ponder = records.mean_std(r['final']['ponder'] for r in main)
  text = (f'Parity, 64 bits, `python -m experiments.act_parity --tau=0.01`, '
          f'{_steps_k(main)} steps, {records.seeds_text(main)}: '
          f'{_mean_std_pct(_errors(main))} sequence error (ponder '
          f'{ponder[0]:.2f} ± {ponder[1] or 0:.2f}; at commit '
          f'{main[0]["commit"][:7]} on {main[0]["machine"]["name"]})')
  if no_act:
    text += (f'; without ACT ({_steps_k(no_act)} steps, '
             f'{records.seeds_text(no_act)}): {_mean_std_pct(_errors(no_act))}')
  return text + '.\n'


def seeds_table(main: Sequence[Mapping[str, Any]]) -> str:
  """Per seed: the error at a third, two thirds and the end of training,
  the final ponder, the wall time and the rate; then mean ± std."""
  last = max(r['steps'] for r in main)
  # The evaluations nearest a third, two thirds and the end of training.
  steps = sorted({p['step'] for p in main[0]['curve']})
  marks = list(dict.fromkeys(min(steps, key=lambda s, t=t: abs(s - t))
                             for t in (last / 3, 2 * last / 3, last)))
  header = (['seed'] + [f'error at {m // 1000}k' for m in marks]
            + ['ponder', 'wall', 'steps/s (last interval)'])
  rows = []
  for r in sorted(main, key=lambda r: r['seed']):
    at = [_error_at(r, m) for m in marks]
    rows.append([r['seed']] + ['-' if a is None else _pct(a) for a in at]
                + [f'{r["final"]["ponder"]:.3f}',
                   '-' if r.get('wall_s') is None else f'{r["wall_s"]:.0f} s',
                   f'{r["final"]["steps_per_sec"]:.0f}'])
  means = []
  for m in marks:
    values = [_error_at(r, m) for r in main]
    means.append(_mean_std_pct(values) if None not in values else '-')
  ponder = records.mean_std(r['final']['ponder'] for r in main)
  walls = [r['wall_s'] for r in main if r.get('wall_s') is not None]
  rows.append(['mean ± std'] + means + [
      f'{ponder[0]:.3f} ± {ponder[1] or 0:.3f}',
      f'{records.mean_std(walls)[0]:.0f} s' if walls else '-', ''])
  return (records.table(header, rows) + '\n'
          + records.provenance(main) + '\n')


def _difficulty_rows(run: Mapping[str, Any]) -> list[dict]:
  return run.get('tables', {}).get('difficulty', [])


def difficulty_table(main: Sequence[Mapping[str, Any]]) -> str:
  """Error and ponder per band of non-zero bits: the mean over the band's
  difficulties, then mean ± std over seeds (Graves 2016, Fig. 6)."""
  runs = [r for r in main if _difficulty_rows(r)]
  if not runs:
    return ''
  rows = []
  for lo, hi in DIFFICULTY_BINS:
    def band(run, key, lo=lo, hi=hi):
      xs = [d[key] for d in _difficulty_rows(run) if lo <= d['difficulty']
            <= hi]
      return sum(xs) / len(xs) if xs else None
    errors = [band(r, 'sequence_error') for r in runs]
    ponders = [band(r, 'ponder') for r in runs]
    if None in errors:
      continue
    p = records.mean_std(ponders)
    rows.append([f'{lo}-{hi}', _mean_std_pct(errors),
                 f'{p[0]:.3f} ± {p[1] or 0:.3f}',
                 ' / '.join(_pct(e) for e in errors)])
  count = len(_difficulty_rows(runs[0]))
  return (records.table(['non-zero bits', 'sequence error', 'ponder',
                         'error per seed'], rows)
          + f'\n{count} difficulties, each on 1,000 held-out vectors per '
          'seed (`--difficulty_report`). ' + records.provenance(runs) + '\n')


def curves_data(main, no_act) -> dict:
  """The learning curves drawn: per run, ``[step, sequence error]``."""
  def series(runs, label):
    return {f'{label} seed {r["seed"]}': [[p['step'], p['sequence_error']]
                                          for p in r['curve']]
            for r in sorted(runs, key=lambda r: r['seed'])}
  return {'act': series(main, 'ACT'), 'no_act': series(no_act, 'no ACT'),
          'threshold': PAPER_ERROR}


def draw_curves(data: Mapping[str, Any], path):
  fig = plots.new_figure((7.5, 4.2))
  ax = fig.subplots()
  for label, points in data['act'].items():
    ax.plot([s / 1000 for s, _ in points], [100 * e for _, e in points],
            label=label, linewidth=1.3)
  for i, points in enumerate(data['no_act'].values()):
    ax.plot([s / 1000 for s, _ in points], [100 * e for _, e in points],
            '--', color='0.45', linewidth=1.0,
            label='no ACT' if i == 0 else None)
  ax.axhline(100 * data['threshold'], color='black', linewidth=0.8,
             linestyle=':', label='the paper\'s 5%')
  # Symmetric log: a seed at 0% stays on the plot.
  ax.set_yscale('symlog', linthresh=0.1, linscale=0.5)
  ax.set_ylim(0, 100)
  ax.set_xlabel('training step (thousands)')
  ax.set_ylabel('sequence error, % (log scale above 0.1%)')
  ax.set_title('Parity, 64 bits, τ = 0.01: held-out sequence error per seed')
  ax.grid(alpha=0.3, which='both')
  ax.legend(fontsize=8, ncol=2)
  return records.save_svg(fig, path)


def difficulty_data(main) -> dict:
  """Per seed, ``[difficulty, sequence error, ponder]``."""
  return {f'seed {r["seed"]}': [[d['difficulty'], d['sequence_error'],
                                 d['ponder']] for d in _difficulty_rows(r)]
          for r in sorted(main, key=lambda r: r['seed'])
          if _difficulty_rows(r)}


def draw_difficulty(data: Mapping[str, Any], path):
  fig = plots.new_figure((10.0, 3.8))
  axes = fig.subplots(1, 2)
  for label, rows in data.items():
    bits = [r[0] for r in rows]
    axes[0].plot(bits, [100 * r[1] for r in rows], label=label, linewidth=1.1)
    axes[1].plot(bits, [r[2] for r in rows], label=label, linewidth=1.1)
  axes[0].set_ylabel('sequence error, %')
  axes[0].set_title('Error per difficulty')
  axes[1].set_ylabel('ponder (steps per input)')
  axes[1].set_title('Ponder per difficulty')
  for ax in axes:
    ax.set_xlabel('number of non-zero bits')
    ax.grid(alpha=0.3)
  axes[0].legend(fontsize=8)
  return records.save_svg(fig, path)


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            statuses: Mapping[str, Mapping[str, Any]] | None = None
            ) -> list[records.Output]:
  """Every generated ACT file, from the records grouped by experiment
  (:func:`vcrnn_jax.analysis.records.read_records`)."""
  main, no_act = groups.get(MAIN, []), groups.get(NO_ACT, [])
  if not main:
    return []
  curves = curves_data(main, no_act)
  out = [records.Output('act/main_command.md',
                        main_command_text(main, no_act)),
         records.Output('act/headline.md', headline_text(main, no_act)),
         records.Output('act/parity_seeds.md', seeds_table(main)),
         records.Output('act/parity_curves.svg', data=curves,
                        draw=lambda p: draw_curves(curves, p))]
  if no_act:
    out.append(records.Output('act/parity_noact.md', seeds_table(no_act)))
  diff = difficulty_table(main)
  if diff:
    data = difficulty_data(main)
    out += [records.Output('act/parity_difficulty.md', diff),
            records.Output('act/parity_difficulty.svg',
                           draw=lambda p: draw_difficulty(data, p),
                           data=data)]
  return out
