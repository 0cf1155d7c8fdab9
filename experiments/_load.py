r"""A binary's run, rebuilt from its workdir: experiment, config and params.

::

  import experiments

  run = experiments.load_run('runs/act_parity/act=true_tau=0.01_seed=0')
  run.binary, run.step                 # 'experiments.act_parity', 300000
  run.flags['tau']                     # every flag the run was built from
  run.experiment.evaluate(run.params, run.step)

:func:`load_run` reads which binary trained the run from the last start in
``<workdir>/manifest.jsonl`` (its module and command line), the
run-defining flags from ``<workdir>/flags.json``, then calls the binary's
own ``build(values) -> (experiment, config)``, the pure function its
``main`` trains with, and restores the latest checkpoint
(:func:`vcrnn_jax.training.train.restore_latest_params`).

The values come from the binary's flag definitions, so the binary is
imported for them, but absl's process-wide flags are left as they were
found: the flags the import defines are copied, deleted again and its
modules forgotten, and the recorded command line is parsed into a private
``FlagValues``, never into ``absl.flags.FLAGS``. Runs of several binaries
load in one process. A process that has imported a binary itself (its flags
defined for good) loads that binary's runs, and refuses another binary whose
flags clash with them.
"""

from collections.abc import Mapping
import copy
import dataclasses
import importlib
import json
import os
import pathlib
import re
import shlex
import sys
from typing import Any

from absl import flags

from experiments.reports import manifest
from vcrnn_jax.training.train import (
  Experiment,
  TrainConfig,
  restore_latest_params,
)

__all__ = ['BINARIES', 'Run', 'load_run']

# The binaries whose runs load: one run per workdir, a module-level
# ``build(values)``. act_sweep's runs are rebuilt by its own sweep.json
# (benchmarks/ponder_tail.py reads them).
BINARIES = tuple(f'experiments.{name}' for name in (
    'act_addition', 'act_logic', 'act_parity', 'act_sort', 'act_wikipedia',
    'family_adding', 'family_parity', 'rehn_har', 'rehn_ptb',
    'rehn_synthetic', 'vc_europarl', 'vc_music', 'vc_ptb', 'vc_text8',
    'depth_logic'))

# The flags that say where a binary's corpus is, which a caller may move.
_DATA_FLAGS = ('data_dir', 'data_path')


@dataclasses.dataclass(frozen=True)
class Run:
  """A binary's run as :func:`load_run` rebuilt it.

  Attributes:
    workdir: the run's workdir.
    binary: the binary's module, e.g. ``'experiments.act_parity'``.
    flags: every flag value the run was rebuilt from: the run-defining
      ones of ``flags.json``, the others as its last command gave them, or
      their defaults (a binary of several seeds adds the run's ``seed``).
    experiment: the :class:`~vcrnn_jax.training.train.Experiment` it
      trained (``init``, ``loss``, ``sample``, ``evaluate``).
    config: the :class:`~vcrnn_jax.training.train.TrainConfig` it trained
      with.
    step: the step of the checkpoint restored (its latest).
    params: that checkpoint's params.
  """
  workdir: pathlib.Path
  binary: str
  flags: dict
  experiment: Experiment
  config: TrainConfig
  step: int
  params: Any


def load_run(workdir: str | os.PathLike[str], *,
             data_dir: str | os.PathLike[str] | None = None,
             data_path: str | os.PathLike[str] | None = None) -> Run:
  """Rebuilds the run in ``workdir`` and restores its latest checkpoint.

  Args:
    workdir: a binary's ``--workdir`` (for ``rehn_synthetic`` and
      ``rehn_har``, one of its ``seed=<s>`` folders).
    data_dir: replaces the run's ``--data_dir``, for a corpus that has moved
      since (the data-reading binaries: ``vc_*``, ``rehn_har``, ``rehn_ptb``,
      ``act_wikipedia``).
    data_path: replaces the run's ``--data_path`` likewise (``vc_music``,
      ``vc_europarl``, ``act_wikipedia``).

  Returns:
    The :class:`Run`.

  Raises:
    FileNotFoundError: no such workdir, no ``manifest.jsonl``, no
      ``flags.json`` or no checkpoint in it, or the run's corpus is not
      where its flags say.
    ValueError: an unknown binary, a data flag the binary does not have,
      a checkpoint that does not match the rebuilt experiment, or a
      binary whose flags clash with those this process defines.
  """
  workdir = pathlib.Path(workdir)
  binary, argv = _last_start(workdir)
  recorded = _recorded_flags(workdir)
  if not _has_checkpoint(workdir):
    raise FileNotFoundError(f'no checkpoint in {workdir / "checkpoints"}: '
                            'the run has not saved one yet.')
  build, defined = _import_binary(binary)
  values = _values(defined, argv, recorded, binary)
  values.update(_data_overrides(values, binary, data_dir=data_dir,
                                data_path=data_path))
  if 'seed' not in values:       # One of --seeds, in <workdir>/seed=<s>.
    values['seed'] = _folder_seed(workdir, binary)
  try:
    experiment, config = build(values)
  except OSError as e:
    where = ' or '.join(f'{n}=' for n in _DATA_FLAGS if n in values)
    raise FileNotFoundError(
        f'the data of the {binary} run in {workdir} is missing: '
        f'{_first_line(e).rstrip(".")}; give load_run\'s {where} where it '
        'is now.') from None
  step, params = restore_latest_params(experiment, config, workdir)
  return Run(workdir, binary, values, experiment, config, step, params)


