"""The experiment binaries (``python -m experiments.<name>``), and
:func:`load_run`, which rebuilds a binary's run from its workdir."""

__all__ = ['Run', 'load_run']


def __getattr__(name):
  # Imported on first use: the binaries and tools of this package import it
  # first and need none of the loader's imports.
  if name in __all__:
    from experiments import _load  # pylint: disable=g-import-not-at-top
    return getattr(_load, name)
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
