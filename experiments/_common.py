"""What every experiment binary shares: flags, errors, workdir, resume guard.

Every binary parses its flags through :func:`run`, so a bad flag (unknown,
malformed or out of range) and a bad value found later (a ``ValueError`` from
the library, a missing corpus, a workdir that cannot be written) end with one
line on stderr and a non-zero exit status, never a traceback.

A binary defines its own flags, marking those that may change when a run
resumes where it defines them (:func:`mark_resumable`, or ``resumable=True``
to the helpers here), then :func:`define_training_flags` (steps, batch,
optimizer, evaluation, seed) with its paper's defaults, and trains through
:func:`train`, which guards the workdir: a workdir holding a checkpoint holds
a run, recorded in ``<workdir>/flags.json`` with the first checkpoint, and
resuming it under other run-defining flags is refused.
"""

from collections.abc import Callable, Iterable, Sequence
import functools
import json
import logging
import math
import os
import pathlib
import re
import sys
import time
import traceback

from absl import app, flags
import jax
import numpy as np

from experiments.reports import manifest
from vcrnn_jax.data.download import DownloadError
from vcrnn_jax.files import atomic_write
from vcrnn_jax.training import distributed, sweep
from vcrnn_jax.training import runs as training_runs
from vcrnn_jax.training.train import (
  OPTIMIZERS,
  Experiment,
  TrainConfig,
  TrainingDiverged,
  TrainResult,
  prepare_workdir,
  train_and_evaluate,
)

FLAGS = flags.FLAGS


def _prog() -> str:
  # sys.argv[0] is the binary's file, or its module name when a test runs it
  # in its own process (absl names the main module's flags by sys.argv[0]).
  name = os.path.basename(sys.argv[0]).removesuffix('.py')
  return name.rpartition('.')[2] or 'experiment'


def _error_prefix() -> str:
  return f'{_prog()}: error: '


def fail(message: str, status: int = 2, *, everywhere: bool = False,
         processes: distributed.Processes) -> None:
  """Prints ``message`` as one line on stderr and exits with ``status``.

  In a run of several processes (``processes``) the others stop too. With
  ``everywhere`` every process raised this same error at the same point (a
  check agreed on by all of them), so each just exits. Otherwise this
  process tells the others (:meth:`distributed.Processes.abort_peers`, they
  print ``process I failed: <message>`` and exit) and exits at once.
  """
  sys.stderr.write(f'{_error_prefix()}{message}\n')
  sys.stderr.flush()
  if processes.is_multiprocess():
    if everywhere:
      processes.stop_watching()
    else:
      processes.abort_peers(message)
      distributed.exit_now(status)
  sys.exit(status)


_ROLE = re.compile(r':[\w:]+:`([^`]+)`')


def _role_text(match: re.Match) -> str:
  text = match.group(1)
  if text.endswith('>') and '<' in text:       # :role:`title <target>`
    return text[:text.index('<')].rstrip()
  return text[1:].rpartition('.')[2] if text.startswith('~') else text


def plain_text(doc: str) -> str:
  """A docstring written for Sphinx as plain text, for ``--help``.

  A role (``:mod:`a.b```) becomes its text (``~a.b``: ``b``; ``title
  <target>``: the title), a literal loses its double backquotes and the
  ``::`` that introduces a literal block becomes ``:`` after a word and
  nothing after a space, as Sphinx renders them. The docstrings stay Sphinx
  for the documentation site.
  """
  doc = _ROLE.sub(_role_text, doc).replace('``', '')
  doc = re.sub(r'(\S)::$', r'\1:', doc, flags=re.M)
  return re.sub(r'\s*::$', '', doc, flags=re.M)


# The command line as given, for the run manifest (absl keeps only what it
# did not parse).
_invocation: list[str] = []


def _parse(argv):
  _invocation[:] = list(argv)
  # --help prints the main module's docstring: plain text on a terminal.
  main = sys.modules.get('__main__')
  if getattr(main, '__doc__', None):
    main.__doc__ = plain_text(main.__doc__)
  try:
    return FLAGS(argv)
  except flags.Error as e:
    # Before any process starts: this one alone.
    fail(str(e).splitlines()[0], processes=distributed.LOCAL)


