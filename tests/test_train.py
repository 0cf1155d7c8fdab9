"""The training stack: determinism, resume, data parallelism, NaN guard, CLI.

The binary runs in this process (tests/_binaries.py); the two tests marked
``slow`` start it as a process: killed by SIGKILL, and on eight devices.
"""

import json
import os
import pathlib
import signal
import subprocess
import time

import _binaries
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import tasks
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.training.checkpoint import Checkpointer
from vcrnn_jax.training.train import (
  Experiment,
  TrainConfig,
  TrainingDiverged,
  TrainState,
  make_optimizer,
  train_and_evaluate,
)

TINY = ['--bits=8', '--hidden_size=8', '--batch_size=16', '--max_steps=5']


def _experiment(act=True, batch_size=16):
  task = tasks.get('parity', bits=8)
  model = act_tasks.ModelConfig(cell='elman', hidden_size=8, act=act,
                                tau=0.01, max_steps=5)
  return act_tasks.task_experiment(task, model, batch_size=batch_size,
                                   eval_batch_size=64)


def _config(**kw):
  base = dict(steps=6, batch_size=16, learning_rate=1e-2, eval_every=3,
              log_every=2, quiet=True)
  base.update(kw)
  return TrainConfig(**base)


def _final_params(workdir, act=True, seed=0):
  """Params of the latest checkpoint in ``workdir`` (as the binary wrote it)."""
  exp = _experiment(act)
  config = _config(seed=seed)
  params = exp.init(jax.random.PRNGKey(0))
  tx = make_optimizer(config)
  target = TrainState(params, tx.init(params), jnp.zeros((), jnp.int32),
                      jax.random.PRNGKey(0))
  ckpt = Checkpointer(pathlib.Path(workdir) / 'checkpoints')
  step, state = ckpt.restore_latest(target)
  ckpt.close()
  return step, state.params


def _run_binary(args):
  return _binaries.run('act_parity', args)


def test_one_step_changes_every_parameter(tmp_path):
  exp = _experiment()
  result = train_and_evaluate(exp, _config(steps=1, eval_every=1), tmp_path)
  init = exp.init(jax.random.split(jax.random.PRNGKey(0))[0])
  changed = jax.tree_util.tree_map(
      lambda a, b: bool(np.any(np.asarray(a) != np.asarray(b))),
      init, result.params)
  assert all(jax.tree_util.tree_leaves(changed)), changed
  assert result.step == 1


def test_same_seed_same_numbers_and_outputs(tmp_path):
  r1 = train_and_evaluate(_experiment(), _config(), tmp_path / 'a')
  r2 = train_and_evaluate(_experiment(), _config(), tmp_path / 'b')
  r3 = train_and_evaluate(_experiment(), _config(seed=1), tmp_path / 'c')
  jax.tree_util.tree_map(np.testing.assert_array_equal, r1.params, r2.params)
  assert r1.history == [dict(h, steps_per_sec=g['steps_per_sec'])
                        for h, g in zip(r2.history, r1.history)]
  assert not np.array_equal(r1.params['cell']['output']['bias'],
                            r3.params['cell']['output']['bias'])
  lines = [json.loads(l) for l in
           (tmp_path / 'a' / 'metrics.jsonl').read_text().splitlines()]
  assert [l['step'] for l in lines] == [3, 6]
  assert {'sequence_error', 'ponder', 'loss', 'train_loss'} <= set(lines[-1])
  events = list(
      (tmp_path / 'a' / 'tensorboard').glob('**/events.out.tfevents*'))
  assert events and events[0].stat().st_size > 0
  assert (tmp_path / 'a' / 'checkpoints').is_dir()


def test_resume_continues_from_latest_checkpoint(tmp_path):
  full = train_and_evaluate(_experiment(), _config(), tmp_path / 'full')
  train_and_evaluate(_experiment(), _config(steps=3), tmp_path / 'split')
  resumed = train_and_evaluate(_experiment(), _config(), tmp_path / 'split')
  jax.tree_util.tree_map(np.testing.assert_array_equal, full.params,
                         resumed.params)
  assert [h['step'] for h in resumed.history] == [6]
  again = train_and_evaluate(_experiment(), _config(), tmp_path / 'split')
  assert again.step == 6 and again.history == []
  # The same metrics as the run that trained, train_* and rate included.
  assert again.metrics == resumed.metrics


