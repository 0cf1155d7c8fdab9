r"""ACT paper Section 3: the time-penalty grid search and its figures.

The command::

  python -m experiments.act_sweep --task=parity --taus=1e-3,1e-2,3e-2 \
      --seeds=0,1,2 --workdir=runs/sweep_parity

trains, one after the other in this process, an ACT network for every tau and
seed (sub-workdirs ``tau=<tau>_seed=<seed>/``) and, unless
``--baseline=false``, the same network without ACT for every seed
(``noact_seed=<seed>/``), with the paper's model for the task (parity: Elman
128, batch 128, M=100; logic: LSTM 128, batch 16, M=100; addition: LSTM 512,
batch 32, M=20; sort: LSTM 512, batch 16, M=100). ``--taus=paper`` is the
paper's grid i x 10^-j (i = 1..10, j = 1..4: 37 distinct values from 1e-4 to
1.0) and ``--seeds=0-19`` its 20 networks per tau. It writes, in
``--workdir``:

* ``results.csv``: one row per run (task, act, tau, seed, steps,
  sequence_error, ponder, loss, wall_seconds), the final held-out evaluation;
* ``difficulty.csv``: per run and difficulty (task, act, tau, seed,
  difficulty, sequence_error, ponder), on ``--eval_batch_size`` sequences
  each;
* ``error_by_tau.png`` (Figs 4/8/12/17), ``error_vs_ponder.png`` (Fig. 5
  right) and ``by_difficulty.png`` (Figs 6/10/14/19);
* ``sweep.json`` (the shared settings, checked on every rerun) and
  ``jax_cache/`` (compiled programs reused across runs and reruns).

Rerunning the same command resumes: finished runs are not retrained (nor
reloaded when their rows are present), an interrupted run continues from its
last checkpoint, and CSV rows are replaced, never duplicated. More taus or
seeds extend the sweep; a larger ``--steps`` continues every run.
``--plot_only`` redraws the figures from the CSVs.

Typed runs on CPU-2 (2-core CPU) of::

  python -m experiments.act_sweep --task=parity --taus=1e-2,3e-2,1e-1 \
      --seeds=0 --steps=100000 --eval_every=10000

(64 bits, prefix layout) and of the 8-bit random layout (``--bits=8
--layout=random --taus=1e-3,1e-2,1e-1 --seeds=0,1 --steps=6000
--eval_every=3000``) are in docs/results/notebooks/act.md, 'The $\tau$
grid (Figs. 4-6)'. The recorded tau grid, ``act_parity --tau=T`` for each
tau of the plan with its ``--difficulty_report`` and the network without
ACT, is in docs/results/act.md, 'The time penalty τ (Figs. 4-6)' and
'Without ACT', with the verdicts on Figs. 4-6 in its 'Claims (from
records)'.

Deviations from the paper: Adam with learning rate 1e-3 on one worker instead
of 1e-4 with 16 Hogwild! threads, and 100,000 updates per run by default for
parity (20,000 for the other tasks) instead of 1M per thread.
"""

import pathlib

from absl import flags

from experiments import _act, _common
from experiments.reports.act import plots
from vcrnn_jax import tasks
from vcrnn_jax.papers.act import sweep as act_sweep
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.training import sweep

_TASK_LINE = '; '.join(
    f'{name}: {d["cell"]} {d["hidden_size"]}, batch {d["batch_size"]}, '
    f'M={d["max_steps"]}, {d["steps"]} steps'
    for name, d in act_tasks.PAPER_SETTINGS.items())

flags.DEFINE_enum('task', 'parity', list(act_tasks.TASKS), 'Synthetic task of '
                  'ACT Section 3.1-3.4; it sets the defaults of the model '
                  f'and training flags below ({_TASK_LINE}).')
flags.DEFINE_string('taus', 'paper', "Time penalties tau (Eq. 12): "
                    "comma-separated numbers >= 0, or 'paper' for the paper's "
                    'grid i x 10^-j, i=1..10, j=1..4 (37 values, 1e-4 to 1).')
flags.DEFINE_string('seeds', '0-19', 'Seeds, one run per tau and seed: '
                    'comma-separated integers >= 0 and ranges a-b (the paper '
                    'trains 20 networks per tau: 0-19).')
flags.DEFINE_bool('baseline', True, 'Also train the network without ACT once '
                  'per seed (the dashed lines of the figures).')
flags.DEFINE_bool('plot_only', False, 'Only redraw the PNGs from results.csv '
                  'and difficulty.csv in --workdir; train nothing.')
_common.define_positive_int('bits', None, 'Parity only: elements per input '
                            'vector (paper: 64).')
flags.DEFINE_enum('layout', None, list(tasks.parity.LAYOUTS), 'Parity only: '
                  'which k elements are non-zero (default: prefix; see '
                  'experiments.act_parity --help).')