def _os_error_line(e: OSError) -> str:
  if isinstance(e, DownloadError) or not getattr(e, 'filename', None):
    return str(e).splitlines()[0] if str(e) else type(e).__name__
  where = e.filename if not e.filename2 else f'{e.filename} -> {e.filename2}'
  return f'{e.strerror or type(e).__name__}: {where}'


def _first_line(e: BaseException) -> str:
  if isinstance(e, OSError):
    return _os_error_line(e)
  return str(e).splitlines()[0] if str(e) else type(e).__name__


def run(main: Callable) -> None:
  """``app.run(main)`` with one-line errors for bad flags and bad values.

  Also starts the processes of a multi-process run (the flags of
  :mod:`vcrnn_jax.training.distributed`) before ``main``, so that every
  binary runs as N processes without code of its own, and makes an error in
  one of them end all of them (non-zero status, one line each). ``main``
  receives the run's handle (:class:`distributed.Processes`) instead of
  ``argv`` (positional arguments are refused), and passes it to
  :func:`train`, :func:`write_results` and whatever else needs it.
  """
  app.run(functools.partial(_guarded, main), flags_parser=_parse)


def run_in_process(main: Callable, argv: Sequence[str]) -> None:
  """What :func:`run` does once absl's app has started, in this process.

  Parses ``argv`` (its first item the program) into the flags, then runs
  ``main`` as :func:`run` does: an error ends in one line on stderr and
  ``SystemExit``. absl's app starts once per process; tests run binaries
  through this instead.
  """
  _guarded(main, _parse(list(argv)))


def _guarded(main: Callable, argv: Sequence[str]) -> None:
  # JAX logs at INFO that it found no TPU; the console is for the progress bar.
  logging.getLogger('jax._src.xla_bridge').setLevel(logging.WARNING)
  # This process alone until the others have joined.
  processes = distributed.LOCAL
  if len(argv) > 1:
    fail(f'unexpected positional arguments: {" ".join(argv[1:])}',
         processes=processes)
  try:
    processes = _start_processes()
    _check_processes(processes)
    main(processes)
    processes.finish()
  except distributed.AgreedError as e:
    fail(_first_line(e), everywhere=True, processes=processes)
  except TrainingDiverged as e:
    # The loss is the same on every process: all of them stop here.
    fail(str(e), status=1, everywhere=True, processes=processes)
  except KeyboardInterrupt:
    fail('interrupted; rerun the same command to resume from the last '
         'checkpoint.', status=130, processes=processes)
  except Exception as e:  # pylint: disable=broad-exception-caught
    _error(e, processes)


def _error(e: Exception, processes: distributed.Processes) -> None:
  """Ends the run after ``e``: one line for bad values, else a traceback.

  In a run of several processes, an error here is often the echo of a peer
  that failed or died (a collective that lost its peer raises here): then
  that peer's failure is the line, and the others stop too.
  """
  if processes.exiting():
    time.sleep(60)     # The watchdog is ending the process with its line.
  problem = processes.peer_failure(e)
  if problem is not None:
    fail(problem, status=1, processes=processes)
  if isinstance(e, (ValueError, OSError)):
    fail(_first_line(e), processes=processes)
  if not processes.is_multiprocess():
    raise e
  traceback.print_exc()   # A bug: its traceback, and the others stop.
  fail(_first_line(e), status=1, processes=processes)


# ----------------------------------------------------------------------------
# Resumable flags.


def mark_resumable(holder: flags.FlagHolder) -> flags.FlagHolder:
  """Marks the flag of ``holder`` as resumable; returns ``holder``.

  A resumable flag may change when a run resumes: it says how long the run
  trains, how the same maths is computed (a loop implementation), how
  results are reported (evaluation sizes, plots) or where inputs and
  processes are, never what is trained. Every other flag of a binary
  defines its run (:func:`run_defining_flags`). The mark is an attribute of
  the absl flag itself, set where the flag is defined::

    _common.mark_resumable(flags.DEFINE_bool('plots', True, 'Draw plots.'))
  """
  FLAGS[holder.name].resumable = True
  return holder


