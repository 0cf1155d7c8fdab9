r"""The VCRNN paper's language models (Jernite et al. 2017, Sec. 5) as
functions.

A configuration of :func:`vcrnn_jax.training.lm.lm_experiment`, which trains
them (truncated BPTT with the state carried): this module adds no trainer.

* :class:`ModelSpec` and :func:`build_cell`: the five cells the paper
  compares (VCRNN, VCGRU and the constant-computation Elman, GRU, LSTM);
  the VC cells get the sharpness schedule of Sec. 5 (:func:`sharpness`),
  which the cell reads from ``Context.step``;
* :func:`lm_task`: the language model (an embedding of size ``D``, the
  cell, a linear softmax readout) with the penalty :math:`\Omega` of Eq. 10
  as the trainer's regularizer (a target :math:`\bar m`, or per-symbol
  targets in the "guide" setting of Sec. 5.2.2), :math:`m_t`, the
  dimensions updated and their cost as per-step statistics, and RNN-d
  (Table 3) derived at every evaluation;
* the analysis of a trained scheduler: mean :math:`m_t` per symbol class
  (:func:`mean_by_class`: word boundaries, music's bar lines, rests and note
  lengths, :func:`music_classes`), the use of the highest dimensions
  (:func:`top_dims_usage`, Fig. 2), the steps of the largest updates
  (:func:`peak_steps`, Fig. 2 and 3 at any size) and the period of a
  per-step signal (:func:`dominant_period`, Fig. 2's "roughly every 8
  bits").

Example::

  spec = vc_lm.ModelSpec('vcrnn', 1024, target=0.5, steps_per_epoch=1500)
  task = vc_lm.lm_task(spec, ds.train, ds.valid, ds.vocab.size,
                       batch_size=32, seq_len=100)
  result = train_and_evaluate(task.experiment, config, workdir)
  per = task.per_step(result.params, ds.valid[:2001], result.step)
  per['m']                                          # m_t at every symbol

References:
  Jernite, Grave, Joulin & Mikolov, Variable Computation in Recurrent Neural
  Networks, ICLR 2017, Sec. 4.2 and 5.
"""

from collections.abc import Mapping, Sequence
import math
import re
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax import registry, vc
from vcrnn_jax.core import Cell, check_positive_int
from vcrnn_jax.models import SequenceModel, language_model
from vcrnn_jax.training import lm

__all__ = [
    'CELL_NAMES',
    'KERNEL_INITS',
    'VC_CELLS',
    'SETTINGS',
    'ModelSpec',
    'check_spec',
    'sharpness',
    'sharpness_at',
    'build_cell',
    'build_model',
    'elman_units',
    'lm_task',
    'top_dims_usage',
    'peak_steps',
    'dominant_period',
    'mean_by_class',
    'boundary_classes',
    'WORD_POSITIONS',
    'word_position_classes',
    'word_groupings',
    'note_length',
    'music_class',
    'music_classes',
    'bit_classes',
    'buffer_classes',
    'summary',
]

# The paper's cells and its baselines (Table 3's rows).
CELL_NAMES = registry.names('vc') + registry.names('baseline')
# Initialisers of the input kernels, by the name a flag gives.
KERNEL_INITS = {'lecun_normal': jax.nn.initializers.lecun_normal(),
                'glorot_uniform': jax.nn.initializers.glorot_uniform()}
VC_CELLS = registry.names('vc')
SETTINGS = ('learn', 'guide')


