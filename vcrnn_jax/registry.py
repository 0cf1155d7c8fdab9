"""Every method by one name: the one table binaries, modules and tests read.

A method's name is the same in every binary, test and doc page. The cells:
``elman``, ``gru``, ``lstm`` (the baselines), ``rhn``, ``srhn``, ``srehn``,
``ei_rehn`` (Park & Yoo), ``vcrnn``, ``vcgru`` (Jernite et al.); ``stack``,
layers of cells; and the wrappers, each around any cell: ``act`` (Graves),
``pondernet`` (Banino et al.), ``repeat`` (Fojo et al.), ``skip`` (Campos et
al.). ``rnn``, the EI-REHN paper's word for the Elman cell, is an alias that
its binaries keep.

:data:`METHODS` holds one :class:`Entry` per method: its pure factory, its
family, a one-line summary, the name of its module in :mod:`vcrnn_jax.linen`
and :mod:`vcrnn_jax.nnx` (the same name in both), a small instance for the
tests and what its per-step output reports (:class:`Reports`). The binaries'
``--cell`` flags take the cells (:func:`names`), the family comparison its
pondering wrappers (:mod:`vcrnn_jax.papers.family.parity`), and the tests
build every row in all three APIs.

**Adding a method is adding a row.** A row needs:

* ``factory``: the public pure factory, returning a :class:`vcrnn_jax.Cell`;
  a cell's takes ``hidden_size`` first (``build``: an adapter when it takes
  more positional arguments), a wrapper's takes ``cell``, a stack's
  ``layers``;
* ``family``: a cell family (:data:`CELL_FAMILIES`), ``'wrapper'`` or
  ``'stack'``;
* ``module``: the name of its module in both :mod:`vcrnn_jax.linen` and
  :mod:`vcrnn_jax.nnx` (a name, not the class: those modules import this
  one). For a wrapper with no class of that name there, both make one from
  the factory (:func:`vcrnn_jax.linen.module_for`,
  :func:`vcrnn_jax.nnx.module_for`), so a new wrapper needs no Flax code;
  a class written by hand follows :class:`Entry`'s rule for its defaults;
* ``example``: keyword options of a small instance that differ from the
  defaults, so that the tests see them reach the cell, with the same names
  in the factory (through :func:`build_cell` for a cell), the Linen fields
  and the NNX arguments; settings that only cost time (``loop='scan'``)
  belong here too;
* ``wraps``: for a wrapper, the row its example wraps (one name); for a
  stack, the rows of its layers;
* ``flagged``: whether the wrapped cell reads the input plus ACT's
  first-step flag, one feature more than the wrapper (an NNX module of that
  cell is built with ``in_features + 1``); the wrappers that do ponder each
  input, and the family comparison runs them;
* ``reports``: which fields of its per-step output hold the steps it
  computed and its ponder cost (:class:`Reports`), which the family
  comparison trains and reports with.

``tests/test_registry.py`` fails when a public factory of the package or a
Linen or NNX module has no row, and the tests of the three APIs iterate over
every row, so a new method is tested once it is added here.

:func:`build_cell` builds a cell from its name, its hidden size and the
keyword options of its factory, refusing an option the factory does not take
(so a flag that a cell would ignore is an error, not a silent no-op):

>>> from vcrnn_jax import registry
>>> cell = registry.build_cell('ei_rehn', 20, max_depth=10)
>>> 'forget_bias' in registry.options('lstm')
True
>>> registry.canonical('rnn')
'elman'
>>> {'act', 'pondernet', 'repeat', 'skip'} <= set(registry.names('wrapper'))
True
>>> registry.METHODS['act'].module
'ACT'
>>> registry.build_cell('gru', 20, max_depth=10)
Traceback (most recent call last):
  ...
ValueError: cell 'gru' takes no option 'max_depth'; it takes ...
"""

from collections.abc import Callable, Mapping
import dataclasses
import inspect
import math
from typing import Any

from vcrnn_jax import act, cells, ponder, rehn, repeat, skip, vc
from vcrnn_jax.core import Cell, check_positive_int

