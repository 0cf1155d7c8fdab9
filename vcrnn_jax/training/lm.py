r"""Next-symbol prediction for any model and vocabulary: the shared LM trainer.

:func:`lm_experiment` turns a language model
(:func:`vcrnn_jax.models.language_model`) and a corpus from
:func:`vcrnn_jax.data.load` (bytes, characters, bits, words, music tokens)
into an :class:`~vcrnn_jax.training.train.Experiment`. Every
paper's language models run on it: ACT's Wikipedia bytes, VCRNN's characters,
bits and tunes, EI-REHN's PTB words. The objective is VCRNN Eq. 1, the
negative log-likelihood summed over the window and averaged over the batch,
plus an optional per-sequence regularizer (ACT Eq. 12's ``tau * P(x)``,
VCRNN Eq. 10's Omega).

Two ways to read the training stream (``mode``):

* ``'windows'``: ``[batch, seq_len + 1]`` windows at random offsets, a new
  draw per step from ``fold_in(data_key, step)``, the state reset to zero at
  each window (ACT Sec. 3.5).
* ``'bptt'``: truncated backpropagation through time (Zaremba et al., Zilly
  et al.): the stream is cut into ``batch`` contiguous rows, step ``s`` reads
  the ``s mod n``-th window of ``seq_len`` symbols of every row, and the
  recurrent state is carried from each window to the next (no gradient
  across them) and reset at the start of every epoch. Window ``n`` ends an
  epoch; the step is all it takes to know where the run is.

Evaluation (``eval_mode``): ``'stream'`` runs over the whole held-out stream
in contiguous windows with the state carried (every symbol counted once);
``'windows'`` uses a fixed set of random held-out windows (ACT's setting).
It reports bits per symbol (``bpc``: per character, per bit or per word),
``perplexity`` (``2 ** bpc``) and the mean of each per-step statistic.
"""

from collections.abc import Callable, Iterable, Mapping
import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax.core import Context, check_positive_int, shape_probe_context
from vcrnn_jax.data.batching import random_windows
from vcrnn_jax.metrics import bits_per_symbol
from vcrnn_jax.models import SequenceModel
from vcrnn_jax.training.train import Experiment, StepInfo

__all__ = [
    'MODES',
    'EVAL_MODES',
    'LMBatch',
    'bptt_rows',
    'LanguageModelTask',
    'lm_experiment',
]

MODES = ('windows', 'bptt')
EVAL_MODES = ('stream', 'windows')

# (ys, inputs [B, T], step) -> per-sequence penalty [B], added to the loss.
Regularizer = Callable[[Any, jax.Array, jax.Array], jax.Array]
# (ys, inputs [B, T]) -> {name: [B, T] per-step values}, averaged over steps.
Statistics = Callable[[Any, jax.Array], Mapping[str, jax.Array]]
# {name: mean} of an evaluation -> more metrics computed from them.
Derived = Callable[[Mapping[str, float]], Mapping[str, float]]


class LMBatch(NamedTuple):
  windows: jax.Array    # [B, seq_len + 1] int32 ids: inputs [:, :-1],
                        # targets [:, 1:]
  reset: jax.Array      # bool scalar: start from a zero state (new epoch)


def _check_stream(name: str, stream, length: int, rows: int = 1) -> np.ndarray:
  stream = np.asarray(stream)
  if stream.ndim != 1:
    raise ValueError(f'the {name} split must be a 1-D id stream, got shape '
                     f'{stream.shape}.')
  if len(stream) // rows < length + 1:
    raise ValueError(
        f'the {name} split has {len(stream)} symbols, too few for {rows} '
        f'row(s) of at least {length + 1} (seq_len + 1) symbols.')
  return stream


def bptt_rows(stream: np.ndarray, rows: int, seq_len: int
              ) -> tuple[np.ndarray, int]:
  """The stream as ``rows`` contiguous int32 rows, and the windows per epoch.

  Window ``w`` of row ``b`` is ``rows[b, w*seq_len : (w+1)*seq_len + 1]``
  (inputs and the targets shifted by one); the tail that does not fill a
  window is dropped, as in Zaremba et al.'s reader.
  """
  length = len(stream) // rows
  windows = (length - 1) // seq_len
  table = np.asarray(stream[:rows * length], np.int32).reshape(rows, length)
  return table, windows


def _nll(logits: jax.Array, targets: jax.Array) -> jax.Array:
  logp = jax.nn.log_softmax(logits.astype(jnp.float32))
  return -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]


