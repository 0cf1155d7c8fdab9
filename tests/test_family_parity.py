"""The family's parity comparison: the task range, the methods, the binary.

Each method's Experiment trains a few steps in-process at a tiny size; one
subprocess run of experiments/family_parity.py writes results.json; bad flags
end with one line and status 2.
"""

import inspect
import json

import _binaries
import jax
import numpy as np
import pytest

from vcrnn_jax import registry
from vcrnn_jax.papers.family import parity as family_parity
from vcrnn_jax.tasks import parity
from vcrnn_jax.training.train import StepInfo


def _run(args, tmp_path):
  del tmp_path  # The binary writes only under its --workdir.
  return _binaries.run('family_parity', args)


# ----------------------------------------------------------------------------
# The task's range of non-zero counts.


def test_parity_counts_stay_in_the_range():
  task = parity.task(bits=12, layout='random', min_count=4, max_count=7)
  batch = task.sample(jax.random.key(0), 2000)
  counts = np.asarray(batch.difficulty)
  np.testing.assert_array_equal(
      counts, np.sum(np.asarray(batch.inputs)[:, 0] != 0, axis=-1))
  assert set(np.unique(counts)) == {4, 5, 6, 7}
  # A forced difficulty may leave the range (to probe beyond it).
  forced = task.sample(jax.random.key(1), 8, difficulty=12)
  np.testing.assert_array_equal(forced.difficulty, 12)


@pytest.mark.parametrize('layout,checksum,targets', [
    ('prefix', 77, [1, 0, 1, 0, 1, 1, 1, 0, 1, 0, 0, 0]),
    ('random', -2, [0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0]),
])
def test_parity_default_range_keeps_the_stream(layout, checksum, targets):
  # Recorded with the code before min_count/max_count (commit aacecbb).
  for task in (parity.task(bits=16, layout=layout),
               parity.task(bits=16, layout=layout, min_count=1,
                           max_count=16)):
    b = task.sample(jax.random.key(3), 12)
    assert b.difficulty.tolist() == [15, 7, 4, 9, 6, 14, 6, 13, 8, 1, 2, 3]
    x = np.asarray(b.inputs)[:, 0, :]
    assert int(np.sum(x * np.arange(1, 17))) == checksum
    assert b.targets[:, 0, 0].astype(int).tolist() == targets


@pytest.mark.parametrize('kwargs', [
    dict(min_count=0), dict(max_count=9), dict(min_count=5, max_count=4),
    dict(max_count=2.0)])
def test_parity_bad_range_is_refused(kwargs):
  with pytest.raises(ValueError, match='_count'):
    parity.task(bits=8, **kwargs)


def test_extrapolation_ranges():
  assert family_parity.ranges('extrapolation') == (96, (1, 48), (49, 96))
  assert family_parity.ranges('interpolation') == (64, (1, 64), (1, 64))
  assert family_parity.ranges('extrapolation', 8) == (8, (1, 4), (5, 8))
  with pytest.raises(ValueError, match='setting'):
    family_parity.ranges('bar')


# ----------------------------------------------------------------------------
# The four methods, in-process.


@pytest.mark.parametrize('method', family_parity.METHODS)
def test_each_method_trains_and_evaluates(method):
  model = family_parity.ModelConfig(method=method, hidden_size=8,
                                    max_steps=5)
  exp = family_parity.parity_experiment(
      model, 'extrapolation', bits=8, batch_size=4, eval_batch_size=16)
  params = exp.init(jax.random.key(0))
  info = StepInfo(key=jax.random.key(1), step=jax.numpy.int32(0))

  @jax.jit
  def step(params, batch):
    (loss, metrics), grads = jax.value_and_grad(exp.loss, has_aux=True)(
        params, batch, info)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), loss, \
        metrics

  for i in range(3):
    batch = exp.sample(jax.random.key(2), i)
    assert int(np.max(batch.difficulty)) <= 4   # the training range
    params, loss, metrics = step(params, batch)
    assert np.isfinite(float(loss))
    assert all(np.isfinite(float(v)) for v in metrics.values())
  result = exp.evaluate(params, 3)
  keys = {'accuracy', 'sequence_error', 'loss', 'ponder', 'steps', 'capped',
          'multiplications', 'training_range_accuracy'}
  row = None if method == 'rnn' else registry.METHODS[method]
  samples = row is not None and 'inference' in row.options
  if samples:
    keys |= {'sample_accuracy', 'sample_steps', 'sample_multiplications',
             'last_step_mass'}
  assert set(result) == keys
  assert all(np.isfinite(v) for v in result.values())
  assert result['accuracy'] == pytest.approx(1 - result['sequence_error'])
  assert 0.0 <= result['capped'] <= 1.0
  if not family_parity.steps_measured(method):
    # A fixed number of steps (the RNN's 1, Repeat's rho = 3) is the cap.
    assert result['ponder'] == result['steps'] == (1.0 if row is None
                                                   else 3.0)
    assert result['capped'] == 1.0
  else:
    assert 1.0 <= result['steps'] <= 5.0
  # Multiplications: the matrices of one step (the readout and halting
  # unit of a method that reads out itself), times the steps, plus a final
  # readout for the others.
  reads_out = row is not None and 'output_size' in inspect.signature(
      row.factory).parameters
  per_step = (3 * (8 + 8) * 8 if row is None               # the GRU alone
              else 3 * (8 + 1 + 8) * 8                     # input, flag
              + (8 + 8 if reads_out else 0))               # readout, halt
  once = 0 if reads_out else 8
  assert result['multiplications'] == pytest.approx(
      per_step * result['steps'] + once)
  rows = family_parity.evaluate_by_count(model, 'extrapolation', params,
                                         bits=8, batch_size=8)
  assert [r['count'] for r in rows] == list(range(1, 9))
  assert [r['split'] for r in rows] == ['train'] * 4 + ['test'] * 4


