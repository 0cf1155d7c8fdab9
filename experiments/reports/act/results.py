r"""ACT's results, from its run records (``docs/results/records/act``).

The experiments (folders of records) this module reads:

* ``act/parity``: the main command, ``python -m experiments.act_parity
  --tau=0.01 --seed=S``, each run followed by ``--difficulty_report``
  (its ``difficulty.csv``: error and ponder per number of non-zero bits);
* ``act/parity_noact``: the same network without ACT (``--act=false``);
* ``act/parity_avx2``: the main command with XLA limited to AVX2 on the
  same machine, and ``act/parity_older``: the main command's records made
  by older code; each against ``act/parity``, seed by seed;
* ``act/addition_h200``: ACT addition at the paper's size on a GPU, for
  the minutes a device lease allows (``act/addition_h200.md``: its curve);
* ``act/parity_tau<tau>`` (:data:`SWEEP_PREFIX`): the main command at
  another ``--tau``, each run with its difficulty report; with
  ``act/parity`` (tau 0.01) and ``act/parity_noact`` they are the sweep of
  Figs. 4-6 (``act/tau_sweep.md``, ``act/tau_sweep.svg``).

:func:`outputs` turns them into the fragments the pages and README.md
include (``act/main_command.md``: the headline, mean ± standard deviation
over seeds with every seed listed; ``act/parity_seeds.md``;
``act/parity_difficulty.md``) and two figures: the learning curves of every
seed (``act/parity_curves.svg``) and error and ponder per difficulty
(``act/parity_difficulty.svg``). The paper's claim for this task is a
sequence error below 5% for :math:`\tau \le 0.03` (Graves 2016, Fig. 4).
"""

from collections.abc import Mapping, Sequence
import statistics
from typing import Any

from experiments.reports import plots, records, verdicts, verify
from experiments.reports.act import task_claims, wikipedia

__all__ = [
    'PAPER_LR_PREFIX',
    'paper_lr_groups',
    'MAIN',
    'NO_ACT',
    'AVX2',
    'OLDER',
    'ADDITION_GPU',
    'PAPER_ERROR',
    'PAPER_NO_ACT',
    'GROWTH_SLOPE',
    'SOLVED_ERROR',
    'FLAT_PREFIXES',
    'UNRECORDED',
    'DIFFICULTY_BINS',
    'main_command_text',
    'same_code',
    'bound_verdict',
    'sweep_bound_verdict',
    'difficulty_slope',
    'solved_slope',
    'solving',
    'summary_text',
    'twin_row',
    'headline_text',
    'curve_table',
    'seeds_table',
    'difficulty_table',
    'curves_data',
    'difficulty_data',
    'SWEEP_PREFIX',
    'SWEEP_BOUND_TAU',
    'sweep_groups',
    'sweep_table',
    'flat_groups',
    'flat_table',
    'flat_difficulty_data',
    'sweep_verdicts',
    'sweep_data',
    'sweep_difficulty_data',
    'draw_sweep_difficulty',
    'draw_sweep',
    'outputs',
]

MAIN = 'act/parity'
NO_ACT = 'act/parity_noact'
# The main command with XLA restricted to AVX2 (``XLA_FLAGS=
# --xla_cpu_max_isa=AVX2``) on the same machine: what another CPU moves.
AVX2 = 'act/parity_avx2'
# The main command's records made by older code: what a rounding-level
# change of the code moves.
OLDER = 'act/parity_older'
# ACT addition at the paper's size (LSTM-512, M 20) on a GPU, for as many
# updates as a short device lease allows: a throughput and early-learning
# record, not a result (the paper trains 16M updates).
ADDITION_GPU = 'act/addition_h200'
# Graves 2016, Fig. 4: ACT with tau <= 0.03 ends below this sequence error.
PAPER_ERROR = 0.05
# Graves 2016, Sec. 3.1: without ACT the error is "almost 40%".
PAPER_NO_ACT = 0.40
# Graves 2016, Fig. 6: ponder "appears to grow linearly with difficulty" at
# intermediate tau. Our criterion for "grows": at least one more step from
# 1 to 64 non-zero bits, a slope of 1/63 step per bit.
GROWTH_SLOPE = 1 / 63
# Fig. 6 speaks of "the more successful networks": growth is read over the
# numbers of bits a run solves (sequence error below this at that number),
# so that ponder jumping where a network fails to chance does not count.
SOLVED_ERROR = PAPER_ERROR
# The tau sweep's folders: ``act/parity_tau1e-3`` and so on; tau is read
# from each record's flags, not from the name.
SWEEP_PREFIX = 'act/parity_tau'
# The flat-ponder runs: the main command at one tau with one training
# setting changed, the learning rate (``act/parity_lr1e-4_tau0.01``) or the
# reading of the data (``act/parity_random_tau0.01``), for a million updates.
FLAT_PREFIXES = {'act/parity_lr': 'learning rate',
                 'act/parity_random': 'the reading of the data'}
