"""What every loader returns (:class:`Dataset`, :class:`Vocab`); file helpers.

A loader returns a :class:`Dataset`, a ``NamedTuple`` in the spirit of
``tfds.load(..., as_supervised=True)`` outputs but plain numpy::

  ds = vcrnn_jax.data.load('ptb_char', data_dir='corpora')
  ds.train            # int32 [n] ids in stream order
  ds.vocab.decode(ds.train[:5])
  ds.meta['files']    # which files were read

Symbol corpora store each split as a 1-D ``int32`` array of vocabulary ids in
stream order; the end of a line, sentence or tune is itself a symbol, so a
language model sees the boundary. ``uci_har`` stores ``(inputs, labels)`` pairs
and has no vocabulary.
"""

from collections.abc import Hashable, Iterable, Mapping, Sequence
import math
import os
import pathlib
import types
from typing import Any, NamedTuple
import zipfile

import numpy as np

from vcrnn_jax.core import check_positive_int

__all__ = [
    'Vocab',
    'Dataset',
    'SPLITS',
    'check_fractions',
    'split_counts',
    'check_positive',
    'find_file',
    'read_bytes',
    'decode_utf8',
    'check_ends_with_newline',
]

PathLike = str | os.PathLike


class Vocab:
  """A fixed, ordered symbol inventory: ids are positions in ``id_to_token``.

  Tokens are any hashable values: strings for word, character and music
  corpora, ints ``0..255`` for byte corpora (so ``bytes(vocab.decode(ids))``
  rebuilds the raw bytes).

  Example:

    >>> v = Vocab(['<unk>', 'a', 'b'], unk_token='<unk>')
    >>> v.encode(['a', 'b', 'z']).tolist()
    [1, 2, 0]
    >>> ''.join(v.decode([1, 2, 1]))
    'aba'
    >>> v.size
    3
  """

  def __init__(self,
               tokens: Iterable[Hashable],
               unk_token: Hashable | None = None):
    self._id_to_token = tuple(tokens)
    self._token_to_id = {t: i for i, t in enumerate(self._id_to_token)}
    if len(self._token_to_id) != len(self._id_to_token):
      seen = set()
      dup = next(t for t in self._id_to_token if t in seen or seen.add(t))
      raise ValueError(f'Vocab tokens must be unique, got {dup!r} twice.')
    if unk_token is not None and unk_token not in self._token_to_id:
      raise ValueError(
          f'unk_token {unk_token!r} is not one of the {len(self)} tokens.')
    self._unk_token = unk_token

  @property
  def id_to_token(self) -> tuple[Hashable, ...]:
    """Tokens in id order."""
    return self._id_to_token

  @property
  def token_to_id(self) -> Mapping[Hashable, int]:
    """The inverse of ``id_to_token``."""
    return self._token_to_id

  @property
  def size(self) -> int:
    """Number of symbols (the softmax width)."""
    return len(self._id_to_token)

  @property
  def unk_token(self) -> Hashable | None:
    """The token unknown inputs map to, or None when unknowns are errors."""
    return self._unk_token

  @property
  def unk_id(self) -> int | None:
    """Id of ``unk_token`` or None."""
    return None if self._unk_token is None else self._token_to_id[
        self._unk_token]

  def __len__(self) -> int:
    return len(self._id_to_token)

  def __contains__(self, token: Hashable) -> bool:
    return token in self._token_to_id

  def __eq__(self, other: Any) -> bool:
    return (isinstance(other, Vocab) and
            self._id_to_token == other._id_to_token and
            self._unk_token == other._unk_token)

  def __hash__(self) -> int:
    return hash((self._id_to_token, self._unk_token))

  def __repr__(self) -> str:
    head = ', '.join(repr(t) for t in self._id_to_token[:8])
    more = ', ...' if self.size > 8 else ''
    return f'Vocab(size={self.size}, tokens=[{head}{more}])'

  def encode(self, tokens: Iterable[Hashable]) -> np.ndarray:
    """Maps tokens to an ``int32`` array of ids.

    Unknown tokens map to ``unk_id``; without an ``unk_token`` they raise
    ``ValueError`` naming the first unknown token.
    """
    lookup = self._token_to_id
    unk = self.unk_id
    if unk is None:
      try:
        return np.fromiter((lookup[t] for t in tokens), dtype=np.int32)
      except KeyError as e:
        raise ValueError(
            f'token {e.args[0]!r} is not in the vocabulary ({self!r}) and it '
            'has no unk_token.') from None
    return np.fromiter((lookup.get(t, unk) for t in tokens), dtype=np.int32)

  def decode(self, ids: Iterable[int]) -> list[Hashable]:
    """Maps ids back to tokens (a list; join it for character vocabularies)."""
    table = self._id_to_token
    out = []
    for i in np.asarray(ids).reshape(-1).tolist():
      if not 0 <= i < len(table):
        raise ValueError(
            f'id {i} is outside the vocabulary range [0, {len(table)}).')
      out.append(table[i])
    return out


