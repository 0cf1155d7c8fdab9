r"""The EI-REHN paper's experiments (Park & Yoo 2017, Section 4) as functions.

* :func:`build_cell`: the six recurrent cells the paper compares (RNN, LSTM,
  RHN, SRHN, SREHN, EI-REHN) from one :class:`ModelSpec`;
* :data:`TABLE1` and :data:`TABLE2`: the paper's rows (size, parameter count,
  result), so that a run prints its numbers beside them;
* :func:`run_seeds`: one model trained with several seeds in one process,
  each in its own workdir (resumable), one CSV row per seed, and a
  mean ± std summary (the paper trains every model five times).

The binaries ``rehn_synthetic``, ``rehn_har`` and ``rehn_ptb`` are flags plus
calls into here and into :mod:`vcrnn_jax.training.supervised` and
:mod:`vcrnn_jax.training.lm`.
"""

from collections.abc import Callable, Mapping, Sequence
import math
import pathlib
import time
from typing import Any, NamedTuple

import jax
import numpy as np

from vcrnn_jax import cells, loops, registry, rehn
from vcrnn_jax.core import Cell, check_positive_int
from vcrnn_jax.models import symmetric_uniform
from vcrnn_jax.training import metric_writer, sweep
from vcrnn_jax.training.train import (
  Experiment,
  TrainConfig,
  TrainResult,
  train_and_evaluate,
)

__all__ = [
    'CELL_NAMES',
    'ELASTIC',
    'ModelSpec',
    'hyper_size',
    'build_cell',
    'parameter_count',
    'depth_statistics',
    'TABLE1',
    'TABLE2',
    'paper_row',
    'at_best_validation',
    'SeedResult',
    'run_seeds',
    'mean_std',
    'results_table',
]

# The paper's six cells, by the names its binaries' --cell takes: 'rnn' is the
# paper's word for the Elman cell (the registry's alias of 'elman').
CELL_NAMES = ('rnn', 'lstm') + registry.names('rhn', 'elastic')
ELASTIC = registry.names('elastic')


class ModelSpec(NamedTuple):
  """One recurrent model of the paper (see :func:`build_cell`)."""
  cell: str                       # one of CELL_NAMES
  hidden_size: int                # D_h
  depth: int = 5                  # R of rhn/srhn (Table 1's counts: 5)
  max_depth: int = 10             # R_max of srehn/ei_rehn
  hyper_size: int | None = None   # D_z of ei_rehn; None: ceil(D_h / 2)
  transform_bias: float | None = None   # None: the cell's default
  state_dropout: float = 0.0
  init_scale: float | None = None   # U(-s, s) weights (Zilly et al.: 0.04)
  loop: loops.LoopConfig = loops.LoopConfig()   # srehn/ei_rehn: cost only
  open_gate: bool = False         # srehn/ei_rehn: True holds the gate open
  alpha_init: float | None = None   # srehn/ei_rehn: None, the cell's (0.1)

  @property
  def name(self) -> str:
    """``rhn20_d5``, ``ei_rehn20``: the model's row name."""
    extra = f'_d{self.depth}' if self.cell in ('rhn', 'srhn') else ''
    if self.cell in ELASTIC:
      extra = f'_rmax{self.max_depth}'
      if self.alpha_init is not None:
        extra += f'_alpha{self.alpha_init:g}'
      if self.open_gate:
        extra += '_open'
    return f'{self.cell}{self.hidden_size}{extra}'


def hyper_size(spec: ModelSpec) -> int:
  """``D_z``: given, or ``ceil(D_h / 2)`` (the paper's counts imply it)."""
  return spec.hyper_size or math.ceil(spec.hidden_size / 2)


