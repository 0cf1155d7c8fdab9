"""Symbol streams: PTB (word, char, bit), Text8, enwik8, any text or byte file.

Every loader returns a :class:`~vcrnn_jax.data.dataset.Dataset` whose splits are
1-D ``int32`` id streams. Line ends are symbols (``'<eos>'`` for PTB words,
``'\\n'`` for characters), as in Mikolov's and Zaremba's setups, so a language
model predicts them like any other symbol.

Usage (through the registry)::

  ds = vcrnn_jax.data.load('ptb_word', data_dir='corpora')
  ds.vocab.size            # 10000
  ds.train.shape           # (929589,)
"""

import collections
from collections.abc import Sequence
import pathlib

import numpy as np

from vcrnn_jax.data import dataset as ds_lib
from vcrnn_jax.data.dataset import Dataset, PathLike, Vocab

__all__ = [
    'EOS',
    'EOL',
    'UNK',
    'DEFAULT_FRACTIONS',
    'load_ptb_word',
    'load_ptb_char',
    'chars_to_bits',
    'load_ptb_bit',
    'TEXT8_ALPHABET',
    'load_text8',
    'load_enwik8',
    'load_bytes',
    'load_text',
]

EOS = '<eos>'
EOL = '\n'
UNK = '<unk>'
DEFAULT_FRACTIONS = (0.9, 0.05, 0.05)

_PTB_WHAT = "Mikolov's PTB files ptb.{train,valid,test}.txt"
_PTB_CHAR_WHAT = "Mikolov's PTB character files ptb.char.{train,valid,test}.txt"

# --------------------------------------------------------------------------- #
# Helpers.


def _codepoints(text: str) -> np.ndarray:
  """Unicode code points of ``text`` as uint32, without a Python loop."""
  return np.frombuffer(text.encode('utf-32-le'), dtype='<u4')


class _CharTable:
  """Vectorised char -> id lookup for a character :class:`Vocab`."""

  def __init__(self, vocab: Vocab):
    chars = [(ord(t), i)
             for i, t in enumerate(vocab.id_to_token)
             if isinstance(t, str) and len(t) == 1]
    chars.sort()
    self.points = np.array([c for c, _ in chars], dtype=np.uint32)
    self.ids = np.array([i for _, i in chars], dtype=np.int32)
    self.unk_id = vocab.unk_id

  def encode(self, text: str) -> tuple[np.ndarray, np.ndarray]:
    """Returns (ids int32, known bool); unknown positions get unk_id or -1."""
    cps = _codepoints(text)
    missing = -1 if self.unk_id is None else self.unk_id
    if not len(self.points):
      return (np.full(len(cps), missing, dtype=np.int32),
              np.zeros(len(cps), dtype=bool))
    pos = np.searchsorted(self.points, cps)
    pos_c = np.minimum(pos, len(self.points) - 1)
    known = (pos < len(self.points)) & (self.points[pos_c] == cps)
    ids = np.where(known, self.ids[pos_c], missing)
    return ids.astype(np.int32), known


def _lines(text: str) -> list[str]:
  """Lines of a newline-terminated file (a whitespace-only tail is no line)."""
  lines = text.split('\n')
  if not lines[-1].strip():
    lines.pop()
  return lines


def _find_line(text: str, offset: int) -> int:
  return text.count('\n', 0, offset) + 1


def _split_stream(stream: np.ndarray, fractions, name: str, path: PathLike):
  n_train, n_valid, n_test = ds_lib.split_counts(len(stream), fractions)
  sizes = {'train': n_train, 'valid': n_valid, 'test': n_test}
  wanted = {k: v for (k, v), f in zip(sizes.items(), fractions) if f > 0}
  ds_lib.check_nonempty_splits(name, path, wanted)
  return (stream[:n_train], stream[n_train:n_train + n_valid],
          stream[n_train + n_valid:])


def _boundary_meta(splits: dict[str, np.ndarray],
                   boundary_ids: Sequence[int]) -> dict:
  ids = np.asarray(list(boundary_ids), dtype=np.int32)
  return {k: np.isin(v, ids) for k, v in splits.items()}


# --------------------------------------------------------------------------- #
# Penn Treebank.