def test_pondernet_options_kl_direction_and_evaluation_cap():
  base = family_parity.ModelConfig(hidden_size=8, max_steps=4,
                                   ponder_epsilon=0.0)
  batch_args = dict(bits=8, batch_size=4, eval_batch_size=16)
  losses = {}
  for kl in ('paper', 'reverse'):
    exp = family_parity.parity_experiment(base._replace(kl=kl),
                                          'extrapolation', **batch_args)
    params = exp.init(jax.random.key(0))
    batch = exp.sample(jax.random.key(2), 0)
    _, metrics = exp.loss(params, batch, None)
    losses[kl] = float(metrics['kl'])
    # epsilon = 0: every row runs to M in training.
    assert float(metrics['steps']) == 4.0
  assert losses['paper'] != pytest.approx(losses['reverse'])
  # A halting bias of -3 keeps lambda small: with M = 4 at evaluation the cap
  # decides most rows and holds the last step's mass; with 12 it does less.
  results = {}
  for eval_max in (None, 12):
    exp = family_parity.parity_experiment(
        base._replace(eval_max_steps=eval_max), 'extrapolation', **batch_args)
    params = exp.init(jax.random.key(0))
    params['cell']['halting']['bias'] = params['cell']['halting']['bias'] - 3
    results[eval_max] = exp.evaluate(params, 0)
  assert results[None]['last_step_mass'] > 0.2
  assert results[None]['capped'] > 0.5
  assert results[12]['steps'] > results[None]['steps']
  assert results[12]['capped'] < results[None]['capped']
  assert results[12]['sample_steps'] <= 12.0


def test_what_the_summaries_read_comes_from_the_rows():
  # The paper's four methods, as the family's summary has always shown them
  # (the table may add others).
  paper = ('rnn', 'act', 'repeat', 'pondernet')
  assert set(paper) <= set(family_parity.METHODS)
  assert [family_parity.steps_measured(m) for m in paper] == [
      False, True, False, True]
  model = {'max_steps': 20, 'rho': 3, 'eval_max_steps': 40}
  caps = {m: family_parity.step_caps(m, model) for m in paper}
  assert caps == {'rnn': (1, 1), 'act': (20, 20), 'repeat': (3, 3),
                  'pondernet': (20, 40)}
  assert family_parity.step_caps('pondernet', {'max_steps': 7}) == (7, 7)
  grids = {m: family_parity.grid(m) for m in paper}
  assert grids == {'rnn': (), 'act': ('tau',), 'repeat': ('rho',),
                   'pondernet': ('kl', 'ponder_epsilon', 'lambda_p', 'beta')}
  with pytest.raises(ValueError, match="method must be one of .* got 'skip'"):
    family_parity.grid('skip')


def test_default_loop_is_chosen_per_method():
  m = family_parity.ModelConfig
  assert family_parity.default_loop(m('act')).save_residuals
  assert family_parity.default_loop(m(ponder_epsilon=0.0)).kind == 'scan'
  assert family_parity.default_loop(m()).kind == 'while'


def test_bad_model_is_refused():
  for bad, match in [(dict(method='foo'), 'method'), (dict(rho=0), 'rho'),
                     (dict(lambda_p=1.0), 'lambda_p'), (dict(kl='x'), 'kl'),
                     (dict(eval_max_steps=0), 'eval_max_steps')]:
    with pytest.raises(ValueError, match=match):
      family_parity.check_model(family_parity.ModelConfig(**bad))


# ----------------------------------------------------------------------------
# The binary.


def test_binary_writes_results(tmp_path):
  workdir = tmp_path / 'run'
  proc = _run(['--method=pondernet', '--setting=extrapolation', '--bits=8',
               '--steps=4', '--eval_every=2', '--hidden_size=8',
               '--batch_size=4', '--eval_batch_size=16',
               '--count_batch_size=8', '--max_steps=5',
               f'--workdir={workdir}'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  lines = (workdir / 'metrics.jsonl').read_text().splitlines()
  assert [json.loads(l)['step'] for l in lines] == [2, 4]
  results = json.loads((workdir / 'results.json').read_text())
  for key in ('method', 'setting', 'updates', 'accuracy', 'ponder',
              'seconds_per_update', 'valid', 'train', 'steps_per_sec',
              'by_count'):
    assert key in results, key
  assert results['updates'] == 4 and results['method'] == 'pondernet'
  assert results['seconds_per_update'] == pytest.approx(
      1 / results['steps_per_sec'])
  assert [r['count'] for r in results['by_count']] == list(range(1, 9))
  assert {'accuracy', 'ponder', 'steps', 'split'} <= set(
      results['by_count'][0])
  assert (workdir / 'by_count.csv').is_file()


@pytest.mark.parametrize('flag,needle', [
    ('--method=foo', 'method'), ('--setting=bar', 'setting'),
    ('--rho=0', 'rho')])
def test_bad_flags_are_one_line(flag, needle, tmp_path):
  proc = _run([flag, f'--workdir={tmp_path / "run"}'], tmp_path)
  assert proc.returncode == 2
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and needle in lines[0], proc.stderr
  assert 'Traceback' not in proc.stderr
