r"""How long each experiment binary's train step takes to compile.

For every binary in ``experiments/`` that trains, at its default flags (the
paper's model), this measures the wall seconds of

  * ``lower_s``: ``jax.jit(train.train_step, static_argnums=(0, 1))
    .lower(...)``: tracing the loss, its gradient and the optimizer update
    to StableHLO;
  * ``compile_s``: ``.compile()`` of that: XLA's optimisation and code
    generation;

and their sum ``total_s``, what a run waits for before its first step.
Each binary runs in a fresh process of its own (``python -m
benchmarks.compile_time --child NAME OUT FLAGS...`` runs ``python -m
experiments.NAME FLAGS`` with the trainer's entry point,
``experiments._common.train``, replaced by the measurement), so the binary
builds its model, task and :class:`~vcrnn_jax.training.train.TrainConfig`
with its own code, and nothing is compiled before: no cache in memory or on
disk. A binary that trains several models (seeds) is measured on the first.
The process's one-time start-up (the backend, a first jit) is paid before
the clock starts. ``params`` is the number of trained parameters.

Binaries that read a corpus read it from ``--data_dir`` (default
``$VCRNN_JAX_SHARED_DATA`` or ``../shared/data``) when it is there (``data``
= ``real``; for ``vc_europarl`` that is ``text/fortunes_cs.txt``, the
results page's stand-in for Europarl). Otherwise they read a small stand-in
written to a temporary folder in the corpus's published layout
(``stand-in``): random text with the real vocabulary for PTB words
(10,000) and characters (50), Text8 (27) and enwik8 (256 bytes), random UCI
HAR windows (128 x 9, 6 classes), and random tunes and Czech-like text for
``vc_music`` and ``vc_europarl``, whose vocabularies (so softmax widths and
``params``) are read off the file and differ from a real run's. The
compiled program depends on the data only through such shapes. ``none``: a
synthetic task the binary draws itself. Nothing is ever downloaded. A
binary that fails gets a row with its ``error`` and no times.

Usage::

  python -m benchmarks.compile_time     # ~3.5 min on one core of CPU-2
  python -m benchmarks.compile_time --only=act_parity,vc_ptb
  python -m benchmarks.compile_time --quick          # ~20 s

The suite, ``python -m benchmarks --only=compile_time``, runs it as a user does
(unpinned, every core) and pinned to one core, 3 times each in fresh
processes taking turns, and reports both: docs/performance.md.
"""

import argparse
from collections.abc import Callable
import json
import os
import pathlib
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

import jax
import numpy as np

from benchmarks import _cli
from vcrnn_jax.training import train

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = pathlib.Path(os.environ.get(
    'VCRNN_JAX_SHARED_DATA', REPO.parent / 'shared' / 'data'))
# Every binary that trains; act_sweep and family_summary run others.
BINARIES = ('act_parity', 'act_logic', 'act_addition', 'act_sort',
            'act_wikipedia', 'rehn_synthetic', 'rehn_ptb', 'rehn_har',
            'vc_ptb', 'vc_text8', 'vc_music', 'vc_europarl',
            'family_parity', 'family_adding')
# The suite's table (python -m benchmarks): the headline ratio columns
# (fnmatch patterns), then the time columns shown beside them.
RATIOS = ()
TIMES = ('lower_s', 'compile_s', 'total_s')
QUICK = ['--only=family_adding,vc_ptb', '--data_dir=']


class Corpus(NamedTuple):
  """Where a binary's corpus lies under a data root, and a stand-in for it.

  Attributes:
    paths: relative paths of which any one present means the corpus is.
    flags: ``root -> the binary's flags`` that read it from ``root``.
    write: ``root -> None``, writes the stand-in under ``root`` (one of
      ``paths``).
  """
  paths: tuple[str, ...]
  flags: Callable[[pathlib.Path], list[str]]
  write: Callable[[pathlib.Path], None]


def _rng() -> np.random.Generator:
  return np.random.default_rng(0)


def _write(path: pathlib.Path, data: str | bytes) -> None:
  path.parent.mkdir(parents=True, exist_ok=True)
  if isinstance(data, bytes):
    path.write_bytes(data)
  else:
    path.write_text(data, encoding='utf-8')


