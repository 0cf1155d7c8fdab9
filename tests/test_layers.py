"""Imports only go down the layers of BUILD_NOTES.md's Architecture table,
and no function of the package is over 80 lines of code.

The methods' modules take their layer from the registry's table of methods,
so a new method needs no line here."""

import ast
import pathlib

import pytest

from vcrnn_jax import registry

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / 'vcrnn_jax'

# Module prefix -> layer; a module may import only its own layer or lower.
LAYERS = {
    'vcrnn_jax.core': 0, 'vcrnn_jax.files': 0, 'vcrnn_jax.utils': 0,
    'vcrnn_jax.loops': 1, 'vcrnn_jax.compaction': 1, 'vcrnn_jax.cells': 1,
    'vcrnn_jax.metrics': 1,
    'vcrnn_jax.data': 1, 'vcrnn_jax.tasks': 1, 'vcrnn_jax.pondering': 1,
    'vcrnn_jax.unroll': 2, 'vcrnn_jax.depth': 2,
    'vcrnn_jax.registry': 3, 'vcrnn_jax.models': 3,
    'vcrnn_jax.linen': 4, 'vcrnn_jax.nnx': 4,
    'vcrnn_jax.training': 5,
    'vcrnn_jax.analysis': 6,
    'vcrnn_jax.papers': 7,
}


def _listed(module: str) -> bool:
  return any(module == p or module.startswith(p + '.') for p in LAYERS)


# The methods (layer 2): the module of every factory of the registry's table
# that no prefix above places (the baselines are in cells), so a new
# method's module is placed by its row.
METHOD_MODULES = sorted({e.factory.__module__
                         for e in registry.METHODS.values()
                         if not _listed(e.factory.__module__)})
LAYERS.update(dict.fromkeys(METHOD_MODULES, 2))


def test_method_modules_come_from_the_table():
  assert {'vcrnn_jax.act', 'vcrnn_jax.rehn', 'vcrnn_jax.vc',
          'vcrnn_jax.ponder', 'vcrnn_jax.repeat',
          'vcrnn_jax.skip'} <= set(METHOD_MODULES)


def _layer(module: str) -> int:
  matches = [p for p in LAYERS if module == p or module.startswith(p + '.')]
  if not matches:
    raise KeyError(module)
  return LAYERS[max(matches, key=len)]


def _imports(path: pathlib.Path):
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      names = [node.module] + [f'{node.module}.{a.name}' for a in node.names]
    elif isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    else:
      continue
    for name in names:
      if name.startswith('vcrnn_jax.'):
        try:
          yield name, _layer(name)
        except KeyError:
          continue      # ``from vcrnn_jax.x import some_function``


def _modules():
  for path in sorted(PACKAGE.rglob('*.py')):
    parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
    name = '.'.join(p for p in parts if p != '__init__')
    if name != 'vcrnn_jax':      # the package root re-exports every layer
      yield name, path


@pytest.mark.parametrize('name,path', list(_modules()),
                         ids=[n for n, _ in _modules()])
def test_imports_only_go_down(name, path):
  own = _layer(name)
  up = [(imported, layer) for imported, layer in _imports(path)
        if layer > own]
  assert not up, f'{name} (layer {own}) imports from above: {up}'


def test_training_holds_no_module_named_for_a_paper():
  names = {p.stem for p in (PACKAGE / 'training').glob('*.py')}
  for paper in ('act', 'vc', 'rehn'):
    assert not any(paper in n.split('_') for n in names), names


MAX_CODE_LINES = 80


def _code_lines(node: ast.AST) -> int:
  """Lines of ``node`` from ``def`` to its end, its docstrings left out
  (blank and comment lines count: they are part of what a reader reads)."""
  doc = set()
  for sub in ast.walk(node):
    body = getattr(sub, 'body', None)
    if (isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef, ast.Module)) and body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)):
      doc.update(range(body[0].lineno, body[0].end_lineno + 1))
  return sum(1 for n in range(node.lineno, node.end_lineno + 1)
             if n not in doc)


def test_no_function_is_over_80_lines_of_code():
  long = []
  for name, path in _modules():
    for node in ast.walk(ast.parse(path.read_text())):
      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        count = _code_lines(node)
        if count > MAX_CODE_LINES:
          long.append(f'{name}.{node.name}: {count}')
  assert not long, long
