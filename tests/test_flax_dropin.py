"""Our Elman, GRU and LSTM modules against Flax's cells, built alike.

Each test builds a Flax cell (``flax.nnx`` or ``flax.linen``) and ours with
the same arguments, copies our params into Flax's layout, and compares the
carries and outputs: for each computation/param dtype pair, gate and
activation functions, ``carry_init``, and inside Flax's ``RNN`` (with
``seq_lengths``, ``reverse``) and ``Bidirectional``. Flax's cells mix dtypes
implicitly, so they run under standard promotion; ours run under the
suite's strict promotion.

The GRU's maths differ from Flax's ``GRUCell`` (the paper's reset before the
recurrent matmul, ``z`` on the new state): it is compared on what the two
share, a first step from a zero carry (``z`` converted by negation, exact
for gates with ``g(-a) = 1 - g(a)``), the carry and the constructor.
"""

import dataclasses
import functools
import inspect
import warnings

import _methods
import chex
from flax import nnx
import flax.linen as nn
from flax.nnx.nn.dtypes import promote_dtype as nnx_promote_dtype
from flax.nnx.nn.recurrent import modified_orthogonal
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import cells, linen, registry
from vcrnn_jax import nnx as vnnx
from vcrnn_jax.core import InputSizeError, cell_output
from vcrnn_jax.unroll import unroll

B, T, D, H = 2, 3, 3, 4
F32, BF16 = jnp.float32, jnp.bfloat16
# (computation dtype, param dtype) and the tolerance of the comparison.
DTYPES = {
    'f32': (None, F32, 1e-5),
    'bf16_compute_f32_params': (BF16, F32, 1e-2),
    'f32_compute_bf16_params': (F32, BF16, 1e-5),
    'bf16': (BF16, BF16, 1e-2),
}
# gate_fn, activation_fn: Flax's defaults and the relu / elu.
FUNCTIONS = {
    'default': {},
    'relu_elu': dict(gate_fn=jax.nn.relu, activation_fn=jax.nn.elu),
}
# What every cell (both sides) is built with besides the case's options:
# non-zero biases, and a recurrent initialiser that draws bfloat16 on CPU.
COMMON = dict(bias_init=jax.nn.initializers.normal(0.5),
              recurrent_kernel_init=modified_orthogonal)


def _xs(seed=1):
  return jax.random.normal(jax.random.key(seed), (B, T, D), F32)


def _standard():
  return jax.numpy_dtype_promotion('standard')


def _close(got, want, tol):
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_allclose(
          np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol,
          atol=tol), got, want)


def _load_nnx(flax_cell, pure):
  state = nnx.state(flax_cell, nnx.Param)
  nnx.replace_by_pure_dict(state, pure)
  nnx.update(flax_cell, state)


def _wider(a, b):
  with _standard():
    return jnp.promote_types(a, b)


def _carry_dtypes(carry):
  return [a.dtype for a in jax.tree_util.tree_leaves(carry)]


# ----------------------------------------------------------------------------
# The constructors: every argument of Flax's, with Flax's defaults where ours
# has them.

PAIRS_NNX = [(vnnx.LSTM, nnx.LSTMCell), (vnnx.GRU, nnx.GRUCell),
             (vnnx.Elman, nnx.SimpleCell)]
PAIRS_LINEN = [(linen.LSTM, nn.LSTMCell), (linen.GRU, nn.GRUCell),
               (linen.Elman, nn.SimpleCell)]


@pytest.mark.parametrize('ours,theirs', PAIRS_NNX)
def test_nnx_modules_take_every_argument_of_flax_cells(ours, theirs):
  want = inspect.signature(theirs.__init__).parameters
  got = inspect.signature(ours.__init__).parameters
  assert set(want) <= set(got), set(want) - set(got)
  for name, p in want.items():
    assert got[name].kind == p.kind, name
  # Flax's initialisers and functions are ours by default (``dtype``: ours
  # computes in the params' dtype, flax.nnx.SimpleCell's in float32).
  for name in ('gate_fn', 'activation_fn', 'bias_init', 'param_dtype',
               'residual'):
    if name in want:
      assert got[name].default is want[name].default, name