def _random_text(alphabet: str, size: int) -> str:
  return ''.join(_rng().choice(list(alphabet), size))


# 48 characters: PTB's character vocabulary is 48, '_' and the line end.
_PTB_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789#$&\'*-./<>\\N'


def _ptb_lines(split: str) -> list[list[str]]:
  """Sentences of 20 three-character words; train holds all 9,999 words."""
  n = len(_PTB_CHARS)
  words = [_PTB_CHARS[i // n // n] + _PTB_CHARS[i // n % n] + _PTB_CHARS[i % n]
           for i in range(9_999)]   # + <eos>: PTB's 10,000 words
  rng = _rng()
  stream = (list(rng.permutation(words * 4)) if split == 'train'
            else list(rng.choice(words, 8_000)))
  return [stream[i:i + 20] for i in range(0, len(stream), 20)]


def _write_ptb(root: pathlib.Path) -> None:
  for split in ('train', 'valid', 'test'):
    lines = _ptb_lines(split)
    _write(root / 'ptb' / f'ptb.{split}.txt',
           ''.join(f' {" ".join(l)} \n' for l in lines))
    _write(root / 'ptb' / f'ptb.char.{split}.txt',
           ''.join(' '.join('_'.join(l)) + ' \n' for l in lines))


def _write_har(root: pathlib.Path) -> None:
  channels = [f'{kind}_{axis}' for kind in ('body_acc', 'body_gyro',
                                            'total_acc') for axis in 'xyz']
  rng = _rng()
  for split, n in (('train', 400), ('test', 200)):
    base = root / 'har' / 'UCI HAR Dataset' / split
    for c in channels:
      rows = rng.normal(size=(n, 128))
      _write(base / 'Inertial Signals' / f'{c}_{split}.txt',
             ''.join(' '.join(f'{v:.4f}' for v in r) + '\n' for r in rows))
    _write(base / f'y_{split}.txt',
           ''.join(f'{i % 6 + 1}\n' for i in range(n)))
    _write(base / f'subject_{split}.txt',
           ''.join(f'{i % 20 + 1}\n' for i in range(n)))


def _write_tunes(root: pathlib.Path) -> None:
  """400 random tunes: ~360 (pitch, length) and other symbols (real: 383)."""
  rng = _rng()
  notes = [f'{a}{p}' for a in '=^_' for p in 'ABCDEFGabcdefg'] + ['z']
  lengths = ['', '2', '/2', '3', '3/2', '4', '/2>', '2<']
  tunes = []
  for _ in range(400):
    bars = [' '.join(f'{rng.choice(notes)} {rng.choice(lengths)}'.strip()
                     for _ in range(6)) for _ in range(8)]
    tunes.append(f'M:{rng.choice(["4/4", "6/8", "3/4"])} '
                 f'K:{rng.choice(["maj", "min", "dor", "mix"])} |: '
                 + ' | '.join(bars) + ' :|\n')
  _write(root / 'thesession' / 'tunes_v3_valid.txt', ''.join(tunes))


# Czech letters, spaces, punctuation, and a line end every ~100 characters
# (vc_europarl splits at line starts).
_CZECH = 'aábcčdďeéěfghiíjklmnňoópqrřsštťuúůvwxyýzž' * 2 + ' ' * 12 + '.,\n'

CORPORA = {
    'act_wikipedia': Corpus(
        ('enwik8', 'enwik8.zip', 'enwik8/enwik8', 'enwik8/enwik8.zip'),
        lambda root: [f'--data_dir={root}'],
        lambda root: _write(root / 'enwik8', _rng().bytes(1 << 20))),
    'rehn_ptb': Corpus(('ptb/ptb.train.txt',),
                       lambda root: [f'--data_dir={root}'], _write_ptb),
    'rehn_har': Corpus(('har/UCI HAR Dataset.zip', 'har/UCI HAR Dataset'),
                       lambda root: [f'--data_dir={root}'], _write_har),
    'vc_ptb': Corpus(('ptb/ptb.char.train.txt',),
                     lambda root: [f'--data_dir={root}'], _write_ptb),
    'vc_text8': Corpus(
        ('text8', 'text8.zip', 'text8/text8', 'text8/text8.zip'),
        lambda root: [f'--data_dir={root}'],
        lambda root: _write(root / 'text8', _random_text(
            ' abcdefghijklmnopqrstuvwxyz', 400_000))),
    'vc_music': Corpus(
        ('thesession/tunes_v3_valid.txt', 'thesession/data_v3'),
        lambda root: [f'--data_dir={root}'], _write_tunes),
    # The results page's stand-in for Europarl Czech, if present.
    'vc_europarl': Corpus(
        ('text/fortunes_cs.txt',),
        lambda root: [f'--data_path={root / "text" / "fortunes_cs.txt"}'],
        lambda root: _write(root / 'text' / 'fortunes_cs.txt',
                            _random_text(_CZECH, 400_000))),
}


def data_flags(name: str, data_dir: pathlib.Path | None,
               scratch: pathlib.Path) -> tuple[str, list[str]]:
  """``(kind, flags)``: how ``name`` finds its corpus (see the docstring)."""
  corpus = CORPORA.get(name)
  if corpus is None:
    return 'none', []
  if data_dir is not None and any((data_dir / p).exists()
                                  for p in corpus.paths):
    return 'real', corpus.flags(data_dir)
  root = scratch / name
  corpus.write(root)
  return 'stand-in', corpus.flags(root)


# ----------------------------------------------------------------------------
# The child: one binary, one measurement.


def _measure(experiment, config) -> dict:
  """Seconds to lower and to compile ``train_step`` on ``experiment``."""
  # What train_and_evaluate builds before its first step, as shapes: lowering
  # needs no values, and initialising big models op by op takes seconds.
  tx = train.make_optimizer(config)
  # pylint: disable-next=protected-access
  state = jax.eval_shape(lambda: train.initial_state(experiment, config)[1])
  _, data_key, loss_key = train.run_keys(config.seed)
  batch = experiment.sample(np.asarray(data_key), np.int32(0))
  key = jax.random.fold_in(loss_key, 0)
  step = jax.jit(train.train_step, static_argnums=(0, 1),
                 static_argnames=('clip_apart',))
  t0 = time.perf_counter()
  lowered = step.lower(experiment, tx, state, batch, key,
                       clip_apart=config.clip_apart)
  t1 = time.perf_counter()
  lowered.compile()
  t2 = time.perf_counter()
  params = sum(leaf.size for leaf in jax.tree_util.tree_leaves(state.params))
  return {'params': params, 'lower_s': t1 - t0, 'compile_s': t2 - t1}


def child(name: str, out: pathlib.Path, flags: list[str]) -> None:
  """Runs ``python -m experiments.<name> <flags>`` up to its first train step.

  Writes :func:`_measure`'s row to ``out`` and exits with status 0 where the
  binary would start training.
  """
  # A compile served from a cache is not a compile.
  jax.config.update('jax_enable_compilation_cache', False)
  # Backend start-up and the first jit are the process's, not the binary's.
  jax.block_until_ready(jax.jit(lambda x: x + 1)(np.float32(0)))
  from experiments import _common  # pylint: disable=g-import-not-at-top

  def measure_and_stop(experiment, config, workdir, *, processes,
                       data_files=()):
    del workdir, processes, data_files
    out.write_text(json.dumps(_measure(experiment, config)))
    raise SystemExit(0)

  _common.train = measure_and_stop
  sys.argv[1:] = flags
  runpy.run_module(f'experiments.{name}', run_name='__main__', alter_sys=True)
  raise RuntimeError(f'experiments.{name} returned without training.')


# ----------------------------------------------------------------------------
# The parent: one child process per binary and repeat.


def _child_env() -> dict:
  env = dict(os.environ)
  # No on-disk cache (a test run sets one for the binaries it starts).
  env.pop('JAX_COMPILATION_CACHE_DIR', None)
  # The children trace under this process's settings (a user's, or a test's).
  for option in ('jax_enable_x64', 'jax_numpy_dtype_promotion',
                 'jax_numpy_rank_promotion'):
    env[option.upper()] = str(getattr(jax.config, option))
  env['PYTHONPATH'] = os.pathsep.join(
      [str(REPO)] + [p for p in [env.get('PYTHONPATH')] if p])
  return env


def run_child(name: str, flags: list[str], scratch: pathlib.Path) -> dict:
  """The row of ``name`` from a fresh process; ``RuntimeError`` on failure."""
  out = scratch / f'{name}.json'
  out.unlink(missing_ok=True)
  # The binaries' default workdirs and tables are relative: keep them here.
  cwd = scratch / 'cwd'
  cwd.mkdir(exist_ok=True)
  proc = subprocess.run(
      [sys.executable, '-m', 'benchmarks.compile_time', CHILD, name,
       str(out), *flags],
      cwd=cwd, env=_child_env(), capture_output=True, text=True, timeout=600)
  if proc.returncode != 0 or not out.exists():
    lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    raise RuntimeError(f'exit status {proc.returncode}: '
                       + (lines[-1] if lines else 'no output'))
  return json.loads(out.read_text())


def measure_binary(name: str, data_dir: pathlib.Path | None,
                   scratch: pathlib.Path, repeats: int) -> dict:
  """Median seconds of ``repeats`` fresh processes of binary ``name``.

  A binary that fails gets a row without times and its ``error``.
  """
  data, flags = data_flags(name, data_dir, scratch)
  row = {'binary': name, 'data': data}
  try:
    runs = [run_child(name, flags, scratch) for _ in range(repeats)]
  except (RuntimeError, subprocess.TimeoutExpired) as e:
    return {**row, 'params': None, 'lower_s': None, 'compile_s': None,
            'total_s': None, 'error': str(e)}
  lower = statistics.median(r['lower_s'] for r in runs)
  compile_ = statistics.median(r['compile_s'] for r in runs)
  return {**row, 'params': runs[0]['params'], 'lower_s': lower,
          'compile_s': compile_, 'total_s': lower + compile_}


def _print_row(row: dict) -> None:
  head = f'{row["binary"]:>15} {row["data"]:>8}'
  if row.get('error'):
    print(f'{head}  failed: {row["error"]}', flush=True)
    return
  print(f'{head} {row["params"]:>10,} {row["lower_s"]:>8.2f} '
        f'{row["compile_s"]:>9.2f} {row["total_s"]:>8.2f}', flush=True)


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--only', default=','.join(BINARIES),
                      help='comma-separated binaries to measure, of: '
                      + ', '.join(BINARIES))
  parser.add_argument('--data_dir', default=str(SHARED_DATA),
                      help='data root holding the real corpora (ptb/, har/, '
                      '...; default $VCRNN_JAX_SHARED_DATA or ../shared/data); '
                      'a corpus missing there, or every corpus with '
                      '--data_dir=, is replaced by a stand-in')
  parser.add_argument('--repeats', type=int, default=1,
                      help='fresh processes per binary (median)')
  _cli.add_quick(parser, QUICK, 'two quick binaries on stand-in corpora')
  return parser