def _first_line(e: BaseException) -> str:
  return str(e).splitlines()[0] if str(e) else type(e).__name__


def _last_start(workdir: pathlib.Path) -> tuple[str, list[str]]:
  """The binary and arguments of the run's last start (its manifest)."""
  if not workdir.is_dir():
    raise FileNotFoundError(f'workdir {workdir} is not a directory.')
  starts = manifest.read(workdir)
  if not starts:
    raise FileNotFoundError(
        f'no {workdir / manifest.FILE}, which names the binary that trained '
        f'the run{_seeds_hint(workdir)}.')
  # The last start's command: its binary, and the resumable flags it gave.
  command = shlex.split(starts[-1]['command'])   # python -m <module> ...
  binary = command[2] if command[1:2] == ['-m'] else command[1]
  if binary not in BINARIES:
    raise ValueError(f'{workdir} holds a run of {binary}, not of a binary '
                     f'load_run rebuilds: {", ".join(BINARIES)}.')
  return binary, list(starts[-1]['argv'])


def _recorded_flags(workdir: pathlib.Path) -> dict:
  path = workdir / 'flags.json'
  if not path.is_file():
    raise FileNotFoundError(
        f'no {path}, which holds the run-defining flags (written with the '
        f'first checkpoint){_seeds_hint(workdir)}.')
  return json.loads(path.read_text())


def _seeds_hint(workdir: pathlib.Path) -> str:
  # rehn_synthetic and rehn_har train each seed in a folder of its own.
  seeds = sorted(p.name for p in workdir.glob('seed=*') if p.is_dir())
  return (f'; {workdir} holds one run per seed: load its folder '
          f'{" or ".join(seeds)}' if seeds else '')


def _has_checkpoint(workdir: pathlib.Path) -> bool:
  ckpt = workdir / 'checkpoints'
  return ckpt.is_dir() and any(p.name.isdigit() for p in ckpt.iterdir())


def _import_binary(binary: str) -> tuple[Any, dict]:
  """``binary``'s ``build`` and copies of its flags, defaults unparsed.

  Its import defines its flags in absl's process-wide ``FLAGS``; those are
  copied, then deleted and the modules the import added forgotten, so the
  next binary (another family's ``--cell``) imports afresh. A binary already
  imported keeps its flags, untouched.
  """
  names, modules = set(flags.FLAGS), set(sys.modules)
  try:
    build = importlib.import_module(binary).build
    # Copies: parsing the run's command must not touch a flag of this
    # process (a binary imported before keeps its own).
    defined = {f.name: copy.deepcopy(f)
               for f in flags.FLAGS.get_key_flags_for_module(binary)}
    if not defined:    # Imported before, its flags deleted since.
      raise ValueError(f'{binary} is imported in this process without its '
                       'flags; load its run from another process.')
  except flags.Error as e:
    clash = _first_line(e).split('. Description')[0]
    raise ValueError(f'{binary}\'s flags cannot be defined in this process: '
                     f'{clash} (another binary\'s flags are defined here); '
                     'load its run from a process that imports no binary.'
                     ) from None
  finally:
    for name in set(flags.FLAGS) - names:
      delattr(flags.FLAGS, name)
    for name in set(sys.modules) - modules:
      if name.startswith('experiments.'):
        # Also from its package, or `from experiments import <binary>`
        # would find the module whose flags are gone.
        module = sys.modules.pop(name)
        package, _, child = name.rpartition('.')
        if getattr(sys.modules.get(package), child, None) is module:
          delattr(sys.modules[package], child)
  return build, defined


def _values(defined: dict, argv: list[str], recorded: Mapping[str, Any],
            binary: str) -> dict:
  """The flag values: defaults, the last command's, then ``flags.json``'s.

  The command gives the resumable flags (evaluation sizes, ``--steps``, a
  corpus path) that ``flags.json`` leaves out; the run-defining ones come
  from ``flags.json``, as the binary itself compares them on resume (a flag
  added since the run keeps its default).
  """
  private = flags.FlagValues()
  for flag in defined.values():
    private[flag.name] = flag
  try:
    private([binary, *argv], known_only=True)
  except flags.Error as e:
    raise ValueError(f'the command of the {binary} run does not parse '
                     f'today: {_first_line(e)}') from None
  values = {name: private[name].value for name in defined}
  values.update({k: v for k, v in recorded.items() if k in values})
  return values


def _data_overrides(values: Mapping[str, Any], binary: str,
                    **given) -> dict:
  out = {}
  for name, value in given.items():
    if value is None:
      continue
    if name not in values:
      raise ValueError(f'{binary} has no --{name}: {name}= does not apply '
                       'to its run.')
    out[name] = str(value)
  return out


def _folder_seed(workdir: pathlib.Path, binary: str) -> int:
  match = re.fullmatch(r'seed=(\d+)', workdir.name)
  if match is None:
    raise ValueError(f'{binary} trains each of --seeds in <workdir>/seed=<s>; '
                     f'{workdir} is not such a folder.')
  return int(match.group(1))
