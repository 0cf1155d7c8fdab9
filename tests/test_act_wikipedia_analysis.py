"""ACT Sec. 3.5's ponder per character class
(:mod:`vcrnn_jax.papers.act.wikipedia`) against plain loops, and the
``act_wikipedia`` binary writing it into results.json."""

import json
import math

import _binaries
import jax
import numpy as np
import pytest

from vcrnn_jax.papers.act import lm as act_lm
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.papers.act import wikipedia

TEXT = ('The cat sat. Did it?  Yes!\nA dog, a (big) one, ran 2 km.\n'
        'no marks here and "quotes" too\n')


def _reference_classes(chars, following):
  """Each class of every position, by a plain loop over the characters."""
  def word(c):
    return c is not None and c.isalnum()

  def white(c):
    return c is not None and c.isspace()

  out = {name: [] for name in wikipedia.CLASSES}
  for t, c in enumerate(chars):
    prev = chars[t - 1] if t else None
    nxt = chars[t + 1] if t + 1 < len(chars) else following
    out['space'].append(white(c) and c not in '\n\r')
    out['newline'].append(c in '\n\r')
    out['word_start'].append(not white(c) and white(prev))
    out['inside_word'].append(word(c) and word(prev) and word(nxt))
    out['word_end'].append(word(c) and not word(nxt))
    out['sentence_end'].append(c in '.!?' or (prev is not None
                                              and prev in '.!?'))
    out['punctuation'].append(not white(c) and not word(c))
    out['all'].append(True)
  return out


def _reference_means(ponder, chars, following):
  classes = _reference_classes(chars, following)
  out = {}
  for name in wikipedia.CLASSES:
    total, count = 0.0, 0
    for p, member in zip(ponder, classes[name]):
      if member:
        total += float(p)
        count += 1
    out[name] = {'mean': total / count if count else None, 'count': count}
  return out


def _assert_means_equal(got, want):
  assert list(got) == list(want)
  for name in want:
    assert got[name]['count'] == want[name]['count'], name
    if want[name]['mean'] is None:
      assert got[name]['mean'] is None, name
    else:
      np.testing.assert_allclose(got[name]['mean'], want[name]['mean'],
                                 rtol=1e-12, err_msg=name)


def test_classes_by_hand():
  masks = wikipedia.class_masks(list('Hi. Ok go\nx'), following='y')
  where = {k: np.flatnonzero(v).tolist() for k, v in masks.items()}
  assert where['space'] == [3, 6]
  assert where['newline'] == [9]
  assert where['word_start'] == [4, 7, 10]
  assert where['inside_word'] == []          # no word of 3+ letters
  assert where['word_end'] == [1, 5, 8]      # 'x' is followed by 'y'
  assert where['sentence_end'] == [2, 3]     # the mark and the space after
  assert where['punctuation'] == [2]
  assert where['all'] == list(range(11))


def test_means_equal_a_plain_loop_and_an_empty_class_is_null():
  rng = np.random.default_rng(0)
  chars = list(TEXT)
  ponder = 1 + rng.random(len(chars)) * 3
  _assert_means_equal(wikipedia.mean_by_class(ponder, chars, following='x'),
                      _reference_means(ponder, chars, 'x'))
  # No newline, no sentence mark: those classes are counted 0, mean None.
  plain = list('abc def ghij')
  got = wikipedia.mean_by_class(np.ones(len(plain)), plain)
  assert got['newline'] == {'mean': None, 'count': 0}
  assert got['sentence_end'] == {'mean': None, 'count': 0}
  assert got['inside_word'] == {'mean': 1.0, 'count': 4}   # b, e, h, i
  with pytest.raises(ValueError, match='ponders'):
    wikipedia.mean_by_class(np.ones(3), plain)


def test_bytes_classify_as_ascii_characters_and_high_bytes_as_letters():
  text = TEXT.encode()
  as_bytes = wikipedia.class_masks(list(text), following=ord('x'))
  as_chars = wikipedia.class_masks(list(TEXT), following='x')
  for name in wikipedia.CLASSES:
    np.testing.assert_array_equal(as_bytes[name], as_chars[name], name)
  cafe = list('café'.encode())                  # 'é' is two bytes >= 128
  assert wikipedia.class_masks(cafe)['inside_word'].tolist() == [
      False, True, True, True, False]


def _tiny_task(seq_len):
  rng = np.random.default_rng(1)
  chars = sorted(set(TEXT))
  ids = np.array([chars.index(c) for c in TEXT * 4], np.int32)
  model = act_tasks.ModelConfig(cell='lstm', hidden_size=8, act=True,
                                tau=0.01, max_steps=6, epsilon=0.01,
                                halting_bias=0.0)
  task = act_lm.lm_task(ids, ids, model, batch_size=2, seq_len=seq_len,
                        vocab_size=len(chars), eval_windows=2)
  params = task.experiment.init(jax.random.key(3))
  # Random halting weights of a larger scale: ponder varies by character.
  params = jax.tree.map(
      lambda p: p + rng.normal(0, 1.0, p.shape).astype(p.dtype), params)
  return task, params, ids, chars, act_lm.build_model(model, len(chars))


