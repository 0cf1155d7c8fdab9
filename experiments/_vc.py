"""What the VCRNN binaries (vc_ptb, vc_text8, vc_europarl, vc_music) share.

The model and penalty flags (paper defaults where Sec. 5 gives them), the
training defaults the paper does not give (documented here once), and
:func:`train_and_analyse`: train the run that
:func:`vcrnn_jax.papers.vc.runs.setup` builds from the flag values (on
:mod:`vcrnn_jax.training.lm` through :func:`vcrnn_jax.papers.vc.lm.lm_task`),
evaluate the test split, then measure where the scheduler computes on the
valid split and plot it.

Training defaults (the paper gives no optimiser, batch or BPTT length):
Adam at learning rate 1e-3, gradients clipped to norm 1 (the scheduler's
u, v, b by their own norm and the rest by theirs: ``--clip_scheduler_apart``,
see below), batch 32, truncated BPTT over 100 symbols with the state
carried, penalty weight 1 on the per-window sum of |m_t - m_bar| (the same
scale as the summed NLL in nats), evaluation every epoch over the whole
valid stream (state carried).

Why the scheduler is clipped apart: its gradient grows with lambda * D
(the soft mask's slope in m_t), so in a trained VCRNN it carries most of
the global gradient norm, and one global clip shrinks every other
parameter's gradient by the scheduler's share (docs/results/vc.md,
'Clipping the scheduler apart'). The per-leaf gradient norms of a trained
VCRNN-512 and typed runs with and without clipping apart are in
docs/results/notebooks/vc.md, 'Clipping apart: the runs'.
"""

from collections.abc import Callable, Mapping, Sequence
import pathlib
import re
from typing import Any

from absl import flags
import numpy as np

from experiments import _common
from vcrnn_jax.papers.vc import lm as vc_lm
from vcrnn_jax.papers.vc import runs as vc_runs
from vcrnn_jax.training import distributed

FLAGS = flags.FLAGS