class ModelSpec(NamedTuple):
  r"""One language model of the paper (see :func:`build_cell`, :func:`lm_task`).

  Attributes:
    cell: one of :data:`CELL_NAMES`.
    hidden_size: ``D`` (also the embedding size, as in the paper, where
      :math:`x_t` is ``D``-dimensional).
    steps_per_epoch: training steps between two sharpness increments (the
      paper: one epoch).
    target: :math:`\bar m` of Eq. 10 (paper: 0.2-0.5).
    boundary_target: the "guide" setting's :math:`\bar m` on boundary
      symbols (None: the "learn" setting, one target everywhere).
    penalty_weight: the weight of :math:`\Omega` in the loss (the paper
      gives none).
    penalty_norm: ``'l1'`` (paper) or ``'l2'``.
    symmetric: penalise :math:`m_t` below the target too (paper: True).
    sharpness_initial, sharpness_increment, sharpness_maximum: the schedule
      of Sec. 5 (0.1, +0.1 per epoch, up to 1).
    epsilon: :math:`\epsilon` of :math:`\mathrm{Thres}_\epsilon`.
    scheduler_bias: initial bias ``b`` of Eq. 7.
    kernel_init: the input kernels' initialiser, a name of
      :data:`KERNEL_INITS` (the paper gives none). ``'glorot_uniform'``
      is what the paper binaries were measured with (each gate's block
      apart); ``'lecun_normal'`` is the library's (flax's) default.
  """
  cell: str
  hidden_size: int
  steps_per_epoch: int = 1
  target: float = 0.5
  boundary_target: float | None = None
  penalty_weight: float = 1.0
  penalty_norm: str = 'l1'
  symmetric: bool = True
  sharpness_initial: float = 0.1
  sharpness_increment: float = 0.1
  sharpness_maximum: float = 1.0
  epsilon: float = 0.01
  scheduler_bias: float = 0.0
  kernel_init: str = 'lecun_normal'

  @property
  def name(self) -> str:
    return f'{self.cell.upper()}-{self.hidden_size}'

  @property
  def has_scheduler(self) -> bool:
    """Whether the cell is a VC one (its scheduler sets ``m_t``)."""
    return registry.entry(self.cell).family == 'vc'


def check_spec(spec: ModelSpec) -> ModelSpec:
  """Validates ``spec``; returns it. Raises ``ValueError`` naming the field."""
  if spec.cell not in CELL_NAMES:
    raise ValueError(f'cell must be one of {CELL_NAMES}, got {spec.cell!r}.')
  check_positive_int('hidden_size', spec.hidden_size)
  check_positive_int('steps_per_epoch', spec.steps_per_epoch)
  for name in ('target', 'boundary_target'):
    value = getattr(spec, name)
    if value is not None and not 0.0 <= value <= 1.0:
      raise ValueError(f'{name} must be in [0, 1], got {value!r}.')
  if not (math.isfinite(spec.penalty_weight) and spec.penalty_weight >= 0):
    raise ValueError('penalty_weight must be a finite number >= 0, got '
                     f'{spec.penalty_weight!r}.')
  if spec.kernel_init not in KERNEL_INITS:
    raise ValueError(f'kernel_init must be one of {tuple(KERNEL_INITS)}, '
                     f'got {spec.kernel_init!r}.')
  if spec.penalty_norm not in ('l1', 'l2'):
    raise ValueError(f"penalty_norm must be 'l1' or 'l2', got "
                     f'{spec.penalty_norm!r}.')
  return spec


def sharpness(spec: ModelSpec) -> vc.Schedule:
  r"""The sharpness schedule :math:`\lambda(\mathrm{step})` of ``spec``."""
  return vc.paper_sharpness(spec.steps_per_epoch,
                            initial=spec.sharpness_initial,
                            increment=spec.sharpness_increment,
                            maximum=spec.sharpness_maximum)


def sharpness_at(spec: ModelSpec, step: int) -> float:
  """The sharpness at ``step`` as a float (for analysis on the host)."""
  return float(sharpness(spec)(jnp.asarray(step, jnp.int32)))


def build_cell(spec: ModelSpec) -> Cell:
  """The recurrent cell of ``spec`` (the VC cells with :func:`sharpness`)."""
  check_spec(spec)
  d = spec.hidden_size
  options = {'kernel_init': KERNEL_INITS[spec.kernel_init]}
  if spec.has_scheduler:
    options.update(sharpness=sharpness(spec), epsilon=spec.epsilon,
                   scheduler_bias=spec.scheduler_bias)
  return registry.build_cell(spec.cell, d, **options)


