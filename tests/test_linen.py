"""The flax.linen wrappers as drop-ins for flax's own cells."""

import inspect

import _methods
import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vcrnn_jax
from vcrnn_jax import act, cells, linen, ponder, registry, rehn, repeat, vc
from vcrnn_jax.core import Context, cell_output
from vcrnn_jax.unroll import unroll

B, T, D, H = 3, 5, 4, 6


def _xs(shape=(B, T, D), seed=1):
  return jax.random.normal(jax.random.key(seed), shape, jnp.float32)


# Every method of the registry's table (its example: non-default options
# that must reach the cell), then cases beyond the table's: ACT on the while
# loop and without a readout.
CASES = {
    **{name: (lambda name=name: _methods.linen_module(name, H),
              lambda name=name: _methods.pure(name, H))
       for name in _methods.NAMES},
    # Every wrapper's module as linen.module_for makes it from the row.
    **{f'made_{name}': (
        lambda name=name: _methods.linen_module(name, H, make=True),
        lambda name=name: _methods.pure(name, H))
       for name in _methods.WRAPPERS},
    'act_no_readout': (lambda: linen.ACT(linen.GRU(H), max_steps=5),
                       lambda: act.adaptive(cells.gru(H), None, max_steps=5)),
}


# ----------------------------------------------------------------------------
# Every module equals its pure cell under vcrnn_jax.unroll.


