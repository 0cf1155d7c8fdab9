"""The Flax modules of capacity routing against the pure ``vcrnn_jax.routing``.

Each module (Linen and NNX, top-k and threshold selection) around a Flax
attention block that masks the filler slots and, by the gathered tokens'
original positions, the later tokens, must give the values and gradients
of the pure function with the same params, in float64, with padding; the
block is applied functionally on the pure side (``module.apply`` for
Linen, ``nnx.split`` / ``nnx.merge`` for NNX), as in
``tests/test_depth_flax.py``.
"""

import functools

import chex
from flax import nnx
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import linen, routing
from vcrnn_jax import nnx as vnnx

B, T, F, M = 2, 5, 4, 3
LENGTHS = (5, 3)
F64 = {'param_dtype': jnp.float64}
TOL = {'rtol': 1e-12, 'atol': 1e-13}


def _fast_jit(f, **kwargs):
  # Small programs that run once: compile time is their cost.
  return jax.jit(f, compiler_options={'xla_backend_optimization_level': 0},
                 **kwargs)


def _data(seed=0):
  h = jax.random.normal(jax.random.key(seed), (B, T, F), jnp.float64)
  mask = jnp.arange(T)[None] < jnp.asarray(LENGTHS)[:, None]
  return h, mask


def _causal_mask(context):
  """Attend to the selected slots at the same or an earlier position."""
  return nn.combine_masks(
      nn.make_attention_mask(context.mask, context.mask),
      nn.make_attention_mask(context.positions, context.positions,
                             pairwise_fn=jnp.greater_equal))


class LinenBlock(nn.Module):

  @nn.compact
  def __call__(self, h, context):
    h = h + nn.MultiHeadDotProductAttention(num_heads=2, **F64)(
        h, mask=_causal_mask(context))
    return h + jnp.tanh(nn.Dense(F, **F64)(h))


class NnxBlock(nnx.Module):

  def __init__(self, *, rngs):
    self.attention = nnx.MultiHeadAttention(2, F, decode=False, rngs=rngs,
                                            **F64)
    self.dense = nnx.Linear(F, F, rngs=rngs, **F64)

  def __call__(self, h, context):
    # jax.nn.dot_product_attention promotes the logits with float32.
    with jax.numpy_dtype_promotion('standard'):
      h = h + self.attention(h, mask=_causal_mask(context))
    return h + jnp.tanh(self.dense(h))


def _options(selection):
  return {'max_depth': M, 'selection': selection, 'gate_scale': 0.5}


def _loss(apply, h, mask):
  out_h, out = apply(h, mask)
  value = (jnp.sum(jnp.where(mask[..., None], jnp.sin(out_h), 0.0))
           + 0.1 * routing.aux_loss(out))
  return value, (out_h, out)


def _check(got, want):
  (value, (out_h, out)), grads = got
  (want_value, (want_h, want_out)), want_grads = want
  np.testing.assert_array_equal(out.selected, want_out.selected)
  chex.assert_trees_all_close((value, out_h, out),
                              (want_value, want_h, want_out), **TOL)
  chex.assert_trees_all_close(grads, want_grads, **TOL)
  _, mask = _data()
  assert not np.any(np.asarray(out.steps)[~np.asarray(mask)])
  assert len(set(np.asarray(out.steps)[np.asarray(mask)].tolist())) >= 2
  assert all(bool(jnp.any(g != 0))
             for g in jax.tree_util.tree_leaves(grads['router']))


@pytest.mark.parametrize('selection', routing.SELECTIONS)
def test_linen_module_equals_the_pure_function(selection):
  h, mask = _data()
  block = LinenBlock()
  module = linen.PerTokenRouting(block, **_options(selection))
  variables = module.init(jax.random.key(1), h, mask)
  params = variables['params']
  assert sorted(params) == ['block', 'router']
  assert jax.tree_util.tree_map(jnp.shape, params['router']) == {
      'kernel': (F, M), 'bias': (M,)}
  pure = routing.per_token(
      lambda p, h, context: block.apply({'params': p}, h, context=context),
      **_options(selection))

  def module_loss(params):
    return _loss(lambda h, mask: module.apply({'params': params}, h, mask),
                 h, mask)

  def pure_loss(params):
    return _loss(functools.partial(pure.apply, params), h, mask)

  grad = lambda f: _fast_jit(jax.value_and_grad(f, has_aux=True))
  _check(grad(module_loss)(params), grad(pure_loss)(params))