def test_nan_loss_stops_and_keeps_last_good_checkpoint(tmp_path):
  exp = _experiment()
  # The batch of 0-based step 4 (the 5th update) is marked; the loss is NaN
  # on it.
  def sample(key, step):
    batch = exp.sample(key, step)
    return batch._replace(difficulty=jnp.where(step == 4, -1, batch.difficulty))

  def loss(params, batch, info):
    value, metrics = exp.loss(params, batch, info)
    return jnp.where(jnp.any(batch.difficulty < 0), jnp.nan, value), metrics

  bad = Experiment(exp.init, loss, sample, exp.evaluate)
  config = _config(steps=8, eval_every=2, checkpoint_every=2, log_every=1)
  with pytest.raises(TrainingDiverged) as info:
    train_and_evaluate(bad, config, tmp_path)
  message = str(info.value)
  assert '\n' not in message
  assert 'at step 5' in message and 'step 4' in message, message
  ckpt = Checkpointer(tmp_path / 'checkpoints')
  assert ckpt.latest_step() == 4
  ckpt.close()


def test_a_gradient_whose_sum_of_squares_overflows_is_clipped_and_counted(
    tmp_path):
  exp = _experiment()

  def loss(params, batch, info):
    value, metrics = exp.loss(params, batch, info)
    # Entries of 1e20 on the update of step 2: finite, squares overflow.
    leaf = jax.tree_util.tree_leaves(params)[0]
    big = 1e20 * jnp.sum(leaf) * (info.step == 2).astype(leaf.dtype)
    return value + big - jax.lax.stop_gradient(big), metrics

  bad = Experiment(exp.init, loss, exp.sample, exp.evaluate)
  config = _config(steps=6, eval_every=3, log_every=1, grad_clip_norm=1.0)
  train_and_evaluate(bad, config, tmp_path)
  rows = [json.loads(line) for line in
          (tmp_path / 'metrics.jsonl').read_text().splitlines()]
  assert [r.get('train_rescaled_grad_norm_steps') for r in rows] == [1.0,
                                                                     None]
  assert all('train_nonfinite_grad_steps' not in r for r in rows)
  assert all(np.isfinite(r['train_grad_norm']) for r in rows)


def test_an_overflowing_gradient_with_a_finite_loss_is_counted_and_said(
    tmp_path, capsys):
  exp = _experiment()

  def loss(params, batch, info):
    value, metrics = exp.loss(params, batch, info)
    # Zero in value, but a gradient whose squared norm overflows float32 on
    # the updates of steps 2 and 3 (0-based).
    leaf = jax.tree_util.tree_leaves(params)[0]
    marked = ((info.step == 2) | (info.step == 3)).astype(leaf.dtype)
    big = 3e38 * jnp.sum(leaf) * marked
    return value + big - jax.lax.stop_gradient(big), metrics

  bad = Experiment(exp.init, loss, exp.sample, exp.evaluate)
  config = _config(steps=6, eval_every=3, log_every=1, quiet=False,
                   grad_clip_norm=1.0)
  result = train_and_evaluate(bad, config, tmp_path)
  rows = [json.loads(line) for line in
          (tmp_path / 'metrics.jsonl').read_text().splitlines()]
  assert [r.get('train_nonfinite_grad_steps') for r in rows] == [1.0, 1.0]
  out = capsys.readouterr().out
  assert out.count('warning: 1 of the 3 updates before step') == 2, out
  assert all(np.isfinite(x).all()
             for x in jax.tree_util.tree_leaves(result.params))


def test_workdir_that_is_a_file_is_rejected(tmp_path):
  path = tmp_path / 'file'
  path.write_text('x')
  with pytest.raises(ValueError, match='not a directory'):
    train_and_evaluate(_experiment(), _config(), path)


@pytest.mark.parametrize('flag,needle', [
    ('--batch_size=0', 'batch_size'),
    ('--bits=0', 'bits'),
    ('--tau=-1', 'tau'),
    ('--learning_rate=nan', 'learning_rate'),
    ('--no_such_flag=1', 'no_such_flag'),
])
def test_binary_bad_flags_one_line_error(flag, needle):
  proc = _run_binary([flag, '--steps=1'])
  assert proc.returncode != 0
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1, proc.stderr
  assert needle in lines[0] and 'Traceback' not in proc.stderr


