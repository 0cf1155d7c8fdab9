"""The Flax modules of adaptive depth against the pure ``vcrnn_jax.depth``.

Each module (Linen and NNX, per token and per example, each with both
halting rules) around a plain Flax attention block must give the values and the
gradients of the pure function with the same params, in float64, with
padding; the block is written once per API and applied functionally on
the pure side (``module.apply`` for Linen, ``nnx.split`` / ``nnx.merge``
for NNX), so the test does not go through the modules' own plumbing.
"""

import contextlib
import functools
import io
import pathlib
import re
import warnings

import chex
from flax import nnx
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import depth, linen, loops, ponder
from vcrnn_jax import nnx as vnnx

B, T, F, M, O = 2, 4, 4, 3, 2
LENGTHS = (4, 2)
F64 = {'param_dtype': jnp.float64}
TOL = {'rtol': 1e-12, 'atol': 1e-13}
KINDS = ['token', 'token_pondernet', 'pondernet', 'act']


def _fast_jit(f, **kwargs):
  # Small programs that run once: compile time is their cost.
  return jax.jit(f, compiler_options={'xla_backend_optimization_level': 0},
                 **kwargs)


def _data(seed=0):
  h = jax.random.normal(jax.random.key(seed), (B, T, F), jnp.float64)
  mask = jnp.arange(T)[None] < jnp.asarray(LENGTHS)[:, None]
  return h, mask


class LinenBlock(nn.Module):
  """Flax's attention masked by ``context.mask``, a residual, a readout."""

  def setup(self):
    self.attention = nn.MultiHeadDotProductAttention(num_heads=2, **F64)
    self.head = nn.Dense(O, **F64)

  def __call__(self, h, context):
    mask = nn.make_attention_mask(context.mask, context.mask)
    return h + self.attention(h, mask=mask)

  def readout(self, h, context):
    return self.head(depth.masked_mean(h, context.mask))


class NnxBlock(nnx.Module):
  """The same block of ``flax.nnx`` layers."""

  def __init__(self, *, rngs):
    self.attention = nnx.MultiHeadAttention(2, F, decode=False, rngs=rngs,
                                            **F64)
    self.head = nnx.Linear(F, O, rngs=rngs, **F64)

  def __call__(self, h, context):
    mask = nnx.make_attention_mask(context.mask, context.mask)
    # jax.nn.dot_product_attention, which nnx's attention calls, promotes
    # the logits with float32: no path under the suite's strict promotion.
    with jax.numpy_dtype_promotion('standard'):
      return h + self.attention(h, mask=mask)

  def readout(self, h, context):
    return self.head(depth.masked_mean(h, context.mask))


def _per_token(kind):
  return kind.startswith('token')


def _options(kind, **extra):
  if kind == 'token':
    return {'max_depth': M, 'halting_bias': -0.5, **extra}
  if kind == 'token_pondernet':
    return {'max_depth': M, 'halting': 'pondernet', 'halting_bias': -0.5,
            **extra}
  return {'max_depth': M, 'halting': kind, 'readout': 'readout', **extra}


def _pure(kind, block, readout, **extra):
  options = _options(kind, **extra)
  if _per_token(kind):
    return depth.per_token(block, **options)
  return depth.per_example(block, **{**options, 'readout': readout})


def _loss(apply, kind, h, mask):
  out_h, out = apply(h, mask)
  value = (jnp.sum(jnp.where(mask[..., None], jnp.sin(out_h), 0.0))
           + 0.1 * depth.mean_ponder(out))
  if kind == 'token_pondernet':
    value = value + 0.01 * jnp.sum(ponder.kl_to_geometric(out, 0.2))
  elif kind != 'token':
    value = value + jnp.sum(out.output ** 2)
  return value, (out_h, out)


def _linen(kind, **extra):
  """The Linen module, its variables and the pure function of its block."""
  h, mask = _data()
  block = LinenBlock()
  module = (linen.PerTokenDepth if _per_token(kind)
            else linen.PerExampleDepth)(block, **_options(kind, **extra))
  variables = module.init(jax.random.key(1), h, mask)

  def pure_method(method):
    return lambda params, h, context: block.apply(
        {'params': params}, h, context=context, method=method)

  return module, variables, _pure(kind, pure_method('__call__'),
                                  pure_method('readout'), **extra)


