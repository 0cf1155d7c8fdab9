"""Sphinx configuration of the vcrnn_jax documentation.

Build (from the repository root)::

  pip install '.[docs]'
  python -m sphinx -W --keep-going -b html docs docs/_build/html

The guides under ``guides/`` are MyST notebooks that myst-nb executes during
the build; their outputs are cached in ``docs/_build/.jupyter_cache``. The
results pages include the fragments and figures that ``python -m
experiments.results`` generates from the run records into
``results/generated/``.

The site works without internet: MathJax comes from the
``sphinx-mathjax-offline`` package (the ``docs`` extra), copied into
``_static/mathjax`` instead of loaded from a CDN.
"""

import inspect
import logging
import os
import pathlib
import posixpath
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# The notebook kernels are subprocesses: give them the same package.
os.environ['PYTHONPATH'] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get('PYTHONPATH')) if p)

import vcrnn_jax  # noqa: E402 (after PYTHONPATH is set for the kernels)

project = 'vcrnn_jax'
author = 'vcrnn_jax authors'
copyright = '2025, vcrnn_jax authors'
release = version = vcrnn_jax.__version__

extensions = [
    'myst_nb',
    'sphinx.ext.autodoc',
    'sphinx.ext.napoleon',
    'sphinx.ext.mathjax',
    # MathJax 3 shipped with the package, so maths renders offline.
    'sphinx-mathjax-offline',
    'sphinx.ext.viewcode',
]

# Generated fragments are included by the results pages, not pages of
# their own.
exclude_patterns = ['_build', 'Thumbs.db', '.DS_Store', '**.ipynb_checkpoints',
                    'results/generated', 'results/records']
source_suffix = {'.rst': 'restructuredtext', '.md': 'myst-nb'}

html_theme = 'furo'
html_title = 'vcrnn_jax'

# -- MyST and myst-nb ---------------------------------------------------------
myst_enable_extensions = ['dollarmath', 'amsmath', 'colon_fence', 'deflist']
myst_heading_anchors = 3
nb_execution_mode = 'cache'
nb_execution_cache_path = str(ROOT / 'docs' / '_build' / '.jupyter_cache')
nb_execution_raise_on_error = True
nb_execution_timeout = 300
nb_merge_streams = True
# The notebooks' kernels run in a private IPython profile that logs errors
# only: ipykernel's warning that a local kernel talks over TCP is printed
# for every page otherwise, under -q too.
_IPYTHON = ROOT / 'docs' / '_build' / 'ipython'
(_IPYTHON / 'profile_default').mkdir(parents=True, exist_ok=True)
(_IPYTHON / 'profile_default' / 'ipython_kernel_config.py').write_text(
    "c.IPKernelApp.log_level = 'ERROR'\n")
os.environ['IPYTHONDIR'] = str(_IPYTHON)
# nbclient logs "Executing notebook with kernel" at INFO for every page.
logging.getLogger('traitlets').setLevel(logging.WARNING)

# -- autodoc and napoleon (Google style) --------------------------------------
autodoc_default_options = {
    'members': True,
    'member-order': 'bysource',
    'show-inheritance': False,
}
autodoc_typehints = 'signature'
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True
napoleon_use_rtype = False

# NamedTuple fields are documented by a trailing comment in the source
# (``output: jax.Array  # [batch, F] ...``). autodoc shows them as "Alias for
# field number N"; show the comment instead.
_FIELD_ALIAS = re.compile(r'^Alias for field number \d+$')


def _field_comment(cls, field):
  try:
    lines = inspect.getsource(cls).splitlines()
  except (OSError, TypeError):
    return None
  pattern = re.compile(rf'^\s+{re.escape(field)}\s*:[^#]*#\s?(.*)$')
  for i, line in enumerate(lines):
    match = pattern.match(line)
    if not match:
      continue
    text = [match.group(1).strip()]
    for more in lines[i + 1:]:
      stripped = more.strip()
      if not stripped.startswith('#'):
        break
      text.append(stripped.lstrip('#').strip())
    return ' '.join(t for t in text if t)
  return None


def _namedtuple_field_doc(app, what, name, obj, options, lines):
  del app, obj, options
  if what not in ('attribute', 'property') or len(lines) > 2:
    return
  if not any(_FIELD_ALIAS.match(line) for line in lines):
    return
  cls_path, _, field = name.rpartition('.')
  # Import the class the field belongs to.
  parts = cls_path.split('.')
  for cut in range(len(parts) - 1, 0, -1):
    try:
      obj = __import__('.'.join(parts[:cut]), fromlist=['_'])
    except ImportError:
      continue
    try:
      for attr in parts[cut:]:
        obj = getattr(obj, attr)
    except AttributeError:
      continue
    break
  else:
    return
  comment = _field_comment(obj, field)
  lines[:] = [comment] if comment else []


# viewcode gives every object of a module's source page one anchor prefix:
# the module name of the first page that documented an object of that module.
# Objects re-exported at the package root (``vcrnn_jax.Cell``) and those
# documented in their own module (``vcrnn_jax.core.InputSizeError``) share
# core.py's page, so half of its "[docs]" links pointed to anchors that do
# not exist. After the build, each such link is pointed at the object's
# real anchor, found in the Python domain by its module and name.
_VIEWCODE_BACK = re.compile(
    r'(<div class="viewcode-block" id="(?P<name>[^"]+)">\s*'
    r'<a class="viewcode-back" href=")(?P<page>[^"#]*)#(?P<anchor>[^"]+)"')


def _fix_viewcode_backlinks(app, exc):
  if exc is not None or app.builder.format != 'html':
    return
  objects = app.env.get_domain('py').objects
  outdir = pathlib.Path(app.outdir)
  root = outdir / '_modules'
  for path in sorted(root.rglob('*.html')):
    module = '.'.join(path.relative_to(root).with_suffix('').parts)
    here = posixpath.dirname(path.relative_to(outdir).as_posix())

    def fix(match, module=module, here=here):
      if match['anchor'] in objects:
        return match[0]
      entry = objects.get(f'{module}.{match["name"]}')
      if entry is None:
        return match[0]
      page = posixpath.relpath(app.builder.get_target_uri(entry.docname), here)
      return f'{match[1]}{page}#{entry.node_id}"'

    text = path.read_text(encoding='utf-8')
    fixed = _VIEWCODE_BACK.sub(fix, text)
    if fixed != text:
      path.write_text(fixed, encoding='utf-8')


def setup(app):
  app.connect('autodoc-process-docstring', _namedtuple_field_doc)
  app.connect('build-finished', _fix_viewcode_backlinks)
