r"""Logic, addition and sort (Graves 2016, Secs. 3.2-3.4), from their records.

Each task's records live in folders named ``act/<task>_<setting>`` (for
example ``act/logic_tau0.001``, ``act/logic_noact``,
``act/addition_d3n3_tau0.01``); the setting is read from each record's flags,
never from the folder name: ACT or not, ``tau``, and the task's size flags
(:data:`TASKS`). Runs of one size and one setting are pooled over folders.

For each task with records, :func:`outputs` writes

* ``act/<task>.md``: per size and setting, the final sequence error of every
  seed, its mean, the ponder and the slope of ponder per unit of difficulty
  (the task's ``difficulty.csv``);
* ``act/<task>_verdicts.md``: the paper's claims for the task, each decided
  by a criterion of :mod:`experiments.reports.verdicts` printed beside it;
* ``act/<task>_difficulty.svg``: sequence error and ponder against the
  difficulty of the paper's Figs. 10, 14 and 19, one line per seed.

:func:`summary_rows` gives the rows of the ACT summary these claims fill.
"""

from collections.abc import Mapping, Sequence
import dataclasses
from typing import Any

from experiments.reports import plots, records, verdicts, verify

__all__ = [
    'Task',
    'TASKS',
    'LOGIC_ZERO',
    'LOGIC_TAU',
    'ponder_slope',
    'INERT_PONDER',
    'inert',
    'settings',
    'task_table',
    'task_verdicts',
    'summary_rows',
    'difficulty_data',
    'draw_difficulty',
    'outputs',
]


@dataclasses.dataclass(frozen=True)
class Task:
  """What the pages say about one task.

  Attributes:
    name: the task, and the start of its record folders (``act/<name>_``).
    section: the paper's section and error figure.
    size_flags: the flags that set the task's and the network's size.
    difficulty: what the difficulty report's x axis counts.
    unit: one unit of that count, for the slope's column.
    difficulty_figure: the paper's figure of ponder per difficulty.
  """
  name: str
  section: str
  size_flags: tuple[str, ...]
  difficulty: str
  unit: str
  difficulty_figure: str


TASKS = (
    Task('logic', 'Sec. 3.2, Fig. 8', ('hidden_size', 'num_gates', 'max_len'),
         'logic gates per vector', 'gate', 'Fig. 10'),
    Task('addition', 'Sec. 3.3, Fig. 12',
         ('hidden_size', 'max_digits', 'max_len'), 'digits per number',
         'digit', 'Fig. 14'),
    Task('sort', 'Sec. 3.4, Fig. 17', ('hidden_size', 'min_len', 'max_len'),
         'numbers to sort', 'number',
         'Fig. 19'),
)
# Graves 2016, Fig. 8: "virtually zero error for all tau <= 0.01" on logic;
# a public reproduction reports 0-0.2%. Our bound for "virtually zero".
LOGIC_ZERO = 0.01
LOGIC_TAU = 0.01
# Ponder growth (Figs. 10, 14, 19) is read over the difficulties a run
# solves, below the parity verdicts' 5% (results.SOLVED_ERROR): where a
# network fails, its ponder says nothing about how its computation scales.
SOLVED_ERROR = 0.05


def _pct(x: float) -> str:
  return f'{100 * x:.1f}%'


def _error(run: Mapping[str, Any]) -> float:
  return run['final']['sequence_error']


def _difficulty_rows(run: Mapping[str, Any]) -> list[dict]:
  return run.get('tables', {}).get('difficulty', [])


def ponder_slope(run: Mapping[str, Any],
                 max_error: float | None = None) -> float | None:
  """The least-squares slope of ponder against difficulty in the run's
  difficulty report (steps per unit of difficulty); None without one.
  With ``max_error``, only over the difficulties whose sequence error is
  below it (None when fewer than two are)."""
  rows = [d for d in _difficulty_rows(run)
          if max_error is None or d['sequence_error'] < max_error]
  if len(rows) < 2:
    return None
  xs = [d['difficulty'] for d in rows]
  ys = [d['ponder'] for d in rows]
  mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
  sxx = sum((x - mx) ** 2 for x in xs)
  return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def _span(run: Mapping[str, Any]) -> int | None:
  xs = [d['difficulty'] for d in _difficulty_rows(run)]
  return max(xs) - min(xs) if len(xs) > 1 else None


