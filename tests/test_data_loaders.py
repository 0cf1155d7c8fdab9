"""Loaders and the registry on tiny fixtures in the real formats (tmp_path)."""

import io
import pathlib
import zipfile

import numpy as np
import pytest

from vcrnn_jax import data
from vcrnn_jax.data import har, text, thesession

# --------------------------------------------------------------------------- #
# Fixture writers (the published layouts, at toy size).

PTB_LINES = {
    'train': ['the cat sat on the mat', 'the dog sat', 'a <unk> saw N cats'],
    'valid': ['the cat saw the dog'],
    'test': ['a dog sat on N'],
}


def write_ptb(folder: pathlib.Path, lines=None) -> pathlib.Path:
  """Mikolov's layout: ' w1 w2 \\n' word files and 'c c _ c \\n ' char files."""
  lines = lines or PTB_LINES
  folder.mkdir(parents=True, exist_ok=True)
  for split, ls in lines.items():
    (folder / f'ptb.{split}.txt').write_text(''.join(f' {l} \n' for l in ls))
    chars = ''.join(' '.join('_'.join(l.split())) + ' \n ' for l in ls)
    (folder / f'ptb.char.{split}.txt').write_text(chars)
  return folder


def write_har(root: pathlib.Path, n_train=6, n_test=4, seed=0) -> pathlib.Path:
  """A tiny 'UCI HAR Dataset/' folder; returns the folder holding it."""
  rng = np.random.default_rng(seed)
  for split, n in (('train', n_train), ('test', n_test)):
    for c in har.CHANNELS:
      p = root / har.member_paths(split)[c]
      p.parent.mkdir(parents=True, exist_ok=True)
      x = rng.normal(size=(n, har.STEPS)) + har.CHANNELS.index(c)
      p.write_text(''.join(
          ' '.join(f'{v: .7e}' for v in row) + '\n' for row in x))
    (root / har.member_paths(split)['y']).write_text(''.join(
        f'{(i % 6) + 1}\n' for i in range(n)))
    subjects = [1, 1, 3, 3, 5, 5] if split == 'train' else [2, 2, 4, 4]
    (root / har.member_paths(split)['subject']).write_text(''.join(
        f'{subjects[i % len(subjects)]}\n' for i in range(n)))
  return root


