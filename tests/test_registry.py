"""The table of methods: one name per method, options from the factory,
aliases, and a row for every factory and every Flax module."""

import dataclasses
import importlib
import inspect
import pkgutil

import _methods
from flax import nnx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vcrnn_jax
from vcrnn_jax import act, cells, linen, loops, registry, rehn, vc
from vcrnn_jax import nnx as vnnx
from vcrnn_jax.core import Cell
from vcrnn_jax.papers.family import parity as family_parity


def test_every_registered_cell_builds_and_steps():
  for name in registry.names():
    cell = registry.build_cell(name, 4)
    params = cell.init(jax.random.key(0), 3)
    state, _ = cell.apply(params, cell.initial_state(2), jnp.ones((2, 3)))
    assert jax.tree_util.tree_leaves(state)[0].shape == (2, 4), name


# The papers' methods: the table may grow, but these keep their families.
PAPER_METHODS = {
    'baseline': {'elman', 'gru', 'lstm'},
    'vc': {'vcrnn', 'vcgru'},
    'rhn': {'rhn', 'srhn'},
    'elastic': {'srehn', 'ei_rehn'},
    'wrapper': {'act', 'pondernet', 'repeat', 'skip'},
    'stack': {'stack'},
}


def test_families_partition_the_table():
  for family, names in PAPER_METHODS.items():
    assert names <= set(registry.names(family)), family
  assert registry.names() == registry.names(*registry.CELL_FAMILIES)
  assert tuple(registry.CELLS) == registry.names()
  assert sorted(registry.METHODS) == sorted(
      registry.names(*registry.CELL_FAMILIES, 'wrapper', 'stack'))
  with pytest.raises(ValueError, match="family must be one of .* got 'x'"):
    registry.names('x')


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


# ----------------------------------------------------------------------------
# The table is complete: a new factory or module without a row fails here.

# Public functions returning a Cell that are not methods: a check, an
# adapter, and the builders by name or by a paper's spec over this table.
NOT_METHODS = {
    'vcrnn_jax.core.check_cell', 'vcrnn_jax.core.ignore_context',
    'vcrnn_jax.registry.build_cell', 'vcrnn_jax.papers.rehn.tasks.build_cell',
    'vcrnn_jax.papers.vc.lm.build_cell', 'vcrnn_jax.linen.simple_cell',
    'vcrnn_jax.papers.rehn.runs.har_cell',
}


def _public_factories():
  """``module.name`` of every public function of the package (in a
  module's ``__all__``, or every public one where it has none) whose return
  annotation is :class:`vcrnn_jax.Cell`."""
  found = set()
  for info in pkgutil.walk_packages(vcrnn_jax.__path__, 'vcrnn_jax.'):
    if any(part.startswith('_') for part in info.name.split('.')):
      continue
    module = importlib.import_module(info.name)
    for attr in getattr(module, '__all__', dir(module)):
      obj = getattr(module, attr, None)
      if (attr.startswith('_') or not inspect.isfunction(obj)
          or obj.__module__ != info.name):
        continue
      if inspect.signature(obj).return_annotation in (Cell, 'Cell'):
        found.add(f'{info.name}.{attr}')
  return found


def test_every_public_factory_has_a_row():
  rows = {f'{e.factory.__module__}.{e.factory.__name__}'
          for e in registry.METHODS.values()}
  missing = _public_factories() - rows - NOT_METHODS
  assert not missing, (f'public factories without a row in '
                       f'registry.METHODS: {sorted(missing)}')
  assert rows <= _public_factories(), rows - _public_factories()
  stale = NOT_METHODS - _public_factories()
  assert not stale, f'NOT_METHODS lists what is gone: {sorted(stale)}'


@pytest.mark.parametrize('api', [linen, vnnx], ids=['linen', 'nnx'])
def test_every_flax_module_is_a_row(api):
  modules = {name for name, obj in vars(api).items()
             if inspect.isclass(obj) and issubclass(obj, api.CellModule)
             and obj is not api.CellModule and not name.startswith('_')}
  named = {e.module for e in registry.METHODS.values()}
  assert modules - named == set(), (
      f'{api.__name__} modules without a row in registry.METHODS')
  assert named - modules == set(), f'rows without a {api.__name__} module'
  assert named <= set(api.__all__)


