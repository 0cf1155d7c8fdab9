"""The flax.nnx modules: equal to the pure cells, and usable as NNX modules."""

import inspect
import textwrap

import _methods
import chex
from flax import nnx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
import pytest

import vcrnn_jax
from vcrnn_jax import act, cells, ponder, registry, rehn, vc
from vcrnn_jax import nnx as vnnx
from vcrnn_jax.core import Context, cell_output
from vcrnn_jax.unroll import unroll

B, T, D, H = 2, 3, 3, 4
TOL = dict(rtol=1e-5, atol=1e-6)


def _xs(shape=(B, T, D), seed=1):
  return jax.random.normal(jax.random.key(seed), shape, jnp.float32)


# Every method of the registry's table (its example: non-default options
# that must reach the cell), and ACT with a readout around ACT without one
# around Elman.
CASES = {
    **{name: (lambda r, name=name: _methods.nnx_module(name, D, H, r),
              lambda name=name: _methods.pure(name, H))
       for name in _methods.NAMES},
    # Every wrapper's module as nnx.module_for makes it from the row.
    **{f'made_{name}': (
        lambda r, name=name: _methods.nnx_module(name, D, H, r, make=True),
        lambda name=name: _methods.pure(name, H))
       for name in _methods.WRAPPERS},
    'act_of_act': (lambda r: vnnx.ACT(
        vnnx.ACT(vnnx.Elman(D + 2, H, rngs=r), max_steps=2, loop='scan',
                 rngs=r), output_size=2, max_steps=2, halting_bias=0.0,
        loop='scan', rngs=r),
                   lambda: act.adaptive(
                       act.adaptive(cells.elman(H), None, max_steps=2,
                                    loop='scan'),
                       2, max_steps=2, halting_bias=0.0, loop='scan')),
}


def _fast_jit(f, **kwargs):
  # These small programs run once: compile time is nearly all their cost,
  # and XLA's optimisation level 0 compiles them about 40% faster.
  return jax.jit(f, compiler_options={'xla_backend_optimization_level': 0},
                 **kwargs)


@nnx.jit
def _call(module, carry, x):
  return module(carry, x)


def _loss(ys):
  return jnp.sum(cell_output(ys) ** 2)


# flax >= 0.11 requires ``wrt`` and passes the model to ``update``.
_NEW_OPTIMIZER = 'model' in inspect.signature(nnx.Optimizer.update).parameters


def _optimizer(model, tx):
  if _NEW_OPTIMIZER:
    return nnx.Optimizer(model, tx, wrt=nnx.Param)
  return nnx.Optimizer(model, tx)


def _update(optimizer, model, grads):
  if _NEW_OPTIMIZER:
    optimizer.update(model, grads)
  else:
    optimizer.update(grads)


# ----------------------------------------------------------------------------
# Every module under flax.nnx.RNN equals its pure cell under unroll.


@pytest.mark.parametrize('name', sorted(CASES))
def test_nnx_rnn_equals_unroll_and_a_step_changes_every_param(name):
  make, pure = CASES[name]
  module = make(nnx.Rngs(0))
  cell = pure()
  params = vnnx.to_params(module)
  chex.assert_trees_all_equal_shapes_and_dtypes(
      params, cell.init(jax.random.key(0), D))
  xs = _xs()

  def loss_fn(module):
    carry, ys = nnx.RNN(module, return_carry=True)(xs)
    return _loss(ys), (carry, ys)

  def pure_loss(params):
    state, ys = unroll(cell, params, cell.initial_state(B), xs)
    return _loss(ys), (state, ys)

  optimizer = _optimizer(module, optax.sgd(0.1))
  graphdef, variables = nnx.split((module, optimizer))

  # The functional form of nnx.jit, to compile at XLA level 0.
  @_fast_jit
  def step(variables):
    module, optimizer = nnx.merge(graphdef, variables)
    grads, aux = nnx.grad(loss_fn, has_aux=True)(module)
    _update(optimizer, module, grads)
    want = jax.grad(pure_loss, has_aux=True)(params)
    return nnx.state((module, optimizer)), (grads, aux), want

  variables, (grads, (carry, ys)), (want_grads, (state, want)) = step(
      variables)
  nnx.update((module, optimizer), variables)
  chex.assert_trees_all_close(ys, want, **TOL)
  chex.assert_trees_all_close(carry, state, **TOL)
  chex.assert_trees_all_close(vnnx.to_params(grads), want_grads, **TOL)
  # The optimizer step moved every param (a zero gradient would not).
  moved = jax.tree_util.tree_map(lambda a, b: bool(jnp.any(a != b)),
                                 vnnx.to_params(module), params)
  assert all(jax.tree_util.tree_leaves(moved)), moved