def zip_folder(folder: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
  with zipfile.ZipFile(dest, 'w', zipfile.ZIP_DEFLATED) as zf:
    for p in sorted(folder.rglob('*')):
      if p.is_file():
        zf.write(p, p.relative_to(folder).as_posix())
  return dest


TUNES = [
    'M:4/4 K:maj |: =c 2 =d | =e /2 =f /2 =g :|',
    'M:6/8 K:min =A, 3 z | =B =c',
    'M:4/4 K:dor (3 =c =d =e | =f 2 |1 =g :|',
    'M:3/4 K:mix =G 2 > =A | [ =c =e ] 2',
    'M:4/4 K:maj =c =c | =d - =d',
    'M:2/4 K:min ^c 4 | =d /4',
    'M:4/4 K:maj =e =e | =c',
    'M:6/8 K:dor =f 3 | =g 3',
    'M:4/4 K:mix =a 2 | =b',
    "M:9/8 K:maj =c' 2 | =d'",
]

# --------------------------------------------------------------------------- #
# Vocab and Dataset.


def test_vocab_roundtrip_and_errors():
  v = data.Vocab(['<unk>', 'a', 'b'], unk_token='<unk>')
  assert v.size == len(v) == 3 and v.unk_id == 0
  assert v.encode(['b', 'a', 'zz']).dtype == np.int32
  assert v.encode(['b', 'a', 'zz']).tolist() == [2, 1, 0]
  assert v.decode(np.array([[1, 2]])) == ['a', 'b']
  strict = data.Vocab('ab')
  with pytest.raises(ValueError, match="'c' is not in the vocabulary"):
    strict.encode('abc')
  with pytest.raises(ValueError, match='twice'):
    data.Vocab(['a', 'a'])
  with pytest.raises(ValueError, match='outside the vocabulary range'):
    strict.decode([2])
  with pytest.raises(ValueError, match='unk_token'):
    data.Vocab('ab', unk_token='?')
  assert data.Vocab('ab') == data.Vocab('ab') != data.Vocab('ba')


def test_dataset_split_accessor():
  ds = data.Dataset(np.zeros(1), np.ones(1), np.zeros(2))
  assert ds.split('test').shape == (2,)
  with pytest.raises(ValueError, match="split must be one of"):
    ds.split('dev')


# --------------------------------------------------------------------------- #
# Registry.


def test_registry_names_and_option_errors(tmp_path):
  assert set(data.names()) == {
      'ptb_word', 'ptb_char', 'ptb_bit', 'text8', 'enwik8', 'text', 'bytes',
      'thesession', 'uci_har'
  }
  with pytest.raises(ValueError, match="unknown dataset 'ptb'"):
    data.load('ptb', tmp_path)
  write_ptb(tmp_path / 'ptb')
  with pytest.raises(ValueError, match=r"unknown option\(s\) \['buffer'\]"):
    data.load('ptb_bit', tmp_path, buffer=8)
  with pytest.raises(ValueError, match='needs path='):
    data.load('text', tmp_path)


def test_registry_missing_data_dir_is_clear(tmp_path):
  missing = tmp_path / 'nowhere'
  with pytest.raises(FileNotFoundError, match='is not a directory'):
    data.load('ptb_word', missing)


def test_load_or_exit_prints_one_line(tmp_path, capsys):
  with pytest.raises(SystemExit) as e:
    data.load_or_exit('ptb_word', tmp_path)
  assert e.value.code == 2
  err = capsys.readouterr().err
  assert err.count('\n') == 1 and err.startswith('error: cannot load ptb_word')
  assert str(tmp_path) in err and 'ptb.train.txt' in err


# --------------------------------------------------------------------------- #
# PTB.


def test_ptb_word_stream_and_vocab(tmp_path):
  write_ptb(tmp_path / 'ptb')
  ds = data.load('ptb_word', tmp_path)
  for split in data.SPLITS:
    arr = ds.split(split)
    assert arr.dtype == np.int32 and arr.ndim == 1
  toks = ds.vocab.decode(ds.train)
  assert toks[:7] == ['the', 'cat', 'sat', 'on', 'the', 'mat', '<eos>']
  assert toks.count('<eos>') == 3
  # TensorFlow ptb_reader order: by count, then alphabetically.
  assert ds.vocab.id_to_token[:3] == ('<eos>', 'the', 'sat')  # 3, 3, 2
  assert ds.vocab.decode(ds.test) == ['a', 'dog', 'sat', 'on', 'N', '<eos>']
  # The ptb folder itself is accepted as data_dir too.
  again = data.load('ptb_word', tmp_path / 'ptb')
  np.testing.assert_array_equal(again.train, ds.train)


def test_ptb_word_refuses_a_character_file_named_as_words(tmp_path):
  # The character files' layout ('c a t _ s a t') under the word files'
  # names: a vocabulary of letters. Refused, as load_ptb_char refuses words.
  sentence = 'the cat sat on the mat and the dog saw it'
  chars = ' '.join('_'.join(sentence.split()))
  lines = {s: [chars] * 20 for s in ('train', 'valid', 'test')}
  folder = write_ptb(tmp_path / 'ptb', lines)
  with pytest.raises(ValueError, match='looks like a character-level file'):
    data.load('ptb_word', folder)
  # Real words with a few one-character tokens ('N', 'a') still load.
  words = {s: [sentence + ' N a $ 3'] * 20 for s in ('train', 'valid', 'test')}
  ds = data.load('ptb_word', write_ptb(tmp_path / 'words', words))
  assert 'N' in ds.vocab.id_to_token


def test_ptb_word_oov_in_valid_is_an_error(tmp_path):
  lines = dict(PTB_LINES, valid=['the cat', 'the zebra'])
  write_ptb(tmp_path, lines)
  with pytest.raises(ValueError, match=r"ptb.valid.txt' line 2: word 'zebra'"):
    data.load('ptb_word', tmp_path)


@pytest.mark.parametrize('content,match', [
    (b'', 'is empty'),
    (b'   \n', 'is empty'),
    (b' the cat sat \n the do', 'does not end with a newline'),
    (b'\xff\xfe\x00binary', 'is not UTF-8'),
])
def test_ptb_word_bad_files(tmp_path, content, match):
  write_ptb(tmp_path)
  (tmp_path / 'ptb.train.txt').write_bytes(content)
  with pytest.raises(ValueError, match=match) as e:
    data.load('ptb_word', tmp_path)
  assert 'ptb.train.txt' in str(e.value)


def test_ptb_missing_file_names_the_paths(tmp_path):
  write_ptb(tmp_path)
  (tmp_path / 'ptb.test.txt').unlink()
  with pytest.raises(FileNotFoundError, match='ptb.test.txt') as e:
    data.load('ptb_word', tmp_path)
  assert str(tmp_path / 'ptb' / 'ptb.test.txt') in str(e.value)


def test_ptb_char_from_char_and_word_files_agree(tmp_path):
  write_ptb(tmp_path)
  a = data.load('ptb_char', tmp_path)
  b = data.load('ptb_char', tmp_path, source='word')
  assert a.vocab == b.vocab
  for split in data.SPLITS:
    np.testing.assert_array_equal(a.split(split), b.split(split))
  assert ''.join(a.vocab.decode(a.valid)) == 'the_cat_saw_the_dog\n'
  assert '\n' in a.vocab and '_' in a.vocab
  assert a.train.dtype == np.int32


def test_ptb_char_word_boundaries(tmp_path):
  write_ptb(tmp_path)
  ds = data.load('ptb_char', tmp_path, word_boundaries=True)
  mask = ds.meta['word_boundaries']['test']
  chars = ds.vocab.decode(ds.test)
  assert mask.tolist() == [c in ('_', '\n') for c in chars]


def test_ptb_char_rejects_word_file_and_bad_source(tmp_path):
  write_ptb(tmp_path)
  (tmp_path / 'ptb.char.train.txt').write_text(' the cat \n')
  with pytest.raises(ValueError, match="token 'the' is not a single character"):
    data.load('ptb_char', tmp_path)
  with pytest.raises(ValueError, match="source must be 'char' or 'word'"):
    data.load('ptb_char', tmp_path, source='bytes')


def test_ptb_char_unseen_character_is_an_error(tmp_path):
  write_ptb(tmp_path, dict(PTB_LINES, test=['the cat sat', 'q']))
  with pytest.raises(ValueError, match=r"character 'q' \(line 2\)"):
    data.load('ptb_char', tmp_path)


@pytest.mark.parametrize('buffer_bits', [0, 8, 24])
def test_ptb_bit_codes_buffers_and_labels(tmp_path, buffer_bits):
  write_ptb(tmp_path)
  chars = data.load('ptb_char', tmp_path)
  ds = data.load('ptb_bit', tmp_path, buffer_bits=buffer_bits)
  period = 8 + buffer_bits
  assert ds.vocab.id_to_token == ('0', '1') and ds.meta['period'] == period
  for split in data.SPLITS:
    bits, pos = ds.split(split), ds.meta['bit_position'][split]
    assert bits.dtype == np.int32 and pos.shape == bits.shape
    assert len(bits) == period * len(chars.split(split))
    frames = bits.reshape(-1, period)
    assert not frames[:, 8:].any()  # buffers are zero bits
    assert (pos.reshape(-1, period)[:, 8:] == -1).all()
    assert (pos.reshape(-1, period)[:, :8] == np.arange(8)).all()
    text_bytes = np.packbits(frames[:, :8].astype(np.uint8), axis=1).reshape(-1)
    assert bytes(text_bytes).decode('ascii') == ''.join(
        chars.vocab.decode(chars.split(split)))
    np.testing.assert_array_equal(ds.meta['char_ids'][split],
                                  chars.split(split))
  # 't' = 0x74 = 01110100, most significant bit first.
  assert ds.train[:8].tolist() == [0, 1, 1, 1, 0, 1, 0, 0]


def test_ptb_bit_boundary_char_and_errors(tmp_path):
  write_ptb(tmp_path)
  ds = data.load('ptb_bit', tmp_path, boundary_char=' ')
  codes = np.packbits(
      ds.valid.reshape(-1, 8).astype(np.uint8), axis=1).reshape(-1)
  assert bytes(codes) == b'the cat saw the dog\n'
  with pytest.raises(
      ValueError, match='buffer_bits must be a non-negative integer'):
    data.load('ptb_bit', tmp_path, buffer_bits=-8)
  with pytest.raises(ValueError, match='single 8-bit characters'):
    data.load('ptb_bit', tmp_path, boundary_char='\u2423')


# --------------------------------------------------------------------------- #
# Text8 and enwik8 (same format as the real files, small).


def test_text8_split_vocab_and_zip(tmp_path):
  body = ('anarchism originated as a term of abuse ' * 50)[:2000]
  (tmp_path / 'text8').mkdir()
  (tmp_path / 'text8' / 'text8').write_text(body)
  ds = data.load('text8', tmp_path)
  assert (len(ds.train), len(ds.valid), len(ds.test)) == (1800, 100, 100)
  assert ds.vocab.size == 27 and ds.vocab.id_to_token[0] == ' '
  assert ''.join(
      ds.vocab.decode(np.concatenate([ds.train, ds.valid, ds.test]))) == body
  # The zip as published (member 'text8') reads the same.
  zdir = tmp_path / 'z'
  zdir.mkdir()
  with zipfile.ZipFile(zdir / 'text8.zip', 'w', zipfile.ZIP_DEFLATED) as zf:
    zf.writestr('text8', body)
  dz = data.load('text8', zdir)
  np.testing.assert_array_equal(dz.test, ds.test)
  small = data.load('text8', zdir, max_length=200, word_boundaries=True)
  assert len(small.train) == 180
  assert small.meta['word_boundaries']['train'].tolist() == [
      c == ' ' for c in body[:180]
  ]


def test_text8_format_errors(tmp_path):
  p = tmp_path / 'text8'
  p.write_text('hello world\n')  # one trailing newline is fine
  ds = data.load('text8', tmp_path, fractions=(1, 0, 0))
  assert ''.join(ds.vocab.decode(ds.train)) == 'hello world'
  p.write_text('hello World')
  with pytest.raises(
      ValueError, match=r"byte 6 is b'W'; expected the Text8 file"):
    data.load('text8', tmp_path)
  p.write_text('')
  with pytest.raises(ValueError, match='is empty'):
    data.load('text8', tmp_path)
  p.write_text('abc')
  with pytest.raises(ValueError, match='the valid split .* is empty'):
    data.load('text8', tmp_path)
  with pytest.raises(ValueError, match='fractions must be three'):
    data.load('text8', tmp_path, fractions=(0.5, 0.5))
  p.unlink()
  with pytest.raises(FileNotFoundError, match='text8 or text8.zip'):
    data.load('text8', tmp_path)


def test_truncated_zip_is_an_error(tmp_path):
  buf = io.BytesIO()
  with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as zf:
    zf.writestr('text8', 'some words ' * 1000)
  (tmp_path / 'text8.zip').write_bytes(buf.getvalue()[:len(buf.getvalue()) //
                                                      2])
  with pytest.raises(ValueError, match='not a readable zip archive'):
    data.load('text8', tmp_path)


def test_enwik8_bytes_and_split(tmp_path):
  raw = bytes(np.random.default_rng(0).integers(0, 256, 1000, dtype=np.uint8))
  (tmp_path / 'enwik8').write_bytes(raw)
  ds = data.load('enwik8', tmp_path)
  assert ds.vocab.size == 256
  assert (len(ds.train), len(ds.valid), len(ds.test)) == (900, 50, 50)
  assert bytes(ds.vocab.decode(ds.test)) == raw[-50:]  # last 5% test
  assert bytes(ds.vocab.decode(
      ds.valid)) == raw[-100:-50]  # the 5% before valid
  assert ds.train.dtype == np.int32
  assert len(data.load('enwik8', tmp_path, max_length=100).train) == 90
  (tmp_path / 'enwik8').write_bytes(b'')
  with pytest.raises(ValueError, match='is empty'):
    data.load('enwik8', tmp_path)


def test_bytes_loader_any_file(tmp_path):
  (tmp_path / 'text').mkdir()
  (tmp_path / 'text' / 'page.xml').write_bytes(b'<page>caf\xc3\xa9</page>\n' *
                                               20)
  ds = data.load('bytes', tmp_path, path='page.xml')
  assert bytes(ds.vocab.decode(ds.train[:12])) == b'<page>caf\xc3\xa9<'
  with pytest.raises(FileNotFoundError, match='missing.bin'):
    data.load('bytes', path=tmp_path / 'missing.bin')


# --------------------------------------------------------------------------- #
# Plain text.


def test_text_split_is_line_aligned_and_deterministic(tmp_path):
  lines = [f'řádek číslo {i} ' + 'ž' * (i % 7) for i in range(200)]
  p = tmp_path / 'cs.txt'
  p.write_text('\n'.join(lines) + '\n', encoding='utf-8')
  a = data.load('text', path=p)
  b = data.load('text', path=p)
  np.testing.assert_array_equal(a.train, b.train)
  parts = [''.join(a.vocab.decode(a.split(s))) for s in data.SPLITS]
  assert ''.join(parts) == '\n'.join(lines) + '\n'
  for part in parts:
    assert part.endswith('\n')  # no line straddles splits
  assert a.vocab.id_to_token[0] == '<unk>' and 'ř' in a.vocab
  assert len(parts[1]) == pytest.approx(0.05 * len(''.join(parts)), abs=40)


def test_text_unknown_characters(tmp_path):
  p = tmp_path / 'de.txt'
  p.write_text('aaaa\n' * 16 + 'aaxa\n' * 4)
  ds = data.load('text', path=p, fractions=(0.8, 0.1, 0.1))
  assert ds.meta['unk_count'] == {'train': 0, 'valid': 2, 'test': 2}
  assert ''.join(ds.vocab.decode(ds.test[:5])) == 'aa<unk>a\n'
  with pytest.raises(ValueError, match="valid character 'x'"):
    data.load('text', path=p, fractions=(0.8, 0.1, 0.1), unk_token=None)
  rare = data.load('text', path=p, min_count=20, fractions=(0.8, 0.1, 0.1))
  assert rare.vocab.id_to_token == ('<unk>', 'a')  # '\n' (16x) is too rare
  assert data.load(
      'text', path=p, min_count=100).vocab.id_to_token == ('<unk>',)


def test_text_options_and_errors(tmp_path):
  p = tmp_path / 'one_line.txt'
  p.write_text('x' * 100)
  with pytest.raises(ValueError, match="split_unit='char'"):
    data.load('text', path=p)
  ds = data.load('text', path=p, split_unit='char')
  assert (len(ds.train), len(ds.valid), len(ds.test)) == (90, 5, 5)
  crlf = tmp_path / 'crlf.txt'
  crlf.write_bytes(b'ab cd\r\n' * 40)
  ds = data.load('text', path=crlf, word_boundaries=True)
  assert '\r' not in ds.vocab
  chars = ds.vocab.decode(ds.train)
  assert ds.meta['word_boundaries']['train'].tolist() == [
      c in ' \n' for c in chars
  ]
  bad = tmp_path / 'latin1.txt'
  bad.write_bytes('caf\xe9\n'.encode('latin-1') * 30)
  with pytest.raises(
      ValueError, match=r"latin1.txt' is not UTF-8 text: byte 3"):
    data.load('text', path=bad)
  with pytest.raises(FileNotFoundError, match='nope.txt'):
    data.load('text', path=tmp_path / 'nope.txt')
  (tmp_path / 'text').mkdir()
  (tmp_path / 'text' / 'rel.txt').write_text('hello\n' * 30)
  assert data.load(
      'text', tmp_path, path='rel.txt').vocab.size == 6  # <unk> \n e h l o


# --------------------------------------------------------------------------- #
# thesession.


def test_thesession_split_by_tune(tmp_path):
  (tmp_path / 'thesession').mkdir()
  (tmp_path / 'thesession' / 'tunes_v3_valid.txt').write_text('\n'.join(TUNES) +
                                                              '\n')
  ds = data.load('thesession', tmp_path)
  assert ds.meta['num_tunes'] == {'train': 8, 'valid': 1, 'test': 1}
  types = {t for tune in TUNES for t in tune.split()}
  assert ds.vocab.size == len(types) + 1 and ds.vocab.id_to_token[0] == '</s>'
  assert ds.vocab.decode(ds.valid) == TUNES[8].split() + ['</s>']
  starts = ds.meta['tune_starts']['train']
  eot = ds.vocab.token_to_id['</s>']
  assert (ds.train[starts[1:] - 1] == eot).all() and ds.train[-1] == eot
  assert [ds.vocab.decode(ds.train[s:s + 1])[0][:2] for s in starts
         ] == ['M:'] * 8
  # folk-rnn's data_v3 layout (multi-line tunes, blank-line separated) reads
  # the same.
  v3 = '\n\n'.join(
      t.replace(' K:', '\nK:').replace(' |', '\n|', 1) for t in TUNES) + '\n'
  (tmp_path / 'data_v3').write_text(v3)
  d3 = data.load('thesession', path=tmp_path / 'data_v3')
  np.testing.assert_array_equal(d3.train, ds.train)


def test_thesession_shuffle_and_pairs(tmp_path):
  p = tmp_path / 'tunes.txt'
  p.write_text('\n'.join(TUNES) + '\n')
  a = data.load('thesession', path=p, shuffle_seed=1)
  b = data.load('thesession', path=p, shuffle_seed=1)
  np.testing.assert_array_equal(a.train, b.train)
  assert sorted(
      np.concatenate([a.meta['tune_indices'][s] for s in data.SPLITS
                     ])) == list(range(10))
  paired = data.load('thesession', path=p, pair_durations=True)
  first = paired.vocab.decode(
      paired.train[:paired.meta['tune_starts']['train'][1]])
  assert first == [
      'M:4/4', 'K:maj', '|:', '=c2', '=d', '|', '=e/2', '=f/2', '=g', ':|',
      '</s>'
  ]
  assert thesession.merge_durations(['z', '3', '|', '=A,', '2>',
                                     '(3']) == ['z3', '|', '=A,2>', '(3']


def test_thesession_errors(tmp_path):
  p = tmp_path / 'tunes.txt'
  p.write_text(' the cat sat \n the dog \n')  # a PTB file
  with pytest.raises(
      ValueError, match=r"tune 1 starts with 'the cat'; expected an M:"):
    data.load('thesession', path=p)
  p.write_text('M:4/4 K:maj =c\nM:4/4 =c 2 |\n')
  with pytest.raises(ValueError, match=r"tune 2 starts with 'M:4/4 =c'"):
    data.load('thesession', path=p)
  p.write_text('\n'.join(TUNES))
  with pytest.raises(ValueError, match='does not end with a newline'):
    data.load('thesession', path=p)
  p.write_text('')
  with pytest.raises(ValueError, match='is empty'):
    data.load('thesession', path=p)
  with pytest.raises(FileNotFoundError, match='data_v3 or tunes_v3_valid.txt'):
    data.load('thesession', tmp_path)
  (tmp_path / 'data_v3').write_text('\n'.join(TUNES) + '\n')
  (tmp_path / 'tunes_v3_valid.txt').write_text('\n'.join(TUNES) + '\n')
  with pytest.raises(ValueError, match='pass path= to choose one'):
    data.load('thesession', tmp_path)
  with pytest.raises(FileNotFoundError, match='is not a file'):
    data.load('thesession', path=tmp_path / 'missing')


# --------------------------------------------------------------------------- #
# UCI HAR.


def test_uci_har_folder_and_zip_agree(tmp_path):
  write_har(tmp_path / 'har')
  a = data.load('uci_har', tmp_path)
  zip_folder(tmp_path / 'har', tmp_path / 'z.zip')
  zdir = tmp_path / 'zipped' / 'har'
  zdir.mkdir(parents=True)
  (tmp_path / 'z.zip').rename(zdir / 'UCI HAR Dataset.zip')
  b = data.load('uci_har', tmp_path / 'zipped')
  assert a.vocab is None
  for split in data.SPLITS:
    (xa, ya), (xb, yb) = a.split(split), b.split(split)
    np.testing.assert_array_equal(xa, xb)
    np.testing.assert_array_equal(ya, yb)
  x, y = a.train
  assert x.shape == (6, 128, 9) and x.dtype == np.float32
  assert y.dtype == np.int32 and y.tolist() == [0, 1, 2, 3, 4, 5]
  assert a.valid[0].shape == (0, 128, 9)
  assert a.meta['subjects']['test'].tolist() == [2, 2, 4, 4]
  assert a.meta['channels'][0] == 'body_acc_x' and len(a.meta['classes']) == 6


def test_uci_har_normalisation_uses_train_only(tmp_path):
  write_har(tmp_path)
  ds = data.load('uci_har', tmp_path)
  raw = data.load('uci_har', tmp_path, normalize=False)
  x = ds.train[0].astype(np.float64)
  np.testing.assert_allclose(x.mean(axis=(0, 1)), 0, atol=1e-5)
  np.testing.assert_allclose(x.std(axis=(0, 1)), 1, atol=1e-4)
  # Channel c of the fixture has mean ~c: the stored statistics are train's.
  np.testing.assert_allclose(
      ds.meta['mean'], raw.train[0].mean(axis=(0, 1)), rtol=1e-5)
  expected_test = (raw.test[0] - ds.meta['mean']) / ds.meta['std']
  np.testing.assert_allclose(ds.test[0], expected_test, rtol=1e-4, atol=1e-5)
  # Changing the test files changes nothing about train or the statistics.
  p = tmp_path / har.member_paths('test')['body_acc_x']
  p.write_text(''.join(' '.join(['1e3'] * 128) + '\n' for _ in range(4)))
  changed = data.load('uci_har', tmp_path)
  np.testing.assert_array_equal(changed.meta['mean'], ds.meta['mean'])
  np.testing.assert_array_equal(changed.train[0], ds.train[0])
  held = data.load('uci_har', tmp_path, valid_subjects=[5])
  assert held.meta['subjects']['valid'].tolist() == [5, 5]
  assert len(held.train[1]) == 4 and held.valid[0].shape == (2, 128, 9)
  with pytest.raises(
      ValueError, match=r'valid_subjects \[2\] are not train volunteers'):
    data.load('uci_har', tmp_path, valid_subjects=[2])


@pytest.mark.parametrize('damage,match', [
    ('short_line', 'line 3 has 127 values; expected 128'),
    ('bad_label', r'labels range over \[1, 7\]; expected 1..6'),
    ('few_labels', 'has 5 lines; expected 6'),
    ('empty', 'is empty'),
    ('text', 'not numeric text'),
    ('missing', 'body_gyro_z_train.txt'),
])
def test_uci_har_bad_files(tmp_path, damage, match):
  write_har(tmp_path)
  files = har.member_paths('train')
  if damage == 'short_line':
    p = tmp_path / files['total_acc_y']
    rows = p.read_text().split('\n')
    rows[2] = ' '.join(rows[2].split()[:-1])
    p.write_text('\n'.join(rows))
  elif damage == 'bad_label':
    (tmp_path / files['y']).write_text('1\n2\n3\n4\n5\n7\n')
  elif damage == 'few_labels':
    (tmp_path / files['y']).write_text('1\n2\n3\n4\n5\n')
  elif damage == 'empty':
    (tmp_path / files['subject']).write_text('')
  elif damage == 'text':
    (tmp_path / files['body_acc_x']).write_text('walking ' * 128 + '\n')
  elif damage == 'missing':
    (tmp_path / files['body_gyro_z']).unlink()
  error = FileNotFoundError if damage == 'missing' else ValueError
  with pytest.raises(error, match=match):
    data.load('uci_har', tmp_path)


def test_uci_har_corrupt_or_incomplete_zip(tmp_path):
  write_har(tmp_path / 'src')
  zpath = zip_folder(tmp_path / 'src', tmp_path / 'full.zip')
  (tmp_path / 'a').mkdir()
  (tmp_path / 'a' / 'UCI HAR Dataset.zip').write_bytes(
      zpath.read_bytes()[:5000])
  with pytest.raises(ValueError, match='not a readable zip archive'):
    data.load('uci_har', tmp_path / 'a')
  (tmp_path / 'b').mkdir()
  with zipfile.ZipFile(tmp_path / 'b' / 'UCI HAR Dataset.zip', 'w') as zf:
    zf.writestr('UCI HAR Dataset/README.txt', 'only a readme')
  with pytest.raises(
      FileNotFoundError, match="has no member 'UCI HAR Dataset/train"):
    data.load('uci_har', tmp_path / 'b')
  with pytest.raises(
      FileNotFoundError, match='UCI HAR Dataset/ or UCI HAR Dataset.zip'):
    data.load('uci_har', tmp_path / 'src' / 'UCI HAR Dataset' / 'train')


def test_text_module_constants():
  assert text.TEXT8_ALPHABET == ' ' + ''.join(
      chr(c) for c in range(ord('a'),
                            ord('z') + 1))


@pytest.mark.parametrize('module', [
    'dataset', 'text', 'thesession', 'har', 'batching', 'registry', 'download'
])
def test_docstring_examples_run(module):
  import doctest  # pylint: disable=g-import-not-at-top
  import importlib  # pylint: disable=g-import-not-at-top
  mod = importlib.import_module(f'vcrnn_jax.data.{module}')
  result = doctest.testmod(mod, verbose=False)
  assert result.failed == 0


def _setup(name, root):
  """Writes a valid tiny corpus; returns (load kwargs, its main file)."""
  if name in ('ptb_word', 'ptb_char', 'ptb_bit'):
    write_ptb(root)
    main = 'ptb.train.txt' if name == 'ptb_word' else 'ptb.char.train.txt'
    return {}, root / main
  if name == 'enwik8':
    (root / 'enwik8').write_bytes(b'<mediawiki>' * 20)
    return {}, root / 'enwik8'
  if name == 'bytes':
    (root / 'f.bin').write_bytes(b'\x00\x01' * 100)
    return {'path': root / 'f.bin'}, root / 'f.bin'
  if name == 'text':
    (root / 'f.txt').write_text('Příliš žluťoučký kůň\n' * 30, 'utf-8')
    return {'path': root / 'f.txt'}, root / 'f.txt'
  raise AssertionError(name)


@pytest.mark.parametrize(
    'name', ['ptb_word', 'ptb_char', 'ptb_bit', 'enwik8', 'bytes', 'text'])
def test_missing_and_empty_files_name_the_path(tmp_path, name):
  kwargs, main = _setup(name, tmp_path)
  data.load(name, tmp_path, **kwargs)  # the fixture is valid
  main.write_bytes(b'')
  with pytest.raises(ValueError, match='is empty') as e:
    data.load(name, tmp_path, **kwargs)
  assert str(main) in str(e.value)
  main.unlink()
  with pytest.raises(FileNotFoundError, match=main.name):
    data.load(name, tmp_path, **kwargs)


@pytest.mark.parametrize('name', ['ptb_char', 'ptb_bit'])
def test_truncated_ptb_char_files(tmp_path, name):
  write_ptb(tmp_path)
  p = tmp_path / 'ptb.char.valid.txt'
  p.write_text(p.read_text()[:9])
  with pytest.raises(ValueError, match="ptb.char.valid.txt' does not end with"):
    data.load(name, tmp_path)


def test_truncated_utf8_text_and_enwik8_zip(tmp_path):
  p = tmp_path / 'cut.txt'
  p.write_bytes(('kůň\n' * 30).encode()[:-2])  # cut inside 'ň'
  with pytest.raises(ValueError, match='is not UTF-8 text: byte'):
    data.load('text', path=p)
  raw = make_zip_bytes({'enwik8': bytes(range(256)) * 40})
  (tmp_path / 'enwik8.zip').write_bytes(raw[:len(raw) - 200])
  with pytest.raises(ValueError, match="enwik8.zip' is not a readable zip"):
    data.load('enwik8', tmp_path)


def make_zip_bytes(files):
  buf = io.BytesIO()
  with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as zf:
    for name, raw in files.items():
      zf.writestr(name, raw)
  return buf.getvalue()
