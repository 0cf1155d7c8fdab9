"""Sequence models, the task-experiment glue and the byte-LM experiment."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import act, cells, tasks
from vcrnn_jax.models import sequence_model
from vcrnn_jax.papers.act import lm as act_lm
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.training.train import StepInfo
from vcrnn_jax.unroll import unroll


def test_sequence_model_readout_is_a_linear_layer_on_the_cell_output():
  model = sequence_model(cells.gru(6), output_size=3)
  params = model.init(jax.random.key(0), 4)
  assert jax.tree_util.tree_map(jnp.shape, params['readout']) == {
      'kernel': (6, 3), 'bias': (3,)}
  xs = jax.random.normal(jax.random.key(1), (2, 5, 4), jnp.float32)
  logits, hs = model.apply(params, xs)
  cell = cells.gru(6)
  _, want = unroll(cell, params['cell'], cell.initial_state(2), xs)
  np.testing.assert_allclose(hs, want, rtol=1e-6)
  bias = params['readout']['bias'][None, None, :]   # [batch, time, out]
  np.testing.assert_allclose(
      logits, want @ params['readout']['kernel'] + bias, rtol=1e-5, atol=1e-6)


def test_sequence_model_without_readout_uses_the_act_output():
  model = sequence_model(act.adaptive(cells.elman(6), 3, max_steps=5))
  params = model.init(jax.random.key(0), 4)
  assert 'readout' not in params
  logits, ys = model.apply(params, jnp.ones((2, 5, 4), jnp.float32))
  assert logits.shape == (2, 5, 3)
  np.testing.assert_array_equal(logits, ys.output)
  assert ys.ponder.shape == (2, 5)


def test_step_mask_covers_inputs_up_to_the_last_target():
  mask = jnp.array([[0, 1, 1, 0, 0],      # addition: no target at step 0
                    [0, 0, 1, 1, 0],      # sort: targets after the inputs
                    [1, 0, 0, 0, 0]], jnp.float32)
  valid, lengths = act_tasks.step_mask(mask)
  np.testing.assert_array_equal(lengths, [3, 4, 1])
  np.testing.assert_array_equal(valid, [[1, 1, 1, 0, 0], [1, 1, 1, 1, 0],
                                        [1, 0, 0, 0, 0]])


def test_task_experiment_loss_adds_tau_times_ponder_cost():
  task = tasks.get('logic', max_len=3, num_gates=2)
  base = act_tasks.ModelConfig(cell='lstm', hidden_size=8, act=True, tau=0.0,
                               max_steps=5)
  batch = task.sample(jax.random.PRNGKey(0), 4)
  exp0 = act_tasks.task_experiment(task, base, batch_size=4)
  exp1 = act_tasks.task_experiment(task, base._replace(tau=0.5), batch_size=4)
  params = exp0.init(jax.random.PRNGKey(1))
  info = StepInfo(jax.random.PRNGKey(2), jnp.zeros((), jnp.int32))
  l0, m0 = exp0.loss(params, batch, info)
  l1, m1 = exp1.loss(params, batch, info)
  valid, _ = act_tasks.step_mask(batch.mask)
  ponder_per_seq = m0['ponder'] * jnp.sum(valid) / 4   # mean of P(x), Eq. 11
  np.testing.assert_allclose(l1 - l0, 0.5 * ponder_per_seq, rtol=1e-5)
  assert m0['ponder'] >= 1.0
  assert 0.0 <= m0['tail'] < 1.0      # what the progress line shows


def test_tail_share_counts_the_halted_rows_a_loop_carries():
  # Step 0: rows ponder 1 and 3 (loop of 3 iterations, 2 rows): 2 of 6
  # row-steps are a halted row. Step 1 is padding for row 1 and counts
  # only row 0: 2 of 2 useful.
  steps = jnp.array([[1, 2], [3, 9]])
  valid = jnp.array([[True, True], [True, False]])
  want = 1 - (1 + 3 + 2) / (2 * (3 + 2))
  np.testing.assert_allclose(act_tasks.tail_share(steps, valid), want)
  same = jnp.full((4, 3), 2)
  assert float(act_tasks.tail_share(same, same > 0)) == 0.0


def test_build_model_rejects_unknown_cell():
  with pytest.raises(ValueError, match='cell must be one of'):
    act_tasks.build_model(tasks.get('parity', bits=4),
                          act_tasks.ModelConfig(cell='transformer'))


def test_act_lm_task_bits_per_character_and_ponder_over_text():
  rng = np.random.default_rng(0)
  stream = rng.integers(0, 256, 400).astype(np.int32)
  model = act_tasks.ModelConfig(cell='lstm', hidden_size=8, act=True,
                                tau=0.01, max_steps=4)
  task = act_lm.lm_task(stream[:300], stream[300:], model, batch_size=4,
                        seq_len=10, eval_windows=8)
  exp = task.experiment
  params = exp.init(jax.random.PRNGKey(0))
  batch = exp.sample(jax.random.PRNGKey(1), jnp.int32(0))
  assert batch.windows.shape == (4, 11)
  info = StepInfo(jax.random.PRNGKey(2), jnp.zeros((), jnp.int32))
  loss, metrics = exp.loss(params, batch, info)
  # An untrained net predicts ~uniformly over 256 bytes: ~8 bits per char.
  assert 7.0 < float(metrics['bpc']) < 9.0
  assert float(loss) > 10 * 7.0 * np.log(2)
  results = exp.evaluate(params, 0)
  assert 7.0 < results['bpc'] < 9.0 and results['ponder'] >= 1.0
  assert results['perplexity'] == pytest.approx(2 ** results['bpc'])
  ponder = act_lm.ponder_over_text(task, params, stream[:21])
  assert ponder.shape == (20,) and np.all(ponder >= 1.0)


def test_act_lm_task_rejects_a_split_shorter_than_a_window():
  model = act_tasks.ModelConfig(cell='lstm', hidden_size=8)
  with pytest.raises(ValueError, match='valid split has 5 symbols'):
    act_lm.lm_task(np.zeros(100, np.int32), np.zeros(5, np.int32),
                   model, batch_size=2, seq_len=10)