def _nnx(kind, **extra):
  """The NNX module and the pure function of its block."""
  rngs = nnx.Rngs(1)
  block = NnxBlock(rngs=rngs)
  module = (vnnx.PerTokenDepth if _per_token(kind)
            else vnnx.PerExampleDepth)(block, F, **_options(kind, **extra),
                                       deterministic=True, rngs=rngs)
  graphdef, _, rest = nnx.split(block, nnx.Param, ...)

  def pure_method(method):
    return lambda params, h, context: getattr(
        nnx.merge(graphdef, params, rest), method)(h, context)

  return module, _pure(kind, pure_method('__call__'),
                       pure_method('readout'), **extra)


def _check_outputs(kind, got, want):
  (value, (out_h, out)), grads = got
  (want_value, (want_h, want_out)), want_grads = want
  np.testing.assert_array_equal(out.steps, want_out.steps)
  chex.assert_trees_all_close((value, out_h, out),
                              (want_value, want_h, want_out), **TOL)
  chex.assert_trees_all_close(grads, want_grads, **TOL)
  assert out_h.dtype == jnp.float64 and int(out.depth) >= 2
  # The padded positions (example 1 from t=2) took no step.
  _, mask = _data()
  if _per_token(kind):
    assert not np.any(np.asarray(out.steps)[~np.asarray(mask)])
  # The attention and the halting unit got gradients.
  used = grads['block']['attention'], grads['halting']
  assert all(bool(jnp.any(g != 0)) for g in jax.tree_util.tree_leaves(used))


@pytest.mark.parametrize('kind', KINDS)
def test_linen_module_equals_the_pure_function(kind):
  module, variables, pure = _linen(kind)
  h, mask = _data()
  params = variables['params']
  assert sorted(params) == ['block', 'halting']
  chex.assert_trees_all_equal_shapes(
      params, pure.init(jax.random.key(0), F, params['block']))

  def module_loss(params):
    return _loss(lambda h, mask: module.apply({'params': params}, h, mask),
                 kind, h, mask)

  def pure_loss(params):
    return _loss(functools.partial(pure.apply, params), kind, h, mask)

  grad = lambda f: _fast_jit(jax.value_and_grad(f, has_aux=True))
  _check_outputs(kind, grad(module_loss)(params), grad(pure_loss)(params))


@pytest.mark.parametrize('kind', KINDS)
def test_nnx_module_equals_the_pure_function(kind):
  module, pure = _nnx(kind)
  h, mask = _data()
  params = vnnx.to_params(module)
  assert sorted(params) == ['block', 'halting']

  @nnx.jit
  def module_step(module):
    return nnx.value_and_grad(lambda m: _loss(m, kind, h, mask),
                              has_aux=True)(module)

  def pure_loss(params):
    return _loss(functools.partial(pure.apply, params), kind, h, mask)

  (value, aux), grads = module_step(module)
  _check_outputs(
      kind, ((value, aux), vnnx.to_params(grads)),
      _fast_jit(jax.value_and_grad(pure_loss, has_aux=True))(params))


@pytest.mark.parametrize('api', ['linen', 'nnx'])
def test_while_loop_equals_masked_scan_through_the_module(api):
  h, mask = _data(seed=2)
  loop = loops.LoopConfig('while', checkpoints=1)
  if api == 'linen':
    fast, variables, _ = _linen('pondernet', loop=loop)
    slow = fast.clone(loop='scan')

    def run(module):
      f = lambda p: _loss(
          lambda h, m: module.apply({'params': p}, h, m), 'pondernet', h,
          mask)
      return _fast_jit(jax.value_and_grad(f, has_aux=True))(
          variables['params'])
    got, want = run(fast), run(slow)
  else:
    module, _ = _nnx('pondernet', loop=loop)

    def run(module):
      return nnx.jit(nnx.value_and_grad(
          lambda m: _loss(m, 'pondernet', h, mask), has_aux=True))(module)
    got = run(module)
    module.loop = 'scan'     # read at every call
    want = run(module)
  assert int(got[0][1][1].depth) == M
  chex.assert_trees_all_close(got, want, rtol=1e-12, atol=1e-13)


class Model(nn.Module):
  """A layer, then the depth module built inside ``nn.compact``."""

  @nn.compact
  def __call__(self, h, mask):
    h = nn.Dense(F, **F64)(h)
    return linen.PerTokenDepth(LinenBlock(), max_depth=M)(h, mask)