# Fig. 6 at the paper's learning rate: the main command with
# ``--learning_rate=0.0001`` for a million updates, at several tau
# (``act/parity_lr1e-4_tau0.001`` and so on), judged like the tau sweep.
PAPER_LR_PREFIX = 'act/parity_lr1e-4_tau'
# Graves 2016, Fig. 4: the bound holds "for tau <= 0.03".
SWEEP_BOUND_TAU = 0.03
# The paper's claims without a record here (Secs. 3.2-3.5); a task's row
# gives way to its verdicts (:mod:`task_claims`) once it has records.
UNRECORDED = (
    ('logic: virtually zero error for $\\tau \\le 0.01$, about 20% '
     'without ACT', 'Sec. 3.2, Fig. 8', 'no run with ACT is recorded (those '
     'without ACT are in the logic table below; a typed single run with ACT '
     'is in the history appendix)'),
    ('addition: ACT improves the error', 'Sec. 3.3, Fig. 12',
     'typed single runs at a reduced size (the notebook\'s history)'),
    ('sort: ACT improves the error', 'Sec. 3.4, Fig. 17',
     'typed single runs at a reduced size (the notebook\'s history)'),
    ('Wikipedia: ponder tracks the text\'s structure', 'Sec. 3.5',
     'no record of the planned act/wikipedia_* runs yet'),
)
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


def _lr(runs: Sequence[Mapping[str, Any]]) -> str:
  rates = sorted({r.get('flags', {}).get('learning_rate') for r in runs},
                 key=str)
  return ' / '.join('?' if x is None else f'{x:g}' for x in rates)


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
                      no_act: Sequence[Mapping[str, Any]],
                      statuses: Mapping[str, Mapping[str, Any]] | None = None,
                      avx2: Sequence[Mapping[str, Any]] = (),
                      avx2_base: Sequence[Mapping[str, Any]] | None = None
                      ) -> str:
  """The headline of README.md and getting started: the main command's
  seeds (mean with its 95% interval, every seed listed), the verdict on the
  paper's bound by its criterion, the wall time and the baseline; what the
  AVX2 twin moves against ``avx2_base`` (the records of its code; None:
  ``main``); and, when ``experiments.verify`` found the records stale,
  that."""
  if avx2_base is None:
    avx2_base = main
  errors = _errors(main)
  ponder = [r['final']['ponder'] for r in main]
  walls = [r['wall_s'] for r in main if r.get('wall_s') is not None]
  below = sum(e < PAPER_ERROR for e in errors)
  verdict = bound_verdict(main)
  text = (
      f'On {_machine(main)}, {len(main)} runs of this command '
      f'({records.seeds_text(main)}) end after {_steps_k(main)} steps at '
      f'**{_mean_std_pct(errors)}** sequence error (mean ± standard '
      f'deviation; 95% interval of the mean '
      f'{_interval_pct(errors)}; per seed '
      + ' / '.join(_pct(e) for e in errors)
      + f') and ponder {records.mean_std(ponder)[0]:.2f} '
      f'(± {records.mean_std(ponder)[1] or 0:.2f}). {below} of '
      f'{len(errors)} seeds end below the paper\'s {_pct(PAPER_ERROR, 0)} '
      f'(Graves 2016, Fig. 4); verdict: **{verdict.label}** '
      f'({verdict.criterion}).')
  if walls:
    text += (f' Training took {min(walls):.0f}-{max(walls):.0f} s a seed '
             f'(compilation included) on {_machine_load_text(main)}.')
  if no_act:
    text += (f' The same network without ACT (`--act=false`, '
             f'{_steps_k(no_act)} steps, {records.seeds_text(no_act)}) stays '
             f'at {_mean_std_pct(_errors(no_act))}.')
  if avx2 and avx2_base:
    text += ' ' + _isa_sentence(avx2, avx2_base)
  entry = (statuses or {}).get(MAIN)
  if entry and entry['status'] == 'stale':
    text += ' ' + verify.status_line(MAIN, main, statuses)
  return text + '\n'


def same_code(twins: Sequence[Mapping[str, Any]],
              *candidates: Sequence[Mapping[str, Any]]
              ) -> Sequence[Mapping[str, Any]]:
  """The first of ``candidates`` made at the commit of ``twins``, or ().

  A twin changes one thing (the instruction set) against records of the
  same code; paired with records of another commit it would also measure
  the code's change.
  """
  commits = {r['commit'] for r in twins}
  for runs in candidates:
    if runs and {r['commit'] for r in runs} == commits:
      return runs
  return ()