# ----------------------------------------------------------------------------
# Several processes (jax.distributed): the same flags for every binary (all
# resumable: a run may resume on other processes).

mark_resumable(flags.DEFINE_string(
    'coordinator_address', None, 'HOST:PORT of process 0 of a multi-process '
    'run (jax.distributed.initialize); unset: one process. Start the same '
    'command on every process with its own --process_id.'))
mark_resumable(flags.DEFINE_integer(
    'num_processes', None, 'Number of processes of a multi-process run.',
    lower_bound=1))
mark_resumable(flags.DEFINE_integer(
    'process_id', None, 'This process, in 0..num_processes-1.', lower_bound=0))
mark_resumable(flags.DEFINE_bool(
    'distributed', False, 'Let JAX detect the processes of a cluster job '
    '(SLURM, Open MPI, TPU pods) instead of the three flags above.'))
mark_resumable(flags.DEFINE_float(
    'connect_timeout', distributed.CONNECT_TIMEOUT_S, 'Seconds the processes '
    'of a multi-process run wait for each other at start; past it each ends '
    'with one line.'))
flags.register_validator(
    'connect_timeout', lambda v: math.isfinite(v) and v > 0,
    message='--connect_timeout must be a finite number > 0')


# Flags that may differ between the processes of one run: which process it
# is, and paths that each machine may mount or name its own way.
_PER_PROCESS = ('process_id', 'coordinator_address', 'workdir', 'data_dir')


def _process_flags() -> dict:
  return json.loads(json.dumps(
      {f.name: f.value for f in FLAGS.get_key_flags_for_module(sys.argv[0])
       if f.name not in _PER_PROCESS}, default=str))


def _check_same_flags(processes: distributed.Processes) -> None:
  """Refuses processes started with different flags (one line on all).

  Not only the run-defining flags: a process with another ``--steps`` would
  stop while its peers wait for it in the next step's all-reduce.
  """
  mine = _process_flags()
  every = [json.loads(v) for v in processes.agree(
      'the flags check', json.dumps(mine, sort_keys=True))]
  chief = every[0]
  for j, other in enumerate(every[1:], start=1):
    differ = [n for n in sorted(set(chief) | set(other))
              if chief.get(n, '<unset>') != other.get(n, '<unset>')]
    if differ:
      there = ', '.join(f'--{n}={other.get(n, "<unset>")}' for n in differ)
      here = ', '.join(f'--{n}={chief.get(n, "<unset>")}' for n in differ)
      raise distributed.AgreedError(
          f'process {j} was started with {there}, process 0 with {here}: '
          'start every process with the same command (only --process_id '
          'differs).')


def _start_processes() -> distributed.Processes:
  return distributed.initialize(
      coordinator_address=FLAGS.coordinator_address,
      num_processes=FLAGS.num_processes, process_id=FLAGS.process_id,
      auto=FLAGS.distributed, timeout_s=FLAGS.connect_timeout,
      error_prefix=_error_prefix())


def _check_processes(processes: distributed.Processes) -> None:
  """Refuses processes started with other flags; says who joined."""
  if not processes.is_multiprocess():
    return
  _check_same_flags(processes)
  if not processes.is_chief():
    print(f'process {jax.process_index()} of {jax.process_count()}: joined; '
          'process 0 shows progress and writes the files.', flush=True)


def define_positive_int(name: str, default: int | None, help_: str, *,
                        resumable: bool = False) -> None:
  """An integer flag that must be >= 1 (or None: unset).

  ``resumable``: it may change when a run resumes (:func:`mark_resumable`).
  """
  holder = flags.DEFINE_integer(name, default, help_, lower_bound=1)
  if resumable:
    mark_resumable(holder)


def _finite(lower: float, strict: bool) -> Callable[[float], bool]:
  def check(v):
    return v is None or (math.isfinite(v) and (v > lower if strict
                                               else v >= lower))
  return check