def test_linen_module_nests_in_a_model():
  h, mask = _data()
  variables = Model().init(jax.random.key(0), h, mask)
  params = variables['params']
  # The block's params live in the depth module's, not beside it.
  assert sorted(params) == ['Dense_0', 'PerTokenDepth_0']
  assert sorted(params['PerTokenDepth_0']) == ['block', 'halting']
  inner = nn.Dense(F, **F64).apply({'params': params['Dense_0']}, h)
  alone = linen.PerTokenDepth(LinenBlock(), max_depth=M)
  chex.assert_trees_all_close(
      _fast_jit(Model().apply)(variables, h, mask),
      alone.apply({'params': params['PerTokenDepth_0']}, inner, mask), **TOL)


class LinenDropoutBlock(nn.Module):
  """A residual dropout layer: off without a key, as Flax's convention."""

  @nn.compact
  def __call__(self, h, context):
    drop = nn.Dropout(0.5, deterministic=context.key is None)
    return h + drop(nn.Dense(F, **F64)(h))


class NnxDropoutBlock(nnx.Module):

  def __init__(self, *, rngs):
    self.dense = nnx.Linear(F, F, rngs=rngs, **F64)
    self.drop = nnx.Dropout(0.5, rngs=rngs)

  def __call__(self, h):        # no context: the keys come as its rng state
    return h + self.drop(self.dense(h))


def test_linen_dropout_keys_reach_the_block_only_when_not_deterministic():
  h, mask = _data()
  module = linen.PerTokenDepth(LinenDropoutBlock(), max_depth=M,
                               halting_bias=-0.5)
  variables = module.init(jax.random.key(0), h, mask)
  apply = _fast_jit(module.apply, static_argnames='deterministic')
  plain = apply(variables, h, mask)
  key = jax.random.key(7)
  # The block's step n gets fold_in(key, n), as from the pure function.
  one = apply(variables, h, mask, key=key, deterministic=False)
  chex.assert_trees_all_close(
      one, module.make_depth().apply(variables['params'], h, mask, key=key),
      **TOL)
  assert not np.allclose(one[0], plain[0])
  # Without key=, the key is drawn from the 'dropout' rng stream.
  drawn = [apply(variables, h, mask, deterministic=False,
                 rngs={'dropout': jax.random.key(seed)}) for seed in (1, 1, 2)]
  chex.assert_trees_all_close(drawn[0], drawn[1], **TOL)
  assert not np.allclose(drawn[0][0], drawn[2][0])
  # key= alone (deterministic, as for sampled exits) leaves the block alone.
  chex.assert_trees_all_close(apply(variables, h, mask, key=key), plain,
                              **TOL)


def test_nnx_dropout_reseeds_the_blocks_streams_unless_deterministic():
  h, mask = _data()
  rngs = nnx.Rngs(0)
  module = vnnx.PerTokenDepth(NnxDropoutBlock(rngs=rngs), F, max_depth=M,
                              halting_bias=-0.5, rngs=rngs)
  call = nnx.jit(lambda m, key=None: m(h, mask, key=key))
  one, two = call(module), call(module)
  assert not np.allclose(one[0], two[0])     # the module's stream advanced
  key = jax.random.key(3)
  keyed = call(module, key)
  chex.assert_trees_all_close(keyed, call(module, key), **TOL)
  chex.assert_trees_all_close(keyed, module.make_depth().apply(
      vnnx.to_params(module), h, mask, key=key), **TOL)
  assert not np.allclose(keyed[0], call(module, jax.random.key(4))[0])
  module.eval()                               # the block's Dropout too
  assert module.deterministic and module.block.drop.deterministic
  evaluated = call(module)
  chex.assert_trees_all_close(evaluated, call(module, key), **TOL)
  assert not np.allclose(evaluated[0], keyed[0])


def _one_line_error(match, fun, *args, **kwargs):
  with pytest.raises(ValueError, match=match) as info:
    fun(*args, **kwargs)
  assert '\n' not in str(info.value), str(info.value)


class Shrink(nn.Module):
  @nn.compact
  def __call__(self, h):
    return nn.Dense(2)(h)


class NnxShrink(nnx.Module):
  def __init__(self, *, rngs):
    self.dense = nnx.Linear(F, 2, rngs=rngs)

  def __call__(self, h):
    return self.dense(h)


class Stateful(nn.Module):
  @nn.compact
  def __call__(self, h):
    return nn.BatchNorm(use_running_average=False)(h)