class LanguageModelTask(NamedTuple):
  """What :func:`lm_experiment` built, for evaluation and analysis."""
  experiment: Experiment
  evaluate_stream: Callable[..., dict]   # (params, stream, step=None)
                                         # -> metrics
  per_step: Callable[..., dict]          # (params, tokens [T], step)
                                         # -> [T] stats


def _zero_state(model: SequenceModel, batch: int) -> Any:
  """The model's initial state for ``batch`` rows: zeros, whatever its cell."""
  # Traced abstractly: the shapes without initialising or running anything.
  params = jax.eval_shape(model.init, jax.random.key(0))
  tokens = jax.ShapeDtypeStruct((batch, 1), jnp.int32)
  _, _, state = jax.eval_shape(
      lambda p, t: model.apply(p, t, return_state=True,
                                context=shape_probe_context()),
      params, tokens)
  return jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), state)


def _forward(model: SequenceModel, params, windows: jax.Array,
             context: Context, state=None) -> tuple[jax.Array, Any, Any]:
  """The NLL ``[B, T]`` of ``windows[:, 1:]`` given ``windows[:, :-1]``, the
  cell's per-step outputs and its final state."""
  inputs, targets = windows[:, :-1], windows[:, 1:]
  logits, ys, final = model.apply(params, inputs, context=context,
                                  state=state, return_state=True)
  return _nll(logits, targets), ys, final


def _loss_terms(model: SequenceModel, regularizer: Regularizer | None,
                statistics: Statistics, params, windows: jax.Array,
                context: Context, state=None) -> tuple[jax.Array, dict, Any]:
  """The training loss of a batch of windows (VCRNN Eq. 1 plus the
  regularizer), its metrics and the final state."""
  nll, ys, final = _forward(model, params, windows, context, state)
  total = jnp.sum(nll, axis=1)
  if regularizer is not None:
    total = total + regularizer(ys, windows[:, :-1], context.step)
  stats = statistics(ys, windows[:, :-1])
  metrics = {'bpc': jnp.mean(nll) / math.log(2.0)}
  metrics.update({k: jnp.mean(v) for k, v in stats.items()})
  return jnp.mean(total), metrics, final


# ---- training: mode='windows'


def _windows_sampler(stream: np.ndarray, batch_size: int, seq_len: int
                     ) -> Callable[[jax.Array, jax.Array], LMBatch]:
  """``sample(key, step)``: ``batch_size`` windows at random offsets, a new
  draw per step, each starting from a zero state."""
  stream = jnp.asarray(stream.astype(np.int32))

  @jax.jit
  def sample(key, step):
    windows = random_windows(jax.random.fold_in(key, step), stream,
                             batch_size, seq_len)
    return LMBatch(windows, jnp.asarray(True))

  return sample


def _windows_loss(loss_terms: Callable[..., tuple]) -> Callable[..., tuple]:
  """The :class:`Experiment` loss of ``mode='windows'`` (no carried state)."""
  def loss(params, batch: LMBatch, info: StepInfo):
    total, metrics, _ = loss_terms(
        params, batch.windows, Context(step=info.step, key=info.key))
    return total, metrics

  return loss


# ---- training: mode='bptt'


def _bptt_sampler(stream: np.ndarray, batch_size: int, seq_len: int
                  ) -> Callable[[jax.Array, jax.Array], LMBatch]:
  """``sample(key, step)``: window ``step mod n`` of every row of
  :func:`bptt_rows`, flagged to reset the state when it opens an epoch."""
  table, per_epoch = bptt_rows(stream, batch_size, seq_len)
  table = jnp.asarray(table)

  @jax.jit
  def sample(key, step):
    del key  # Truncated BPTT reads the stream in order.
    window = step % per_epoch
    windows = jax.lax.dynamic_slice_in_dim(table, window * seq_len,
                                           seq_len + 1, axis=1)
    return LMBatch(windows, window == 0)

  return sample


def _bptt_loss(loss_terms: Callable[..., tuple]) -> Callable[..., tuple]:
  """The :class:`Experiment` loss of ``mode='bptt'``: starts from the carried
  state and returns the final one as the next step's carry."""
  def loss(params, batch: LMBatch, info: StepInfo):
    state = jax.tree_util.tree_map(
        lambda s: jnp.where(batch.reset, jnp.zeros_like(s), s), info.carry)
    total, metrics, final = loss_terms(
        params, batch.windows, Context(step=info.step, key=info.key), state)
    # Truncated: no gradient flows into the previous window.
    return total, (metrics, jax.lax.stop_gradient(final))

  return loss


