"""Run manifests (experiments.reports.manifest): written by every binary when
it starts, read by the recorder instead of its own environment."""

import json

import pytest

from experiments.reports import manifest, records
from tests import _binaries


def test_capture_reads_the_run_not_the_recorder(tmp_path):
  data = tmp_path / 'corpus'
  data.mkdir()
  (data / 'b.txt').write_text('bb')
  (data / 'a.txt').write_text('a')
  line = manifest.capture(['--tau=0.01', '--seed=3'],
                          module='experiments.act_parity', tree=tmp_path,
                          data_paths=[data, tmp_path / 'missing'],
                          versions={'python': '3.11'})
  assert line['command'] == ('python -m experiments.act_parity --tau=0.01 '
                             '--seed=3')
  # Outside git: no commit, said so.
  assert line['commit'] is None and line['dirty'] is None
  assert [d['path'].rsplit('/', 1)[1] for d in line['data']] == ['a.txt',
                                                                  'b.txt']
  assert line['data'][0]['sha256'] == (
      'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb')
  assert line['device']['platform'] == 'cpu'
  assert set(line['cpu']['isa']) <= set(manifest.ISA_FLAGS)
  # The load averages as the run starts (Linux reports them).
  assert len(line['load']) == 3 and all(x >= 0 for x in line['load'])
  json.dumps(line, allow_nan=False)
  assert manifest.problems([line]) == [
      'start 1 of 1 ran outside a git tree (no commit)']


def test_command_line_quotes_as_a_shell_reads_it():
  assert manifest.command_line('experiments.x', ['--note=a b']) == (
      "python -m experiments.x '--note=a b'")


def test_problems_of_resumed_and_dirty_runs():
  clean = {'commit': 'a' * 40, 'dirty': False, 'versions': {'jax': '1'},
           'cpu': {'isa': ['avx2']}, 'device': {}, 'env': {}}
  assert manifest.problems([clean, dict(clean)]) == []
  assert 'no manifest.jsonl' in manifest.problems([])[0]
  moved = dict(clean, commit='b' * 40)
  assert manifest.problems([clean, moved]) == [
      'start 2 of 2 differs from the first in its commit']
  other_cpu = dict(clean, cpu={'isa': ['avx2', 'avx512f']})
  assert manifest.problems([clean, other_cpu]) == [
      'start 2 of 2 differs from the first in its cpu']
  assert manifest.problems([dict(clean, dirty=True)]) == [
      'start 1 of 1 ran from a tree with uncommitted changes (commit '
      'aaaaaaa)']


def test_a_binary_writes_its_manifest_at_start_and_the_record_uses_it(
    tmp_path):
  wd = tmp_path / 'run'
  args = ['--bits=4', '--steps=20', '--eval_every=10', '--batch_size=8',
          '--eval_batch_size=16', '--max_steps=4', f'--workdir={wd}']
  proc = _binaries.run('act_parity', args)
  assert proc.returncode == 0, proc.stderr
  # Resumed with more steps: a second start.
  proc = _binaries.run('act_parity', [*args[:1], '--steps=30', *args[2:]])
  assert proc.returncode == 0, proc.stderr
  starts = manifest.read(wd)
  assert len(starts) == 2
  assert starts[0]['command'] == ('python -m experiments.act_parity '
                                  + ' '.join(args))
  assert starts[0]['commit'] and len(starts[0]['commit']) == 40
  record = records.make_record(wd, machine_info={'name': 'M'})
  assert record['command'] == starts[0]['command']
  assert record['commit'] == starts[0]['commit']
  assert record['versions'] == starts[0]['versions']
  assert record['machine']['isa'] == starts[0]['cpu']['isa']
  assert record['fingerprint']['step'] == 10
  assert set(record['fingerprint']['metrics']) == {'sequence_error', 'loss',
                                                   'ponder'}
  assert record['starts'] == starts


def test_a_run_without_manifest_needs_its_command(tmp_path):
  (tmp_path / 'metrics.jsonl').write_text('{"step": 1, "loss": 1.0}\n')
  with pytest.raises(ValueError, match='no manifest.jsonl'):
    records.make_record(tmp_path, machine_info={})


def _record(**kw):
  base = {'path': 'act/parity/seed=3.json', 'seed': 3, 'commit': 'c' * 40,
          'command': 'python -m experiments.act_parity --tau=0.01 --seed=3 '
                     '--workdir=/x --difficulty_report',
          'fingerprint': {'step': 100, 'metrics': {'loss': 0.5,
                                                   'sequence_error': 0.25}}}
  return {**base, **kw}


