"""Tests for vcrnn_jax.loops: the bounded while loop and its custom VJP.

The toy is an ACT-style pondering body: a batched tanh RNN whose elements each
halt once their cumulative sigmoid halting probability reaches 0.99, so
different elements take different numbers of steps, and the loop runs while
any element is running. float64 is on (tests/conftest.py).
"""

import functools
import inspect
from typing import NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import loops

H, B = 6, 4
THRESHOLD = 0.99


class Carry(NamedTuple):
  h: jax.Array        # [B, H] state
  acc: jax.Array      # [B, H] halting-weighted state
  halt: jax.Array     # [B] cumulative halting probability
  steps: jax.Array    # [B] int32 steps taken per element
  running: jax.Array  # [B] bool


def make_params(seed=0, dtype=jnp.float64, halt_bias=-2.0):
  k = jax.random.split(jax.random.key(seed), 4)
  return {
      'U': (jax.random.normal(k[0], (H, H)) / np.sqrt(H)).astype(dtype),
      'b': (0.1 * jax.random.normal(k[1], (H,))).astype(dtype),
      'w': jax.random.normal(k[2], (H,)).astype(dtype),
      'bh': jnp.asarray(halt_bias, dtype),
  }


def make_carry(seed=1, dtype=jnp.float64, batch=B):
  h = jax.random.normal(jax.random.key(seed), (batch, H)).astype(dtype)
  return Carry(h, jnp.zeros_like(h), jnp.zeros((batch,), dtype),
               jnp.zeros((batch,), jnp.int32), jnp.ones((batch,), bool))


def body(params, c, x=0.0):
  # The bias and an [H] input get the batch axis explicitly.
  x = x[None, :] if jnp.ndim(x) == 1 else x
  h = jnp.tanh(c.h @ params['U'] + params['b'][None, :] + x)
  p = jax.nn.sigmoid(h @ params['w'] + params['bh'])
  r = c.running
  halt = jnp.where(r, c.halt + p, c.halt)
  return Carry(
      h=jnp.where(r[:, None], h, c.h),
      acc=jnp.where(r[:, None], c.acc + p[:, None] * h, c.acc),
      halt=halt,
      steps=c.steps + r.astype(jnp.int32),
      running=r & (halt < THRESHOLD),
  )


def cond(c):
  return jnp.any(c.running)


def python_loop(cond_fun, body_fun, params, carry, max_steps):
  """The specification, with no JAX control flow."""
  n = 0
  while n < max_steps and bool(cond_fun(carry)):
    carry = body_fun(params, carry)
    n += 1
  return carry, n


def loss_value(final):
  return (jnp.sum(final.acc ** 2) + jnp.sum(jnp.sin(final.h)) +
          jnp.sum(final.halt ** 2))


@functools.cache
def run_and_grad(loop_fn, **kwargs):
  """Jitted ``(params, carry) -> ((loss, (final, n)), (d_params, d_carry))``.

  Cached, so that every test using the same loop settings shares one compiled
  function: compilation is most of this file's run time.
  """

  def loss(params, carry):
    final, n = loop_fn(cond, body, params, carry, **kwargs)
    return loss_value(final), (final, n)

  return jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True,
                                    allow_int=True))


def float_leaves(carry):
  return carry.h, carry.acc, carry.halt


def assert_trees_close(a, b, rtol=1e-12, atol=1e-12):
  leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
  assert jax.tree.structure(a) == jax.tree.structure(b)
  for x, y in zip(leaves_a, leaves_b):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol,
                               atol=atol)


# Each case: (max_steps, checkpoints, save_residuals, path). With the default
# parameters the elements halt after 10, 8, 8 and 9 steps: the loop takes 10.
PATHS = [
    pytest.param(30, 16, False, 'stride1', id='steps<=checkpoints'),
    pytest.param(30, 3, False, 'recompute', id='steps>checkpoints'),
    pytest.param(30, 1, False, 'recompute', id='one-checkpoint'),
    pytest.param(5, 16, False, 'max', id='hits-max_steps'),
    pytest.param(30, 16, True, 'stride1', id='residuals'),
    pytest.param(30, 2, True, 'recompute', id='residuals-recompute'),
    pytest.param(5, 3, True, 'max', id='residuals-max_steps'),
]
# The settings most tests below reuse: the 'steps>checkpoints' case, compiled
# once (run_and_grad's cache needs the keywords in the same order).
DEFAULT = dict(max_steps=30, checkpoints=3, save_residuals=False)


