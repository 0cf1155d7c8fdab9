"""Sequence models: a cell over time with a readout; language models."""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from vcrnn_jax import utils
from vcrnn_jax.core import (
  Cell,
  as_context,
  cell_output,
  check_positive_int,
  fold_in,
  param_dtype_of,
  shape_probe_context,
)
from vcrnn_jax.unroll import unroll

__all__ = [
    'SequenceModel',
    'sequence_model',
    'symmetric_uniform',
    'language_model',
]


class SequenceModel(NamedTuple):
  """``init(key, input_size) -> params``; ``apply(params, xs, lengths=None, *,
  context=None, state=None) -> (logits [B, T, O], ys)`` where ``ys`` are the
  cell's per-step outputs (with ``return_state=True``: ``(logits, ys,
  final_state)``)."""
  init: Callable[..., Any]
  apply: Callable[..., tuple[jax.Array, Any]]


def _cell_output_size(cell: Cell, cell_params, input_size: int,
                      dtype) -> int:
  """The size of the cell's output (:func:`vcrnn_jax.core.cell_output`)."""
  # Traced abstractly: the readout's shape without running the cell.
  x = jnp.zeros((1, input_size), dtype)
  _, y = jax.eval_shape(cell.apply, cell_params, cell.initial_state(1), x,
                        shape_probe_context())
  return cell_output(y).shape[-1]


def sequence_model(cell: Cell, output_size: int | None = None, *,
                   param_dtype: Any = None) -> SequenceModel:
  """A cell over time, with a linear readout of size ``output_size``.

  With ``output_size=None`` the cell's output is the logits (an ACT cell has
  its own output layer, ACT Eq. 4); otherwise ``logits = y W + b`` with params
  ``{'cell': ..., 'readout': {'kernel': [Y, O], 'bias': [O]}}``. The readout
  reads :func:`vcrnn_jax.core.cell_output` of each step, so any cell works,
  structured outputs included. ``param_dtype=None`` follows the cell's params.

  ``apply`` keyword arguments: ``context`` (a :class:`vcrnn_jax.core.Context`
  for every step: training step, dropout key), ``state`` (the initial state,
  default zeros; truncated BPTT passes the previous window's final state) and
  ``return_state`` (also return the final state).

  Example::

    model = sequence_model(vcrnn_jax.cells.elman(128), output_size=1)
    params = model.init(key, input_size=64)
    logits, _ = model.apply(params, xs)       # xs: [batch, time, 64]
  """
  if output_size is not None:
    output_size = check_positive_int('output_size', output_size)

  def init(key, input_size):
    k_cell, k_out = jax.random.split(key)
    params = {'cell': cell.init(k_cell, input_size)}
    if output_size is not None:
      dtype = param_dtype or param_dtype_of(params['cell'])
      y_size = _cell_output_size(cell, params['cell'], input_size, dtype)
      params['readout'] = {
          'kernel': jax.nn.initializers.glorot_uniform()(
              k_out, (y_size, output_size), dtype),
          'bias': jnp.zeros((output_size,), dtype),
      }
    return params

  def apply(params, xs, lengths=None, *, context=None, state=None,
            return_state=False):
    if state is None:
      state = cell.initial_state(xs.shape[0])
    final, ys = unroll(cell, params['cell'], state, xs, lengths,
                       context=context)
    out = cell_output(ys)
    if output_size is not None:
      out = utils.add_bias(out @ params['readout']['kernel'],
                           params['readout']['bias'])
    return (out, ys, final) if return_state else (out, ys)

  return SequenceModel(init, apply)


def symmetric_uniform(scale: float):
  """An initialiser drawing from U(-scale, scale) (``jax.nn.initializers.
  uniform(scale)`` draws from U(0, scale)); Zilly et al. use 0.04 for all."""
  def init(key, shape, dtype=jnp.float32):
    return utils.cast(jax.random.uniform(key, shape, jnp.float32, -scale,
                                         scale), dtype)
  return init


def _dropout(key: jax.Array, rate: float, shape: tuple, dtype) -> jax.Array:
  """An inverted-dropout mask: 0 with probability ``rate``, else 1/(1-rate)."""
  keep = jax.random.bernoulli(key, 1.0 - rate, shape)
  return keep.astype(dtype) / jnp.asarray(1.0 - rate, dtype)