@pytest.mark.parametrize('ours,theirs', PAIRS_LINEN)
def test_linen_modules_take_flax_fields_in_flax_order(ours, theirs):
  want = [f.name for f in dataclasses.fields(theirs)
          if f.name not in ('parent', 'name')]
  got = [f.name for f in dataclasses.fields(ours)
         if f.name not in ('parent', 'name')]
  assert got[:len(want)] == want   # positional calls mean the same
  defaults = {f.name: f.default for f in dataclasses.fields(theirs)}
  for f in dataclasses.fields(ours):
    if f.name in ('gate_fn', 'activation_fn', 'bias_init', 'dtype',
                  'param_dtype', 'carry_init', 'residual'):
      assert f.default is defaults[f.name], f.name


def test_flax_constructor_calls_work_unchanged():
  rngs = nnx.Rngs(0)
  calls = [
      lambda m: m(3, 4, dtype=BF16, param_dtype=BF16, rngs=rngs),
      lambda m: m(3, 4, gate_fn=jax.nn.relu, activation_fn=jax.nn.elu,
                  rngs=rngs),
      lambda m: m(3, 4, kernel_init=nnx.initializers.xavier_uniform(),
                  recurrent_kernel_init=nnx.initializers.orthogonal(),
                  bias_init=nnx.initializers.zeros_init(),
                  carry_init=nnx.initializers.ones, keep_rngs=False,
                  promote_dtype=nnx_promote_dtype, kernel_metadata={},
                  recurrent_kernel_metadata={}, bias_metadata={}, rngs=rngs),
  ]
  for ours in (vnnx.LSTM, vnnx.GRU):
    for call in calls:
      call(ours)
  vnnx.Elman(3, 4, residual=True, activation_fn=jax.nn.relu, dtype=BF16,
             rngs=rngs)
  for ours in (linen.LSTM, linen.GRU):
    ours(4, jax.nn.sigmoid, jnp.tanh, nn.initializers.lecun_normal(),
         nn.initializers.orthogonal(), nn.initializers.zeros_init(), BF16,
         F32, nn.initializers.ones)
  linen.Elman(4, jax.nn.relu, residual=True, dtype=BF16)


@pytest.mark.parametrize('name', registry.names())
def test_recurrent_kernel_init_is_the_one_name(name):
  """Every cell (each has a recurrent kernel) and its Linen and NNX modules
  take ``recurrent_kernel_init``, flax's name; the old ``recurrent_init``
  is an unknown keyword."""
  ones = jax.nn.initializers.ones
  entry = registry.METHODS[name]
  factory = functools.partial(entry.build or entry.factory, H)
  params = factory(recurrent_kernel_init=ones).init(jax.random.key(0), D)
  np.testing.assert_array_equal(params['recurrent_kernel'], 1.0)
  with pytest.raises(TypeError, match="keyword argument 'recurrent_init'"
                     ) as excinfo:
    factory(recurrent_init=ones)
  _one_line(excinfo)
  module = functools.partial(vnnx.module_for(entry), D, H,
                             **entry.example, rngs=nnx.Rngs(0))
  np.testing.assert_array_equal(
      module(recurrent_kernel_init=ones).recurrent_kernel[...], 1.0)
  with pytest.raises(TypeError, match="keyword argument 'recurrent_init'"):
    module(recurrent_init=ones)
  module = linen.module_for(entry)
  assert 'recurrent_init' not in module.__dataclass_fields__
  module = functools.partial(module, H, **entry.example)
  assert module(recurrent_kernel_init=ones).recurrent_kernel_init is ones
  with pytest.raises(TypeError, match="keyword argument 'recurrent_init'"):
    module(recurrent_init=ones)


# ----------------------------------------------------------------------------
# flax.nnx: LSTM and Elman step for step against Flax's cells.


def _nnx_pair(name, options, seed=0):
  if name == 'lstm':
    ours = vnnx.LSTM(D, H, **COMMON, **options, rngs=nnx.Rngs(seed))
    theirs = nnx.LSTMCell(D, H, **COMMON, **options, rngs=nnx.Rngs(seed))
    _load_nnx(theirs, vnnx.lstm_params_to_flax(vnnx.to_params(ours)))
  else:
    ours = vnnx.Elman(D, H, **COMMON, **options, rngs=nnx.Rngs(seed))
    theirs = nnx.SimpleCell(D, H, **COMMON, **options, rngs=nnx.Rngs(seed))
    _load_nnx(theirs, vnnx.elman_params_to_flax(vnnx.to_params(ours)))
  return ours, theirs