def define_flags(*, cell: str, hidden_size: int, epochs: int,
                 target: float = 0.5, seq_len: int = 100,
                 batch_size: int = 32, plot_symbols: int = 300,
                 analysis_symbols: int = 20_000) -> None:
  """The flags of every VC binary, with that binary's defaults."""
  flags.DEFINE_enum('cell', cell, list(vc_lm.CELL_NAMES), 'Recurrent cell: '
                    'vcrnn, vcgru (variable computation) or the constant-'
                    'computation baselines elman, gru, lstm.')
  _common.define_positive_int('hidden_size', hidden_size, 'D, the hidden '
                              'size, also the embedding size (the paper '
                              'feeds D-dimensional inputs).')
  _common.define_positive_int('epochs', epochs, 'Training epochs (used when '
                              '--steps is unset); the sharpness reaches 1 '
                              'after 9.')
  _common.define_positive_int('seq_len', seq_len, 'Truncated BPTT length in '
                              'symbols (not in the paper).')
  _common.define_float('target', target, 'm_bar, the target of the '
                       'penalty Omega of Eq. 10 (paper: 0.2-0.5); in the '
                       'guide setting, the target inside words.', upper=1.0001)
  _common.define_float('penalty_weight', 1.0, 'Weight of Omega (summed '
                       'over the window, like the NLL in nats) in the loss; '
                       'the paper gives none. 0: no penalty.')
  flags.DEFINE_enum('penalty_norm', 'l1', ['l1', 'l2'], 'rho of Omega '
                    '(paper: l1).')
  flags.DEFINE_bool('penalty_symmetric', True, 'Penalise m_t below the '
                    'target too (paper: yes); false: only above it.')
  _common.define_float('sharpness_initial', 0.1, 'lambda at step 0 (paper: '
                       '0.1).', strict=True)
  _common.define_float('sharpness_increment', 0.1, 'lambda added every '
                       '--sharpness_every steps (paper: 0.1 per epoch).')
  _common.define_float('sharpness_max', 1.0, 'Largest lambda (paper: 1).',
                       strict=True)
  _common.define_positive_int('sharpness_every', None, 'Steps between two '
                              'sharpness increments (default: one epoch, as '
                              'the paper; shorter for short runs).')
  _common.define_float('epsilon', 0.01, 'epsilon of Thres_epsilon in the '
                       'soft mask (Eq. 8; not given in the paper).',
                       upper=0.5)
  _common.define_float('scheduler_lr_scale',
                       vc_runs.SCHEDULER_DEFAULTS['scheduler_lr_scale'],
                       'Multiply the optimizer updates of the scheduler (u, '
                       'v, b of Eq. 7) by this: its u is D wide, so one Adam '
                       'step can move the logit of m_t by learning_rate * '
                       'D. VC cells only.', strict=True)
  flags.DEFINE_bool('clip_scheduler_apart',
                    vc_runs.SCHEDULER_DEFAULTS['clip_scheduler_apart'],
                    'Clip the scheduler\'s gradient (u, v, b of Eq. 7) to '
                    '--grad_clip_norm by its own norm and the rest by '
                    'theirs: the scheduler\'s grows with lambda * D and '
                    'would otherwise scale down every other gradient. VC '
                    'cells only.')
  flags.DEFINE_enum('kernel_init', 'glorot_uniform',
                    list(vc_lm.KERNEL_INITS), 'Initialiser of every input '
                    'kernel (each gate\'s block apart; the paper gives '
                    'none). glorot_uniform: what these binaries\' results '
                    'were measured with, and on music a lower perplexity '
                    '(9.87 against 10.07 with lecun_normal, the library\'s '
                    'default, at the reduced command).')
  _common.define_positive_int('max_symbols', None, 'Keep only the first '
                              'this many symbols of each split (quick runs).')
  # How the result is evaluated and analysed: resumable.
  _common.define_positive_int('eval_batch_size', 64, 'Rows of the held-out '
                              'stream evaluation (every symbol is counted '
                              'once, the state carried).', resumable=True)
  _common.mark_resumable(flags.DEFINE_integer(
      'analysis_symbols', analysis_symbols, 'After training, measure mean m_t '
      'per symbol class over this many valid symbols (0: no analysis).',
      lower_bound=0))
  _common.mark_resumable(flags.DEFINE_integer(
      'plot_symbols', plot_symbols, 'After training, plot m_t over this many '
      'valid symbols (0: no plot).', lower_bound=0))
  _common.define_training_flags(steps=None, batch_size=batch_size,
                                learning_rate=1e-3, eval_every=None,
                                grad_clip_norm=1.0)


def _parameter_count(params) -> int:
  import jax  # pylint: disable=g-import-not-at-top
  return int(sum(np.size(x) for x in jax.tree_util.tree_leaves(params)))


def _format_classes(classes: Mapping[str, Mapping[str, float]]) -> str:
  return ', '.join(f'{k} {v["mean"]:.3f} (n={v["count"]})'
                   for k, v in classes.items())


def _period_text(found: Mapping[str, Any], char_period: int) -> str:
  if not found['period']:
    return 'none (constant)'
  text = (f'{found["fundamental"]} bits (autocorrelation '
          f'{found["fundamental_autocorrelation"]:.2f}')
  if found['fundamental'] != found['period']:
    text += (f'; highest {found["autocorrelation"]:.2f} at '
             f'{found["period"]}')
  return text + (f'; {found["at_character_period"]:.2f} at '
                 f'{char_period})')


def _natural_key(c) -> list:
  # 'buffer 2' before 'buffer 10': digit runs compare as numbers.
  return [(0, int(t), '') if t.isdigit() else (1, 0, t)
          for t in re.split(r'(\d+)', str(c)) if t]


def _class_order(classes: Sequence[Any]) -> list:
  """The classes sorted numerically if all are numbers, else naturally."""
  seen = list(dict.fromkeys(c for c in classes if c is not None))
  try:
    return sorted(seen, key=float)
  except (TypeError, ValueError):
    return sorted(seen, key=_natural_key)


# The share of steps vc_lm.peak_steps marks: rarer than one step per
# character at bit level (8-32 bits) or per word at character level (~5.5),
# so the marks fall on the largest update of such a unit.
PEAK_FRACTION = 0.05

# Per analysed stream: symbols (the labels of the plot) and classes.
Classes = Callable[[np.ndarray, int], Mapping[str, Sequence[Any]]]