def _check_path(path, n, max_steps, checkpoints):
  if path == 'stride1':
    assert 1 < n <= checkpoints
  elif path == 'recompute':
    assert checkpoints < n < max_steps
  elif path == 'max':
    assert n == max_steps


@pytest.mark.parametrize('max_steps,checkpoints,save,path', PATHS)
def test_values_match_masked_scan_and_python_loop(max_steps, checkpoints, save,
                                                 path):
  params, carry = make_params(), make_carry()
  (_, (got, n)), _ = run_and_grad(
      loops.bounded_while_loop, max_steps=max_steps, checkpoints=checkpoints,
      save_residuals=save)(params, carry)
  (_, (ref, n_ref)), _ = run_and_grad(loops.masked_scan_loop,
                                      max_steps=max_steps)(params, carry)
  spec, n_spec = python_loop(cond, body, params, carry, max_steps)
  assert n.dtype == jnp.int32 and n.shape == ()
  assert int(n) == int(n_ref) == n_spec
  _check_path(path, n_spec, max_steps, checkpoints)
  assert_trees_close(got, spec, rtol=1e-13, atol=1e-13)
  assert_trees_close(ref, spec, rtol=1e-13, atol=1e-13)
  if path != 'max':
    # The toy really is adaptive: elements halt after different numbers of
    # steps.
    assert len(np.unique(np.asarray(got.steps))) > 1


@pytest.mark.parametrize('max_steps,checkpoints,save,path', PATHS)
def test_gradients_match_masked_scan(max_steps, checkpoints, save, path):
  params, carry = make_params(), make_carry()
  (value, (_, n)), (g_params, g_carry) = run_and_grad(
      loops.bounded_while_loop, max_steps=max_steps, checkpoints=checkpoints,
      save_residuals=save)(params, carry)
  (value_ref, _), (g_params_ref, g_carry_ref) = run_and_grad(
      loops.masked_scan_loop, max_steps=max_steps)(params, carry)
  _check_path(path, int(n), max_steps, checkpoints)
  np.testing.assert_allclose(value, value_ref, rtol=1e-13)
  assert_trees_close(g_params, g_params_ref)
  assert_trees_close(float_leaves(g_carry), float_leaves(g_carry_ref))
  # Integer and bool carry leaves get float0 (symbolically zero) cotangents.
  assert g_carry.steps.dtype == jax.dtypes.float0
  assert g_carry.running.dtype == jax.dtypes.float0


def test_gradient_matches_finite_differences():
  params, carry = make_params(), make_carry()
  fn = run_and_grad(loops.bounded_while_loop, **DEFAULT)
  (_, (_, n)), (g_params, g_carry) = fn(params, carry)
  assert int(n) > DEFAULT['checkpoints']  # through the recompute path
  loss = lambda p, c: fn(p, c)[0][0]
  eps = 1e-6

  def central(f, x, index):
    dx = jnp.zeros_like(x).at[index].set(eps)
    return (f(x + dx) - f(x - dx)) / (2 * eps)

  for name, index in [('U', (1, 2)), ('w', (3,)), ('bh', ())]:
    fd = central(lambda v, name=name: loss({**params, name: v}, carry),
                 params[name],
                 index)
    np.testing.assert_allclose(g_params[name][index], fd, rtol=1e-6)
  fd = central(lambda v: loss(params, carry._replace(h=v)), carry.h, (2, 0))
  np.testing.assert_allclose(g_carry.h[2, 0], fd, rtol=1e-6)


class _WithNone(NamedTuple):
  empty: None
  x: jax.Array
  y: jax.Array
  n: jax.Array


@pytest.mark.parametrize('save', [False, True])
def test_a_none_field_in_the_carry_keeps_gradients_aligned(save):
  # A None field has no leaf; its cotangent must not shift the others'.
  def loss(p, kind):
    def body(p, c):
      return _WithNone(None, c.x * p, c.y * 2.0, c.n + 1)
    init = _WithNone(None, jnp.ones((3, 6)), jnp.ones(3),
                     jnp.zeros((), jnp.int32))
    cond = lambda c: c.n < 3
    if kind == 'while':
      c, _ = loops.bounded_while_loop(cond, body, p, init, max_steps=5,
                                      checkpoints=2, save_residuals=save)
    else:
      c, _ = loops.masked_scan_loop(cond, body, p, init, max_steps=5)
    return jnp.sum(c.x) + jnp.sum(c.y)

  p = jnp.full((3, 6), 1.5)
  np.testing.assert_allclose(jax.grad(loss)(p, 'while'),
                             jax.grad(loss)(p, 'scan'), rtol=1e-6)