def _isa_sentence(avx2, main) -> str:
  """What limiting XLA to AVX2 on the same machine did to the seeds: from
  the records, whether any evaluation moved."""
  ours, base = _paired_by_seed(avx2, main, lambda r: r)
  seeds = ', '.join(str(r['seed']) for r in ours)
  commit = ours[0]['commit'][:7] if ours else '?'
  moved = [x for x, y in zip(ours, base) if _first_diverging(x, y)]
  if not moved:
    return (f'Limiting XLA\'s code to AVX2 on the same machine '
            f'(`XLA_FLAGS=--xla_cpu_max_isa=AVX2`) changed nothing: seeds '
            f'{seeds} at commit {commit}, run both ways, give every '
            'evaluation to the digits recorded (the cap '
            'governs the code XLA generates, not the library kernels it '
            'calls; docs/results/act.md).')
  return (f'A seed\'s end point depends on the instruction set: with XLA '
          f'limited to AVX2 on the same machine, seeds {seeds} end at '
          + ' / '.join(_pct(x['final']['sequence_error']) for x in ours)
          + ' instead of '
          + ' / '.join(_pct(y['final']['sequence_error']) for y in base)
          + ' (docs/results/act.md).')


def _interval_pct(values: Sequence[float]) -> str:
  _, lo, hi, _ = verdicts.rate_interval(values)
  return f'{_pct(lo, 2)} to {_pct(hi, 2)}'


def bound_verdict(main: Sequence[Mapping[str, Any]]) -> verdicts.Verdict:
  """Fig. 4's bound on the main command's seeds."""
  return verdicts.below(_errors(main), PAPER_ERROR,
                        what='sequence error', fmt=verdicts.pct)


def difficulty_slope(run: Mapping[str, Any]) -> float | None:
  """The least-squares slope of ponder against the number of non-zero bits
  in the run's difficulty report (steps per bit); None without one."""
  return task_claims.ponder_slope(run)


def _slope_fmt(x: float) -> str:
  return f'{x:.4f}'


def solved_slope(run: Mapping[str, Any]) -> float | None:
  """:func:`difficulty_slope` over the numbers of bits the run solves
  (sequence error below ``SOLVED_ERROR``), the slope Fig. 6's verdicts
  judge; None with fewer than two such numbers."""
  return task_claims.ponder_slope(run, max_error=SOLVED_ERROR)