def test_public_api_exports_nnx():
  assert vcrnn_jax.nnx is vnnx
  assert all(hasattr(vnnx, name) for name in vnnx.__all__)


@pytest.mark.parametrize('name', _methods.NAMES)
def test_every_factory_option_is_a_constructor_argument(name):
  entry = registry.METHODS[name]
  module = vnnx.module_for(entry)
  args = inspect.signature(module.__init__).parameters
  assert 'rngs' in args and 'deterministic' in args, module.__name__
  for arg in inspect.signature(entry.factory).parameters:
    arg = 'hidden_features' if arg == 'hidden_size' else arg
    assert arg in args, (module.__name__, arg)


# ----------------------------------------------------------------------------
# Params: the pure tree, both ways.


def test_params_convert_both_ways():
  module = vnnx.VCGRU(D, H, rngs=nnx.Rngs(0))
  cell = vc.vcgru(H)
  # A "checkpoint" of the pure cell, in float64 as a binary might save it.
  params = jax.tree_util.tree_map(
      lambda a: a.astype(jnp.float64), cell.init(jax.random.key(7), D))
  vnnx.from_params(module, params)
  got = vnnx.to_params(module)
  chex.assert_trees_all_close(got, params)
  assert got['scheduler']['bias'].dtype == jnp.float32  # the module's dtype
  # The NNX state has the pure tree's paths.
  assert set(_pure(nnx.state(module, nnx.Param))) == set(params)
  x = _xs()[:, 0]
  _, y = _call(module, module.initialize_carry(x.shape), x)
  _, want = _fast_jit(cell.apply)(got, cell.initial_state(B), x,
                                  Context(step=jnp.zeros((), jnp.int32)))
  chex.assert_trees_all_close(y, want)
  del params['scheduler']
  with pytest.raises(ValueError, match=r"missing \[\"\['scheduler'\]"):
    vnnx.from_params(module, params)
  bad = cells.gru(H).init(jax.random.key(0), D + 1)
  with pytest.raises(ValueError, match=r"\['input_kernel'\] have shape"):
    vnnx.from_params(vnnx.GRU(D, H, rngs=nnx.Rngs(0)), bad)


@pytest.mark.parametrize('name', _methods.WRAPPERS + tuple(
    f'made_{n}' for n in _methods.WRAPPERS))
def test_wrapper_params_convert_both_ways(name):
  make, pure = CASES[name]
  module = make(nnx.Rngs(0))
  params = pure().init(jax.random.key(7), D)
  vnnx.from_params(module, params)
  chex.assert_trees_all_close(vnnx.to_params(module), params)
  assert set(_pure(nnx.state(module, nnx.Param))) == set(params)
  del params['cell']
  with pytest.raises(ValueError, match=r"missing \[\"\['cell'\]"):
    vnnx.from_params(module, params)


def test_pondernet_sample_draws_its_key_as_dropout():
  rngs = nnx.Rngs(0)
  module = vnnx.PonderNet(vnnx.GRU(D + 1, H, rngs=rngs), max_steps=3,
                          inference='sample', loop='scan', rngs=rngs)
  rnn = vnnx.RNN(module)
  xs = _xs()
  ctx = Context(key=jax.random.key(3))
  cell = ponder.pondernet(cells.gru(H), 1, max_steps=3, inference='sample',
                          loop='scan')
  _, want = unroll(cell, vnnx.to_params(module), cell.initial_state(B), xs,
                   context=ctx)
  chex.assert_trees_all_close(rnn(xs, context=ctx), want, **TOL)
  assert rnn(xs).steps.shape == (B, T)        # a key of its own stream
  module.eval()
  with pytest.raises(ValueError, match='context.key is None'):
    rnn(xs)


def _pure(state):
  return vnnx.to_params(state)


def test_wrappers_check_the_modules_they_wrap():
  rngs = nnx.Rngs(0)
  with pytest.raises(ValueError, match=r'layer_1.*have shape'):
    vnnx.Stack([vnnx.GRU(D, H, rngs=rngs), vnnx.GRU(H + 1, H, rngs=rngs)],
               rngs=rngs)
  with pytest.raises(ValueError, match='first-step flag'):
    vnnx.ACT(vnnx.GRU(1, H, rngs=rngs), rngs=rngs)
  for wrapper in (vnnx.PonderNet, vnnx.Repeat):
    with pytest.raises(ValueError, match='first-step flag'):
      wrapper(vnnx.GRU(1, H, rngs=rngs), rngs=rngs)
  with pytest.raises(ValueError, match='wraps a vcrnn_jax.nnx module'):
    vnnx.Skip(object(), rngs=rngs)
  with pytest.raises(ValueError, match='neither a .params. nor'):
    vnnx.GRU(D, H, rngs=nnx.Rngs(dropout=0))


