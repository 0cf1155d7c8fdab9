r"""When data parallelism across processes pays: act_parity on 1 vs N processes.

Runs ``experiments.act_parity`` (the paper's settings: batch 128, Elman RNN,
ACT with M=100) at each ``--hidden`` size, side by side in one run:

  (a) one process (all of this machine's devices);
  (b) ``--processes`` processes on this machine, joined through
      ``jax.distributed`` on localhost (CPU collectives over gloo/TCP), each
      computing its share of every batch;

and prints the training steps per second of each (``steps_per_sec`` of the
second evaluation interval: compilation and the first steps excluded) and
the ratio (b)/(a). On a CPU both share the same cores, so (b) only wins when
one process cannot keep them busy; across machines it adds their cores, and
the cost per step is the all-reduces over the network: ACT's halting loop
puts one in every ponder step (its "any row still pondering?" test spans the
whole batch), plus one for the gradients.

Usage::

  python -m benchmarks.processes                       # hidden 128, 512, 1024
  python -m benchmarks.processes --hidden=128,2048 --processes=2
"""

import argparse
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def steps_for(hidden: int) -> int:
  """Steps per measured interval: ~10-60 s on a 2-core CPU, either way."""
  return max(10, int(300 * (128 / hidden) ** 2))


def run(hidden: int, processes: int, workdir: pathlib.Path) -> float:
  """Steps per second of the second evaluation interval."""
  every = steps_for(hidden)
  args = [sys.executable, '-m', 'experiments.act_parity', '--tau=0.01',
          f'--hidden_size={hidden}', f'--steps={2 * every}',
          f'--eval_every={every}', f'--workdir={workdir}']
  env = dict(os.environ)
  env['PYTHONPATH'] = os.pathsep.join(
      [str(REPO)] + [p for p in [env.get('PYTHONPATH')] if p])
  if processes == 1:
    commands = [args]
  else:
    port = _free_port()
    commands = [args + [f'--coordinator_address=127.0.0.1:{port}',
                        f'--num_processes={processes}', f'--process_id={i}']
                for i in range(processes)]
  procs = [subprocess.Popen(c, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
           for c in commands]
  for p in procs:
    _, err = p.communicate()
    if p.returncode:
      raise SystemExit(f'hidden {hidden}, {processes} processes: '
                       f'{err.strip().splitlines()[-1]}')
  lines = (workdir / 'metrics.jsonl').read_text().splitlines()
  return json.loads(lines[-1])['steps_per_sec']


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--hidden', default='128,512,1024',
                      help='comma-separated hidden sizes')
  parser.add_argument('--processes', type=int, default=2)
  args = parser.parse_args(argv)
  sizes = [int(h) for h in args.hidden.split(',')]
  print(f'{"hidden":>6}  {"steps":>5}  {"1 process":>10}  '
        f'{f"{args.processes} processes":>12}  {"ratio":>6}  load', flush=True)
  rows = []
  with tempfile.TemporaryDirectory() as tmp:
    for hidden in sizes:
      one = run(hidden, 1, pathlib.Path(tmp, f'{hidden}_1'))
      many = run(hidden, args.processes,
                 pathlib.Path(tmp, f'{hidden}_{args.processes}'))
      load = os.getloadavg()[0] if hasattr(os, 'getloadavg') else float('nan')
      rows.append((hidden, one, many))
      print(f'{hidden:>6}  {steps_for(hidden):>5}  {one:>10.1f}  '
            f'{many:>12.1f}  {many / one:>6.2f}  {load:.1f}', flush=True)
  return rows


if __name__ == '__main__':
  t0 = time.time()
  main()
  print(f'({time.time() - t0:.0f} s)')