def solving(runs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
  """The runs that solve parity: final sequence error below
  ``SOLVED_ERROR`` (Fig. 6 draws "the more successful networks")."""
  return [r for r in runs if r['final']['sequence_error'] < SOLVED_ERROR]


def _growth_verdict(runs) -> verdicts.Verdict:
  """Fig. 6's growth over the seeds that solve: a failing seed's ponder
  says nothing of how a solution spends its steps."""
  claim = ('ponder grows with the number of non-zero bits (slope of ponder '
           'per bit, least squares over the numbers of bits the run solves '
           f'in its difficulty report, over the seeds that solve parity: '
           f'final sequence error below {_pct(SOLVED_ERROR, 0)}; above one '
           'step across 1-64 bits)')
  good = solving(runs)
  slopes = [s for s in map(solved_slope, good) if s is not None]
  v = verdicts.exceeds(slopes, claim=claim, minimum=GROWTH_SLOPE,
                       fmt=_slope_fmt)
  if len(runs) >= verdicts.MIN_SEEDS and len(slopes) < verdicts.MIN_SEEDS:
    return verdicts.not_testable(
        v.criterion, f'{len(good)} of {len(runs)} seeds solve parity, '
        f'{len(slopes)} of them over two or more numbers of bits: fewer '
        f'than {verdicts.MIN_SEEDS}')
  if len(runs) >= verdicts.MIN_SEEDS and task_claims.inert(runs):
    return verdicts.not_testable(
        v.criterion, 'the ponder is the same at every number of bits on '
        'every seed: the halting unit is inert at this τ')
  return v._replace(evidence=f'{len(good)} of {len(runs)} seeds solve; '
                    + v.evidence)


def _paired_by_seed(a, b, key):
  by_seed = {r['seed']: r for r in b}
  shared = [r for r in a if r['seed'] in by_seed]
  return ([key(r) for r in shared], [key(by_seed[r['seed']])
                                      for r in shared])


def sweep_bound_verdict(sweep) -> verdicts.Verdict:
  """Fig. 4's claim over the whole sweep: the error bound at every tau <=
  0.03, each tau judged by :func:`bound_verdict`'s criterion."""
  criterion = ('the bound at every recorded '
               f'τ ≤ {SWEEP_BOUND_TAU:g}, each τ judged below '
               f'{_pct(PAPER_ERROR, 0)} by the criterion of the row above '
               f'(n ≥ {verdicts.MIN_SEEDS} seeds each): holds when it holds '
               'at every τ; does not hold when it does not hold at some τ; '
               'within noise otherwise; undecided while a τ has fewer than '
               f'{verdicts.MIN_SEEDS} seeds')
  judged = [(tau, bound_verdict(runs)) for tau, runs in sweep
            if tau <= SWEEP_BOUND_TAU]
  evidence = '; '.join(f'τ = {tau:g}: {v.label} ({v.evidence})'
                       for tau, v in judged)
  labels = [v.label for _, v in judged]
  if len(judged) < 2 or 'undecided' in labels:
    label = 'undecided'
  elif all(x == 'holds' for x in labels):
    label = 'holds'
  elif 'does not hold' in labels:
    label = 'does not hold'
  else:
    label = 'within noise'
  return verdicts.Verdict(label, criterion, evidence or 'no sweep record')


# Where each claim's data is shown on the results page (act.md).
_FIG6 = '#error-and-ponder-per-difficulty-fig-6'
SECTIONS = (
    ('parity, 64 bits',
     '[main command](#parity-the-main-command-from-records)'),
    ('parity: mean sequence error below',
     '[τ sweep](#the-time-penalty-τ-figs-4-6)'),
    ('parity: ACT against no ACT', '[without ACT](#without-act)'),
    ('parity: ponder grows', f'[Fig. 6]({_FIG6})'),
    ('parity at the paper',
     '[flat ponder](#the-flat-ponder-runs-from-records)'),
    ('logic', '[logic](#logic-sec-32)'),
    ('addition', '[addition](#addition-sec-33)'),
    ('sort', '[sort](#sort-sec-34)'),
    ('Wikipedia', '[Wikipedia](#wikipedia-sec-35)'),
)


# Below this 1-minute load average at its start, a run on CPU-2 had the
# machine to itself (the run itself has not loaded it yet).
ALONE_LOAD = 0.5


def _machine_load_text(runs) -> str:
  """On what machine the runs trained and whether they ran alone, from
  the load average each start recorded (``load`` in its manifest); runs
  recorded before the manifests kept it were made beside other jobs."""
  names = sorted({r.get('machine', {}).get('name', '?') for r in runs})
  machine = ' / '.join(names)
  loads = [s['load'][0] for r in runs for s in r.get('starts', [])
           if s.get('load')]
  known = sum(1 for r in runs if r.get('starts') and all(
      s.get('load') for s in r['starts']))
  if known < len(runs):
    return (f'{machine}, shared with other jobs (the load at the start was '
            'not recorded), so these are upper bounds')
  if max(loads) < ALONE_LOAD:
    return f'{machine}, each run alone (load at every start below {ALONE_LOAD})'
  return (f'{machine}, beside other jobs (load at the start up to '
          f'{max(loads):.1f}), so these are upper bounds')


def summary_text(main: Sequence[Mapping[str, Any]],
                 no_act: Sequence[Mapping[str, Any]],
                 avx2: Sequence[Mapping[str, Any]] = (),
                 older: Sequence[Mapping[str, Any]] = (),
                 avx2_base: Sequence[Mapping[str, Any]] | None = None,
                 sweep=(), groups=None) -> str:
  """The page's summary: each claim of Sec. 3 with the paper's number and
  source, ours from the records, and the verdict with its criterion; the
  twins against the records of their own code (``avx2_base``; None:
  ``main``); Fig. 4 over every tau of ``sweep`` (:func:`sweep_groups`)
  once it holds more than the main command's; the claims of logic,
  addition and sort from their records in ``groups``
  (:mod:`~experiments.reports.act.task_claims`)."""
  if avx2_base is None:
    avx2_base = main
  groups = groups or {}
  fmt = verdicts.pct
  rows = []
  v = bound_verdict(main)
  rows.append(['parity, 64 bits, $\\tau = 0.01$: mean sequence error below '
               f'{_pct(PAPER_ERROR, 0)}', f'below {_pct(PAPER_ERROR, 0)} for '
               '$\\tau \\le 0.03$ (Fig. 4)', *v.cells()])
  if len(sweep) > 1:
    rows.append([f'parity: mean sequence error below {_pct(PAPER_ERROR, 0)} '
                 f'at every $\\tau \\le 0.03$ of the sweep, at '
                 f'{_steps_k(main)} updates on one worker', 'Fig. 4',
                 *sweep_bound_verdict(sweep).cells()])
  if no_act:
    a, b = _paired_by_seed(main, no_act, lambda r: r['final'][
        'sequence_error'])
    v = verdicts.paired(a, b, claim='ACT ends below the same network '
                        'without ACT', fmt=fmt)
    rows.append(['parity: ACT against no ACT (same seeds)',
                 f'without ACT "almost {_pct(PAPER_NO_ACT, 0)}" (Sec. 3.1); '
                 f'here {_mean_std_pct(_errors(no_act))}', *v.cells()])
  v = _growth_verdict(main)
  rows.append(['parity at the main command\'s settings (learning rate '
               f'{_lr(main)}, {_steps_k(main)} updates): ponder grows by more '
               'than one step across 1-64 bits at $\\tau = 0.01$',
               'grows about linearly at intermediate $\\tau$ (Fig. 6)',
               *v.cells()])
  for tau, runs in paper_lr_groups(groups or {}):
    rows.append([f'parity at the paper\'s learning rate ($10^{{-4}}$, 1M '
                 f'updates), τ = {tau:g}: ponder grows by more than one step '
                 'across 1-64 bits',
                 'grows about linearly at intermediate $\\tau$ (Fig. 6)',
                 *_growth_verdict(runs).cells()])
  twins = []
  if avx2 and avx2_base:
    commit = avx2[0]['commit'][:7]
    twins.append(twin_row('the same seeds compiled for another instruction '
                         'set', f'AVX2 against AVX-512, both at commit '
                         f'{commit}', avx2, avx2_base))
  if older:
    commit = older[0]['commit'][:7]
    twins.append(twin_row('the same seeds on older code',
                         f'commit {commit} against today', older, main))
  recorded = task_claims.summary_rows(groups, exclude=(ADDITION_GPU,))
  recorded.update(wikipedia.summary_rows(groups))
  for claim, source, why in UNRECORDED:
    task = claim.split(':')[0]
    if task in recorded:
      rows += recorded[task]
    else:
      rows.append([claim, source, *verdicts.not_recorded(why).cells()])
  text = verdicts.claims_table(['claim', 'the paper', 'verdict', 'here',
                                'criterion'], rows, SECTIONS)
  if twins:
    text += ('\nNot claims of the paper, and no verdict: what the same '
             'seeds of the main command move by when one thing changes.\n\n'
             + records.table(['the same seeds', 'here'], twins))
  return text


def twin_row(what: str, label: str, twins, main) -> list[str]:
  """The main command's seeds against ``twins``, the same seeds with one
  thing changed (``label``): no claim of the paper, what that thing moves.
  Final errors side by side, and the first evaluation where each pair
  parts."""
  ours, base = _paired_by_seed(twins, main, lambda r: r)
  finals = ' / '.join(
      f'{_pct(x["final"]["sequence_error"])} against '
      f'{_pct(y["final"]["sequence_error"])}' for x, y in zip(ours, base))
  first = ', '.join(_diverged_text(x, y) for x, y in zip(ours, base))
  seeds = ', '.join(str(r['seed']) for r in ours)
  return [what, f'{label}, seeds {seeds}: final error {finals}; first '
          f'evaluation that differs: {first}']


def _diverged_text(x, y) -> str:
  step = _first_diverging(x, y)
  return 'none' if step is None else f'{step // 1000}k'


def _first_diverging(x, y) -> int | None:
  ys = {p['step']: p for p in y['curve']}
  for p in x['curve']:
    q = ys.get(p['step'])
    if q is not None and p != q:
      return p['step']
  return None


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


def curve_table(record: Mapping[str, Any], status: str = '') -> str:
  """One run's evaluations: sequence error and ponder at every step it
  recorded; then its provenance, device and note."""
  rows = [[f'{p["step"]:,}', _pct(p['sequence_error']), f'{p["ponder"]:.2f}']
          for p in record['curve']]
  device = next((s['device']['kind'] for s in record.get('starts', [])
                 if s.get('device')), None)
  note = record.get('note')
  return (records.table(['step', 'sequence error', 'ponder'], rows) + '\n'
          + records.provenance([record])
          + (f' Device: {device}.' if device else '')
          + (f' {note}' if note else '') + (f' {status}' if status else '')
          + '\n')


def seeds_table(main: Sequence[Mapping[str, Any]], status: str = '') -> str:
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
          + records.provenance(main) + (f' {status}' if status else '')
          + '\n')


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


