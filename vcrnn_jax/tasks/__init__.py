"""Synthetic tasks: ACT's four (Graves 2016, Section 3) and EI-REHN's data.

ACT's parity, logic, addition and sort are sampled per batch;
:mod:`vcrnn_jax.tasks.elastic_depth` is EI-REHN's Algorithm 2, a fixed
dataset (``elastic_depth.load(seed)``, a :class:`vcrnn_jax.data.Dataset`).

Each task module has a factory returning a :class:`Task` (static sizes plus
pure ``sample``, ``loss`` and ``sequence_errors`` functions); :func:`get` builds
one by name::

  task = vcrnn_jax.tasks.get('addition', max_len=5, max_digits=5)
  batch = task.sample(jax.random.fold_in(key, step), 32)   # a Batch
  loss = jnp.mean(task.loss(logits, batch))                # logits [32, 5, 66]
  error_rate = jnp.mean(task.sequence_errors(logits, batch))

References:
  Graves, A. Adaptive Computation Time for Recurrent Neural Networks. 2016.
  arXiv:1603.08983.
"""

import inspect
from typing import Any

from vcrnn_jax.tasks import addition, elastic_depth, logic, parity, sort
from vcrnn_jax.tasks.base import Batch, Task

_FACTORIES = {
    'parity': parity.task,
    'logic': logic.task,
    'addition': addition.task,
    'sort': sort.task,
}
NAMES = tuple(_FACTORIES)


def get(name: str, **kwargs: Any) -> Task:
  """Returns the task called ``name``, built with its factory's ``kwargs``.

  Args:
    name: one of 'parity', 'logic', 'addition', 'sort'.
    **kwargs: arguments of that task's factory, e.g. ``bits=64`` for parity,
      ``max_len`` and ``num_gates`` for logic, ``max_len`` and ``max_digits``
      for addition, ``min_len`` and ``max_len`` for sort.

  Returns:
    The :class:`Task`.

  Raises:
    ValueError: for an unknown name, an unknown argument or a bad value.

  Example::

    task = vcrnn_jax.tasks.get('parity', bits=16)
  """
  if name not in _FACTORIES:
    raise ValueError(f'name must be one of {list(NAMES)}, got {name!r}.')
  factory = _FACTORIES[name]
  allowed = list(inspect.signature(factory).parameters)
  unknown = sorted(set(kwargs) - set(allowed))
  if unknown:
    raise ValueError(f'tasks.get({name!r}): unknown argument(s) {unknown}; '
                     f'allowed: {allowed}.')
  return factory(**kwargs)


__all__ = [
    'Batch', 'Task', 'NAMES', 'get', 'addition', 'elastic_depth', 'logic',
    'parity', 'sort']