# The first argument of a child process (see run_child).
CHILD = '--child'


@_cli.writes_json
def main(argv=None) -> list[dict]:
  argv = sys.argv[1:] if argv is None else list(argv)
  if argv[:1] == [CHILD]:
    child(argv[1], pathlib.Path(argv[2]), argv[3:])
  parser = _parser()
  args = _cli.parse(parser, argv, QUICK)
  names = [n for n in args.only.split(',') if n]
  unknown = sorted(set(names) - set(BINARIES))
  if unknown or not names:
    parser.error(f'--only takes names of {", ".join(BINARIES)}; got '
                 f'{args.only!r}')
  if args.repeats < 1:
    parser.error('--repeats must be >= 1')
  data_dir = pathlib.Path(args.data_dir) if args.data_dir else None
  print(f'jax {jax.__version__} on {jax.devices()[0].device_kind} '
        f'({jax.default_backend()}); median of {args.repeats} fresh '
        f'process(es) per binary; corpora from {data_dir or "stand-ins"}')
  print(f'{"binary":>15} {"data":>8} {"params":>10} {"lower s":>8} '
        f'{"compile s":>9} {"total s":>8}')
  rows = []
  with tempfile.TemporaryDirectory(prefix='compile_time_') as scratch:
    for name in names:
      rows.append(measure_binary(name, data_dir, pathlib.Path(scratch),
                                 args.repeats))
      _print_row(rows[-1])
  return rows


if __name__ == '__main__':
  main()
