"""The benchmark suite: each benchmark repeated, unpinned and pinned.

Usage::

  python -m benchmarks                       # each at its default settings
  python -m benchmarks --quick               # tiny settings (the smoke test)
  python -m benchmarks --only=act_loop,skip_inference --out=bench
  python -m benchmarks --record_dir=docs/performance/records
  python -m benchmarks --only=flax_rnn \
      --flags='flax_rnn=--sizes=256x64x100 --dtypes=float32,bfloat16'

runs each benchmark below ``--repeats`` times (default 3; 1 with
``--quick``) with the default thread pool (``unpinned``: every core, as a
user runs it) and as many times pinned to one core (``pinned``), taking
turns, each run a fresh ``python -m benchmarks.<name> --json=FILE``
process (:mod:`benchmarks._repeat`). Rows are matched across runs and each
measurement becomes a median with its range per affinity
(:mod:`experiments.reports.bench_records`). It writes ``<out>/benchmarks.json``
(the machine, the versions, every row) and ``<out>/benchmarks.md`` (a table
per benchmark whose ratio columns show the unpinned median and range, and
the pinned one beside it); ``--record_dir`` also writes one benchmark
record per benchmark, which ``python -m experiments.results`` turns into
the tables of docs/performance.md. Pinned ratios flatter the paths made of
small matmuls: a full-size step spreads its one large matmul over every
core, theirs do not; the unpinned ones are what a user sees.

``--in_process`` runs each benchmark once in this process instead (no
repeats, no pinning): a quick look at a change.

Each benchmark's docstring says what its columns measure. Not in the
suite: ``ponder_tail`` (it reads a trained run's checkpoint),
``processes`` (it starts several processes) and ``paper_throughput`` (it
reads training runs; ``benchmarks/gpu_evidence.sh`` makes them).
"""

import argparse
import datetime
import importlib
import pathlib
import platform
import shlex
import sys
import time

import jax

from benchmarks import _cli, _record, _repeat
from experiments.reports import bench_records

SUITE = ('act_loop', 'rehn_depth', 'depth_cost', 'vc_inference',
         'skip_inference', 'compile_time', 'flax_rnn')
AFFINITY = {'both': ('unpinned', 'pinned'), 'unpinned': ('unpinned',),
            'pinned': ('pinned',)}


def _machine() -> dict:
  device = jax.devices()[0]
  return {'backend': jax.default_backend(), 'device': device.device_kind,
          'devices': jax.device_count(), 'cpus': _record.cores(),
          'platform': platform.platform()}


def markdown(results: dict) -> str:
  """A Markdown table per benchmark of ``results['benchmarks']``."""
  machine = results['machine']
  lines = [f'Machine: {machine["device"]} ({machine["backend"]}, '
           f'{machine["cpus"]} CPUs); jax {results["versions"]["jax"]}; '
           f'{"quick" if results["quick"] else "default"} settings.', '']
  for name, bench in results['benchmarks'].items():
    lines.append(f'## {name} ({bench["seconds"]:.0f} s)\n')
    lines.append(bench_records.fragment(bench['record']))
  return '\n'.join(lines)


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--quick', action='store_true',
                      help='run every benchmark at its tiny --quick '
                      'settings, once per affinity unless --repeats says '
                      'otherwise (a minute or two in all)')
  parser.add_argument('--only', default=','.join(SUITE),
                      help='comma-separated benchmarks to run, of: '
                      + ', '.join(SUITE))
  parser.add_argument('--out', default='benchmarks_out',
                      help='directory for benchmarks.json and benchmarks.md')
  parser.add_argument('--repeats', type=int, default=None,
                      help='runs of each benchmark per affinity, each in a '
                      'fresh process (default 3; 1 with --quick)')
  parser.add_argument('--affinity', default='both', choices=sorted(AFFINITY),
                      help='unpinned: the default thread pool on every core '
                      '(the headline); pinned: one core; both: taking '
                      'turns, unpinned shown first')
  parser.add_argument('--record_dir', default='',
                      help='also write a benchmark record <name>.json per '
                      'benchmark to this folder (docs/performance/records '
                      'for the published tables; take them on a quiet '
                      'machine)')
  parser.add_argument('--machine', default=platform.node(),
                      help="the machine's name in the records (default: the "
                      'host name)')
  parser.add_argument('--flags', action='append', default=[],
                      metavar='NAME=FLAGS',
                      help='flags for benchmark NAME\'s runs instead of its '
                      'defaults, as one string (repeatable): '
                      '--flags="flax_rnn=--sizes=256x64x100 '
                      '--dtypes=float32,bfloat16"; the records keep them')
  parser.add_argument('--in_process', action='store_true',
                      help='run each benchmark once in this process (no '
                      'repeats, no pinning, no records)')
  return parser