def _folders(groups, task: Task, exclude: Sequence[str]) -> list[str]:
  return sorted(name for name in groups
                if name.startswith(f'act/{task.name}_')
                and name not in exclude)


def _size(run: Mapping[str, Any], task: Task) -> tuple:
  flags = run.get('flags', {})
  return tuple((f, flags.get(f)) for f in task.size_flags)


def _setting(run: Mapping[str, Any]) -> float | None:
  """tau, or None for the network without ACT."""
  flags = run.get('flags', {})
  return float(flags['tau']) if flags.get('act', True) else None


def settings(groups: Mapping[str, Sequence[Mapping[str, Any]]], task: Task,
             exclude: Sequence[str] = ()
             ) -> dict[tuple, dict[float | None, list]]:
  """size -> setting (tau; None: no ACT) -> records, over every folder of
  ``task`` not in ``exclude``; each list in seed order."""
  out: dict[tuple, dict[float | None, list]] = {}
  for name in _folders(groups, task, exclude):
    for run in groups[name]:
      out.setdefault(_size(run, task), {}).setdefault(
          _setting(run), []).append(run)
  for by_setting in out.values():
    for runs in by_setting.values():
      runs.sort(key=lambda r: r['seed'])
  return out


def _by_size(groups, task: Task, exclude: Sequence[str]) -> list:
  """:func:`settings` as ``(size, by_setting)`` pairs in a stable order."""
  return sorted(settings(groups, task, exclude).items(),
                key=lambda kv: str(kv[0]))


def _size_text(size: tuple) -> str:
  return ' '.join(f'`--{f}={v}`' for f, v in size)


def _setting_text(tau: float | None) -> str:
  return '`--act=false`' if tau is None else f'`--tau={tau:g}`'


def _ordered(by_setting):
  """No ACT first, then tau ascending."""
  return sorted(by_setting.items(),
                key=lambda kv: (kv[0] is not None, kv[0] or 0.0))


def _solved_slope(run: Mapping[str, Any]) -> float | None:
  return ponder_slope(run, max_error=SOLVED_ERROR)


def _slope_text(runs, slope=ponder_slope) -> str:
  slopes = [s for s in map(slope, runs) if s is not None]
  if not slopes:
    return '-'
  return verdicts.mean_interval_text(slopes, lambda x: f'{x:.3f}')


def task_table(groups, task: Task, statuses=None,
               exclude: Sequence[str] = ()) -> str:
  """Per size and setting: seeds, steps, final sequence error (mean ± std
  and every seed), ponder, and the slope of ponder per unit of
  difficulty."""
  rows, everything = [], []
  for size, by_setting in _by_size(groups, task, exclude):
    for tau, runs in _ordered(by_setting):
      errors = [_error(r) for r in runs]
      mean, std, _ = records.mean_std(errors)
      ponder = records.mean_std(r['final'].get('ponder', 1.0) for r in runs)
      steps = ' / '.join(f'{s:,}' for s in sorted({r['steps'] for r in runs}))
      rows.append([_size_text(size), _setting_text(tau),
                   records.seeds_text(runs), steps,
                   _pct(mean) + (f' ± {_pct(std)}' if std is not None
                                 else ''),
                   ' / '.join(_pct(e) for e in errors),
                   f'{ponder[0]:.2f}' if tau is not None else '1 (fixed)',
                   _slope_text(runs) if tau is not None else '-',
                   _slope_text(runs, _solved_slope) if tau is not None
                   else '-'])
      everything += runs
  if not rows:
    return 'No record yet.\n'
  status = ' '.join(
      f'`{name}`: {verify.status_line(name, groups[name], statuses or {})}'
      for name in _folders(groups, task, exclude))
  return (records.table(
      ['size', 'setting', 'seeds', 'steps', 'sequence error', 'per seed',
       'ponder', f'ponder per {task.unit} (slope)',
       f'the same over the {task.difficulty} solved (below '
       f'{_pct(SOLVED_ERROR)})'], rows)
          + '\n' + records.provenance(everything) + ' ' + status + '\n')


