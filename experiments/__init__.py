"""The experiment binaries: ``python -m experiments.<name>``.

A trained run loads in your own code with
:func:`vcrnn_jax.papers.runs.load_run`, which needs the library alone."""

__all__ = []
