"""Several processes on one machine: jax.distributed over localhost (gloo).

The settings and the handles are tested in this process; the tests marked
``slow`` start experiment binaries as separate processes, the way a user
would (the same command with --coordinator_address, --num_processes and
--process_id), in a shared temporary workdir.
"""

import json
from multiprocessing import connection
import pathlib
import signal
import socket
import subprocess
import time

import _binaries
import numpy as np
import pytest

from vcrnn_jax.training import distributed

PARITY = ['--bits=8', '--hidden_size=8', '--batch_size=16', '--max_steps=5',
          '--eval_batch_size=32', '--learning_rate=0.01']
# Metrics that measure time, not maths.
CLOCKS = ('time', 'steps_per_sec')


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


class Run:
  """One process of a binary, its output in files (a pipe could fill up)."""

  def __init__(self, module, args, tmp_path, name):
    self.out = tmp_path / f'{name}.out'
    self.err = tmp_path / f'{name}.err'
    with open(self.out, 'w') as out, open(self.err, 'w') as err:
      self.proc = _binaries.start(
          module, args, env={'VCRNN_JAX_DATA': str(tmp_path / 'cache')},
          stdout=out, stderr=err)
    self.ended = None

  def poll(self):
    if self.ended is None and self.proc.poll() is not None:
      self.ended = time.monotonic()
    return self.proc.returncode if self.ended is not None else None

  def wait(self, timeout=240):
    try:
      self.proc.wait(timeout)
    except subprocess.TimeoutExpired:
      self.proc.kill()
      self.proc.wait()
      raise AssertionError(f'{self.out.stem} still running after {timeout} '
                           f's:\n{self.stderr[-2000:]}') from None
    self.poll()
    return self.proc.returncode

  @property
  def stdout(self):
    return self.out.read_text()

  @property
  def stderr(self):
    return self.err.read_text()

  def last_line(self):
    lines = [l for l in self.stderr.replace('\r', '\n').splitlines()
             if l.strip()]
    return lines[-1] if lines else ''


def _start(module, args, tmp_path, name, processes=2, per_process=None):
  """The same command on ``processes`` processes; returns their Runs."""
  port = _free_port()
  return [Run(module, [*args, f'--coordinator_address=127.0.0.1:{port}',
                       f'--num_processes={processes}', f'--process_id={i}',
                       *((per_process or {}).get(i, []))],
              tmp_path, f'{name}.{i}') for i in range(processes)]


def _all_ok(runs, timeout=240):
  for run in runs:
    assert run.wait(timeout) == 0, run.stderr[-3000:]


def _metrics(workdir):
  return [json.loads(l) for l in
          (pathlib.Path(workdir) / 'metrics.jsonl').read_text().splitlines()]


def _assert_same_metrics(got, want):
  assert [l['step'] for l in got] == [l['step'] for l in want]
  for g, w in zip(got, want):
    assert set(g) == set(w)
    for key in w:
      if key not in CLOCKS:
        # Two devices sum the batch in another order than one: float noise.
        np.testing.assert_allclose(g[key], w[key], rtol=1e-4, atol=1e-6,
                                   err_msg=f'step {w["step"]} {key}')


def _checkpoints(workdir):
  path = pathlib.Path(workdir) / 'checkpoints'
  return [int(p.name) for p in path.glob('*') if p.name.isdigit()]


# ----------------------------------------------------------------------------
# Settings, in this process.


@pytest.mark.parametrize('kwargs,needle', [
    (dict(coordinator_address='127.0.0.1:1234', num_processes=2,
          process_id=2), '--process_id must be in 0..1'),
    (dict(coordinator_address='127.0.0.1:1234', num_processes=2),
     'together'),
    (dict(coordinator_address='localhost', num_processes=2, process_id=0),
     'HOST:PORT'),
    (dict(coordinator_address='127.0.0.1:70000', num_processes=2,
          process_id=0), 'HOST:PORT'),
    (dict(auto=True, process_id=0), '--distributed lets JAX detect'),
])
def test_bad_settings_are_refused_before_connecting(kwargs, needle):
  with pytest.raises(ValueError, match=needle):
    distributed.initialize(**kwargs)


