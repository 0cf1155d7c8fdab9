"""Imports only go down the layers of BUILD_NOTES.md's Architecture table,
and no function of the package is over 80 lines of code.

The methods' modules take their layer from the registry's table of methods,
so a new method needs no line here. The results machinery beside the
binaries (``experiments/reports``) has layers of its own; the library never
imports it, names none of its files, and no module of either is in an
import circle."""

import ast
import pathlib

import pytest

from vcrnn_jax import registry

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / 'vcrnn_jax'
REPORTS = ROOT / 'experiments' / 'reports'

# Module prefix -> layer; a module may import only its own layer or lower.
LAYERS = {
    'vcrnn_jax.core': 0, 'vcrnn_jax.files': 0, 'vcrnn_jax.utils': 0,
    'vcrnn_jax.loops': 1, 'vcrnn_jax.compaction': 1, 'vcrnn_jax.cells': 1,
    'vcrnn_jax.metrics': 1,
    'vcrnn_jax.data': 1, 'vcrnn_jax.tasks': 1, 'vcrnn_jax.pondering': 1,
    'vcrnn_jax.unroll': 2, 'vcrnn_jax.depth': 2, 'vcrnn_jax.routing': 2,
    'vcrnn_jax.registry': 3, 'vcrnn_jax.models': 3,
    'vcrnn_jax.linen': 4, 'vcrnn_jax.nnx': 4,
    'vcrnn_jax.training': 5,    # runs: a workdir's flags and checkpoints
    # Each paper's runs (papers/<paper>/runs.py, papers/depth/logic.py).
    'vcrnn_jax.papers': 6,
    # load_run: every paper's runs by binary, above them all.
    'vcrnn_jax.papers.runs': 7,
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


def _imported_names(path: pathlib.Path):
  """Every absolute name an import of ``path`` names, at any depth (a
  function's own imports too): ``a.b`` for ``import a.b``, ``a`` and ``a.x``
  for ``from a import x``."""
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      yield node.module
      yield from (f'{node.module}.{a.name}' for a in node.names)
    elif isinstance(node, ast.Import):
      yield from (a.name for a in node.names)


def _imports(path: pathlib.Path):
  for name in _imported_names(path):
    if name.startswith('vcrnn_jax.'):
      try:
        yield name, _layer(name)
      except KeyError:
        continue      # ``from vcrnn_jax.x import some_function``


def _modules(root: pathlib.Path = PACKAGE):
  for path in sorted(root.rglob('*.py')):
    parts = path.relative_to(ROOT).with_suffix('').parts
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


# What the library must not know of: the binaries, the benchmarks, and the
# results machinery beside them.
OUTSIDE = ('experiments', 'benchmarks')
# The files of the results machinery, which no library module names.
REPORT_FILES = ('docs/results', 'verification.json', 'records/')


@pytest.mark.parametrize('name,path', list(_modules()),
                         ids=[n for n, _ in _modules()])
def test_the_library_never_imports_the_binaries_or_reports(name, path):
  outside = [n for n in _imported_names(path)
             if n in OUTSIDE or n.startswith(tuple(p + '.' for p in OUTSIDE))]
  assert not outside, f'{name} imports {outside}'


def test_the_library_names_no_record_or_page():
  found = [f'{name}: {text!r}' for name, path in _modules()
           for text in REPORT_FILES if text in path.read_text()]
  assert not found, found


# The results machinery's own layers: a module imports the library and its
# own layer or lower here, never a binary.
REPORT_LAYERS = {
    'experiments.reports.manifest': 0, 'experiments.reports.verdicts': 0,
    'experiments.reports.plots': 0, 'experiments.reports.verify': 0,
    'experiments.reports.plan': 0, 'experiments.reports.bench_records': 0,
    'experiments.reports.records': 1,
    # One package per results page.
    'experiments.reports.act': 2, 'experiments.reports.vc': 2,
    'experiments.reports.rehn': 2, 'experiments.reports.family': 2,
    'experiments.reports.depth': 2,
    'experiments.reports.results': 3,
}
REPORT_MODULES = [(n, p) for n, p in _modules(REPORTS)
                  if n != 'experiments.reports']   # the package's docstring


def _report_layer(module: str) -> int:
  matches = [p for p in REPORT_LAYERS
             if module == p or module.startswith(p + '.')]
  if not matches:
    raise KeyError(module)
  return REPORT_LAYERS[max(matches, key=len)]


@pytest.mark.parametrize('name,path', REPORT_MODULES,
                         ids=[n for n, _ in REPORT_MODULES])
def test_reports_import_only_down_and_no_binary(name, path):
  own = _report_layer(name)    # a new module needs its row above
  up, binaries = [], []
  for imported in _imported_names(path):
    if imported.startswith('experiments.reports'):
      try:
        layer = _report_layer(imported)
      except KeyError:
        continue
      if layer > own:
        up.append((imported, layer))
    elif imported.startswith(tuple(p + '.' for p in OUTSIDE)):
      binaries.append(imported)
  assert not up, f'{name} (layer {own}) imports from above: {up}'
  assert not binaries, f'{name} imports binaries or their helpers: {binaries}'


def _import_graph() -> dict[str, set[str]]:
  """Module -> the modules it imports, over the library, the results
  machinery, the binaries and the benchmarks (``from a import b`` is an
  edge to ``a.b`` where that is a module, else to ``a``)."""
  paths = dict(_modules())
  paths['vcrnn_jax'] = PACKAGE / '__init__.py'
  for folder in OUTSIDE:
    paths.update(_modules(ROOT / folder))
  graph = {}
  for name, path in paths.items():
    edges = set()
    for node in ast.walk(ast.parse(path.read_text())):
      if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        for a in node.names:
          full = f'{node.module}.{a.name}'
          edges.add(full if full in paths else node.module)
      elif isinstance(node, ast.Import):
        edges.update(a.name for a in node.names)
    graph[name] = {e for e in edges if e in paths and e != name}
  return graph


def test_no_import_circle():
  graph, done, circles = _import_graph(), set(), []

  def visit(module, trail):
    if module in trail:
      circles.append(trail[trail.index(module):] + [module])
      return
    if module in done:
      return
    for imported in sorted(graph[module]):
      visit(imported, trail + [module])
    done.add(module)

  for module in sorted(graph):
    visit(module, [])
  assert not circles, [' -> '.join(c) for c in circles]


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
  for name, path in [*_modules(), *REPORT_MODULES]:
    for node in ast.walk(ast.parse(path.read_text())):
      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        count = _code_lines(node)
        if count > MAX_CODE_LINES:
          long.append(f'{name}.{node.name}: {count}')
  assert not long, long