__all__ = [
    'Entry',
    'Reports',
    'METHODS',
    'CELLS',
    'CELL_FAMILIES',
    'ALIASES',
    'canonical',
    'entry',
    'names',
    'options',
    'build_cell',
    'wrapper_arguments',
]

# The families of the cells, which --cell takes: the baselines, the
# fixed-depth highway networks, the elastic ones (Park & Yoo), and the
# variable computation cells (Jernite et al.).
CELL_FAMILIES = ('baseline', 'rhn', 'elastic', 'vc')


@dataclasses.dataclass(frozen=True)
class Reports:
  """What a method's per-step output reports, by the names of its fields.

  Read by what compares methods (the family comparison's training loss and
  its steps per input) rather than a list of method names, so a new method
  is reported once its row says this.

  Attributes:
    steps: the field holding the steps computed on each input, ``[batch]``
      (ACT's and PonderNet's ``steps``, N(t); the elastic cells' ``depth``;
      Skip-RNN's 0/1 ``update``); None: a fixed number, ``fixed_steps``.
    ponder: the field holding a differentiable ponder cost, ``[batch]``, that
      a loss adds ``tau`` times (ACT's Eq. 12). It is called ``ponder``, as
      :func:`vcrnn_jax.act.ponder_cost` reads it; None: no such cost (a
      method with a halting distribution trains on PonderNet's P3 instead).
    fixed_steps: the factory option that gives the steps on every input of
      a method whose ``steps`` is None (Repeat-RNN's ``repetitions``); None:
      one step.
  """
  steps: str | None = None
  ponder: str | None = None
  fixed_steps: str | None = None


@dataclasses.dataclass(frozen=True)
class Entry:
  """One method of the table (the module docstring says what each needs).

  **The rule for a Flax module's defaults.** The module ``module`` names in
  :mod:`vcrnn_jax.linen` and :mod:`vcrnn_jax.nnx` takes every argument of
  the factory under the same name (Linen: a field; NNX: a constructor
  argument), and where the factory has a default, the module's default is
  that default, the same object: read it from the factory's signature
  (``utils.defaults(factory).max_steps``), never restate it, so that one
  setting has one default across the three APIs
  (``tests/test_flax_dropin.py`` checks it for every row). The modules that
  :func:`vcrnn_jax.linen.module_for` and :func:`vcrnn_jax.nnx.module_for`
  make for a wrapper follow it by construction.

  Attributes:
    factory: the public pure factory.
    family: one of :data:`CELL_FAMILIES`, ``'wrapper'`` (around any cell) or
      ``'stack'``.
    summary: one line for ``--help`` and the docs.
    module: the name of its module in :mod:`vcrnn_jax.linen` and
      :mod:`vcrnn_jax.nnx` (written there, or made there from the factory
      for a wrapper).
    example: the keyword options of a small instance for the tests.
    wraps: the rows the example wraps: one for a wrapper, the layers for a
      stack, none for a cell.
    flagged: the wrapped cell reads the input plus ACT's first-step flag.
    build: ``(hidden_size, **options) -> Cell`` where ``factory`` takes more
      positional arguments than ``hidden_size`` (None: ``factory``).
    reports: what its per-step output reports (:class:`Reports`).
  """
  factory: Callable[..., Cell]
  family: str
  summary: str
  module: str
  example: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  wraps: tuple[str, ...] = ()
  flagged: bool = False
  build: Callable[..., Cell] | None = None
  reports: Reports = Reports()

  @property
  def options(self) -> tuple[str, ...]:
    """The keyword options ``build`` (or ``factory``) takes, sorted."""
    params = inspect.signature(self.build or self.factory).parameters.values()
    return tuple(sorted(p.name for p in params
                        if p.kind is inspect.Parameter.KEYWORD_ONLY))


# The fixed-depth and elastic factories take their depth positionally; here
# it is a keyword with the EI-REHN paper's value (Table 1: R = 5, R_max = 10).
def _rhn(hidden_size: int, *, depth: int = 5, **options) -> Cell:
  return rehn.rhn(hidden_size, depth, **options)


def _srhn(hidden_size: int, *, depth: int = 5, **options) -> Cell:
  return rehn.srhn(hidden_size, depth, **options)