class Dataset(NamedTuple):
  """Train/valid/test splits, the vocabulary and per-dataset metadata.

  Attributes:
    train: training split. Symbol corpora: ``int32 [n]`` ids in stream order.
      ``uci_har``: ``(inputs float32 [N, 128, 9], labels int32 [N])``.
    valid: validation split, same layout (may be empty, see each loader).
    test: test split, same layout.
    vocab: the :class:`Vocab` of a symbol corpus; None for ``uci_har``.
    meta: loader-specific extras, always with ``'name'`` and ``'files'``
      (paths read); e.g. ``'bit_position'`` for ``ptb_bit``, ``'tune_starts'``
      for ``thesession``, ``'subjects'`` for ``uci_har``. Per-split arrays are
      stored as ``{'train': ..., 'valid': ..., 'test': ...}``.

  Example:

    >>> ds = Dataset(np.arange(3, dtype=np.int32), np.zeros(0, np.int32),
    ...              np.zeros(0, np.int32), Vocab('abc'), {'name': 'toy'})
    >>> ds.split('train').tolist()
    [0, 1, 2]
  """

  train: Any
  valid: Any
  test: Any
  vocab: Vocab | None = None
  meta: Mapping[str, Any] = types.MappingProxyType({})

  def split(self, name: str) -> Any:
    """Returns the split called ``name`` ('train', 'valid' or 'test')."""
    if name not in SPLITS:
      raise ValueError(f'split must be one of {SPLITS}, got {name!r}.')
    return getattr(self, name)


SPLITS = ('train', 'valid', 'test')


def check_fractions(name: str,
                    fractions: Sequence[float]) -> tuple[float, float, float]:
  """Validates a (train, valid, test) fraction triple."""
  try:
    fr = tuple(float(f) for f in fractions)
  except (TypeError, ValueError):
    fr = ()
  if (len(fr) != 3 or any(not math.isfinite(f) or f < 0 for f in fr) or
      fr[0] <= 0 or abs(sum(fr) - 1.0) > 1e-6):
    raise ValueError(
        f'{name} must be three non-negative fractions (train, valid, test) '
        f'with train > 0 summing to 1, got {fractions!r}.')
  return fr  # type: ignore[return-value]


def split_counts(n: int, fractions: Sequence[float]) -> tuple[int, int, int]:
  """Sizes (train, valid, test) of ``n`` items; valid and test are floored.

  Flooring the held-out parts makes the canonical splits exact: 5% of enwik8's
  100,000,000 bytes is 5,000,000.

    >>> split_counts(100_000_000, (0.9, 0.05, 0.05))
    (90000000, 5000000, 5000000)
  """
  _, fv, ft = fractions
  # The epsilon absorbs binary rounding (0.05 * 1e8 = 5000000.000000001).
  n_valid = int(math.floor(n * fv + 1e-7))
  n_test = int(math.floor(n * ft + 1e-7))
  return n - n_valid - n_test, n_valid, n_test