def build_model(spec: ModelSpec, vocab_size: int) -> SequenceModel:
  """The language model of ``spec``: an embedding of size ``D``, the cell
  and a linear readout over ``vocab_size`` symbols (:func:`lm_task`'s)."""
  return language_model(build_cell(spec), vocab_size,
                        embed_size=spec.hidden_size, readout='linear')


def elman_units(cell_name: str) -> float:
  """Table 3's cost of a cell of dimension ``d`` in units of ``d^2``."""
  return vc.rnn_equivalent_dim(cell_name, 1) ** 2


def _penalty(spec: ModelSpec, bounds: jax.Array | None):
  r"""The loss term :math:`\Omega` of Eq. 10, weighted, as a regularizer."""

  def regularizer(ys, inputs, step):
    del step
    if spec.boundary_target is None:
      target = jnp.asarray(spec.target, ys.m.dtype)
    else:
      target = vc.guide_targets(jnp.isin(inputs, bounds), spec.target,
                                spec.boundary_target, ys.m.dtype)
    return spec.penalty_weight * vc.penalty(
        ys.m, target, norm=spec.penalty_norm, symmetric=spec.symmetric)

  return regularizer


def lm_task(spec: ModelSpec, train_stream, valid_stream, vocab_size: int, *,
            batch_size: int, seq_len: int,
            boundary_ids: Sequence[int] | None = None,
            eval_batch_size: int | None = None,
            eval_seq_len: int | None = None) -> lm.LanguageModelTask:
  r"""The language model of Sec. 5 on the shared LM trainer (truncated BPTT).

  The loss is the NLL of Eq. 1 summed over the window plus
  ``penalty_weight`` :math:`\cdot\,\Omega(m, \bar m)` (Eq. 10, summed over
  the window), averaged over the batch; in the guide setting
  (``spec.boundary_target``) the target is ``boundary_target`` where the
  input symbol is one of ``boundary_ids`` (:func:`vcrnn_jax.vc.guide_targets`).
  Every evaluation logs ``bpc`` (bits per symbol), ``perplexity``, mean
  ``m`` (1 for the constant cells), ``dims`` (dimensions updated, the soft
  mask's non-zero entries), and RNN-d twice: ``rnn_d`` from the dimensions
  updated (the multiplications with possibly non-zero operands, Sec. 4.1)
  and ``rnn_d_m`` from :math:`m_t D` (the limit of a sharp mask).

  Args:
    spec: the model.
    train_stream, valid_stream: 1-D int id streams.
    vocab_size: the number of symbols.
    batch_size: rows of the BPTT stream.
    seq_len: BPTT length.
    boundary_ids: the boundary symbols of the guide setting (required with
      ``spec.boundary_target``).
    eval_batch_size, eval_seq_len: evaluation rows and window (default: the
      training ones).

  Returns:
    The :class:`~vcrnn_jax.training.lm.LanguageModelTask`.
  """
  check_spec(spec)
  if spec.boundary_target is not None and not boundary_ids:
    raise ValueError('the guide setting (boundary_target) needs the corpus\'s '
                     'boundary symbols; this corpus has none.')
  d = spec.hidden_size
  model = build_model(spec, vocab_size)
  units = elman_units(spec.cell)
  bounds = (None if boundary_ids is None
            else jnp.asarray(np.asarray(list(boundary_ids), np.int32)))

  regularizer = (_penalty(spec, bounds)
                 if spec.has_scheduler and spec.penalty_weight > 0 else None)

  def statistics(ys, inputs):
    if spec.has_scheduler:
      m = ys.m.astype(jnp.float32)
      dims = ys.dims.astype(jnp.float32)
    else:
      m = jnp.ones(inputs.shape, jnp.float32)
      dims = jnp.full(inputs.shape, float(d), jnp.float32)
    return {'m': m, 'dims': dims, 'cost': units * jnp.square(dims),
            'cost_m': units * jnp.square(m * d)}

  def derived(means):
    return {'rnn_d': math.sqrt(max(means['cost'], 0.0)),
            'rnn_d_m': math.sqrt(max(means['cost_m'], 0.0))}

  return lm.lm_experiment(
      model, train_stream, valid_stream, batch_size=batch_size,
      seq_len=seq_len, mode='bptt', eval_mode='stream',
      eval_batch_size=eval_batch_size, eval_seq_len=eval_seq_len,
      regularizer=regularizer, statistics=statistics, derived=derived)


