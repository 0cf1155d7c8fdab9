"""The results pages' plans: parsing, status against records, training."""

import os
import pathlib
import socket
import subprocess
import threading
import time

import pytest

from experiments.reports import plan, records, results
from tests import _binaries

PLANS = pathlib.Path(__file__).resolve().parents[1] / 'docs/results/plans'

def _run_args(tmp_path, text):
  """One plan ``text`` with no records; the flags of ``plan --run`` on it and
  the runs root."""
  plans = tmp_path / 'plans'
  plans.mkdir()
  _write(plans, text, 'x.toml')
  (tmp_path / 'records').mkdir()
  runs = tmp_path / 'runs'
  return [f'--plan_dir={plans}', f'--records={tmp_path / "records"}',
          '--run', f'--runs={runs}'], runs


_PARITY = ('python -m experiments.act_parity --tau=0.01 --seed={seed} '
           '--workdir={workdir}')


def _write(tmp_path, text, name='p.toml'):
  path = tmp_path / name
  path.write_text(text)
  return path


def _record(seed, command, commit='a' * 40):
  return {'seed': seed, 'command': command, 'commit': commit}


@pytest.mark.parametrize('text, message', [
    ('[[run]]\nfolder = "a/b"\nseeds = "0"\ncommand = "x {seed} {workdir}"'
     '\nsteps = 3\n', "unknown key 'steps'"),
    ('[[run]]\nfolder = "a/b"\nseeds = "0"\ncommand = ["x", 3]\n',
     "'command' must be a string or a list of strings"),
    ('[[run]]\nfolder = "a/b"\nseeds = "0"\ncommand = "x {workdir}"\n',
     'no {seed}'),
    ('[[run]]\nfolder = "a/b"\nseeds = "0"\ntogether = true\n'
     'command = "x {seed} {workdir}"\n', 'no {seeds}'),
    ('[[run]]\nfolder = "a/b"\nseeds = "2-1"\ncommand = "x {seed} '
     '{workdir}"\n', 'seeds'),
    ('[[run]]\nfolder = "a/b"\ncommand = "x {seed} {workdir}"\n',
     "'seeds' must be a string"),
    ('[[run]\n', 'not TOML'),
    ('[[run]]\nfolder = "a/b"\nseeds = "0"\ncommand = "x {seed} {workdir}"'
     '\n[[run]]\nfolder = "a/b"\nseeds = "1"\ncommand = "y {seed} '
     '{workdir}"\n', 'a/b is planned twice'),
])
def test_bad_plans_say_what_is_wrong(tmp_path, text, message):
  with pytest.raises(ValueError, match=message.replace('{', r'\{')
                     .replace('}', r'\}')):
    plan.read_plan(_write(tmp_path, text))


def test_a_seed_counts_only_when_recorded_with_the_planned_command():
  entry = plan.Entry('act/parity', (0, 1, 2), _PARITY)
  group = [
      # Seed, workdir and flag order differ from the plan: still the plan's.
      _record(0, 'python -m experiments.act_parity --seed=0 '
              '--workdir=/w/0 --tau=0.01'),
      # Another setting: it does not count, and seed 1 is trained again.
      _record(1, 'python -m experiments.act_parity --tau=0.03 --seed=1 '
              '--workdir=/w/1'),
  ]
  [row] = plan.status([entry], {'act/parity': group})
  assert row['recorded'] == [0] and row['missing'] == [1, 2]
  assert row['other'] == 1 and row['commit'] == 'a' * 40
  jobs = plan.jobs([row])
  assert [j.workdir for j in jobs] == ['act/parity/seed=1',
                                       'act/parity/seed=2']
  assert jobs[0].commands('/r/x', '/d') == [
      'python -m experiments.act_parity --tau=0.01 --seed=1 '
      '--workdir=/r/x']


def test_commit_is_pinned_only_when_the_records_share_one():
  entry = plan.Entry('act/parity', (0, 1), _PARITY)
  group = [_record(0, _PARITY.format(seed=0, workdir='w'), 'a' * 40)]
  assert plan.status([entry], {'act/parity': group})[0]['commit'] == 'a' * 40
  group.append(_record(1, _PARITY.format(seed=1, workdir='w'), 'b' * 40))
  [row] = plan.status([entry], {'act/parity': group})
  assert row['commit'] is None and row['missing'] == []


