"""The adaptive-depth character LM and the depth_lm binary.

Each mode is causal as evaluated (a later character changes no earlier
logit; route by its threshold rule, while top-k is not); the
multiplications per character are a hand count of the block's kernels and
attention; the character classes and the depth per class are checked on a
hand-made string. The binary trains each mode for a few steps in this
process on a tiny PTB-format corpus written here, writes its class report,
and its run loads back (load_run) to the numbers it logged; one run starts
a process as a user does (slow); bad flags end with one line.
"""

import csv
import doctest
import functools
import json

import _binaries
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import routing
from vcrnn_jax.papers.depth import lm
from vcrnn_jax.papers.runs import load_run

TINY = lm.Model('fixed', vocab_size=11, features=8, heads=2, context=10,
                max_depth=4, depth=3, tau=0.01)


def _model(mode, **changes):
  return TINY._replace(mode=mode, **changes)


def _forward(model, params, tokens, evaluation):
  return jax.jit(functools.partial(lm.forward, model,
                                   evaluation=evaluation))(params, tokens)


def _statistics(model, params, windows, evaluation=False):
  return jax.jit(functools.partial(lm.statistics, model,
                                   evaluation=evaluation))(params, windows)


def _params(model, seed=0):
  params = lm.init(model, jax.random.key(seed))
  # A readout that reads the state (init's is zero) and, for route,
  # routers that keep some characters and drop others.
  k = jax.random.split(jax.random.key(seed + 1), 2)
  params['readout']['kernel'] = jax.random.normal(
      k[0], params['readout']['kernel'].shape)
  if 'router' in params['depth']:
    params['depth']['router']['kernel'] = 2.0 * jax.random.normal(
        k[1], params['depth']['router']['kernel'].shape)
  if 'halting' in params['depth']:
    # Halting values spread around 1/2: positions halt at different depths.
    params['depth']['halting']['bias'] = jnp.zeros_like(
        params['depth']['halting']['bias'])
    params['depth']['halting']['kernel'] = 3.0 * jax.random.normal(
        k[1], params['depth']['halting']['kernel'].shape)
  return params


@pytest.mark.parametrize('mode', list(lm.MODES))
def test_a_later_character_changes_no_earlier_logit(mode):
  model = _model(mode)
  params = _params(model)
  tokens = jax.random.randint(jax.random.key(2), (4, 10), 0, 11)
  base = _forward(model, params, tokens, True)
  depths = set()
  for j in (3, 7, 9):
    changed = tokens.at[:, j].set((tokens[:, j] + 5) % 11)
    out = _forward(model, params, changed, True)
    np.testing.assert_allclose(out.logits[:, :j], base.logits[:, :j],
                               atol=1e-6)
    np.testing.assert_array_equal(out.steps[:, :j], base.steps[:, :j])
    # The changed character's own prediction does change.
    assert not np.allclose(out.logits[:, j], base.logits[:, j])
    depths |= set(np.asarray(out.steps).ravel().tolist())
  if mode != 'fixed':
    assert len(depths) > 1, depths    # adaptive: positions differ in depth


def test_route_top_k_reads_the_future_which_evaluation_avoids():
  # Top-k ranks a character against the later ones: changing the last
  # characters moves earlier ones in or out of the selection.
  model = _model('route')
  params = _params(model)
  tokens = jax.random.randint(jax.random.key(3), (16, 10), 0, 11)
  changed = tokens.at[:, 6:].set((tokens[:, 6:] + 3) % 11)
  a = _forward(model, params, tokens, False)
  b = _forward(model, params, changed, False)
  assert not np.array_equal(a.steps[:, :6], b.steps[:, :6])
  assert not np.allclose(a.logits[:, :6], b.logits[:, :6], atol=1e-6)
  # Top-k runs exactly the capacity: sum_r k_r(10) of MoR's (4 - r)/4.
  assert routing.capacity_tokens(10, max_depth=4) == (10, 7, 5, 2)
  np.testing.assert_array_equal(np.sum(a.steps, axis=1), 24)


