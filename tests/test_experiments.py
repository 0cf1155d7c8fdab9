"""Every experiment binary end to end at tiny sizes, run in this process.

``tests/_binaries.run`` parses a binary's flags and runs its ``main`` as the
command line does (tests/test_smoke.py starts each one as a process once).
"""

import csv
import json
import pathlib
import re
import shutil

import _binaries
import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]

COMMON = ['--steps=4', '--eval_every=2', '--eval_batch_size=32',
          '--hidden_size=8', '--batch_size=4']
# The ACT binaries' metrics at every evaluation of a short run, recorded with
# the code before the shared training stack (commit 0dee84e): every later
# change must reproduce them (same flags, same numbers).
GOLDEN = json.loads((REPO / 'tests' / 'data' /
                     'act_golden_metrics.json').read_text())
GOLDEN_ARGS = ['--steps=20', '--eval_every=10', '--learning_rate=0.01',
               '--eval_batch_size=32', '--hidden_size=8', '--batch_size=4']
RUNS = {
    'act_logic': GOLDEN_ARGS + ['--max_len=3', '--num_gates=3'],
    'act_addition': GOLDEN_ARGS + ['--max_len=2', '--max_digits=2'],
    'act_sort': GOLDEN_ARGS + ['--max_len=4'],
    'act_parity': GOLDEN_ARGS + ['--bits=8', '--act=false'],
    'act_parity_act': GOLDEN_ARGS + ['--bits=8'],
}
GOLDEN_CORPUS = b'the quick brown fox jumps over the lazy dog. ' * 200


def _run(module, args, tmp_path, cwd=None):
  return _binaries.run(module, args, cwd=cwd,
                       env={'VCRNN_JAX_DATA': str(tmp_path / 'cache')})


def _metrics(workdir):
  return [json.loads(l) for l in
          (workdir / 'metrics.jsonl').read_text().splitlines()]


def _assert_golden(name, lines):
  want = GOLDEN[name]
  assert [l['step'] for l in lines] == [w['step'] for w in want]
  for got, ref in zip(lines, want):
    for key, value in ref.items():
      np.testing.assert_allclose(got[key], value, rtol=2e-5, atol=1e-7,
                                 err_msg=f'{name} step {ref["step"]} {key}')


