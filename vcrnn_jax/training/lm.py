r"""Next-symbol prediction for any model and vocabulary: the shared LM trainer.

:func:`lm_experiment` turns a language model (:func:`vcrnn_jax.models.language_model`)
and a corpus from :func:`vcrnn_jax.data.load` (bytes, characters, bits, words,
music tokens) into an :class:`~vcrnn_jax.training.train.Experiment`. Every
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

import math
from typing import Any, Callable, Mapping, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from vcrnn_jax.core import Context, check_positive_int, shape_probe_context
from vcrnn_jax.data.batching import random_windows
from vcrnn_jax.metrics import bits_per_symbol
from vcrnn_jax.models import SequenceModel
from vcrnn_jax.training.train import Experiment, StepInfo

MODES = ('windows', 'bptt')
EVAL_MODES = ('stream', 'windows')

# (ys, inputs [B, T], step) -> per-sequence penalty [B], added to the loss.
Regularizer = Callable[[Any, jax.Array, jax.Array], jax.Array]
# (ys, inputs [B, T]) -> {name: [B, T] per-step values}, averaged over steps.
Statistics = Callable[[Any, jax.Array], Mapping[str, jax.Array]]
# {name: mean} of an evaluation -> more metrics computed from them.
Derived = Callable[[Mapping[str, float]], Mapping[str, float]]


class LMBatch(NamedTuple):
  windows: jax.Array    # [B, seq_len + 1] int32 ids: inputs [:, :-1], targets [:, 1:]
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
  evaluate_stream: Callable[..., dict]   # (params, stream, step=None) -> metrics
  per_step: Callable[..., dict]          # (params, tokens [T], step) -> [T] stats


def lm_experiment(
    model: SequenceModel,
    train_stream,
    valid_stream,
    *,
    batch_size: int,
    seq_len: int,
    mode: str = 'bptt',
    eval_mode: str = 'stream',
    eval_batch_size: Optional[int] = None,
    eval_seq_len: Optional[int] = None,
    eval_windows: int = 64,
    eval_seed: int = 2**31 - 1,
    regularizer: Optional[Regularizer] = None,
    statistics: Optional[Statistics] = None,
    derived: Optional[Derived] = None,
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

  def zero_state(batch):
    # The model's initial state, whatever its cell: traced abstractly.
    params = jax.eval_shape(model.init, jax.random.key(0))
    tokens = jax.ShapeDtypeStruct((batch, 1), jnp.int32)
    _, _, state = jax.eval_shape(
        lambda p, t: model.apply(p, t, return_state=True,
                                  context=shape_probe_context()),
        params, tokens)
    return jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), state)

  def forward(params, windows, context, state=None):
    inputs, targets = windows[:, :-1], windows[:, 1:]
    logits, ys, final = model.apply(params, inputs, context=context,
                                    state=state, return_state=True)
    return _nll(logits, targets), ys, final

  def loss_terms(params, windows, context, state=None):
    nll, ys, final = forward(params, windows, context, state)
    total = jnp.sum(nll, axis=1)
    if regularizer is not None:
      total = total + regularizer(ys, windows[:, :-1], context.step)
    stats = stats_fn(ys, windows[:, :-1])
    metrics = {'bpc': jnp.mean(nll) / math.log(2.0)}
    metrics.update({k: jnp.mean(v) for k, v in stats.items()})
    return jnp.mean(total), metrics, final

  if mode == 'windows':
    train_dev = jnp.asarray(train_stream.astype(np.int32))

    @jax.jit
    def sample(key, step):
      windows = random_windows(jax.random.fold_in(key, step), train_dev,
                               batch_size, seq_len)
      return LMBatch(windows, jnp.asarray(True))

    def loss(params, batch, info: StepInfo):
      total, metrics, _ = loss_terms(
          params, batch.windows, Context(step=info.step, key=info.key))
      return total, metrics

    init_carry = None
  else:
    table, per_epoch = bptt_rows(train_stream, batch_size, seq_len)
    table_dev = jnp.asarray(table)

    @jax.jit
    def sample(key, step):
      del key  # Truncated BPTT reads the stream in order.
      window = step % per_epoch
      windows = jax.lax.dynamic_slice_in_dim(table_dev, window * seq_len,
                                             seq_len + 1, axis=1)
      return LMBatch(windows, window == 0)

    init_carry = zero_state

    def loss(params, batch, info: StepInfo):
      state = jax.tree_util.tree_map(
          lambda s: jnp.where(batch.reset, jnp.zeros_like(s), s), info.carry)
      total, metrics, final = loss_terms(
          params, batch.windows, Context(step=info.step, key=info.key), state)
      return total, (metrics, jax.lax.stop_gradient(final))

  # ---- evaluation
  @jax.jit
  def eval_window(params, windows, state, step):
    context = Context(step=step)
    nll, ys, final = forward(params, windows, context, state)
    stats = stats_fn(ys, windows[:, :-1])
    return (jnp.sum(nll), {k: jnp.sum(v) for k, v in stats.items()},
            nll.size, final)

  def _finish(nll, stats, count):
    out = {'bpc': bits_per_symbol(nll, count)}
    out['perplexity'] = float(2.0 ** out['bpc'])
    out.update({k: v / count for k, v in stats.items()})
    if derived is not None:
      out.update({k: float(v) for k, v in derived(dict(out)).items()})
    return out

  def evaluate_stream(params, stream, step=None):
    """Bits per symbol etc. over a whole stream, state carried across."""
    stream = _check_stream('evaluated', stream, eval_seq_len, eval_batch_size)
    table, windows = bptt_rows(stream, eval_batch_size, eval_seq_len)
    step = jnp.asarray(0 if step is None else step, jnp.int32)
    state = zero_state(eval_batch_size)
    nll, count, stats = 0.0, 0, {}
    for w in range(windows):
      chunk = jnp.asarray(
          table[:, w * eval_seq_len:(w + 1) * eval_seq_len + 1])
      a, s, c, state = eval_window(params, chunk, state, step)
      nll, count = nll + float(a), count + int(c)
      for k, v in s.items():
        stats[k] = stats.get(k, 0.0) + float(v)
    return _finish(nll, stats, count)

  if eval_mode == 'windows':
    held_out = random_windows(jax.random.PRNGKey(eval_seed), valid_stream,
                              eval_windows, eval_seq_len)

    def evaluate(params, step):
      step = jnp.asarray(step, jnp.int32)
      nll, count, stats = 0.0, 0, {}
      for i in range(0, eval_windows, eval_batch_size):
        chunk = jnp.asarray(held_out[i:i + eval_batch_size])
        a, s, c, _ = eval_window(params, chunk, zero_state(chunk.shape[0]),
                                 step)
        nll, count = nll + float(a), count + int(c)
        for k, v in s.items():
          stats[k] = stats.get(k, 0.0) + float(v)
      return _finish(nll, stats, count)
  else:
    def evaluate(params, step):
      return evaluate_stream(params, valid_stream, step)

  @jax.jit
  def _per_step(params, tokens, step):
    windows = tokens[None]
    nll, ys, _ = forward(params, windows, Context(step=step),
                         zero_state(1))
    out = {k: v[0] for k, v in stats_fn(ys, windows[:, :-1]).items()}
    out['nll'] = nll[0]
    return out

  def per_step(params, tokens, step=None):
    """Statistics at every symbol of ``tokens[:-1]`` (predicting ``[1:]``)."""
    tokens = jnp.asarray(np.asarray(tokens, np.int32))
    step = jnp.asarray(0 if step is None else step, jnp.int32)
    return {k: np.asarray(v) for k, v in _per_step(params, tokens,
                                                   step).items()}

  def init(key):
    return model.init(key)

  experiment = Experiment(init=init, loss=loss, sample=sample,
                          evaluate=evaluate, init_carry=init_carry)
  return LanguageModelTask(experiment, evaluate_stream, per_step)
