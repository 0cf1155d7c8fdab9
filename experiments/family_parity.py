r"""PonderNet Sec. 3.1: RNN, ACT, Repeat-RNN and PonderNet on parity.

The main commands, one per method and setting (the same inner cell, width,
optimiser, clipping and number of updates for all four)::

  python -m experiments.family_parity --method=pondernet \
      --setting=interpolation
  python -m experiments.family_parity --method=act --setting=extrapolation

train a GRU of 128 units (``--cell``, ``--hidden_size``) wrapped by
``--method`` (``rnn``: none; ``act``: ACT with ``--tau``; ``repeat``:
Repeat-RNN with ``--rho``; ``pondernet``: PonderNet with ``--beta``,
``--lambda_p``, ``--kl``, ``--ponder_epsilon``; any other pondering wrapper
of the registry's table by its row, vcrnn_jax.papers.family.parity) on
ACT's parity task, with
the protocol every method shares: Adam at 1e-3, batch 128, gradients
clipped to global norm 1.0, ``--steps`` updates.
``--setting=interpolation``: vectors of 64 elements, 1-64 of them non-zero
(uniformly) at training and test; ``--setting=extrapolation``: vectors of 96
elements, 1-48 non-zero at training, 49-96 at test (``--bits`` scales
both). Every ``--eval_every`` steps metrics.jsonl gets, on fixed held-out
vectors, the test range's accuracy (1 - sequence error), the training
range's (``training_range_accuracy``), the steps per input, the share the
step cap stopped (``capped``) and the multiplications per input; PonderNet
adds its sampled halting rule (``sample_accuracy``, ``sample_steps``) and
the mass its training unroll leaves on the last step (``last_step_mass``).
At the end ``results.json`` and ``by_count.csv`` hold the final values, the
seconds per update and a row per number of non-zero elements (1 to the
vector size), then ``ponder_by_count.png`` plots them.

The non-zero elements sit at random positions (``--layout=random``, as the
public PonderNet reproductions shuffle them): with ACT's prefix layout the
extrapolation's elements 49-96 would never be non-zero in training.

Recorded on CPU-2 (2 cores; three seeds per configuration;
docs/results/family.md has the tables, figures and commands). At 16
elements, GRU 64, 30,000 updates, 10,000 held-out vectors per evaluation::

  python -m experiments.family_parity --setting=interpolation --bits=16 \
      --hidden_size=64 --steps=30000 --eval_every=5000 \
      --eval_batch_size=10000 --count_batch_size=500 --method=<m> \
      [--tau=<t> | --rho=<r> | --kl=<kl> --ponder_epsilon=<e> \
       | --lambda_p=<l>] --seed=<s>

What each method reaches, seed by seed, and the verdict on each claim by
its criterion, are generated from the run records on docs/results/family.md.
"""

from absl import flags

from experiments import _common
from experiments.reports.family import plots as family_plots
from vcrnn_jax import registry, tasks
from vcrnn_jax.files import atomic_write
from vcrnn_jax.papers.family import parity as family_parity
from vcrnn_jax.papers.family import runs as family_runs

_D = family_parity.ModelConfig()

flags.DEFINE_enum(
    'method', _D.method, list(family_parity.METHODS),
    'The model: ' + ', '.join(
        f'"{m}" ({registry.METHODS[m].summary})' if m in registry.METHODS
        else f'"{m}" (the cell alone)' for m in family_parity.METHODS)
    + '; each method\'s settings are the flags whose help names it.')
flags.DEFINE_enum('setting', 'interpolation',
                  list(family_parity.SETTINGS),
                  'PonderNet Sec. 3.1: "interpolation" (64 elements, 1-64 '
                  'non-zero at training and test) or "extrapolation" (96 '
                  'elements, 1-48 non-zero at training, 49-96 at test).')
_common.define_positive_int('bits', None, 'Elements per vector (default: '
                            'the setting\'s, 64 or 96); extrapolation then '
                            'trains on 1..bits/2 non-zero and tests on the '
                            'rest, for small runs.')
flags.DEFINE_enum('layout', 'random', list(tasks.parity.LAYOUTS),
                  'Which k elements are non-zero: "random" (a uniformly '
                  'random k-subset, as the public PonderNet reproductions) '
                  'or "prefix" (the first k, ACT\'s binaries\' default).')
flags.DEFINE_enum('cell', _D.cell, list(family_parity.CELLS),
                  'Inner recurrent cell of every method (public PonderNet '
                  'reproductions: a GRU).')
_common.define_positive_int('hidden_size', _D.hidden_size, 'Units of the '
                            'inner cell (public PonderNet reproductions: '
                            '128).')
_common.define_positive_int('max_steps', _D.max_steps, 'Most ponder steps '
                            'of ACT (M) and PonderNet (N) (PonderNet: N <= '
                            '20).')
_common.define_float('tau', _D.tau, 'ACT time penalty tau of Eq. 12, the '
                     'weight of the ponder cost of every method that reports '
                     'one (ACT\'s parity grid: 0.01).')