def _run_both(ours, theirs, carry_ours, carry_theirs, xs, tol):
  """Steps both cells over ``xs``: the same values, and after each step the
  same dtypes (carry and output) as Flax's."""
  for t in range(xs.shape[1]):
    carry_ours, y = ours(carry_ours, xs[:, t])
    with _standard():
      carry_theirs, y_flax = theirs(carry_theirs, xs[:, t])
    _close(tuple(jax.tree_util.tree_leaves(carry_ours)),
           tuple(jax.tree_util.tree_leaves(carry_theirs)), tol)
    _close(y, y_flax, tol)
    assert _carry_dtypes(carry_ours) == _carry_dtypes(carry_theirs)
    assert y.dtype == y_flax.dtype
  return carry_ours, y


@pytest.mark.parametrize('name', ['lstm', 'elman'])
@pytest.mark.parametrize('dtypes', sorted(DTYPES))
def test_nnx_values_equal_flax_for_each_dtype_pair(name, dtypes):
  dtype, param_dtype, tol = DTYPES[dtypes]
  if name == 'elman' and dtype is None:
    dtype = F32    # flax.nnx.SimpleCell's default
  ours, theirs = _nnx_pair(name, dict(dtype=dtype, param_dtype=param_dtype))
  carry = ours.initialize_carry((B, D))
  with _standard():
    flax_carry = theirs.initialize_carry((B, D), nnx.Rngs(0))
  # Flax's carry starts in param_dtype and may change type at the first
  # step, which its RNN's scan refuses; ours starts in the type Flax's has
  # after a step and keeps it: for the LSTM the wider of dtype and
  # param_dtype (f * c mixes them), for Elman dtype (bfloat16 over float32
  # params included: flax's activation is computed in it).
  want = _wider(param_dtype, dtype or param_dtype)
  if name == 'elman':
    want = jnp.dtype(dtype)
  assert set(_carry_dtypes(carry)) == {want}
  if want == param_dtype:
    assert _carry_dtypes(carry) == _carry_dtypes(flax_carry)
  carry, y = _run_both(ours, theirs, carry, flax_carry, _xs(), tol)
  assert set(_carry_dtypes(carry)) == {want} and y.dtype == want


def test_nnx_elman_in_bfloat16_over_float32_params_is_flax_simple_cell():
  """The carry and output in bfloat16, as flax's, through a whole scan:
  close to flax's nnx.RNN (started from a bfloat16 carry, which its scan
  needs) inside nnx.RNN and vnnx.RNN; flax adds the bias to the input's
  product, ours to the sum, so bfloat16 rounds them apart by an ulp."""
  ours, theirs = _nnx_pair('elman', dict(dtype=BF16, param_dtype=F32))
  xs = _xs()
  with _standard():
    want = nnx.RNN(theirs)(xs, initial_carry=jnp.zeros((B, H), BF16))
  assert want.dtype == BF16
  for rnn in (nnx.RNN, vnnx.RNN):
    got = rnn(ours)(xs)
    assert got.dtype == BF16
    _close(got, want, DTYPES['bf16_compute_f32_params'][2])
  # The Linen module, against flax.linen.SimpleCell.
  module, flax_module, convert = _linen_pair(
      'elman', dict(COMMON, dtype=BF16, param_dtype=F32))
  params = _linen_params(module)
  ys = nn.RNN(module).apply({'params': {'cell': params}}, xs)
  with _standard():
    want = nn.RNN(flax_module).apply(
        {'params': {'cell': convert(params['cell'])}}, xs,
        initial_carry=jnp.zeros((B, H), BF16))
  assert ys.dtype == want.dtype == BF16
  _close(ys, want, DTYPES['bf16_compute_f32_params'][2])