# ----------------------------------------------------------------------------
# Analysis of a trained scheduler.


def top_dims_usage(m: Any, hidden_size: int, sharpness_value: float, *,
                   epsilon: float = 0.01, top: int | None = None
                   ) -> np.ndarray:
  r"""How much the highest dimensions are updated at each step (Fig. 2).

  The mean of the soft mask :math:`(e_t)_i` (Eq. 8) over the ``top`` highest
  dimensions ``D - top .. D - 1`` (Fig. 2: 950-1000 of 1000, i.e. the top 5%,
  the default), per step.

  Args:
    m: ``[T]`` scheduler outputs.
    hidden_size: ``D``.
    sharpness_value: :math:`\lambda` the model was evaluated with.
    epsilon: the cell's :math:`\epsilon`.
    top: how many dimensions (default ``max(1, D // 20)``).

  Returns:
    ``[T]`` float64 values in ``[0, 1]``.
  """
  hidden_size = check_positive_int('hidden_size', hidden_size)
  top = max(1, hidden_size // 20) if top is None else check_positive_int(
      'top', top)
  e = np.asarray(vc.soft_mask(jnp.asarray(np.asarray(m, np.float32)),
                              hidden_size, sharpness_value, epsilon))
  return e[..., hidden_size - min(top, hidden_size):].mean(-1).astype(
      np.float64)


def peak_steps(m: Any, fraction: float = 0.05) -> np.ndarray:
  r"""The steps whose :math:`m_t` is among the largest ``fraction`` of all.

  Fig. 2 and 3 read the schedule off the highest dimensions (950-1000 of
  1000), which only the largest :math:`m_t` reach: "the higher dimensions
  are used about once per word". A model whose :math:`m_t` never reaches
  0.95 never updates those dimensions (:func:`top_dims_usage` is 0), so
  this marks the steps that reach the highest dimensions *this* model
  uses: those above the ``1 - fraction`` quantile of :math:`m_t`. The mean
  of the mark over a symbol class (:func:`mean_by_class`) is the rate at
  which that class gets one of the largest updates; ``fraction`` is the
  rate of a class without preference. Ties at the quantile are left out,
  so a constant :math:`m_t` marks no step.

  Args:
    m: ``[T]`` scheduler outputs.
    fraction: in ``(0, 1)``, the share of steps marked.

  Returns:
    ``[T]`` booleans.
  """
  if not 0.0 < fraction < 1.0:
    raise ValueError(f'peak_steps: fraction must be in (0, 1), got '
                     f'{fraction!r}.')
  m = np.asarray(m, np.float64).reshape(-1)
  if m.size == 0:
    return np.zeros(0, bool)
  return m > np.quantile(m, 1.0 - fraction)