def train_and_analyse(
    name: str,
    train_stream: np.ndarray,
    valid_stream: np.ndarray,
    test_stream: np.ndarray,
    vocab_size: int,
    *,
    decode: Callable[[np.ndarray], Sequence[Any]],
    classes: Classes | None = None,
    boundary_ids: Sequence[int] | None = None,
    boundary_target: float | None = None,
    metric: str = 'bpc',
    bits: Mapping[str, Any] | None = None,
    leading: Sequence[str] = ('cell', 'seed'),
    data_files: Sequence[str] = (),
    processes: distributed.Processes,
) -> dict:
  """Trains the flags' model, evaluates the test split, analyses m_t.

  Args:
    name: the binary's name (workdir ``runs/<name>/...``, progress bar).
    train_stream, valid_stream, test_stream: 1-D id streams.
    vocab_size: the number of symbols.
    decode: ids -> symbols (plot labels).
    classes: ``(ids, offset) -> {grouping: [class per id]}`` for the mean
      m_t per class (``offset``: where ``ids`` start in the valid stream).
    boundary_ids: the guide setting's boundary symbols.
    boundary_target: the guide setting's boundary target (None: learn).
    metric: the headline metric printed (``'bpc'`` or ``'perplexity'``).
    bits: bit-level analysis: ``{'positions': valid bit positions,
      'period': bits per character, 'chars': valid char symbols}``.
    leading: flags named first in the default workdir.
    data_files: the files the streams came from (the dataset's
      ``meta['files']``), digested in the run's manifest.
    processes: the run's processes (what :func:`_common.run` passes to
      ``main``).

  Returns:
    ``{'model', 'step', 'sharpness', 'parameters', 'valid': held-out
    metrics, 'train': the last interval's training metrics,
    'steps_per_sec', 'test': metrics, 'analysis': {...}}``, also written to
    ``<workdir>/results.json`` (before any plot) by process 0.
  """
  run = vc_runs.setup(_common.flag_values(), name, train_stream,
                      valid_stream, vocab_size, boundary_ids=boundary_ids,
                      boundary_target=boundary_target)
  spec, task = run.spec, run.task
  workdir = _common.default_workdir(name, leading=leading)
  result = _common.train(run.experiment, run.config, workdir,
                         processes=processes, data_files=data_files)
  test = task.evaluate_stream(result.params, test_stream, result.step)
  valid = dict(result.metrics)
  out = {'model': spec.name, 'step': result.step,
         'sharpness': (vc_lm.sharpness_at(spec, result.step)
                       if spec.has_scheduler else None),
         'parameters': _parameter_count(result.params),
         **_common.metric_sections(valid),
         'test': test}

  def value(m):
    return m.get(metric, float('nan'))

  print(f'{spec.name}: valid {metric} {value(valid):.4f}, test {metric} '
        f'{value(test):.4f}, mean m_t {test["m"]:.3f}, RNN-d '
        f'{test["rnn_d"]:.0f} (from m_t: {test["rnn_d_m"]:.0f}), '
        f'{out["parameters"] / 1e6:.2f}M params, step {result.step}')
  if not processes.is_chief():
    return out
  plots = []
  if spec.has_scheduler:
    out['analysis'], plots = _analyse(task, spec, result, workdir,
                                      valid_stream, decode, classes, bits)
  _common.write_results(workdir, vc_lm.summary(out), processes=processes)
  for what, draw in plots:
    path = _common.plot(what, draw)
    if path is not None:
      print(f'wrote {path}')
  return out