def test_bad_blocks_give_one_line_each():
  h = jnp.zeros((B, T, F), jnp.float32)
  shape = r"block must return h's shape \(2, 4, 4\) and dtype float32, got "
  module = linen.PerTokenDepth(Shrink(), max_depth=M)
  _one_line_error(shape + r'shape \(2, 4, 2\)', module.init,
                  jax.random.key(0), h)
  rngs = nnx.Rngs(0)
  nnx_module = vnnx.PerExampleDepth(NnxShrink(rngs=rngs), F, max_depth=M,
                                    rngs=rngs)
  _one_line_error(shape + r'shape \(2, 4, 2\)', nnx_module, h)
  _one_line_error(r'PerTokenDepth: block must be a flax.linen Module, got '
                  r'function\.', linen.PerTokenDepth, lambda h: h,
                  max_depth=M)
  _one_line_error(r'PerTokenDepth: block must be an nnx.Module, got Shrink',
                  vnnx.PerTokenDepth, Shrink(), F, max_depth=M, rngs=rngs)
  _one_line_error(r"PerExampleDepth: the block Shrink has no method 'head'",
                  linen.PerExampleDepth, Shrink(), max_depth=M,
                  readout='head')
  _one_line_error(r"PerExampleDepth: the block NnxShrink has no method "
                  r"'head'", vnnx.PerExampleDepth, NnxShrink(rngs=rngs), F,
                  max_depth=M, readout='head', rngs=rngs)
  _one_line_error(r"variables \['batch_stats'\] besides its 'params'",
                  linen.PerTokenDepth(Stateful(), max_depth=M).init,
                  jax.random.key(0), h)
  _one_line_error(r'PerTokenDepth\.init: h must be \[batch, time, '
                  r'features\], got shape \(4, 4\)', module.init,
                  jax.random.key(0), h[0])
  _one_line_error(r'max_depth must be a positive integer, got 0',
                  linen.PerTokenDepth, Shrink(), max_depth=0)
  _one_line_error(r"inference must be 'train' with halting='act'",
                  vnnx.PerExampleDepth, NnxShrink(rngs=rngs), F, max_depth=M,
                  halting='act', inference='median', rngs=rngs)


# ----------------------------------------------------------------------------
# As a user meets it: the guide, a block's signature, widths, dtypes.

GUIDE = (pathlib.Path(__file__).resolve().parents[1] / 'docs' / 'guides'
         / 'adaptive_depth.md')


def test_the_guide_runs_as_a_user_runs_it():
  """docs/guides/adaptive_depth.md's code cells, in order, in JAX's default
  float32 and promotion (the suite runs in float64, strict)."""
  cells = re.findall(r'```\{code-cell\} ipython3\n(.*?)```',
                     GUIDE.read_text(), re.S)
  assert len(cells) >= 7
  scope = {'__name__': 'guide'}
  with contextlib.ExitStack() as stack:
    stack.enter_context(jax.enable_x64(False))
    stack.enter_context(jax.numpy_dtype_promotion('standard'))
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    for code in cells:
      exec(compile(code, str(GUIDE), 'exec'), scope)  # pylint: disable=exec-used
  # The first block, written for the pure function, as a Linen module.
  assert set(scope['first_variables']['params']) == {'block', 'halting'}
  assert scope['out_h'].dtype == jnp.bfloat16     # dtype=jnp.bfloat16
  kernel = scope['variables']['params']['halting']['kernel']
  assert kernel.dtype == jnp.float32


class MaskBlock(nn.Module):
  @nn.compact
  def __call__(self, h, mask):
    del mask
    return h


class NnxMaskBlock(nnx.Module):
  def __call__(self, h, mask):
    del mask
    return h


def test_a_block_that_takes_the_mask_is_refused_with_the_fix():
  fix = (r"Block\.__call__\(h, mask\) cannot be called as the depth loop "
         r".*name its parameter 'mask' context and read context\.mask\.")
  _one_line_error('PerTokenDepth: Mask' + fix, linen.PerTokenDepth,
                  MaskBlock(), max_depth=M)
  _one_line_error('PerExampleDepth: NnxMask' + fix, vnnx.PerExampleDepth,
                  NnxMaskBlock(), F, max_depth=M, rngs=nnx.Rngs(0))
  _one_line_error(r"ShrinkWithHead\.head\(h, y\) cannot be called",
                  linen.PerExampleDepth, ShrinkWithHead(), max_depth=M,
                  readout='head')


class ShrinkWithHead(nn.Module):
  def __call__(self, h):
    return h

  def head(self, h, y):
    return h + y


