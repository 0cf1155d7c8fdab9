"""Download, verify and cache the corpora from their canonical public URLs.

``fetch(name)`` makes sure the files of one resource are in the cache directory
(``$VCRNN_JAX_DATA``, else ``~/.cache/vcrnn_jax``) and returns that directory,
laid out like a directory of the published corpora (``ptb/``, ``har/``,
...), so the loaders read it unchanged::

  root = vcrnn_jax.data.download.fetch('ptb')      # root/ptb/ptb.train.txt ...
  ds = vcrnn_jax.data.load('ptb_word', data_dir=root)

From the shell: ``python -m vcrnn_jax.data.download ptb text8``.

Safety: pooch downloads (HTTP(S) or FTP, with a progress bar on a terminal)
into a temporary folder inside the cache, where the SHA-256 and size are
checked, pooch unpacks only the listed members, each is checked again, and
only then is every file moved into place with an atomic ``os.replace``. An
interrupted, truncated or corrupt download leaves nothing behind in the cache,
and a file present in the cache was verified. A later call finds the files
and makes no request.

Digests: where no published digest exists the code says so (``None``) and
checks what it can (sizes, member digests, the loaders' format checks), and
logs the digest it computed so a user can pin it. Offline machines: put the
files where the error message says, or pass ``data_dir`` to the loaders.
``$VCRNN_JAX_DATA_MIRROR`` (a base URL) replaces every host, e.g. for an
internal mirror.
"""

import argparse
from collections.abc import Sequence
import contextlib
import ftplib
import hashlib
import logging
import os
import pathlib
import shutil
import sys
import tarfile
import tempfile
from typing import NamedTuple
import urllib.parse
import zipfile
import zlib

from vcrnn_jax.data import har

__all__ = [
    'CACHE_ENV',
    'MIRROR_ENV',
    'DownloadError',
    'ChecksumError',
    'FileSpec',
    'Resource',
    'PTB_SHA256',
    'RESOURCES',
    'DATASET_RESOURCES',
    'default_cache_dir',
    'sha256_file',
    'is_cached',
    'fetch',
    'main',
]

logger = logging.getLogger(__name__)

CACHE_ENV = 'VCRNN_JAX_DATA'
MIRROR_ENV = 'VCRNN_JAX_DATA_MIRROR'
_CHUNK = 1 << 20


class DownloadError(OSError):
  """A resource could not be fetched; the message is one line with the fix."""


class ChecksumError(DownloadError):
  """A downloaded file does not match its known SHA-256 or size."""


class FileSpec(NamedTuple):
  """One file a resource provides.

  Attributes:
    member: path inside the archive, or None when the download is the file.
    path: destination relative to the cache root (the loaders' layout).
    sha256: known hex digest, or None when no trusted digest is known.
    size: known size in bytes, or None.
  """

  member: str | None
  path: str
  sha256: str | None = None
  size: int | None = None


class Resource(NamedTuple):
  """A downloadable resource.

  Attributes:
    name: resource name (``'ptb'``, ``'text8'``, ...).
    url: canonical public URL.
    filename: name of the downloaded file (also used with the mirror).
    sha256: known digest of the download, or None (see ``note``).
    size: known size of the download in bytes, or None.
    archive: ``'zip'``, ``'tgz'`` or None (the download is the file).
    files: the files to keep, with their own digests.
    note: where the digests come from.
  """

  name: str
  url: str
  filename: str
  sha256: str | None
  size: int | None
  archive: str | None
  files: tuple[FileSpec, ...]
  note: str = ''


# SHA-256 of Mikolov's PTB files, computed from a copy of the extracted files
# (whose ptb.train.txt has the widely quoted md5
# f26c4b92c5fdc7b3f8c7cdcb991d8420).
PTB_SHA256 = {
    'ptb.train.txt':
        'fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf',
    'ptb.valid.txt':
        'c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2',
    'ptb.test.txt':
        'dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0',
    'ptb.char.train.txt':
        'e313d91425e06c4f0a8fb6e881dcce0c291f2a0e9f4dda54833069b122f91da9',
    'ptb.char.valid.txt':
        '21661f63ec355085879458b6524644d4add5573541b4be14fb52ab2e2e995eb8',
    'ptb.char.test.txt':
        '1ef5607ac3c463b16e38bfe7900dd3bfc91de5a96e0f21e7eab5188b465b8ebe',
}