def test_window_ponder_on_a_tiny_model_equals_the_model_on_its_windows():
  seq_len, n = 10, 47          # the last window is shorter (7 inputs)
  task, params, ids, chars, net = _tiny_task(seq_len)
  ponder, bits, starts = wikipedia.window_ponder(task.per_step, params, ids,
                                                 seq_len, n)
  assert starts == [0, 10, 20, 30, 40] and ponder.shape == bits.shape == (n,)
  # Reference: the model run on the full windows as one batch, each row from
  # its zero state, and the last window alone.
  full = ids[:40].reshape(4, seq_len)
  _, ys = net.apply(params, full)
  _, last = net.apply(params, ids[None, 40:47])
  want = np.concatenate([np.asarray(ys.ponder).reshape(-1),
                         np.asarray(last.ponder).reshape(-1)])
  np.testing.assert_allclose(ponder, want, rtol=1e-5)
  assert np.ptp(ponder) > 0.01     # the means below compare distinct values
  # The class means of the analysis equal the plain loop over the same
  # characters and ponders.
  found = wikipedia.analysis(task.per_step, params, ids,
                             lambda x: [chars[i] for i in x],
                             seq_len=seq_len, symbols=n, shown=12,
                             max_steps=6)
  text = [chars[i] for i in ids[:n + 1]]
  _assert_means_equal(found['mean_ponder_by_class'],
                      _reference_means(want, text[:n], text[n]))
  assert found['symbols'] == n and found['windows'] == 5
  assert found['ponder_over_text']['symbols'] == text[:12]
  assert found['ponder_over_text']['resets'] == [0, 10]
  np.testing.assert_allclose(found['ponder_over_text']['ponder'], want[:12],
                             atol=1e-4)
  np.testing.assert_allclose(found['mean_bits'], bits.mean())
  assert found['max_steps'] == 6 and found['ponder_min'] == want.min()
  assert found['share_at_floor'] == np.mean(want <= 2.0)
  assert found['share_at_cap'] == np.mean(want > 6)
  assert all(b >= 0 for b in found['ponder_over_text']['bits'])
  json.dumps(found, allow_nan=False)


def _run(args, tmp_path):
  return _binaries.run('act_wikipedia', args,
                       env={'VCRNN_JAX_DATA': str(tmp_path / 'cache')})


@pytest.mark.parametrize('data', ['text', 'bytes'])
def test_binary_writes_the_analysis(data, tmp_path):
  corpus = tmp_path / 'corpus.txt'
  corpus.write_text('The cat sat. The dog ran! Where?\n' * 60)
  workdir = tmp_path / 'run'
  proc = _run([f'--data={data}', f'--data_path={corpus}', '--hidden_size=8',
               '--seq_len=20', '--batch_size=2', '--steps=3',
               '--eval_every=3', '--eval_windows=2', '--max_steps=4',
               '--analysis_symbols=70', '--analysis_shown=30',
               f'--workdir={workdir}'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  results = json.loads((workdir / 'results.json').read_text())
  found = results['analysis']
  assert results['step'] == 3 and 'bpc' in results['valid']
  assert found['unit'] == ('char' if data == 'text' else 'byte')
  assert found['symbols'] == 70 and found['windows'] == 4
  by_class = found['mean_ponder_by_class']
  assert list(by_class) == list(wikipedia.CLASSES)
  assert by_class['all']['count'] == 70
  for name, c in by_class.items():
    assert c['count'] >= 0 and (c['mean'] is None) == (c['count'] == 0), name
    assert c['mean'] is None or 1 <= c['mean'] <= 4 + 1e-6, name
  shown = found['ponder_over_text']
  assert len(shown['symbols']) == len(shown['ponder']) == 30
  assert shown['resets'] == [0, 20]
  assert math.isclose(by_class['all']['mean'], found['mean_ponder'])
  assert found['max_steps'] == 4 and 0 <= found['share_at_cap'] <= 1
  assert 'mean ponder by class' in proc.stdout


def test_binary_without_act_writes_a_null_analysis(tmp_path):
  corpus = tmp_path / 'corpus.txt'
  corpus.write_text('The cat sat. The dog ran! Where?\n' * 60)
  workdir = tmp_path / 'run'
  proc = _run(['--data=text', f'--data_path={corpus}', '--act=false',
               '--hidden_size=8', '--seq_len=20', '--batch_size=2',
               '--steps=3', '--eval_every=3', '--eval_windows=2',
               f'--workdir={workdir}'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  results = json.loads((workdir / 'results.json').read_text())
  assert results['analysis'] is None and 'bpc' in results['valid']