def define_float(name: str, default: float | None, help_: str, *,
                 lower: float = 0.0, strict: bool = False,
                 upper: float | None = None,
                 resumable: bool = False) -> None:
  """A float flag that must be finite and ``>= lower`` (``> lower`` if strict).

  A ``None`` default means "unset" (the binary picks a value) and passes.
  ``resumable``: it may change when a run resumes (:func:`mark_resumable`).
  """
  holder = flags.DEFINE_float(name, default, help_)
  if resumable:
    mark_resumable(holder)
  op = '>' if strict else '>='
  bound = f'{op} {lower:g}' + (f' and < {upper:g}' if upper is not None
                               else '')
  check = _finite(lower, strict)
  flags.register_validator(
      name, lambda v: check(v) and (v is None or upper is None or v < upper),
      message=f'--{name} must be a finite number {bound}')


def define_workdir(default_help: str) -> None:
  """``--workdir`` (resumable: a run may be moved to another folder)."""
  mark_resumable(flags.DEFINE_string(
      'workdir', None,
      'Directory for checkpoints, metrics.jsonl and TensorBoard events. '
      'Rerunning with the same workdir resumes from its latest checkpoint. '
      f'Default: {default_help}.'))
  flags.register_validator(
      'workdir',
      lambda v: v is None or not os.path.exists(v) or os.path.isdir(v),
      message='--workdir exists and is not a directory')


def define_training_flags(*, steps: int | None, batch_size: int | None,
                          learning_rate: float | None,
                          eval_every: int | None,
                          optimizer: str = 'adam',
                          grad_clip_norm: float | None = None,
                          keep_checkpoints: int = 3,
                          seed_flag: bool = True) -> None:
  """The flags every binary shares, with the paper's (or documented) defaults.

  ``None`` defaults mean "set by the binary" (the sweep takes each task's).
  ``seed_flag=False`` leaves out ``--seed``, for binaries that train several
  seeds (``--seeds``) and pass each to the library's ``train_config``
  (:func:`vcrnn_jax.training.runs.train_config`).
  """
  # Resumable: how long a run trains, how often it is evaluated and saved.
  define_positive_int('steps', steps, 'Number of training steps (weight '
                      'updates).', resumable=True)
  define_positive_int('batch_size', batch_size, 'Sequences per training '
                      'batch (split across all devices, of all processes).')
  flags.DEFINE_enum('optimizer', optimizer, list(OPTIMIZERS), 'Optimizer: '
                    '"adam" or "sgd" (with --momentum).')
  define_float('learning_rate', learning_rate, 'Learning rate (of Adam, or of '
               'SGD before --lr_decay).', strict=True)
  define_float('momentum', 0.0, 'SGD momentum (0: plain SGD).', upper=1.0)
  define_float('weight_decay', 0.0, 'L2 penalty: weight_decay * params is '
               'added to the gradient (before clipping).')
  define_float('lr_decay', 1.0, 'Multiply the learning rate by this at step '
               '--lr_decay_start and every --lr_decay_every steps after '
               '(1: constant).', strict=True)
  define_positive_int('lr_decay_every', None, 'Steps between two learning-'
                      'rate decays (needed with --lr_decay < 1).')
  flags.DEFINE_integer('lr_decay_start', None, 'First step trained with a '
                       'decayed learning rate (default: --lr_decay_every).',
                       lower_bound=0)
  define_float('grad_clip_norm', grad_clip_norm, 'Clip gradients to this '
               'global norm (default: no clipping unless the paper clips).',
               strict=True)
  define_positive_int('eval_every', eval_every, 'Evaluate (and write '
                      'metrics.jsonl / TensorBoard) every this many steps.',
                      resumable=True)
  define_positive_int('checkpoint_every', None, 'Save a checkpoint every this '
                      'many steps (default: --eval_every). The last step is '
                      'always saved.', resumable=True)
  define_positive_int('keep_checkpoints', keep_checkpoints, 'How many recent '
                      'checkpoints to keep.', resumable=True)
  if seed_flag:
    flags.DEFINE_integer('seed', 0, 'Seed of parameter init, of the training '
                         'data stream and of dropout (same seed, same '
                         'numbers).', lower_bound=0)


