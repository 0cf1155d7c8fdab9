"""The logic task as tokens, and the depth_logic binary run in process.

The token task is checked against vcrnn_jax.tasks.logic (the same examples,
the same final targets) and against Eq. 21 applied by hand with its truth
tables; each halting kind (PonderNet per position among them) trains a
few steps at a tiny size and writes its files; bad flags end with one
line.
"""

import csv
import json

import _binaries
import jax
import numpy as np
import pytest

from vcrnn_jax.tasks import logic, logic_tokens

TINY = ['--steps=2', '--eval_every=2', '--batch_size=4', '--features=8',
        '--heads=2', '--num_gates=3', '--max_depth=4', '--depth=3',
        '--eval_batch_size=8']


def _by_hand(b0, b1, gates):
  """``[b_2, ..., b_{B+1}]`` by Eq. 21: ``b_{i+1} = T_i(P=b_i, Q=b_{i-1})``."""
  older, newer, out = b0, b1, []
  for g in gates:
    older, newer = newer, int(logic.TRUTH_TABLES[g, newer, older])
    out.append(newer)
  return out


def test_tokens_are_the_logic_task_vectors_with_their_targets():
  key = jax.random.key(3)
  vectors = logic.task(max_len=1).sample(key, 300, seq_len=1)
  tokens = logic_tokens.sample(key, 300)
  # The same examples the logic task draws, and its target as the final.
  np.testing.assert_array_equal(tokens.final, vectors.targets[:, 0, 0])
  np.testing.assert_array_equal(tokens.gates, vectors.difficulty)
  x = np.asarray(vectors.inputs)[:, 0]
  t = np.asarray(tokens.tokens)
  np.testing.assert_array_equal(t[:, 0], 2 * x[:, 0] + x[:, 1])
  for row in range(300):
    n = int(tokens.gates[row])
    chunks = x[row, 2:].reshape(10, 10)[:n]
    gates = t[row, 1:n + 1] - logic_tokens.BITS
    np.testing.assert_array_equal(gates, np.argmax(chunks, -1))
    want = _by_hand(int(x[row, 0]), int(x[row, 1]), gates)
    np.testing.assert_array_equal(tokens.targets[row, 1:n + 1], want)
    assert tokens.final[row] == want[-1]
  assert set(np.unique(tokens.gates)) == set(range(1, 11))


def test_padding_is_masked_and_difficulty_is_forced():
  b = logic_tokens.sample(jax.random.key(0), 64, num_gates=6, difficulty=4)
  assert b.tokens.shape == (64, 7)
  np.testing.assert_array_equal(b.gates, 4)
  real = np.arange(7) <= 4
  np.testing.assert_array_equal(b.mask, np.broadcast_to(real, (64, 7)))
  np.testing.assert_array_equal(b.target_mask[:, 0], False)
  np.testing.assert_array_equal(b.target_mask[:, 1:], b.mask[:, 1:])
  np.testing.assert_array_equal(np.asarray(b.tokens)[:, 5:], logic_tokens.PAD)
  np.testing.assert_array_equal(np.asarray(b.targets)[:, 5:], 0.0)
  np.testing.assert_array_equal(b.final, b.targets[:, 4])
  with pytest.raises(ValueError, match='difficulty'):
    logic_tokens.sample(jax.random.key(0), 4, num_gates=3, difficulty=4)


def test_encode_reads_p_as_the_newer_bit():
  # logic.py's example: b_0 = 0, b_1 = 1, then Xq (not P and Q) gives 0.
  xq = logic.GATE_NAMES.index('Xq')
  b = logic_tokens.encode(np.array([0]), np.array([1]),
                          np.array([[xq, 0, 0]]), np.array([1]))
  assert b.tokens.tolist() == [[1, logic_tokens.BITS + xq] + [
      logic_tokens.PAD] * 2]
  assert float(b.final[0]) == 0.0


def _run(args, workdir):
  return _binaries.run('depth_logic', args + [f'--workdir={workdir}'])