# ---- evaluation


def _window_sums(model: SequenceModel, statistics: Statistics
                 ) -> Callable[..., tuple]:
  """Jitted ``(params, windows, state, step) -> (summed NLL, {stat: sum},
  symbols, final state)`` of one batch of evaluation windows."""
  @jax.jit
  def window_sums(params, windows, state, step):
    nll, ys, final = _forward(model, params, windows, Context(step=step),
                              state)
    stats = statistics(ys, windows[:, :-1])
    return (jnp.sum(nll), {k: jnp.sum(v) for k, v in stats.items()},
            nll.size, final)

  return window_sums


def _accumulate(sums: Iterable[tuple]) -> tuple[float, dict, int]:
  """Adds up ``(nll, stats, count)`` of windows on the host, in float64."""
  nll, count, stats = 0.0, 0, {}
  for a, s, c in sums:
    nll, count = nll + float(a), count + int(c)
    for k, v in s.items():
      stats[k] = stats.get(k, 0.0) + float(v)
  return nll, stats, count


def _summary(nll: float, stats: dict, count: int,
             derived: Derived | None) -> dict:
  """The metrics of an evaluation from its sums: ``bpc``, ``perplexity``,
  the mean of each statistic and the ``derived`` metrics."""
  out = {'bpc': bits_per_symbol(nll, count)}
  out['perplexity'] = float(2.0 ** out['bpc'])
  out.update({k: v / count for k, v in stats.items()})
  if derived is not None:
    out.update({k: float(v) for k, v in derived(dict(out)).items()})
  return out


def _stream_evaluator(model: SequenceModel, window_sums: Callable[..., tuple],
                      batch_size: int, seq_len: int,
                      derived: Derived | None) -> Callable[..., dict]:
  """``evaluate_stream(params, stream, step=None)``: contiguous windows of
  :func:`bptt_rows`, the state carried across, every symbol counted once."""
  def evaluate_stream(params, stream, step=None):
    """Bits per symbol etc. over a whole stream, state carried across."""
    stream = _check_stream('evaluated', stream, seq_len, batch_size)
    table, windows = bptt_rows(stream, batch_size, seq_len)
    step = jnp.asarray(0 if step is None else step, jnp.int32)

    def sums():
      state = _zero_state(model, batch_size)
      for w in range(windows):
        chunk = jnp.asarray(table[:, w * seq_len:(w + 1) * seq_len + 1])
        a, s, c, state = window_sums(params, chunk, state, step)
        yield a, s, c

    return _summary(*_accumulate(sums()), derived)

  return evaluate_stream


def _held_out_evaluator(model: SequenceModel,
                        window_sums: Callable[..., tuple],
                        held_out: np.ndarray, batch_size: int,
                        derived: Derived | None) -> Callable[..., dict]:
  """``evaluate(params, step)`` over fixed windows ``held_out`` ``[N, T + 1]``
  (ACT's setting), each from a zero state, ``batch_size`` at a time."""
  def evaluate(params, step):
    step = jnp.asarray(step, jnp.int32)

    def sums():
      for i in range(0, len(held_out), batch_size):
        chunk = jnp.asarray(held_out[i:i + batch_size])
        a, s, c, _ = window_sums(params, chunk,
                                 _zero_state(model, chunk.shape[0]), step)
        yield a, s, c

    return _summary(*_accumulate(sums()), derived)

  return evaluate


def _per_step_stats(model: SequenceModel, statistics: Statistics
                    ) -> Callable[..., dict]:
  """``per_step(params, tokens, step=None)``: the statistics and the NLL at
  every symbol of one token sequence."""
  @jax.jit
  def jitted(params, tokens, step):
    windows = tokens[None]
    nll, ys, _ = _forward(model, params, windows, Context(step=step),
                          _zero_state(model, 1))
    out = {k: v[0] for k, v in statistics(ys, windows[:, :-1]).items()}
    out['nll'] = nll[0]
    return out

  def per_step(params, tokens, step=None):
    """Statistics at every symbol of ``tokens[:-1]`` (predicting ``[1:]``)."""
    tokens = jnp.asarray(np.asarray(tokens, np.int32))
    step = jnp.asarray(0 if step is None else step, jnp.int32)
    return {k: np.asarray(v) for k, v in jitted(params, tokens, step).items()}

  return per_step