def test_multiplications_are_a_hand_count():
  f, v, t = 8, 11, 10
  # Per character per application: qkv 8 x 24, out 8 x 8, MLP 8 x 16 and
  # 16 x 8 kernels; attention 2 t f; a unit f where the mode has one.
  dense = 8 * 24 + 8 * 8 + 8 * 16 + 16 * 8
  assert dense == 8 * f * f
  windows = jax.random.randint(jax.random.key(4), (3, t + 1), 0, v)
  fixed = _model('fixed')
  s = _statistics(fixed, _params(fixed), windows)
  assert float(s['mults']) == float(s['mults_run']) == (
      3 * (dense + 2 * t * f) + f * v)
  # ACT: each character its own depth; the implementation runs the batch
  # to its deepest.
  act = _model('per_token')
  s = _statistics(act, _params(act), windows)
  steps = np.asarray(s['steps'])
  per_app = dense + 2 * t * f + f
  np.testing.assert_allclose(float(s['mults']),
                             steps.mean() * per_app + f * v, rtol=1e-6)
  np.testing.assert_allclose(float(s['mults_run']),
                             steps.max() * per_app + f * v, rtol=1e-6)
  # Route, top-k at capacity (1, 0.5, 0.5, 0.2): k = 10, 5, 5, 2 keys and
  # queries per step.
  route = _model('route', capacity=(1.0, 0.5, 0.5, 0.2))
  s = _statistics(route, _params(route), windows)
  want = sum(k * (dense + 2 * k * f + f) for k in (10, 5, 5, 2)) / t
  np.testing.assert_allclose(float(s['mults']), want + f * v, rtol=1e-6)
  np.testing.assert_allclose(float(s['mults_run']), want + f * v, rtol=1e-6)
  assert float(s['depth']) == pytest.approx((10 + 5 + 5 + 2) / 10)
  # The threshold rule: per character as it went, every step on all slots
  # as computed.
  s = _statistics(route, _params(route), windows, evaluation=True)
  steps = np.asarray(s['steps'])
  np.testing.assert_allclose(float(s['mults']),
                             steps.mean() * per_app + f * v, rtol=1e-6)
  np.testing.assert_allclose(float(s['mults_run']), 4 * per_app + f * v,
                             rtol=1e-6)


def test_character_classes_and_depth_by_class():
  text = "we_'re_in.\nok"
  classes = lm.character_classes(list(text))
  assert classes == [
      'word start', 'inside word', 'space', 'punctuation / end',
      'inside word', 'inside word', 'space', 'word start', 'inside word',
      'punctuation / end', 'punctuation / end', 'word start', 'inside word']
  # The character before the text decides its first class.
  assert lm.character_classes(['a'], previous='b') == ['inside word']
  steps = np.arange(len(text)) % 4 + 1
  nll = np.full(len(text), np.log(2.0))        # 1 bit everywhere
  rows = lm.depth_by_class(classes, steps, steps * 0.5, nll)
  by = {r['class']: r for r in rows}
  assert [r['class'] for r in rows] == list(lm.CLASSES)
  assert by['space'] == {'class': 'space', 'count': 2,
                         'depth': (3 + 3) / 2, 'ponder': 1.5, 'bpc': 1.0}
  assert by['word start']['count'] == 3
  assert by['word start']['depth'] == pytest.approx((1 + 4 + 4) / 3)
  assert by['punctuation / end']['depth'] == pytest.approx((4 + 2 + 3) / 3)
  assert sum(r['count'] for r in rows) == len(text)
  with pytest.raises(ValueError, match='depth_by_class'):
    lm.depth_by_class(classes[:-1], steps, steps, nll)


def test_the_docstring_examples_run():
  result = doctest.testmod(lm, verbose=False)
  assert result.attempted >= 2 and result.failed == 0, result


def test_held_out_windows_tile_the_stream():
  w = lm.held_out_windows(np.arange(30), 7, 4)
  assert w.shape == (4, 8)
  np.testing.assert_array_equal(w[:, 0], [0, 7, 14, 21])
  np.testing.assert_array_equal(w[1], np.arange(7, 15))
  with pytest.raises(ValueError, match='--eval_windows=5'):
    lm.held_out_windows(np.arange(30), 7, 5)


def _corpus(folder):
  """A tiny corpus in PTB's character layout: space-separated characters,
  _ between words, a sentence per line."""
  words = ['the', 'cat', 'sat', 'on', 'a', 'mat', "'s", 'n', '<unk>', 'dog']
  rng = np.random.RandomState(0)
  for split, lines in (('train', 200), ('valid', 40), ('test', 20)):
    text = ''
    for _ in range(lines):
      sentence = '_'.join(rng.choice(words, rng.randint(3, 9)))
      text += ' ' + ' '.join(sentence) + ' \n'
    (folder / 'ptb').mkdir(parents=True, exist_ok=True)
    (folder / 'ptb' / f'ptb.char.{split}.txt').write_text(text)
  return folder


