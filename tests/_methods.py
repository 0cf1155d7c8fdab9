"""Small instances of every method of the registry's table, in its three APIs.

Each is built from its row of :data:`vcrnn_jax.registry.METHODS` alone (the
example options, the rows it wraps, whether its cell reads the first-step
flag), so that every test iterating over the table tests a new row as soon
as it is added, and no test file keeps a list of methods of its own.
"""

import dataclasses
import inspect

import jax

from vcrnn_jax import linen, registry
from vcrnn_jax import nnx as vnnx
from vcrnn_jax.core import cell_output

NAMES = tuple(registry.METHODS)
WRAPPERS = registry.names('wrapper')


def made(name: str):
  """Row ``name`` renamed, so that ``module_for`` makes its modules from the
  factory even where the row's are written by hand."""
  e = registry.METHODS[name]
  return dataclasses.replace(e, module='Made' + e.module)


def _wrapped_argument(entry) -> str:
  """The factory's argument for what a row wraps: ``cell`` or ``layers``."""
  return next(iter(inspect.signature(entry.factory).parameters))


def pure(name: str, hidden: int):
  """The pure cell of row ``name``'s example, cells ``hidden`` wide."""
  e = registry.METHODS[name]
  if not e.wraps:
    return registry.build_cell(name, hidden, **e.example)
  inner = [pure(w, hidden) for w in e.wraps]
  arg = _wrapped_argument(e)
  return e.factory(**{arg: inner if arg == 'layers' else inner[0]},
                   **e.example)


def linen_module(name: str, hidden: int, make: bool = False):
  """The :mod:`vcrnn_jax.linen` module of row ``name``'s example (``make``:
  the one made from the factory)."""
  e = registry.METHODS[name]
  module = linen.module_for(made(name) if make else e)
  if not e.wraps:
    return module(features=hidden, **e.example)
  inner = [linen_module(w, hidden) for w in e.wraps]
  arg = _wrapped_argument(e)
  return module(**{arg: inner if arg == 'layers' else inner[0]},
                **e.example)


def output_width(cell, in_features: int) -> int:
  """The width of ``cell``'s per-step output for ``in_features`` inputs."""
  def step(key):
    params = cell.init(key, in_features)
    x = jax.numpy.zeros((1, in_features), jax.numpy.float32)
    return cell.apply(params, cell.initial_state(1), x)[1]

  return cell_output(jax.eval_shape(step, jax.random.key(0))).shape[-1]


def nnx_module(name: str, in_features: int, hidden: int, rngs,
               make: bool = False):
  """The :mod:`vcrnn_jax.nnx` module of row ``name``'s example, reading
  ``in_features`` inputs (``make``: the one made from the factory)."""
  e = registry.METHODS[name]
  module = vnnx.module_for(made(name) if make else e)
  if not e.wraps:
    return module(in_features=in_features, hidden_features=hidden,
                  **e.example, rngs=rngs)
  if _wrapped_argument(e) == 'layers':
    layers, width = [], in_features
    for w in e.wraps:
      layers.append(nnx_module(w, width, hidden, rngs))
      width = output_width(pure(w, hidden), width)
    return module(layers=layers, **e.example, rngs=rngs)
  inner = nnx_module(e.wraps[0], in_features + e.flagged, hidden, rngs)
  return module(cell=inner, **e.example, rngs=rngs)