def lm_experiment(
    model: SequenceModel,
    train_stream,
    valid_stream,
    *,
    batch_size: int,
    seq_len: int,
    mode: str = 'bptt',
    eval_mode: str = 'stream',
    eval_batch_size: int | None = None,
    eval_seq_len: int | None = None,
    eval_windows: int = 64,
    eval_seed: int = 2**31 - 1,
    regularizer: Regularizer | None = None,
    statistics: Statistics | None = None,
    derived: Derived | None = None,
) -> LanguageModelTask:
  """A language-modelling :class:`Experiment` (see module docstring).

  Args:
    model: a :class:`~vcrnn_jax.models.SequenceModel` over int tokens, e.g.
      :func:`vcrnn_jax.models.language_model`; ``apply`` must accept
      ``context=``, ``state=`` and ``return_state=``.
    train_stream, valid_stream: 1-D int id streams (``Dataset.train`` and
      ``Dataset.valid`` of a symbol corpus).
    batch_size: rows per training batch.
    seq_len: symbols per training window (the BPTT length).
    mode: ``'bptt'`` or ``'windows'``.
    eval_mode: ``'stream'`` or ``'windows'``.
    eval_batch_size: rows of the held-out evaluation (default
      ``batch_size``).
    eval_seq_len: window length of the evaluation (default ``seq_len``).
    eval_windows: with ``eval_mode='windows'``, how many fixed windows.
    eval_seed: seed of those windows.
    regularizer: ``(ys, inputs, step) -> [batch]`` per-sequence penalty added
      to the summed NLL (ACT: ``tau * sum_t rho_t``; VC: Omega). ``ys`` are
      the cell's per-step outputs, ``inputs`` the ``[batch, seq_len]`` input
      ids (for targets that depend on the symbol, e.g. word boundaries).
    statistics: ``(ys, inputs) -> {name: [batch, seq_len]}`` per-step values
      (ACT's ponder, VC's m_t) logged as their mean, in training and in
      evaluation.
    derived: ``{name: mean} -> {name: value}``: metrics an evaluation adds
      from its means (VC's RNN-d, the square root of a mean cost).

  Returns:
    A :class:`LanguageModelTask`: the experiment, ``evaluate_stream(params,
    stream, step=None)`` for any split (the test split after training), and
    ``per_step(params, tokens, step=None)``: the statistics at every symbol of
    a 1-D token sequence, plus ``'nll'`` (nats), for plots over text.
  """
  batch_size = check_positive_int('batch_size', batch_size)
  seq_len = check_positive_int('seq_len', seq_len)
  eval_batch_size = check_positive_int('eval_batch_size',
                                       eval_batch_size or batch_size)
  eval_seq_len = check_positive_int('eval_seq_len', eval_seq_len or seq_len)
  check_positive_int('eval_windows', eval_windows)
  if mode not in MODES:
    raise ValueError(f'mode must be one of {MODES}, got {mode!r}.')
  if eval_mode not in EVAL_MODES:
    raise ValueError(f'eval_mode must be one of {EVAL_MODES}, got '
                     f'{eval_mode!r}.')
  rows = batch_size if mode == 'bptt' else 1
  train_stream = _check_stream('train', train_stream, seq_len, rows)
  valid_stream = _check_stream(
      'valid', valid_stream, eval_seq_len,
      eval_batch_size if eval_mode == 'stream' else 1)
  stats_fn = statistics or (lambda ys, inputs: {})
  loss_terms = functools.partial(_loss_terms, model, regularizer, stats_fn)

  if mode == 'windows':
    sample = _windows_sampler(train_stream, batch_size, seq_len)
    loss = _windows_loss(loss_terms)
    init_carry = None
  else:
    sample = _bptt_sampler(train_stream, batch_size, seq_len)
    loss = _bptt_loss(loss_terms)
    init_carry = functools.partial(_zero_state, model)

  # One jitted function for every evaluation, so they share its compilations.
  window_sums = _window_sums(model, stats_fn)
  evaluate_stream = _stream_evaluator(model, window_sums, eval_batch_size,
                                      eval_seq_len, derived)
  if eval_mode == 'windows':
    held_out = random_windows(jax.random.PRNGKey(eval_seed), valid_stream,
                              eval_windows, eval_seq_len)
    evaluate = _held_out_evaluator(model, window_sums, held_out,
                                   eval_batch_size, derived)
  else:
    def evaluate(params, step):
      return evaluate_stream(params, valid_stream, step)

  def init(key):
    return model.init(key)

  experiment = Experiment(init=init, loss=loss, sample=sample,
                          evaluate=evaluate, init_carry=init_carry)
  return LanguageModelTask(experiment, evaluate_stream,
                           _per_step_stats(model, stats_fn))
