"""Every benchmark in one process: one JSON and one Markdown table.

Usage::

  python -m benchmarks                       # each at its default settings
  python -m benchmarks --quick               # tiny settings (the smoke test)
  python -m benchmarks --only=act_loop,skip_inference --out=bench

runs, one after the other in this process, the benchmarks below (each as
``python -m benchmarks.<name>`` would, ``--quick`` passed on), then writes
``<out>/benchmarks.json`` (the machine, the versions, and every row of every
benchmark) and ``<out>/benchmarks.md`` (a table per benchmark, for
docs/performance.md and BUILD_NOTES). Each benchmark's docstring says what
its columns measure; every time is a median of side-by-side runs, and the
ratios are the numbers to compare across machines.

Not in the suite: ``ponder_tail`` (it reads a trained run's checkpoint) and
``processes`` (it starts several processes).
"""

import argparse
import datetime
import importlib
import json
import math
import os
import pathlib
import platform
import sys
import time

import jax

SUITE = ('act_loop', 'rehn_depth', 'vc_inference', 'skip_inference',
         'compile_time', 'flax_rnn')


def _versions() -> dict:
  out = {'python': platform.python_version(), 'jax': jax.__version__}
  for name in ('jaxlib', 'flax', 'optax'):
    try:
      out[name] = importlib.import_module(name).__version__
    except (ImportError, AttributeError):
      out[name] = None
  return out


def _machine() -> dict:
  device = jax.devices()[0]
  return {'backend': jax.default_backend(), 'device': device.device_kind,
          'devices': jax.device_count(), 'cpus': os.cpu_count(),
          'platform': platform.platform()}


def _json_ready(value):
  """``value`` with NaN and infinities as None (strict JSON)."""
  if isinstance(value, dict):
    return {k: _json_ready(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_json_ready(v) for v in value]
  if isinstance(value, float) and not math.isfinite(value):
    return None
  return value


def _format(value) -> str:
  if value is None:
    return '-'
  if isinstance(value, float):
    return f'{value:.3g}'
  return str(value)


def markdown(results: dict) -> str:
  """A Markdown table per benchmark of ``results['benchmarks']``."""
  lines = [f'Machine: {results["machine"]["device"]} '
           f'({results["machine"]["backend"]}, {results["machine"]["cpus"]} '
           f'CPUs); jax {results["versions"]["jax"]}; '
           f'{"quick" if results["quick"] else "default"} settings.', '']
  for name, bench in results['benchmarks'].items():
    rows = bench['rows']
    lines.append(f'## {name} ({bench["seconds"]:.0f} s)\n')
    if not rows:
      lines += ['(no rows)', '']
      continue
    columns = list(dict.fromkeys(k for r in rows for k in r))
    lines.append('| ' + ' | '.join(columns) + ' |')
    lines.append('|' + ' --- |' * len(columns))
    lines += ['| ' + ' | '.join(_format(r.get(c)) for c in columns) + ' |'
              for r in rows]
    lines.append('')
  return '\n'.join(lines)


def main(argv=None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--quick', action='store_true',
                      help='run every benchmark at its tiny --quick '
                      'settings (seconds to a few minutes in all)')
  parser.add_argument('--only', default=','.join(SUITE),
                      help='comma-separated benchmarks to run, of: '
                      + ', '.join(SUITE))
  parser.add_argument('--out', default='benchmarks_out',
                      help='directory for benchmarks.json and benchmarks.md')
  args = parser.parse_args(argv)
  names = [n for n in args.only.split(',') if n]
  unknown = sorted(set(names) - set(SUITE))
  if unknown or not names:
    parser.error(f'--only takes names of {", ".join(SUITE)}; got '
                 f'{args.only!r}')
  out = pathlib.Path(args.out)
  out.mkdir(parents=True, exist_ok=True)
  results = {
      'started': datetime.datetime.now(datetime.UTC).isoformat(
          timespec='seconds'),
      'command': ' '.join(['python -m benchmarks']
                          + (sys.argv[1:] if argv is None else list(argv))),
      'quick': args.quick, 'machine': _machine(), 'versions': _versions(),
      'benchmarks': {}}
  for name in names:
    print(f'\n=== {name} ===', flush=True)
    module = importlib.import_module(f'benchmarks.{name}')
    t0 = time.perf_counter()
    rows = module.main(['--quick'] if args.quick else [])
    results['benchmarks'][name] = {'seconds': time.perf_counter() - t0,
                                   'rows': rows}
    # Written after every benchmark, so a later failure loses nothing.
    (out / 'benchmarks.json').write_text(json.dumps(
        _json_ready(results), indent=1, allow_nan=False) + '\n',
        encoding='utf-8')
    (out / 'benchmarks.md').write_text(markdown(results), encoding='utf-8')
  print(f'\nwrote {out / "benchmarks.json"} and {out / "benchmarks.md"}')
  return results


if __name__ == '__main__':
  main()