def flag_values() -> dict:
  """This binary's flags as ``{name: value}``, what its run is built from.

  Each binary builds its experiment and training configuration from these
  values, not from :data:`FLAGS`, through the library's pure functions of
  them (``vcrnn_jax.papers.<paper>.runs``), and records them in its
  manifest (:func:`write_manifest`), so that
  :func:`vcrnn_jax.papers.runs.load_run` rebuilds a finished run from what
  it recorded, without absl. These are the binary's key flags (those
  ``--help`` lists), run-defining and resumable: the set whose
  run-defining part ``flags.json`` records.
  """
  return {f.name: f.value
          for f in FLAGS.get_key_flags_for_module(sys.argv[0])}


# ----------------------------------------------------------------------------
# The workdir and its resume guard.

RUN_FLAGS_FILENAME = training_runs.FLAGS_FILE


def define_seeds(default: str, help_: str) -> None:
  """``--seeds``: comma-separated integers and ranges ``a-b`` (resumable)."""
  mark_resumable(flags.DEFINE_string('seeds', default, help_))

  def check(value):
    try:
      parse_seeds(value)
    except ValueError as e:
      raise flags.ValidationError(str(e)) from None
    return True

  flags.register_validator('seeds', check)


def parse_seeds(text: str) -> tuple[int, ...]:
  """``'0-4,7'`` -> ``(0, 1, 2, 3, 4, 7)``."""
  return sweep.parse_ints('seeds', text)


def run_defining_flags() -> list:
  """The binary's flags that define what is trained, sorted by name.

  Its key flags less those marked resumable (:func:`mark_resumable`).
  """
  return sorted((f for f in FLAGS.get_key_flags_for_module(sys.argv[0])
                 if not getattr(f, 'resumable', False)),
                key=lambda f: f.name)


def default_workdir(name: str, leading: Iterable[str] = ('seed',)
                    ) -> pathlib.Path:
  """``--workdir``, or ``runs/<name>/<flag>=<value>_...``.

  The name lists the ``leading`` flags, then every other run-defining flag
  whose value is not its default, e.g. ``runs/act_parity/act=true_tau=0.01_
  seed=0_bits=8``, so runs of different settings do not share a folder and
  a rerun of the same command resumes.
  """
  if FLAGS.workdir:
    return pathlib.Path(FLAGS.workdir)

  def text(value):
    if isinstance(value, bool):
      return str(value).lower()
    return f'{value:g}' if isinstance(value, float) else str(value)

  leading = list(leading)
  parts = [f'{n}={text(FLAGS[n].value)}' for n in leading]
  for f in run_defining_flags():
    if f.name not in leading and f.value != f.default:
      parts.append(f'{f.name}={text(f.value)}'.replace('/', '_'))
  return pathlib.Path('runs', name, '_'.join(parts))


def settings_text(exclude: Iterable[str] = ()) -> str:
  """The settings that change this run's result, as ``'a=1 b=x'``.

  Every run-defining flag not at its default, and ``--steps`` when given
  (a resumable flag, yet a run of fewer steps has another result), less
  ``exclude`` (the flags a table already shows, such as the model's name).
  ``''`` for a run at the defaults.
  """
  exclude = set(exclude)
  chosen = [f for f in run_defining_flags()
            if f.name not in exclude and f.value != f.default]
  if 'steps' in FLAGS and FLAGS.steps is not None and 'steps' not in exclude:
    chosen.append(FLAGS['steps'])
  return ' '.join(f'{f.name}={f.value:g}' if isinstance(f.value, float)
                  else f'{f.name}={f.value}'
                  for f in sorted(chosen, key=lambda f: f.name))


def check_output_file(flag: str) -> pathlib.Path:
  """``--<flag>``'s path, refused at once if it names a folder.

  A file written only at the end of training is checked before it.
  """
  path = pathlib.Path(FLAGS[flag].value)
  if path.is_dir():
    raise ValueError(f'--{flag}={path} is a directory; give a file path.')
  return path


def _current_run_flags() -> dict:
  # A JSON round trip, so the comparison sees what the file will hold.
  return json.loads(json.dumps(
      {f.name: f.value for f in run_defining_flags()}))


