"""A run's settings by the binaries' flag names, and the files of its workdir.

Every experiment binary (``python -m experiments.<name>``) trains in a
workdir, and leaves there:

* ``manifest.jsonl``: one line per start, with the command (``command``,
  ``argv``) and every flag value the run was built from (``flags``);
* ``flags.json``: the flags that define what is trained, written with the
  first checkpoint (a resume under other values is refused);
* ``checkpoints/<step>/``: the checkpoints
  (:class:`~vcrnn_jax.training.checkpoint.Checkpointer`).

:func:`read_workdir` reads the first two back, with an error that says what
to pass instead when a folder holds no run (empty, a parent folder of runs,
a run that has saved no checkpoint yet). :func:`train_config` is the one
mapping from the training flags every binary shares (``--steps``,
``--learning_rate``, ...) to a :class:`~vcrnn_jax.training.train.TrainConfig`.
:func:`vcrnn_jax.papers.runs.load_run` rebuilds a run from them.
"""

from collections.abc import Mapping, Sequence
import json
import os
import pathlib
import re
import shlex
from typing import Any, NamedTuple

from vcrnn_jax.training.train import TrainConfig

__all__ = [
    'MANIFEST_FILE',
    'FLAGS_FILE',
    'CHECKPOINTS',
    'train_config',
    'has_checkpoint',
    'find_runs',
    'Start',
    'read_workdir',
]

MANIFEST_FILE = 'manifest.jsonl'
FLAGS_FILE = 'flags.json'
CHECKPOINTS = 'checkpoints'
# How deep find_runs looks below a folder, and how many runs an error names.
_SEARCH_DEPTH = 4
_NAMED = 8


def train_config(values: Mapping[str, Any], desc: str,
                 **overrides) -> TrainConfig:
  """The :class:`TrainConfig` the shared training flags in ``values`` say.

  Args:
    values: flag values by name: ``steps``, ``batch_size``,
      ``learning_rate``, ``optimizer``, ``momentum``, ``weight_decay``,
      ``lr_decay``, ``lr_decay_every``, ``lr_decay_start`` (None: at
      ``lr_decay_every``), ``grad_clip_norm``, ``eval_every``,
      ``checkpoint_every``, ``keep_checkpoints`` and, where the binary has
      it, ``seed``.
    desc: the progress bar's label.
    **overrides: fields the binary computes itself (steps from a number of
      epochs, each seed of several).

  Example:

    >>> from vcrnn_jax.training import runs
    >>> values = dict(steps=100, batch_size=8, learning_rate=1e-3,
    ...               optimizer='adam', momentum=0.0, weight_decay=0.0,
    ...               lr_decay=1.0, lr_decay_every=None, lr_decay_start=None,
    ...               grad_clip_norm=None, eval_every=50,
    ...               checkpoint_every=None, keep_checkpoints=3, seed=0)
    >>> runs.train_config(values, 'demo', steps=200).steps
    200
  """
  every = values['lr_decay_every']
  start = values['lr_decay_start']
  fields = dict(
      steps=values['steps'], batch_size=values['batch_size'],
      learning_rate=values['learning_rate'], optimizer=values['optimizer'],
      momentum=values['momentum'], weight_decay=values['weight_decay'],
      lr_decay=values['lr_decay'], lr_decay_every=every,
      lr_decay_start=start if start is not None else every,
      grad_clip_norm=values['grad_clip_norm'],
      eval_every=values['eval_every'],
      checkpoint_every=values['checkpoint_every'],
      keep_checkpoints=values['keep_checkpoints'], desc=desc)
  # Binaries that train several seeds (--seeds) pass each as an override.
  if 'seed' in values:
    fields['seed'] = values['seed']
  fields.update(overrides)
  return TrainConfig(**fields)


def has_checkpoint(workdir: str | os.PathLike[str]) -> bool:
  """Whether ``workdir`` holds a saved checkpoint (``checkpoints/<step>``)."""
  ckpt = pathlib.Path(workdir) / CHECKPOINTS
  return ckpt.is_dir() and any(p.name.isdigit() for p in ckpt.iterdir())


def find_runs(folder: str | os.PathLike[str]) -> list[pathlib.Path]:
  """The workdirs below ``folder`` (a few levels down), sorted.

  A workdir is a folder holding a ``manifest.jsonl``; nothing below one is
  searched (a workdir's own ``checkpoints``), nor below ``.``-folders.
  """
  found = []

  def walk(path: pathlib.Path, depth: int) -> None:
    try:
      children = sorted(p for p in path.iterdir() if p.is_dir()
                        and not p.name.startswith('.'))
    except OSError:
      return
    for child in children:
      if (child / MANIFEST_FILE).is_file():
        found.append(child)
      elif depth > 1:
        walk(child, depth - 1)

  walk(pathlib.Path(folder), _SEARCH_DEPTH)
  return found