def _read_ptb_text(data_dir: PathLike, filename: str,
                   what: str) -> tuple[pathlib.Path, str]:
  path = ds_lib.find_file(data_dir, 'ptb', [filename], f'{filename} ({what})')
  raw = ds_lib.read_bytes(path)
  ds_lib.check_not_empty(raw, path, what)
  text = ds_lib.decode_utf8(raw, path)
  ds_lib.check_ends_with_newline(text, path, what)
  return path, text


def load_ptb_word(data_dir: PathLike) -> Dataset:
  """Word-level Penn Treebank (Mikolov's ``simple-examples`` version).

  Reads ``ptb.{train,valid,test}.txt`` (one sentence per line, ``<unk>`` and
  ``N`` already substituted). Each line becomes its words followed by
  ``'<eos>'``, exactly as the Zaremba et al. / TensorFlow ``ptb_reader`` does;
  the vocabulary (10,000 words including ``<eos>`` on the real files) is built
  from train and ordered by decreasing count, ties alphabetically, so ids match
  that reader's. PTB is a closed vocabulary: a valid/test word missing from
  train is an error.

  Args:
    data_dir: the data root holding ``ptb/`` (or the ``ptb`` folder itself).

  Returns:
    A :class:`Dataset` of int32 word-id streams.

  Raises:
    FileNotFoundError: a file is missing.
    ValueError: a file is empty, not UTF-8, truncated (no final newline),
      valid/test has a word that train lacks, or train looks like a
      character-level file (nearly only one-character tokens, or a few
      dozen distinct ones over thousands).

  Example:

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for s in ('train', 'valid', 'test'):
    ...   _ = (d / f'ptb.{s}.txt').write_text(' the cat \\n the dog \\n')
    >>> ds = load_ptb_word(d)
    >>> ds.vocab.decode(ds.train)
    ['the', 'cat', '<eos>', 'the', 'dog', '<eos>']
  """
  texts, paths = {}, {}
  for split in ds_lib.SPLITS:
    paths[split], texts[split] = _read_ptb_text(
        data_dir, f'ptb.{split}.txt',
        _PTB_WHAT + ' (space-separated words, one sentence per line)')
  tokens = {s: t.replace('\n', f' {EOS} ').split() for s, t in texts.items()}
  _check_words(tokens['train'], paths['train'])
  counts = collections.Counter(tokens['train'])
  vocab = Vocab(
      w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
  splits = {}
  for split, toks in tokens.items():
    try:
      splits[split] = vocab.encode(toks)
    except ValueError:
      bad = next(w for w in toks if w not in vocab)
      line = next(i for i, l in enumerate(texts[split].split('\n'), 1)
                  if bad in l.split())
      raise ValueError(
          f'{str(paths[split])!r} line {line}: word {bad!r} is not in the '
          'training vocabulary; PTB valid/test must only use train words.'
      ) from None
  meta = {'name': 'ptb_word', 'files': [str(p) for p in paths.values()]}
  return Dataset(splits['train'], splits['valid'], splits['test'], vocab, meta)


# A file of words has few one-character tokens (PTB train: 4%: 'N', 'a',
# '$', ...) and thousands of types; a character file read as words has
# nearly only one-character tokens and ~50 types.
_MAX_SINGLE_CHARACTER_SHARE = 0.9
_MIN_TYPES_PER_TOKENS = (20_000, 200)   # >= 20k tokens need >= 200 types


def _check_words(tokens: list, path) -> None:
  """Refuses a character-level file given as a word-level one."""
  words = [t for t in tokens if t != EOS]
  if len(words) < 200:
    return    # Too short to tell (hand-written test files).
  share = sum(len(t) == 1 for t in words) / len(words)
  types = len(set(words))
  many, least = _MIN_TYPES_PER_TOKENS
  if share >= _MAX_SINGLE_CHARACTER_SHARE or (len(words) >= many
                                              and types < least):
    raise ValueError(
        f'{str(path)!r}: {share:.0%} of its {len(words)} tokens are single '
        f'characters and it has {types} distinct tokens: this looks like a '
        'character-level file (ptb.char.*.txt); word-level PTB is '
        'ptb.{train,valid,test}.txt, space-separated words.')


def _ptb_char_lines(data_dir: PathLike, source: str) -> tuple[dict, dict]:
  """Per split: the lines as character strings ('_' between words), path."""
  out, paths = {}, {}
  for split in ds_lib.SPLITS:
    if source == 'char':
      path, text = _read_ptb_text(
          data_dir, f'ptb.char.{split}.txt',
          _PTB_CHAR_WHAT + " (space-separated characters, '_' between words)")
      lines = []
      for i, line in enumerate(_lines(text), 1):
        toks = line.split()
        if any(len(t) != 1 for t in toks):
          bad = next(t for t in toks if len(t) != 1)
          raise ValueError(
              f'{str(path)!r} line {i}: token {bad!r} is not a single '
              'character; expected space-separated characters (is this a '
              f"word-level file? use source='word' with ptb.{split}.txt).")
        lines.append(''.join(toks))
    elif source == 'word':
      path, text = _read_ptb_text(data_dir, f'ptb.{split}.txt', _PTB_WHAT)
      lines = ['_'.join(line.split()) for line in _lines(text)]
    else:
      raise ValueError(f"source must be 'char' or 'word', got {source!r}.")
    out[split], paths[split] = lines, path
  return out, paths


def load_ptb_char(data_dir: PathLike,
                  source: str = 'char',
                  word_boundaries: bool = False) -> Dataset:
  """Character-level Penn Treebank.

  Reads ``ptb.char.{split}.txt`` (characters separated by spaces, ``_`` between
  words) or, with ``source='word'``, rebuilds the same stream from the word
  files by joining words with ``_`` (identical on the real files). Each line
  ends with the end-of-line symbol ``'\\n'``. The vocabulary is train's
  characters in code-point order: 49 characters including ``_`` plus ``'\\n'``
  (50) on the real files; PTB is closed, so an unseen valid/test character is
  an error.

  Args:
    data_dir: the data root holding ``ptb/`` (or the ``ptb`` folder itself).
    source: ``'char'`` (the ``ptb.char.*`` files) or ``'word'`` (derive).
    word_boundaries: add ``meta['word_boundaries']``, per split a bool mask
      that is True on ``_`` and line ends (for the VCRNN "guide" penalty).

  Returns:
    A :class:`Dataset` of int32 character-id streams.

  Example:

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for s in ('train', 'valid', 'test'):
    ...   _ = (d / f'ptb.char.{s}.txt').write_text('a _ b \\n ')
    >>> ds = load_ptb_char(d)
    >>> ''.join(ds.vocab.decode(ds.train))
    'a_b\\n'
  """
  lines, paths = _ptb_char_lines(data_dir, source)
  texts = {s: ''.join(l + EOL for l in ls) for s, ls in lines.items()}
  vocab = Vocab(sorted(set(texts['train'])))
  table = _CharTable(vocab)
  splits = {}
  for split, text in texts.items():
    ids, known = table.encode(text)
    if not known.all():
      off = int(np.argmin(known))
      raise ValueError(
          f'{str(paths[split])!r}: character {text[off]!r} (line '
          f'{_find_line(text, off)}) is not in the training vocabulary; PTB '
          'valid/test must only use train characters.')
    splits[split] = ids
  meta = {
      'name': 'ptb_char',
      'source': source,
      'files': [str(p) for p in paths.values()],
  }
  if word_boundaries:
    meta['word_boundaries'] = _boundary_meta(
        splits, [vocab.token_to_id[c] for c in ('_', EOL) if c in vocab])
  return Dataset(splits['train'], splits['valid'], splits['test'], vocab, meta)


def chars_to_bits(
    char_ids: np.ndarray,
    char_vocab: Vocab,
    buffer_bits: int = 0,
    char_map: dict[str, str] | None = None) -> tuple[np.ndarray, np.ndarray]:
  """Expands character ids into their 8-bit codes, MSB first, plus zero buffers.

  Args:
    char_ids: int [n] ids into ``char_vocab`` (single-character tokens whose
      code points are below 256).
    char_vocab: the character vocabulary.
    buffer_bits: zero bits appended after every character (the VCRNN paper's
      Sec. 5.2.1 / Fig. 2 uses 8 and 24), so the stream has period
      ``8 + buffer_bits``.
    char_map: optional replacement applied before encoding, e.g. ``{'_': ' '}``.

  Returns:
    ``(bits, bit_position)``: int32 [n * period] in {0, 1}, and int8 of the same
    length holding 0..7 for a real bit's position in its character (0 = most
    significant) and -1 for buffer bits.

  Example:

    >>> bits, pos = chars_to_bits(np.array([0]), Vocab(['A']), buffer_bits=2)
    >>> bits.tolist(), pos.tolist()
    ([0, 1, 0, 0, 0, 0, 0, 1, 0, 0], [0, 1, 2, 3, 4, 5, 6, 7, -1, -1])
  """
  if (isinstance(buffer_bits, bool) or
      not isinstance(buffer_bits, (int, np.integer)) or buffer_bits < 0):
    raise ValueError(
        f'buffer_bits must be a non-negative integer, got {buffer_bits!r}.')
  char_map = char_map or {}
  codes = []
  for t in char_vocab.id_to_token:
    c = char_map.get(t, t)
    if not isinstance(c, str) or len(c) != 1 or ord(c) > 255:
      raise ValueError(
          f'bit-level encoding needs single 8-bit characters; vocabulary '
          f'token {t!r} maps to {c!r}.')
    codes.append(ord(c))
  byte_table = np.array(codes, dtype=np.uint8)
  period = 8 + int(buffer_bits)
  n = len(char_ids)
  bits = np.zeros((n, period), dtype=np.int32)
  bits[:, :8] = np.unpackbits(byte_table[np.asarray(char_ids)][:, None], axis=1)
  pattern = np.concatenate([np.arange(8), -np.ones(period - 8)]).astype(np.int8)
  return bits.reshape(-1), np.tile(pattern, n)


def load_ptb_bit(data_dir: PathLike,
                 buffer_bits: int = 0,
                 source: str = 'char',
                 boundary_char: str = '_') -> Dataset:
  """Bit-level Penn Treebank: every PTB character as its 8-bit code.

  The character stream of :func:`load_ptb_char` (line ends as ``'\\n'``, code
  10) is written bit by bit, most significant bit first; optionally
  ``buffer_bits`` zero bits follow every character, the artificial "buffer"
  data of the VCRNN paper (Sec. 5.2.1, Fig. 2; 8 or 24 there).

  Memory: 8 + ``buffer_bits`` int32 per character; the train split holds
  5.0M characters (160 MB unbuffered, 640 MB with 24 buffer bits).

  Args:
    data_dir: the data root holding ``ptb/`` (or the ``ptb`` folder itself).
    buffer_bits: zero bits after each character (>= 0).
    source: passed to :func:`load_ptb_char`.
    boundary_char: the byte written for the word boundary ``_``; ``' '``
      restores the spaces of the original text.

  Returns:
    A :class:`Dataset` with vocab ``['0', '1']`` and ``meta`` holding
    ``'bit_position'`` (per split int8: 0..7 real bit index, -1 buffer),
    ``'period'``, ``'buffer_bits'``, ``'char_ids'`` (per split, the underlying
    character ids, so ``char_ids[i // period]`` labels bit ``i``) and
    ``'char_vocab'``.

  Example:

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for s in ('train', 'valid', 'test'):
    ...   _ = (d / f'ptb.char.{s}.txt').write_text('a \\n ')
    >>> ds = load_ptb_bit(d, buffer_bits=8)
    >>> ds.train[:8].tolist(), ds.meta['period']
    ([0, 1, 1, 0, 0, 0, 0, 1], 16)
  """
  chars = load_ptb_char(data_dir, source=source)
  char_map = {'_': boundary_char}
  splits, positions = {}, {}
  for split in ds_lib.SPLITS:
    splits[split], positions[split] = chars_to_bits(
        chars.split(split), chars.vocab, buffer_bits, char_map)
  meta = {
      'name': 'ptb_bit',
      'files': chars.meta['files'],
      'source': source,
      'bit_position': positions,
      'period': 8 + int(buffer_bits),
      'buffer_bits': int(buffer_bits),
      'boundary_char': boundary_char,
      'char_ids': {s: chars.split(s) for s in ds_lib.SPLITS},
      'char_vocab': chars.vocab,
  }
  return Dataset(splits['train'], splits['valid'], splits['test'],
                 Vocab(['0', '1']), meta)


# --------------------------------------------------------------------------- #
# Text8 and raw bytes (enwik8).

TEXT8_ALPHABET = ' abcdefghijklmnopqrstuvwxyz'


def load_text8(data_dir: PathLike,
               max_length: int | None = None,
               fractions: Sequence[float] = DEFAULT_FRACTIONS,
               word_boundaries: bool = False) -> Dataset:
  """Text8: one line of ``a-z`` and spaces (Mahoney's cleaned Wikipedia).

  Reads ``text8`` or ``text8.zip`` (member ``text8``) from ``data_dir/text8/``
  or ``data_dir``; the extracted file wins when both exist. The stream is split
  contiguously 90% / 5% / 5%, which on the real 100,000,000-character file is
  the standard 90M / 5M / 5M. The vocabulary is fixed: space then ``a``-``z``
  (27 symbols). A single trailing newline is allowed; any other character is
  an error.

  Args:
    data_dir: the data root.
    max_length: read only the first ``max_length`` characters (quick runs).
    fractions: (train, valid, test) fractions.
    word_boundaries: add ``meta['word_boundaries']`` (True on spaces).

  Example:

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / 'text8').write_text('ab ' * 40)
    >>> ds = load_text8(d)
    >>> len(ds.train), len(ds.valid), len(ds.test), ds.vocab.size
    (108, 6, 6, 27)
  """
  max_length = ds_lib.check_positive('max_length', max_length, allow_none=True)
  fractions = ds_lib.check_fractions('fractions', fractions)
  what = 'the Text8 file (one line of a-z and spaces)'
  path = ds_lib.find_file(data_dir, 'text8', ['text8', 'text8.zip'],
                          'text8 or text8.zip')
  raw = ds_lib.read_bytes(path, 'text8' if path.suffix == '.zip' else None,
                          max_length)
  ds_lib.check_not_empty(raw, path, what)
  if raw.endswith(b'\n'):
    raw = raw[:-1]
  table = np.full(256, -1, dtype=np.int32)
  for i, c in enumerate(TEXT8_ALPHABET):
    table[ord(c)] = i
  ids = table[np.frombuffer(raw, dtype=np.uint8)]
  if (ids < 0).any():
    off = int(np.argmax(ids < 0))
    raise ValueError(
        f'{str(path)!r}: byte {off} is {raw[off:off + 1]!r}; expected {what}.')
  train, valid, test = _split_stream(ids, fractions, 'text8', path)
  meta = {'name': 'text8', 'files': [str(path)]}
  if word_boundaries:
    splits = {'train': train, 'valid': valid, 'test': test}
    meta['word_boundaries'] = _boundary_meta(splits, [0])
  return Dataset(train, valid, test, Vocab(TEXT8_ALPHABET), meta)


def _load_byte_stream(path: pathlib.Path, member: str | None, name: str,
                      max_length, fractions) -> Dataset:
  max_length = ds_lib.check_positive('max_length', max_length, allow_none=True)
  fractions = ds_lib.check_fractions('fractions', fractions)
  raw = ds_lib.read_bytes(path, member, max_length)
  if not raw:
    raise ValueError(f'{str(path)!r} is empty; expected raw bytes.')
  ids = np.frombuffer(raw, dtype=np.uint8).astype(np.int32)
  train, valid, test = _split_stream(ids, fractions, name, path)
  meta = {'name': name, 'files': [str(path)]}
  return Dataset(train, valid, test, Vocab(range(256)), meta)


def load_enwik8(data_dir: PathLike,
                max_length: int | None = None,
                fractions: Sequence[float] = DEFAULT_FRACTIONS) -> Dataset:
  """enwik8: the first 10^8 bytes of a 2006 English Wikipedia XML dump.

  Reads ``enwik8`` or ``enwik8.zip`` (member ``enwik8``) from
  ``data_dir/enwik8/`` or ``data_dir``; the extracted file wins. Ids are the
  byte values (vocabulary of all 256 bytes, ``bytes(vocab.decode(ids))`` gives
  the raw text back), one byte per step as in Graves' ACT Wikipedia task. The
  split is contiguous 90% / 5% / 5%: on the real 100,000,000-byte file the
  last 5M bytes are test and the 5M before them valid.

  Args:
    data_dir: the data root.
    max_length: read only the first ``max_length`` bytes (quick runs).
    fractions: (train, valid, test) fractions.

  Example:

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / 'enwik8').write_bytes(bytes(range(200)))
    >>> ds = load_enwik8(d)
    >>> len(ds.train), len(ds.valid), len(ds.test)
    (180, 10, 10)
    >>> bytes(ds.vocab.decode(ds.test[:2]))
    b'\\xbe\\xbf'
  """
  path = ds_lib.find_file(data_dir, 'enwik8', ['enwik8', 'enwik8.zip'],
                          'enwik8 or enwik8.zip')
  return _load_byte_stream(path, 'enwik8' if path.suffix == '.zip' else None,
                           'enwik8', max_length, fractions)


def _resolve_path(path: PathLike | None, data_dir: PathLike | None, subdir: str,
                  name: str) -> pathlib.Path:
  if path is None:
    raise ValueError(f"load('{name}') needs path=<file>; none was given.")
  p = pathlib.Path(path).expanduser()
  if p.is_absolute() or data_dir is None:
    if not p.is_file():
      raise FileNotFoundError(f'{name}: path {str(p)!r} is not a file.')
    return p
  return ds_lib.find_file(data_dir, subdir, [str(p)], f'{name} file {str(p)!r}')


def load_bytes(path: PathLike | None = None,
               data_dir: PathLike | None = None,
               max_length: int | None = None,
               fractions: Sequence[float] = DEFAULT_FRACTIONS) -> Dataset:
  """Any file as a raw byte stream, split like enwik8 (contiguous 90/5/5).

  This is the loader for byte-level models on files other than enwik8 (the
  ACT Wikipedia binary accepts any byte file through it).

  Args:
    path: the file; a relative path is looked up under ``data_dir`` (and
      ``data_dir/text``) when ``data_dir`` is given, else the working directory.
    data_dir: optional root for a relative ``path``.
    max_length: read only the first ``max_length`` bytes.
    fractions: (train, valid, test) fractions.

  Example:

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / 'x.bin'
    >>> _ = p.write_bytes(b'hello world, ' * 10)
    >>> ds = load_bytes(p)
    >>> bytes(ds.vocab.decode(ds.train[:5]))
    b'hello'
  """
  p = _resolve_path(path, data_dir, 'text', 'bytes')
  return _load_byte_stream(p, None, 'bytes', max_length, fractions)


# --------------------------------------------------------------------------- #
# Plain UTF-8 text (Europarl-style corpora, fortunes, Shakespeare).


def _cut_points(text: str, fractions, split_unit: str, path) -> tuple[int, int]:
  n_train, n_valid, _ = ds_lib.split_counts(len(text), fractions)
  cut1, cut2 = n_train, n_train + n_valid
  if split_unit == 'char':
    return cut1, cut2
  if split_unit != 'line':
    raise ValueError(
        f"split_unit must be 'line' or 'char', got {split_unit!r}.")

  def to_line_start(target: int, lo: int) -> int:
    # The first line start at or after ``target`` (never before ``lo``).
    if target <= lo:
      return lo
    j = text.find('\n', target - 1)
    if j < 0 or j + 1 >= len(text):
      raise ValueError(
          f'{str(path)!r}: no line break after character {target} to cut the '
          f'split at (fractions {tuple(fractions)}); the file has too few '
          "lines for a line-aligned split: split at characters instead "
          "(split_unit='char'; --split_unit=char on the command line).")
    return j + 1

  cut1 = to_line_start(cut1, 0)
  cut2 = to_line_start(cut2, cut1) if fractions[1] > 0 else cut1
  return cut1, cut2


def load_text(path: PathLike | None = None,
              data_dir: PathLike | None = None,
              fractions: Sequence[float] = DEFAULT_FRACTIONS,
              split_unit: str = 'line',
              unk_token: str | None = UNK,
              min_count: int = 1,
              max_length: int | None = None,
              word_boundaries: bool = False) -> Dataset:
  """A character-level corpus from any UTF-8 text file.

  For Europarl-style corpora and stand-ins (``fortunes_cs.txt``,
  ``tinyshakespeare.txt``). Newlines are normalised (``\\r\\n`` and ``\\r``
  become ``'\\n'``, as Python's text mode does) and kept as a symbol. The split
  is deterministic and contiguous: the first ``fractions[0]`` of the
  characters is train, then valid, then test, each cut moved forward to the
  next line start (``split_unit='line'``) so no line straddles two splits.

  The vocabulary is ``unk_token`` (if not None) followed by train's characters
  seen at least ``min_count`` times, in code-point order. Other characters
  (rare in train, or unseen: valid/test only) become ``unk_token``; with
  ``unk_token=None`` they raise ``ValueError`` instead.

  Args:
    path: the text file; relative paths are looked up under ``data_dir`` and
      ``data_dir/text`` when ``data_dir`` is given.
    data_dir: optional root for a relative ``path``.
    fractions: (train, valid, test) fractions.
    split_unit: ``'line'`` (cut at line starts) or ``'char'``.
    unk_token: token for unknown characters, or None to make them errors.
    min_count: train characters rarer than this map to ``unk_token``.
    max_length: use only the first ``max_length`` characters.
    word_boundaries: add ``meta['word_boundaries']``, per split a bool mask
      True on whitespace characters (the VCRNN "guide" setting).

  Returns:
    A :class:`Dataset`; ``meta['unk_count']`` counts unknown characters per
    split.

  Example:

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / 'cs.txt'
    >>> _ = p.write_text('žá\\n' * 18 + 'cd\\n' * 2, encoding='utf-8')
    >>> ds = load_text(p, fractions=(0.8, 0.1, 0.1))
    >>> ''.join(ds.vocab.decode(ds.valid)), ''.join(ds.vocab.decode(ds.test))
    ('žá\\nžá\\n', '<unk><unk>\\n<unk><unk>\\n')
  """
  max_length = ds_lib.check_positive('max_length', max_length, allow_none=True)
  min_count = ds_lib.check_positive('min_count', min_count)
  fractions = ds_lib.check_fractions('fractions', fractions)
  p = _resolve_path(path, data_dir, 'text', 'text')
  raw = ds_lib.read_bytes(p)
  ds_lib.check_not_empty(raw, p, 'UTF-8 text')
  text = ds_lib.decode_utf8(raw, p).replace('\r\n', '\n').replace('\r', '\n')
  if max_length is not None:
    text = text[:max_length]
  cut1, cut2 = _cut_points(text, fractions, split_unit, p)
  texts = {'train': text[:cut1], 'valid': text[cut1:cut2], 'test': text[cut2:]}
  wanted = {k: len(v) for (k, v), f in zip(texts.items(), fractions) if f > 0}
  ds_lib.check_nonempty_splits('text', p, wanted)
  counts = collections.Counter(texts['train'])
  chars = sorted(c for c, k in counts.items() if k >= min_count)
  if unk_token is not None and unk_token in chars:
    raise ValueError(
        f'unk_token {unk_token!r} is a character of {str(p)!r}; pick '
        'another unk_token.')
  specials = [unk_token] if unk_token is not None else []
  vocab = Vocab(specials + chars, unk_token=unk_token)
  table = _CharTable(vocab)
  splits, unk_count = {}, {}
  for split, t in texts.items():
    ids, known = table.encode(t)
    if unk_token is None and not known.all():
      off = int(np.argmin(known))
      raise ValueError(
          f'{str(p)!r}: {split} character {t[off]!r} (split offset {off}) is '
          f'not in the training vocabulary (min_count={min_count}) and '
          'unk_token is None.')
    splits[split], unk_count[split] = ids, int((~known).sum())
  meta = {
      'name': 'text',
      'files': [str(p)],
      'unk_count': unk_count,
      'split_chars': {k: len(v) for k, v in texts.items()},
  }
  if word_boundaries:
    spaces = [
        i for i, t in enumerate(vocab.id_to_token)
        if t != unk_token and t.isspace()
    ]
    meta['word_boundaries'] = _boundary_meta(splits, spaces)
  return Dataset(splits['train'], splits['valid'], splits['test'], vocab, meta)