def sweep_groups(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                 ) -> list[tuple[float, list[Mapping[str, Any]]]]:
  """``(tau, records)`` for the main command and every sweep folder, tau
  ascending; records of one tau from several folders are pooled."""
  by_tau: dict[float, list] = {}
  for name, runs in groups.items():
    if name == MAIN or name.startswith(SWEEP_PREFIX):
      for r in runs:
        tau = r.get('flags', {}).get('tau')
        if tau is not None:      # records made before flags were kept
          by_tau.setdefault(float(tau), []).append(r)
  return sorted(by_tau.items())


def paper_lr_groups(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                    ) -> list[tuple[float, list[Mapping[str, Any]]]]:
  """``(tau, records)`` of the runs at the paper's learning rate
  (:data:`PAPER_LR_PREFIX`), tau ascending."""
  by_tau: dict[float, list] = {}
  for name, runs in groups.items():
    if name.startswith(PAPER_LR_PREFIX):
      for r in runs:
        by_tau.setdefault(float(r['flags']['tau']), []).append(r)
  return sorted(by_tau.items())


def _mean_ponder(runs) -> str:
  p = records.mean_std(r['final']['ponder'] for r in runs)
  return f'{p[0]:.2f} ± {p[1] or 0:.2f}'


def _slope_text(runs, slope=difficulty_slope) -> str:
  slopes = [s for s in map(slope, runs) if s is not None]
  if not slopes:
    return '-'
  return verdicts.mean_interval_text(slopes, _slope_fmt)