def _settings(parser, args) -> dict:
  names = [n for n in args.only.split(',') if n]
  unknown = sorted(set(names) - set(SUITE))
  if unknown or not names:
    parser.error(f'--only takes names of {", ".join(SUITE)}; got '
                 f'{args.only!r}')
  extra = {}
  for item in args.flags:
    name, sep, text = item.partition('=')
    if not sep or name not in names:
      parser.error(f'--flags takes NAME=FLAGS with NAME one of --only\'s '
                   f'benchmarks ({", ".join(names)}); got {item!r}')
    extra[name] = shlex.split(text)
  repeats = args.repeats or (1 if args.quick else 3)
  if args.repeats is not None and args.repeats < 1:
    parser.error(f'--repeats must be >= 1, got {args.repeats}')
  if args.in_process and (args.record_dir or args.repeats
                          or args.affinity != 'both'):
    parser.error('--in_process runs each benchmark once, unpinned: it '
                 'takes no --repeats, --affinity or --record_dir')
  affinities, cpu = AFFINITY[args.affinity], _repeat.pin_cpu()
  if args.in_process:
    affinities = ('unpinned',)
  elif cpu is None and 'pinned' in affinities:
    print('this OS cannot pin a process to one core (no '
          'os.sched_setaffinity): running unpinned only')
    affinities = ('unpinned',)
  return {'names': names, 'quick': args.quick, 'repeats': repeats,
          'affinities': affinities, 'pinned_cpu': cpu,
          'in_process': args.in_process, 'flags': extra}


def _run(name: str, settings: dict) -> dict[str, list[list[dict]]]:
  extra = settings['flags'].get(name, [])
  if settings['in_process']:
    module = importlib.import_module(f'benchmarks.{name}')
    return {'unpinned': [module.main(extra + (['--quick'] if settings['quick']
                                              else []))]}
  return _repeat.repeat(name, quick=settings['quick'],
                        repeats=settings['repeats'],
                        affinities=settings['affinities'],
                        cpu=settings['pinned_cpu'], extra=extra)


def main(argv=None) -> dict:
  parser = _parser()
  args = parser.parse_args(argv)
  settings = _settings(parser, args)
  out = pathlib.Path(args.out)
  out.mkdir(parents=True, exist_ok=True)
  command = 'python -m benchmarks ' + shlex.join(
      sys.argv[1:] if argv is None else list(argv))
  results = {
      'started': datetime.datetime.now(datetime.UTC).isoformat(
          timespec='seconds'),
      'command': command, 'quick': args.quick,
      'repeats': 1 if args.in_process else settings['repeats'],
      'affinities': list(settings['affinities']),
      'in_process': args.in_process, 'machine': _machine(),
      'versions': _record.versions(), 'benchmarks': {}}
  for name in settings['names']:
    print(f'\n=== {name} ===', flush=True)
    started, t0 = _record.now(), time.perf_counter()
    runs = _run(name, settings)
    record = _record.make(name, runs, command=command, started=started,
                          seconds=time.perf_counter() - t0,
                          settings=settings, machine=args.machine,
                          record_dir=args.record_dir)
    results['benchmarks'][name] = {
        'seconds': record['seconds'],
        'rows': bench_records.headline(record['rows']), 'record': record}
    if args.record_dir:
      path = _record.write(record, args.record_dir)
      print(f'wrote {path}')
    # Written after every benchmark, so a later failure loses nothing.
    _cli.write_json(out / 'benchmarks.json', results)
    (out / 'benchmarks.md').write_text(markdown(results), encoding='utf-8')
  print(f'\nwrote {out / "benchmarks.json"} and {out / "benchmarks.md"}')
  return results


if __name__ == '__main__':
  main()