# ----------------------------------------------------------------------------
# Conventions shared with flax's cells.


def test_leading_batch_axes_and_flax_lstm_carry():
  module = vnnx.LSTM(D, H, rngs=nnx.Rngs(0))
  xs = _xs((2, 2, D))
  carry = module.initialize_carry(xs.shape)
  assert carry.h.shape == (2, 2, H)
  new, y = _call(module, carry, xs)
  _, flat_y = _call(module, module.initialize_carry((4, D)),
                    xs.reshape((4, D)))
  chex.assert_trees_all_close(y, flat_y.reshape((2, 2, H)), **TOL)
  # A plain (c, h) tuple, as flax.nnx.LSTMCell makes, is accepted.
  tuple_new, _ = _call(module, (carry.c, carry.h), xs)
  chex.assert_trees_all_close(tuple_new, new)
  # No batch axis at all.
  _, y1 = _call(module, module.initialize_carry((D,)), xs[0, 0])
  assert y1.shape == (H,)
  with pytest.raises(ValueError, match='carry has shapes'):
    module(module.initialize_carry((3, D)), xs)


# ----------------------------------------------------------------------------
# Padding: vcrnn_jax.nnx.RNN passes `active` to the cell at every step.


@pytest.mark.parametrize('name', ['ei_rehn', 'vcgru'])
def test_rnn_with_seq_lengths_equals_unroll_with_lengths(name):
  make, pure = CASES[name]
  module = make(nnx.Rngs(0))
  cell = pure()
  xs, lengths = _xs(), jnp.array([3, 1])
  run = nnx.jit(lambda m, xs, n: vnnx.RNN(m, return_carry=True)(
      xs, seq_lengths=n))
  carry, ys = run(module, xs, lengths)
  ctx = Context(step=jnp.zeros((), jnp.int32))
  state, want = _fast_jit(unroll, static_argnums=0)(
      cell, vnnx.to_params(module), cell.initial_state(B), xs, lengths,
      context=ctx)
  chex.assert_trees_all_close(ys, want, **TOL)
  chex.assert_trees_all_close(carry, state, **TOL)


def test_rnn_skips_pondering_on_padding_where_flax_rnn_does_not():
  module = vnnx.ACT(vnnx.GRU(D + 1, H, rngs=nnx.Rngs(0)), max_steps=4,
                    halting_bias=-2.0, loop='scan', rngs=nnx.Rngs(1))
  xs = _xs((4, T, D))
  lengths = jnp.array([3, 1, 0, 2])

  @nnx.jit
  def run(module, xs):
    ours = vnnx.RNN(module, return_carry=True)(xs, seq_lengths=lengths)
    theirs = nnx.RNN(module, return_carry=True)(xs, seq_lengths=lengths)
    # Two leading batch axes, time first.
    time_major = vnnx.RNN(module, time_major=True)(
        jnp.moveaxis(xs.reshape((2, 2, T, D)), 2, 0),
        seq_lengths=lengths.reshape((2, 2)))
    return ours, theirs, time_major

  (carry, out), (flax_carry, flax_out), out_tm = run(module, xs)
  pure = act.adaptive(cells.gru(H), None, max_steps=4, halting_bias=-2.0,
                      loop='scan')
  state, want = _fast_jit(unroll, static_argnums=0)(
      pure, vnnx.to_params(module), pure.initial_state(4), xs, lengths)
  chex.assert_trees_all_close(out, want, **TOL)
  chex.assert_trees_all_close(carry, state, **TOL)
  pad = np.arange(T) >= np.asarray(lengths)[:, None]
  np.testing.assert_array_equal(np.asarray(out.steps)[pad], 0)
  assert np.all(np.asarray(flax_out.steps)[pad] > 1)   # ponders on padding
  np.testing.assert_allclose(np.asarray(out.output)[~pad],
                             np.asarray(flax_out.output)[~pad], rtol=1e-5)
  # Both carries are the one after each row's last real step; for an empty
  # row flax's is the last step's, ours the initial carry.
  real = np.asarray(lengths) > 0
  chex.assert_trees_all_close(carry.h[real], flax_carry.h[real], **TOL)
  np.testing.assert_array_equal(carry.h[~real], 0.0)
  chex.assert_trees_all_close(
      jnp.moveaxis(out_tm.output, 0, 2).reshape(out.output.shape),
      out.output, **TOL)
  with pytest.raises(ValueError, match='seq_lengths must be integers'):
    vnnx.RNN(module)(xs, seq_lengths=jnp.array([1, 2]))


