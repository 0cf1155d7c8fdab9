"""Every recurrent cell by name: the one table the binaries' ``--cell`` reads.

A cell's name is the same in every binary and in the docs: ``elman``,
``gru``, ``lstm`` (the baselines), ``rhn``, ``srhn``, ``srehn``, ``ei_rehn``
(Park & Yoo), ``vcrnn``, ``vcgru`` (Jernite et al.). ``rnn``, the EI-REHN
paper's word for the Elman cell, is an alias that its binaries keep.

:func:`build_cell` builds one from its name, its hidden size and the keyword
options of its factory, refusing an option the factory does not take (so a
flag that a cell would ignore is an error, not a silent no-op):

>>> from vcrnn_jax import registry
>>> cell = registry.build_cell('ei_rehn', 20, max_depth=10)
>>> 'forget_bias' in registry.options('lstm')
True
>>> registry.canonical('rnn')
'elman'
>>> registry.build_cell('gru', 20, max_depth=10)
Traceback (most recent call last):
  ...
ValueError: cell 'gru' takes no option 'max_depth'; it takes ...

ACT is not in the table: it wraps any of these (:func:`vcrnn_jax.act.adaptive`).
"""

from collections.abc import Callable
import dataclasses
import inspect
import math
from typing import Any

from vcrnn_jax import cells, rehn, vc
from vcrnn_jax.core import Cell, check_positive_int

__all__ = [
    'Entry',
    'CELLS',
    'ALIASES',
    'canonical',
    'entry',
    'names',
    'options',
    'build_cell',
]


@dataclasses.dataclass(frozen=True)
class Entry:
  """One registered cell.

  Attributes:
    factory: ``(hidden_size, **options) -> Cell``.
    family: ``'baseline'``, ``'rhn'`` (fixed depth), ``'elastic'`` (depth
      per step, Park & Yoo) or ``'vc'`` (Jernite et al.).
    summary: one line for ``--help`` and the docs.
  """
  factory: Callable[..., Cell]
  family: str
  summary: str

  @property
  def options(self) -> tuple[str, ...]:
    """The keyword options ``factory`` takes, sorted."""
    params = inspect.signature(self.factory).parameters.values()
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
  names = {p.name for p in own}
  rest = [p for p in inspect.signature(factory).parameters.values()
          if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in names]
  adapter.__signature__ = inspect.Signature(own + rest)


for _adapter, _factory in ((_rhn, rehn.rhn), (_srhn, rehn.srhn),
                           (_srehn, rehn.srehn), (_ei_rehn, rehn.ei_rehn)):
  _forward_signature(_adapter, _factory)
del _adapter, _factory

CELLS: dict[str, Entry] = {
    'elman': Entry(cells.elman, 'baseline', 'Elman tanh RNN'),
    'gru': Entry(cells.gru, 'baseline', 'GRU (Cho et al. 2014)'),
    'lstm': Entry(cells.lstm, 'baseline', 'LSTM without peepholes'),
    'rhn': Entry(_rhn, 'rhn', 'recurrent highway network, fixed depth'),
    'srhn': Entry(_srhn, 'rhn', 'RHN sharing one layer across its depth'),
    'srehn': Entry(_srehn, 'elastic', 'shared RHN with elastic depth'),
    'ei_rehn': Entry(_ei_rehn, 'elastic',
                     'early-improving recurrent elastic highway network'),
    'vcrnn': Entry(vc.vcrnn, 'vc', 'variable computation Elman RNN'),
    'vcgru': Entry(vc.vcgru, 'vc', 'variable computation GRU'),
}
# Other names a flag may give, and the cell they mean.
ALIASES: dict[str, str] = {'rnn': 'elman'}


def canonical(name: str) -> str:
  """The registered name of ``name`` (an alias resolved).

  Raises:
    ValueError: an unknown name, listing the known ones.
  """
  name = ALIASES.get(name, name)
  if name not in CELLS:
    known = sorted(set(CELLS) | set(ALIASES))
    raise ValueError(f'cell must be one of {known}, got {name!r}.')
  return name


def entry(name: str) -> Entry:
  """The :class:`Entry` of ``name`` (or of the cell an alias means)."""
  return CELLS[canonical(name)]


def names(*families: str) -> tuple[str, ...]:
  """Registered names, in table order; only those of ``families`` if given."""
  return tuple(n for n, e in CELLS.items()
               if not families or e.family in families)


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
  return e.factory(check_positive_int('hidden_size', hidden_size), **kwargs)