ARGS = ['--steps=4', '--eval_every=2', '--batch_size=4', '--features=8',
        '--heads=2', '--context=12', '--max_depth=3', '--depth=2',
        '--eval_windows=6', '--eval_batch_size=4']


def _run(args, tmp_path):
  data_dir = _corpus(tmp_path / 'data')
  return _binaries.run('depth_lm', ARGS + args + [
      f'--data_dir={data_dir}', f'--workdir={tmp_path / "run"}'])


@pytest.mark.parametrize('mode', list(lm.MODES))
def test_binary_trains_and_reports_per_class(mode, tmp_path):
  proc = _run([f'--mode={mode}', '--class_report'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  workdir = tmp_path / 'run'
  for name in ('manifest.jsonl', 'flags.json', 'metrics.jsonl'):
    assert (workdir / name).stat().st_size > 0
  last = json.loads((workdir / 'metrics.jsonl').read_text().splitlines()[-1])
  keys = ['bpc', 'loss', 'depth', 'ponder', 'mults', 'mults_run']
  keys += ['bpc_top_k', 'depth_top_k'] if mode == 'route' else []
  for key in keys:
    assert np.isfinite(last[key]), key
  assert 0.0 < last['bpc'] < 10.0
  assert last['mults'] <= last['mults_run'] + 1e-3
  if mode == 'fixed':
    assert last['depth'] == 2.0
  else:
    assert 0.0 <= last['depth'] <= 3.0
  with open(workdir / 'classes.csv', newline='') as f:
    rows = list(csv.DictReader(f))
  assert [r['class'] for r in rows] == list(lm.CLASSES)
  assert sum(int(r['count']) for r in rows) == 6 * 12
  results = json.loads((workdir / 'results.json').read_text())
  assert results['mode'] == mode and results['updates'] == 4
  assert [r['class'] for r in results['by_class']] == list(lm.CLASSES)
  assert results['steps_per_sec'] > 0
  assert 'space' in proc.stdout
  # The run loads from its workdir and evaluates to the numbers it logged.
  with _binaries._jax_defaults():  # pylint: disable=protected-access
    run = load_run(workdir)
    got = run.experiment.evaluate(run.params, run.step)
    logits, out = run.apply(jnp.zeros((2, 12), jnp.int32))
  np.testing.assert_allclose(got['bpc'], last['bpc'], rtol=1e-6)
  assert logits.shape == (2, 12) + run.params['readout']['bias'].shape
  assert out.steps.shape == (2, 12)


@pytest.mark.parametrize('flag,needle', [
    ('--mode=deep', 'mode'),
    ('--heads=3', 'multiple of --heads'),
    ('--tau=-1', '--tau must be'),
    ('--lambda_p=1', '--lambda_p must be in (0, 1)'),
    ('--capacity=0.5', '--capacity is read by --mode=route only'),
    ('--capacity=1,x', '--capacity must be comma-separated fractions'),
    ('--eval_windows=100000', '--eval_windows=100000'),
])
def test_bad_flags_are_one_line(flag, needle, tmp_path):
  proc = _run([flag], tmp_path)
  assert proc.returncode == 2, proc.stderr[-3000:]
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and needle in lines[0], lines
  assert not (tmp_path / 'run' / 'checkpoints').exists()


@pytest.mark.slow
def test_binary_trains_as_a_user_runs_it(tmp_path):
  # A fresh process: python -m experiments.depth_lm, as the docstring says.
  data_dir = _corpus(tmp_path / 'data')
  workdir = tmp_path / 'run'
  proc = _binaries.run('depth_lm', ARGS + [
      '--mode=route', '--class_report', f'--data_dir={data_dir}',
      f'--workdir={workdir}'], process=True)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert 'Traceback' not in proc.stderr
  assert (workdir / 'classes.csv').stat().st_size > 0
  assert json.loads((workdir / 'results.json').read_text())['updates'] == 4


def test_the_real_corpus_loads(shared_data_dir):
  # PTB characters: 50 symbols, and the held-out slice of the defaults.
  from vcrnn_jax import data
  ds = data.load('ptb_char', shared_data_dir)
  assert ds.vocab.size == 50
  w = lm.held_out_windows(ds.valid, 128, 256)
  chars = ds.vocab.decode(w[:, :-1].reshape(-1))
  classes = lm.character_classes(chars)
  assert set(classes) == set(lm.CLASSES)