# ----------------------------------------------------------------------------
# Dropout follows train() / eval(); the training step drives VC's sharpness.


def test_dropout_on_in_train_off_in_eval():
  cell = vnnx.RHN(D, H, 2, input_dropout=0.3, state_dropout=0.5,
                  rngs=nnx.Rngs(params=0, dropout=1))
  pure = rehn.rhn(H, 2, input_dropout=0.3, state_dropout=0.5)
  rnn = vnnx.RNN(cell)
  run = nnx.jit(lambda rnn, xs: rnn(xs))
  ref = _fast_jit(lambda p, xs, key: unroll(
      pure, p, pure.initial_state(B), xs, context=Context(key=key))[1])
  params, xs = vnnx.to_params(cell), _xs()
  # Train: one key per sequence from the 'dropout' stream, masks shared
  # over time as in unroll; each call draws a new key.
  key = nnx.clone(cell).rngs()
  first = run(rnn, xs)
  chex.assert_trees_all_close(first, ref(params, xs, key), **TOL)
  assert not np.allclose(run(rnn, xs), first)
  rnn.eval()
  assert cell.deterministic
  off = run(rnn, xs)
  chex.assert_trees_all_close(off, ref(params, xs, None), **TOL)
  chex.assert_trees_all_close(run(rnn, xs), off)
  rnn.train()
  assert not np.allclose(run(rnn, xs), off)
  # flax.nnx.RNN calls the cell once per step, and each call draws a key:
  # the first step uses the key RNN would use for all, the others new ones.
  twin = nnx.clone(cell)
  ours = run(rnn, xs)
  theirs = nnx.jit(lambda c, xs: nnx.RNN(c)(xs))(twin, xs)
  chex.assert_trees_all_close(theirs[:, 0], ours[:, 0], **TOL)
  assert not np.allclose(theirs[:, 1:], ours[:, 1:])
  if hasattr(nnx, 'view'):                      # flax >= 0.12
    chex.assert_trees_all_close(run(nnx.view(rnn, deterministic=True), xs),
                                off)


def test_wrappers_draw_the_key_of_the_cells_inside():
  rngs = nnx.Rngs(0)
  cell = vnnx.ACT(vnnx.Stack([vnnx.SRHN(D + 1, H, 2, state_dropout=0.5,
                                        rngs=rngs)], rngs=rngs),
                  max_steps=2, loop='scan', rngs=rngs)
  x = _xs()[:, 0]
  carry = cell.initialize_carry(x.shape)
  train = _call(cell, carry, x)[1].output
  cell.eval()
  off = _call(cell, carry, x)[1].output
  pure = cell.make_cell()
  want = _fast_jit(pure.apply)(vnnx.to_params(cell), carry, x)[1].output
  chex.assert_trees_all_close(off, want, **TOL)
  assert not np.allclose(train, off)


def test_vc_sharpness_follows_the_step_variable():
  schedule = vc.paper_sharpness(steps_per_epoch=2)
  cell = vnnx.VCRNN(D, H, sharpness=schedule, block_sizes=2,
                    rngs=nnx.Rngs(0))
  rnn = vnnx.RNN(cell)
  pure = vc.vcrnn(H, sharpness=schedule, block_sizes=2)
  traces = []

  @nnx.jit
  def run(rnn, xs, step):
    traces.append(1)
    vnnx.set_step(rnn, step)           # a traced step: no recompilation
    return rnn(xs)

  ref = _fast_jit(lambda p, xs, step: unroll(
      pure, p, pure.initial_state(B), xs, context=Context(step=step))[1])
  params, xs = vnnx.to_params(cell), _xs()
  assert int(cell.step[...]) == 0
  at_0 = run(rnn, xs, 0)
  at_9 = run(rnn, xs, 9)
  assert len(traces) == 1 and int(cell.step[...]) == 9
  chex.assert_trees_all_close(at_0, ref(params, xs, jnp.int32(0)), **TOL)
  chex.assert_trees_all_close(at_9, ref(params, xs, jnp.int32(9)), **TOL)
  assert not np.allclose(at_0.output, at_9.output)
  # eval() keeps the soft mask at the step's sharpness (the final one).
  rnn.eval()
  chex.assert_trees_all_close(nnx.jit(lambda r, xs: r(xs))(rnn, xs), at_9)
  # The hard inference path on the same params.
  hard = vc.vcrnn(H, hard=True, block_sizes=2)
  _, want = _fast_jit(unroll, static_argnums=0)(hard, params,
                                                hard.initial_state(B), xs)
  rnn.set_attributes(hard=True)
  chex.assert_trees_all_close(nnx.jit(lambda r, xs: r(xs))(rnn, xs), want,
                              **TOL)
  if hasattr(nnx, 'view'):                      # flax >= 0.12
    rnn.set_attributes(hard=False)
    view = nnx.view(rnn, hard=True)
    assert view.cell.hard and not rnn.cell.hard


