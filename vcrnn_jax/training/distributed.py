"""Several processes training one model: start-up, roles and failures.

A run of N processes (one per host, or several on one machine) is the same
command started N times with ``--coordinator_address=HOST:PORT
--num_processes=N --process_id=I`` (or ``--distributed`` on a cluster that
JAX detects). :func:`initialize` connects them; from then on ``jax.devices()``
spans every process and :func:`vcrnn_jax.training.train_and_evaluate` splits
each global batch over all of them.
"""

import re
from typing import Optional

import jax


class PeerFailed(RuntimeError):
  """Another process of the run failed; this one stops too."""


_ADDRESS = re.compile(r'^\[?[^\s\]]+\]?:(\d{1,5})$')


def _check(coordinator_address, num_processes, process_id, auto) -> bool:
  """Validates the settings; returns whether this is a multi-process run."""
  given = [v is not None for v in (coordinator_address, num_processes,
                                   process_id)]
  if auto:
    if any(given):
      raise ValueError('--distributed lets JAX detect the cluster; do not '
                       'also pass --coordinator_address, --num_processes or '
                       '--process_id.')
    return True
  if not any(given):
    return False
  if not all(given):
    raise ValueError('a multi-process run needs --coordinator_address, '
                     '--num_processes and --process_id together.')
  if not _ADDRESS.match(coordinator_address) or not (
      0 < int(_ADDRESS.match(coordinator_address).group(1)) < 65536):
    raise ValueError(f'--coordinator_address must be HOST:PORT, got '
                     f'{coordinator_address!r}.')
  if num_processes < 1:
    raise ValueError(f'--num_processes must be >= 1, got {num_processes}.')
  if not 0 <= process_id < num_processes:
    raise ValueError(f'--process_id must be in 0..{num_processes - 1} '
                     f'(--num_processes={num_processes}), got {process_id}.')
  return True


def initialize(coordinator_address: Optional[str] = None,
               num_processes: Optional[int] = None,
               process_id: Optional[int] = None, *,
               auto: bool = False) -> None:
  """Joins a multi-process run, or does nothing for a single process.

  Raises:
    ValueError: bad or incomplete settings.
  """
  if not _check(coordinator_address, num_processes, process_id, auto):
    return
  if auto:
    jax.distributed.initialize()
  else:
    jax.distributed.initialize(coordinator_address, num_processes, process_id)


def is_chief() -> bool:
  """Whether this process writes the run's files (process 0)."""
  return jax.process_index() == 0


def abort_peers(message: str) -> None:
  """Tells the other processes of a multi-process run that this one failed."""
  del message