@pytest.mark.parametrize('name', sorted(CASES))
def test_module_under_nn_rnn_equals_unroll(name):
  module, pure = CASES[name]
  xs = _xs()
  rnn = nn.RNN(module(), return_carry=True)
  variables = rnn.init(jax.random.key(0), xs)
  carry, ys = rnn.apply(variables, xs)
  cell = pure()
  params = variables['params']['cell']['cell']
  chex.assert_trees_all_equal_shapes(params, cell.init(jax.random.key(0), D))
  state, want = unroll(cell, params, cell.initial_state(B), xs)
  chex.assert_trees_all_close(ys, want, rtol=1e-6, atol=1e-6)
  chex.assert_trees_all_close(carry, state, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('name', sorted(CASES))
def test_padding_aware_rnn_equals_unroll_with_lengths(name):
  module, pure = CASES[name]
  xs = _xs()
  lengths = jnp.array([5, 2, 0])
  rnn = linen.RNN(module(), return_carry=True)
  variables = rnn.init(jax.random.key(0), xs)
  ctx = Context(step=jnp.asarray(3, jnp.int32))
  carry, ys = rnn.apply(variables, xs, seq_lengths=lengths, context=ctx)
  cell = pure()
  state, want = unroll(cell, variables['params']['cell']['cell'],
                       cell.initial_state(B), xs, lengths, context=ctx)
  chex.assert_trees_all_close(ys, want, rtol=1e-6, atol=1e-6)
  chex.assert_trees_all_close(carry, state, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('name', _methods.NAMES)
def test_every_factory_option_is_a_module_field(name):
  entry = registry.METHODS[name]
  module = linen.module_for(entry)
  fields = set(module.__dataclass_fields__)
  for arg in inspect.signature(entry.factory).parameters:
    arg = 'features' if arg == 'hidden_size' else arg
    assert arg in fields, (module.__name__, arg)


def test_wrappers_take_the_module_they_wrap_as_cell():
  # The pure API's and NNX's name; the params keep the pure tree.
  gru = linen.GRU(H)
  module = linen.Repeat(cell=gru, repetitions=2)
  assert module.cell == gru and module.cell.features == H
  assert module.clone().cell == gru
  xs = _xs()
  variables = module.init(jax.random.key(0),
                          module.initialize_carry(jax.random.key(0), (B, D)),
                          xs[:, 0])
  assert set(variables['params']) == {'cell'}
  chex.assert_trees_all_equal_shapes(
      variables['params']['cell'],
      repeat.repeat(cells.gru(H), 2).init(jax.random.key(0), D))
  with pytest.raises(TypeError, match="unexpected keyword argument 'inner'"):
    linen.ACT(inner=gru)   # pylint: disable=unexpected-keyword-arg
  # Built in a parent's setup, where Linen adopts what fields hold.

  class Model(nn.Module):
    def setup(self):
      self.rnn = nn.RNN(linen.Repeat(linen.GRU(H), repetitions=2))

    def __call__(self, xs):
      return self.rnn(xs)

  params = Model().init(jax.random.key(0), xs)['params']
  chex.assert_trees_all_equal_shapes(params['rnn']['cell'], variables['params'])
  with pytest.raises(ValueError, match='Skip wraps a vcrnn_jax.linen module, '
                     'got LSTMCell'):
    linen.Skip(nn.LSTMCell(H))


def test_module_options_reach_the_cell():
  xs = _xs()
  module = linen.EIREHN(H, max_depth=4, state_dropout=0.5,
                        param_dtype=jnp.float64)
  carry = module.initialize_carry(jax.random.key(0), (B, D))
  variables = module.init(jax.random.key(0), carry, xs[:, 0])
  params = variables['params']['cell']
  assert params['input_kernel'].dtype == jnp.float64
  ctx = Context(key=jax.random.key(2))
  _, y = module.apply(variables, carry, xs[:, 0], ctx)
  _, y_off = linen.EIREHN(H, max_depth=4, param_dtype=jnp.float64).apply(
      variables, carry, xs[:, 0], ctx)
  assert not np.allclose(y.output, y_off.output)  # dropout on with a key


def test_public_api_exports_vc():
  assert vcrnn_jax.vc is vc


# ----------------------------------------------------------------------------
# Initialisation: flax's defaults, every fused kernel per gate.


@pytest.mark.parametrize('factory,key,blocks', [
    (lambda i: cells.gru(H, kernel_init=i), 'input_kernel', 3),
    (lambda i: cells.lstm(H, kernel_init=i), 'input_kernel', 4),
    (lambda i: rehn.rhn(H, 2, kernel_init=i), 'input_kernel', 2),
    (lambda i: rehn.rhn(H, 2, coupled=False, kernel_init=i), 'input_kernel',
     3),
    (lambda i: rehn.srhn(H, 2, kernel_init=i), 'input_kernel', 2),
    (lambda i: rehn.srehn(H, 3, kernel_init=i), 'input_kernel', 2),
    (lambda i: rehn.ei_rehn(H, 3, 3, kernel_init=i), 'input_kernel', 2),
    (lambda i: vc.vcgru(H, block_sizes=3, kernel_init=i), 'input_kernel', 3),
])
def test_fused_input_kernels_are_initialised_per_gate(factory, key, blocks):
  # With an orthogonal initialiser each gate's [H, H] block is orthogonal; a
  # fused [H, k*H] draw would only have orthonormal rows.
  params = factory(jax.nn.initializers.orthogonal()).init(
      jax.random.key(0), H)
  kernel = np.asarray(params[key], np.float64)
  assert kernel.shape == (H, blocks * H)
  for block in np.split(kernel, blocks, axis=-1):
    np.testing.assert_allclose(block.T @ block, np.eye(H), atol=1e-5)


def test_lstm_default_initialisation_is_flax_lstm_cells():
  n_in, hidden = 256, 128
  ours = linen.lstm_params_to_flax(
      cells.lstm(hidden).init(jax.random.key(0), n_in))
  flax_cell = nn.LSTMCell(hidden)
  carry = flax_cell.initialize_carry(jax.random.key(0), (1, n_in))
  # flax's cell mixes no dtypes: the input is the carry's float32.
  ref = flax_cell.init(jax.random.key(0), carry,
                       jnp.ones((1, n_in), jnp.float32))['params']
  for name in ref:
    for leaf in ref[name]:
      got, want = np.asarray(ours[name][leaf]), np.asarray(ref[name][leaf])
      assert got.shape == want.shape
      # Same distribution: zero biases, LeCun-normal input kernels
      # (std 1/sqrt(in)), orthogonal recurrent blocks.
      np.testing.assert_allclose(got.std(), want.std(), rtol=0.05, atol=1e-7)
      if name.startswith('h') and leaf == 'kernel':
        np.testing.assert_allclose(got.T @ got, np.eye(hidden), atol=1e-5)
  assert not np.any(ours['hf']['bias'])  # the forget bias starts at 0


def test_initialisers_are_module_fields():
  module = linen.LSTM(H, forget_bias=1.0,
                      kernel_init=nn.initializers.zeros,
                      bias_init=nn.initializers.ones)
  carry = module.initialize_carry(jax.random.key(0), (B, D))
  params = module.init(jax.random.key(0), carry, jnp.ones((B, D)))['params']
  np.testing.assert_array_equal(params['cell']['input_kernel'], 0.0)
  bias = np.split(np.asarray(params['cell']['bias']), 4)
  np.testing.assert_array_equal(bias[2], 2.0)   # ones + forget_bias
  np.testing.assert_array_equal(bias[0], 1.0)


# ----------------------------------------------------------------------------
# Carry order, width from the carry, batch axes.


def test_lstm_carry_unpacks_in_flax_order():
  xs = _xs()
  cell = cells.lstm(H)
  params = cell.init(jax.random.key(0), D)
  flax_cell = nn.LSTMCell(H)
  flax_params = linen.lstm_params_to_flax(params)
  state = cell.initial_state(B)
  carry = flax_cell.initialize_carry(jax.random.key(0), (B, D))
  for t in range(T):
    state, _ = cell.apply(params, state, xs[:, t])
    carry, _ = flax_cell.apply({'params': flax_params}, carry, xs[:, t])
  c, h = state                      # flax: c, h = carry
  chex.assert_trees_all_close((c, h), carry, atol=1e-6)
  chex.assert_trees_all_close(linen.lstm_state_to_flax(state), carry,
                              atol=1e-6)
  back = linen.lstm_state_from_flax(carry)
  assert isinstance(back, cells.LSTMState)
  chex.assert_trees_all_close(back, state, atol=1e-6)
  # A flax carry goes straight into our module and back out in its order.
  module = linen.LSTM(H)
  new, _ = module.apply({'params': {'cell': params}}, carry, xs[:, 0])
  want, _ = flax_cell.apply({'params': flax_params}, carry, xs[:, 0])
  chex.assert_trees_all_close(tuple(new), want, atol=1e-6)


def test_width_comes_from_the_carry_as_in_flax():
  # flax's seq2seq decoder: features is the vocabulary size, the carry is the
  # encoder's width.
  vocab, width = 13, 32
  x = jnp.ones((B, vocab), jnp.float32)   # the carry's dtype, as flax needs
  carry = linen.LSTM(width).initialize_carry(jax.random.key(0), (B, vocab))
  for module in (linen.LSTM(vocab), nn.LSTMCell(vocab)):
    variables = module.init(jax.random.key(0), carry, x)
    (c, h), y = module.apply(variables, carry, x)
    assert c.shape == h.shape == y.shape == (B, width)
  act_module = linen.ACT(linen.GRU(vocab), max_steps=3)
  variables = act_module.init(jax.random.key(0), carry.h, x)
  _, out = act_module.apply(variables, carry.h, x)
  assert out.output.shape == (B, width)


def test_carry_that_fits_no_width_is_a_one_line_error():
  module = linen.LSTM(8)
  bad = cells.LSTMState(c=jnp.zeros((B, 8)), h=jnp.zeros((B, 5)))
  with pytest.raises(ValueError, match=r'LSTM: the carry has shapes .*'
                     r'features=8'):
    module.init(jax.random.key(0), bad, jnp.ones((B, D)))


@pytest.mark.parametrize('factory', [
    lambda: cells.elman(H), lambda: cells.gru(H), lambda: cells.lstm(H),
    lambda: rehn.rhn(H, 2), lambda: rehn.srehn(H, 3),
    lambda: vc.vcrnn(H, block_sizes=3)])
def test_apply_checks_the_state_width(factory):
  cell = factory()
  params = cell.init(jax.random.key(0), D)
  state = jax.tree_util.tree_map(lambda a: jnp.zeros((B, H + 1), a.dtype),
                                 cell.initial_state(B))
  with pytest.raises(ValueError, match=rf'the state has width {H + 1} but '
                     rf'the cell has hidden_size {H}'):
    cell.apply(params, state, jnp.ones((B, D)))


@pytest.mark.parametrize('name', ['lstm', 'act', 'made_act', 'ei_rehn'])
def test_any_leading_batch_axes(name):
  module, _ = CASES[name]
  xs = _xs((2, 3, T, D))
  rnn = nn.RNN(module())
  variables = rnn.init(jax.random.key(0), xs)
  ys = rnn.apply(variables, xs)
  flat = rnn.apply(variables, xs.reshape((6, T, D)))
  chex.assert_trees_all_close(
      ys, jax.tree_util.tree_map(lambda a: a.reshape((2, 3) + a.shape[1:]),
                                 flat), rtol=1e-6, atol=1e-6)
  # No batch axis at all, as flax's cells allow.
  m = module()
  carry = m.initialize_carry(jax.random.key(0), (D,))
  v = m.init(jax.random.key(0), carry, xs[0, 0, 0])
  new, y = m.apply(v, carry, xs[0, 0, 0])
  assert cell_output(y).ndim == 1


# ----------------------------------------------------------------------------
# Padding inside a Flax model.


def test_padding_aware_rnn_skips_pondering_where_nn_rnn_does_not():
  xs = _xs()
  lengths = jnp.array([5, 2, 1])
  module = linen.ACT(linen.LSTM(H), max_steps=8, halting_bias=-2.0)
  ours = linen.RNN(module)
  variables = ours.init(jax.random.key(0), xs)
  out = ours.apply(variables, xs, seq_lengths=lengths)
  pad = np.arange(T)[None] >= np.asarray(lengths)[:, None]
  np.testing.assert_array_equal(np.asarray(out.ponder)[pad], 0.0)
  assert np.all(np.asarray(out.steps)[~pad] >= 1)
  flax_out = nn.RNN(module).apply(variables, xs, seq_lengths=lengths)
  assert np.all(np.asarray(flax_out.steps)[pad] > 1)  # ponders on padding
  # Real steps agree; the carry is the one after each row's last real step.
  np.testing.assert_allclose(np.asarray(out.output)[~pad],
                             np.asarray(flax_out.output)[~pad], rtol=1e-6)
  carry, _ = linen.RNN(module, return_carry=True).apply(
      variables, xs, seq_lengths=lengths)
  flax_carry, _ = nn.RNN(module, return_carry=True).apply(
      variables, xs, seq_lengths=lengths)
  chex.assert_trees_all_close(carry, flax_carry, rtol=1e-6)


def test_padding_aware_rnn_time_major_and_batch_axes():
  xs = _xs((2, 3, T, D))
  lengths = jnp.array([[5, 2, 0], [1, 3, 4]])
  rnn = linen.RNN(linen.ACT(linen.GRU(H), max_steps=4))
  variables = rnn.init(jax.random.key(0), xs)
  ys = rnn.apply(variables, xs, seq_lengths=lengths)
  flat = rnn.apply(variables, xs.reshape(6, T, D),
                   seq_lengths=lengths.reshape(6))
  chex.assert_trees_all_close(
      ys.output, flat.output.reshape((2, 3) + flat.output.shape[1:]),
      rtol=1e-6)
  tm = linen.RNN(linen.ACT(linen.GRU(H), max_steps=4), time_major=True)
  ys_tm = tm.apply(variables, jnp.moveaxis(xs, 2, 0), seq_lengths=lengths)
  chex.assert_trees_all_close(jnp.moveaxis(ys_tm.output, 0, 2), ys.output,
                              rtol=1e-6)
  with pytest.raises(ValueError, match='seq_lengths must be integers'):
    rnn.apply(variables, xs, seq_lengths=jnp.array([1, 2]))


# ----------------------------------------------------------------------------
# Gradients too, and ACT around ACT: the test the NNX modules have.


# Every method of the table (its examples run the 'scan' loop, which
# compiles faster; test_act and test_loops compare the loops' gradients),
# and ACT with a readout around ACT without one.
GRAD_CASES = dict(
    {k: v for k, v in CASES.items() if k != 'act_no_readout'},
    act_of_act=(
        lambda: linen.ACT(linen.ACT(linen.GRU(H), max_steps=3, loop='scan'),
                          output_size=2, max_steps=3, halting_bias=0.0,
                          loop='scan'),
        lambda: act.adaptive(
            act.adaptive(cells.gru(H), None, max_steps=3, loop='scan'), 2,
            max_steps=3, halting_bias=0.0, loop='scan')))


@pytest.mark.parametrize('name', sorted(GRAD_CASES))
def test_module_under_nn_rnn_gradients_equal_unroll(name):
  module, pure = GRAD_CASES[name]
  xs = _xs()
  rnn = nn.RNN(module(), return_carry=True)
  variables = rnn.init(jax.random.key(0), xs)
  cell = pure()

  def module_loss(variables):
    carry, ys = rnn.apply(variables, xs)
    return jnp.sum(cell_output(ys) ** 2), (carry, ys)

  def pure_loss(params):
    state, ys = unroll(cell, params, cell.initial_state(B), xs)
    return jnp.sum(cell_output(ys) ** 2), (state, ys)

  def both(variables):
    return (jax.grad(module_loss, has_aux=True)(variables),
            jax.grad(pure_loss, has_aux=True)(
                variables['params']['cell']['cell']))

  # Both sides in one program, compiled at XLA level 0: it runs once.
  both = jax.jit(both, compiler_options={'xla_backend_optimization_level': 0})
  (grads, (carry, ys)), (want_grads, (state, want)) = both(variables)
  chex.assert_trees_all_close(ys, want, rtol=1e-5, atol=1e-6)
  chex.assert_trees_all_close(carry, state, rtol=1e-5, atol=1e-6)
  chex.assert_trees_all_close(grads['params']['cell']['cell'], want_grads,
                              rtol=1e-5, atol=1e-6)


def test_pondernet_sample_takes_its_key_from_the_context():
  xs = _xs()
  module = linen.PonderNet(linen.GRU(H), max_steps=3, inference='sample',
                           loop='scan')
  rnn = linen.RNN(module, return_carry=True)
  ctx = Context(key=jax.random.key(3))
  variables = rnn.init(jax.random.key(0), xs, context=ctx)
  carry, ys = rnn.apply(variables, xs, context=ctx)
  cell = ponder.pondernet(cells.gru(H), 1, max_steps=3, inference='sample',
                          loop='scan')
  state, want = unroll(cell, variables['params']['cell']['cell'],
                       cell.initial_state(B), xs, context=ctx)
  chex.assert_trees_all_close(ys, want, rtol=1e-6, atol=1e-6)
  chex.assert_trees_all_close(carry, state, rtol=1e-6, atol=1e-6)
  with pytest.raises(ValueError, match='context.key is None'):
    rnn.apply(variables, xs)