def check_positive(name: str,
                   value: Any,
                   allow_none: bool = False) -> int | None:
  """Returns ``value`` as an int or raises ``ValueError`` naming the option.

  :func:`vcrnn_jax.core.check_positive_int`, with ``None`` allowed on request.
  """
  if value is None and allow_none:
    return None
  return check_positive_int(name, value)


def find_file(data_dir: PathLike,
              subdir: str,
              candidates: Sequence[str],
              what: str,
              dirs: Sequence[str] = ()) -> pathlib.Path:
  """Finds the first of ``candidates`` in ``data_dir/subdir`` or ``data_dir``.

  ``data_dir`` is the data root (the corpora directory holding ``ptb/``) or
  the dataset folder itself; both layouts are accepted so users can point at
  either. Candidates are tried in the given order (a documented precedence,
  e.g. an extracted folder before its zip). A candidate must be a regular file
  unless it is listed in ``dirs``, in which case it must be a folder.

  Raises:
    FileNotFoundError: naming every path tried and what was expected.
  """
  root = pathlib.Path(data_dir).expanduser()
  if not root.is_dir():
    raise FileNotFoundError(
        f'data_dir {str(root)!r} is not a directory; expected a folder holding '
        f'{subdir}/ with {what}.')
  tried = []
  for base in (root / subdir, root):
    for c in candidates:
      p = base / c
      tried.append(str(p))
      if (p.is_dir() if c in dirs else p.is_file()):
        return p
  raise FileNotFoundError(f'{what} not found under data_dir {str(root)!r}; '
                          f'tried: {", ".join(tried)}.')


def read_bytes(path: pathlib.Path,
               member: str | None = None,
               max_bytes: int | None = None) -> bytes:
  """Reads a file, or ``member`` of the zip ``path``, optionally only a prefix.

  Raises:
    FileNotFoundError: when the file or zip member is missing.
    ValueError: when the zip is corrupt or truncated.
  """
  if member is None:
    if not path.is_file():
      raise FileNotFoundError(f'{str(path)!r} is not a file.')
    with open(path, 'rb') as f:
      return f.read() if max_bytes is None else f.read(max_bytes)
  try:
    with zipfile.ZipFile(path) as zf:
      try:
        with zf.open(member) as f:
          return f.read() if max_bytes is None else f.read(max_bytes)
      except KeyError:
        raise FileNotFoundError(
            f'zip {str(path)!r} has no member {member!r}; it has '
            f'{len(zf.namelist())} members, e.g. {zf.namelist()[:3]}.'
        ) from None
  except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as e:
    raise ValueError(
        f'{str(path)!r} is not a readable zip archive (truncated or '
        f'corrupt?): {e}.') from None


def decode_utf8(data: bytes, path: PathLike) -> str:
  """Decodes UTF-8 or raises ``ValueError`` naming the path and byte offset."""
  try:
    return data.decode('utf-8')
  except UnicodeDecodeError as e:
    bad = data[e.start:e.start + 1]
    raise ValueError(
        f'{str(path)!r} is not UTF-8 text: byte {e.start} ({bad!r}) cannot be '
        f'decoded ({e.reason}).') from None


def check_not_empty(data: bytes | str, path: PathLike, what: str) -> None:
  if not data or not data.strip():
    raise ValueError(f'{str(path)!r} is empty; expected {what}.')


def check_ends_with_newline(text: str, path: PathLike, what: str) -> None:
  """Line-oriented corpora end with a newline; a missing one means truncation.

  Trailing spaces after the last newline are allowed (``ptb.char.*.txt`` ends
  with ``"\\n "``).
  """
  if not text.rstrip(' \t').endswith('\n'):
    tail = text[-40:]
    raise ValueError(
        f'{str(path)!r} does not end with a newline (last characters '
        f'{tail!r}); expected {what}. The file looks truncated.')


def check_nonempty_splits(name: str, path: PathLike,
                          sizes: Mapping[str, int]) -> None:
  for split, n in sizes.items():
    if n <= 0:
      raise ValueError(
          f'{name}: the {split} split of {str(path)!r} is empty (split sizes '
          f'{dict(sizes)}); the file is too small for the requested split.')
