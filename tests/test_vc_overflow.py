"""VCRNN at the paper's width (D = 1024): a gradient whose sum of squares
overflows float32 still gives a clipped update.

At sharpness 1, Eq. 8's slope of ``e_t`` in ``m_t`` reaches ``lambda D / 4``
(256 at D = 1024), and the scheduler (Eq. 7) reads ``h_{t-1}``, so the
sensitivity of ``m_t`` to ``m_{t-1}`` can exceed 1 at every step and
backpropagation through 100 steps multiplies it. With scheduler weights of
standard deviation 1/16, the gradient's largest entry is about 1e24: every
entry finite, its sum of squares ``inf``. ``optax.clip_by_global_norm`` then
scales every update by ``1 / inf = 0``, and a run stops learning without an
error (what two VCRNN-1024 runs on a GPU did once the sharpness reached 1).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vcrnn_jax
from vcrnn_jax import vc
from vcrnn_jax.training import train

D, T, BATCH, VOCAB = 1024, 100, 2, 16


def _experiment() -> train.Experiment:
  cell = vc.vcrnn(D, sharpness=1.0)

  def init(key):
    readout = jax.random.normal(jax.random.key(2), (D,), jnp.float32) / 32
    params = {'cell': cell.init(key, input_size=VOCAB), 'readout': readout}
    # A scheduler that reads h_{t-1} with weights of std 1/16 (its init is
    # zero; training grows it).
    u = jax.random.normal(jax.random.key(3), (D, 1), jnp.float32) / 16
    params['cell']['scheduler']['recurrent_kernel'] = u
    return params

  def loss(params, batch, info):
    del info
    _, ys = vcrnn_jax.unroll(cell, params['cell'], cell.initial_state(BATCH),
                             batch)
    value = jnp.mean(jnp.sum(jnp.tanh(ys.output @ params['readout']), -1))
    return value, {}

  def sample(key, step):
    del step
    ids = jax.random.randint(key, (BATCH, T), 0, VOCAB)
    return jax.nn.one_hot(ids, VOCAB, dtype=jnp.float32)

  return train.Experiment(init, loss, sample, lambda params, step: {})


@pytest.fixture(scope='module')
def exploding():
  """``(experiment, state of the config, batch, gradient)`` at D = 1024."""
  exp = _experiment()
  params = exp.init(train.run_keys(0)[0])   # what initial_state builds
  batch = exp.sample(jax.random.key(1), 0)
  info = train.StepInfo(jax.random.key(4), jnp.int32(0))
  grads = jax.jit(jax.grad(lambda p: exp.loss(p, batch, info)[0]))(params)
  return exp, params, batch, grads


def _f64_norm(tree) -> float:
  return float(np.sqrt(sum(np.sum(np.square(np.asarray(g, np.float64)))
                           for g in jax.tree_util.tree_leaves(tree))))


def test_the_gradient_is_finite_and_its_sum_of_squares_overflows(exploding):
  _, _, _, grads = exploding
  leaves = jax.tree_util.tree_leaves(grads)
  assert all(bool(jnp.all(jnp.isfinite(g))) for g in leaves)
  squares = sum(jnp.sum(jnp.square(g)) for g in leaves)   # float32
  assert not np.isfinite(float(squares))
  assert 1e20 < _f64_norm(grads) < 1e37


def test_global_norm_is_the_float64_norm(exploding):
  _, _, _, grads = exploding
  norm = float(jax.jit(train.global_norm)(grads))
  np.testing.assert_allclose(norm, _f64_norm(grads), rtol=1e-5)


@pytest.mark.parametrize('clip_apart', [(), ('scheduler',)])
def test_a_step_is_clipped_to_the_bound_not_to_zero(exploding, clip_apart):
  exp, _, batch, grads = exploding
  config = train.TrainConfig(steps=1, batch_size=BATCH, learning_rate=1.0,
                             grad_clip_norm=1.0, clip_apart=clip_apart,
                             optimizer='sgd')
  tx, state = train.initial_state(exp, config)
  step = jax.jit(train.train_step, static_argnums=(0, 1),
                 static_argnames='clip_apart')
  new, metrics = step(exp, tx, state, batch, jax.random.key(4),
                      clip_apart=clip_apart)
  np.testing.assert_allclose(float(metrics['grad_norm']), _f64_norm(grads),
                             rtol=1e-5)
  assert float(metrics['grad_norm_rescaled']) == 1.0
  moved = jax.tree_util.tree_map(lambda a, b: a - b, state.params,
                                 new.params)   # SGD: the clipped gradient
  assert all(bool(jnp.all(jnp.isfinite(m)))
             for m in jax.tree_util.tree_leaves(moved))
  groups = ([moved['cell']['scheduler'],
             {k: v for k, v in moved['cell'].items() if k != 'scheduler'}
             | {'readout': moved['readout']}] if clip_apart else [moved])
  for group in groups:   # each group at the bound: its gradient is huge
    np.testing.assert_allclose(_f64_norm(group), 1.0, rtol=1e-3)