def _paired(act_runs, no_act_runs):
  by_seed = {r['seed']: _error(r) for r in no_act_runs}
  shared = [r for r in act_runs if r['seed'] in by_seed]
  return [_error(r) for r in shared], [by_seed[r['seed']] for r in shared]


# Ponder that moves less than this across a run's difficulty report is
# flat: the halting unit stops at the same step for every input.
INERT_PONDER = 0.05


def inert(runs) -> bool:
  """Whether every run's ponder is the same (within
  :data:`INERT_PONDER`) at every difficulty of its report: a halting unit
  that does not respond to the input cannot show growth."""
  spans = []
  for run in runs:
    ponders = [d['ponder'] for d in _difficulty_rows(run)
               if d.get('ponder') is not None]
    if not ponders:
      return False
    spans.append(max(ponders) - min(ponders))
  return bool(spans) and max(spans) < INERT_PONDER


# A slope of ponder needs this many solved difficulties: through two
# points any two ponders make a slope.
MIN_SOLVED = 3


def _solved(run) -> int:
  return sum(d['sequence_error'] < SOLVED_ERROR
             for d in _difficulty_rows(run))


def _growth(runs, task: Task) -> verdicts.Verdict:
  slopes = [_solved_slope(r) for r in runs if _solved(r) >= MIN_SOLVED]
  spans = [s for s in map(_span, runs) if s]
  minimum = 1 / max(spans) if spans else 0.0
  v = verdicts.exceeds(
      slopes, claim=f'ponder grows with the {task.difficulty} (least-squares '
      f'slope over the {task.difficulty} the run solves, below '
      f'{_pct(SOLVED_ERROR)} error each, in its difficulty report, over the '
      f'seeds that solve {MIN_SOLVED} or more; above one step across the '
      'report\'s range)', minimum=minimum,
      fmt=lambda x: f'{x:.3f}')
  if len(runs) < verdicts.MIN_SEEDS:
    return v
  if inert(runs):
    return verdicts.not_testable(
        v.criterion, f'the ponder is the same at every {task.difficulty} on '
        'every seed: the halting unit is inert at this τ')
  if len(slopes) < verdicts.MIN_SEEDS:
    return verdicts.not_testable(
        v.criterion, f'{len(slopes)} of {len(runs)} seeds solve '
        f'{MIN_SOLVED} or more {task.difficulty}, the least a slope needs: '
        f'fewer than {verdicts.MIN_SEEDS}')
  return v


def _rows(task: Task, size: tuple, by_setting,
          growth: bool = True) -> list[list[str]]:
  """The verdict rows of one size: the error claim per tau, then (with
  ``growth``) ponder growth per tau."""
  rows, where = [], _size_text(size)
  no_act = by_setting.get(None, [])
  for tau, runs in _ordered(by_setting):
    if tau is None:
      continue
    if task.name == 'logic' and tau <= LOGIC_TAU:
      v = verdicts.below([_error(r) for r in runs], LOGIC_ZERO,
                         what='sequence error', fmt=verdicts.pct)
      rows.append([f'{task.name}, τ = {tau:g}: virtually zero error '
                   f'({where})', task.section, *v.cells()])
    if no_act:
      a, b = _paired(runs, no_act)
      v = verdicts.paired(a, b, claim='ACT ends below the '
                          'same network without ACT', fmt=verdicts.pct)
      rows.append([f'{task.name}, τ = {tau:g}: ACT improves the error '
                   f'({where})', task.section, *v.cells()])
  for tau, runs in _ordered(by_setting) if growth else ():
    if tau is not None and any(_difficulty_rows(r) for r in runs):
      rows.append([f'{task.name}, τ = {tau:g}: ponder grows by more than one '
                   f'step across the {task.difficulty} ({where})',
                   task.difficulty_figure,
                   *_growth(runs, task).cells()])
  return rows