def build_cell(spec: ModelSpec) -> Cell:
  """The cell of ``spec``: Elman (the paper's "RNN"), LSTM or an RHN family one.

  Raises:
    ValueError: an unknown cell name or a bad size.
  """
  if spec.cell not in CELL_NAMES:
    raise ValueError(f'cell must be one of {CELL_NAMES}, got {spec.cell!r}.')
  h = check_positive_int('hidden_size', spec.hidden_size)
  if spec.cell in ('rnn', 'lstm'):
    return registry.build_cell(spec.cell, h)
  kwargs = {}
  if spec.transform_bias is not None:
    kwargs['transform_bias'] = spec.transform_bias
  if spec.state_dropout:
    kwargs['state_dropout'] = spec.state_dropout
  if spec.init_scale is not None:
    init = symmetric_uniform(spec.init_scale)
    kwargs.update(kernel_init=init, recurrent_kernel_init=init)
  if spec.cell in ('rhn', 'srhn'):
    return registry.build_cell(spec.cell, h, **kwargs, depth=check_positive_int(
        'depth', spec.depth))
  kwargs.update(max_depth=spec.max_depth, loop=spec.loop)
  if spec.open_gate:
    kwargs['open_gate'] = True
  if spec.alpha_init is not None:
    kwargs['alpha_init'] = spec.alpha_init
  if spec.cell == 'ei_rehn':
    kwargs['hyper_size'] = hyper_size(spec)
  return registry.build_cell(spec.cell, h, **kwargs)


def parameter_count(params: Any) -> int:
  """Number of scalars in a params pytree."""
  return int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(params)))


def depth_statistics(ys) -> dict:
  """Per-step realized depth of the elastic layers (``{}`` for the others)."""
  layers = ys.layers if isinstance(ys, cells.StackOutput) else (ys,)
  out = {}
  for i, y in enumerate(layers):
    if isinstance(y, rehn.REHNOutput):
      out['depth' if len(layers) == 1 else f'depth_{i}'] = (
          y.depth.astype(np.float32))
  return out


# ----------------------------------------------------------------------------
# The paper's tables: (cell, D_h, R, params, result mean, result std).
# Table 1: test MSE x 1e-3 on the synthetic data (Sec. 4.1); RHN rows are
# depth 5 (their counts); the SRHN depth sweep and SREHN are from the text.
TABLE1 = (
    ('rnn', 20, None, 502, 1.01, 0.07), ('rnn', 30, None, 1052, 0.97, 0.04),
    ('rnn', 40, None, 1802, None, None),
    ('lstm', 10, None, 542, 0.76, 0.01), ('lstm', 15, None, 1112, 0.76, 0.01),
    ('lstm', 20, None, 1882, 0.72, 0.01),
    ('rhn', 10, 5, 1162, 0.58, 0.03), ('rhn', 15, 5, 2492, 0.54, 0.02),
    ('rhn', 20, 5, 4322, 0.53, 0.02),
    ('ei_rehn', 10, None, 807, 0.55, 0.02),
    ('ei_rehn', 15, None, 1732, 0.50, 0.01),
    ('ei_rehn', 20, None, 2862, 0.47, 0.01),
    ('srhn', 20, 1, None, 0.81, None), ('srhn', 20, 2, None, 0.63, None),
    ('srhn', 20, 3, None, 0.58, None), ('srhn', 20, 4, None, 0.55, None),
    ('srhn', 20, 5, None, 0.55, None), ('srhn', 20, 6, None, 0.54, None),
    ('srehn', 20, None, None, 0.54, None),
)
# Table 2: test accuracy (%) on HAR with two layers (Sec. 4.2); R in brackets
# for RHN. The RNN-40 row is garbled in the text (81.11 +- 4.16 only).
TABLE2 = (
    ('rnn', 32, None, 3924, 82.26, 2.57), ('rnn', 48, None, 8214, 81.31, 5.53),
    ('lstm', 16, None, 4048, 90.88, 0.96),
    ('lstm', 24, None, 8358, 91.42, 1.06),
    ('lstm', 32, None, 14214, 92.12, 0.40),
    ('rhn', 32, 1, 7366, 90.58, 0.95), ('rhn', 32, 2, 11590, 89.06, 0.61),
    ('rhn', 32, 3, 15814, 83.06, 4.62),
    ('ei_rehn', 32, None, 8102, 91.50, 0.51),
    ('ei_rehn', 40, None, 12126, 91.84, 0.63),
    ('ei_rehn', 48, None, 16950, 92.48, 0.61),
)


def paper_row(table, spec: ModelSpec):
  """The paper's ``(params, mean, std)`` for ``spec``, or None."""
  for cell, h, depth, params, mean, std in table:
    if cell == spec.cell and h == spec.hidden_size and (
        depth is None or depth == spec.depth):
      return params, mean, std
  return None