def dominant_period(signal: Any, max_lag: int, min_lag: int = 2, *,
                    tolerance: float = 0.9) -> dict:
  """The period of a per-step signal, from its autocorrelation.

  A signal of period 8 correlates as well with itself at lags 16, 24 and 32
  as at 8, so the highest peak of a finite sample lands on any multiple of
  the period. The fundamental is therefore also reported: the shortest lag
  that is a local maximum of the autocorrelation and reaches ``tolerance``
  of the highest peak (the usual guard against octave errors in pitch
  detection).

  Args:
    signal: ``[T]`` values (e.g. :math:`m_t` over a bit stream).
    max_lag: the longest period considered.
    min_lag: the shortest period considered (2: a lag of 1 is not a period).
    tolerance: in ``(0, 1]``, how close to the highest peak the fundamental
      must come.

  Returns:
    ``{'period': lag of the highest autocorrelation in [min_lag, max_lag],
    'autocorrelation': its value, 'fundamental': the shortest lag as above,
    'fundamental_autocorrelation': its value, 'acf': the autocorrelation at
    lags 0 .. max_lag}`` (``acf`` a list; both lags 0 and both values NaN
    for a constant signal).
  """
  x = np.asarray(signal, np.float64).reshape(-1)
  max_lag = check_positive_int('max_lag', max_lag)
  if not 0.0 < tolerance <= 1.0:
    raise ValueError(f'dominant_period: tolerance must be in (0, 1], got '
                     f'{tolerance!r}.')
  if len(x) <= max_lag + 1:
    raise ValueError(f'dominant_period: the signal has {len(x)} steps, too '
                     f'few for max_lag={max_lag}.')
  x = x - x.mean()
  var = float(np.dot(x, x))
  if var <= 1e-12 * len(x):
    return {'period': 0, 'autocorrelation': float('nan'), 'fundamental': 0,
            'fundamental_autocorrelation': float('nan'),
            'acf': [1.0] + [0.0] * max_lag}
  acf = np.array([1.0] + [float(np.dot(x[:-k], x[k:])) / var
                          for k in range(1, max_lag + 1)])
  lags = np.arange(min_lag, max_lag + 1)
  best = int(lags[np.argmax(acf[min_lag:])])
  fundamental = best
  for lag in range(min_lag, best):
    if (acf[lag] >= max(acf[lag - 1], acf[lag + 1])
        and acf[lag] >= tolerance * acf[best]):
      fundamental = lag
      break
  return {'period': best, 'autocorrelation': float(acf[best]),
          'fundamental': fundamental,
          'fundamental_autocorrelation': float(acf[fundamental]),
          'acf': acf.tolist()}


def mean_by_class(values: Any, classes: Sequence[Any],
                  order: Sequence[Any] | None = None) -> dict:
  """Mean and count of a per-step value in each class (Table 2, Sec. 5.1).

  Args:
    values: ``[T]`` per-step values (:math:`m_t`).
    classes: ``[T]`` class of each step (any hashable; None: left out).
    order: the classes to report, in this order (default: sorted by first
      appearance).

  Returns:
    ``{class: {'mean': float, 'count': int}}`` for classes with steps.
  """
  values = np.asarray(values, np.float64).reshape(-1)
  classes = list(classes)
  if len(classes) != len(values):
    raise ValueError(f'mean_by_class: {len(values)} values but '
                     f'{len(classes)} classes.')
  groups: dict = {}
  for v, c in zip(values, classes):
    if c is not None:
      groups.setdefault(c, []).append(v)
  keys = list(order) if order is not None else list(groups)
  return {k: {'mean': float(np.mean(groups[k])), 'count': len(groups[k])}
          for k in keys if k in groups}


def boundary_classes(tokens: Sequence[int], boundary_ids: Sequence[int]
                     ) -> list:
  """``'boundary'`` or ``'inside word'`` for each input symbol."""
  bounds = set(int(b) for b in boundary_ids)
  return ['boundary' if int(t) in bounds else 'inside word' for t in tokens]


WORD_POSITIONS = ('boundary', 'first letter', 'middle letter', 'last letter',
                  'one-letter word')