@pytest.mark.parametrize('name', ['lstm', 'elman'])
@pytest.mark.parametrize('fns', sorted(FUNCTIONS))
def test_nnx_values_equal_flax_for_gate_and_activation_functions(name, fns):
  options = dict(FUNCTIONS[fns])
  if name == 'elman':
    options.pop('gate_fn', None)
    options['residual'] = fns != 'default'
  ours, theirs = _nnx_pair(name, options)
  _run_both(ours, theirs, ours.initialize_carry((B, D)),
            theirs.initialize_carry((B, D), nnx.Rngs(0)), _xs(), 1e-5)


@pytest.mark.parametrize('name', ['lstm', 'elman'])
def test_nnx_carry_init_draws_as_flax(name):
  normal = nnx.initializers.normal(1.0)
  # In initialize_carry, from the same stream.
  ours, theirs = _nnx_pair(name, {})
  carry = ours.initialize_carry((B, D), nnx.Rngs(carry=5), carry_init=normal)
  want = theirs.initialize_carry((B, D), nnx.Rngs(carry=5), carry_init=normal)
  chex.assert_trees_all_equal(tuple(jax.tree_util.tree_leaves(carry)),
                              tuple(jax.tree_util.tree_leaves(want)))
  assert np.all(np.asarray(jax.tree_util.tree_leaves(carry)[0]) != 0)
  _run_both(ours, theirs, carry, want, _xs(), 1e-5)
  # At construction, and from the stream kept by keep_rngs.
  with warnings.catch_warnings():
    warnings.simplefilter('ignore')   # flax deprecates both
    ours, theirs = _nnx_pair(name, dict(carry_init=normal, keep_rngs=True))
    want = theirs.initialize_carry((B, D))
  chex.assert_trees_all_equal(
      tuple(jax.tree_util.tree_leaves(ours.initialize_carry((B, D)))),
      tuple(jax.tree_util.tree_leaves(want)))


def test_nnx_promote_dtype_and_metadata_are_flax_hooks():
  # Flax's hook with dtype None infers the wider dtype: float32 maths on
  # bfloat16 params for float32 inputs, as Flax's cell computes.
  options = dict(param_dtype=BF16, promote_dtype=nnx_promote_dtype)
  ours, theirs = _nnx_pair('lstm', options)
  x = _xs()[:, 0]
  with _standard():   # the hook (Flax's) mixes the dtypes implicitly
    _, y = ours(ours.initialize_carry((B, D)), x)
    _, want = theirs(theirs.initialize_carry((B, D), nnx.Rngs(0)), x)
  assert want.dtype == F32
  _close(y, want, 1e-2)   # ours keeps the carry in bfloat16
  module = vnnx.GRU(D, H, kernel_metadata={'tag': 'in'},
                    recurrent_kernel_metadata={'tag': 'rec'},
                    bias_metadata={'tag': 'b'}, rngs=nnx.Rngs(0))
  tags = {name: getattr(module, name).get_metadata()['tag']
          for name in ('input_kernel', 'recurrent_gates_kernel',
                       'recurrent_kernel', 'bias')}
  assert tags == {'input_kernel': 'in', 'recurrent_gates_kernel': 'rec',
                  'recurrent_kernel': 'rec', 'bias': 'b'}


# ----------------------------------------------------------------------------
# The GRU: what it shares with Flax's.


def _gru_params_to_flax_first_step(params):
  """Our GRU params as flax.nnx.GRUCell's, exact from a zero carry.

  From ``h = 0`` the reset gate has nothing to act on, and Flax's
  ``h = (1 - z) n`` is ours ``z n`` with ``z``'s pre-activation negated.
  """
  negate_z = lambda a: jnp.concatenate(
      [a[..., :H], -a[..., H:2 * H], a[..., 2 * H:]], axis=-1)
  recurrent = jnp.concatenate(
      [params['recurrent_gates_kernel'], params['recurrent_kernel']], -1)
  return {'dense_i': {'kernel': negate_z(params['input_kernel']),
                      'bias': negate_z(params['bias'])},
          'dense_h': {'kernel': negate_z(recurrent)}}


