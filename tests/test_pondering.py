"""The public pondering pieces, and the guide's new method built from them.

The guide docs/guides/new_pondering_method.md (ACT's halting with
PonderNet's expected-steps cost, its registry row, its Flax modules) is run
from the page itself, so the code the docs show is the code tested.
"""

import contextlib
import doctest
import io
import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import act, cells, loops, pondering, registry, utils
from vcrnn_jax.core import Context, InputSizeError
from vcrnn_jax.papers.family import parity as family_parity
from vcrnn_jax.unroll import unroll

GUIDE = (pathlib.Path(__file__).resolve().parents[1] / 'docs' / 'guides'
         / 'new_pondering_method.md')
B, D = 4, 3


def _code_cells() -> list[str]:
  return re.findall(r'```\{code-cell\} ipython3\n(.*?)```', GUIDE.read_text(),
                    re.S)


@pytest.fixture(scope='module')
def guide() -> dict:
  """The namespace the guide's code cells leave, run in order."""
  namespace = {'__name__': 'guide'}
  with contextlib.redirect_stdout(io.StringIO()):
    for code in _code_cells():
      exec(compile(code, str(GUIDE), 'exec'), namespace)  # pylint: disable=exec-used
  return namespace


def _loop_with_stats(cell, params, x, *, active=None, epsilon=0.01,
                     max_steps=6):
  """ACT's loop in Python, one :func:`pondering.act_step` at a time."""
  batch = x.shape[:-1]
  active = jnp.ones(batch, bool) if active is None else active
  rows = pondering.initial_rows(cell.initial_state(batch[0]), batch, 2,
                                x.dtype)
  running = jnp.ones(batch, bool)
  stats = []
  for n in range(max_steps):
    rows, running, s = pondering.act_step(
        cell, (params, Context()), (x, active), rows, running,
        jnp.int32(n), epsilon=epsilon, max_steps=max_steps)
    stats.append(s)
    if not bool(jnp.any(running)):
      break
  return rows, running, stats


def _setup(cell=None, halting_bias=-1.0):
  cell = cell or cells.elman(5, param_dtype=jnp.float64)
  params = pondering.init_params(cell, jax.random.key(0), D, 2,
                                 halting_bias=halting_bias)
  x = jax.random.normal(jax.random.key(1), (B, D), jnp.float64)
  return cell, params, x


# The guide's method.


def test_guide_runs_and_its_loss_and_gradient_are_finite(guide):
  assert len(_code_cells()) == 3
  method = sum(len([ln for ln in c.splitlines() if ln.strip()])
               for c in _code_cells()[:1])
  assert method < 70, method
  assert np.isfinite(float(guide['loss']))
  for g in jax.tree_util.tree_leaves(guide['grads']):
    assert np.all(np.isfinite(np.asarray(g)))
  ys = guide['ys']
  # Padded steps (lengths [5, 3, 1]) give zero cost and steps.
  np.testing.assert_array_equal(np.asarray(ys.steps)[2, 1:], 0)
  assert np.all(np.asarray(ys.ponder)[0] >= 1.0)
  # The cost reaches the halting unit: ACT's rho would too, only through R.
  assert np.any(np.asarray(guide['grads']['halting']['kernel']) != 0.0)


@pytest.mark.parametrize('max_steps,probs', [
    (10, (0.4, 0.4, 0.2)),      # h summed to 1.2 >= 1 - eps at n = 3
    (2, (0.4, 0.6)),            # stopped by M = 2: R = 1 - 0.4
])
def test_guide_cost_is_the_hand_computed_expected_steps(guide, max_steps,
                                                       probs):
  model = guide['act_expected_steps'](cells.elman(3, param_dtype=jnp.float64),
                                      2, max_steps=max_steps)
  params = model.init(jax.random.key(0), D)
  # A constant halting value h = 0.4 on every step.
  params['halting'] = {'kernel': jnp.zeros_like(params['halting']['kernel']),
                       'bias': jnp.full((1,), np.log(0.4 / 0.6))}
  x = jax.random.normal(jax.random.key(1), (B, D), jnp.float64)
  _, out = model.apply(params, model.initial_state(B), x)
  want = sum((n + 1) * p for n, p in enumerate(probs))
  np.testing.assert_allclose(np.asarray(out.ponder), want,
                             rtol=1e-12)
  np.testing.assert_array_equal(np.asarray(out.steps), len(probs))