@pytest.mark.parametrize('name', list(registry.METHODS))
def test_rows_are_well_formed(name):
  e = registry.METHODS[name]
  known = registry.CELL_FAMILIES + ('wrapper', 'stack')
  assert e.family in known and e.summary
  first = next(iter(inspect.signature(e.factory).parameters))
  want = {'wrapper': 'cell', 'stack': 'layers'}.get(e.family, 'hidden_size')
  assert first == want, (name, first)
  assert bool(e.wraps) == (e.family in ('wrapper', 'stack'))
  assert len(e.wraps) == 1 or e.family != 'wrapper'
  assert all(w in registry.METHODS for w in e.wraps)
  assert not e.flagged or e.family == 'wrapper'
  # The example's options are the factory's, under the Linen and NNX names.
  takes = set(e.options) | set(inspect.signature(e.factory).parameters)
  assert set(e.example) <= takes, set(e.example) - takes
  fields = set(linen.module_for(e).__dataclass_fields__)
  nnx_args = set(inspect.signature(vnnx.module_for(e).__init__).parameters)
  assert set(e.example) <= fields & nnx_args
  assert linen.module_for(name) is getattr(linen, e.module)
  assert vnnx.module_for(name) is getattr(vnnx, e.module)


@pytest.mark.parametrize('name', list(registry.METHODS))
def test_what_a_row_reports_is_in_its_output(name):
  """The fields :class:`registry.Reports` names are per-row fields of the
  example's per-step output; the ponder cost is what act.ponder_cost reads,
  and a fixed number of steps is a factory option."""
  reports = registry.METHODS[name].reports
  cell = _methods.pure(name, 4)
  params = cell.init(jax.random.key(0), 3)
  _, y = cell.apply(params, cell.initial_state(2), jnp.ones((2, 3)))
  for field in (reports.steps, reports.ponder):
    if field is not None:
      assert getattr(y, field).shape == (2,), (name, field)
  if reports.ponder is not None:
    assert reports.ponder == 'ponder'
    np.testing.assert_array_equal(act.ponder_cost(y), y.ponder)
  if reports.fixed_steps is not None:
    assert reports.steps is None
    assert reports.fixed_steps in inspect.signature(
        registry.METHODS[name].factory).parameters


def test_module_for_makes_a_wrappers_modules_and_refuses_a_cell():
  row = dataclasses.replace(registry.METHODS['act'], module='MyACT')
  made = linen.module_for(row)
  assert made.__name__ == 'MyACT' and issubclass(made, linen.CellModule)
  assert vnnx.module_for(row).__name__ == 'MyACT'
  cell = dataclasses.replace(registry.METHODS['gru'], module='MyGRU')
  for api in (linen, vnnx):
    with pytest.raises(ValueError, match=r"module_for: only a wrapper .* "
                       r"'MyGRU' is a 'baseline': write its module"):
      api.module_for(cell)
    with pytest.raises(ValueError, match=r"entry must be a registry.Entry "
                       r"or one of .* got 'nope'"):
      api.module_for('nope')
  with pytest.raises(TypeError, match=r"MyACT.__init__\(\) got an "
                     r"unexpected keyword argument 'max_step'"):
    vnnx.module_for(row)(vnnx.GRU(4, 8, rngs=nnx.Rngs(0)), 1, max_step=2)


def test_the_family_comparison_runs_rows_of_the_table():
  # PonderNet's parity comparison: the cell alone ('rnn') and every
  # pondering wrapper of the table, each built by its row's factory.
  assert family_parity.METHODS == ('rnn',) + tuple(
      n for n in registry.names('wrapper') if registry.METHODS[n].flagged)
  assert {'act', 'pondernet', 'repeat'} <= set(family_parity.METHODS)
