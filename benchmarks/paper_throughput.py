r"""Throughput of the paper-size configurations, read off short training runs.

For each workdir given (a run of an experiment binary at its default, the
paper's, model size: ``benchmarks/gpu_evidence.sh`` makes them), this reads
``metrics.jsonl`` and reports

  * ``steps_per_sec``: weight updates per second over the last evaluation
    window (the trainer's own rate: from the window's first step, so neither
    compilation nor evaluation is in it), with the range over the windows
    after the first in ``min``/``max``;
  * ``adaptive``: the mean ponder (ACT) or depth (EI-REHN) over that window's
    training batches, or VC's mean fraction ``m`` of the state updated: what
    the adaptive models' cost depends on, so the rate holds at that value;
  * ``paper_updates``: the weight updates of the paper's full run
    (:data:`PAPER_UPDATES`, with where each number comes from);
  * ``projected_h``: ``paper_updates / steps_per_sec`` in hours, one device,
    evaluation excluded.

Usage::

  python -m benchmarks.paper_throughput \
      --runs=act_sort=/tmp/gpu_evidence/runs/act_sort,vc_ptb=... \
      --machine='NVIDIA H200' --record_dir=docs/performance/records/h200

It writes a benchmark record (``paper_throughput.json``), which
``python -m experiments.results`` turns into a table of docs/performance.md.
"""

import argparse
import datetime
import json
import pathlib
import shlex
import sys

from benchmarks import _cli, _record

# The headline columns of the suite's tables (none are ratios here).
RATIOS = ()
TIMES = ('steps_per_sec',)
QUICK: list[str] = []
# Per binary: the configuration, the metric of its adaptive computation,
# and the paper's full run in weight updates, with its source.
PAPER_UPDATES = {
    'act_addition': ('ACT addition: LSTM-512, M 20, batch 32', 'train_ponder',
                     16_000_000, '1M iterations x 16 Hogwild threads '
                     '(ACT Sec. 3)'),
    'act_sort': ('ACT sort: LSTM-512, M 100, batch 16', 'train_ponder',
                 16_000_000, '1M iterations x 16 Hogwild threads (ACT Sec. 3)'),
    'vc_ptb': ('VC char-PTB: VCRNN-1024, batch 32 x 100 symbols', 'train_m',
               20 * 1567, '20 epochs of 1,567 updates (the binary\'s '
               'default; the paper gives no epoch count)'),
    'rehn_ptb': ('EI-REHN PTB: D_h 1200, D_z 600, R_max 4, batch 20 x 35',
                 'train_depth', 500 * 1327, '500 epochs of 1,327 updates '
                 '(Zilly et al.\'s RHN schedule, the binary\'s default; the '
                 'paper gives none)'),
}


def rows_of(binary: str, workdir) -> list[dict]:
  """The row of one run: its last window's rate and adaptive cost, the
  paper's updates and the projected hours."""
  path = pathlib.Path(workdir, 'metrics.jsonl')
  windows = [json.loads(line) for line in path.read_text().splitlines()
             if line.strip()]
  rates = [w['steps_per_sec'] for w in windows if w.get('steps_per_sec')]
  if not rates:
    raise ValueError(f'{path}: no evaluation window with a rate')
  config, adaptive, updates, source = PAPER_UPDATES[binary]
  last = windows[-1]
  rate = last['steps_per_sec']
  later = rates[1:] or rates
  value = last.get(adaptive)
  return [{'binary': binary, 'configuration': config,
           'step': last['step'], 'adaptive': adaptive.removeprefix('train_'),
           'adaptive_value': None if value is None else round(value, 3),
           'steps_per_sec': round(rate, 1),
           'min_window': round(min(later), 1),
           'max_window': round(max(later), 1), 'paper_updates': updates,
           'projected_h': round(updates / rate / 3600, 2),
           'paper_run': source}]


@_cli.writes_json
def main(argv=None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--runs', required=True,
                      help='comma-separated BINARY=WORKDIR, BINARY of: '
                      + ', '.join(PAPER_UPDATES))
  parser.add_argument('--machine', default='',
                      help="the machine's name in the record")
  parser.add_argument('--record_dir', default='',
                      help='write the record paper_throughput.json here')
  _cli.add_quick(parser, QUICK, 'no effect (kept for the suite)')
  args = _cli.parse(parser, argv, QUICK)
  runs = [item.partition('=') for item in args.runs.split(',') if item]
  if not runs or any(b not in PAPER_UPDATES or not d for b, _, d in runs):
    parser.error(f'--runs takes BINARY=WORKDIR with BINARY of '
                 f'{", ".join(PAPER_UPDATES)}; got {args.runs!r}')
  rows = [row for binary, _, workdir in runs
          for row in rows_of(binary, workdir)]
  for r in rows:
    print(f'{r["configuration"]}: {r["steps_per_sec"]:.1f} steps/s at step '
          f'{r["step"]} ({r["adaptive"]} {r["adaptive_value"]:.3g}); the '
          f'paper\'s {r["paper_updates"]:,} updates: {r["projected_h"]:.1f} h')
  if args.record_dir:
    record = make_record(runs, argv, args.machine)
    print(f'wrote {_record.write(record, args.record_dir)}')
  return rows


def make_record(runs, argv, machine: str) -> dict:
  """The benchmark record of ``runs`` (``(binary, '=', workdir)``), its
  provenance read off the first run's manifest (the runs' machine, not
  this one's): the commit, versions, CPU and device the runs had."""
  rows = [row for binary, _, workdir in runs
          for row in rows_of(binary, workdir)]
  first = json.loads(pathlib.Path(runs[0][2], 'manifest.jsonl')
                     .read_text().splitlines()[0])
  started = datetime.datetime.fromtimestamp(first['started'], datetime.UTC)
  record = _record.make(
      'paper_throughput', {'unpinned': [rows]},
      command='python -m benchmarks.paper_throughput ' + shlex.join(
          sys.argv[1:] if argv is None else argv),
      started=started.isoformat(timespec='seconds'), seconds=0.0,
      settings={'quick': False, 'pinned_cpu': None}, machine=machine)
  device = first['device']
  record.update(
      commit=first['commit'], dirty=first['dirty'],
      versions={k: first['versions'][k] for k in record['versions']
                if k in first['versions']},
      machine={'name': machine, 'cpu': first['cpu']['model'],
               'cores': first['cpu']['cores'],
               'memory_gib': first['cpu']['memory_gib'],
               'usable_cores': first['cpu']['cores'],
               'device': f'{device["kind"]} ({device["platform"]})'})
  if first.get('note'):
    record['note'] = first['note']
  return record


if __name__ == '__main__':
  main()