@pytest.mark.parametrize('dtypes', sorted(DTYPES))
def test_nnx_gru_first_step_equals_flax(dtypes):
  dtype, param_dtype, tol = DTYPES[dtypes]
  # hard_sigmoid, like sigmoid, has g(-a) = 1 - g(a).
  options = dict(COMMON, dtype=dtype, param_dtype=param_dtype,
                 gate_fn=jax.nn.hard_sigmoid, activation_fn=jax.nn.elu)
  ours = vnnx.GRU(D, H, **options, rngs=nnx.Rngs(0))
  theirs = nnx.GRUCell(D, H, **options, rngs=nnx.Rngs(0))
  _load_nnx(theirs, _gru_params_to_flax_first_step(vnnx.to_params(ours)))
  carry = ours.initialize_carry((B, D))
  with _standard():
    flax_carry = theirs.initialize_carry((B, D), nnx.Rngs(0))
    want_carry, want = theirs(flax_carry, _xs()[:, 0])
  new, y = ours(carry, _xs()[:, 0])
  _close(y, want, tol)
  _close(new.h, want_carry, tol)
  assert y.dtype == want.dtype and new.h.dtype == want_carry.dtype
  if flax_carry.dtype != carry.h.dtype:
    return   # dtype wider than param_dtype: ours draws in the wider one
  normal = nnx.initializers.normal(1.0)
  np.testing.assert_array_equal(
      ours.initialize_carry((B, D), nnx.Rngs(carry=1), normal).h,
      theirs.initialize_carry((B, D), nnx.Rngs(carry=1), normal))


# ----------------------------------------------------------------------------
# Inside Flax's RNN and Bidirectional.


@pytest.mark.parametrize('name', ['lstm', 'elman'])
def test_inside_nnx_rnn_and_bidirectional_as_flax(name):
  xs, lengths = _xs(), jnp.array([3, 1])
  normal = nnx.initializers.normal(1.0)
  options = dict(carry_init=normal)
  with warnings.catch_warnings():
    warnings.simplefilter('ignore')   # flax prefers carry_init in the call
    ours, theirs = _nnx_pair(name, options)
    back_ours, back_theirs = _nnx_pair(name, options, seed=1)
  for reverse in (False, True):
    run = lambda cell, reverse=reverse: nnx.RNN(
        cell, return_carry=True, reverse=reverse, keep_order=True)(
            xs, seq_lengths=lengths)
    with _standard():
      want = run(theirs)
    _close(jax.tree_util.tree_leaves(run(ours)),
           jax.tree_util.tree_leaves(want), 1e-5)
  bidirectional = lambda f, b: nnx.Bidirectional(
      nnx.RNN(f), nnx.RNN(b), return_carry=True)(xs, seq_lengths=lengths)
  with _standard():
    want = bidirectional(theirs, back_theirs)
  _close(jax.tree_util.tree_leaves(bidirectional(ours, back_ours)),
         jax.tree_util.tree_leaves(want), 1e-5)


def test_gru_inside_nnx_rnn_reversed_equals_unroll():
  xs, lengths = _xs(), jnp.array([3, 2])
  module = vnnx.GRU(D, H, gate_fn=jax.nn.hard_sigmoid, rngs=nnx.Rngs(0))
  carry, ys = nnx.RNN(module, return_carry=True, reverse=True,
                      keep_order=True)(xs, seq_lengths=lengths)
  cell = cells.gru(H, gate_fn=jax.nn.hard_sigmoid)
  for b, n in enumerate(lengths.tolist()):
    state, want = unroll(cell, vnnx.to_params(module), cell.initial_state(1),
                         xs[b:b + 1, :n][:, ::-1])
    np.testing.assert_allclose(ys[b, :n], want[0, ::-1], atol=1e-6)
    np.testing.assert_allclose(carry.h[b], state.h[0], atol=1e-6)


# ----------------------------------------------------------------------------
# flax.linen.


def _linen_pair(name, options):
  if name == 'lstm':
    return (linen.LSTM(H, **options), nn.LSTMCell(H, **options),
            linen.lstm_params_to_flax)
  return (linen.Elman(H, **options), nn.SimpleCell(H, **options),
          linen.elman_params_to_flax)


def _linen_params(module, seed=0):
  carry = module.initialize_carry(jax.random.key(0), (B, D))
  return module.init(jax.random.key(seed), carry, _xs()[:, 0])['params']