_PTB = Resource(
    name='ptb',
    url='http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz',
    filename='simple-examples.tgz',
    # No published digest of the tarball is known; each extracted file is
    # checked against PTB_SHA256 instead.
    sha256=None,
    size=None,
    archive='tgz',
    files=tuple(
        FileSpec(f'simple-examples/data/{f}', f'ptb/{f}', d)
        for f, d in PTB_SHA256.items()),
    note='tarball digest unknown; member digests from a verified copy')

_TEXT8 = Resource(
    name='text8',
    url='http://mattmahoney.net/dc/text8.zip',
    filename='text8.zip',
    # No published SHA-256 is known; the zip size is the one TensorFlow's
    # word2vec tutorial checks, and text8 is 10^8 characters by definition.
    sha256=None,
    size=31_344_016,
    archive='zip',
    files=(FileSpec('text8', 'text8/text8', None, 100_000_000),),
    note='no published SHA-256; sizes checked (zip 31,344,016; text8 10^8)')

_ENWIK8 = Resource(
    name='enwik8',
    url='http://mattmahoney.net/dc/enwik8.zip',
    filename='enwik8.zip',
    # Published in Hugging Face datasets' datasets/enwik8/dataset_infos.json
    # (download_checksums of this URL).
    sha256='547994d9980ebed1288380d652999f38a14fe291a6247c157c3d33d4932534bc',
    size=36_445_475,
    archive='zip',
    files=(FileSpec('enwik8', 'enwik8/enwik8', None, 100_000_000),),
    note='zip SHA-256 and size from huggingface/datasets enwik8 infos')

_UCI_HAR = Resource(
    name='uci_har',
    url=('https://archive.ics.uci.edu/ml/machine-learning-databases/00240/'
         'UCI%20HAR%20Dataset.zip'),
    filename='UCI HAR Dataset.zip',
    # No published digest is known. The copy the tests read is a zip rebuilt
    # from the raw recordings, whose digest differs from UCI's, so it cannot
    # stand in; the loader checks the layout and shapes instead.
    sha256=None,
    size=None,
    archive='zip',
    files=tuple(
        FileSpec(m, f'har/{m}')
        for split in ('train', 'test')
        for m in har.member_paths(split).values()),
    note='no published digest; the shared copy is a rebuilt zip')

_THESESSION = Resource(
    name='thesession',
    url=('https://raw.githubusercontent.com/IraKorshunova/folk-rnn/master/'
         'data/data_v3'),
    filename='data_v3',
    # folk-rnn publishes no digest and the file lives on a git branch that may
    # change; the loader checks the format.
    sha256=None,
    size=None,
    archive=None,
    files=(FileSpec(None, 'thesession/data_v3'),),
    note='no published digest (a file on a git branch)')

RESOURCES: dict[str, Resource] = {
    r.name: r for r in (_PTB, _TEXT8, _ENWIK8, _UCI_HAR, _THESESSION)
}

# Which resource each dataset of the registry needs.
DATASET_RESOURCES = {
    'ptb_word': 'ptb',
    'ptb_char': 'ptb',
    'ptb_bit': 'ptb',
    'text8': 'text8',
    'enwik8': 'enwik8',
    'uci_har': 'uci_har',
    'thesession': 'thesession',
}


def default_cache_dir() -> pathlib.Path:
  """``$VCRNN_JAX_DATA`` if set, else ``~/.cache/vcrnn_jax``."""
  env = os.environ.get(CACHE_ENV)
  return pathlib.Path(env).expanduser() if env else (pathlib.Path.home() /
                                                     '.cache' / 'vcrnn_jax')


def sha256_file(path: os.PathLike | str) -> str:
  """Hex SHA-256 of a file, read in chunks."""
  with open(path, 'rb') as f:
    return hashlib.file_digest(f, 'sha256').hexdigest()


def is_cached(resource: Resource | str,
              cache_dir: os.PathLike | str | None = None) -> bool:
  """Whether every file of ``resource`` is in the cache (no request made)."""
  res = _resource(resource)
  root = pathlib.Path(
      cache_dir) if cache_dir is not None else default_cache_dir()
  return all((root / f.path).is_file() for f in res.files)


