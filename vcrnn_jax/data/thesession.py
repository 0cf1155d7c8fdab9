"""Irish traditional tunes from thesession.org, tokenised as in folk-rnn v3.

Format: each tune is a sequence of whitespace-separated folk-rnn tokens
starting with a meter token, e.g. ``M:4/4 K:mix |: =d =c | =B =G ...``. Two
layouts are read: one tune per line (``tunes_v3_valid.txt`` in the shared data)
and folk-rnn's published ``data_v3`` file, where a tune spans several lines and
tunes are separated by a blank line. The layout is detected from the file: if
every non-blank line starts with an ``M:`` token it is one tune per line,
otherwise tunes are the blank-line separated blocks.

Token inventory (folk-rnn v3): meter ``M:4/4``; mode ``K:maj``/``K:min``/
``K:dor``/``K:mix`` (tunes are transposed to C); pitches with an explicit
accidental ``=c``, ``^G``, ``=A,`` (``,`` octave down, ``'`` octave up); the
rest ``z``; durations as separate tokens after a note (``2``, ``/2``, ``3/2``,
with ``>``/``<`` broken rhythm glued on as in ``/2>``; no duration = one unit);
bars and repeats ``|``, ``|:``, ``:|``, ``|1``, ``|2``; tuplets ``(3``; ties
``-``; chords ``[`` ``]``; broken rhythm ``>`` ``<``.

Mapping to the VCRNN music experiment (Jernite et al. 2016, Sec. 5.1), which
counts "each (pitch, length) pair" as a symbol, "with rests and bar symbols":
``pair_durations=True`` merges every pitch or rest token with the duration
token that follows it into one symbol (``=d 2`` -> ``=d2``, ``z /2`` -> ``z/2``;
a note without a duration token keeps its plain token, i.e. length one unit);
bars, repeats and the other tokens stay separate symbols. The paper reports 730
such symbols on 19,511 tunes; on the 2,000 shared tunes the inventory is
smaller. With the default ``pair_durations=False`` the symbols are the raw
folk-rnn tokens (87 types on the shared file).
"""

from collections.abc import Sequence
import pathlib
import re

import numpy as np

from vcrnn_jax.data import dataset as ds_lib
from vcrnn_jax.data.dataset import Dataset, PathLike, Vocab

__all__ = [
    'END_OF_TUNE',
    'DEFAULT_FRACTIONS',
    'FILENAMES',
    'split_tunes',
    'merge_durations',
    'load_thesession',
]

END_OF_TUNE = '</s>'
DEFAULT_FRACTIONS = (0.8, 0.1, 0.1)
# The canonical download's name first, then the name the shared copy uses.
FILENAMES = ('data_v3', 'tunes_v3_valid.txt')

_PITCH = re.compile(r"^[=^_]*[A-Ga-gz][,']*$")
_DURATION = re.compile(r'^(\d+/?\d*|/\d*)[<>]?$')
_WHAT = (
    'folk-rnn v3 tunes: whitespace-separated tokens, each tune starting with '
    'M: and K: tokens, one tune per line or blank-line separated')


def split_tunes(text: str) -> list[list[str]]:
  """Splits a folk-rnn file into tunes (token lists), detecting the layout.

    >>> split_tunes('M:4/4 K:maj =c 2 |\\nM:6/8 K:min =d |\\n')
    [['M:4/4', 'K:maj', '=c', '2', '|'], ['M:6/8', 'K:min', '=d', '|']]
    >>> split_tunes('M:4/4\\nK:maj\\n=c 2 |\\n\\nM:6/8\\nK:min\\n=d |\\n')
    [['M:4/4', 'K:maj', '=c', '2', '|'], ['M:6/8', 'K:min', '=d', '|']]
  """
  text = text.replace('\r\n', '\n')
  lines = [l for l in text.split('\n') if l.strip()]
  if all(l.lstrip().startswith('M:') for l in lines):
    # One tune per line: every line opens with its meter token.
    blocks = lines
  else:
    # folk-rnn's data_v3: M:, K: and the body on separate lines, a blank line
    # between tunes.
    blocks = re.split(r'\n[ \t]*\n', text)
  return [b.split() for b in blocks if b.strip()]


def merge_durations(tokens: Sequence[str]) -> list[str]:
  """Merges each pitch or rest token with a following duration token.

    >>> merge_durations(['M:4/4', '=d', '2', '=c', '|', 'z', '/2>', '=B,'])
    ['M:4/4', '=d2', '=c', '|', 'z/2>', '=B,']
  """
  out = []
  i = 0
  while i < len(tokens):
    t = tokens[i]
    if _PITCH.match(t) and i + 1 < len(tokens) and _DURATION.match(
        tokens[i + 1]):
      out.append(t + tokens[i + 1])
      i += 2
    else:
      out.append(t)
      i += 1
  return out