def test_binary_workdir_file_one_line_error(tmp_path):
  path = tmp_path / 'afile'
  path.write_text('x')
  proc = _run_binary([f'--workdir={path}', '--steps=1'])
  assert proc.returncode != 0
  assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
  assert 'workdir' in proc.stderr


@pytest.mark.slow
def test_binary_sigkill_then_resume_is_bit_equal(tmp_path):
  # A process killed outright (no handler runs) after its checkpoint at step
  # 200 or later; the same command resumes it (here in this process) to the
  # params of a run never interrupted.
  args = TINY + ['--steps=1500', '--eval_every=500', '--checkpoint_every=100',
                 '--learning_rate=0.01']
  killed = tmp_path / 'killed'
  proc = _binaries.start('act_parity', args + [f'--workdir={killed}'],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  deadline = time.time() + 240
  ckpt_dir = killed / 'checkpoints'
  while time.time() < deadline and proc.poll() is None:
    steps = [int(p.name) for p in ckpt_dir.glob('*') if p.name.isdigit()]
    if steps and max(steps) >= 200:
      break
    time.sleep(0.05)
  assert proc.poll() is None, 'the run finished before it could be killed'
  proc.send_signal(signal.SIGKILL)
  proc.wait()
  resumed = _run_binary(args + [f'--workdir={killed}'])
  assert resumed.returncode == 0, resumed.stderr[-2000:]
  assert 'Resumed from step' in resumed.stderr + resumed.stdout
  straight = _run_binary(args + [f'--workdir={tmp_path / "straight"}'])
  assert straight.returncode == 0, straight.stderr[-2000:]
  s1, p1 = _final_params(killed)
  s2, p2 = _final_params(tmp_path / 'straight')
  assert s1 == s2 == 1500
  jax.tree_util.tree_map(np.testing.assert_array_equal, p1, p2)


@pytest.mark.slow
def test_binary_eight_devices_equal_one_device(tmp_path):
  args = TINY + ['--steps=20', '--eval_every=10', '--learning_rate=0.01']
  one = _run_binary(args + [f'--workdir={tmp_path / "one"}'])
  assert one.returncode == 0, one.stderr[-2000:]
  eight = _binaries.run(
      'act_parity', args + [f'--workdir={tmp_path / "eight"}'], process=True,
      env={'XLA_FLAGS': os.environ['XLA_FLAGS']
           + ' --xla_force_host_platform_device_count=8'})
  assert eight.returncode == 0, eight.stderr[-2000:]
  assert '8 x cpu' in eight.stdout and '1 x cpu' in one.stdout
  _, p1 = _final_params(tmp_path / 'one')
  _, p8 = _final_params(tmp_path / 'eight')
  jax.tree_util.tree_map(
      lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
      p1, p8)


def test_a_finished_run_rerun_reports_the_same_metrics(tmp_path):
  # A run killed after its final checkpoint and rerun (or a finished one
  # rerun) evaluates the checkpoint: its metrics keep the train_* fields.
  first = train_and_evaluate(_experiment(), _config(), tmp_path)
  again = train_and_evaluate(_experiment(), _config(), tmp_path)
  assert again.step == first.step == 6
  assert sorted(again.metrics) == sorted(first.metrics)
  assert {'train_loss', 'steps_per_sec'} <= set(again.metrics)
  for k, v in first.metrics.items():
    assert again.metrics[k] == pytest.approx(v, nan_ok=True), k


def test_fewer_steps_than_the_checkpoint_is_one_clear_error(tmp_path):
  train_and_evaluate(_experiment(), _config(steps=4, eval_every=2), tmp_path)
  with pytest.raises(ValueError) as e:
    train_and_evaluate(_experiment(), _config(steps=2, eval_every=2),
                       tmp_path)
  assert str(e.value) == (
      f'{tmp_path} is already at step 4, beyond --steps=2: rerun with '
      '--steps=4 to evaluate that checkpoint only (more to train on), or '
      'pass another --workdir.')