def _resource(resource: Resource | str) -> Resource:
  if isinstance(resource, Resource):
    return resource
  name = DATASET_RESOURCES.get(resource, resource)
  if name not in RESOURCES:
    raise ValueError(
        f'unknown resource {resource!r}; expected one of '
        f'{sorted(RESOURCES)} or a dataset name {sorted(DATASET_RESOURCES)}.')
  return RESOURCES[name]


def _offline_hint(res: Resource, root: pathlib.Path) -> str:
  tops = ', '.join(sorted({f.path.split('/')[0] + '/' for f in res.files}))
  return (f'If offline, fetch {res.url} yourself and put its files in '
          f'{root}/{tops} (or pass data_dir=/--data_dir to a folder holding '
          f'{tops}).')


def _check(path: pathlib.Path, what: str, sha256: str | None,
           size: int | None) -> str:
  """Verifies size and digest; returns the digest."""
  actual_size = path.stat().st_size
  if size is not None and actual_size != size:
    raise ChecksumError(
        f'{what} has {actual_size} bytes, expected {size}; refusing it.')
  digest = sha256_file(path)
  if sha256 is not None and digest != sha256:
    raise ChecksumError(
        f'{what} has SHA-256 {digest}, expected {sha256}; refusing it '
        '(corrupt or changed upstream).')
  return digest


def _downloader(url: str, timeout: float):
  """pooch's downloader for the scheme of ``url``; ValueError for others."""
  import pooch  # pylint: disable=g-import-not-at-top (keeps imports fast)
  # pooch's tqdm bar on a terminal only: in a log it is one endless line.
  progressbar = hasattr(sys.stderr, 'isatty') and sys.stderr.isatty()
  kinds = {'http': pooch.HTTPDownloader, 'https': pooch.HTTPDownloader,
           'ftp': pooch.FTPDownloader}
  scheme = urllib.parse.urlsplit(url).scheme
  if scheme not in kinds:
    raise ValueError(
        f'url must be an http://, https:// or ftp:// URL, got {url!r}.')
  return kinds[scheme](
      progressbar=progressbar, chunk_size=_CHUNK, timeout=timeout)


def _transfer_error(res: Resource, url: str, root: pathlib.Path,
                    e: BaseException) -> DownloadError:
  """The one-line error for a failed transfer, with where to put the files."""
  import requests  # pylint: disable=g-import-not-at-top (pooch's dependency)
  if isinstance(e, requests.HTTPError):
    what = (f'cannot download {res.name} from {url}: HTTP '
            f'{e.response.status_code} {e.response.reason}')
  elif isinstance(e, requests.exceptions.ChunkedEncodingError):
    what = (f'download of {res.name} from {url} was interrupted '
            f'({type(e).__name__}: {_reason(e)})')
  else:
    what = f'cannot download {res.name} from {url}: {_reason(e)}'
  return DownloadError(f'{what}. {_offline_hint(res, root)}')


def _reason(e: BaseException) -> str:
  """The innermost error's text: requests and urllib3 wrap the socket's."""
  for _ in range(8):
    inner = e.__cause__ or getattr(e, 'reason', None) or (e.args or [0])[0]
    if not isinstance(inner, BaseException):
      break
    e = inner
  return str(e)


@contextlib.contextmanager
def _quiet_pooch():
  """pooch logs each download and hash at INFO to its own stderr handler."""
  import pooch  # pylint: disable=g-import-not-at-top
  pooch_logger = pooch.get_logger()
  level = pooch_logger.level
  pooch_logger.setLevel(logging.WARNING)
  try:
    yield
  finally:
    pooch_logger.setLevel(level)


def _unpack(res: Resource,
            download: pathlib.Path) -> list[tuple[FileSpec, pathlib.Path]]:
  """Unpacks the listed members next to ``download``.

  Returns:
    (spec, unpacked path) pairs.
  """
  if res.archive is None:
    return [(res.files[0], download)]
  import pooch  # pylint: disable=g-import-not-at-top
  processors = {'zip': pooch.Unzip, 'tgz': pooch.Untar}
  if res.archive not in processors:
    raise ValueError(f'archive of resource {res.name!r} must be one of '
                     f'{sorted(processors)} or None, got {res.archive!r}.')
  unpack = processors[res.archive](
      members=[f.member for f in res.files], extract_dir='unpacked')
  try:
    with _quiet_pooch():
      unpack(str(download), 'download', None)
  except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error,
          OSError) as e:
    raise ChecksumError(f'{res.filename} from {res.url} is not a readable '
                        f'{res.archive} archive ({e}); refusing it.') from None
  out = []
  for spec in res.files:
    path = download.parent / 'unpacked' / spec.member
    # Only regular files are kept: a link could point out of the cache.
    if path.is_symlink() or not path.is_file():
      raise ChecksumError(f'{res.filename} from {res.url} has no member '
                          f'{spec.member!r}; refusing it.')
    out.append((spec, path))
  return out