@pytest.mark.parametrize('name', ['lstm', 'elman'])
@pytest.mark.parametrize('case', sorted(DTYPES) + ['relu_elu', 'carry_init'])
def test_linen_values_equal_flax(name, case):
  options, tol = dict(COMMON), 1e-5
  if case in DTYPES:
    dtype, param_dtype, tol = DTYPES[case]
    options.update(dtype=dtype, param_dtype=param_dtype)
  elif case == 'relu_elu':
    options.update(FUNCTIONS[case])
    if name == 'elman':
      options.pop('gate_fn')
      options['residual'] = True
  else:
    options['carry_init'] = nn.initializers.normal(1.0)
  ours, theirs, convert = _linen_pair(name, options)
  params = _linen_params(ours)
  flax_params = convert(params['cell'])
  key = jax.random.key(3)
  carry = ours.initialize_carry(key, (B, D))
  with _standard():
    flax_carry = theirs.initialize_carry(key, (B, D))
  if case == 'carry_init':
    chex.assert_trees_all_equal(tuple(jax.tree_util.tree_leaves(carry)),
                                tuple(jax.tree_util.tree_leaves(flax_carry)))
  xs = _xs()
  for t in range(T):
    carry, y = ours.apply({'params': params}, carry, xs[:, t])
    with _standard():
      flax_carry, y_flax = theirs.apply({'params': flax_params}, flax_carry,
                                        xs[:, t])
    _close(tuple(jax.tree_util.tree_leaves(carry)),
           tuple(jax.tree_util.tree_leaves(flax_carry)), tol)
    _close(y, y_flax, tol)


@pytest.mark.parametrize('name', ['lstm', 'elman'])
def test_inside_nn_rnn_and_bidirectional_as_flax(name):
  xs, lengths = _xs(), jnp.array([3, 1])
  options = dict(COMMON, carry_init=nn.initializers.normal(1.0))
  ours, theirs, convert = _linen_pair(name, options)
  params = _linen_params(ours)
  flax_params = {'cell': convert(params['cell'])}
  for reverse in (False, True):
    run = lambda cell, p, reverse=reverse: nn.RNN(
        cell, return_carry=True, reverse=reverse, keep_order=True).apply(
            {'params': p}, xs, seq_lengths=lengths,
            init_key=jax.random.key(4))
    with _standard():
      want = run(theirs, flax_params)
    _close(jax.tree_util.tree_leaves(run(ours, {'cell': params})),
           jax.tree_util.tree_leaves(want), 1e-5)
  both = {'forward_rnn': {'cell': params}, 'backward_rnn': {'cell': params}}
  flax_both = {'forward_rnn': flax_params, 'backward_rnn': flax_params}
  bidirectional = lambda cell, p: nn.Bidirectional(
      nn.RNN(cell), nn.RNN(cell), return_carry=True).apply(
          {'params': p}, xs, seq_lengths=lengths)
  with _standard():
    want = bidirectional(theirs, flax_both)
  _close(jax.tree_util.tree_leaves(bidirectional(ours, both)),
         jax.tree_util.tree_leaves(want), 1e-5)


def test_converters_invert():
  params = cells.lstm(H).init(jax.random.key(0), D)
  for to, back in ((linen.lstm_params_to_flax, linen.lstm_params_from_flax),
                   (vnnx.lstm_params_to_flax, vnnx.lstm_params_from_flax)):
    chex.assert_trees_all_equal(back(to(params)), params)
  params = cells.elman(H).init(jax.random.key(0), D)
  for to, back in ((linen.elman_params_to_flax, linen.elman_params_from_flax),
                   (vnnx.elman_params_to_flax, vnnx.elman_params_from_flax)):
    chex.assert_trees_all_equal(back(to(params)), params)


# ----------------------------------------------------------------------------
# carry_init reaches every carry, through every wrapper.