def load_thesession(data_dir: PathLike | None = None,
                    path: PathLike | None = None,
                    fractions: Sequence[float] = DEFAULT_FRACTIONS,
                    shuffle_seed: int | None = None,
                    pair_durations: bool = False) -> Dataset:
  """Tunes split by tune into train/valid/test, each followed by ``'</s>'``.

  Tunes are never cut across splits: the first ``fractions[0]`` of the tunes
  (in file order, or in a ``shuffle_seed`` permutation) are train, the next
  ``fractions[1]`` valid, the rest test. The VCRNN paper also keeps all
  variations of a melody in one subset; folk-rnn's files do not say which
  tunes are settings of the same melody (and on the shared file neighbouring
  tunes are no more alike than random pairs), so that constraint cannot be
  enforced here.

  The stream of a split is ``tune_1 </s> tune_2 </s> ...``;
  ``meta['tune_starts']`` gives, per split, the offset of each tune's first
  token, so training windows can start at tune starts (the symbol before a
  tune start is the previous tune's ``</s>``, a natural start-of-tune input).
  The vocabulary is ``'</s>'`` followed by every token type of the whole file
  in sorted order: folk-rnn's token set is closed, and building it from all
  tunes keeps rare tokens of valid/test (e.g. ``(6``) representable (87 types
  + ``</s>`` on the shared file).

  Args:
    data_dir: the data root holding ``thesession/`` with ``data_v3`` or
      ``tunes_v3_valid.txt`` (exactly one of them).
    path: the tune file itself (overrides the search in ``data_dir``).
    fractions: (train, valid, test) fractions of tunes.
    shuffle_seed: None keeps file order; an int shuffles tunes first
      (``np.random.default_rng(seed)``).
    pair_durations: merge (pitch, duration) token pairs, see module docstring.

  Example:

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / 'tunes.txt'
    >>> tunes = [f'M:4/4 K:maj =c {i} |\\n' for i in range(2, 12)]
    >>> _ = p.write_text(''.join(tunes))
    >>> ds = load_thesession(path=p)
    >>> ds.vocab.decode(ds.valid)
    ['M:4/4', 'K:maj', '=c', '10', '|', '</s>']
    >>> ds.meta['tune_starts']['train'][:3].tolist()
    [0, 6, 12]
  """
  fractions = ds_lib.check_fractions('fractions', fractions)
  if path is not None:
    p = pathlib.Path(path).expanduser()
    if not p.is_file():
      raise FileNotFoundError(
          f'thesession: path {str(p)!r} is not a file; expected {_WHAT}.')
  elif data_dir is None:
    raise ValueError("load('thesession') needs data_dir or path.")
  else:
    found = []
    for name in FILENAMES:
      try:
        found.append(ds_lib.find_file(data_dir, 'thesession', [name], name))
      except FileNotFoundError:
        pass
    if not found:
      ds_lib.find_file(data_dir, 'thesession', FILENAMES,
                       f'a tune file ({" or ".join(FILENAMES)})')
    if len(found) > 1:
      raise ValueError(
          f'thesession: both {[str(f) for f in found]} exist under '
          f'{str(data_dir)!r}; pass path= to choose one.')
    p = found[0]
  raw = ds_lib.read_bytes(p)
  ds_lib.check_not_empty(raw, p, _WHAT)
  text = ds_lib.decode_utf8(raw, p)
  ds_lib.check_ends_with_newline(text, p, _WHAT)
  tunes = split_tunes(text)
  for i, tune in enumerate(tunes, 1):
    head = tune[:2]
    if len(head) < 2 or not (head[0].startswith('M:') and
                             head[1].startswith('K:')):
      raise ValueError(
          f'{str(p)!r}: tune {i} starts with {" ".join(head)!r}; '
          f'expected an M: meter then a K: mode token ({_WHAT}).')
  if pair_durations:
    tunes = [merge_durations(t) for t in tunes]
  order = np.arange(len(tunes))
  if shuffle_seed is not None:
    order = np.random.default_rng(shuffle_seed).permutation(len(tunes))
  n_train, n_valid, _ = ds_lib.split_counts(len(tunes), fractions)
  parts = {
      'train': order[:n_train],
      'valid': order[n_train:n_train + n_valid],
      'test': order[n_train + n_valid:],
  }
  wanted = {k: len(v) for (k, v), f in zip(parts.items(), fractions) if f > 0}
  ds_lib.check_nonempty_splits('thesession', p, wanted)
  types = sorted({t for tune in tunes for t in tune})
  vocab = Vocab([END_OF_TUNE] + types)
  splits, starts, counts = {}, {}, {}
  for split, idx in parts.items():
    seq = []
    st = []
    for i in idx:
      st.append(len(seq))
      seq.extend(tunes[i])
      seq.append(END_OF_TUNE)
    splits[split] = vocab.encode(seq)
    starts[split] = np.asarray(st, dtype=np.int64)
    counts[split] = len(idx)
  meta = {
      'name': 'thesession',
      'files': [str(p)],
      'tune_starts': starts,
      'tune_indices': parts,
      'num_tunes': counts,
      'pair_durations': bool(pair_durations),
  }
  return Dataset(splits['train'], splits['valid'], splits['test'], vocab, meta)