def _srehn(hidden_size: int, *, max_depth: int = 10, **options) -> Cell:
  return rehn.srehn(hidden_size, max_depth, **options)


def _ei_rehn(hidden_size: int, *, hyper_size: int | None = None,
             max_depth: int = 10, **options) -> Cell:
  # D_z = ceil(D_h / 2): what the paper's parameter counts imply.
  hyper = hyper_size or math.ceil(check_positive_int('hidden_size',
                                                     hidden_size) / 2)
  return rehn.ei_rehn(hidden_size, hyper, max_depth, **options)


def _forward_signature(adapter, factory) -> None:
  """Gives ``adapter`` the keyword options of ``factory`` plus its own."""
  own = [p for p in inspect.signature(adapter).parameters.values()
         if p.kind is not inspect.Parameter.VAR_KEYWORD]
  names_ = {p.name for p in own}
  rest = [p for p in inspect.signature(factory).parameters.values()
          if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in names_]
  adapter.__signature__ = inspect.Signature(own + rest)


for _adapter, _factory in ((_rhn, rehn.rhn), (_srhn, rehn.srhn),
                           (_srehn, rehn.srehn), (_ei_rehn, rehn.ei_rehn)):
  _forward_signature(_adapter, _factory)
del _adapter, _factory

# The examples are small and quick to compile: the elastic cells and the
# pondering wrappers on the 'scan' loop (the loops' own tests compare it
# with the while loop).
METHODS: dict[str, Entry] = {
    'elman': Entry(cells.elman, 'baseline', 'Elman tanh RNN', 'Elman'),
    'gru': Entry(cells.gru, 'baseline', 'GRU (Cho et al. 2014)', 'GRU'),
    'lstm': Entry(cells.lstm, 'baseline', 'LSTM without peepholes', 'LSTM',
                  example={'forget_bias': 1.0}),
    'rhn': Entry(rehn.rhn, 'rhn', 'recurrent highway network, fixed depth',
                 'RHN', example={'depth': 2, 'coupled': False}, build=_rhn),
    'srhn': Entry(rehn.srhn, 'rhn', 'RHN sharing one layer across its depth',
                  'SRHN', example={'depth': 2, 'transform_bias': -1.0},
                  build=_srhn),
    'srehn': Entry(rehn.srehn, 'elastic', 'shared RHN with elastic depth',
                   'SREHN', example={'max_depth': 3, 'loop': 'scan'},
                   build=_srehn, reports=Reports(steps='depth')),
    'ei_rehn': Entry(rehn.ei_rehn, 'elastic',
                     'early-improving recurrent elastic highway network',
                     'EIREHN', example={'max_depth': 3, 'hyper_size': 2,
                                        'loop': 'scan'}, build=_ei_rehn,
                     reports=Reports(steps='depth')),
    'vcrnn': Entry(vc.vcrnn, 'vc', 'variable computation Elman RNN', 'VCRNN',
                   example={'sharpness': 2.0, 'block_sizes': 2}),
    'vcgru': Entry(vc.vcgru, 'vc', 'variable computation GRU', 'VCGRU',
                   example={'scheduler_bias': 0.5}),
    'stack': Entry(cells.stack, 'stack', 'layers of cells, bottom first',
                   'Stack', wraps=('gru', 'lstm')),
    'act': Entry(act.adaptive, 'wrapper',
                 'Adaptive Computation Time (Graves 2016)', 'ACT',
                 example={'output_size': 2, 'max_steps': 3,
                          'halting_bias': 0.0, 'loop': 'scan'},
                 wraps=('lstm',), flagged=True,
                 reports=Reports(steps='steps', ponder='ponder')),
    'pondernet': Entry(ponder.pondernet, 'wrapper',
                       'PonderNet (Banino et al. 2021)', 'PonderNet',
                       example={'output_size': 2, 'max_steps': 3,
                                'epsilon': 0.1, 'loop': 'scan'},
                       wraps=('elman',), flagged=True,
                       reports=Reports(steps='steps')),
    'repeat': Entry(repeat.repeat, 'wrapper',
                    'Repeat-RNN: each input presented several times (Fojo '
                    'et al. 2018)', 'Repeat', example={'repetitions': 2},
                    wraps=('lstm',), flagged=True,
                    reports=Reports(fixed_steps='repetitions')),
    'skip': Entry(skip.skip, 'wrapper',
                  'Skip-RNN: a gate skips state updates (Campos et al. 2018)',
                  'Skip', example={'update_bias': 0.5}, wraps=('gru',),
                  reports=Reports(steps='update')),
}
# The cells, what --cell takes and build_cell builds.
CELLS: dict[str, Entry] = {n: e for n, e in METHODS.items()
                           if e.family in CELL_FAMILIES}