_common.define_float('act_epsilon', _D.act_epsilon, 'ACT halting threshold '
                     'epsilon of Eq. 7, for every method with a ponder cost '
                     '(ACT: 0.01), in (0, 1).', strict=True, upper=1.0)
flags.DEFINE_float('halting_bias', _D.halting_bias, 'ACT\'s initial halting '
                   'bias b_h (Eq. 5; ACT: 1), for every method with a ponder '
                   'cost.')
_common.define_positive_int('rho', _D.rho, 'Repeat-RNN: presentations of '
                            'each input (R1; Fojo et al. compare small rho).')
_common.define_float('beta', _D.beta, 'PonderNet weight of the KL term of '
                     'P3 (public reproductions: 0.01).')
_common.define_float('lambda_p', _D.lambda_p, 'PonderNet geometric prior\'s '
                     'halting probability (P3; public reproductions: '
                     '0.1-0.2), in (0, 1).', strict=True, upper=1.0)
_common.define_float('ponder_epsilon', _D.ponder_epsilon, 'PonderNet: '
                     'unroll until the halting mass reaches 1 - epsilon '
                     '(P4; 0.05), in [0, 1).', upper=1.0)
flags.DEFINE_enum('kl', _D.kl, ['paper', 'reverse'], 'PonderNet\'s KL '
                  'direction: "paper" (KL(p || p_G), P3) or "reverse" '
                  '(KL(p_G || p), as the public reproductions compute it; '
                  'they also unroll every row to N: --ponder_epsilon=0).')
_common.define_positive_int('eval_max_steps', None, 'PonderNet: most ponder '
                            'steps at evaluation (default: --max_steps); '
                            'extrapolation may need more than training.')
_common.define_positive_int('eval_batch_size', 1000, 'Held-out vectors of '
                            'the test range per evaluation (the same ones '
                            'every time).', resumable=True)
_common.define_positive_int('count_batch_size', 1000, 'Vectors per number '
                            'of non-zero elements in the final per-count '
                            'report.', resumable=True)
_common.mark_resumable(flags.DEFINE_bool(
    'plots', True, 'Write ponder_by_count.png after results.json.'))
_common.define_training_flags(
    steps=100_000, batch_size=family_parity.BATCH_SIZE,
    learning_rate=family_parity.LEARNING_RATE, eval_every=5_000,
    grad_clip_norm=family_parity.GRAD_CLIP_NORM)
_common.define_workdir('runs/family_parity/method=<method>_setting=<setting>'
                       '_seed=<seed>, then _<flag>=<value> for each other '
                       'non-default flag that defines the run')
flags.adopt_module_key_flags(_common)
FLAGS = flags.FLAGS


# The final evaluation's metrics repeated at the top of results.json.
_VALID_KEYS = ('accuracy', 'training_range_accuracy', 'ponder', 'steps',
               'capped', 'multiplications', 'sample_accuracy', 'sample_steps',
               'sample_multiplications', 'last_step_mass')


def _seconds_per_update(steps_per_sec) -> float | None:
  if steps_per_sec is None or not steps_per_sec > 0:
    return None
  return 1.0 / steps_per_sec


def main(processes):
  run = family_runs.parity_run(_common.flag_values())
  model = run.settings
  run_dir = _common.default_workdir('family_parity',
                                    leading=('method', 'setting', 'seed'))
  result = _common.train(run.experiment, run.config, run_dir,
                         processes=processes)
  if not processes.is_chief():
    return result
  rows = family_parity.evaluate_by_count(
      model, FLAGS.setting, result.params, layout=FLAGS.layout,
      bits=FLAGS.bits, batch_size=FLAGS.count_batch_size)
  sections = _common.metric_sections(result.metrics)
  config = {k: v for k, v in model._asdict().items() if k != 'loop'}
  results = {
      'method': FLAGS.method, 'setting': FLAGS.setting, 'seed': FLAGS.seed,
      'bits': family_parity.ranges(FLAGS.setting, FLAGS.bits)[0],
      'layout': FLAGS.layout, 'model': config,
      'updates': result.step,
      **{k: sections['valid'].get(k) for k in _VALID_KEYS},
      'seconds_per_update': _seconds_per_update(sections['steps_per_sec']),
      **sections,
      'by_count': rows,
  }
  _common.write_results(run_dir, results, processes=processes)
  columns = list(rows[0])
  lines = [','.join(columns)] + [','.join(str(r[c]) for c in columns)
                                 for r in rows]
  atomic_write(run_dir / 'by_count.csv', '\n'.join(lines) + '\n')
  print(f'accuracy {results["accuracy"]:.4f} (training range '
        f'{results["training_range_accuracy"]:.4f})  ponder '
        f'{results["ponder"]:.3f}  seconds/update '
        f'{results["seconds_per_update"] or float("nan"):.2e}')
  if FLAGS.plots:
    path = run_dir / family_plots.BY_COUNT_PNG
    if _common.plot(path.name, lambda: family_plots.plot_by_count(
        {FLAGS.method: rows}, path,
        title=f'{FLAGS.method}, {FLAGS.setting}')):
      print(f'wrote {path}')
  return result


if __name__ == '__main__':
  _common.run(main)