def test_zero_steps_when_cond_false_at_start():
  params = make_params()
  carry = make_carry()._replace(running=jnp.zeros((B,), bool))
  (_, (final, n)), (g_params, g_carry) = run_and_grad(
      loops.bounded_while_loop, **DEFAULT)(params, carry)
  assert int(n) == 0
  assert_trees_close(final, carry)
  assert all(not np.any(np.asarray(g)) for g in jax.tree.leaves(g_params))
  # The loss reads the carry directly: d/dh sum(sin h) = cos h.
  np.testing.assert_allclose(g_carry.h, jnp.cos(carry.h), rtol=1e-14)


def test_float32_stays_float32():
  params = make_params(dtype=jnp.float32)
  carry = make_carry(dtype=jnp.float32)
  fn = run_and_grad(loops.bounded_while_loop, **DEFAULT)
  (_, (final, n)), (g_params, g_carry) = fn(params, carry)
  (_, (ref, n_ref)), _ = fn(make_params(), make_carry())  # float64
  assert int(n) == int(n_ref)
  assert final.h.dtype == jnp.float32 and final.steps.dtype == jnp.int32
  assert_trees_close(float_leaves(final), float_leaves(ref), rtol=1e-5,
                     atol=1e-5)
  assert all(g.dtype == jnp.float32 for g in jax.tree.leaves(g_params))
  assert g_carry.h.dtype == jnp.float32


def test_weakly_typed_carry_leaf_takes_body_dtype():
  # A Python scalar in the carry (weak type) adopts the dtype body_fun gives.
  def count_body(p, c):
    x, total = c
    return x * p, total + jnp.sum(x)
  p = jnp.float32(0.5)
  (_, total), n = loops.bounded_while_loop(
      lambda c: c[1] < 3.0, count_body, p, (jnp.ones(2, jnp.float32), 0.0),
      max_steps=10, checkpoints=4, save_residuals=False)
  assert total.dtype == jnp.float32 and int(n) == 2


def test_vmap_matches_unbatched_calls():
  params = make_params()
  carries = [make_carry(seed) for seed in (1, 2, 3)]
  stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *carries)

  def total(p, cs):
    def one(c):
      final, n = loops.bounded_while_loop(cond, body, p, c, **DEFAULT)
      return loss_value(final), (final, n)
    values, aux = jax.vmap(one)(cs)
    return jnp.sum(values), aux

  (_, (finals, ns)), (g_params, g_carries) = jax.jit(jax.value_and_grad(
      total, argnums=(0, 1), has_aux=True, allow_int=True))(params, stacked)
  assert len(set(np.asarray(ns).tolist())) > 1  # instances stop at different n
  unbatched = run_and_grad(loops.bounded_while_loop, **DEFAULT)
  g_params_sum = jax.tree.map(jnp.zeros_like, params)
  for i, c in enumerate(carries):
    (_, (final, n)), (g_p, g_c) = unbatched(params, c)
    assert int(ns[i]) == int(n)
    assert_trees_close(jax.tree.map(lambda x, i=i: x[i], finals), final)
    assert_trees_close(
        jax.tree.map(lambda x, i=i: x[i], float_leaves(g_carries)),
        float_leaves(g_c))
    g_params_sum = jax.tree.map(jnp.add, g_params_sum, g_p)
  assert_trees_close(g_params, g_params_sum)


def _time_loss(loop_fn, **kwargs):
  """Pondering inside a lax.scan over time; the body closes over x_t and t."""

  def loss(params, xs):
    def time_step(h, inputs):
      x, t = inputs
      carry = make_carry()._replace(h=h)
      shift = 0.01 * t.astype(h.dtype)   # an integer tracer in the closure
      final, n = loop_fn(cond, lambda p, c: body(p, c, x + shift), params,
                         carry, **kwargs)
      return final.acc, n

    h, ns = lax.scan(time_step, make_carry().h, (xs, jnp.arange(xs.shape[0])))
    return jnp.sum(h ** 2), ns

  return loss