def _analyse(task, spec, result, workdir, valid_stream, decode, classes,
             bits) -> tuple[dict, list]:
  """Where the scheduler computes: the numbers, and the plots to draw.

  Returns ``(analysis, plots)``; ``plots`` are ``(name, draw)`` pairs that
  the caller runs after ``results.json`` is written (``draw()`` returns
  the path it wrote).
  """
  from experiments.reports.vc import plots as vc_plots  # pylint: disable=g-import-not-at-top
  workdir = pathlib.Path(workdir)
  lam = vc_lm.sharpness_at(spec, result.step)
  analysis: dict = {'sharpness': lam}
  plots: list = []
  n = min(FLAGS.analysis_symbols, len(valid_stream) - 1)
  if n > 0:
    ids = np.asarray(valid_stream[:n + 1])
    m = task.per_step(result.params, ids, result.step)['m']
    analysis['mean_m'] = float(m.mean())
    if classes is not None:
      groups = _class_analysis(analysis, m, classes(ids[:-1], 0))
      plots.append(('m_by_class.png', lambda: vc_plots.plot_mean_by_class(
          groups, workdir / 'm_by_class.png',
          title=f'{spec.name}: mean m_t per symbol class ({n} valid '
          'symbols)')))
    if bits is not None:
      _bit_analysis(analysis, m, spec, lam, bits, n)
  p = min(FLAGS.plot_symbols, len(valid_stream) - 1)
  if p > 0:
    ids = np.asarray(valid_stream[:p + 1])

    def draw():
      m = task.per_step(result.params, ids, result.step)['m']
      if bits is None:
        return vc_plots.plot_m_over_text(
            list(decode(ids[:-1])), m, workdir / 'm_over_text.png',
            title=f'{spec.name}: m_t over the first {p} valid symbols '
            f'(mean {m.mean():.3f}, lambda {lam:g})')
      usage = vc_lm.top_dims_usage(m, spec.hidden_size, lam,
                                   epsilon=spec.epsilon)
      positions = np.asarray(bits['positions'][:p])
      chars = list(bits['chars'][:int(np.sum(positions == 0))])
      top = max(1, spec.hidden_size // 20)
      return vc_plots.plot_bit_computation(
          ids[:-1], usage, positions, chars, workdir / 'bits_top_dims.png',
          title=f'{spec.name}: per-bit update of dimensions '
          f'{spec.hidden_size - top}-{spec.hidden_size - 1} (lambda {lam:g})')

    plots.append(('m_over_text.png' if bits is None else 'bits_top_dims.png',
                  draw))
  return analysis, plots


def _class_analysis(analysis: dict, m: np.ndarray, found) -> dict:
  """Mean m_t and the rate of the largest m_t per class, into ``analysis``."""
  labelled = {g: (c, _class_order(c)) for g, c in found.items()}
  groups = {g: vc_lm.mean_by_class(m, c, order=order)
            for g, (c, order) in labelled.items()}
  analysis['mean_m_by_class'] = groups
  for g, c in groups.items():
    print(f'mean m_t by {g}: {_format_classes(c)}')
  peaks = vc_lm.peak_steps(m, PEAK_FRACTION).astype(np.float64)
  analysis['peak_rate_by_class'] = {
      g: vc_lm.mean_by_class(peaks, c, order=order)
      for g, (c, order) in labelled.items()}
  for g, c in analysis['peak_rate_by_class'].items():
    print(f'rate of the {PEAK_FRACTION:.0%} largest m_t by {g} '
          f'({PEAK_FRACTION:g} without preference): {_format_classes(c)}')
  return groups


def _bit_analysis(analysis: dict, m: np.ndarray, spec, lam: float,
                  bits: Mapping[str, Any], n: int) -> None:
  """The period of m_t and the top dimensions' updates, into ``analysis``."""
  period = int(bits['period'])
  usage = vc_lm.top_dims_usage(m, spec.hidden_size, lam, epsilon=spec.epsilon)
  max_lag = min(4 * period, n - 2)
  if max_lag >= 2:
    analysis['period_m'] = vc_lm.dominant_period(m, max_lag)
    analysis['period_top_dims'] = vc_lm.dominant_period(usage, max_lag)
    for k in ('period_m', 'period_top_dims'):
      acf = analysis[k].pop('acf')
      analysis[k]['at_character_period'] = (
          acf[period] if period < len(acf) else float('nan'))
    print(f'period of m_t: {_period_text(analysis["period_m"], period)}; of '
          f'the top dims\' updates: '
          f'{_period_text(analysis["period_top_dims"], period)} '
          f'(characters every {period} bits)')
  positions = np.asarray(bits['positions'][:n])
  analysis['top_dims_by_position'] = vc_lm.mean_by_class(
      usage, vc_lm.bit_classes(positions))
  analysis['top_dims_mean'] = float(usage.mean())
  print(f'mean update of the top dims: {analysis["top_dims_mean"]:.3g} per '
        'bit')
