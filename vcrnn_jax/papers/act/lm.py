"""Language modelling with ACT (ACT paper Section 3.5), on the shared LM
trainer.

Next-symbol prediction (bytes for enwik8, or any vocabulary) on windows of
consecutive symbols drawn at random from the stream, the state reset at each
window, a softmax over the vocabulary from ACT's own output layer (Eq. 4),
cross-entropy summed over the window, and the ponder cost of ACT Eq. 11 added
with weight ``tau`` (Eq. 12). A configuration of
:func:`vcrnn_jax.training.lm.lm_experiment`.
"""

import jax.numpy as jnp
import numpy as np

from vcrnn_jax.models import language_model
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.training import lm

__all__ = ['BYTES', 'build_model', 'lm_task', 'ponder_over_text']

BYTES = 256


class _Vocab:
  def __init__(self, size):
    self.output_size = size


def build_model(model: act_tasks.ModelConfig, vocab_size: int = BYTES):
  """One-hot symbols in; ACT's output layer (or a linear readout) out."""
  if model.act:
    cell = act_tasks.build_cell(model, vocab_size)
    return language_model(cell, vocab_size, readout=None)
  return language_model(act_tasks.build_cell(model, vocab_size), vocab_size,
                        readout='linear')


def lm_task(train_stream: np.ndarray, valid_stream: np.ndarray,
            model: act_tasks.ModelConfig, *, batch_size: int,
            seq_len: int = 500, vocab_size: int = BYTES,
            eval_windows: int = 64,
            eval_seed: int = 2**31 - 1) -> lm.LanguageModelTask:
  """The LM task of ACT Sec. 3.5 for any id streams.

  Args:
    train_stream, valid_stream: 1-D ids in ``[0, vocab_size)``.
    model: the recurrent model (``hidden_size``, ``act``, ``tau``, ...).
    batch_size: windows per training batch.
    seq_len: symbols per window (paper: 500); the state is reset to zero at
      the start of every window, as in the paper.
    vocab_size: 256 for bytes, or the corpus vocabulary's size.
    eval_windows: held-out windows (from ``valid_stream``, fixed) per eval.
    eval_seed: seed of the held-out windows.
  """
  net = build_model(model, vocab_size)
  if model.act:
    def regularizer(ys, inputs, step):
      del inputs, step
      return model.tau * jnp.sum(ys.ponder, axis=1)               # (12)

    def statistics(ys, inputs):
      del inputs
      return {'ponder': ys.ponder}                                 # (10)
  else:
    regularizer = None

    def statistics(ys, inputs):
      del ys  # One step per input without ACT.
      return {'ponder': jnp.ones(inputs.shape, jnp.float32)}

  return lm.lm_experiment(
      net, train_stream, valid_stream, batch_size=batch_size,
      seq_len=seq_len, mode='windows', eval_mode='windows',
      eval_windows=eval_windows, eval_seed=eval_seed,
      regularizer=regularizer, statistics=statistics)


def ponder_over_text(task: lm.LanguageModelTask, params,
                     data: np.ndarray) -> np.ndarray:
  """Ponder ``rho_t`` at every symbol of ``data[:-1]`` (ACT Fig. 23)."""
  return task.per_step(params, data)['ponder']