def _variational_dropout(key: jax.Array, rate: float,
                         xs: jax.Array) -> jax.Array:
  """Dropout on ``xs [batch, time, features]``, one mask per row for every
  step (Gal & Ghahramani)."""
  return xs * _dropout(key, rate, (xs.shape[0], 1, xs.shape[-1]), xs.dtype)


def _word_dropout(key: jax.Array, rate: float, tokens: jax.Array,
                  vocab_size: int, xs: jax.Array) -> jax.Array:
  """Drops word types from the embedded ``xs``: a dropped type is zero at
  every occurrence in its row, as in Zilly et al.'s RHN code."""
  keep = _dropout(key, rate, (tokens.shape[0], vocab_size), xs.dtype)
  return xs * jnp.take_along_axis(keep, tokens, axis=1)[..., None]


def _lm_init(cell: Cell, vocab_size: int, embed_size: int | None,
             readout: str | None, embedding_init, readout_init,
             param_dtype) -> Callable[..., Any]:
  """:func:`language_model`'s ``init(key, input_size_unused=None)``."""
  input_size = vocab_size if embed_size is None else embed_size

  def init(key, input_size_unused=None):
    del input_size_unused  # Fixed by vocab_size and embed_size.
    # The cell and readout keys are sequence_model's, so a one-hot model has
    # sequence_model's params.
    k_cell, k_out = jax.random.split(key)
    k_emb = jax.random.fold_in(key, 1)
    params = {'cell': cell.init(k_cell, input_size)}
    dtype = param_dtype or param_dtype_of(params['cell'])
    if embed_size is not None:
      params['embedding'] = embedding_init(k_emb, (vocab_size, embed_size),
                                           dtype)
    if readout is None:
      return params
    y_size = _cell_output_size(cell, params['cell'], input_size, dtype)
    if readout == 'tied':
      if y_size != embed_size:
        raise ValueError(
            f"readout='tied' needs the cell's output size ({y_size}) to "
            f'equal embed_size ({embed_size}).')
      params['readout'] = {'bias': jnp.zeros((vocab_size,), dtype)}
    else:
      params['readout'] = {
          'kernel': readout_init(k_out, (y_size, vocab_size), dtype),
          'bias': jnp.zeros((vocab_size,), dtype)}
    return params

  return init


def _lm_inputs(params, tokens: jax.Array, key: jax.Array | None, *,
               vocab_size: int, embed_size: int | None,
               embedding_dropout: float, input_dropout: float) -> jax.Array:
  """The cell inputs ``[batch, time, features]`` of ``tokens``: embedded (or
  one-hot), with word and input dropout when there is a ``key``."""
  if embed_size is None:
    xs = jax.nn.one_hot(tokens, vocab_size, dtype=param_dtype_of(params))
  else:
    xs = jnp.take(params['embedding'], tokens, axis=0)
    if key is not None and embedding_dropout:
      xs = _word_dropout(jax.random.fold_in(key, 0), embedding_dropout,
                         tokens, vocab_size, xs)
  if key is not None and input_dropout:
    xs = _variational_dropout(jax.random.fold_in(key, 1), input_dropout, xs)
  return xs


def _lm_logits(params, out: jax.Array, key: jax.Array | None, *,
               readout: str | None, output_dropout: float) -> jax.Array:
  """The logits of the cell's output ``out``: output dropout when there is a
  ``key``, then the readout."""
  if key is not None and output_dropout:
    out = _variational_dropout(jax.random.fold_in(key, 2), output_dropout,
                               out)
  if readout == 'tied':
    return utils.add_bias(out @ params['embedding'].T,
                          params['readout']['bias'])
  if readout == 'linear':
    return utils.add_bias(out @ params['readout']['kernel'],
                          params['readout']['bias'])
  return out  # The cell's output is the logits.