def test_inside_scan_over_time_with_grad():
  params = make_params()
  xs = 0.5 * jax.random.normal(jax.random.key(7), (5, B, H))
  got = jax.jit(jax.value_and_grad(
      _time_loss(loops.bounded_while_loop, **DEFAULT),
      argnums=(0, 1), has_aux=True))(params, xs)
  ref = jax.jit(jax.value_and_grad(
      _time_loss(loops.masked_scan_loop, max_steps=30),
      argnums=(0, 1), has_aux=True))(params, xs)
  (value, ns), g = got
  (value_ref, ns_ref), g_ref = ref
  np.testing.assert_array_equal(ns, ns_ref)
  assert int(jnp.max(ns)) > 3  # some time steps take the recompute path
  np.testing.assert_allclose(value, value_ref, rtol=1e-13)
  assert_trees_close(g, g_ref)


def test_closed_over_differentiable_value_gets_its_gradient():
  # x depends on the differentiated argument and reaches body_fun only through
  # its closure; it is hoisted into an explicit argument of the custom VJP.
  params, carry = make_params(), make_carry()

  def loss(loop_fn, **kw):
    def f(scale):
      x = scale * jnp.ones((H,))
      final, _ = loop_fn(cond, lambda p, c: body(p, c, x), params, carry, **kw)
      return jnp.sum(final.acc ** 2)
    return jax.jit(jax.grad(f))

  got = loss(loops.bounded_while_loop, max_steps=30, checkpoints=2,
             save_residuals=False)(0.3)
  ref = loss(loops.masked_scan_loop, max_steps=30)(0.3)
  np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_params_with_undifferentiated_data_leaf():
  # The ACT cell passes (params, x) as params and differentiates params only.
  params, carry = make_params(), make_carry()
  x = jnp.linspace(-1.0, 1.0, H)

  def loss(loop_fn, **kw):
    def f(p):
      final, _ = loop_fn(cond, lambda pq, c: body(pq[0], c, pq[1]), (p, x),
                         carry, **kw)
      return jnp.sum(final.acc ** 2)
    return jax.jit(jax.grad(f))

  ref = loss(loops.masked_scan_loop, max_steps=30)(params)
  # Residual mode: the data leaf is closed over rather than differentiated, and
  # jax.vjp's residuals must still be sorted out correctly.
  got = loss(loops.bounded_while_loop, max_steps=30, checkpoints=16,
             save_residuals=True)(params)
  assert_trees_close(got, ref)


def test_nested_loops():
  params, carry = make_params(), make_carry()

  def outer_loss(loop_fn, **kw):
    def outer_body(p, c):
      # Each outer step ponders a fresh inner loop from the current state.
      inner0 = make_carry()._replace(h=c[0])
      inner, _ = loop_fn(cond, body, p, inner0, **kw)
      return inner.acc + 0.5 * c[0], c[1] + 1

    def f(p, h):
      (h, _), n = loop_fn(lambda c: c[1] < 3, outer_body, p,
                          (h, jnp.int32(0)), **kw)
      return jnp.sum(h ** 2), n
    return jax.jit(jax.value_and_grad(f, argnums=(0, 1), has_aux=True))

  (value, n), g = outer_loss(loops.bounded_while_loop, max_steps=10,
                             checkpoints=2, save_residuals=False)(params,
                                                                  carry.h)
  (value_ref, _), g_ref = outer_loss(loops.masked_scan_loop,
                                     max_steps=10)(params, carry.h)
  assert int(n) == 3
  np.testing.assert_allclose(value, value_ref, rtol=1e-13)
  assert_trees_close(g, g_ref)


def test_second_call_does_not_retrace():
  traces = []

  def counting_body(p, c):
    traces.append(None)  # runs only while JAX traces body_fun
    return body(p, c)

  @jax.jit
  def train_step(params, carry):
    def loss(p):
      final, _ = loops.bounded_while_loop(cond, counting_body, p, carry,
                                          max_steps=30, checkpoints=4,
                                          save_residuals=False)
      return jnp.sum(final.acc ** 2)
    return jax.value_and_grad(loss)(params)

  train_step(make_params(), make_carry())
  first = len(traces)
  assert first >= 1
  train_step(make_params(seed=5), make_carry(seed=6))  # same shapes
  assert len(traces) == first
  # A new shape retraces (lowering suffices to see it, no need to compile).
  train_step.lower(make_params(), make_carry(batch=B + 1))
  assert len(traces) > first


