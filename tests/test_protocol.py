"""The cell protocol as a user meets it: context, structured outputs, errors.

Every cell of the library is listed in ``ALL_CELLS``; each test that says
"every cell" runs on all of them, so a new cell is covered by adding it there.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vcrnn_jax
from vcrnn_jax import act, cells, linen, loops, ponder, rehn, skip, vc
from vcrnn_jax.core import (
  Cell,
  Context,
  cell_output,
  check_positive_int,
  fold_in,
  ignore_context,
)
from vcrnn_jax.models import sequence_model
from vcrnn_jax.unroll import unroll

B, T, D, H = 3, 4, 5, 6

# name -> factory(hidden_size, param_dtype) of every cell of the library.
ALL_CELLS = {
    'elman': lambda h, dtype: cells.elman(h, param_dtype=dtype),
    'gru': lambda h, dtype: cells.gru(h, param_dtype=dtype),
    'lstm': lambda h, dtype: cells.lstm(h, param_dtype=dtype),
    'act_gru': lambda h, dtype: act.adaptive(
        cells.gru(h, param_dtype=dtype), 4, max_steps=5),
    'act_act_gru': lambda h, dtype: act.adaptive(act.adaptive(
        cells.gru(h, param_dtype=dtype), 4, max_steps=3), 2, max_steps=3),
    'rhn': lambda h, dtype: rehn.rhn(h, 2, param_dtype=dtype),
    'rhn_uncoupled': lambda h, dtype: rehn.rhn(h, 2, coupled=False,
                                               param_dtype=dtype),
    'srhn': lambda h, dtype: rehn.srhn(h, 3, param_dtype=dtype),
    'srehn': lambda h, dtype: rehn.srehn(h, 4, param_dtype=dtype),
    'ei_rehn': lambda h, dtype: rehn.ei_rehn(h, 3, 5, param_dtype=dtype),
    'act_rhn': lambda h, dtype: act.adaptive(
        rehn.rhn(h, 2, param_dtype=dtype), 3, max_steps=3),
    'stack': lambda h, dtype: cells.stack(
        [cells.lstm(h, param_dtype=dtype),
         act.adaptive(cells.elman(h, param_dtype=dtype), 3, max_steps=4)]),
}


def _xs(dtype=jnp.float32, shape=(B, T, D), seed=0):
  return jax.random.normal(jax.random.key(seed), shape).astype(dtype)


@pytest.mark.parametrize('name', sorted(ALL_CELLS))
def test_sequence_model_on_every_cell(name):
  cell = ALL_CELLS[name](H, jnp.float32)
  model = sequence_model(cell, output_size=2)
  params = model.init(jax.random.key(0), D)
  logits, ys = jax.jit(model.apply)(params, _xs(), jnp.array([4, 2, 1]))
  assert logits.shape == (B, T, 2)
  assert cell_output(ys).shape[:2] == (B, T)
  # Padded steps give zero outputs (before the readout's bias).
  np.testing.assert_array_equal(cell_output(ys)[2, 1:], 0.0)


def test_act_around_act():
  cell = act.adaptive(act.adaptive(cells.gru(8), 6), 2)
  params = cell.init(jax.random.key(0), 5)
  state, out = jax.jit(cell.apply)(params, cell.initial_state(3),
                                   jnp.ones((3, 5)))
  assert out.output.shape == (3, 2) and out.steps.shape == (3,)
  assert params['output']['kernel'].shape == (6, 2)   # reads the inner output
  assert jax.tree_util.tree_structure(state) == jax.tree_util.tree_structure(
      cell.initial_state(3))


@pytest.mark.parametrize('name', sorted(ALL_CELLS))
def test_every_cell_in_bfloat16(name):
  cell = ALL_CELLS[name](H, jnp.bfloat16)
  params = cell.init(jax.random.key(0), D)
  assert {leaf.dtype for leaf in jax.tree_util.tree_leaves(params)} == {
      jnp.dtype(jnp.bfloat16)}
  # A float32 input is cast to the cell's dtype.
  state, ys = unroll(cell, params, cell.initial_state(B), _xs(jnp.float32))
  assert cell_output(ys).dtype == jnp.bfloat16
  assert all(leaf.dtype == jnp.bfloat16
             for leaf in jax.tree_util.tree_leaves(state))
  assert np.all(np.isfinite(np.asarray(cell_output(ys), np.float32)))


def test_bfloat16_init_draws_the_float32_distribution():
  f32 = cells.gru(H).init(jax.random.key(3), D)
  b16 = cells.gru(H, param_dtype=jnp.bfloat16).init(jax.random.key(3), D)
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_array_equal(
          np.asarray(a.astype(jnp.bfloat16), np.float32),
          np.asarray(b, np.float32)), f32, b16)


def test_context_reaches_every_step_and_fold_in_separates_keys():
  seen = []

  def apply(params, state, x, context=None):
    seen.append(context)
    return state, x

  cell = Cell(lambda key, n: {}, lambda b: jnp.zeros((b, 1)), apply)
  ctx = Context(step=jnp.int32(7), key=jax.random.key(1))
  unroll(cell, {}, cell.initial_state(2), jnp.ones((2, 3, 1)), context=ctx)
  assert seen and all(int(c.step) == 7 and c.active is None for c in seen)
  a, b = fold_in(ctx, 0), fold_in(ctx, 1)
  assert not np.array_equal(jax.random.key_data(a.key),
                            jax.random.key_data(b.key))
  assert fold_in(None, 3) == Context()


def test_ignore_context_adapts_a_three_argument_cell():
  inner = cells.elman(H)

  def apply(params, state, x):
    return inner.apply(params, state, x)

  cell = ignore_context(Cell(inner.init, inner.initial_state, apply))
  params = cell.init(jax.random.key(0), D)
  _, ys = unroll(cell, params, cell.initial_state(B), _xs(),
                 jnp.array([1, 2, 3]))
  _, want = unroll(inner, params, inner.initial_state(B), _xs(),
                   jnp.array([1, 2, 3]))
  np.testing.assert_array_equal(ys, want)


def test_cell_output_contract():
  x = jnp.ones((2, 3))
  assert cell_output(x) is x
  out = act.ACTOutput(output=x, ponder=x[:, 0], steps=x[:, 0],
                      remainder=x[:, 0])
  assert cell_output(out) is x
  with pytest.raises(ValueError, match='`output` array field'):
    cell_output({'h': x})


# ----------------------------------------------------------------------------
# Errors in words, early.


@pytest.mark.parametrize('name', ['elman', 'gru', 'lstm', 'act_gru', 'rhn',
                                  'srehn', 'ei_rehn'])
def test_apply_rejects_a_state_of_another_batch(name):
  cell = ALL_CELLS[name](H, jnp.float32)
  params = cell.init(jax.random.key(0), D)
  with pytest.raises(ValueError, match=r'state has batch .*x has batch 3'):
    cell.apply(params, cell.initial_state(2), jnp.ones((3, D)))


@pytest.mark.parametrize('name', ['elman', 'gru', 'lstm'])
def test_apply_rejects_a_sequence_and_names_unroll(name):
  cell = ALL_CELLS[name](H, jnp.float32)
  params = cell.init(jax.random.key(0), D)
  with pytest.raises(ValueError, match=r'\[batch, 5\].*unroll'):
    cell.apply(params, cell.initial_state(B), jnp.ones((B, T, D)))


def test_apply_rejects_a_state_of_another_dtype_and_casts_x():
  cell = cells.gru(H)
  params = cell.init(jax.random.key(0), D)
  state = jax.tree_util.tree_map(lambda a: a.astype(jnp.float64),
                                 cell.initial_state(B))
  with pytest.raises(ValueError, match='state is float64 but the params are '
                     'float32'):
    cell.apply(params, state, jnp.ones((B, D)))
  new, h = cell.apply(params, cell.initial_state(B),
                      jnp.ones((B, D), jnp.float64))
  assert h.dtype == jnp.float32 and new.h.dtype == jnp.float32


def test_unroll_names_a_time_major_input():
  cell = cells.gru(H)
  params = cell.init(jax.random.key(0), D)
  with pytest.raises(ValueError, match='time-major'):
    unroll(cell, params, cell.initial_state(B), _xs(shape=(T, B, D)))


@pytest.mark.parametrize('lengths,match', [
    (jnp.array([1, 5, 2]), r'in \[0, 4\]'),
    (jnp.array([1, -1, 2]), r'in \[0, 4\]'),
    (jnp.array([1.0, 2.0, 3.0]), 'integers'),
    (jnp.array([1, 2]), r'shape \[batch\]'),
])
def test_unroll_rejects_bad_lengths(lengths, match):
  cell = cells.gru(H)
  params = cell.init(jax.random.key(0), D)
  with pytest.raises(ValueError, match=match):
    unroll(cell, params, cell.initial_state(B), _xs(), lengths)


def test_sizes_accept_numpy_and_jax_integers_only():
  for size in (np.int64(8), np.int32(8), jnp.int32(8)):
    assert check_positive_int('hidden_size', size) == 8
    assert cells.gru(size).init(jax.random.key(0), np.int64(3))[
        'recurrent_kernel'].shape == (8, 8)
  for bad in (True, 8.0, 0, -1, '8'):
    with pytest.raises(ValueError, match='hidden_size must be a positive'):
      cells.gru(bad)


# Every bool option of a cell or a loop, as (name, build(value)).
BOOL_OPTIONS = [
    ('residual', lambda v: cells.elman(H, residual=v)),
    ('coupled', lambda v: rehn.rhn(H, 2, coupled=v)),
    ('hard', lambda v: vc.vcrnn(H, hard=v)),
    ('hard', lambda v: skip.skip(cells.elman(H), hard=v)),
    ('save_residuals', lambda v: loops.LoopConfig(save_residuals=v)),
]


@pytest.mark.parametrize('name,build', BOOL_OPTIONS,
                         ids=[f'{n}{i}' for i, (n, _) in
                              enumerate(BOOL_OPTIONS)])
def test_bool_options_accept_numpy_bools_only(name, build):
  # One validator (core.check_bool) for every bool option: NumPy's bools are
  # bools, and an int or a string is refused where it is written.
  for ok in (True, False, np.True_, np.False_):
    build(ok)
  for bad in (1, 0, 'yes', None):
    with pytest.raises(ValueError, match=f'{name} must be a bool, got'):
      build(bad)


def test_act_follows_the_inner_cells_dtype_by_default():
  cell = act.adaptive(cells.gru(H, param_dtype=jnp.float64), 2)
  params = cell.init(jax.random.key(0), D)
  assert params['output']['kernel'].dtype == jnp.float64
  cell = act.adaptive(cells.gru(H, param_dtype=jnp.float64), 2,
                      param_dtype=jnp.float32)
  assert cell.init(jax.random.key(0), D)['output']['kernel'].dtype == (
      jnp.float32)


@pytest.mark.parametrize('epsilon', [0.0, 1.0, -0.1])
def test_act_epsilon_must_be_in_the_open_interval(epsilon):
  with pytest.raises(ValueError, match=r'epsilon must be in \(0, 1\)'):
    act.adaptive(cells.gru(H), 2, epsilon=epsilon)


def test_act_a_nan_row_halts_instead_of_pondering_to_m():
  cell = act.adaptive(cells.elman(H), 2, max_steps=50, halting_bias=-4.0)
  params = cell.init(jax.random.key(0), D)
  x = jnp.ones((B, D)).at[1, 0].set(jnp.nan)
  _, out = jax.jit(cell.apply)(params, cell.initial_state(B), x)
  steps = np.asarray(out.steps)
  assert steps[1] == 1
  assert steps[0] > 1 and steps[0] == steps[2]   # the others ponder as usual


@pytest.mark.parametrize('compact_rows', [1, 2, 64])
def test_act_every_accepted_compact_rows_terminates(compact_rows):
  assert loops.stage_sizes((24,), 1) == (24, 12, 6, 3, 2, 1)
  cell = act.adaptive(cells.elman(H), 2, max_steps=20, halting_bias=-2.0,
                      loop=loops.LoopConfig(compact_rows=compact_rows))
  params = cell.init(jax.random.key(0), D)
  _, out = jax.jit(cell.apply)(params, cell.initial_state(8),
                               _xs(shape=(8, D)))
  ref = act.adaptive(cells.elman(H), 2, max_steps=20, halting_bias=-2.0)
  _, want = jax.jit(ref.apply)(params, cell.initial_state(8),
                               _xs(shape=(8, D)))
  np.testing.assert_array_equal(out.steps, want.steps)
  np.testing.assert_allclose(out.output, want.output, rtol=1e-6)


def test_ponder_cost_rejects_a_mask_of_the_wrong_shape():
  out = act.ACTOutput(output=jnp.ones((2, 3, 1)), ponder=jnp.ones((2, 3)),
                      steps=jnp.ones((2, 3), jnp.int32),
                      remainder=jnp.ones((2, 3)))
  np.testing.assert_array_equal(act.ponder_cost(out, jnp.ones((2, 3))), 3.0)
  with pytest.raises(ValueError, match=r'mask must have the shape of the '
                     r'ponder \(2, 3\)'):
    act.ponder_cost(out, jnp.ones((3, 2)))


# ----------------------------------------------------------------------------
# Flax wrappers.


def test_flax_act_module_equals_the_pure_cell_under_nn_rnn():
  xs = _xs()
  module = linen.ACT(linen.GRU(H), output_size=2, max_steps=6)
  rnn = nn.RNN(module)
  variables = rnn.init(jax.random.key(0), xs)
  out = rnn.apply(variables, xs)
  # Under nn.RNN the pure params are at ['params']['cell']['cell'].
  pure = act.adaptive(cells.gru(H), 2, max_steps=6)
  params = variables['params']['cell']['cell']
  _, want = unroll(pure, params, pure.initial_state(B), xs)
  np.testing.assert_allclose(out.output, want.output, rtol=1e-6)
  np.testing.assert_array_equal(out.steps, want.steps)


def test_flax_module_params_path_on_its_own():
  module = linen.GRU(H)
  carry = module.initialize_carry(jax.random.key(0), (B, D))
  variables = module.init(jax.random.key(0), carry, jnp.ones((B, D)))
  params = variables['params']['cell']
  _, h = cells.gru(H).apply(params, carry, jnp.ones((B, D)))
  _, want = module.apply(variables, carry, jnp.ones((B, D)))
  np.testing.assert_array_equal(h, want)


def test_public_api_exports_the_protocol():
  assert vcrnn_jax.Context is Context
  assert vcrnn_jax.cell_output is cell_output


@pytest.mark.parametrize('module,pure', [
    (lambda: linen.RHN(H, depth=2), lambda: rehn.rhn(H, 2)),
    (lambda: linen.RHN(H, depth=2, shared=True), lambda: rehn.srhn(H, 2)),
    (lambda: linen.SREHN(H, max_depth=4), lambda: rehn.srehn(H, 4)),
    (lambda: linen.EIREHN(H, max_depth=4), lambda: rehn.ei_rehn(H, 3, 4)),
])
def test_flax_rehn_modules_equal_the_pure_cells(module, pure):
  xs = _xs()
  rnn = nn.RNN(module())
  variables = rnn.init(jax.random.key(0), xs)
  got = rnn.apply(variables, xs)
  cell = pure()
  _, want = unroll(cell, variables['params']['cell']['cell'],
                   cell.initial_state(B), xs)
  np.testing.assert_allclose(cell_output(got), cell_output(want), rtol=1e-6)


@pytest.mark.parametrize('cls', [
    vcrnn_jax.core.Context, act.ACTOutput, ponder.PonderOutput,
    rehn.RHNState, rehn.REHNOutput, skip.SkipState, skip.SkipOutput,
    vc.VCOutput, cells.ElmanState, cells.GRUState, cells.LSTMState,
    cells.StackOutput], ids=lambda c: c.__name__)
def test_output_fields_say_what_they_hold(cls):
  # help() shows a field's __doc__: "Alias for field number 1" says nothing.
  for name in cls._fields:
    doc = getattr(cls, name).__doc__
    assert doc and not doc.startswith('Alias for field'), (cls, name)


def test_field_docs_reads_the_attributes_section():
  from typing import NamedTuple

  @vcrnn_jax.core.field_docs
  class Pair(NamedTuple):
    """Two things.

    Attributes:
      first: the first, over
        two lines.
      second: the second.
    """
    first: int
    second: int

  assert Pair.first.__doc__ == 'the first, over two lines.'
  assert Pair.second.__doc__ == 'the second.'
