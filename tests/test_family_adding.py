"""Skip-RNN's adding task and the family's comparison on it."""

import json

import _binaries
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax.papers.family import adding as family_adding
from vcrnn_jax.tasks import adding


def test_markers_lie_where_the_paper_puts_them_and_the_target_is_their_sum():
  batch = adding.sample(jax.random.key(0), 500, 50)
  values = np.asarray(batch.inputs[..., 0])
  markers = np.asarray(batch.inputs[..., 1])
  assert set(np.unique(markers)) == {0.0, 1.0}
  positions = [np.flatnonzero(row) for row in markers]
  assert all(len(p) == 2 for p in positions)
  firsts = np.array([p[0] for p in positions])
  seconds = np.array([p[1] for p in positions])
  assert firsts.min() == 0 and firsts.max() == 4         # first 10% of 50
  assert seconds.min() == 25 and seconds.max() == 49     # last 50%
  assert values.min() >= -0.5 and values.max() < 0.5
  want = np.array([v[p].sum() for v, p in zip(values, positions)])
  np.testing.assert_allclose(np.asarray(batch.targets[:, 0]), want,
                             rtol=1e-6)
  # Predicting the mean scores about the variance of the sum, 1/6.
  zero = jnp.zeros((500, 1), jnp.float32)
  assert abs(float(jnp.mean(adding.squared_errors(zero, batch))) - 1 / 6) < 0.02


def test_bad_sizes_are_one_clear_error():
  with pytest.raises(ValueError, match='seq_len must be at least 10'):
    adding.sample(jax.random.key(0), 2, 9)
  with pytest.raises(ValueError, match='batch_size'):
    adding.sample(jax.random.key(0), 0)
  with pytest.raises(ValueError, match='model must be one of'):
    family_adding.build_cell(family_adding.AddingSpec(model='skip_rnn'))
  with pytest.raises(ValueError, match='vc_target'):
    family_adding.build_cell(family_adding.AddingSpec(vc_target=0.0))


@pytest.mark.parametrize('model', family_adding.MODELS)
def test_each_model_trains_and_reports_its_update_fraction(model):
  spec = family_adding.AddingSpec(model=model, hidden_size=6, seq_len=12,
                                  budget=0.01)
  exp = family_adding.experiment(spec, batch_size=4, eval_batch_size=8)
  params = exp.init(jax.random.key(0))
  batch = exp.sample(jax.random.key(1), 0)
  (loss, metrics), grads = jax.value_and_grad(exp.loss, has_aux=True)(
      params, batch, None)
  assert np.isfinite(float(loss))
  assert all(np.all(np.isfinite(g)) for g in jax.tree_util.tree_leaves(grads))
  fraction = float(metrics['update_fraction'])
  if model in ('lstm', 'gru'):
    assert fraction == 1.0 and float(loss) == float(metrics['mse'])
  else:
    assert 0 < fraction <= 1 and float(loss) > float(metrics['mse'])
  result = exp.evaluate(params, 0)
  assert set(result) == {'mse', 'update_fraction', 'mse_over_baseline'}
  np.testing.assert_allclose(result['mse_over_baseline'] * adding.BASELINE_MSE,
                             result['mse'], rtol=1e-6)


def _run(args, tmp_path):
  del tmp_path  # The binary writes only under its --workdir.
  return _binaries.run('family_adding', args)


def test_binary_writes_results_and_refuses_bad_flags(tmp_path):
  workdir = tmp_path / 'run'
  proc = _run(['--model=skip_gru', '--steps=4', '--eval_every=2',
               '--hidden_size=8', '--batch_size=4', '--eval_batch_size=8',
               f'--workdir={workdir}'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  results = json.loads((workdir / 'results.json').read_text())
  assert results['model'] == 'skip_gru'
  assert 0 < results['valid']['update_fraction'] <= 1
  assert results['valid']['mse'] >= 0
  for bad in ('--model=skip_rnn', '--seq_len=5', '--vc_target=1.5'):
    proc = _run([bad, '--steps=1', f'--workdir={tmp_path / "bad"}'],
                tmp_path)
    assert proc.returncode == 2, (bad, proc.stderr[-2000:])
    assert len(proc.stderr.strip().splitlines()) == 1, (bad, proc.stderr)