def word_position_classes(tokens: Sequence[int],
                          boundary_ids: Sequence[int]) -> list:
  """Where each input symbol sits in its word (one of ``WORD_POSITIONS``).

  m_t is computed from x_t (Eq. 7), and its output predicts x_{t+1}: a high
  m_t on a ``'last letter'`` is computation spent on predicting the boundary,
  one on a ``'boundary'`` is spent on predicting the next word's first
  letter. The paper's "higher dimensions used about once per word" (Sec.
  5.2.1, Fig. 3) does not say which of the two; this grouping tells them
  apart. The last symbol, whose successor is unknown, counts as followed by
  a letter.
  """
  bounds = set(int(b) for b in boundary_ids)
  is_bound = [int(t) in bounds for t in tokens]
  out = []
  for i, b in enumerate(is_bound):
    if b:
      out.append('boundary')
      continue
    starts = i == 0 or is_bound[i - 1]
    ends = i + 1 < len(is_bound) and is_bound[i + 1]
    out.append('one-letter word' if starts and ends else
               'first letter' if starts else
               'last letter' if ends else 'middle letter')
  return out


def word_groupings(tokens: Sequence[int], boundary_ids: Sequence[int]
                   ) -> dict:
  """The groupings of a text's symbols that the VC binaries report m_t by.

  ``'symbol'``: boundary vs inside a word (:func:`boundary_classes`);
  ``'position in word'``: :func:`word_position_classes`.
  """
  return {'symbol': boundary_classes(tokens, boundary_ids),
          'position in word': word_position_classes(tokens, boundary_ids)}


_PITCH = re.compile(r"^([=^_]*)([A-Ga-gz])([,']*)(.*)$")


def note_length(token: str) -> float | None:
  """The length of a (pitch, length) symbol in units (``=d2`` -> 2.0).

  Durations as folk-rnn writes them: none (1 unit), ``2``, ``3/2``, ``/2``,
  ``/`` (1/2), with a broken-rhythm ``>``/``<`` ignored. None for a token
  that is not a note or a rest.
  """
  match = _PITCH.match(token)
  if not match:
    return None
  duration = match.group(4).rstrip('<>')
  if not duration:
    return 1.0
  try:
    if '/' in duration:
      num, _, den = duration.partition('/')
      return float(num or 1) / float(den or 2)
    return float(duration)
  except ValueError:
    return None


def music_class(token: str) -> str:
  """``'bar'`` (bars and repeats), ``'rest'``, ``'note'`` or ``'other'``."""
  if token and set(token) <= set('|:[]123') and '|' in token or token in (
      '::', ':|', '|:'):
    return 'bar'
  match = _PITCH.match(token)
  if match and note_length(token) is not None:
    return 'rest' if match.group(2) == 'z' else 'note'
  return 'other'


def music_classes(tokens: Sequence[str]) -> dict:
  """Per-symbol class lists for Sec. 5.1: kind (bar/rest/note/other) and
  note length (notes and rests only, as ``'0.25'``, ``'0.5'``, ...)."""
  kinds = [music_class(t) for t in tokens]
  lengths = []
  for t, k in zip(tokens, kinds):
    length = note_length(t) if k in ('note', 'rest') else None
    lengths.append(None if length is None else f'{length:g}')
  return {'kind': kinds, 'length': lengths}


def bit_classes(positions: Sequence[int]) -> list:
  """``'bit 0'`` .. ``'bit 7'`` (0 most significant) or ``'buffer'``."""
  return ['buffer' if int(p) < 0 else f'bit {int(p)}' for p in positions]


def buffer_classes(positions: Sequence[int]) -> list:
  """``'buffer 1'`` .. ``'buffer B'`` (the k-th buffer bit after a
  character) or ``'character bit'``: where in the buffer m_t rises or falls
  (Fig. 2 with buffers)."""
  out, run = [], 0
  for p in positions:
    run = run + 1 if int(p) < 0 else 0
    out.append(f'buffer {run}' if run else 'character bit')
  return out


def summary(values: Mapping[str, Any]) -> dict:
  """JSON-ready copy of an analysis dict (floats, ints, lists)."""
  def clean(v):
    if isinstance(v, Mapping):
      return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
      return [clean(x) for x in v]
    if isinstance(v, (np.floating, float)):
      return float(v)
    if isinstance(v, (np.integer, int)):
      return int(v)
    return v
  return clean(dict(values))
