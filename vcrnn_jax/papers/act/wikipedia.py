r"""Where ACT ponders in text: the measures behind Graves 2016, Sec. 3.5.

The paper (Fig. 23): "Character prediction networks trained with ACT
consistently pause at spaces between words, and pause for longer at
'boundary' characters such as commas and full stops. We speculate that the
extra computation is used to make predictions about the next 'chunk' in the
data". This module turns that into numbers: the mean ponder
:math:`\rho_t = N(t) + R(t)` (Eq. 10) per class of character over a stretch
of held-out text, and the ponder of every character of a short stretch (the
data of Figs. 23-24).

**Which step's ponder.** Step :math:`t` *reads* :math:`x_t` and ponders
:math:`\rho_t` before emitting :math:`y_t`, its prediction of
:math:`x_{t+1}` (Eqs. 1-4). A character's ponder here is :math:`\rho_t` of the
step that reads it: "at a space" is the step whose input is the space, which
is also the step that predicts the next word's first character. This is the
paper's reading: its ponder figures put the *input* sequence on the x axis
with "the ponder time :math:`\rho_t` at each input step" (Fig. 15), the
computation at a space is said to "make predictions about the next 'chunk'",
and the paper notes that the loss does not rise at full stops and commas
"as these are invariably followed by space characters", which is true of the
step that reads the full stop (it predicts the space) and is the point of
contrast with its ponder. The step that predicts a space reads the last
letter of a word: that is the class ``word_end``, so both readings are
available.

**Classes** (of the character read, :math:`x_t`, by its neighbours in the
text; the classes overlap, and ``inside_word`` shares no position with
``space``, ``newline``, ``word_start``, ``sentence_end`` or
``punctuation``):

* ``space``: whitespace other than a newline (space, tab);
* ``newline``: ``\n`` or ``\r``;
* ``word_start``: any non-whitespace character right after whitespace ("the
  first character after a space", usually a word's first letter);
* ``inside_word``: a word character with a word character on both sides
  (neither first nor last of its word): the baseline of the claims;
* ``word_end``: a word character followed by a non-word character (the step
  that predicts the space or punctuation after a word);
* ``sentence_end``: ``.``, ``!`` or ``?``, and the character right after one
  (usually the space or newline that ends the sentence);
* ``punctuation``: any character that is neither whitespace nor a word
  character (commas, full stops, quotes, brackets, markup such as ``<``);
* ``all``: every position.

A *word character* is a letter or a digit: ``str.isalnum()`` for a character
vocabulary (``--data=text``); for bytes (``--data=bytes``, enwik8) the ASCII
letters and digits, and every byte of 128 or above (the bytes of UTF-8
characters, in enwik8 mostly letters of non-English words). Whitespace for
bytes is ASCII space, tab, vertical tab and form feed; newline is 10 or 13.
The first character of a stretch has no known predecessor (it counts as
following a non-whitespace, non-word character); the last one's successor is
the next character of the split.

**Windows.** The ponders are computed the way the model is evaluated
(:func:`vcrnn_jax.papers.act.lm.lm_task`): consecutive windows of
``seq_len`` characters of the valid split, each from a zero state (the
paper resets the state at the start of every sequence), so the first
character of each window is read from a zero state. The short stretch comes
from the same windows; its ``resets`` are the positions where a window
starts.
"""

from collections.abc import Callable, Sequence
import math
from typing import Any

import numpy as np

__all__ = [
    'CLASSES',
    'SENTENCE_MARKS',
    'FLOOR',
    'class_masks',
    'mean_by_class',
    'window_ponder',
    'analysis',
]

CLASSES = ('space', 'word_start', 'inside_word', 'word_end', 'sentence_end',
           'newline', 'punctuation', 'all')
SENTENCE_MARKS = '.!?'
# rho_t = N(t) + R(t) (Eq. 10) is 2 when the first step halts (N = 1, R = 1).
FLOOR = 2.0
_NEWLINES = '\n\r'
_BYTE_SPACES = frozenset(b' \t\x0b\x0c')
_BYTE_NEWLINES = frozenset(b'\n\r')
_BYTE_MARKS = frozenset(SENTENCE_MARKS.encode())