def test_path_flags_and_then_and_together():
  entry = plan.Entry(
      'rehn/synthetic_rnn30', (0, 1, 2),
      'python -m experiments.rehn_synthetic --cell=rnn --seeds={seeds} '
      '--workdir={workdir} --table_csv={workdir}/../t.csv '
      '--data_dir={data_dir}', then='--report', together=True)
  recorded = [_record(s, 'python -m experiments.rehn_synthetic --cell=rnn '
                      '--seeds=0-1 --workdir=/old --table_csv=/old/t.csv '
                      '--data_dir=/somewhere') for s in (0, 1)]
  [row] = plan.status([entry], {entry.folder: recorded})
  assert row['missing'] == [2]
  [job] = plan.jobs([row])
  # The binary trains every seed of the entry in one process.
  assert job.seeds == (0, 1, 2) and job.workdir == 'rehn/synthetic_rnn30'
  first, again = job.commands('/r', '/d')
  assert '--seeds=0,1,2' in first and '--data_dir=/d' in first
  assert again == f'{first} --report'
  assert '| rehn/synthetic_rnn30 | 0,1,2 | 0,1 | 2 |' in plan.status_table(
      [row])


def test_the_repository_plans_parse_and_name_real_binaries():
  folders = []
  for path in sorted(PLANS.glob('*.toml')):
    for entry in plan.read_plan(path):
      folders.append(entry.folder)
      module = entry.command.split()[2]
      assert (PLANS.parents[2] / (module.replace('.', '/') + '.py')
              ).is_file(), entry.command
  assert {f.split('/')[0] for f in folders} == {'act', 'vc', 'rehn', 'family',
                                                 'depth'}
  assert len(folders) == len(set(folders))
  # Every folder that has records and is planned matches its records.
  groups = records.read_records(PLANS.parent / 'records')
  for row in plan.status([e for p in sorted(PLANS.glob('*.toml'))
                          for e in plan.read_plan(p)], groups):
    if row['entry'].folder in ('act/parity_noact', 'rehn/har_ei_rehn48',
                               'rehn/har_lstm32'):
      continue  # recorded at fewer steps or epochs than planned
    assert row['other'] == 0, row['entry'].folder


_TOUCH = '''[[run]]
folder = "x/touch"
seeds = "0-1"
command = [\'\'\'python -c "import pathlib, sys;\'\'\',
           \'\'\'pathlib.Path(sys.argv[1], 'o').write_text(sys.argv[2])"\'\'\',
           "{workdir} {seed}"]
then = "again"
'''


def test_run_trains_each_missing_seed_once_on_a_clean_clone(tmp_path):
  args, runs = _run_args(tmp_path, _TOUCH)
  # Seed 1 is being trained by a live process: it is left alone.
  (runs / 'x/touch/seed=1').mkdir(parents=True)
  (runs / 'x/touch/seed=1/.claim').write_text(
      f'{socket.gethostname()} {os.getpid()}')
  result = _binaries.run('plan', args)
  assert result.returncode == 0, result.stderr
  assert '| x/touch | 0,1 | - | 0,1 | today\'s code | - |' in result.stdout
  assert 'done x/touch/seed=0' in result.stdout
  assert (runs / 'x/touch/seed=0/o').read_text() == '0'
  assert (runs / 'x/touch/seed=0/.done').exists()
  assert not (runs / 'x/touch/seed=0/.claim').exists()
  assert not (runs / 'x/touch/seed=1/o').exists()
  # The second command ('again' added) ran too and is in the run's log.
  assert 'again' in (runs / 'x/touch/seed=0/run.log').read_text()
  [tree] = (runs / 'trees').iterdir()
  assert (tree / 'experiments/record.py').is_file()
  # Once its claim is stale, seed 1 is trained, and seed 0 not again.
  (runs / 'x/touch/seed=1/.claim').write_text('elsewhere 1')
  (runs / 'x/touch/seed=0/o').unlink()
  result = _binaries.run('plan', args)
  assert result.returncode == 0, result.stderr
  assert (runs / 'x/touch/seed=1/o').read_text() == '1'
  assert not (runs / 'x/touch/seed=0/o').exists()


@pytest.mark.parametrize('args, message', [
    (['--run'], '--run needs --runs'),
    (['--record'], '--record needs --machine'),
    (['--plans=nope'], 'no plan named nope'),
    (['--only=zz/*'], '--only matches no planned folder'),
])
def test_bad_flags_get_one_line(args, message):
  result = _binaries.run('plan', args)
  assert result.returncode != 0
  assert message in result.stderr and len(
      result.stderr.strip().splitlines()) == 1


def test_the_workdir_flag_is_added_where_the_command_has_none(tmp_path):
  [entry] = plan.read_plan(_write(
      tmp_path, '[[run]]\nfolder = "a/b"\nseeds = "0"\ncommand = '
      '["python -m experiments.act_parity", "--seed={seed}"]\n'))
  assert entry.command == ('python -m experiments.act_parity --seed={seed} '
                           '--workdir={workdir}')