def test_nnx_carry_init_through_every_module():
  r = nnx.Rngs(0)
  ones = nnx.initializers.ones
  modules = {
      'vcrnn': vnnx.VCRNN(D, H, rngs=r),
      'rhn': vnnx.RHN(D, H, 2, rngs=r),
      'act': vnnx.ACT(vnnx.LSTM(D + 1, H, rngs=r), rngs=r),
      'repeat': vnnx.Repeat(vnnx.GRU(D + 1, H, rngs=r)),
      'stack': vnnx.Stack([vnnx.GRU(D, H, rngs=r), vnnx.LSTM(H, 2, rngs=r)]),
  }
  for name, module in modules.items():
    carry = module.initialize_carry((B, D), nnx.Rngs(0), carry_init=ones)
    assert all(np.all(np.asarray(a) == 1)
               for a in jax.tree_util.tree_leaves(carry)), name
  skipper = vnnx.Skip(vnnx.LSTM(D, H, carry_init=ones, rngs=r), rngs=r)
  carry = skipper.initialize_carry((B, D), nnx.Rngs(0))
  np.testing.assert_array_equal(carry.cell.c, 1.0)
  np.testing.assert_array_equal(carry.update_prob, 1.0)  # Skip's own: as is
  np.testing.assert_array_equal(carry.output, 0.0)
  act_module = vnnx.ACT(vnnx.GRU(D + 1, H, carry_init=ones, keep_rngs=True,
                                 rngs=r), rngs=r)
  np.testing.assert_array_equal(act_module.initialize_carry((B, D)), 1.0)
  with pytest.raises(ValueError, match='carry_init draws from a key: pass '
                     'rngs'):
    vnnx.GRU(D, H, rngs=r).initialize_carry(
        (B, D), carry_init=nnx.initializers.normal())
  # nnx.RNN and ours pass their rngs to it.
  normal = nnx.initializers.normal()
  module = vnnx.Elman(D, H, carry_init=normal, rngs=r)
  carry, _ = vnnx.RNN(module, return_carry=True)(
      jnp.zeros((B, 0, D), F32), rngs=nnx.Rngs(carry=2))
  np.testing.assert_array_equal(
      carry, module.initialize_carry((B, D), nnx.Rngs(carry=2)))


def test_linen_carry_init_through_wrappers():
  ones = nn.initializers.ones
  for module in (linen.ACT(linen.LSTM(H, carry_init=ones)),
                 linen.Stack([linen.GRU(H, carry_init=ones),
                              linen.Elman(2, carry_init=ones)]),
                 linen.Repeat(linen.GRU(H, carry_init=ones))):
    carry = module.initialize_carry(jax.random.key(0), (B, D))
    assert all(np.all(np.asarray(a) == 1)
               for a in jax.tree_util.tree_leaves(carry))
  carry = linen.Skip(linen.LSTM(H, carry_init=ones)).initialize_carry(
      jax.random.key(0), (B, D))
  np.testing.assert_array_equal(carry.cell.h, 1.0)
  np.testing.assert_array_equal(carry.output, 0.0)


# ----------------------------------------------------------------------------
# Settings declared once: every module default is its factory's.

# Every method of the registry's table: its module and its pure factory;
# for a wrapper also the module module_for makes from its row (the rule of
# registry.Entry).
def _rows():
  for name, e in registry.METHODS.items():
    yield name, e
    if e.family == 'wrapper':
      yield f'made_{name}', _methods.made(name)


ROW_IDS = [name for name, _ in _rows()]
LINEN_FACTORIES = [(linen.module_for(e), e.factory) for _, e in _rows()]
NNX_FACTORIES = [(vnnx.module_for(e), e.factory) for _, e in _rows()]


def _factory_defaults(factory):
  return {name: p.default
          for name, p in inspect.signature(factory).parameters.items()
          if p.default is not inspect.Parameter.empty}


@pytest.mark.parametrize('module,factory', LINEN_FACTORIES, ids=ROW_IDS)
def test_linen_field_defaults_are_the_factory_defaults(module, factory):
  fields = {f.name: f.default for f in dataclasses.fields(module)}
  for name, default in _factory_defaults(factory).items():
    assert fields[name] is default, (module.__name__, name)


@pytest.mark.parametrize('module,factory', NNX_FACTORIES, ids=ROW_IDS)
def test_nnx_defaults_are_the_factory_defaults(module, factory):
  params = inspect.signature(module.__init__).parameters
  for name, default in _factory_defaults(factory).items():
    assert params[name].default is default, (module.__name__, name)


