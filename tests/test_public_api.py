"""Every module of the package (and of ``experiments.reports``) draws its
public surface with ``__all__``.

The API pages document a module's ``__all__`` (Sphinx autodoc with
``:members:`` respects it), so a public function or class left out of it
vanishes from the docs: a new one must be listed, or excluded here on purpose.
"""

import importlib
import inspect
import pathlib
import pkgutil

import pytest

from experiments import reports
import vcrnn_jax

# Modules not yet required to declare `__all__` (being reworked elsewhere).
# Once one declares it, it is checked like every other module.
PENDING = set()

# Public-looking functions and classes deliberately left out of `__all__`:
# undocumented helpers used only inside the package.
EXCLUDED = {
    # sha256_file without a docstring; the public one is data.download's.
    'experiments.reports.manifest.sha256_file',
    # matplotlib.ticker behind matplotlib_api's error message; for the papers'
    # plot modules.
    'experiments.reports.plots.ticker',
    # The run-info bookkeeping of add_wall_seconds and latest_step's fallback,
    # used by papers.act.sweep.
    'vcrnn_jax.training.sweep.read_wall_seconds',
    'vcrnn_jax.training.sweep.final_metrics_from_log',
    # The tolerance test behind status().
    'experiments.reports.verify.close',
    # Input checks of the dataset loaders (data.text, data.thesession,
    # data.har).
    'vcrnn_jax.data.dataset.check_not_empty',
    'vcrnn_jax.data.dataset.check_nonempty_splits',
    # The figures behind outputs().
    'experiments.reports.act.results.draw_curves',
    'experiments.reports.act.results.draw_difficulty',
}


def _module_names(package):
  names = [package.__name__]
  for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):
    if any(part.startswith('_') for part in info.name.split('.')):
      continue   # Private by name.
    names.append(info.name)
  return sorted(names)


# The library, and the results machinery beside the binaries, which keeps
# the same discipline.
MODULES = _module_names(vcrnn_jax) + _module_names(reports)


def _all_of(name):
  module = importlib.import_module(name)
  if not hasattr(module, '__all__'):
    if name in PENDING:
      pytest.skip(f'{name} is pending: no __all__ yet.')
    pytest.fail(f'{name} declares no __all__.')
  return module, module.__all__


def _is_package(module):
  return hasattr(module, '__path__')


def _defined_here(module):
  """Public functions and classes whose ``__module__`` is ``module``'s."""
  out = {}
  for attr, obj in vars(module).items():
    if attr.startswith('_'):
      continue
    if not (inspect.isclass(obj) or inspect.isfunction(inspect.unwrap(obj))):
      continue
    if getattr(obj, '__module__', None) == module.__name__:
      out[attr] = obj
  return out


def test_walk_finds_the_modules():
  assert 'vcrnn_jax.core' in MODULES
  assert 'vcrnn_jax.utils' in MODULES
  assert 'experiments.reports.results' in MODULES


def test_no_module_is_private_by_name():
  # What several modules share is a public module with an __all__ (the
  # cells' toolbox is vcrnn_jax.utils), not a private one they all import.
  root = pathlib.Path(vcrnn_jax.__file__).parent
  private = sorted(str(p.relative_to(root)) for p in root.rglob('_*.py')
                   if p.name not in ('__init__.py', '__main__.py'))
  assert not private, private


def test_excluded_is_current():
  # A stale entry would hide what it was meant to mark.
  for qualified in EXCLUDED:
    name, _, attr = qualified.rpartition('.')
    module = importlib.import_module(name)
    assert hasattr(module, attr), f'{qualified} no longer exists.'
    assert attr not in getattr(module, '__all__', ()), (
        f'{qualified} is both excluded and in __all__.')


@pytest.mark.parametrize('name', MODULES)
def test_all_is_well_formed(name):
  module, names = _all_of(name)
  assert isinstance(names, list), f'{name}.__all__ is not a list.'
  assert all(isinstance(x, str) for x in names), name
  duplicates = sorted({x for x in names if names.count(x) > 1})
  assert not duplicates, f'{name}.__all__ repeats {duplicates}.'
  private = [x for x in names if x.startswith('_')]
  assert not private, f'{name}.__all__ lists private names {private}.'
  missing = [x for x in names if not hasattr(module, x)]
  assert not missing, f'{name}.__all__ lists undefined names {missing}.'


@pytest.mark.parametrize('name', MODULES)
def test_public_definitions_are_listed(name):
  module, names = _all_of(name)
  unlisted = sorted(
      attr for attr in _defined_here(module)
      if attr not in names and f'{name}.{attr}' not in EXCLUDED)
  assert not unlisted, (
      f'{name} defines public {unlisted} that are neither in its __all__ nor '
      'in EXCLUDED of tests/test_public_api.py.')


@pytest.mark.parametrize('name', MODULES)
def test_modules_list_only_their_own_definitions(name):
  # A function or class imported from elsewhere and listed in a module's
  # __all__ would be documented twice; only package __init__ files re-export.
  module, names = _all_of(name)
  if _is_package(module):
    return
  foreign = sorted(
      x for x in names
      if (inspect.isclass(getattr(module, x))
          or inspect.isfunction(inspect.unwrap(getattr(module, x))))
      and getattr(module, x).__module__ != name)
  assert not foreign, f'{name}.__all__ lists imported names {foreign}.'