@pytest.mark.parametrize('halting', ['per_token', 'per_example', 'fixed'])
def test_binary_trains_and_reports_per_chain_length(halting, tmp_path):
  workdir = tmp_path / 'run'
  proc = _run(TINY + [f'--halting={halting}', '--difficulty_report'],
              workdir)
  assert proc.returncode == 0, proc.stderr[-3000:]
  for name in ('manifest.jsonl', 'flags.json', 'metrics.jsonl'):
    assert (workdir / name).stat().st_size > 0
  assert json.loads((workdir / 'flags.json').read_text())['halting'] == (
      halting)
  last = json.loads((workdir / 'metrics.jsonl').read_text().splitlines()[-1])
  for key in ('error', 'token_error', 'depth', 'ponder', 'loss'):
    assert np.isfinite(last[key]), key
  with open(workdir / 'difficulty.csv', newline='') as f:
    rows = list(csv.DictReader(f))
  assert [int(r['gates']) for r in rows] == [1, 2, 3]
  for r in rows:
    assert 0.0 <= float(r['error']) <= 1.0
    assert 1.0 <= float(r['depth']) <= (3 if halting == 'fixed' else 4)
  if halting == 'per_token':
    # Mean depth of each position index, empty past the chain.
    assert rows[0]['depth_1'] and not rows[0]['depth_2']
    assert all(rows[2][f'depth_{i}'] for i in range(4))
  else:
    assert 'depth_0' not in rows[0]
  if halting == 'fixed':
    assert last['depth'] == 3.0
  results = json.loads((workdir / 'results.json').read_text())
  assert len(results['by_gates']) == 3
  assert 'held-out error' in proc.stdout


def test_route_trains_at_the_capacity_given(tmp_path):
  workdir = tmp_path / 'run'
  proc = _run(TINY + ['--halting=route', '--capacity=1,0.5,0.5,0.25',
                      '--difficulty_report'], workdir)
  assert proc.returncode == 0, proc.stderr[-3000:]
  last = json.loads((workdir / 'metrics.jsonl').read_text().splitlines()[-1])
  for key in ('error', 'token_error', 'depth', 'ponder', 'loss'):
    assert np.isfinite(last[key]), key
  # Every real token takes step 0; the steps after it hold at most half
  # of an example's tokens each, and floor(c_r n) rounds down.
  assert 1.0 <= last['depth'] <= 2.25 and last['ponder'] == last['depth']
  results = json.loads((workdir / 'results.json').read_text())
  assert results['model']['capacity'] == [1.0, 0.5, 0.5, 0.25]
  with open(workdir / 'difficulty.csv', newline='') as f:
    rows = list(csv.DictReader(f))
  assert rows[0]['depth_1'] and not rows[0]['depth_2']   # per position


def test_per_token_pondernet_trains_with_the_kl_to_a_geometric_prior(
    tmp_path):
  workdir = tmp_path / 'run'
  proc = _run(TINY + ['--halting=per_token_pondernet', '--beta=0.5',
                      '--lambda_p=0.3', '--difficulty_report'], workdir)
  assert proc.returncode == 0, proc.stderr[-3000:]
  last = json.loads((workdir / 'metrics.jsonl').read_text().splitlines()[-1])
  for key in ('error', 'token_error', 'depth', 'ponder', 'loss'):
    assert np.isfinite(last[key]), key
  # N per position, and the expected steps sum_n n p_n <= N.
  assert 1.0 - 1e-6 <= last['ponder'] <= last['depth'] + 1e-6 <= 4.0 + 1e-6
  results = json.loads((workdir / 'results.json').read_text())
  assert results['model']['beta'] == 0.5
  assert results['model']['lambda_p'] == 0.3
  with open(workdir / 'difficulty.csv', newline='') as f:
    rows = list(csv.DictReader(f))
  assert rows[0]['depth_1'] and not rows[0]['depth_2']   # per position


@pytest.mark.parametrize('flag,needle', [
    ('--halting=deep', 'halting'),
    ('--heads=3', 'multiple of --heads'),
    ('--tau=-1', '--tau must be'),
    ('--lambda_p=1', '--lambda_p must be'),
    ('--capacity=0.5', '--capacity is read by --halting=route only'),
    ('--capacity=1,x', '--capacity must be comma-separated fractions'),
])
def test_bad_flags_are_one_line(flag, needle, tmp_path):
  proc = _run(TINY + [flag], tmp_path / 'w')
  assert proc.returncode == 2, proc.stderr[-3000:]
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and needle in lines[0], lines
  assert not (tmp_path / 'w' / 'checkpoints').exists()