# ----------------------------------------------------------------------------
# Training with nnx.jit and nnx.Optimizer; checkpoints with Orbax.


class _Model(nnx.Module):
  """A VC layer above a layer with dropout, and a readout."""

  def __init__(self, rngs):
    self.rnn = vnnx.RNN(vnnx.Stack([
        vnnx.RHN(D, H, 1, state_dropout=0.5, rngs=rngs),
        vnnx.VCRNN(H, H, sharpness=vc.paper_sharpness(1), rngs=rngs)],
        rngs=rngs))
    self.readout = nnx.Linear(H, 1, rngs=rngs)

  def __call__(self, xs):
    return self.readout(self.rnn(xs).output)


@pytest.fixture(scope='module')
def trained():
  """A _Model after two jitted training steps, and the traces they took."""
  model = _Model(nnx.Rngs(params=0, dropout=1))
  optimizer = _optimizer(model, optax.sgd(1e-2, momentum=0.9))
  traces = []

  @nnx.jit
  def train_step(model, optimizer, xs):
    traces.append(1)
    vnnx.set_step(model, optimizer.step[...])   # updates done so far

    def loss_fn(model):
      return jnp.mean(model(xs) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    _update(optimizer, model, grads)
    return loss

  for seed in (1, 2):
    train_step(model, optimizer, _xs(seed=seed))
  return model, traces


def test_jitted_training_step_does_not_recompile(trained):
  model, traces = trained
  assert len(traces) == 1
  vc_cell = model.rnn.cell.layer_1
  assert int(vc_cell.step[...]) == 1           # set inside the second step
  assert int(model.rnn.cell.rngs.count[...]) == 2  # one key per step


def test_state_round_trips_through_orbax(trained, tmp_path):
  model, _ = trained
  checkpointer = ocp.StandardCheckpointer()
  checkpointer.save(tmp_path / 'state', nnx.state(model))
  checkpointer.wait_until_finished()
  fresh = _Model(nnx.Rngs(params=5, dropout=6))
  target = jax.tree_util.tree_map(ocp.utils.to_shape_dtype_struct,
                                  nnx.state(fresh))
  nnx.update(fresh, checkpointer.restore(tmp_path / 'state', target))
  chex.assert_trees_all_equal(vnnx.to_params(fresh), vnnx.to_params(model))
  assert int(fresh.rnn.cell.layer_1.step[...]) == 1
  # The dropout streams are restored too: the next train-mode call draws
  # the same key in both.
  run = nnx.jit(lambda m, xs: m(xs))
  chex.assert_trees_all_equal(run(fresh, _xs()), run(model, _xs()))


# ----------------------------------------------------------------------------
# The module docstring's training example.


@pytest.mark.skipif(not _NEW_OPTIMIZER,
                    reason='the example uses the flax >= 0.11 Optimizer API')
def test_docstring_training_example_runs():
  text = vnnx.__doc__.split('Example, an ACT-LSTM', 1)[1].split('::\n', 1)[1]
  scope = {}
  code = compile(textwrap.dedent(text), 'vcrnn_jax/nnx.py', 'exec')
  exec(code, scope)  # pylint: disable=exec-used
  # optax's adam raises a python float to its int32 count, which strict
  # dtype promotion refuses.
  with jax.numpy_dtype_promotion('standard'):
    model, losses = scope['train_parity'](steps=3, hidden=H, batch_size=8)
  assert len(losses) == 3 and np.all(np.isfinite(losses))
  start = scope['ParityModel'](4, H, rngs=nnx.Rngs(0))
  moved = jax.tree_util.tree_map(lambda a, b: bool(jnp.any(a != b)),
                                 vnnx.to_params(model.rnn.cell),
                                 vnnx.to_params(start.rnn.cell))
  assert all(jax.tree_util.tree_leaves(moved)), moved