def _kinds(symbols: Sequence[Any]) -> tuple[np.ndarray, ...]:
  """Per symbol: (space, newline, word character, sentence mark) masks.

  ``symbols`` are characters (``str``) or bytes (``int`` 0-255)."""
  n = len(symbols)
  space, newline, word, mark = (np.zeros(n, bool) for _ in range(4))
  for i, s in enumerate(symbols):
    if isinstance(s, (int, np.integer)):
      b = int(s)
      newline[i] = b in _BYTE_NEWLINES
      space[i] = b in _BYTE_SPACES
      word[i] = b >= 128 or chr(b).isalnum()
      mark[i] = b in _BYTE_MARKS
    else:
      s = str(s)
      newline[i] = s in _NEWLINES if s else False
      space[i] = s.isspace() and not newline[i]
      word[i] = s.isalnum()
      mark[i] = len(s) == 1 and s in SENTENCE_MARKS
  return space, newline, word, mark


def class_masks(symbols: Sequence[Any], following: Any = None
                ) -> dict[str, np.ndarray]:
  """The positions of each of :data:`CLASSES` in ``symbols``.

  Args:
    symbols: the characters read, in order (``str`` for a character
      vocabulary, ``int`` for bytes).
    following: the character after the last one (None: unknown, taken as
      a non-word character).

  Returns:
    ``{class: bool mask [len(symbols)]}`` in the order of :data:`CLASSES`.
  """
  symbols = list(symbols)
  nxt = list(symbols[1:]) + [following if following is not None else '\0']
  space, newline, word, mark = _kinds(symbols)
  _, _, next_word, _ = _kinds(nxt)
  white = space | newline
  prev_white = np.concatenate([[False], white[:-1]])
  prev_word = np.concatenate([[False], word[:-1]])
  prev_mark = np.concatenate([[False], mark[:-1]])
  return {
      'space': space,
      'word_start': ~white & prev_white,
      'inside_word': word & prev_word & next_word,
      'word_end': word & ~next_word,
      'sentence_end': mark | prev_mark,
      'newline': newline,
      'punctuation': ~white & ~word,
      'all': np.ones(len(symbols), bool),
  }


def mean_by_class(ponder: Any, symbols: Sequence[Any],
                  following: Any = None) -> dict[str, dict]:
  """Mean ponder and count per class (:func:`class_masks`).

  Returns:
    ``{class: {'mean': float or None, 'count': int}}`` for every class of
    :data:`CLASSES`, in that order; a class with no member has mean None.
  """
  ponder = np.asarray(ponder, np.float64).reshape(-1)
  if len(ponder) != len(symbols):
    raise ValueError(f'mean_by_class: {len(ponder)} ponders but '
                     f'{len(symbols)} symbols.')
  out = {}
  for name, mask in class_masks(symbols, following).items():
    count = int(mask.sum())
    out[name] = {'mean': float(ponder[mask].mean()) if count else None,
                 'count': count}
  return out


def window_ponder(per_step: Callable[..., dict], params, stream: np.ndarray,
                  seq_len: int, symbols: int, step: int | None = None
                  ) -> tuple[np.ndarray, np.ndarray, list[int]]:
  """Ponder and loss at each of the first ``symbols`` inputs of ``stream``.

  The inputs are read in consecutive windows of ``seq_len`` (the last one
  shorter when ``seq_len`` does not divide ``symbols``), each from a zero
  state, as the held-out evaluation reads them.

  Args:
    per_step: a task's ``per_step(params, tokens, step)`` (statistics at
      every symbol of ``tokens[:-1]``, predicting ``tokens[1:]``).
    params: the trained parameters.
    stream: 1-D ids, at least ``symbols + 1`` long.
    seq_len: inputs per window.
    symbols: how many inputs.
    step: the training step passed to ``per_step``.

  Returns:
    ``(ponder [symbols], bits [symbols], window starts)``: the bits are the
    loss of each prediction in bits.
  """
  stream = np.asarray(stream)
  if symbols < 1 or len(stream) < symbols + 1:
    raise ValueError(f'window_ponder: {symbols} inputs need {symbols + 1} '
                     f'ids; the stream has {len(stream)}.')
  ponder, bits, starts = [], [], []
  for start in range(0, symbols, seq_len):
    stop = min(start + seq_len, symbols)
    out = per_step(params, stream[start:stop + 1], step)
    ponder.append(np.asarray(out['ponder'], np.float64).reshape(-1))
    bits.append(np.asarray(out['nll'], np.float64).reshape(-1) / math.log(2))
    starts.append(start)
  return np.concatenate(ponder), np.concatenate(bits), starts