def test_compiled_memory_does_not_grow_with_max_steps():
  params, carry = make_params(), make_carry(batch=8)

  def temp_bytes(max_steps):
    def loss(p, c):
      final, _ = loops.bounded_while_loop(cond, body, p, c,
                                          max_steps=max_steps, checkpoints=8,
                                          save_residuals=False)
      return jnp.sum(final.acc ** 2)
    compiled = jax.jit(jax.grad(loss)).lower(params, carry).compile()
    analysis = compiled.memory_analysis()
    if analysis is None or not hasattr(analysis, 'temp_size_in_bytes'):
      pytest.skip('memory_analysis() unavailable on this backend')
    return analysis.temp_size_in_bytes

  small, large = temp_bytes(10), temp_bytes(400)
  assert large <= 1.2 * small, (small, large)


def test_forward_mode_is_not_supported():
  params, carry = make_params(), make_carry()
  f = lambda p: loops.bounded_while_loop(cond, body, p, carry, max_steps=5,
                                         checkpoints=4,
                                         save_residuals=False)[0].acc
  with pytest.raises(TypeError):
    jax.jvp(f, (params,), (params,))


@pytest.mark.parametrize('kwargs,match', [
    (dict(max_steps=0), 'max_steps'),
    (dict(max_steps=-3), 'max_steps'),
    (dict(max_steps=2.5), 'max_steps'),
    (dict(max_steps=True), 'max_steps'),
    (dict(max_steps=5, checkpoints=0), 'checkpoints'),
    (dict(max_steps=5, checkpoints='4'), 'checkpoints'),
    (dict(max_steps=5, save_residuals=1), 'save_residuals'),
])
def test_bad_arguments_raise(kwargs, match):
  kwargs = dict(checkpoints=4, save_residuals=False) | kwargs
  with pytest.raises(ValueError, match=match):
    loops.bounded_while_loop(cond, body, make_params(), make_carry(), **kwargs)


def test_the_loop_settings_have_one_default():
  # LoopConfig holds the defaults; the loop under it takes both explicitly,
  # so a second default cannot drift from LoopConfig's (the loop's was 16).
  parameters = inspect.signature(loops.bounded_while_loop).parameters
  for name in ('checkpoints', 'save_residuals'):
    assert parameters[name].default is inspect.Parameter.empty, name


def _accepts(make):
  try:
    return ('ok', make())
  except ValueError as e:
    return ('error', str(e))


@pytest.mark.parametrize('name,value', [
    *[('save_residuals', v) for v in (True, np.True_, False, np.False_, 1, 0,
                                      'yes', None, np.array(True))],
    *[('checkpoints', v) for v in (4, np.int64(4), 0, -1, 2.5, True, '4',
                                   np.int32(2))],
])
def test_loop_config_and_the_loop_accept_the_same_settings(name, value):
  # One validator per option: a setting LoopConfig accepts where it is
  # written never fails later in the loop, and both refuse with one message.
  settings = dict(checkpoints=4, save_residuals=False) | {name: value}
  config = _accepts(lambda: getattr(loops.LoopConfig(**settings), name))
  loop = _accepts(lambda: loops.bounded_while_loop(
      lambda x: x < 3, lambda params, x: x + params, jnp.ones(()),
      jnp.zeros(()), max_steps=5, **settings)[1])
  assert config[0] == loop[0]
  if config[0] == 'error':
    assert config[1] == loop[1]
    assert '\n' not in config[1]


@pytest.mark.parametrize('kwargs,match', [
    (dict(kind='for'), "loop must be 'while' or 'scan'"),
    (dict(checkpoints=0), 'checkpoints must be a positive'),
    (dict(save_residuals=1), 'save_residuals must be a bool'),
    (dict(compact_rows=0), 'compact_rows must be a positive'),
    (dict(unroll=0), 'unroll must be a positive'),
    (dict(kind='scan', unroll=2), "unroll=2 is for kind='while'"),
])
def test_loop_config_refuses_bad_settings(kwargs, match):
  with pytest.raises(ValueError, match=match):
    loops.LoopConfig(**kwargs)