def _run_flags_error(workdir: pathlib.Path) -> str | None:
  """Why resuming the run in ``workdir`` under these flags is refused."""
  path = workdir / RUN_FLAGS_FILENAME
  if not (path.is_file() and training_runs.has_checkpoint(workdir)):
    return None
  saved = json.loads(path.read_text())
  current = _current_run_flags()
  # A flag added after the run was made counts as set to its default there.
  defaults = json.loads(json.dumps(
      {f.name: f.default for f in run_defining_flags()}))
  saved = {**{n: v for n, v in defaults.items() if n not in saved}, **saved}
  differ = [n for n in sorted(set(saved) | set(current))
            if saved.get(n, '<unset>') != current.get(n, '<unset>')]
  if not differ:
    return None
  was = ', '.join(f'--{n}={saved.get(n, "<unset>")}' for n in differ)
  now = ', '.join(f'--{n}={current.get(n, "<unset>")}' for n in differ)
  return (f'{workdir} holds a run with {was}, not {now}: rerun with those '
          'flags to resume it, or pass another --workdir.')


def check_run_flags(workdir, *, processes: distributed.Processes) -> None:
  """Refuses to resume a run in ``workdir`` under other run-defining flags.

  A workdir holding a checkpoint holds a run, whose flags
  :func:`record_run_flags` wrote to ``<workdir>/flags.json`` with its first
  checkpoint. A workdir without a checkpoint (a run that failed or was
  interrupted before it) holds no run: any flags may start one there.

  In a run of several processes every process checks the workdir as it
  sees it, and the first refusal (in process order) is raised on every
  process alike.

  Raises:
    ValueError: naming the flags that differ, with the saved values
      (:class:`distributed.AgreedError` with several processes).
  """
  workdir = pathlib.Path(workdir)

  def check():
    error = _run_flags_error(workdir)
    if error:
      raise ValueError(error)

  processes.check_everywhere('the workdir check', check)


def record_run_flags(workdir, *, processes: distributed.Processes) -> None:
  """Writes the run-defining flags to ``<workdir>/flags.json``.

  Called with the first checkpoint of a process; :func:`check_run_flags`
  has checked them against a run already there, so rewriting is harmless
  and replaces the file a run without checkpoint may have left. Only process
  0 writes; in a run of several processes every process then reads the file
  back and checks it holds its own flags (a folder that is not shared, or
  one that another run wrote meanwhile, stops them all).

  Raises:
    distributed.AgreedError: a process does not find its flags there.
  """
  path = pathlib.Path(workdir) / RUN_FLAGS_FILENAME
  if processes.is_chief():
    atomic_write(path, json.dumps(_current_run_flags(), indent=1,
                                  sort_keys=True) + '\n')
  if not processes.is_multiprocess():
    return
  processes.agree(f'{RUN_FLAGS_FILENAME} written', '')
  try:
    ok = json.loads(path.read_text()) == _current_run_flags()
  except (OSError, ValueError):
    ok = False
  views = processes.agree(f'{RUN_FLAGS_FILENAME} read', 'ok' if ok else '')
  blind = [str(j) for j, v in enumerate(views) if not v]
  if blind:
    raise distributed.AgreedError(
        f'process {", ".join(blind)} did not find its flags in {path} after '
        'process 0 wrote it: every process must use the same --workdir, on '
        'a filesystem they all share.')


def binary_module() -> str:
  """The running binary's module, ``experiments.act_parity``."""
  main = sys.modules.get('__main__')
  spec = getattr(main, '__spec__', None)
  if spec is not None and spec.name.startswith('experiments.'):
    return spec.name
  # Run in this process by a test (argv[0] is the module's name), or as a
  # file path.
  name = (_invocation or sys.argv)[0]
  stem = pathlib.Path(name).name.removesuffix('.py')
  return name if name.startswith('experiments.') else f'experiments.{stem}'


def write_manifest(workdir, *, data_files: Iterable[str] = (),
                   processes: distributed.Processes) -> None:
  """Appends this start to ``<workdir>/manifest.jsonl``
  (:mod:`experiments.reports.manifest`): the command as given, the source
  tree's commit and dirty state, versions, device, CPU and its instruction
  sets, and a digest of each of ``data_files``; and, under ``"flags"``,
  every flag value (:func:`flag_values`), which
  :func:`vcrnn_jax.papers.runs.load_run` rebuilds the run from. Process 0
  writes."""
  if not processes.is_chief():
    return
  line = manifest.capture(
      (_invocation or sys.argv)[1:], module=binary_module(),
      tree=pathlib.Path(__file__).resolve().parents[1],
      data_paths=data_files)
  # A JSON round trip: the values as load_run will read them.
  line['flags'] = json.loads(json.dumps(flag_values(), default=str))
  manifest.append(workdir, line)


