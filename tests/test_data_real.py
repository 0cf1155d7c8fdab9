"""The loaders on the real corpora in ../shared/data (skipped when absent).

Each corpus is read once per session (session-scoped fixtures) so the module
stays fast. The numbers are the published / measured statistics that
BUILD_NOTES.md lists.
"""

import collections

import numpy as np
import pytest

from vcrnn_jax import data
from vcrnn_jax.data import download, text


@pytest.fixture(scope='session')
def ptb_word(shared_data_dir):
  return data.load('ptb_word', shared_data_dir)


@pytest.fixture(scope='session')
def ptb_char(shared_data_dir):
  return data.load('ptb_char', shared_data_dir)


@pytest.fixture(scope='session')
def har(shared_data_dir):
  return data.load('uci_har', shared_data_dir)


@pytest.fixture(scope='session')
def tunes(shared_data_dir):
  return data.load('thesession', shared_data_dir)


def test_ptb_files_match_the_pinned_digests(shared_data_dir):
  for name, digest in download.PTB_SHA256.items():
    assert download.sha256_file(shared_data_dir / 'ptb' / name) == digest, name


def test_ptb_word_statistics(ptb_word):
  ds = ptb_word
  assert ds.vocab.size == 10_000
  assert (len(ds.train), len(ds.valid), len(ds.test)) == (929_589, 73_760,
                                                          82_430)
  eos = ds.vocab.token_to_id['<eos>']
  assert [int((ds.split(s) == eos).sum()) for s in data.SPLITS
         ] == [42_068, 3_370, 3_761]
  # Zaremba / TensorFlow ptb_reader ids.
  assert ds.vocab.id_to_token[:3] == ('the', '<unk>', '<eos>')
  assert ds.vocab.decode(ds.train[-3:]) == ['mr.', '<unk>', '<eos>']


def test_ptb_char_statistics(ptb_char, shared_data_dir):
  ds = ptb_char
  assert ds.vocab.size == 50  # 49 characters + end of line
  chars = [t for t in ds.vocab.id_to_token if t != '\n']
  assert len(chars) == 49 and '_' in chars
  assert (len(ds.train), len(ds.valid), len(ds.test)) == (5_017_482, 393_042,
                                                          442_423)
  assert int((ds.train == ds.vocab.token_to_id['\n']).sum()) == 42_068
  from_words = data.load('ptb_char', shared_data_dir, source='word')
  for split in data.SPLITS:
    np.testing.assert_array_equal(from_words.split(split), ds.split(split))


def test_ptb_bits_of_the_real_characters(ptb_char):
  bits, pos = text.chars_to_bits(ptb_char.valid, ptb_char.vocab, buffer_bits=24)
  assert len(bits) == 32 * len(ptb_char.valid)
  frames = bits.reshape(-1, 32)
  assert not frames[:, 8:].any() and (pos.reshape(-1, 32)[:, 8:] == -1).all()
  decoded = bytes(
      np.packbits(frames[:, :8].astype(np.uint8), axis=1).reshape(-1))
  assert decoded.decode('ascii') == ''.join(
      ptb_char.vocab.decode(ptb_char.valid))
  assert decoded.startswith(b'consumers_may_want_to_move_their_telephones')


def test_uci_har_statistics(har):
  (xtr, ytr), (xva, yva), (xte, yte) = har.train, har.valid, har.test
  assert xtr.shape == (7_415, 128, 9) and xte.shape == (2_996, 128, 9)
  assert xtr.dtype == np.float32 and ytr.dtype == np.int32
  assert xva.shape == (0, 128, 9) and yva.shape == (0,)
  assert np.bincount(
      ytr, minlength=6).tolist() == [1226, 1073, 987, 1293, 1423, 1413]
  assert np.bincount(
      yte, minlength=6).tolist() == [496, 471, 420, 508, 556, 545]
  subjects = har.meta['subjects']
  assert len(set(subjects['train'].tolist())) == 21 and len(
      set(subjects['test'].tolist())) == 9
  assert not set(subjects['train'].tolist()) & set(subjects['test'].tolist())
  x = xtr.astype(np.float64)
  np.testing.assert_allclose(x.mean(axis=(0, 1)), 0, atol=1e-4)
  np.testing.assert_allclose(x.std(axis=(0, 1)), 1, atol=1e-3)
  assert np.isfinite(xte).all()


def test_thesession_statistics(tunes, shared_data_dir):
  ds = tunes
  assert sum(ds.meta['num_tunes'].values()) == 2_000
  assert ds.meta['num_tunes'] == {'train': 1_600, 'valid': 200, 'test': 200}
  assert ds.vocab.size == 88 and ds.vocab.id_to_token[
      0] == '</s>'  # 87 types + separator
  eot = ds.vocab.token_to_id['</s>']
  total = sum(len(ds.split(s)) for s in data.SPLITS)
  assert total == 342_294 + 2_000
  for split in data.SPLITS:
    stream, starts = ds.split(split), ds.meta['tune_starts'][split]
    assert stream[-1] == eot and int((stream == eot).sum()) == len(starts)
    firsts = collections.Counter(ds.vocab.decode(stream[starts]))
    assert all(t.startswith('M:') for t in firsts)
  paired = data.load('thesession', shared_data_dir, pair_durations=True)
  assert 88 < paired.vocab.size < 730  # the paper's 730 is on 19,511 tunes


@pytest.mark.parametrize('name,size', [('fortunes_cs.txt', 135),
                                       ('fortunes_de.txt', 139),
                                       ('tinyshakespeare.txt', 66)])
def test_text_corpora(shared_data_dir, name, size):
  ds = data.load('text', shared_data_dir, path=name, word_boundaries=True)
  assert ds.vocab.size == size and ds.vocab.id_to_token[0] == '<unk>'
  n = sum(len(ds.split(s)) for s in data.SPLITS)
  assert len(ds.valid) == pytest.approx(0.05 * n, rel=0.01)
  assert 0.1 < ds.meta['word_boundaries']['train'].mean() < 0.3
