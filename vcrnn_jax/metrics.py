"""What the papers report, as pure functions (no training code).

Held-out evaluations accumulate sums over batches with the ``*_sums``
functions (jit-friendly, padded rows masked out) and turn them into the
reported number at the end, so every example counts once whatever the batch:

* ACT: sequence error rate (:func:`sequence_error_rate`);
* VCRNN, ACT Wikipedia: bits per symbol (per character, bit or word) and
  perplexity (:func:`bits_per_symbol`, :func:`perplexity`); equivalent RNN
  dimension (:func:`vcrnn_jax.vc.rnn_equivalent_dim`);
* EI-REHN: mean squared error (Table 1, :func:`squared_error_sums`), accuracy
  and the confusion matrix (Table 2, :func:`classification_sums`),
  perplexity (Tables 3-4).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    'sequence_error_rate',
    'bits_per_symbol',
    'perplexity',
    'squared_error_sums',
    'classification_sums',
]

_LN2 = math.log(2.0)


def sequence_error_rate(errors, weights=None) -> float:
  """The fraction of sequences with any wrong target step (ACT Sec. 3).

  Args:
    errors: ``[N]`` bool, True for a sequence with an error.
    weights: optional ``[N]`` 0/1 mask of the sequences to count.
  """
  errors = np.asarray(errors, np.float64)
  if weights is None:
    return float(errors.mean()) if errors.size else float('nan')
  weights = np.asarray(weights, np.float64)
  return float((errors * weights).sum() / max(weights.sum(), 1.0))


def bits_per_symbol(nll_nats: float, count: int) -> float:
  """Mean negative log-likelihood in bits, from a sum in nats over ``count``."""
  if count <= 0:
    raise ValueError(f'count must be positive, got {count!r}.')
  return float(nll_nats) / count / _LN2


def perplexity(nll_nats: float, count: int) -> float:
  """``exp`` of the mean negative log-likelihood (nats) per symbol."""
  if count <= 0:
    raise ValueError(f'count must be positive, got {count!r}.')
  return float(math.exp(float(nll_nats) / count))


def squared_error_sums(predictions: jax.Array, targets: jax.Array,
                       mask: jax.Array | None = None
                       ) -> tuple[jax.Array, jax.Array]:
  """``(sum of squared errors, number of values)`` over unmasked rows.

  ``mask`` is ``[batch]`` or of the predictions' leading shape; the MSE is
  the first divided by the second (every element of every step counted).
  """
  err = jnp.square(predictions.astype(jnp.float32) - targets.astype(
      jnp.float32))
  if mask is None:
    return jnp.sum(err), jnp.asarray(err.size, jnp.float32)
  m = mask.astype(jnp.float32).reshape(
      mask.shape + (1,) * (err.ndim - mask.ndim))
  per = err.size // math.prod(mask.shape)
  return jnp.sum(err * m), jnp.sum(m) * per


def classification_sums(logits: jax.Array, labels: jax.Array,
                        mask: jax.Array | None = None, *,
                        num_classes: int | None = None
                        ) -> tuple[jax.Array, jax.Array, jax.Array]:
  """``(cross-entropy sum, correct count, confusion [C, C])`` over rows.

  Args:
    logits: ``[batch, C]``.
    labels: ``[batch]`` ints in ``[0, C)``.
    mask: optional ``[batch]`` bool (False: a padding row).
    num_classes: ``C`` (default: the logits' last axis).

  Returns:
    Sums to accumulate; the confusion matrix counts true class (rows) against
    predicted class (columns).
  """
  num_classes = num_classes or logits.shape[-1]
  m = jnp.ones(labels.shape, jnp.float32) if mask is None else mask.astype(
      jnp.float32)
  logp = jax.nn.log_softmax(logits.astype(jnp.float32))
  nll = -jnp.take_along_axis(logp, labels[:, None], axis=-1)[:, 0]
  pred = jnp.argmax(logits, axis=-1)
  confusion = jnp.zeros((num_classes, num_classes), jnp.float32).at[
      labels, pred].add(m)
  # argmax is int64 under x64; the labels are compared in its dtype.
  correct = (pred == labels.astype(pred.dtype)).astype(m.dtype)
  return jnp.sum(nll * m), jnp.sum(correct * m), confusion