def test_guide_cost_is_the_sum_of_the_steps_p(guide):
  cell, params, x = _setup()
  model = guide['act_expected_steps'](cell, 2, max_steps=6)
  _, out = model.apply(params, model.initial_state(B), x)
  _, _, stats = _loop_with_stats(cell, params, x)
  want = sum((n + 1) * np.asarray(s.p) for n, s in enumerate(stats))
  np.testing.assert_allclose(np.asarray(out.ponder), want,
                             rtol=1e-12)
  assert len(set(np.asarray(out.steps).tolist())) > 1, 'rows must differ'


def test_guide_method_matches_act_and_its_loops_agree(guide):
  cell, params, x = _setup(cells.lstm(4, param_dtype=jnp.float64))

  def run(loop):
    model = guide['act_expected_steps'](cell, 2, max_steps=6, loop=loop)

    def loss(params):
      _, out = model.apply(params, model.initial_state(B), x)
      return jnp.sum(out.output ** 2) + jnp.sum(out.ponder), out

    return jax.value_and_grad(loss, has_aux=True)(params)

  (v_w, out_w), g_w = run('while')
  for loop in ('scan', loops.LoopConfig(compact_rows=1)):
    (v, out), g = run(loop)
    np.testing.assert_allclose(v, v_w, rtol=1e-10)
    np.testing.assert_array_equal(out.steps, out_w.steps)
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12),
        g, g_w)
  # The same halting as ACT's own cell with the same params.
  ref = act.adaptive(cell, 2, max_steps=6)
  _, act_out = ref.apply(params, ref.initial_state(B), x)
  np.testing.assert_array_equal(out_w.steps, act_out.steps)
  np.testing.assert_allclose(out_w.output, act_out.output, rtol=1e-12)


def test_guide_method_has_acts_options_remainder_and_no_readout(guide):
  cell, params, x = _setup(cells.gru(4, param_dtype=jnp.float64))
  factory = guide['act_expected_steps']
  want = utils.defaults(act.adaptive)
  for name, default in utils.defaults(factory).__dict__.items():
    assert default is getattr(want, name), name
  # With output_size None the output is the mean field of the cell's own.
  bare = factory(cell, None, max_steps=6)
  ref = act.adaptive(cell, None, max_steps=6)
  params = {k: v for k, v in params.items() if k != 'output'}
  params['cell'] = cell.init(jax.random.key(3), D + 1)
  _, out = bare.apply(params, bare.initial_state(B), x)
  _, act_out = ref.apply(params, ref.initial_state(B), x)
  np.testing.assert_allclose(out.output, act_out.output, rtol=1e-12)
  np.testing.assert_array_equal(out.remainder, act_out.remainder)
  np.testing.assert_array_equal(act.ponder_cost(out), out.ponder)
  for bad, match in ((dict(epsilon=0.0), r'epsilon must be in \(0, 1\)'),
                     (dict(max_steps=0), 'max_steps must be a positive'),
                     (dict(output_size=0), 'output_size must be a positive')):
    with pytest.raises(ValueError, match=match):
      factory(cell, **{'output_size': 2, **bad})