def test_prefix_command_stops_at_the_first_evaluation():
  from experiments.reports import verify
  assert verify.prefix_command(_record(), '/w') == [
      'python', '-m', 'experiments.act_parity', '--tau=0.01', '--seed=3',
      '--steps=100', '--workdir=/w']
  multi = _record(command='python -m experiments.rehn_har --data_dir=DIR '
                  '--seeds=0-2 --epochs=2', fingerprint=None,
                  curve=[{'step': 37, 'accuracy': 0.5}])
  assert verify.prefix_command(multi, '/w', data_dir='/d')[3:] == [
      '--data_dir=/d', '--epochs=2', '--seeds=3', '--steps=37',
      '--workdir=/w']
  with pytest.raises(ValueError, match='not a binary'):
    verify.prefix_command(_record(command='python train.py'), '/w')


def test_status_current_stale_unverifiable():
  from experiments.reports import verify
  rec = _record()
  same = [{'step': 100, 'loss': 0.5 * (1 + 5e-5), 'sequence_error': 0.25}]
  got = verify.status(rec, same)
  assert got['status'] == 'current' and not got['exact']
  exact = verify.status(rec, [{'step': 100, 'loss': 0.5,
                               'sequence_error': 0.25}])
  assert exact['exact']
  # An older record keeps 6 digits: equal to those is exact.
  old = _record(fingerprint=None, curve=[{'step': 100, 'loss': 0.693281}])
  assert verify.status(old, [{'step': 100, 'loss': 0.6932806396}])['exact']
  moved = [{'step': 100, 'loss': 0.5, 'sequence_error': 0.251}]
  got = verify.status(rec, moved)
  assert got['status'] == 'stale' and got['differ'] == ['sequence_error']
  assert verify.status(rec, None)['status'] == 'unverifiable'
  assert verify.status(rec, [{'step': 50, 'loss': 0.5}])['status'] == (
      'unverifiable')
  statuses = {'act/parity': {**got, 'record_commit': 'ccccccc',
                             'verified_at': 'd' * 40, 'seed': 3}}
  line = verify.status_line('act/parity', [rec], statuses)
  assert line.startswith('**Stale**') and '0.25 recorded, 0.251 now' in line
  assert verify.status_line('act/parity', [_record(commit='e' * 40)],
                            statuses).startswith('Not verified')



def test_a_verification_of_replaced_records_marks_nothing():
  from experiments.reports import verdicts, verify
  stale = {'status': 'stale', 'record_commit': 'ccccccc'}
  statuses = {'act/parity': stale, 'act/gone': stale}
  old = {'act/parity': [_record()]}
  assert verify.applicable(old, statuses) == {'act/parity': stale}
  assert verdicts.mark_text(verify.states(
      ['act/parity'], verify.applicable(old, statuses))) == (
          ' *stale records*')
  # Re-recorded at another commit: the stale verdict was of the old records.
  new = {'act/parity': [_record(commit='e' * 40)]}
  assert verify.applicable(new, statuses) == {}
  assert verdicts.mark_text(verify.states(
      ['act/parity'], verify.applicable(new, statuses))) == ''

def test_source_tree_sees_a_change_anywhere_in_the_tree(tmp_path):
  import subprocess

  def git(*args):
    subprocess.run(['git', '-C', str(tmp_path), *args], check=True,
                   capture_output=True)
  git('init', '-q')
  (tmp_path / 'experiments').mkdir()
  (tmp_path / 'experiments' / 'x.py').write_text('1\n')
  (tmp_path / 'README.md').write_text('a\n')
  git('add', '.')
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'c')
  commit, dirty = manifest.source_tree(tmp_path)
  assert len(commit) == 40 and dirty is False
  (tmp_path / 'README.md').write_text('b\n')    # outside experiments/
  assert manifest.source_tree(tmp_path) == (commit, True)


def test_a_run_trained_on_another_device_kind_is_unverifiable_here():
  from experiments.reports import verify
  gpu = {'device': {'platform': 'gpu', 'kind': 'NVIDIA H200', 'count': 1}}
  assert verify.other_device({'starts': [gpu]}, 'gpu') is None
  assert verify.other_device({'starts': [gpu]}, 'cpu') == (
      'recorded on NVIDIA H200 (gpu); this machine runs cpu')
  assert verify.other_device({'starts': [{'device': None}]}, 'cpu') is None
  assert verify.other_device({}, 'cpu') is None