# ----------------------------------------------------------------------------
# Several seeds of one model.


def at_best_validation(workdir, select: str, report: Sequence[str], *,
                       mode: str = 'min') -> dict:
  """The ``report`` metrics of the evaluation with the best ``select``.

  Reads a run's ``metrics.jsonl`` (:func:`metric_writer.read_metrics`) and
  returns ``{'best_<k>': value}`` for each ``k`` of ``report`` at the
  evaluation whose ``select`` is least (``mode='min'``) or greatest
  (``'max'``), plus ``'best_step'``: what early stopping on the validation
  split would have kept. Evaluations whose ``select`` is NaN (diverged) are
  skipped; with none left (or no file: a process other than the first
  writes none), every value is NaN.
  """
  if mode not in ('min', 'max'):
    raise ValueError(f"mode must be 'min' or 'max', got {mode!r}.")
  sign = 1.0 if mode == 'min' else -1.0
  path = pathlib.Path(workdir) / metric_writer.METRICS_FILENAME
  lines = [line for line in (metric_writer.read_metrics(path)
                             if path.exists() else [])
           if not math.isnan(line.get(select, math.nan))]
  if not lines:
    return {'best_step': math.nan, **{f'best_{k}': math.nan for k in report}}
  best = min(lines, key=lambda line: sign * line[select])
  return {'best_step': best['step'],
          **{f'best_{k}': best.get(k, math.nan) for k in report}}


class SeedResult(NamedTuple):
  seed: int
  metrics: dict     # the final evaluation (the binary's own final metrics)
  result: TrainResult


def run_seeds(
    spec: ModelSpec,
    seeds: Sequence[int],
    workdir,
    *,
    make_experiment: Callable[[], Experiment],
    train_config: Callable[[int], TrainConfig],
    final_metrics: Callable[[TrainResult], Mapping[str, float]],
    table_csv=None,
    table_fields: Sequence[str] = (),
    train: Callable[..., TrainResult] = None,
    log: Callable[[str], None] = print,
    run_metrics: Callable[[pathlib.Path], Mapping[str, float]] | None = None,
    settings: str = '',
    chief: bool = True,
) -> list[SeedResult]:
  """Trains ``spec`` once per seed in ``<workdir>/seed=<s>`` and tabulates.

  Resumable: a finished seed is restored and only evaluated; an interrupted
  one resumes from its last checkpoint. Each seed's row (``model``, ``seed``,
  ``table_fields`` taken from its final metrics, and ``settings``) is
  upserted into ``table_csv`` keyed by ``(model, settings, seed)``: a run
  with other settings (fewer steps, another learning rate) gets rows of its
  own instead of replacing these.

  Args:
    spec: the model.
    seeds: the seeds (the paper trains five).
    workdir: the folder of this model's runs.
    make_experiment: builds the experiment (called once per seed).
    train_config: ``seed -> TrainConfig``.
    final_metrics: ``TrainResult -> metrics`` reported per seed (e.g. the
      test split's).
    table_csv: the CSV that collects every model's rows, or None.
    table_fields: the metric columns of that CSV.
    train: the training call (default :func:`train_and_evaluate`; binaries
      pass their workdir guard).
    log: receives one line per seed.
    run_metrics: ``seed workdir -> metrics`` joined to the final ones, for
      what the run's whole log says (e.g. :func:`at_best_validation`).
    settings: the settings that change the result beyond the model's name
      (the binaries: every non-default run-defining flag, ``'steps=100
      learning_rate=0.01'``); ``''`` for the paper's.
    chief: whether this process writes ``table_csv`` (in a run of several
      processes, process 0 alone).
  """
  workdir = pathlib.Path(workdir)
  train = train or train_and_evaluate
  out = []
  for seed in seeds:
    t0 = time.time()
    result = train(make_experiment(), train_config(seed),
                   workdir / f'seed={seed}')
    metrics = dict(final_metrics(result))
    if run_metrics is not None:
      metrics.update(run_metrics(workdir / f'seed={seed}'))
    jax.clear_caches()   # Each seed compiles its own closures.
    out.append(SeedResult(seed, metrics, result))
    shown = ', '.join(f'{k}={v:.4g}' for k, v in metrics.items()
                      if isinstance(v, (int, float)))
    log(f'{spec.name} seed {seed}: {shown} ({time.time() - t0:.0f} s)')
    if table_csv is not None:
      row = {'model': spec.name, 'cell': spec.cell,
             'hidden_size': spec.hidden_size, 'seed': seed,
             'settings': settings}
      row.update({k: metrics.get(k, float('nan')) for k in table_fields})
      # 'settings' last: a table written before it is extended, not refused.
      sweep.upsert_rows(table_csv, ('model', 'cell', 'hidden_size', 'seed')
                        + tuple(table_fields) + ('settings',), [row],
                        key=('model', 'settings', 'seed'), chief=chief)
  return out