def test_errors_name_the_function_called_and_the_fix():
  h = jnp.zeros((B, T, F), jnp.float32)
  wide = jnp.zeros((B, T, F + 2), jnp.float32)
  module = linen.PerTokenDepth(Identity(), max_depth=M)
  variables = module.init(jax.random.key(0), h)
  _one_line_error(r'^PerTokenDepth\.apply: h has 6 features, the params were '
                  r'initialised for 4; call it with h of 4 features, or init '
                  r'it on h of 6\.', module.apply, variables, wide)
  _one_line_error(r'^PerTokenDepth\.apply: every leaf of extra', module.apply,
                  variables, h, extra=jnp.zeros((B + 1,)))
  _one_line_error(r'^PerTokenDepth\.init: mask must be', module.init,
                  jax.random.key(0), h, jnp.ones((B, T + 1), bool))
  nnx_module = vnnx.PerTokenDepth(NnxIdentity(), F, max_depth=M,
                                  rngs=nnx.Rngs(0))
  _one_line_error(r'^PerTokenDepth: h has 6 features, the module was built '
                  r'with features=4; build it with features=6', nnx_module,
                  wide)
  _one_line_error(r'^PerTokenDepth: mask must be', nnx_module, h,
                  jnp.ones((B,), bool))
  sample = vnnx.PerExampleDepth(NnxIdentity(), F, max_depth=M,
                                inference='sample', deterministic=True,
                                rngs=nnx.Rngs(0))
  _one_line_error(r'^PerExampleDepth: key is None; pass key=', sample, h)
  pure = depth.per_token(lambda p, h, c: h, max_depth=M)
  params = pure.init(jax.random.key(0), F, {})
  _one_line_error(r'^per_token\.apply: h has 6 features, the params were '
                  r'made for 4 \(init\(key, features, block_params\)\)',
                  pure.apply, params, wide)


class Identity(nn.Module):
  @nn.compact
  def __call__(self, h):
    return h + 0.1 * nn.Dense(F, use_bias=False)(h)


class NnxIdentity(nnx.Module):
  def __call__(self, h):
    return h


class Bf16Block(nn.Module):
  @nn.compact
  def __call__(self, h):
    return h + nn.Dense(F, dtype=jnp.bfloat16)(jnp.tanh(h))


def test_dtype_is_the_params_with_a_warning_or_the_one_asked_for():
  # Flax's layers mix dtypes under standard promotion, as users run them.
  with jax.numpy_dtype_promotion('standard'):
    _check_dtypes()


def _check_dtypes():
  h = jax.random.normal(jax.random.key(0), (B, T, F), jnp.float32)
  mask = jnp.arange(T)[None] < jnp.asarray(LENGTHS)[:, None]
  h16 = h.astype(jnp.bfloat16)
  module = linen.PerTokenDepth(Identity(), max_depth=M)
  variables = module.init(jax.random.key(0), h, mask)
  # bfloat16 h over float32 params: float32, said once per trace.
  with pytest.warns(UserWarning, match=r'PerTokenDepth\.apply: h is bfloat16 '
                    r'but the halting unit.s params are float32, so it '
                    r'computes in float32 .*pass dtype=jnp\.bfloat16'):
    out_h, out = module.apply(variables, h16, mask)
  assert out_h.dtype == out.ponder.dtype == jnp.float32
  want, _ = module.apply(variables, h16.astype(jnp.float32), mask)
  np.testing.assert_array_equal(out_h, want)
  with warnings.catch_warnings():
    warnings.simplefilter('error')
    module.apply(variables, h, mask)             # no warning in float32
  # dtype=bfloat16: computed in bfloat16 over float32 params; the block
  # must return bfloat16, and the error says how.
  bf16 = linen.PerTokenDepth(Bf16Block(), max_depth=M, dtype=jnp.bfloat16)
  variables = bf16.init(jax.random.key(0), h16, mask)
  out_h, out = bf16.apply(variables, h16, mask)
  assert out_h.dtype == out.ponder.dtype == jnp.bfloat16
  assert variables['params']['halting']['kernel'].dtype == jnp.float32
  pure = bf16.make_depth()
  np.testing.assert_array_equal(pure.apply(variables['params'], h16, mask)[0],
                                out_h)
  _one_line_error(r"block must return h's shape \(2, 4, 4\) and dtype "
                  r'bfloat16, got shape \(2, 4, 4\) and dtype float32 \(a '
                  r'Flax block computes in bfloat16 with '
                  r'dtype=jnp\.bfloat16\)',
                  linen.PerTokenDepth(Identity(), max_depth=M,
                                      dtype=jnp.bfloat16).init,
                  jax.random.key(0), h16, mask)
  _one_line_error(r"dtype must be a floating dtype or None, got 'int32'",
                  depth.per_example, lambda p, h, c: h, max_depth=M,
                  dtype='int32')
