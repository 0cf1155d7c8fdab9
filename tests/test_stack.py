"""The shared training stack: step-aware data and loss, carried state,
optimizers from config, the LM and array-dataset builders, stacked cells."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from vcrnn_jax import cells
from vcrnn_jax.cells.stack import StackOutput, stack
from vcrnn_jax.core import Context
from vcrnn_jax.metrics import classification_sums, squared_error_sums
from vcrnn_jax.models import language_model, sequence_model
from vcrnn_jax.training import lm, supervised
from vcrnn_jax.training import train as train_lib
from vcrnn_jax.training.train import (
  Experiment,
  StepInfo,
  TrainConfig,
  make_optimizer,
  train_and_evaluate,
)


def _config(**kw):
  base = dict(steps=6, batch_size=4, learning_rate=1e-2, eval_every=3,
              log_every=1, quiet=True)
  base.update(kw)
  return TrainConfig(**base)


def _toy_experiment(traces, seen):
  """A linear model whose loss uses the step and the key; traces counted."""
  def init(key):
    return {'w': jax.random.normal(key, (3,))}

  def sample(key, step):
    x = jax.random.normal(jax.random.fold_in(key, step), (4, 3))
    return {'x': x}

  def loss(params, batch, info):
    traces.append(1)                     # runs once per (re)compilation
    schedule = 1.0 + info.step.astype(jnp.float32)   # a step-dependent value
    noise = jax.random.normal(info.key, (3,))
    jax.debug.callback(lambda s, k: seen.append((int(s), np.asarray(k))),
                       info.step, jax.random.key_data(info.key)
                       if jnp.issubdtype(info.key.dtype, jax.dtypes.prng_key)
                       else info.key)
    value = jnp.mean((batch['x'] @ (params['w'] + 0.01 * noise)) ** 2)
    return value * schedule.astype(value.dtype), {'schedule': schedule}

  return Experiment(init, loss, sample, lambda params, step: {'w0': float(
      params['w'][0])})


def test_loss_gets_the_step_and_a_key_without_recompiling(tmp_path):
  traces, seen = [], []
  result = train_and_evaluate(_toy_experiment(traces, seen), _config(),
                              tmp_path)
  assert len(traces) == 1                      # six steps, one compilation
  assert [s for s, _ in seen] == list(range(6))
  keys = [k.tobytes() for _, k in seen]
  assert len(set(keys)) == 6                   # a new dropout key each step
  assert [h['train_schedule'] for h in result.history] == [2.0, 5.0]
  # A resumed run sees the same keys at the same steps.
  seen2 = []
  train_and_evaluate(_toy_experiment([], seen2), _config(steps=3),
                     tmp_path / 'split')
  train_and_evaluate(_toy_experiment([], seen2), _config(), tmp_path / 'split')
  assert [k.tobytes() for _, k in seen2] == keys


def test_steps_per_sec_is_the_last_interval_without_compile_or_eval(
    tmp_path):
  clock = [0.0]
  base = _toy_experiment([], [])

  def sample(key, step):
    clock[0] += 500.0 if int(step) == 0 else 1.0   # a slow first step
    return base.sample(key, step)

  def evaluate(params, step):
    clock[0] += 1000.0                             # a slow evaluation
    return base.evaluate(params, step)

  exp = base._replace(sample=sample, evaluate=evaluate)
  result = train_and_evaluate(exp, _config(steps=8, eval_every=4), tmp_path,
                              clock=lambda: clock[0])
  # Each interval's rate starts after its first step: 3 steps in 3 s.
  assert [h['steps_per_sec'] for h in result.history] == [1.0, 1.0]


def test_adam_keeps_its_layout_and_sgd_decays_on_schedule():
  params = {'w': jnp.ones(2)}
  adam = make_optimizer(TrainConfig(learning_rate=0.1))
  assert jax.tree_util.tree_structure(adam.init(params)) == \
      jax.tree_util.tree_structure(optax.adam(0.1).init(params))
  config = TrainConfig(optimizer='sgd', learning_rate=1.0, lr_decay=0.5,
                       lr_decay_start=2, lr_decay_every=3, weight_decay=0.1,
                       grad_clip_norm=100.0)
  tx = make_optimizer(config)
  state = tx.init(params)
  steps = []
  for _ in range(7):
    grads = {'w': jnp.zeros(2)}
    updates, state = tx.update(grads, state, params)
    # With zero gradients the update is -lr * weight_decay * params.
    steps.append(float(-updates['w'][0] / 0.1))
  np.testing.assert_allclose(steps, [1, 1, 0.5, 0.5, 0.5, 0.25, 0.25],
                             rtol=1e-6)
  with pytest.raises(ValueError, match='needs lr_decay_every'):
    train_lib._check_config(TrainConfig(lr_decay=0.5))
  with pytest.raises(ValueError, match='optimizer must be one of'):
    train_lib._check_config(TrainConfig(optimizer='lamb'))


def test_lr_scales_multiply_only_the_named_parameters_updates():
  params = {'cell': {'scheduler': {'u': jnp.ones(3), 'b': jnp.ones(1)},
                     'kernel': jnp.ones((2, 3))},
            'readout': {'kernel': jnp.ones(3)}}
  grads = jax.tree_util.tree_map(
      lambda p: jnp.arange(1.0, p.size + 1).reshape(p.shape), params)
  plain = make_optimizer(TrainConfig(learning_rate=0.1, grad_clip_norm=2.0))
  scaled = make_optimizer(TrainConfig(learning_rate=0.1, grad_clip_norm=2.0,
                                      lr_scales=(('scheduler', 0.25),)))
  state_p, state_s = plain.init(params), scaled.init(params)
  for _ in range(3):
    want, state_p = plain.update(grads, state_p, params)
    got, state_s = scaled.update(grads, state_s, params)
    for path in (('cell', 'kernel'), ('readout', 'kernel')):
      np.testing.assert_array_equal(got[path[0]][path[1]],
                                    want[path[0]][path[1]])
    for leaf in ('u', 'b'):
      np.testing.assert_allclose(got['cell']['scheduler'][leaf],
                                 0.25 * want['cell']['scheduler'][leaf],
                                 rtol=1e-6)
  with pytest.raises(ValueError, match=r"no parameter is under \['sched'\]"):
    make_optimizer(TrainConfig(lr_scales=(('sched', 0.1),))).init(params)
  with pytest.raises(ValueError, match='lr_scales'):
    train_lib._check_config(TrainConfig(lr_scales=(('scheduler', -1.0),)))
  with pytest.raises(ValueError, match='pairs'):
    train_lib._check_config(TrainConfig(lr_scales=('scheduler',)))


def test_clip_apart_clips_each_group_by_its_own_norm():
  params = {'cell': {'scheduler': {'u': jnp.ones(4)}, 'kernel': jnp.ones(4)},
            'readout': jnp.ones(1)}
  grads = {'cell': {'scheduler': {'u': jnp.full(4, 50.0)},
                    'kernel': jnp.full(4, 0.1)}, 'readout': jnp.full(1, 0.3)}
  tx = make_optimizer(TrainConfig(optimizer='sgd', learning_rate=1.0,
                                  grad_clip_norm=1.0,
                                  clip_apart=('scheduler',)))
  updates, _ = tx.update(grads, tx.init(params), params)
  # The scheduler (norm 100) is clipped to norm 1; the rest (norm 0.3606)
  # is left alone, where one global clip would divide it by 100.
  np.testing.assert_allclose(-updates['cell']['scheduler']['u'],
                             np.full(4, 0.5), rtol=1e-6)
  np.testing.assert_allclose(-updates['cell']['kernel'], np.full(4, 0.1),
                             rtol=1e-6)
  np.testing.assert_allclose(-updates['readout'], [0.3], rtol=1e-6)
  # Over the limit, the rest is clipped by its own norm too.
  big = jax.tree_util.tree_map(lambda g: 10 * g, grads)
  updates, _ = tx.update(big, tx.init(params), params)
  rest = np.concatenate([updates['cell']['kernel'], updates['readout']])
  np.testing.assert_allclose(np.linalg.norm(rest), 1.0, rtol=1e-6)
  np.testing.assert_allclose(rest / rest[-1], np.r_[np.full(4, 1 / 3), 1],
                             rtol=1e-5)
  with pytest.raises(ValueError, match='needs grad_clip_norm'):
    train_lib._check_config(TrainConfig(clip_apart=('scheduler',)))
  with pytest.raises(ValueError, match=r"clip_apart: no parameter is under"):
    make_optimizer(TrainConfig(grad_clip_norm=1.0,
                               clip_apart=('gate',))).init(params)


def test_training_logs_the_gradient_norm_of_each_group_clipped_apart(
    tmp_path):
  result = train_and_evaluate(
      _toy_experiment([], []), _config(grad_clip_norm=1.0, clip_apart=('w',)),
      tmp_path)
  for h in result.history:   # 'w' is every parameter: the two norms agree
    assert h['train_grad_norm_w'] == pytest.approx(h['train_grad_norm'])
    assert h['train_grad_norm'] > 0


# ----------------------------------------------------------------------------
# Language models.


def _lm(vocab=7, hidden=8, **kw):
  return language_model(cells.gru(hidden), vocab, embed_size=hidden, **kw)


def test_bptt_windows_are_contiguous_and_the_state_is_carried(tmp_path):
  stream = np.arange(200) % 7
  task = lm.lm_experiment(_lm(), stream, stream[:100], batch_size=2,
                          seq_len=5, eval_batch_size=2)
  exp = task.experiment
  table, per_epoch = lm.bptt_rows(stream, 2, 5)
  assert per_epoch == (100 - 1) // 5
  b0 = exp.sample(None, jnp.int32(0))
  b1 = exp.sample(None, jnp.int32(1))
  np.testing.assert_array_equal(b0.windows, table[:, 0:6])
  np.testing.assert_array_equal(b1.windows, table[:, 5:11])
  assert bool(b0.reset) and not bool(b1.reset)
  assert bool(exp.sample(None, jnp.int32(per_epoch)).reset)   # a new epoch
  # The carried state is the final state of the previous window.
  params = exp.init(jax.random.key(0))
  carry = exp.init_carry(2)
  info = StepInfo(jax.random.key(1), jnp.int32(1), carry)
  _, (_, after_b0) = exp.loss(params, b0, info._replace(step=jnp.int32(0)))
  model = _lm()
  _, _, want = model.apply(params, b0.windows[:, :-1], return_state=True)
  np.testing.assert_allclose(after_b0.h, want.h, rtol=1e-6)
  # Two windows with the carry equal one window of twice the length.
  _, (_, after_b1) = exp.loss(params, b1, info._replace(carry=after_b0))
  _, _, want = model.apply(params, table[:, 0:10], return_state=True)
  np.testing.assert_allclose(after_b1.h, want.h, rtol=1e-5)


def test_bptt_training_resumes_bit_exactly_with_dropout(tmp_path):
  stream = (np.arange(600) * 3) % 11
  def make():
    return lm.lm_experiment(
        _lm(vocab=11, output_dropout=0.3, input_dropout=0.2), stream,
        stream[:200], batch_size=4, seq_len=6).experiment
  config = _config(steps=8, eval_every=4, batch_size=4)
  full = train_and_evaluate(make(), config, tmp_path / 'full')
  train_and_evaluate(make(), _config(steps=4, eval_every=4, batch_size=4),
                     tmp_path / 'split')
  resumed = train_and_evaluate(make(), config, tmp_path / 'split')
  jax.tree_util.tree_map(np.testing.assert_array_equal, full.params,
                         resumed.params)
  assert full.metrics['bpc'] == resumed.metrics['bpc']


def test_stream_evaluation_counts_every_symbol_once():
  stream = np.arange(103) % 5
  task = lm.lm_experiment(_lm(vocab=5), stream, stream, batch_size=2,
                          seq_len=4, eval_batch_size=3, eval_seq_len=7)
  params = task.experiment.init(jax.random.key(0))
  result = task.evaluate_stream(params, stream)
  table, windows = lm.bptt_rows(stream, 3, 7)
  model = _lm(vocab=5)
  logits, _ = model.apply(params, table[:, :windows * 7])
  logp = jax.nn.log_softmax(logits)
  targets = table[:, 1:windows * 7 + 1]
  nll = -np.take_along_axis(np.asarray(logp), targets[..., None], -1).sum()
  assert result['bpc'] == pytest.approx(nll / targets.size / math.log(2),
                                        rel=1e-5)
  assert result['perplexity'] == pytest.approx(2 ** result['bpc'])


def test_regularizer_and_statistics_hooks():
  stream = np.arange(300) % 5
  calls = {}

  def regularizer(ys, inputs, step):
    calls['reg'] = (ys.shape, inputs.shape)
    return jnp.full(inputs.shape[0], 10.0, ys.dtype)   # the loss's dtype

  def statistics(ys, inputs):
    return {'h0': ys[..., 0], 'is_zero': (inputs == 0).astype(jnp.float32)}

  plain = lm.lm_experiment(_lm(vocab=5), stream, stream, batch_size=2,
                           seq_len=5, mode='windows').experiment
  hooked = lm.lm_experiment(_lm(vocab=5), stream, stream, batch_size=2,
                            seq_len=5, mode='windows', regularizer=regularizer,
                            statistics=statistics,
                            derived=lambda m: {'twice': 2 * m['is_zero']})
  params = plain.init(jax.random.key(0))
  batch = plain.sample(jax.random.key(1), jnp.int32(0))
  info = StepInfo(jax.random.key(2), jnp.int32(0))
  l0, _ = plain.loss(params, batch, info)
  l1, metrics = hooked.experiment.loss(params, batch, info)
  assert float(l1 - l0) == pytest.approx(10.0, rel=1e-5)
  assert calls['reg'] == ((2, 5, 8), (2, 5))
  assert float(metrics['is_zero']) == pytest.approx(
      float(np.mean(np.asarray(batch.windows[:, :-1]) == 0)))
  per = hooked.per_step(params, stream[:12])
  assert per['h0'].shape == (11,) and per['nll'].shape == (11,)
  evaluated = hooked.experiment.evaluate(params, 0)
  assert evaluated['is_zero'] == pytest.approx(0.2, abs=0.01)  # 1 in 5 ids
  assert evaluated['twice'] == 2 * evaluated['is_zero']


def test_language_model_tied_readout_and_dropout_only_with_a_key():
  model = _lm(readout='tied', output_dropout=0.5, embedding_dropout=0.5)
  params = model.init(jax.random.key(0))
  assert set(params) == {'cell', 'embedding', 'readout'}
  assert set(params['readout']) == {'bias'}
  tokens = jnp.array([[1, 2, 3, 1]])
  a, _ = model.apply(params, tokens)
  b, _ = model.apply(params, tokens)
  np.testing.assert_array_equal(a, b)                  # no key: no noise
  c, _ = model.apply(params, tokens, context=Context(key=jax.random.key(3)))
  assert not np.allclose(a, c)
  with pytest.raises(ValueError, match="needs an embedding"):
    language_model(cells.gru(4), 5, readout='tied')


# ----------------------------------------------------------------------------
# Fixed arrays.


def _arrays(n, task, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, 6, 3)).astype(np.float32)
  if task == 'classification':
    return x, (x[:, :, 0].sum(1) > 0).astype(np.int32)
  return x, np.cumsum(x[..., :2], axis=1).astype(np.float32)


@pytest.mark.parametrize('task', ['classification', 'regression'])
def test_array_experiment_reads_epochs_and_reports_its_metric(task,
                                                              tmp_path):
  out = 2 if task == 'classification' else 2
  model = sequence_model(cells.gru(8), output_size=out)
  splits = {'train': _arrays(40, task), 'valid': _arrays(9, task, 1),
            'test': _arrays(7, task, 2)}
  built = supervised.array_experiment(model, splits, task=task, batch_size=8,
                                      eval_batch_size=4)
  exp = built.experiment
  assert built.steps_per_epoch == 5
  # One epoch visits each example once, in an order drawn per epoch.
  key = jax.random.PRNGKey(3)
  rows = [np.asarray(exp.sample(key, jnp.int32(s)).inputs) for s in range(5)]
  seen = np.concatenate(rows).reshape(40, -1)
  assert len({r.tobytes() for r in seen}) == 40
  nxt = np.asarray(exp.sample(key, jnp.int32(5)).inputs)
  assert not np.array_equal(nxt, rows[0])
  result = train_and_evaluate(exp, _config(steps=10, eval_every=5,
                                           batch_size=8), tmp_path)
  metric = 'accuracy' if task == 'classification' else 'mse'
  assert {f'valid_{metric}', f'test_{metric}'} <= set(result.metrics)
  # The padded evaluation counts each example exactly once.
  x, y = splits['test']
  got = built.evaluate_split(result.params, 'test')
  pred, _ = built.predict(result.params, x)
  if task == 'classification':
    assert got['accuracy'] == pytest.approx(np.mean(pred.argmax(-1) == y))
    assert got['confusion'].sum() == 7
  else:
    assert got['mse'] == pytest.approx(np.mean((pred - y) ** 2), rel=1e-5)


def test_metrics_sums_by_hand():
  logits = jnp.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0]])
  labels = jnp.array([0, 0, 1])
  ce, correct, confusion = classification_sums(logits, labels,
                                               jnp.array([1, 1, 0]))
  assert float(correct) == 1.0
  np.testing.assert_array_equal(confusion, [[1, 1], [0, 0]])
  want = -(jax.nn.log_softmax(logits[0])[0] + jax.nn.log_softmax(logits[1])[0])
  assert float(ce) == pytest.approx(float(want))
  sq, count = squared_error_sums(jnp.ones((2, 3, 2)), jnp.zeros((2, 3, 2)),
                                 jnp.array([1.0, 0.0]))
  assert (float(sq), float(count)) == (6.0, 6.0)


# ----------------------------------------------------------------------------
# Stacked cells.


def test_stack_equals_its_layers_applied_in_turn():
  layers = [cells.lstm(5), cells.gru(4)]
  cell = stack(layers)
  params = cell.init(jax.random.key(0), 3)
  assert params['layer_1']['input_kernel'].shape == (5, 12)
  x = jnp.ones((2, 3))
  state, out = cell.apply(params, cell.initial_state(2), x)
  assert isinstance(out, StackOutput) and out.output.shape == (2, 4)
  s0, h0 = layers[0].apply(params['layer_0'], layers[0].initial_state(2), x)
  s1, h1 = layers[1].apply(params['layer_1'], layers[1].initial_state(2), h0)
  np.testing.assert_allclose(out.output, h1, rtol=1e-6)
  np.testing.assert_allclose(state[0].c, s0.c, rtol=1e-6)
  # Dropout between layers only with a key, and the same mask every step.
  drop = stack(layers, dropout=0.5)
  ctx = Context(key=jax.random.key(1))
  _, a = drop.apply(params, drop.initial_state(2), x, ctx)
  _, b = drop.apply(params, drop.initial_state(2), x, ctx)
  np.testing.assert_array_equal(a.output, b.output)
  assert not np.allclose(a.output, out.output)
  with pytest.raises(ValueError, match='non-empty sequence'):
    stack([])
  json.dumps(jax.tree_util.tree_map(lambda a: a.shape, params))