def test_guide_row_makes_the_flax_modules_and_joins_the_comparison(
    guide, monkeypatch):
  row = guide['row']
  # The pure cell of the Linen module's params is the module's computation.
  variables = guide['variables']['params']['cell']
  model = guide['act_expected_steps'](cells.gru(16), 1, max_steps=8)
  xs = guide['xs']
  _, want = unroll(model, variables['cell'], model.initial_state(3), xs)
  np.testing.assert_allclose(guide['rnn'].apply(guide['variables'], xs).ponder,
                             want.ponder, rtol=1e-5)
  assert type(guide['cell']).__name__ == 'ExpectedACT'
  # The family comparison takes a pondering row with a ponder cost as it is.
  monkeypatch.setitem(registry.METHODS, 'expected_act', row)
  monkeypatch.setattr(family_parity, 'METHODS',
                      family_parity.METHODS + ('expected_act',))
  config = family_parity.ModelConfig(method='expected_act', hidden_size=4,
                                     max_steps=3, tau=0.5)
  exp = family_parity.parity_experiment(config, 'interpolation', bits=4,
                                        batch_size=4, eval_batch_size=8)
  params = exp.init(jax.random.key(0))
  batch = exp.sample(jax.random.key(1), 0)
  loss, metrics = exp.loss(params, batch, None)
  assert float(loss) == pytest.approx(float(metrics['loss'])
                                      + 0.5 * float(metrics['ponder']))
  assert family_parity.steps_measured('expected_act')
  assert family_parity.grid('expected_act') == ('tau',)
  assert family_parity.step_caps('expected_act', config._asdict()) == (3, 3)
  assert exp.evaluate(params, 0)['capped'] <= 1.0


# The pieces.


def test_with_step_flag():
  x = jnp.ones((2, 3), jnp.float32)
  for first, flag in ((True, [1, 1]), (False, [0, 0]),
                      (jnp.int32(0) == 0, [1, 1]),
                      (jnp.array([True, False]), [1, 0])):
    y = pondering.with_step_flag(x, first)
    assert y.shape == (2, 4) and y.dtype == jnp.float32
    np.testing.assert_array_equal(y[:, :3], x)
    np.testing.assert_array_equal(y[:, 3], flag)


def test_initial_rows_hold_nothing():
  cell = cells.lstm(4, param_dtype=jnp.float32)
  state = jax.tree_util.tree_map(lambda a: a + 1.0, cell.initial_state(B))
  rows = pondering.initial_rows(state, (B,), 3, jnp.float32)
  assert rows.state is state
  for a, s in zip(jax.tree_util.tree_leaves(rows.acc_state),
                  jax.tree_util.tree_leaves(state)):
    assert a.shape == s.shape and not np.any(np.asarray(a))
  assert rows.acc_output.shape == (B, 3)
  assert rows.acc_output.dtype == jnp.float32
  assert rows.steps.dtype == jnp.int32
  for leaf in (rows.acc_output, rows.cum_halt, rows.steps, rows.remainder):
    assert not np.any(np.asarray(leaf))
  assert pondering.Rows.remainder.__doc__.startswith('[batch] R(t)')


def test_act_step_p_sums_to_one_with_the_remainder():
  cell, params, x = _setup()
  active = jnp.array([True, True, False, True])
  rows, running, stats = _loop_with_stats(cell, params, x, active=active)
  assert not np.any(np.asarray(running))
  p = np.stack([np.asarray(s.p) for s in stats], axis=-1)        # [B, n]
  halted = np.stack([np.asarray(s.halted) for s in stats], axis=-1)
  np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-12)
  # Each row halts once, at step N(t), whose weight is R(t); p is zero after.
  np.testing.assert_array_equal(halted.sum(-1), 1)
  np.testing.assert_array_equal(np.argmax(halted, -1) + 1, rows.steps)
  np.testing.assert_allclose(p[halted], rows.remainder, rtol=1e-12)
  taken = np.arange(p.shape[-1]) < np.asarray(rows.steps)[:, None]
  assert np.all(p[~taken] == 0.0)
  # p_n = h_n before the halting step (Eq. 6).
  h = np.stack([np.asarray(s.halting) for s in stats], axis=-1)
  before = taken & ~halted
  np.testing.assert_array_equal(p[before], h[before])
  # The mean field is sum_n p_n y_n (Eq. 9).
  y = np.stack([np.asarray(s.output) for s in stats], axis=1)    # [B, n, O]
  np.testing.assert_allclose(np.einsum('bn,bno->bo', p, y), rows.acc_output,
                             rtol=1e-12)
  # An inactive row takes one step and weighs it 1.
  assert int(rows.steps[2]) == 1 and p[2, 0] == 1.0
  assert np.asarray(rows.steps).max() > 1


def test_active_rows():
  np.testing.assert_array_equal(
      pondering.active_rows(Context(), (3,)), [True, True, True])
  np.testing.assert_array_equal(
      pondering.active_rows(Context(active=jnp.array([1, 0, 1])), (3,)),
      [True, False, True])