def analysis(per_step: Callable[..., dict], params, stream: np.ndarray,
             decode: Callable[[np.ndarray], Sequence[Any]], *, seq_len: int,
             symbols: int = 20_000, shown: int = 200,
             step: int | None = None, unit: str = 'char',
             max_steps: int | None = None) -> dict:
  """The Sec. 3.5 analysis of a trained ACT model on held-out ids.

  Args:
    per_step: the task's ``per_step`` (:func:`window_ponder`).
    params: the trained parameters.
    stream: the valid split's ids; its first ``symbols`` inputs are read
      (fewer when it is shorter).
    decode: ids -> symbols (characters as ``str`` or bytes as ``int``).
    seq_len: the window length (the training and evaluation window).
    symbols: how many inputs the class means cover.
    shown: how many of them (from the start) are kept character by
      character (Figs. 23-24); 0: none.
    step: the training step passed to ``per_step``.
    unit: ``'char'`` or ``'byte'``, what one input is.
    max_steps: the cap :math:`M` on ponder steps, for ``share_at_cap``.

  Returns:
    ``{'split': 'valid', 'unit', 'symbols': inputs read, 'seq_len',
    'windows', 'mean_ponder', 'ponder_min', 'ponder_max', 'max_steps',
    'share_at_floor': the share of inputs whose first step halts (N(t) = 1,
    ponder 2), 'share_at_cap': the share that take all M steps (ponder
    above M; None without ``max_steps``), 'mean_bits',
    'mean_ponder_by_class':
    {class: {'mean', 'count'}}, 'mean_bits_by_class': likewise,
    'ponder_over_text': {'symbols': [...], 'ponder': [...], 'bits': [...],
    'resets': [...]}}``, JSON-ready (ponders and bits rounded to 4 decimals
    in the stretch).
  """
  stream = np.asarray(stream)
  n = min(int(symbols), len(stream) - 1)
  if n < 1:
    raise ValueError('analysis: the held-out stream has no prediction to '
                     'read.')
  ponder, bits, starts = window_ponder(per_step, params, stream, seq_len, n,
                                       step)
  chars = list(decode(stream[:n + 1]))
  read, following = chars[:n], chars[n]
  shown = max(0, min(int(shown), n))
  return {
      'split': 'valid', 'unit': unit, 'symbols': n, 'seq_len': int(seq_len),
      'windows': len(starts),
      'mean_ponder': float(ponder.mean()),
      'ponder_min': float(ponder.min()),
      'ponder_max': float(ponder.max()),
      'max_steps': None if max_steps is None else int(max_steps),
      # rho = N + R with R in (epsilon, 1]: N = 1 exactly when rho <= 2.
      'share_at_floor': float(np.mean(ponder <= FLOOR + 1e-6)),
      'share_at_cap': (None if max_steps is None
                       else float(np.mean(ponder > max_steps))),
      'mean_bits': float(bits.mean()),
      'mean_ponder_by_class': mean_by_class(ponder, read, following),
      'mean_bits_by_class': mean_by_class(bits, read, following),
      'ponder_over_text': {
          'symbols': [_json_symbol(s) for s in read[:shown]],
          'ponder': [round(float(p), 4) for p in ponder[:shown]],
          'bits': [round(float(b), 4) for b in bits[:shown]],
          'resets': [s for s in starts if s < shown]},
  }


def _json_symbol(s: Any) -> Any:
  return int(s) if isinstance(s, (int, np.integer)) else str(s)
