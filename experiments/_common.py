"""Flag handling shared by the experiment binaries.

Every binary parses its flags through :func:`run`, so a bad flag (unknown,
malformed or out of range) and a bad value found later (a ``ValueError`` from
the library, a missing corpus) end with one line on stderr and a non-zero exit
status, never a traceback.
"""

import json
import logging
import math
import os
import pathlib
import sys
from typing import Callable, Optional

from absl import app
from absl import flags

from vcrnn_jax.data.download import DownloadError
from vcrnn_jax.training.train import TrainingDiverged

FLAGS = flags.FLAGS


def _prog() -> str:
  return os.path.basename(sys.argv[0]).replace('.py', '') or 'experiment'


def fail(message: str, status: int = 2) -> None:
  sys.stderr.write(f'{_prog()}: error: {message}\n')
  sys.exit(status)


def _parse(argv):
  try:
    return FLAGS(argv)
  except flags.Error as e:
    fail(str(e).splitlines()[0])


def run(main: Callable) -> None:
  """``app.run(main)`` with one-line errors for bad flags and bad values."""
  # JAX logs at INFO that it found no TPU; the console is for the progress bar.
  logging.getLogger('jax._src.xla_bridge').setLevel(logging.WARNING)

  def guarded(argv):
    if len(argv) > 1:
      fail(f'unexpected positional arguments: {" ".join(argv[1:])}')
    try:
      main(argv)
    except TrainingDiverged as e:
      fail(str(e), status=1)
    except (ValueError, FileNotFoundError, DownloadError) as e:
      fail(str(e).splitlines()[0] if str(e) else type(e).__name__)
    except KeyboardInterrupt:
      fail('interrupted; rerun the same command to resume from the last '
           'checkpoint.', status=130)
  app.run(guarded, flags_parser=_parse)


def define_positive_int(name: str, default: Optional[int], help_: str) -> None:
  flags.DEFINE_integer(name, default, help_, lower_bound=1)


def _finite(lower: float, strict: bool) -> Callable[[float], bool]:
  def check(v):
    return v is not None and math.isfinite(v) and (v > lower if strict
                                                   else v >= lower)
  return check


def define_float(name: str, default: float, help_: str, *, lower: float = 0.0,
                 strict: bool = False) -> None:
  """A float flag that must be finite and ``>= lower`` (``> lower`` if strict)."""
  flags.DEFINE_float(name, default, help_)
  op = '>' if strict else '>='
  flags.register_validator(
      name, _finite(lower, strict),
      message=f'--{name} must be a finite number {op} {lower:g}')


def define_workdir(default_help: str) -> None:
  flags.DEFINE_string(
      'workdir', None,
      'Directory for checkpoints, metrics.jsonl and TensorBoard events. '
      'Rerunning with the same workdir resumes from its latest checkpoint. '
      f'Default: {default_help}.')
  flags.register_validator(
      'workdir', lambda v: v is None or not os.path.exists(v) or os.path.isdir(v),
      message='--workdir exists and is not a directory')


def define_training_flags(*, steps: int, batch_size: int, learning_rate: float,
                          eval_every: int) -> None:
  """The flags every binary shares, with the paper's (or documented) defaults."""
  define_positive_int('steps', steps, 'Number of training steps (weight '
                      'updates).')
  define_positive_int('batch_size', batch_size, 'Sequences per training batch '
                      '(split across all local devices).')
  define_float('learning_rate', learning_rate, 'Adam learning rate.',
               strict=True)
  define_positive_int('eval_every', eval_every, 'Evaluate (and write '
                      'metrics.jsonl / TensorBoard) every this many steps.')
  define_positive_int('checkpoint_every', None, 'Save a checkpoint every this '
                      'many steps (default: --eval_every). The last step is '
                      'always saved.')
  define_positive_int('keep_checkpoints', 3, 'How many recent checkpoints to '
                      'keep.')
  flags.DEFINE_integer('seed', 0, 'Seed of parameter init and of the training '
                       'data stream (same seed, same numbers).')
  flags.DEFINE_float('grad_clip_norm', None, 'Clip gradients to this global '
                     'norm (default: no clipping, as in the paper).')
  flags.register_validator(
      'grad_clip_norm', lambda v: v is None or (math.isfinite(v) and v > 0),
      message='--grad_clip_norm must be a finite number > 0')


# Flags that may change when a run resumes: how long it trains, how it is
# evaluated, saved or plotted, and how the same maths is computed, never what
# is trained.
RESUMABLE_FLAGS = frozenset({
    'steps', 'eval_every', 'checkpoint_every', 'keep_checkpoints', 'workdir',
    'loop', 'compact_rows', 'ponder_slots', 'save_residuals',
    'eval_batch_size', 'eval_batches', 'eval_windows',
    'data_dir', 'plot_ponder_bytes', 'difficulty_report'})

RUN_FLAGS_FILENAME = 'flags.json'


def run_defining_flags() -> list:
  """The binary's flags that define what is trained, sorted by name."""
  return sorted((f for f in FLAGS.get_key_flags_for_module(sys.argv[0])
                 if f.name not in RESUMABLE_FLAGS), key=lambda f: f.name)


def check_run_flags(workdir) -> None:
  """Records the flags that define a run; refuses to resume under other ones.

  The first run in ``workdir`` writes the values of the binary's flags (all
  but :data:`RESUMABLE_FLAGS`) to ``<workdir>/flags.json``. A later run in the
  same ``workdir`` must match them, or else it would silently continue a
  checkpoint trained on another task, size or time penalty.

  Raises:
    ValueError: naming the flags that differ, with the saved values.
  """
  workdir = pathlib.Path(workdir)
  # A JSON round trip, so the comparison sees what the file will hold.
  current = json.loads(json.dumps(
      {f.name: f.value for f in run_defining_flags()}))
  path = workdir / RUN_FLAGS_FILENAME
  if path.is_file():
    saved = json.loads(path.read_text())
    differ = [n for n in sorted(set(saved) | set(current))
              if saved.get(n, '<unset>') != current.get(n, '<unset>')]
    if differ:
      was = ', '.join(f'--{n}={saved.get(n, "<unset>")}' for n in differ)
      now = ', '.join(f'--{n}={current.get(n, "<unset>")}' for n in differ)
      raise ValueError(
          f'{workdir} holds a run with {was}, not {now}: rerun with those '
          'flags to resume it, or pass another --workdir.')
    return
  workdir.mkdir(parents=True, exist_ok=True)
  tmp = path.with_suffix('.json.tmp')
  tmp.write_text(json.dumps(current, indent=1, sort_keys=True) + '\n')
  os.replace(tmp, path)
