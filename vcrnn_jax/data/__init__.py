"""Corpora for the paper experiments: registry, loaders, download, batching.

  ds = vcrnn_jax.data.load('ptb_word', data_dir='corpora')
  ds.train, ds.valid, ds.test      # int32 id streams
  ds.vocab.decode(ds.test[:10])    # ids -> tokens
  x, y = vcrnn_jax.data.load('uci_har', data_dir='corpora').train

Names: ``ptb_word``, ``ptb_char``, ``ptb_bit``, ``text8``, ``enwik8``, ``text``
(any UTF-8 file), ``bytes`` (any file as raw bytes, enwik8's split),
``thesession``, ``uci_har``. ``data_dir=None`` reads the download cache
(:mod:`vcrnn_jax.data.download`), fetching and verifying on first use.
"""

from vcrnn_jax.data import batching, download
from vcrnn_jax.data.batching import (
    bptt_arrays,
    bptt_batches,
    eval_batches,
    num_bptt_batches,
    random_windows,
    shuffled_batches,
)
from vcrnn_jax.data.dataset import SPLITS, Dataset, Vocab
from vcrnn_jax.data.download import ChecksumError, DownloadError
from vcrnn_jax.data.registry import load, load_or_exit, names

__all__ = [
    'ChecksumError',
    'Dataset',
    'DownloadError',
    'SPLITS',
    'Vocab',
    'batching',
    'bptt_arrays',
    'bptt_batches',
    'download',
    'eval_batches',
    'load',
    'load_or_exit',
    'names',
    'num_bptt_batches',
    'random_windows',
    'shuffled_batches',
]