def language_model(
    cell: Cell,
    vocab_size: int,
    *,
    embed_size: int | None = None,
    readout: str | None = 'linear',
    embedding_dropout: float = 0.0,
    input_dropout: float = 0.0,
    output_dropout: float = 0.0,
    embedding_init: Any = symmetric_uniform(0.04),
    readout_init: Any = jax.nn.initializers.glorot_uniform(),
    param_dtype: Any = None,
) -> SequenceModel:
  r"""A next-symbol model: tokens in, logits over the vocabulary out.

  .. math::

    x_t = E[w_t] \text{ (or one-hot } w_t), \quad
    (h_t, y_t) = \mathrm{cell}(h_{t-1}, x_t), \quad
    \mathrm{logits}_t = W\, \mathrm{out}(y_t) + b \text{ or } E\,
        \mathrm{out}(y_t) + b \text{ (tied)}

  Args:
    cell: any cell of the protocol (its input size is ``embed_size``, or
      ``vocab_size`` for one-hot inputs).
    vocab_size: number of symbols.
    embed_size: size of the learned embedding ``E`` ``[vocab, embed_size]``;
      None feeds one-hot vectors (ACT's byte model).
    readout: ``'linear'`` (``W [Y, vocab]`` and ``b``), ``'tied'`` (the
      transposed embedding and a bias ``b``, EI-REHN Fig. 3 after Inan et al.
      and Press & Wolf; needs the cell output size to equal ``embed_size``)
      or None (the cell's output is the logits, e.g. ACT with its own output
      layer, ACT Eq. 4).
    embedding_dropout: probability of dropping a word type for a whole window
      (every occurrence of it in that row), as in Zilly et al.'s RHN code.
    input_dropout: variational dropout on the cell input (one mask per row,
      shared over time).
    output_dropout: variational dropout on the cell output before the
      readout.
    embedding_init: initialiser of ``E`` (default U(-0.04, 0.04), as in
      Zilly et al.).
    readout_init: initialiser of ``W`` (``'linear'``).
    param_dtype: dtype of the embedding and readout; None follows the cell.

  Dropout masks come from ``context.key`` (a :class:`vcrnn_jax.core.Context`
  passed to ``apply``); without a key (evaluation) there is no dropout. The
  cell gets ``fold_in(context, 3)``, so its own dropout draws other masks.

  Params: ``{'cell': ..., 'embedding': [vocab, embed_size] (if embedding),
  'readout': {'kernel': [Y, vocab], 'bias': [vocab]} ('linear') or
  {'bias': [vocab]} ('tied')}``.

  ``apply(params, tokens, lengths=None, *, context=None, state=None,
  return_state=False)`` takes int ``tokens [batch, time]`` and returns
  ``(logits [batch, time, vocab], ys)`` (and the final state).

  Example::

    model = language_model(cells.lstm(200), vocab_size=50, embed_size=200,
                           readout='tied')
    params = model.init(jax.random.key(0))
    logits, _ = model.apply(params, tokens)        # tokens: [B, T] ints
  """
  vocab_size = check_positive_int('vocab_size', vocab_size)
  if embed_size is not None:
    embed_size = check_positive_int('embed_size', embed_size)
  if readout not in ('linear', 'tied', None):
    raise ValueError(f"readout must be 'linear', 'tied' or None, got "
                     f'{readout!r}.')
  if readout == 'tied' and embed_size is None:
    raise ValueError("readout='tied' needs an embedding (embed_size).")
  for name, rate in (('embedding_dropout', embedding_dropout),
                     ('input_dropout', input_dropout),
                     ('output_dropout', output_dropout)):
    if not 0.0 <= rate < 1.0:
      raise ValueError(f'{name} must be in [0, 1), got {rate!r}.')
  init = _lm_init(cell, vocab_size, embed_size, readout, embedding_init,
                  readout_init, param_dtype)

  def apply(params, tokens, lengths=None, *, context=None, state=None,
            return_state=False):
    context = as_context(context)
    if tokens.ndim != 2:
      raise ValueError(f'language_model: tokens must be [batch, time] ids, '
                       f'got shape {tuple(tokens.shape)}.')
    # Streams of context.key: 0, 1, 2 for the dropouts here, 3 for the cell.
    xs = _lm_inputs(params, tokens, context.key, vocab_size=vocab_size,
                    embed_size=embed_size, embedding_dropout=embedding_dropout,
                    input_dropout=input_dropout)
    if state is None:
      state = cell.initial_state(tokens.shape[0])
    final, ys = unroll(cell, params['cell'], state, xs, lengths,
                       context=fold_in(context, 3))
    out = _lm_logits(params, cell_output(ys), context.key, readout=readout,
                     output_dropout=output_dropout)
    return (out, ys, final) if return_state else (out, ys)

  return SequenceModel(init, apply)