@pytest.mark.parametrize('selection', routing.SELECTIONS)
def test_nnx_module_equals_the_pure_function(selection):
  h, mask = _data()
  rngs = nnx.Rngs(1)
  block = NnxBlock(rngs=rngs)
  module = vnnx.PerTokenRouting(block, F, **_options(selection),
                                deterministic=True, rngs=rngs)
  params = vnnx.to_params(module)
  assert sorted(params) == ['block', 'router']
  graphdef, _, rest = nnx.split(block, nnx.Param, ...)
  pure = routing.per_token(
      lambda p, h, context: nnx.merge(graphdef, p, rest)(h, context),
      **_options(selection))

  @nnx.jit
  def module_step(module):
    return nnx.value_and_grad(lambda m: _loss(m, h, mask),
                              has_aux=True)(module)

  def pure_loss(params):
    return _loss(functools.partial(pure.apply, params), h, mask)

  (value, aux), grads = module_step(module)
  _check(((value, aux), vnnx.to_params(grads)),
         _fast_jit(jax.value_and_grad(pure_loss, has_aux=True))(params))


class LinenDropoutBlock(nn.Module):

  @nn.compact
  def __call__(self, h, context):
    drop = nn.Dropout(0.5, deterministic=context.key is None)
    return h + drop(nn.Dense(F, **F64)(h))


def test_linen_dropout_keys_reach_the_block_only_when_not_deterministic():
  h, mask = _data()
  module = linen.PerTokenRouting(LinenDropoutBlock(), max_depth=M)
  variables = module.init(jax.random.key(0), h, mask)
  apply = _fast_jit(module.apply, static_argnames='deterministic')
  plain = apply(variables, h, mask)
  key = jax.random.key(7)
  one = apply(variables, h, mask, key=key, deterministic=False)
  # The block's step r gets fold_in(key, r), as from the pure function.
  chex.assert_trees_all_close(
      one, module.make_depth().apply(variables['params'], h, mask, key=key),
      **TOL)
  assert not np.allclose(one[0], plain[0])
  chex.assert_trees_all_close(apply(variables, h, mask, key=key), plain,
                              **TOL)


class Shrink(nn.Module):
  @nn.compact
  def __call__(self, h):
    return nn.Dense(2)(h)


class Residual(nn.Module):
  @nn.compact
  def __call__(self, h):
    return h + nn.Dense(F)(h)


class NnxShrink(nnx.Module):
  def __init__(self, *, rngs):
    self.dense = nnx.Linear(F, 2, rngs=rngs)

  def __call__(self, h):
    return self.dense(h)


def _one_line_error(match, fun, *args, **kwargs):
  with pytest.raises(ValueError, match=match) as info:
    fun(*args, **kwargs)
  assert '\n' not in str(info.value), str(info.value)


def test_bad_blocks_and_settings_give_one_line_each():
  h = jnp.zeros((B, T, F), jnp.float32)
  shape = r"block must return the gathered h's shape \(2, 5, 4\) and dtype "
  _one_line_error(shape + r'float32, got shape \(2, 5, 2\)',
                  linen.PerTokenRouting(Shrink(), max_depth=M).init,
                  jax.random.key(0), h)
  rngs = nnx.Rngs(0)
  module = vnnx.PerTokenRouting(NnxShrink(rngs=rngs), F, max_depth=M,
                                rngs=rngs)
  _one_line_error(r'^PerTokenRouting: block must return', module, h)
  _one_line_error(r'capacity must not increase', linen.PerTokenRouting,
                  Shrink(), max_depth=2, capacity=(0.5, 1.0))
  _one_line_error(r"selection must be one of \('top_k', 'threshold'\)",
                  vnnx.PerTokenRouting, NnxShrink(rngs=rngs), F,
                  max_depth=M, selection='causal', rngs=rngs)
  residual = linen.PerTokenRouting(Residual(), max_depth=M)
  variables = residual.init(jax.random.key(0), h)
  _one_line_error(r'^PerTokenRouting\.apply: h has 6 features, the params '
                  r'were initialised for 4', residual.apply, variables,
                  jnp.zeros((B, T, 6), jnp.float32))