def sweep_table(sweep, no_act: Sequence[Mapping[str, Any]] = (),
                status: str = '') -> str:
  """Per tau (Figs. 4-6): seeds, final error (mean ± std, 95% interval,
  per seed), ponder, and the slope of ponder per non-zero bit."""
  rows = []
  for tau, runs in sweep:
    errors = _errors(runs)
    rows.append([f'{tau:g}', records.seeds_text(runs), _steps_k(runs),
                 _mean_std_pct(errors), _interval_pct(errors)
                 if len(errors) > 1 else '-',
                 ' / '.join(_pct(e) for e in errors), _mean_ponder(runs),
                 _slope_text(runs), _slope_text(runs, solved_slope)])
  if no_act:
    errors = _errors(no_act)
    rows.append(['no ACT', records.seeds_text(no_act), _steps_k(no_act),
                 _mean_std_pct(errors), _interval_pct(errors)
                 if len(errors) > 1 else '-',
                 ' / '.join(_pct(e) for e in errors), '1 (fixed)', '-',
                 '-'])
  everything = [r for _, runs in sweep for r in runs] + list(no_act)
  lines = [records.table(
      ['τ', 'seeds', 'steps', 'sequence error', '95% interval', 'per seed',
       'ponder', 'ponder per bit (slope)',
       f'over the bits solved (below {_pct(SOLVED_ERROR, 0)})'], rows), '\n',
      records.provenance(everything), f' {status}' if status else '']
  return ''.join(lines) + '\n'


def flat_groups(groups: Mapping[str, Sequence[Mapping[str, Any]]]
                ) -> list[tuple[str, str, list]]:
  """``(folder, what changed, records)`` of every flat-ponder folder."""
  return [(name, what, list(runs)) for name, runs in sorted(groups.items())
          for prefix, what in FLAT_PREFIXES.items()
          if name.startswith(prefix)]


def _setting_text(runs) -> str:
  flags = runs[0].get('flags', {})
  return (f'`--learning_rate={flags.get("learning_rate", 0):g}` '
          f'`--layout={flags.get("layout", "prefix")}`')


def flat_table(flat, sweep, status: str = '') -> str:
  """Each flat-ponder folder beside the main command at its tau: seeds,
  steps, error, ponder and both slopes of ponder per non-zero bit."""
  by_tau = dict(sweep)
  rows, everything = [], []
  for _, what, runs in sorted(flat, key=lambda f: float(
      f[2][0]['flags']['tau'])):
    tau = float(runs[0]['flags']['tau'])
    base = by_tau.pop(tau, [])     # once per tau, after its first change
    for label, group in ((f'{what} changed', runs), ('the main command '
                                                     'settings', base)):
      if not group:
        continue
      errors = _errors(group)
      rows.append([f'{tau:g}', label, _setting_text(group),
                   records.seeds_text(group), _steps_k(group),
                   _mean_std_pct(errors), _mean_ponder(group),
                   _slope_text(group), _slope_text(group, solved_slope)])
    everything += runs
  lines = [records.table(
      ['τ', 'run', 'settings', 'seeds', 'steps', 'sequence error', 'ponder',
       'ponder per bit (slope)',
       f'over the bits solved (below {_pct(SOLVED_ERROR, 0)})'], rows), '\n',
      records.provenance(everything), f' {status}' if status else '']
  return ''.join(lines) + '\n'


def flat_difficulty_data(flat) -> dict:
  """Per flat-ponder folder and seed, ``[bits, sequence error, ponder]``."""
  return {f'{name.split("/")[1]}, seed {r["seed"]}': rows
          for name, _, runs in flat
          for r in runs
          for rows in [[[d['difficulty'], d['sequence_error'], d['ponder']]
                        for d in _difficulty_rows(r)]] if rows}