def test_one_process_agrees_with_itself():
  processes = distributed.initialize()
  assert processes is distributed.LOCAL
  assert processes.is_chief() and not processes.is_multiprocess()
  assert processes.agree('anything', 'x') == ['x']
  with pytest.raises(ValueError, match='no'):
    processes.check_everywhere('a check', lambda: (_ for _ in ()).throw(
        ValueError('no')))
  processes.abort_peers('nothing to tell')   # no peers: returns
  processes.finish()
  assert processes.peer_failure(RuntimeError('Gloo failed')) is None
  assert not processes.exiting()
  # The one-process handle is shared by every caller, so it holds nothing.
  with pytest.raises(AttributeError):
    processes.shared = set()


class _Store:
  """The coordination service's key-value store, in memory."""

  def __init__(self):
    self.values = {}
    self.writes = 0

  def key_value_set(self, key, value, allow_overwrite=False):
    assert allow_overwrite or key not in self.values
    self.values[key] = value
    self.writes += 1

  def key_value_dir_get(self, prefix):
    return [(k, v) for k, v in self.values.items() if k.startswith(prefix)]


def test_two_handles_share_no_state(tmp_path):
  # Two runs of one process each, on stores of their own (no watchdog
  # started): what one proved about a folder says nothing to the other.
  stores = [_Store(), _Store()]
  first, second = [distributed._MultiProcess(distributed._Run(
      store, 0, 1, 'in memory', '')) for store in stores]
  first.check_shared_folder(tmp_path)
  asked = stores[0].writes
  assert asked > 0 and stores[1].writes == 0
  first.check_shared_folder(tmp_path)            # Known shared: no new check.
  assert stores[0].writes == asked
  second.check_shared_folder(tmp_path)           # Its own check, from scratch.
  assert stores[1].writes == asked
  assert not list(tmp_path.glob('.shared-check-*'))
  # Each handle numbers its own agreements.
  assert first.agree('a', '1') == ['1'] and second.agree('a', '2') == ['2']
  assert first.is_chief() and first.is_multiprocess()


def test_the_store_of_process_0_serves_its_peers():
  # Process 0's store and two peers' connections to it, on localhost.
  store = distributed._Store()
  peers = [distributed._StoreClient(('127.0.0.1', store.port), store.authkey)
           for _ in range(2)]
  peers[0].key_value_set('vcrnn_jax/beat/1', '0')
  store.key_value_set('vcrnn_jax/beat/0', '3', allow_overwrite=True)
  peers[1].key_value_set('vcrnn_jax/abort/2', 'gone')
  peers[0].key_value_set('vcrnn_jax/beat/1', '1', allow_overwrite=True)
  assert sorted(peers[1].key_value_dir_get('vcrnn_jax/beat/')) == [
      ('vcrnn_jax/beat/0', '3'), ('vcrnn_jax/beat/1', '1')]
  assert store.key_value_dir_get('vcrnn_jax/abort/') == [
      ('vcrnn_jax/abort/2', 'gone')]
  # A handle over the store agrees as over JAX's (one process of one).
  run = distributed._MultiProcess(distributed._Run(store, 0, 1, 'here', ''))
  assert run.agree('a', 'x') == ['x']
  # Only a process holding the key is served.
  with pytest.raises(connection.AuthenticationError):
    distributed._StoreClient(('127.0.0.1', store.port), b'not the key')


def test_the_timeouts_this_jax_takes():
  kwargs = distributed._initialize_kwargs(5)
  assert kwargs.get('initialization_timeout', 65) > 5


# ----------------------------------------------------------------------------
# Two processes.


