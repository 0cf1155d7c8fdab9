"""The cell registry: one name per cell, options from the factory, aliases."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import cells, loops, registry, rehn, vc


def test_every_registered_cell_builds_and_steps():
  for name in registry.names():
    cell = registry.build_cell(name, 4)
    params = cell.init(jax.random.key(0), 3)
    state, _ = cell.apply(params, cell.initial_state(2), jnp.ones((2, 3)))
    assert jax.tree_util.tree_leaves(state)[0].shape == (2, 4), name


def test_families_partition_the_table():
  assert registry.names('baseline') == ('elman', 'gru', 'lstm')
  assert registry.names('vc') == ('vcrnn', 'vcgru')
  assert registry.names('rhn', 'elastic') == ('rhn', 'srhn', 'srehn',
                                              'ei_rehn')
  assert sorted(registry.names()) == sorted(
      registry.names('baseline', 'rhn', 'elastic', 'vc'))


def test_build_cell_is_the_factory_with_the_same_params():
  key = jax.random.key(1)
  pairs = [
      (registry.build_cell('rnn', 5), cells.elman(5)),
      (registry.build_cell('rhn', 5, depth=3), rehn.rhn(5, 3)),
      (registry.build_cell('ei_rehn', 5, max_depth=4),
       rehn.ei_rehn(5, 3, 4)),     # D_z = ceil(5 / 2)
      (registry.build_cell('vcgru', 5, epsilon=0.1),
       vc.vcgru(5, epsilon=0.1)),
  ]
  for got, want in pairs:
    a, b = got.init(key, 2), want.init(key, 2)
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
      np.testing.assert_array_equal(x, y)


def test_options_come_from_the_factory_signature():
  assert 'forget_bias' in registry.options('lstm')
  assert 'depth' in registry.options('srhn')
  assert {'hyper_size', 'max_depth', 'loop'} <= set(registry.options('ei_rehn'))
  assert 'sharpness' in registry.options('vcrnn')
  assert registry.options('rnn') == registry.options('elman')
  # The elastic cells take the one loop configuration.
  cell = registry.build_cell('srehn', 4, loop=loops.LoopConfig('scan'))
  assert cell.init(jax.random.key(0), 2)['input_kernel'].shape == (2, 8)


def test_unknown_names_and_options_are_refused_with_what_is_known():
  with pytest.raises(ValueError, match=r"cell must be one of .*'rnn'.*"
                     r"got 'transformer'"):
    registry.build_cell('transformer', 4)
  with pytest.raises(ValueError, match="cell 'lstm' takes no option 'depth'; "
                     'it takes activation_fn, bias_init'):
    registry.build_cell('lstm', 4, depth=3)
  with pytest.raises(ValueError, match='hidden_size must be a positive'):
    registry.build_cell('gru', 0)