class Start(NamedTuple):
  """What :func:`read_workdir` read from a run's workdir."""
  binary: str        # the module that trained it: 'experiments.act_parity'
  values: dict       # every flag value of its last start, flags.json's over
  command: str       # that start's command line


def _no_run(workdir: pathlib.Path) -> FileNotFoundError:
  """Why ``workdir`` (a folder without ``manifest.jsonl``) is not a run."""
  runs = find_runs(workdir)
  if len(runs) == 1:
    return FileNotFoundError(
        f'{workdir} is not a run\'s workdir but holds one below it, '
        f'{runs[0].relative_to(workdir)}; pass that folder, {runs[0]}.')
  if runs:
    names = [str(p.relative_to(workdir)) for p in runs]
    more = (f' and {len(names) - _NAMED} more' if len(names) > _NAMED
            else '')
    return FileNotFoundError(
        f'{workdir} is not a run\'s workdir but a folder of {len(runs)} '
        f'runs: {", ".join(names[:_NAMED])}{more}; pass one of them, e.g. '
        f'{runs[0]}.')
  what = ('is empty' if not any(workdir.iterdir()) else
          f'holds no run (no {MANIFEST_FILE} in it or in a folder below it)')
  return FileNotFoundError(
      f'{workdir} {what}: a binary writes {MANIFEST_FILE} into its '
      '--workdir when it starts training; pass the --workdir of a run.')


def _last_start(workdir: pathlib.Path) -> dict:
  path = workdir / MANIFEST_FILE
  lines = [line for line in path.read_text().splitlines() if line.strip()]
  if not lines:
    raise ValueError(f'{path} is empty: the run never started.')
  try:
    return json.loads(lines[-1])
  except json.JSONDecodeError:
    raise ValueError(f'the last line of {path} is not JSON: the file is '
                     'damaged.') from None


def _binary(command: str) -> str:
  words = shlex.split(command)     # python -m <module> ...
  return words[2] if words[1:2] == ['-m'] else words[1]


def _check_known(workdir: pathlib.Path, binary: str,
                 known: Sequence[str]) -> None:
  if binary not in known:
    raise ValueError(
        f'{workdir} holds a run of {binary}, which is not rebuilt from its '
        f'workdir (binary must be one of {", ".join(known)}); rebuild its '
        'Experiment as that binary does and restore its params with '
        'vcrnn_jax.training.train.restore_latest_params.')


def _recorded(workdir: pathlib.Path, start: dict) -> dict:
  """The flag values of ``start`` with ``flags.json``'s over them."""
  if not has_checkpoint(workdir):
    raise FileNotFoundError(
        f'no checkpoint in {workdir / CHECKPOINTS}: the run has started but '
        'saved none yet (the first comes at --checkpoint_every steps, by '
        'default --eval_every); load it once it has, or pass another run.')
  path = workdir / FLAGS_FILE
  if not path.is_file():
    raise FileNotFoundError(
        f'no {path}, which holds the run-defining flags (written with the '
        'first checkpoint): the workdir is incomplete; pass another run.')
  if 'flags' not in start:
    raise ValueError(
        f'the last start in {workdir / MANIFEST_FILE} has no "flags" (it '
        'was written before binaries recorded their flag values): rerun its '
        f'command once, `{start["command"]}`, which resumes the run from '
        'its checkpoint and records them.')
  return {**start['flags'], **json.loads(path.read_text())}


def read_workdir(workdir: str | os.PathLike[str],
                 known: Sequence[str]) -> Start:
  """The binary, flag values and command of the run in ``workdir``.

  Args:
    workdir: a binary's ``--workdir`` (for a binary of several seeds, one of
      its ``seed=<s>`` folders: their seed is the folder's, added to the
      values as ``seed``).
    known: the binaries whose runs the caller rebuilds.

  Raises:
    FileNotFoundError: no such folder; a folder without ``manifest.jsonl``
      (empty, or a folder of runs: the message lists them); a run with no
      checkpoint yet, or without ``flags.json``.
    ValueError: a run of a binary not in ``known``, a damaged manifest, or
      one written before binaries recorded their flag values.
  """
  workdir = pathlib.Path(workdir)
  if not workdir.is_dir():
    raise FileNotFoundError(f'workdir {workdir} is not a directory; pass a '
                            'binary\'s --workdir.')
  if not (workdir / MANIFEST_FILE).is_file():
    raise _no_run(workdir)
  start = _last_start(workdir)
  binary = _binary(start['command'])
  _check_known(workdir, binary, known)
  values = _recorded(workdir, start)
  if 'seeds' in values and 'seed' not in values:
    match = re.fullmatch(r'seed=(\d+)', workdir.name)
    if match is None:
      raise ValueError(f'{binary} trains each of --seeds in '
                       f'<workdir>/seed=<s>; {workdir} is not such a folder.')
    values['seed'] = int(match.group(1))
  return Start(binary, values, start['command'])