def train(experiment: Experiment, config: TrainConfig, workdir, *,
          processes: distributed.Processes,
          data_files: Iterable[str] = ()) -> TrainResult:
  """:func:`train_and_evaluate` with the workdir guard of this binary's flags.

  Before training, appends the run's manifest (:func:`write_manifest`;
  ``data_files``: the files the run's data came from, a dataset's
  ``meta['files']``). With several processes, every process calls it (with
  the same flags, its handle and a shared workdir); process 0 writes the
  files.
  """
  workdir = prepare_workdir(workdir)
  processes.check_shared_folder(workdir)
  check_run_flags(workdir, processes=processes)
  write_manifest(workdir, data_files=data_files, processes=processes)
  recorded = []

  def on_checkpoint(step):
    del step
    if not recorded:
      record_run_flags(workdir, processes=processes)
      recorded.append(True)

  return train_and_evaluate(experiment, config, workdir,
                            on_checkpoint=on_checkpoint, processes=processes)


# ----------------------------------------------------------------------------
# What a run leaves: results.json first, then plots that may fail alone.

RESULTS_FILENAME = 'results.json'


def metric_sections(metrics: dict) -> dict:
  """A run's final metrics in the one layout every ``results.json`` uses.

  ``{'valid': held-out metrics, 'train': the train_* means of the last
  interval (prefix dropped), 'steps_per_sec': rate}``: the training
  metrics are not held-out numbers, so they do not sit under ``valid``.
  """
  valid = {k: v for k, v in metrics.items()
           if not k.startswith('train_') and k != 'steps_per_sec'}
  train = {k[len('train_'):]: v for k, v in metrics.items()
           if k.startswith('train_')}
  return {'valid': valid, 'train': train,
          'steps_per_sec': metrics.get('steps_per_sec', math.nan)}


def _json_ready(value):
  if isinstance(value, dict):
    return {str(k): _json_ready(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_json_ready(v) for v in value]
  if isinstance(value, np.ndarray):
    return _json_ready(value.tolist())
  if isinstance(value, (bool, np.bool_)):
    return bool(value)
  if isinstance(value, (int, np.integer)):
    return int(value)
  if isinstance(value, (float, np.floating)):
    value = float(value)
    return value if math.isfinite(value) else None   # JSON: null, not NaN
  return value


def write_csv(path, rows) -> None:
  """``rows`` (dicts with the same keys, in order) as a CSV at ``path``,
  written atomically: a report's table (difficulty.csv, classes.csv)."""
  columns = list(rows[0])
  lines = [','.join(columns)] + [','.join(str(r[c]) for c in columns)
                                 for r in rows]
  atomic_write(path, '\n'.join(lines) + '\n')


def write_results(workdir, results: dict, *,
                  processes: distributed.Processes) -> pathlib.Path:
  """Writes ``<workdir>/results.json`` (strict JSON: NaN becomes null).

  Binaries call this before any plot, so a plot that fails loses no
  number. Only process 0 writes.
  """
  path = pathlib.Path(workdir) / RESULTS_FILENAME
  if processes.is_chief():
    atomic_write(path, json.dumps(_json_ready(results), indent=1,
                                  allow_nan=False) + '\n')
    print(f'wrote {path}', flush=True)
  return path


def plot(what: str, draw: Callable[[], object]) -> object | None:
  """``draw()``, or a one-line warning if it fails (the run has succeeded).

  Plots come after ``results.json``; a missing font, a full disk or a bad
  matplotlib install must not turn a finished run into an error.
  """
  try:
    return draw()
  except Exception as e:  # pylint: disable=broad-exception-caught
    sys.stderr.write(f'{_prog()}: warning: {what} not written: '
                     f'{_first_line(e)}\n')
    sys.stderr.flush()
    return None