def _verdict_rows(groups, task: Task, exclude: Sequence[str],
                  growth: bool = True) -> list[list[str]]:
  return [row for size, by_setting in _by_size(groups, task, exclude)
          for row in _rows(task, size, by_setting, growth)]


def task_verdicts(groups, task: Task, exclude: Sequence[str] = ()) -> str:
  """The task's claims, each by its criterion: logic's error bound for tau
  <= :data:`LOGIC_TAU`, ACT against no ACT by seed, and ponder growing
  with difficulty."""
  rows = _verdict_rows(groups, task, exclude)
  if not rows:
    return 'No record yet.\n'
  return verdicts.claims_table(['claim', 'the paper', 'verdict', 'here',
                                'criterion'], rows)


def summary_rows(groups, exclude: Sequence[str] = ()) -> dict[str,
                                                             list[list[str]]]:
  """Task name -> the verdict rows of its error claims, for every task
  with records (ponder growth stays on the task's own table)."""
  out = {}
  for task in TASKS:
    rows = _verdict_rows(groups, task, exclude, growth=False)
    if rows:
      out[task.name] = rows
  return out


def difficulty_data(groups, task: Task, exclude: Sequence[str] = ()
                    ) -> dict:
  """Per size and setting, per seed: ``[difficulty, error, ponder]``."""
  data = {}
  for size, by_setting in _by_size(groups, task, exclude):
    for tau, runs in _ordered(by_setting):
      label = ('no ACT' if tau is None else f'τ = {tau:g}') + ', ' + ' '.join(
          f'{f}={v}' for f, v in size)
      series = {f'seed {r["seed"]}': [[d['difficulty'], d['sequence_error'],
                                       d['ponder']]
                                      for d in _difficulty_rows(r)]
                for r in runs if _difficulty_rows(r)}
      if series:
        data[label] = series
  return data


def draw_difficulty(data: Mapping[str, Any], title: str, xlabel: str, path):
  """Error (left) and ponder (right) against difficulty; one colour per
  setting, one line per seed."""
  fig = plots.new_figure((10.0, 3.8))
  axes = fig.subplots(1, 2)
  for i, (label, series) in enumerate(data.items()):
    for j, rows in enumerate(series.values()):
      xs = [r[0] for r in rows]
      kw = dict(color=f'C{i}', linewidth=1.0, alpha=0.8,
                label=label if j == 0 else None)
      axes[0].plot(xs, [100 * r[1] for r in rows], **kw)
      axes[1].plot(xs, [r[2] for r in rows], **kw)
  axes[0].set_ylabel('sequence error, %')
  axes[1].set_ylabel('ponder (steps per input)')
  for ax in axes:
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3)
  axes[0].set_title(f'{title}: error per difficulty')
  axes[1].set_title(f'{title}: ponder per difficulty')
  # Error rises with difficulty: the upper left stays clear.
  axes[0].legend(fontsize=7, loc='upper left')
  return records.save_svg(fig, path)


def outputs(groups, statuses=None, exclude: Sequence[str] = ()
            ) -> list[records.Output]:
  """Every task's table and verdicts (``No record yet.`` without records),
  and its difficulty figure once a run has a difficulty report."""
  out = []
  for task in TASKS:
    out += [records.Output(f'act/{task.name}.md',
                           task_table(groups, task, statuses, exclude)),
            records.Output(f'act/{task.name}_verdicts.md',
                           task_verdicts(groups, task, exclude))]
    data = difficulty_data(groups, task, exclude)
    if data:
      out.append(records.Output(
          f'act/{task.name}_difficulty.svg', data=data,
          draw=lambda p, d=data, t=task: draw_difficulty(
              d, t.name.capitalize(), t.difficulty, p)))
  return out