_SLEEP = '''[[run]]
folder = "x/sleep"
seeds = "0"
command = \'\'\'python -c "import time; time.sleep(300)" {workdir} {seed}\'\'\'
'''


def test_kill_stops_the_run_and_frees_its_claim(tmp_path):
  args, runs = _run_args(tmp_path, _SLEEP)
  proc = _binaries.start('plan', args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
  claim = runs / 'x/sleep/seed=0/.claim'
  deadline = time.monotonic() + 60
  while not (runs / 'x/sleep/seed=0/run.log').exists() or not list(
      _children(proc.pid)):
    assert time.monotonic() < deadline and proc.poll() is None
    time.sleep(0.1)
  assert claim.exists()
  [child] = _children(proc.pid)
  proc.terminate()
  assert proc.wait(timeout=30) != 0
  assert not claim.exists()
  assert not (runs / 'x/sleep/seed=0/.done').exists()
  with pytest.raises(ProcessLookupError):
    for _ in range(100):  # the child is reaped by the binary before it ends
      os.kill(child, 0)
      time.sleep(0.05)


def _children(pid):
  tasks = pathlib.Path(f'/proc/{pid}/task')
  for task in tasks.iterdir():
    text = (task / 'children').read_text().split()
    yield from map(int, text)


def test_the_pages_show_each_plan_against_the_records(tmp_path):
  _write(tmp_path, f'[[run]]\nfolder = "act/parity"\nseeds = "0-1"\n'
         f'command = "{_PARITY}"\n', 'act.toml')
  groups = {'act/parity': [_record(0, _PARITY.format(seed=0, workdir='w'))]}
  [out] = results.plan_outputs(groups, tmp_path)
  assert out.path == 'plans/act.md'
  assert '| act/parity | 0,1 | 0 | 1 | aaaaaaa | - |' in out.text
  assert '1 of 2 planned seeds recorded' in out.text


_WAIT = '''[[run]]
folder = "x/wait"
seeds = "0-1"
command = [\'\'\'python -c "import pathlib, sys, time; time.sleep(3);\'\'\',
           \'\'\'pathlib.Path(sys.argv[1], 'o').write_text(sys.argv[2])"\'\'\',
           "{workdir} {seed}"]
'''


def test_a_run_whose_claimer_ends_is_taken_in_the_same_invocation(
    tmp_path):
  args, runs = _run_args(tmp_path, _WAIT)
  # Seed 1 is claimed by a process that ends while seed 0 trains.
  claimer = subprocess.Popen(['sleep', '1'])
  # Reaped as soon as it ends: a zombie's pid still answers kill -0.
  threading.Thread(target=claimer.wait, daemon=True).start()
  (runs / 'x/wait/seed=1').mkdir(parents=True)
  (runs / 'x/wait/seed=1/.claim').write_text(
      f'{socket.gethostname()} {claimer.pid}')
  result = _binaries.run('plan', args)
  assert result.returncode == 0, result.stderr
  assert (runs / 'x/wait/seed=0/o').read_text() == '0'
  assert (runs / 'x/wait/seed=1/o').read_text() == '1'


_ONE = '''[[run]]
folder = "x/one"
seeds = "0"
command = \'\'\'python -c "import sys" {workdir} {seed}\'\'\'
'''
_TOGETHER = '''[[run]]
folder = "x/one"
seeds = "0"
together = true
command = \'\'\'python -c "import sys" {workdir} {seeds}\'\'\'
'''


@pytest.mark.parametrize('text, manifest', [
    (_ONE, 'x/one/seed=0/manifest.jsonl'),
    (_TOGETHER, 'x/one/seed=0/manifest.jsonl'),
])
def test_a_started_run_of_a_new_folder_resumes_on_its_first_commit(
    tmp_path, text, manifest):
  args, runs = _run_args(tmp_path, text)
  repo = pathlib.Path(__file__).resolve().parents[1]
  older, newer = subprocess.run(
      ['git', 'rev-parse', 'HEAD~2', 'HEAD~1'], cwd=repo, check=True,
      text=True, capture_output=True).stdout.split()
  (runs / manifest).parent.mkdir(parents=True)
  # Started on `older`, resumed on `newer`: the first start decides.
  (runs / manifest).write_text(
      f'{{"commit": "{newer}", "started": 2.0}}\n'
      f'{{"commit": "{older}", "started": 1.0}}\n')
  result = _binaries.run('plan', args)
  assert result.returncode == 0, result.stderr
  assert f' on {older[:7]}' in result.stdout
  assert [t.name for t in (runs / 'trees').iterdir()] == [older[:12]]