def mean_std(values: Sequence[float]) -> tuple[float, float]:
  """Mean and (population) standard deviation, as the paper's ± reads."""
  values = np.asarray(values, np.float64)
  return float(values.mean()), float(values.std())


def _depth_in_name(model: str) -> int:
  # ModelSpec.name writes an RHN's depth as '_d<R>'.
  return int(model.rsplit('_d', 1)[1]) if '_d' in model else 5


def results_table(path, paper_table, *, metric: str, label: str,
                  scale: float = 1.0, early_stopped: str | None = None
                  ) -> str:
  """The rows of a :func:`run_seeds` CSV as the paper's table, in Markdown.

  One line per model and settings (a model trained with non-default
  settings has them in brackets after its name, a line of its own): its
  parameter count and ``scale * metric`` as mean ±
  std over its seeds, each beside the paper's (``paper_table``: TABLE1 or
  TABLE2), the median and range over the seeds (one diverged seed moves the
  mean and std far more than the median), the number of seeds and the mean
  realized depth. ``early_stopped`` names a column of the metric at the
  best validation evaluation (:func:`at_best_validation`), shown as mean ±
  std over the seeds that have it.

  Raises:
    FileNotFoundError: the CSV has no rows.
  """
  rows = sweep.read_rows(path)
  if not rows:
    raise FileNotFoundError(f'no rows in {path}; train a model first.')
  by_model: dict = {}
  for r in rows:
    # Rows of other settings are other runs: each setting is its own line.
    name = r['model'] + (f' [{r["settings"]}]' if r.get('settings') else '')
    by_model.setdefault(name, []).append(r)
  order = {name: i for i, name in enumerate(CELL_NAMES)}
  extra = ' at best valid |' if early_stopped else ''
  lines = [f'| model | params (paper) | {label} (paper) | median [min, max] '
           f'|{extra} seeds | mean depth |',
           '| --- ' * (6 + bool(early_stopped)) + '|']
  for model, group in sorted(by_model.items(), key=lambda kv: (
      order[kv[1][0]['cell']], kv[1][0]['hidden_size'], kv[0])):
    first = group[0]
    values = [scale * g[metric] for g in group]
    mean, std = mean_std(values)
    paper = paper_row(paper_table, ModelSpec(
        first['cell'], first['hidden_size'],
        depth=_depth_in_name(first['model'])))
    p_params = paper[0] if paper and paper[0] else '-'
    p_value = (f'{paper[1]:.2f}' + (f' ± {paper[2]:.2f}' if paper[2] else '')
               if paper and paper[1] else '-')
    depths = [g['mean_depth'] for g in group if not math.isnan(g['mean_depth'])]
    depth = f'{np.mean(depths):.2f}' if depths else '-'
    cell = ''
    if early_stopped:
      best = [scale * g[early_stopped] for g in group
              if not math.isnan(g.get(early_stopped, math.nan))]
      cell = (' {:.3f} ± {:.3f} ({} of {}) |'.format(
          *mean_std(best), len(best), len(group)) if best else ' - |')
    lines.append(f'| {model} | {int(first["params"])} ({p_params}) | '
                 f'{mean:.3f} ± {std:.3f} ({p_value}) | '
                 f'{np.median(values):.3f} [{min(values):.3f}, '
                 f'{max(values):.3f}] |{cell} {len(group)} | '
                 f'{depth} |')
  return '\n'.join(lines)
