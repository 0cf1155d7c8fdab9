"""One short end-to-end run of every experiment binary, in a subprocess."""

import csv
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]

COMMON = ['--steps=4', '--eval_every=2', '--eval_batch_size=32',
          '--hidden_size=8', '--batch_size=4']
RUNS = {
    'act_logic': COMMON + ['--max_len=3', '--num_gates=3'],
    'act_addition': COMMON + ['--max_len=2', '--max_digits=2'],
    'act_sort': COMMON + ['--max_len=4'],
    'act_parity': COMMON + ['--bits=8', '--act=false'],
}


def _run(module, args, tmp_path, cwd=REPO):
  env = dict(os.environ)
  env.pop('XLA_FLAGS', None)
  env['VCRNN_JAX_DATA'] = str(tmp_path / 'cache')
  env['PYTHONPATH'] = os.pathsep.join(
      [str(REPO)] + [p for p in [env.get('PYTHONPATH')] if p])
  return subprocess.run([sys.executable, '-m', f'experiments.{module}', *args],
                        cwd=cwd, env=env, capture_output=True, text=True,
                        timeout=300)


def _metrics(workdir):
  return [json.loads(l) for l in
          (workdir / 'metrics.jsonl').read_text().splitlines()]


@pytest.mark.parametrize('module', sorted(RUNS))
def test_synthetic_binary_runs_end_to_end(module, tmp_path):
  workdir = tmp_path / 'run'
  proc = _run(module, RUNS[module] + [f'--workdir={workdir}'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  lines = _metrics(workdir)
  assert [l['step'] for l in lines] == [2, 4]
  assert 0.0 <= lines[-1]['sequence_error'] <= 1.0
  assert lines[-1]['ponder'] >= 1.0
  assert 'sequence_error' in proc.stdout   # the summary table


def test_a_workdir_resumes_only_under_the_flags_that_made_it(tmp_path):
  # The default workdir names the non-default flags (relative to the cwd).
  args = COMMON + ['--bits=8', '--layout=random']
  proc = _run('act_parity', args, tmp_path, cwd=tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  workdir = (tmp_path / 'runs' / 'act_parity' / 'act=true_tau=0.01_seed=0_'
             'batch_size=4_bits=8_hidden_size=8_layout=random')
  assert [l['step'] for l in _metrics(workdir)] == [2, 4]
  assert json.loads((workdir / 'flags.json').read_text())['layout'] == 'random'
  # Another task in the same folder is refused in one line.
  proc = _run('act_parity', args[:-1] + ['--bits=9', f'--workdir={workdir}'],
              tmp_path)
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines() == [
      f'act_parity: error: {workdir} holds a run with --bits=8, --layout='
      'random, not --bits=9, --layout=prefix: rerun with those flags to '
      'resume it, or pass another --workdir.']
  # Training longer, evaluating differently and reporting by difficulty (the
  # Fig. 6 points) is a resume.
  args = [a for a in args if not a.startswith('--steps')]
  proc = _run('act_parity', args + ['--steps=6', '--eval_batch_size=16',
                                    '--difficulty_report'],
              tmp_path, cwd=tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert [l['step'] for l in _metrics(workdir)] == [2, 4, 6]
  with open(workdir / 'difficulty.csv') as f:
    rows = list(csv.DictReader(f))
  assert [int(r['difficulty']) for r in rows] == list(range(1, 9))
  assert all(0 <= float(r['sequence_error']) <= 1 and float(r['ponder']) >= 1
             for r in rows)
  assert 'difficulty.csv' in proc.stdout.splitlines()[-1]
  # The loop-cost diagnostic reads the same run through its flags.json.
  from benchmarks import ponder_tail
  stats = ponder_tail.main([f'--workdir={workdir}', '--batches=3',
                            '--time=1'])
  assert 1 <= stats['mean_n'] <= stats['max_n'] <= 100
  assert sorted(k for k in stats if k.startswith('ms[')) == sorted(
      f'ms[{name}]' for name, _ in ponder_tail.LOOP_SETTINGS)
  assert all(stats[f'ms[{name}]'] > 0 for name, _ in ponder_tail.LOOP_SETTINGS)
  assert 1 <= stats['loop_iterations'] <= 100     # one input step per vector
  assert 0 < stats['utilisation'] <= 1


def test_ponder_tail_statistics_by_hand():
  from benchmarks import ponder_tail
  # One batch, two rows, two input steps; row 1 is padding at t=1.
  steps = np.array([[[3, 5], [7, 0]]])
  valid = np.array([[[1, 1], [1, 0]]])
  stats = ponder_tail.tail_stats(steps, valid)
  assert stats['max_n'] == 7 and stats['mean_n'] == 5.0
  assert stats['loop_iterations'] == 7 + 5   # max over rows at each t
  assert stats['utilisation'] == 15 / (2 * 12)


def test_wikipedia_binary_runs_on_any_byte_file(tmp_path):
  corpus = tmp_path / 'corpus.txt'
  corpus.write_bytes(b'the quick brown fox jumps over the lazy dog. ' * 200)
  workdir = tmp_path / 'run'
  args = ['--steps=4', '--eval_every=2', '--hidden_size=8', '--batch_size=4',
          '--seq_len=20', '--eval_windows=8', f'--data_path={corpus}',
          f'--workdir={workdir}']
  proc = _run('act_wikipedia', args, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  lines = _metrics(workdir)
  assert lines[-1]['step'] == 4 and 0 < lines[-1]['bpc'] < 12


def test_wikipedia_binary_missing_data_is_one_line_error(tmp_path):
  proc = _run('act_wikipedia', ['--steps=1', f'--data_dir={tmp_path}'],
              tmp_path)
  assert proc.returncode != 0
  lines = [l for l in proc.stderr.strip().splitlines() if 'error' in l]
  assert len(lines) == 1 and 'enwik8' in lines[0], proc.stderr
  assert 'Traceback' not in proc.stderr