@pytest.mark.slow
def test_two_processes_train_as_one_survive_a_kill_and_resume(tmp_path):
  # act_parity in one shared workdir, on its way to a step it never reaches:
  # process 1 is killed (SIGKILL) after the evaluation and checkpoint at step
  # 100 (the train_* metrics average the steps since the last evaluation this
  # process ran: resuming at an evaluation keeps them comparable). Then the
  # same command, with --steps=200 (a resumable flag), finishes the run, with
  # the metrics of one process (run here meanwhile).
  args = PARITY + ['--eval_every=100']
  shared = tmp_path / 'shared'
  two = _start('act_parity', args + ['--steps=100000', f'--workdir={shared}'],
               tmp_path, 'two')
  one = _binaries.run('act_parity', args + [
      '--steps=200', f'--workdir={tmp_path / "one"}'])
  assert one.returncode == 0, one.stderr[-3000:]
  deadline = time.monotonic() + 240
  while time.monotonic() < deadline and two[1].poll() is None:
    if _checkpoints(shared):
      break
    time.sleep(0.01)
  assert two[1].poll() is None, two[1].stderr[-2000:]
  assert max(_checkpoints(shared)) < 200
  two[1].proc.send_signal(signal.SIGKILL)
  killed = time.monotonic()
  # Process 0 does not wait for its peer: it ends, non-zero, in bounded time.
  assert two[0].wait() != 0
  assert two[0].ended - killed < distributed.STALE_S + 10
  line = two[0].last_line()
  assert line.startswith('act_parity: error: ') and 'process 1' in line, \
      two[0].stderr[-2000:]
  assert 'Traceback' not in two[0].stderr
  # The same command again resumes from the last checkpoint: nothing lost.
  again = _start('act_parity', args + ['--steps=200', f'--workdir={shared}'],
                 tmp_path, 'again')
  _all_ok(again)
  assert 'Resumed from step' in again[0].stdout + again[0].stderr
  assert '2 x cpu' in again[0].stdout and '1 x cpu' in one.stdout
  # Process 0 alone reports.
  assert 'sequence_error' in again[0].stdout
  assert 'sequence_error' not in again[1].stdout + again[1].stderr
  _assert_same_metrics(_metrics(shared), _metrics(tmp_path / 'one'))
  assert json.loads((shared / 'flags.json').read_text())['bits'] == 8


@pytest.mark.slow
def test_bad_runs_of_two_processes_end_in_one_line_each(tmp_path):
  # All at once: each pair fails before training.
  args = PARITY + ['--steps=20', '--eval_every=10']
  other_flags = _start('act_parity', args + [f'--workdir={tmp_path / "a"}'],
                       tmp_path, 'flags', per_process={1: ['--tau=0.02']})
  not_shared = _start('act_parity', args, tmp_path, 'shared', per_process={
      0: [f'--workdir={tmp_path / "b0"}'], 1: [f'--workdir={tmp_path / "b1"}']})
  odd_batch = _start('act_parity', args + ['--batch_size=15',
                                           f'--workdir={tmp_path / "d"}'],
                     tmp_path, 'odd')
  (tmp_path / 'c' / 'metrics.jsonl').mkdir(parents=True)   # unwritable
  one_fails = _start('act_parity', args + [f'--workdir={tmp_path / "c"}'],
                     tmp_path, 'fails')
  alone = Run('act_parity', args + [
      f'--coordinator_address=127.0.0.1:{_free_port()}', '--num_processes=2',
      '--process_id=1', '--connect_timeout=3'], tmp_path, 'alone')
  started = time.monotonic()

  # Processes started with other flags: the same line on both.
  for run in other_flags:
    assert run.wait() == 2, run.stderr[-2000:]
  lines = {run.last_line() for run in other_flags}
  assert lines == {'act_parity: error: process 1 was started with '
                   '--tau=0.02, process 0 with --tau=0.01: start every '
                   'process with the same command (only --process_id '
                   'differs).'}
  # Workdirs that are not one shared folder: the same line on both.
  for run in not_shared:
    assert run.wait() == 2, run.stderr[-2000:]
  lines = {run.last_line() for run in not_shared}
  assert len(lines) == 1 and 'cannot see the file process 0 wrote' in \
      lines.pop()
  # A batch the two devices cannot share: the same line on both.
  for run in odd_batch:
    assert run.wait() == 2, run.stderr[-2000:]
  assert {run.last_line() for run in odd_batch} == {
      'act_parity: error: batch_size=15 must be divisible by the number of '
      'devices (2).'}
  # An error in process 0 alone ends process 1 too, naming it.
  assert one_fails[0].wait() == 2
  assert one_fails[0].last_line() == (
      f'act_parity: error: Is a directory: {tmp_path / "c" / "metrics.jsonl"}')
  assert one_fails[1].wait() == 1
  assert one_fails[1].last_line() == (
      'act_parity: error: process 0 failed: Is a directory: '
      f'{tmp_path / "c" / "metrics.jsonl"}')
  # A coordinator nobody started: one line once --connect_timeout is over.
  assert alone.wait() == 2
  assert 'nothing answers at 127.0.0.1:' in alone.last_line()
  assert alone.ended - started < 60
  for run in other_flags + not_shared + odd_batch + one_fails + [alone]:
    assert 'Traceback' not in run.stderr, run.stderr[-2000:]