# The model, ACT and training flags of every ACT binary, with each task's
# paper values as defaults (act_tasks.PAPER_SETTINGS).
_act.define_flags(None, task_flags=False)
_common.define_positive_int('eval_batch_size', 1000, 'Held-out sequences of '
                            'the final evaluation and of each difficulty '
                            '(paper: 1,000).')
flags.DEFINE_string('difficulties', None, 'Difficulties of difficulty.csv: '
                    'comma-separated integers and ranges a-b (default: all of '
                    'the task\'s, e.g. 1-64 for parity).')
flags.DEFINE_bool('quiet', False, 'No progress bar or summary table per run '
                  '(one line per run is still printed).')
flags.DEFINE_string('compilation_cache', None, 'Folder of JAX\'s persistent '
                    'compilation cache, which compiles the programs that runs '
                    'share (same tau, other seed; all evaluations) once '
                    '(default: <workdir>/jax_cache; an empty value turns it '
                    'off).')
_common.define_workdir('runs/act_sweep/<task>')

flags.adopt_module_key_flags(_common)  # so --help lists them
flags.adopt_module_key_flags(_act)
FLAGS = flags.FLAGS


def _list_validator(parse):
  def check(value):
    if value is None:
      return True
    try:
      parse(value)
    except ValueError as e:
      raise flags.ValidationError(str(e)) from None
    return True
  return check


flags.register_validator('taus', _list_validator(act_sweep.parse_taus))
flags.register_validator(
    'seeds', _list_validator(lambda v: sweep.parse_ints('seeds', v)))
flags.register_validator(
    'difficulties',
    _list_validator(lambda v: sweep.parse_ints('difficulties', v, low=1)))


def _plot(results, difficulty, workdir, processes) -> None:
  try:   # matplotlib is optional; plots imports it only here.
    paths = plots.plot_sweep(results, difficulty, workdir, task=FLAGS.task)
  except ImportError as e:
    _common.fail(f'{e} The CSVs are written; rerun with --plot_only once it '
                 'is installed.', processes=processes)
  for path in paths:
    print(f'Wrote {path}', flush=True)


def main(processes):
  workdir = pathlib.Path(FLAGS.workdir or
                         pathlib.Path('runs', 'act_sweep', FLAGS.task))
  # Several processes train each run together; process 0 reports.
  chief = processes.is_chief()
  if FLAGS.plot_only:
    if not chief:
      return
    results = [r for r in sweep.read_rows(
        workdir / act_sweep.RESULTS_FILENAME) if r['task'] == FLAGS.task]
    if not results:
      raise FileNotFoundError(
          f'no {FLAGS.task} rows in {workdir / act_sweep.RESULTS_FILENAME}; '
          'run the sweep first (or pass the --task it was run with).')
    difficulty = [r for r in sweep.read_rows(
        workdir / act_sweep.DIFFICULTY_FILENAME) if r['task'] == FLAGS.task]
    _plot(results, difficulty, workdir, processes)
    return
  parity_kwargs = {k: v for k, v in
                   (('bits', FLAGS.bits), ('layout', FLAGS.layout))
                   if v is not None}
  if parity_kwargs and FLAGS.task != 'parity':
    raise ValueError(f'--{next(iter(parity_kwargs))} applies to --task=parity '
                     f'only, not --task={FLAGS.task}.')
  difficulties = (sweep.parse_ints('difficulties', FLAGS.difficulties, low=1)
                  if FLAGS.difficulties else None)
  config = _act.sweep_config(FLAGS.task, parity_kwargs or None,
                             difficulties=difficulties, quiet=FLAGS.quiet)
  cache = (workdir / 'jax_cache' if FLAGS.compilation_cache is None
           else FLAGS.compilation_cache)
  if cache:
    sweep.enable_compilation_cache(cache)
  runs = act_sweep.make_grid(act_sweep.parse_taus(FLAGS.taus),
                             sweep.parse_ints('seeds', FLAGS.seeds),
                             baseline=FLAGS.baseline)
  summary = act_sweep.run_sweep(
      config, runs, workdir,
      log=(lambda line: print(line, flush=True)) if chief else (lambda _: None),
      processes=processes)
  if not chief:
    return
  print(f'{len(summary.trained)} trained, {len(summary.restored)} restored, '
        f'{len(summary.skipped)} already done, {len(summary.diverged)} '
        f'diverged; rows in {workdir / act_sweep.RESULTS_FILENAME} and '
        f'{workdir / act_sweep.DIFFICULTY_FILENAME}.', flush=True)
  if summary.results:
    _plot(summary.results, summary.difficulty, workdir, processes)


if __name__ == '__main__':
  _common.run(main)