def sweep_verdicts(sweep) -> str:
  """Fig. 4's bound at every tau <= 0.03, Fig. 6's growth at every tau,
  Fig. 5's order of ponder and of error across tau and Fig. 6's order of
  its slope, each by its criterion."""
  rows = []
  for tau, runs in sweep:
    if tau <= SWEEP_BOUND_TAU:
      v = verdicts.below(_errors(runs), PAPER_ERROR, what='sequence error',
                         fmt=verdicts.pct)
      rows.append([f'τ = {tau:g}: error below {_pct(PAPER_ERROR, 0)}',
                   'Fig. 4', *v.cells()])
  for tau, runs in sweep:
    v = _growth_verdict(runs)
    rows.append([f'τ = {tau:g}: ponder grows by more than one step across '
                 '1-64 bits', 'Fig. 6',
                 *v.cells()])
  if len(sweep) > 1:
    v = verdicts.order(
        [(f'τ = {tau:g}', [r['final']['ponder'] for r in runs])
         for tau, runs in sweep], what='mean ponder from the smallest τ to '
        'the largest', fmt=lambda x: f'{x:.2f}', lower_is_better=False)
    rows.append(['the lower τ, the longer the ponder', 'Fig. 5, right',
                 *v.cells()])
    # Sec. 3.1 on Fig. 5: "the solutions were both more rapid and more
    # accurate with lower time penalties".
    v = verdicts.order(
        [(f'τ = {tau:g}', _errors(runs)) for tau, runs in sweep],
        what='mean sequence error from the smallest τ to the largest',
        fmt=verdicts.pct)
    rows.append(['the lower τ, the lower the error', 'Fig. 5, Sec. 3.1',
                 *v.cells()])
  # Fig. 6 states the slope's order "for the more successful networks":
  # the tau whose mean error is below the paper's 5%.
  good = [(tau, runs) for tau, runs in sweep
          if statistics.fmean(_errors(runs)) < PAPER_ERROR]
  if len(good) > 1:
    v = verdicts.order(
        [(f'τ = {tau:g}', list(map(solved_slope, solving(runs))))
         for tau, runs in good], what='slope of ponder per non-zero bit '
        'over the bits solved, from the smallest τ to the largest, over the '
        'τ whose mean error is '
        f'below {_pct(PAPER_ERROR, 0)}', fmt=_slope_fmt,
        lower_is_better=False)
    rows.append(['the lower τ, the steeper the growth of ponder with '
                 'difficulty', 'Fig. 6', *v.cells()])
  return verdicts.claims_table(['claim', 'the paper', 'verdict', 'here',
                                'criterion'], rows)


def sweep_data(sweep, no_act: Sequence[Mapping[str, Any]] = ()) -> dict:
  """What the sweep figure draws: per tau, ``[seed, error, ponder]``."""
  return {'runs': {f'{tau:g}': [[r['seed'], r['final']['sequence_error'],
                                  r['final']['ponder']] for r in runs]
                   for tau, runs in sweep},
          'no_act': [r['final']['sequence_error'] for r in no_act],
          'threshold': PAPER_ERROR}


def sweep_difficulty_data(sweep) -> dict:
  """What Fig. 6's panels draw: per tau with a difficulty report, per seed,
  ``[difficulty, sequence error, ponder]``."""
  return {f'{tau:g}': data for tau, runs in sweep
          if (data := difficulty_data(runs))}


