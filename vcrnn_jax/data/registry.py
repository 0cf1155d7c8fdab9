"""``load(name, data_dir=None, **options)``: one entry point for every corpus.

As ``tfds.load`` does it: a name picks the loader, ``data_dir`` says where the
files are, and options go to the loader::

  ds = vcrnn_jax.data.load('ptb_char', data_dir='corpora')
  ds = vcrnn_jax.data.load('ptb_bit', data_dir='corpora', buffer_bits=8)
  ds = vcrnn_jax.data.load('text', path='corpora/text/fortunes_cs.txt')
  ds = vcrnn_jax.data.load('bytes', path='dump.xml')  # raw bytes, enwik8 split

With ``data_dir=None`` the corpus comes from the download cache (fetched and
verified on first use, see :mod:`vcrnn_jax.data.download`); with a
``data_dir`` nothing is ever downloaded.
"""

from collections.abc import Callable
import inspect
import pathlib
import sys
from typing import Any

from vcrnn_jax.data import download as download_lib
from vcrnn_jax.data import har, text, thesession
from vcrnn_jax.data.dataset import Dataset, PathLike

__all__ = ['names', 'load', 'load_or_exit']

_LOADERS: dict[str, Callable[..., Dataset]] = {
    'ptb_word': text.load_ptb_word,
    'ptb_char': text.load_ptb_char,
    'ptb_bit': text.load_ptb_bit,
    'text8': text.load_text8,
    'enwik8': text.load_enwik8,
    'text': text.load_text,
    'bytes': text.load_bytes,
    'thesession': thesession.load_thesession,
    'uci_har': har.load_uci_har,
}
# Loaders that read a user-given file (``path=``) and have nothing to download.
_PATH_LOADERS = ('text', 'bytes')


def names() -> tuple[str, ...]:
  """The dataset names :func:`load` accepts."""
  return tuple(_LOADERS)


def load(name: str,
         data_dir: PathLike | None = None,
         **options: Any) -> Dataset:
  """Loads dataset ``name`` as a :class:`~vcrnn_jax.data.dataset.Dataset`.

  Args:
    name: one of :func:`names`: ``'ptb_word'``, ``'ptb_char'``, ``'ptb_bit'``,
      ``'text8'``, ``'enwik8'``, ``'text'`` (any UTF-8 file, ``path=``),
      ``'bytes'`` (any file as raw bytes, ``path=``), ``'thesession'``,
      ``'uci_har'``.
    data_dir: folder with the files (the corpora root holding ``ptb/``,
      ``har/``, ..., or the dataset's own folder). None: use the
      download cache, fetching the corpus if it is missing.
    **options: loader options, e.g. ``buffer_bits=8`` for ``ptb_bit``,
      ``max_length`` for ``text8``/``enwik8``/``text``/``bytes``,
      ``valid_subjects`` for ``uci_har``; see each loader.

  Returns:
    The dataset: ``train``, ``valid``, ``test``, ``vocab``, ``meta``.

  Raises:
    ValueError: unknown name or option, or a malformed file.
    FileNotFoundError: a file is missing under ``data_dir``.
    vcrnn_jax.data.download.DownloadError: ``data_dir`` is None and the
      corpus cannot be downloaded.

  Example:

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / 'text8').write_text('the cat sat on the mat ' * 10)
    >>> ds = load('text8', data_dir=d)
    >>> ''.join(ds.vocab.decode(ds.train[:7]))
    'the cat'
  """
  if name not in _LOADERS:
    raise ValueError(
        f'unknown dataset {name!r}; expected one of {list(_LOADERS)}.')
  loader = _LOADERS[name]
  params = inspect.signature(loader).parameters
  accepted = [p for p in params if p != 'data_dir']
  bad = sorted(set(options) - set(accepted))
  if bad:
    raise ValueError(f'load({name!r}) got unknown option(s) {bad}; it accepts '
                     f'{accepted}.')
  if name in _PATH_LOADERS or (name == 'thesession' and 'path' in options):
    return loader(data_dir=data_dir, **options)
  if data_dir is None:
    data_dir = download_lib.fetch(download_lib.DATASET_RESOURCES[name])
  return loader(pathlib.Path(data_dir), **options)


def load_or_exit(name: str,
                 data_dir: PathLike | None = None,
                 **options: Any) -> Dataset:
  """:func:`load` for command-line binaries: a failure exits with one line.

  Binaries pass their ``--data_dir`` flag here; a missing or malformed corpus
  (or a failed download) ends the program with ``error: <what and where>``
  and exit status 2 instead of a traceback.

  Example::

    ds = load_or_exit('ptb_word', FLAGS.data_dir)
  """
  try:
    return load(name, data_dir, **options)
  except (FileNotFoundError, ValueError, download_lib.DownloadError) as e:
    message = str(e).replace('\n', ' ')
    where = f' (--data_dir={data_dir})' if data_dir is not None else ''
    print(f'error: cannot load {name}{where}: {message}', file=sys.stderr)
    raise SystemExit(2) from None