def test_loop_config_is_one_hashable_value_and_a_kind_is_its_shorthand():
  config = loops.LoopConfig(checkpoints=4, compact_rows=8)
  # Hashable and comparable: a static jit argument and a flax module field.
  assert hash(config) == hash(loops.LoopConfig(checkpoints=4, compact_rows=8))
  assert loops.as_loop_config(config) is config
  assert loops.as_loop_config('scan') == loops.LoopConfig(kind='scan')
  with pytest.raises(ValueError, match='loop must be a LoopConfig'):
    loops.as_loop_config(8)


def test_masked_scan_loop_bad_max_steps_raises():
  with pytest.raises(ValueError, match='max_steps must be a positive integer'):
    loops.masked_scan_loop(cond, body, make_params(), make_carry(),
                           max_steps=0)


@pytest.mark.parametrize('bad_body,match', [
    (lambda p, c: c[:4], 'pytree structure'),
    (lambda p, c: c._replace(h=c.h[:, :2]), r'shape.*carry\.h'),
    (lambda p, c: c._replace(steps=c.steps.astype(jnp.float32)),
     r'dtype.*carry\.steps.*int32.*float32'),
])
@pytest.mark.parametrize('loop_fn', [
    functools.partial(loops.bounded_while_loop, checkpoints=4,
                      save_residuals=False),
    loops.masked_scan_loop], ids=['bounded_while_loop', 'masked_scan_loop'])
def test_body_changing_the_carry_raises(loop_fn, bad_body, match):
  with pytest.raises(ValueError, match='body_fun') as info:
    loop_fn(cond, bad_body, make_params(), make_carry(), max_steps=5)
  assert info.match(match)


def test_non_scalar_cond_raises():
  with pytest.raises(ValueError, match='cond_fun must return a scalar bool'):
    loops.bounded_while_loop(lambda c: c.running, body, make_params(),
                             make_carry(), max_steps=5, checkpoints=4,
                             save_residuals=False)


def test_loop_config_stores_numpy_values_as_the_loop_reads_them():
  # One validator per option: what LoopConfig accepts, the loop accepts.
  config = loops.LoopConfig(checkpoints=np.int64(4), save_residuals=np.True_,
                            compact_rows=np.int32(2))
  assert config == loops.LoopConfig(checkpoints=4, save_residuals=True,
                                    compact_rows=2)
  assert type(config.save_residuals) is bool
  assert type(config.checkpoints) is int
  out, steps = loops.bounded_while_loop(
      lambda x: x < 3, lambda params, x: x + params, jnp.ones(()),
      jnp.zeros(()), max_steps=5, checkpoints=config.checkpoints,
      save_residuals=config.save_residuals)
  assert float(out) == 3.0 and int(steps) == 3


@pytest.mark.parametrize('k', [2, 3, 5])
def test_an_unrolled_halting_loop_equals_the_plain_one(k):
  # Rows halt after 1, 2, 3 steps and two at max_steps; the body reads a
  # per-step table with jnp.take, which fills reads past its end with NaN.
  # The steps an iteration takes after every row has halted must not
  # count, change a row, or reach the gradients (as 0 * NaN).
  m = 4
  halt_after = jnp.array([1, 2, 4, 4, 3], jnp.int32)

  def body(params, inputs, rows, running, n):
    w, table = params
    new = jnp.tanh(rows * w + jnp.take(table, n))
    rows = jnp.where(running, new, rows)
    return rows, running & (n + 1 < inputs)

  def loss(params, unroll):
    rows, n = loops.halting_loop(
        body, params, halt_after, jnp.full((5,), 0.5), jnp.ones((5,), bool),
        max_steps=m, loop=loops.LoopConfig(unroll=unroll))
    return jnp.sum(rows ** 2 * jnp.arange(1.0, 6.0)), (rows, n)

  params = (jnp.array(0.7), jnp.linspace(0.1, 0.4, m))
  grad = jax.jit(jax.value_and_grad(loss, has_aux=True), static_argnums=1)
  (lk, (rows_k, n_k)), gk = grad(params, k)
  (l1, (rows_1, n_1)), g1 = grad(params, 1)
  assert int(n_1) == m and int(n_k) == m
  np.testing.assert_allclose(rows_k, rows_1, rtol=1e-12)
  np.testing.assert_allclose(lk, l1, rtol=1e-12)
  for a, b in zip(gk, g1):
    assert np.all(np.isfinite(a))
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