# Other names a flag may give, and the cell they mean.
ALIASES: dict[str, str] = {'rnn': 'elman'}


def canonical(name: str) -> str:
  """The registered name of the cell ``name`` (an alias resolved).

  Raises:
    ValueError: an unknown name, listing the known ones.
  """
  name = ALIASES.get(name, name)
  if name not in CELLS:
    known = sorted(set(CELLS) | set(ALIASES))
    raise ValueError(f'cell must be one of {known}, got {name!r}.')
  return name


def entry(name: str) -> Entry:
  """The :class:`Entry` of the cell ``name`` (or of the cell an alias means)."""
  return CELLS[canonical(name)]


def names(*families: str) -> tuple[str, ...]:
  """Names in table order of ``families``' rows (default: the cells).

  Raises:
    ValueError: an unknown family.
  """
  known = CELL_FAMILIES + ('wrapper', 'stack')
  unknown = [f for f in families if f not in known]
  if unknown:
    raise ValueError(f'family must be one of {list(known)}, got '
                     f'{unknown[0]!r}.')
  families = families or CELL_FAMILIES
  return tuple(n for n, e in METHODS.items() if e.family in families)


def options(name: str) -> tuple[str, ...]:
  """The keyword options :func:`build_cell` takes for ``name``."""
  return entry(name).options


def build_cell(name: str, hidden_size: int, **kwargs: Any) -> Cell:
  """The cell ``name`` of width ``hidden_size`` with the given options.

  Raises:
    ValueError: an unknown name, or an option the cell does not take.
  """
  e = entry(name)
  unknown = sorted(set(kwargs) - set(e.options))
  if unknown:
    raise ValueError(
        f'cell {name!r} takes no option {", ".join(map(repr, unknown))}; '
        f'it takes {", ".join(e.options)}.')
  return (e.build or e.factory)(check_positive_int('hidden_size',
                                                   hidden_size), **kwargs)


def wrapper_arguments(entry: Entry, owner: str
                      ) -> tuple[tuple[inspect.Parameter, ...],
                                 tuple[str, ...]]:
  """The arguments of a wrapper row's factory besides ``cell``.

  What a Flax module made from the row takes
  (:func:`vcrnn_jax.linen.module_for`, :func:`vcrnn_jax.nnx.module_for`):
  the same names, order and defaults.

  Args:
    entry: a row of the family ``'wrapper'``.
    owner: the function the errors name.

  Returns:
    ``(parameters, positional)``: the factory's parameters after ``cell``,
    and the names of those it takes by position (``output_size``).

  Raises:
    ValueError: the row is not a wrapper, its factory does not take
      ``cell`` first, or a keyword option has no default (a module field
      needs one).
  """
  params = tuple(inspect.signature(entry.factory).parameters.values())
  if entry.family != 'wrapper' or not params or params[0].name != 'cell':
    raise ValueError(
        f'{owner}: only a wrapper (family \'wrapper\', factory taking cell '
        f'first) has a module made from its row; {entry.module!r} is a '
        f'{entry.family!r}: write its module by hand, as for the cells.')
  rest = params[1:]
  bare = [p.name for p in rest if p.kind is inspect.Parameter.KEYWORD_ONLY
          and p.default is inspect.Parameter.empty]
  if bare:
    raise ValueError(f'{owner}: the keyword option {bare[0]!r} of '
                     f'{entry.factory.__name__} has no default; a module '
                     'made from a row needs one for each.')
  positional = tuple(p.name for p in rest
                     if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)
  return rest, positional