def fetch(resource: Resource | str,
          cache_dir: os.PathLike | str | None = None,
          *,
          url: str | None = None,
          timeout: float = 60.0) -> pathlib.Path:
  """Makes sure ``resource`` is in the cache and returns the cache root.

  Args:
    resource: a resource name (``'ptb'``, ``'text8'``, ``'enwik8'``,
      ``'uci_har'``, ``'thesession'``), a dataset name of the registry
      (``'ptb_char'`` -> ``'ptb'``), or a :class:`Resource`.
    cache_dir: where to cache; default :func:`default_cache_dir`.
    url: download from here instead of the canonical URL (also
      ``$VCRNN_JAX_DATA_MIRROR``, a base URL the file name is appended to);
      ``http://``, ``https://`` or ``ftp://``.
    timeout: socket timeout in seconds.

  Returns:
    The cache root, to pass as ``data_dir`` to the loaders.

  Raises:
    DownloadError: the URL cannot be reached, answers an error status, or the
      transfer is cut short. The message is one line saying where to put the
      files by hand.
    ChecksumError: size or SHA-256 mismatch, or a corrupt archive. Nothing is
      written to the cache in either case.
    ValueError: an unknown resource, or a URL of another scheme.

  Example::

    root = fetch('ptb')
    ds = vcrnn_jax.data.load('ptb_word', data_dir=root)
  """
  res = _resource(resource)
  root = pathlib.Path(cache_dir).expanduser() if cache_dir is not None else (
      default_cache_dir())
  if is_cached(res, root):
    return root
  mirror = os.environ.get(MIRROR_ENV)
  if url is None:
    name = urllib.parse.quote(res.filename)
    url = f'{mirror.rstrip("/")}/{name}' if mirror else res.url
  downloader = _downloader(url, timeout)
  import pooch  # pylint: disable=g-import-not-at-top
  import requests  # pylint: disable=g-import-not-at-top
  root.mkdir(parents=True, exist_ok=True)
  tmp = pathlib.Path(tempfile.mkdtemp(prefix=f'.tmp-{res.name}-', dir=root))
  try:
    logger.info('downloading %s from %s', res.name, url)
    try:
      with _quiet_pooch():
        # The digest is checked below, with the size and in the same words
        # as the archive members'.
        download = pathlib.Path(pooch.retrieve(
            url, known_hash=None, fname=res.filename, path=tmp,
            downloader=downloader))
    except (requests.RequestException, ftplib.Error, OSError, EOFError) as e:
      raise _transfer_error(res, url, root, e) from None
    what = f'{res.filename} from {url}'
    digest = _check(download, what, res.sha256, res.size)
    if res.sha256 is None:
      logger.warning('%s: no known SHA-256 to verify against; computed %s.',
                     what, digest)
    staged = _unpack(res, download)
    for spec, path in staged:
      _check(path, f'{spec.path} from {res.filename}', spec.sha256, spec.size)
    for spec, path in staged:
      final = root / spec.path
      final.parent.mkdir(parents=True, exist_ok=True)
      os.replace(path, final)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)
  return root


def main(argv: Sequence[str] | None = None) -> int:
  """``python -m vcrnn_jax.data.download NAME...``: fetch resources."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
      'names', nargs='+', help=f'resources: {sorted(RESOURCES)}')
  parser.add_argument(
      '--cache_dir',
      default=None,
      help=f'default ${CACHE_ENV} or '
      '~/.cache/vcrnn_jax')
  args = parser.parse_args(argv)
  logging.basicConfig(level=logging.INFO, format='%(message)s')
  for name in args.names:
    try:
      print(fetch(name, args.cache_dir))
    except (DownloadError, ValueError) as e:
      print(f'error: {e}', file=sys.stderr)
      return 1
  return 0


if __name__ == '__main__':
  sys.exit(main())