@pytest.mark.parametrize('name', sorted(RUNS))
def test_act_binary_reproduces_the_recorded_metrics(name, tmp_path):
  module = 'act_parity' if name.startswith('act_parity') else name
  workdir = tmp_path / 'run'
  proc = _run(module, RUNS[name] + [f'--workdir={workdir}'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  _assert_golden(name, _metrics(workdir))
  assert 'sequence_error' in proc.stdout   # the summary table


def test_a_checkpoint_from_before_the_training_stack_restores(tmp_path):
  # tests/data/act_parity_workdir_v1 is the act_parity_act golden run's
  # workdir (step 20) as the code of commit 0dee84e wrote it.
  workdir = tmp_path / 'run'
  shutil.copytree(REPO / 'tests' / 'data' / 'act_parity_workdir_v1', workdir)
  args = [a for a in RUNS['act_parity_act'] if not a.startswith('--steps')]
  proc = _run('act_parity', args + ['--steps=20', f'--workdir={workdir}'],
              tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert 'evaluating the checkpoint only' in proc.stdout + proc.stderr
  # Its evaluation equals the one the old code logged at step 20 (restored
  # params do not depend on the initialisation the golden runs start from).
  final = [l for l in proc.stdout.splitlines()
           if l.startswith('held-out sequence_error')]
  logged = _metrics(REPO / 'tests' / 'data' / 'act_parity_workdir_v1')[-1]
  assert final and float(final[0].split()[2]) == pytest.approx(
      logged['sequence_error'], rel=1e-3)  # 4 digits
  # And training resumes from it.
  proc = _run('act_parity', args + ['--steps=22', f'--workdir={workdir}'],
              tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert 'Resumed from step 20' in proc.stdout + proc.stderr
  assert _metrics(workdir)[-1]['step'] == 22


def test_a_workdir_resumes_only_under_the_flags_that_made_it(tmp_path):
  # The default workdir names the non-default flags (relative to the cwd).
  args = COMMON + ['--bits=4', '--layout=random']
  proc = _run('act_parity', args, tmp_path, cwd=tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  workdir = (tmp_path / 'runs' / 'act_parity' / 'act=true_tau=0.01_seed=0_'
             'batch_size=4_bits=4_hidden_size=8_layout=random')
  assert [l['step'] for l in _metrics(workdir)] == [2, 4]
  assert json.loads((workdir / 'flags.json').read_text())['layout'] == 'random'
  # Another task in the same folder is refused in one line.
  proc = _run('act_parity', args[:-1] + ['--bits=5', f'--workdir={workdir}'],
              tmp_path)
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines() == [
      f'act_parity: error: {workdir} holds a run with --bits=4, --layout='
      'random, not --bits=5, --layout=prefix: rerun with those flags to '
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
  assert [int(r['difficulty']) for r in rows] == list(range(1, 5))
  assert all(0 <= float(r['sequence_error']) <= 1 and float(r['ponder']) >= 1
             for r in rows)
  assert 'difficulty.csv' in proc.stdout.splitlines()[-1]
  # Fewer steps than the checkpoint holds: one line saying what to do.
  proc = _run('act_parity', args + ['--steps=4', f'--workdir={workdir}'],
              tmp_path)
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines() == [
      f'act_parity: error: {workdir} is already at step 6, beyond '
      '--steps=4: rerun with --steps=6 to evaluate that checkpoint only '
      '(more to train on), or pass another --workdir.']
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


def test_wikipedia_binary_reproduces_the_recorded_metrics(tmp_path):
  corpus = tmp_path / 'corpus.txt'
  corpus.write_bytes(GOLDEN_CORPUS)
  workdir = tmp_path / 'run'
  args = ['--steps=20', '--eval_every=10', '--learning_rate=0.01',
          '--hidden_size=8', '--batch_size=4', '--seq_len=20',
          '--eval_windows=8', f'--data_path={corpus}', f'--workdir={workdir}']
  proc = _run('act_wikipedia', args, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  _assert_golden('act_wikipedia', _metrics(workdir))


def test_wikipedia_binary_missing_data_is_one_line_error(tmp_path):
  proc = _run('act_wikipedia', ['--steps=1', f'--data_dir={tmp_path}'],
              tmp_path)
  assert proc.returncode != 0
  lines = [l for l in proc.stderr.strip().splitlines() if 'error' in l]
  assert len(lines) == 1 and 'enwik8' in lines[0], proc.stderr
  assert 'Traceback' not in proc.stderr


def test_a_run_that_failed_before_its_first_checkpoint_does_not_lock_it(
    tmp_path):
  corpus = tmp_path / 'corpus.txt'
  corpus.write_bytes(GOLDEN_CORPUS)
  workdir = tmp_path / 'run'
  args = ['--steps=2', '--eval_every=2', '--hidden_size=4', '--batch_size=2',
          '--seq_len=8', '--eval_windows=2', '--max_steps=3',
          f'--workdir={workdir}']
  proc = _run('act_wikipedia', args + [f'--data_path={tmp_path}/missing'],
              tmp_path)
  assert proc.returncode == 2 and 'missing' in proc.stderr
  assert not (workdir / 'flags.json').exists()
  proc = _run('act_wikipedia', args + [f'--data_path={corpus}'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert json.loads((workdir / 'flags.json').read_text())['tau'] == 0.01
  # A flags.json without a checkpoint (an older version wrote it first, or
  # a run interrupted before its first save) holds no run either.
  other = tmp_path / 'other'
  other.mkdir()
  (other / 'flags.json').write_text('{"tau": 0.5}\n')
  proc = _run('act_wikipedia', args[:-1] + [f'--data_path={corpus}',
                                            f'--workdir={other}'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert json.loads((other / 'flags.json').read_text())['tau'] == 0.01


@pytest.mark.parametrize('where,needle', [
    ('afile/sub', 'Not a directory'),
    ('afile/sub/deeper', 'Not a directory'),
])
def test_filesystem_errors_are_one_line_naming_the_path(where, needle,
                                                         tmp_path):
  (tmp_path / 'afile').write_text('x')
  path = tmp_path / where
  proc = _run('act_parity', ['--steps=2', '--eval_every=2', '--bits=4',
                             '--hidden_size=4', '--batch_size=4',
                             '--eval_batch_size=8', f'--workdir={path}'],
              tmp_path)
  assert proc.returncode == 2
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and needle in lines[0] and str(path) in lines[0], \
      proc.stderr
  assert 'Traceback' not in proc.stderr


def test_wikipedia_help_lists_only_the_flags_it_uses(tmp_path):
  proc = _run('act_wikipedia', ['--help'], tmp_path)
  text = proc.stdout + proc.stderr
  for used in ('--data', '--seq_len', '--eval_windows', '--tau',
               '--optimizer', '--coordinator_address'):
    assert used in text
  for unused in ('--difficulty_report', '--eval_batch_size',
                 '--eval_batches'):
    assert unused not in text


@pytest.mark.parametrize('ponder', [1, 2, 3, 12, 60])
def test_act_loop_benchmark_makes_every_row_ponder_exactly_n(ponder):
  from benchmarks import act_loop
  h = act_loop.halting_value(ponder)
  sums = np.cumsum(np.full(ponder + 1, h))
  assert int(np.argmax(sums >= 1 - 0.01)) + 1 == ponder    # ACT Eq. 7
  if ponder in (1, 3):   # and the loop agrees (--ponder=1 used to crash)
    import jax
    params, loss = act_loop.act_step(ponder + 2, 'while', ponder)
    x = np.zeros((act_loop.BATCH, act_loop.BITS), np.float32)
    y = np.zeros((act_loop.BATCH,), np.float32)
    _, metrics = jax.jit(loss)(params, (x, y))
    assert int(metrics['ponder_min']) == int(metrics['ponder_max']) == ponder


def test_act_loop_tail_case_ponders_the_planned_n_on_every_row():
  import jax

  from benchmarks import act_loop
  steps = act_loop.tail_steps()
  assert (round(float(steps.mean()), 2), int(steps.max())) == (3.55, 26)
  cell = act_loop.act.adaptive(act_loop.cells.elman(act_loop.HIDDEN), 1,
                               max_steps=100)
  params, _ = act_loop.act_tail_step(100, 'scan')
  x = np.random.default_rng(0).integers(
      0, 2, (act_loop.BATCH, act_loop.BITS)).astype(np.float32)
  x = act_loop.tail_inputs(jax.numpy.asarray(x), steps)
  _, out = jax.jit(cell.apply)(params, cell.initial_state(act_loop.BATCH), x)
  np.testing.assert_array_equal(out.steps, steps)


# ----------------------------------------------------------------------------
# EI-REHN binaries.


def test_rehn_synthetic_trains_seeds_and_reports_the_table(tmp_path):
  table = tmp_path / 'table1.csv'
  common = ['--hidden_size=4', '--epochs=1', '--num_sequences=100',
            '--batch_size=10', f'--table_csv={table}']
  proc = _run('rehn_synthetic', common + [
      '--cell=ei_rehn', '--seeds=0,1', '--max_depth=3',
      f'--workdir={tmp_path / "ei"}'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert 'over 2 seeds' in proc.stdout
  lines = _metrics(tmp_path / 'ei' / 'seed=1')
  assert lines[-1]['step'] == 8 and 'valid_mse' in lines[-1]
  assert 1 <= lines[-1]['test_depth'] <= 3
  proc = _run('rehn_synthetic', common + [
      '--cell=rhn', '--depth=2', '--seeds=0', f'--workdir={tmp_path / "r"}'],
      tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  proc = _run('rehn_synthetic', [f'--table_csv={table}', '--report'],
              tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  rows = [l for l in proc.stdout.splitlines() if l.startswith('| ei_rehn4')
          or l.startswith('| rhn4')]
  assert len(rows) == 2 and '| 2 |' in rows[1] and '| 1 |' in rows[0]
  assert 'median [min, max]' in proc.stdout and 'at best valid' in proc.stdout
  # One seed: its median, min and max are its own value.
  one = rows[0].split('|')[4].strip()
  assert one.startswith(rows[0].split('|')[3].split('±')[0].strip())
  assert table.with_suffix('.md').exists()


def test_rehn_table_rows_of_other_settings_never_replace_each_other(
    tmp_path):
  table = tmp_path / 'table1.csv'
  common = ['--cell=rnn', '--hidden_size=4', '--num_sequences=100',
            '--batch_size=10', '--seeds=0', f'--table_csv={table}']
  proc = _run('rehn_synthetic', common + [
      '--epochs=2', f'--workdir={tmp_path / "long"}'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert 'mean_depth' not in proc.stdout        # an Elman network has none
  long = json.loads((tmp_path / 'long' / 'results.json').read_text())
  assert long['seeds'][0]['step'] == 16 and 'mean_depth' not in (
      long['seeds'][0]['test'])
  # A 1-step run of the same model and seed in another workdir: its own row.
  proc = _run('rehn_synthetic', common + [
      '--epochs=2', '--steps=1', f'--workdir={tmp_path / "short"}'],
      tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  with open(table) as f:
    rows = list(csv.DictReader(f))
  assert sorted(r['settings'] for r in rows) == [
      'batch_size=10 epochs=2 num_sequences=100',
      'batch_size=10 epochs=2 num_sequences=100 steps=1']
  kept = next(r for r in rows if 'steps' not in r['settings'])
  assert float(kept['test_mse_e3']) == pytest.approx(
      long['seeds'][0]['test']['test_mse_e3'])
  # The report shows them apart, never as one model's seeds.
  proc = _run('rehn_synthetic', [f'--table_csv={table}', '--report'],
              tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  lines = [l for l in proc.stdout.splitlines() if l.startswith('| rnn4')]
  assert len(lines) == 2 and all('| 1 |' in l for l in lines), lines
  assert any('steps=1]' in l for l in lines)


def test_rehn_table_csv_that_is_a_folder_is_refused_before_training(
    tmp_path):
  for module in ('rehn_synthetic', 'rehn_har'):
    proc = _run(module, ['--cell=rnn', '--hidden_size=4', '--steps=1',
                         f'--table_csv={tmp_path}',
                         f'--workdir={tmp_path / "w"}'], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f'{module}: error: --table_csv={tmp_path} is a directory; give a '
        'file path.']
    assert not (tmp_path / 'w').exists()


def test_rehn_har_trains_two_elastic_layers_and_plots(tmp_path,
                                                      shared_data_dir):
  workdir = tmp_path / 'har'
  proc = _run('rehn_har', [f'--data_dir={shared_data_dir}', '--cell=srehn',
                           '--hidden_size=4', '--max_depth=2', '--seeds=0',
                           '--steps=2', '--eval_every=2',
                           '--eval_batch_size=1000',
                           f'--table_csv={tmp_path / "t.csv"}',
                           f'--workdir={workdir}'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  line = _metrics(workdir / 'seed=0')[-1]
  assert 0 <= line['test_accuracy'] <= 1
  assert {'test_depth_0', 'test_depth_1'} <= set(line)
  confusion = np.loadtxt(workdir / 'confusion.csv', delimiter=',',
                         skiprows=1, usecols=range(1, 7))
  assert confusion.sum() == 2996                   # every test window once
  assert (workdir / 'depth_by_class.png').stat().st_size > 0
  assert (workdir / 'depth_along_sequence.png').stat().st_size > 0
  out = json.loads((workdir / 'results.json').read_text())
  assert out['model'] == 'srehn4_rmax2' and len(out['seeds']) == 1
  seed = out['seeds'][0]
  assert 0 <= seed['test']['test_accuracy'] <= 1
  assert 1 <= seed['test']['mean_depth'] <= 2
  assert not any(k.startswith('train_') for k in seed['valid'])
  assert isinstance(seed['steps_per_sec'], (float, type(None)))


def test_rehn_ptb_trains_a_tied_language_model(tmp_path, shared_data_dir):
  # --plot_words=0 (its help: "no plots") is accepted and draws nothing.
  workdir = tmp_path / 'ptb'
  args = [f'--data_dir={shared_data_dir}', '--hidden_size=8', '--max_depth=2',
          '--steps=2', '--eval_every=2', f'--workdir={workdir}']
  proc = _run('rehn_ptb', args + ['--plot_words=0'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert not list(workdir.glob('*.png'))
  line = _metrics(workdir)[-1]
  assert 1000 < line['perplexity'] < 20000 and 0 <= line['depth'] <= 2
  assert 'test perplexity' in proc.stdout
  flags = json.loads((workdir / 'flags.json').read_text())
  assert flags['optimizer'] == 'sgd' and flags['lr_decay'] == 1 / 1.02
  out = json.loads((workdir / 'results.json').read_text())
  assert out['test']['perplexity'] > 1 and out['valid']['perplexity'] > 1
  assert out['step'] == 2 and 'loss_total' in out['train']
  # The finished run again with plots: evaluated, not trained, and drawn.
  proc = _run('rehn_ptb', args + ['--plot_words=10'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert (workdir / 'depth_by_word.png').stat().st_size > 0
  assert json.loads((workdir / 'results.json').read_text())['step'] == 2


@pytest.mark.parametrize('module,args,flag', [
    ('rehn_synthetic', ['--cell=rnn', '--hyper_size=5'], '--hyper_size'),
    ('rehn_synthetic', ['--cell=lstm', '--max_depth=3'], '--max_depth'),
    ('rehn_synthetic', ['--cell=ei_rehn', '--depth=3'], '--depth'),
    ('rehn_har', ['--cell=rhn', '--max_depth=3'], '--max_depth'),
    ('rehn_ptb', ['--cell=rhn', '--hyper_size=5'], '--hyper_size'),
])
def test_rehn_binaries_refuse_model_flags_their_cell_ignores(module, args,
                                                             flag, tmp_path):
  proc = _run(module, args + ['--steps=1', f'--workdir={tmp_path / "w"}'],
              tmp_path)
  assert proc.returncode == 2, proc.stderr[-3000:]
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and f'{flag} is for --cell=' in lines[0], lines
  assert not (tmp_path / 'w').exists()


# ----------------------------------------------------------------------------
# --help.

BINARIES = sorted(p.stem for p in (REPO / 'experiments').glob('[a-z]*.py'))


@pytest.mark.parametrize('module', BINARIES)
def test_help_is_plain_text(module, tmp_path):
  # The docstrings are Sphinx (the documentation site); --help is for a
  # terminal: no roles, no double backquotes, no literal-block markers.
  proc = _run(module, ['--help'], tmp_path)
  text = proc.stdout
  assert f'python -m experiments.{module}' in text, text[:500]
  assert '``' not in text and not re.search(r':\w+:`', text), text
  assert not re.search(r'::$', text, re.M), text
  # Every binary lists its own flags (the training binaries' --steps; the
  # record-keeping ones their --workdir or --records).
  assert re.search(r'--(steps|runs|workdir|records)\b', text), text