# ----------------------------------------------------------------------------
# Misuse: one line each, naming the right class.


def _one_line(excinfo):
  assert '\n' not in str(excinfo.value), str(excinfo.value)


@pytest.mark.parametrize('name', registry.names('wrapper', 'stack'))
def test_a_factory_for_a_cell_is_a_one_line_error(name):
  entry = registry.METHODS[name]

  def wrap(cell):
    if name == 'stack':
      return entry.factory([cells.gru(4), cell], **entry.example)
    return entry.factory(cell, **entry.example)

  with pytest.raises(ValueError, match=r'got the factory cells.gru: call '
                     r'it, e.g. cells.gru\(8\)') as excinfo:
    wrap(cells.gru)
  _one_line(excinfo)
  with pytest.raises(ValueError, match='got the Flax module GRU'):
    wrap(linen.GRU(4))


def test_modules_are_not_each_others_subclasses():
  r = nnx.Rngs(0)
  assert not isinstance(vnnx.GRU(D, H, rngs=r), vnnx.Elman)
  assert not isinstance(vnnx.VCGRU(D, H, rngs=r), vnnx.VCRNN)
  assert not isinstance(vnnx.EIREHN(D, H, 2, rngs=r), vnnx.SREHN)
  assert not issubclass(linen.VCGRU, linen.VCRNN)
  assert not issubclass(linen.EIREHN, linen.SREHN)
  with pytest.raises(TypeError, match=r'GRU.__init__\(\) got an unexpected '
                     "keyword argument 'recurrent_kernel_initt'"):
    vnnx.GRU(D, H, recurrent_kernel_initt=None, rngs=r)
  with pytest.raises(TypeError, match=r'VCGRU.__init__\(\)'):
    vnnx.VCGRU(D, H, depth=2, rngs=r)


def test_stack_and_repeat_need_rngs_only_to_draw():
  r = nnx.Rngs(0)
  layers = [vnnx.GRU(D, H, rngs=r), vnnx.GRU(H, H, rngs=r)]
  stack = vnnx.Stack(layers)
  assert vnnx.RNN(stack)(_xs()).output.shape == (B, T, H)
  vnnx.Repeat(vnnx.GRU(D + 1, H, rngs=r))
  with pytest.raises(ValueError, match='Stack draws dropout keys: pass '
                     'rngs') as excinfo:
    vnnx.Stack(layers, dropout=0.5)
  _one_line(excinfo)
  with pytest.raises(ValueError, match=r"ACT draws its params \['halting'\]"):
    vnnx.ACT(vnnx.GRU(D + 1, H, rngs=r), rngs=None)


def test_act_input_width_error_states_the_flag_rule():
  r = nnx.Rngs(0)
  module = vnnx.ACT(vnnx.GRU(4, 8, rngs=r), rngs=r)
  with pytest.raises(InputSizeError, match=r'RNN\(ACT\): inputs must have '
                     r'shape \[\*batch, time, 3\].*ACT appends a first-step '
                     r'flag.*in_features=4, reads 3 features; for 4 features '
                     r'build it with in_features=5') as excinfo:
    vnnx.RNN(module)(jnp.ones((2, 3, 4), F32))
  _one_line(excinfo)
  with pytest.raises(InputSizeError, match=r'ACT: inputs must have shape '
                     r'\[\*batch, 3\].*first-step flag'):
    module(module.initialize_carry((2, 3)), jnp.ones((2, 4), F32))
  assert 'first-step flag' in inspect.getdoc(vnnx.ACT)
  assert cell_output(vnnx.RNN(module)(jnp.ones((2, 3, 3), F32))).shape == (
      2, 3, 8)


def test_bad_cell_arguments_are_one_line_errors():
  for call, match in [
      (lambda: cells.lstm(H, dtype='int32'), 'dtype must be a floating'),
      (lambda: cells.gru(H, gate_fn=1.0), 'gate_fn must be a function'),
      (lambda: cells.elman(H, param_dtype=None),
       'param_dtype must be a floating dtype')]:
    with pytest.raises(ValueError, match=match) as excinfo:
      call()
    _one_line(excinfo)