def draw_sweep_difficulty(data: Mapping[str, Any], path):
  """Fig. 6: ponder (solid, left axis) and sequence error (dashed, right
  axis) against the number of non-zero bits, one panel per tau, one colour
  per seed; four panels to a row so that each stays legible."""
  taus = list(data)
  cols = min(len(taus), 4)
  rows = -(-len(taus) // cols)
  fig = plots.new_figure((3.2 * cols, 2.7 * rows))
  axes = fig.subplots(rows, cols, squeeze=False)
  for i, tau in enumerate(taus):
    ax = axes[i // cols][i % cols]
    err = ax.twinx()
    for j, (label, points) in enumerate(data[tau].items()):
      bits = [r[0] for r in points]
      ax.plot(bits, [r[2] for r in points], color=f'C{j}', linewidth=1.1,
              label=label)
      err.plot(bits, [100 * r[1] for r in points], '--', color=f'C{j}',
               linewidth=0.8)
    ax.set_title(f'τ = {tau}')
    ax.set_xlabel('non-zero bits')
    ax.set_ylabel('ponder')
    err.set_ylabel('error, % (dashed)')
    ax.grid(alpha=0.3)
  axes[0][0].legend(fontsize=7)
  for i in range(len(taus), rows * cols):
    axes[i // cols][i % cols].set_visible(False)
  return records.save_svg(fig, path)


def draw_sweep(data: Mapping[str, Any], path):
  """Fig. 4 (error against tau, every seed, the paper's 5%) and Fig. 5's
  right panel (error against ponder)."""
  fig = plots.new_figure((10.0, 4.0))
  left, right = fig.subplots(1, 2)
  taus = {float(t): rows for t, rows in data['runs'].items()}
  for tau, rows in sorted(taus.items()):
    errors = [100 * e for _, e, _ in rows]
    left.scatter([tau] * len(rows), errors, s=18, color='C0', alpha=0.7)
    left.plot([tau], [sum(errors) / len(errors)], '_', color='black',
              markersize=14)
    right.scatter([p for _, _, p in rows], errors, s=18,
                  label=f'τ = {tau:g}')
  for e in data['no_act']:
    left.axhline(100 * e, color='0.6', linewidth=0.8, linestyle='--')
  left.axhline(100 * data['threshold'], color='black', linewidth=0.8,
               linestyle=':')
  left.set_xscale('log')
  left.set_xlabel('time penalty τ (log scale)')
  left.set_title('Error against τ (dots: seeds; bars: means; dotted: the '
                 "paper's 5%; dashed: no ACT)")
  right.set_xlabel('mean ponder')
  right.set_title('Error against ponder (Fig. 5, right)')
  for ax in (left, right):
    ax.set_ylabel('sequence error, %')
    ax.grid(alpha=0.3)
  right.legend(fontsize=8)
  return records.save_svg(fig, path)


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            statuses: Mapping[str, Mapping[str, Any]] | None = None
            ) -> list[records.Output]:
  """Every generated ACT file, from the records grouped by experiment
  (:func:`experiments.reports.records.read_records`)."""
  main, no_act = groups.get(MAIN, []), groups.get(NO_ACT, [])
  if not main:
    return []
  statuses = statuses or {}
  curves = curves_data(main, no_act)
  avx2, older = groups.get(AVX2, []), groups.get(OLDER, [])
  avx2_base = same_code(avx2, main, older)
  out = [records.Output('act/main_command.md',
                        main_command_text(main, no_act, statuses, avx2,
                                          avx2_base)),
         records.Output('act/headline.md', headline_text(main, no_act)),
         records.Output('act/summary.md', summary_text(
             main, no_act, avx2, older, avx2_base, sweep_groups(groups),
             groups)),
         records.Output('act/parity_seeds.md', seeds_table(
             main, verify.status_line(MAIN, main, statuses))),
         records.Output('act/parity_curves.svg', data=curves,
                        draw=lambda p: draw_curves(curves, p))]
  if no_act:
    out.append(records.Output('act/parity_noact.md', seeds_table(
        no_act, verify.status_line(NO_ACT, no_act, statuses))))
  for name, slug in ((AVX2, 'parity_avx2'), (OLDER, 'parity_older')):
    twins = groups.get(name, [])
    out.append(records.Output(f'act/{slug}.md', seeds_table(
        twins, verify.status_line(name, twins, statuses)) if twins else
        'No record yet.\n'))
  gpu = groups.get(ADDITION_GPU, [])
  out.append(records.Output('act/addition_h200.md', curve_table(
      gpu[0], verify.status_line(ADDITION_GPU, gpu, statuses)) if gpu else
      'No record yet.\n'))
  sweep = sweep_groups(groups)
  if len(sweep) > 1:
    sweep_plot = sweep_data(sweep, no_act)
    status = ' '.join(
        f'`{name}`: {verify.status_line(name, runs, statuses)}'
        for name, runs in sorted(groups.items())
        if name in (MAIN, NO_ACT) or name.startswith(SWEEP_PREFIX))
    out += [records.Output('act/tau_sweep.md',
                           sweep_table(sweep, no_act, status)),
            records.Output('act/tau_sweep_verdicts.md',
                           sweep_verdicts(sweep)),
            records.Output('act/tau_sweep.svg',
                           draw=lambda p: draw_sweep(sweep_plot, p),
                           data=sweep_plot)]
    by_tau = sweep_difficulty_data(sweep)
    if by_tau:
      out.append(records.Output(
          'act/tau_sweep_difficulty.svg', data=by_tau,
          draw=lambda p: draw_sweep_difficulty(by_tau, p)))
  flat = flat_groups(groups)
  if flat:
    status = ' '.join(f'`{name}`: {verify.status_line(name, runs, statuses)}'
                      for name, _, runs in flat)
    data = flat_difficulty_data(flat)
    out += [records.Output('act/flat_ponder.md',
                           flat_table(flat, sweep, status)),
            records.Output('act/flat_ponder.svg', data=data,
                           draw=lambda p: draw_difficulty(data, p))]
  paper_lr = paper_lr_groups(groups)
  if paper_lr:
    out.append(records.Output('act/paper_lr_verdicts.md',
                              sweep_verdicts(paper_lr)))
  out += task_claims.outputs(groups, statuses, exclude=(ADDITION_GPU,))
  out += wikipedia.outputs(groups, statuses)
  diff = difficulty_table(main)
  if diff:
    data = difficulty_data(main)
    out += [records.Output('act/parity_difficulty.md', diff),
            records.Output('act/parity_difficulty.svg',
                           draw=lambda p: draw_difficulty(data, p),
                           data=data)]
  return out