def test_check_input():
  x = jnp.ones((2, 3), jnp.float64)
  assert pondering.check_input('m', x, jnp.float64) is x
  assert pondering.check_input('m', x, jnp.float32).dtype == jnp.float32
  with pytest.raises(ValueError, match=r'^m\.apply: x must be \[batch'):
    pondering.check_input('m', jnp.ones(()), jnp.float32)


def test_output_width_restates_the_cells_input_size():
  cell = cells.lstm(4)
  params = cell.init(jax.random.key(0), D + 1)
  state = cell.initial_state(2)
  assert pondering.output_width(cell, params, state, jnp.ones((2, D)),
                                'mine') == 4
  with pytest.raises(InputSizeError, match=r'mine\(.*\[batch, 3\]') as e:
    pondering.output_width(cell, params, state, jnp.ones((2, D + 1)), 'mine')
  assert e.value.input_size == D


def test_init_params_shapes():
  cell = cells.elman(5, param_dtype=jnp.float32)
  key = jax.random.key(0)
  params = pondering.init_params(cell, key, D, 2, halting_bias=0.5)
  assert params['cell']['input_kernel'].shape == (D + 1, 5)
  assert params['output']['kernel'].shape == (5, 2)
  assert params['halting']['kernel'].shape == (5, 1)
  np.testing.assert_array_equal(params['halting']['bias'], [0.5])
  np.testing.assert_array_equal(params['output']['bias'], [0.0, 0.0])
  bare = pondering.init_params(
      cell, key, D, None, halting_bias=1.0, param_dtype=jnp.float64,
      halt_features=lambda s, y: jnp.concatenate([y, y], -1))
  assert 'output' not in bare
  assert bare['halting']['kernel'].shape == (10, 1)
  assert bare['halting']['kernel'].dtype == jnp.float64
  # The same key splits as ACT's init: ACT's params are these.
  ref = act.adaptive(cell, 2, halting_bias=0.5).init(key, D)
  jax.tree_util.tree_map(np.testing.assert_array_equal, params, ref)


def test_dense_halting_probability_and_accumulate():
  p = pondering.dense_params(jax.nn.initializers.normal(), jax.random.key(0),
                             3, 1, -2.0, jnp.float64)
  f = jax.random.normal(jax.random.key(1), (B, 3), jnp.float64)
  want = 1.0 / (1.0 + np.exp(-(np.asarray(f) @ np.asarray(p['kernel'])
                               - 2.0)))
  np.testing.assert_allclose(pondering.halting_probability(p, f), want[:, 0],
                             rtol=1e-12)
  acc = {'a': jnp.ones((B, 2, 3), jnp.float32), 'b': jnp.zeros((B,))}
  w = jnp.arange(B, dtype=jnp.float64)
  out = pondering.accumulate(acc, w, {'a': jnp.ones((B, 2, 3), jnp.float32),
                                      'b': jnp.ones((B,))})
  assert out['a'].dtype == jnp.float32
  np.testing.assert_array_equal(out['a'][:, 1, 2], 1.0 + np.arange(B))
  np.testing.assert_array_equal(out['b'], np.arange(B))


def test_cell_step_reads_the_flag_and_the_readout():
  cell, params, x = _setup()
  state = cell.initial_state(B)
  s0, y0, h0 = pondering.cell_step(cell, params, state, x, jnp.int32(0),
                                   Context())
  s1, _, _ = pondering.cell_step(cell, params, state, x, jnp.int32(1),
                                 Context())
  assert not np.allclose(s0[0], s1[0])        # the flag is an input
  assert y0.shape == (B, 2) and h0.shape == (B,)
  bare = {k: v for k, v in params.items() if k != 'output'}
  _, y, _ = pondering.cell_step(cell, bare, state, x, jnp.int32(0),
                                Context())
  np.testing.assert_array_equal(y, s0[0])     # no readout: the cell's y


def test_module_docstring_example_runs():
  result = doctest.testmod(pondering, verbose=False)
  assert result.attempted > 0 and result.failed == 0
