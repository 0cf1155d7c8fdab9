"""The tau sweep (grid, CSVs, resume), its binary, and the paper's plots."""

import csv
import fractions
import json
import math
import pathlib
import sys

import _binaries
import numpy as np
import pytest

from experiments.reports import plots
from experiments.reports.act import plots as act_plots
from experiments.reports.rehn import plots as rehn_plots
from vcrnn_jax import act as act_lib
from vcrnn_jax.papers.act import sweep as act_sweep
from vcrnn_jax.training import sweep
from vcrnn_jax.training.train import TrainingDiverged

PNG_MAGIC = b'\x89PNG\r\n\x1a\n'
# A tiny parity sweep: 2 taus x 2 seeds + a baseline per seed = 6 runs. Two
# evaluations per run, so that a run can resume from its mid checkpoint.
TINY = ['--task=parity', '--bits=8', '--hidden_size=8', '--batch_size=16',
        '--max_steps=5', '--taus=1e-3,1e-2', '--seeds=0,1', '--steps=4',
        '--eval_every=2', '--eval_batch_size=32', '--difficulties=1,8',
        '--quiet']


def _run(args):
  # In this process, whose own compilation cache serves (the smoke run in
  # tests/test_smoke.py keeps the sweep's default, <workdir>/jax_cache).
  proc = _binaries.run('act_sweep', [*args, '--compilation_cache='])
  return proc.returncode, proc.stdout, proc.stderr


def _csv(path):
  with open(path, newline='') as f:
    return list(csv.DictReader(f))


# ----------------------------------------------------------------------------
# Grid and parsing.


def test_paper_taus_are_the_37_distinct_values_of_i_times_ten_to_minus_j():
  taus = act_sweep.paper_taus()
  # i x 10^-j, i=1..10, j=1..4 is 40 products, but 10 x 10^-j = 1 x 10^-(j-1)
  # for j=2..4, so 37 distinct values.
  expected = []
  for exponent in (4, 3, 2, 1):
    expected += [float(f'{i}e-{exponent}') for i in range(1, 10)]
  expected.append(1.0)
  assert taus == tuple(expected)
  assert len(taus) == 37 and taus[0] == 1e-4 and taus[-1] == 1.0
  assert taus[:3] == (0.0001, 0.0002, 0.0003)
  assert 0.03 in taus and 0.003 in taus and 0.9 in taus
  products = {fractions.Fraction(i, 10 ** j) for i in range(1, 11)
              for j in range(1, 5)}
  assert len(products) == 37
  assert act_sweep.parse_taus('paper') == taus
  assert act_sweep.parse_taus(' Paper ') == taus
  wiki = act_sweep.paper_taus(max_exponent=3)
  assert len(wiki) == 28 and wiki[0] == 1e-3 and wiki[-1] == 1.0


def test_parse_taus_and_ints():
  assert act_sweep.parse_taus('3e-2, 1e-2,0.01') == (0.01, 0.03)
  assert act_sweep.parse_taus('0') == (0.0,)
  assert sweep.parse_ints('seeds', '0-2,5, 1') == (0, 1, 2, 5)
  for bad, needle in [('abc', "'abc' is not a number"), ('', 'not a number'),
                      ('1e-3,-1', '>= 0'), ('nan', '>= 0'), ('inf', '>= 0')]:
    with pytest.raises(ValueError, match=needle):
      act_sweep.parse_taus(bad)
  for bad, needle in [('x', "'x' is not an integer"), ('3-1', 'empty'),
                      ('-1', 'not an integer'), ('0,,1', "'' is not")]:
    with pytest.raises(ValueError, match=needle):
      sweep.parse_ints('seeds', bad)
  with pytest.raises(ValueError, match='>= 1'):
    sweep.parse_ints('difficulties', '0-3', low=1)


def test_make_grid_names_and_order():
  runs = act_sweep.make_grid([1e-2, 1e-3, 0.01], [1, 0])
  assert [r.name for r in runs] == [
      'noact_seed=0', 'tau=0.001_seed=0', 'tau=0.01_seed=0',
      'noact_seed=1', 'tau=0.001_seed=1', 'tau=0.01_seed=1']
  runs = act_sweep.make_grid([3e-4], [0], baseline=False)
  assert [r.name for r in runs] == ['tau=0.0003_seed=0']


def test_default_config_per_task_matches_the_paper():
  expected = {'parity': ('elman', 128, 128, 100),
              'logic': ('lstm', 128, 16, 100),
              'addition': ('lstm', 512, 32, 20), 'sort': ('lstm', 512, 16, 100)}
  for task, (cell, hidden, batch, m) in expected.items():
    c = act_sweep.default_config(task)
    assert (c.model.cell, c.model.hidden_size, c.train.batch_size,
            c.model.max_steps) == (cell, hidden, batch, m), task
  parity = act_sweep.default_config('parity').task
  assert parity.difficulties == tuple(range(1, 65))
  assert parity.kwargs['layout'] == 'prefix'
  assert act_sweep.default_config(
      'parity', task_kwargs={'layout': 'random'}).task.kwargs == {
          'bits': 64, 'layout': 'random'}
  assert act_sweep.default_config(
      'parity', task_kwargs={'bits': 8}).task.difficulties == tuple(
          range(1, 9))
  logic = act_sweep.default_config('logic').task
  assert logic.difficulties == tuple(range(1, 11))
  assert logic.difficulty_seq_len == 5                  # Fig. 10
  assert act_sweep.default_config(
      'addition').task.difficulty_seq_len == 3          # Fig. 14
  assert act_sweep.default_config('sort').task.difficulties == tuple(
      range(2, 16))
  c = act_sweep.default_config('parity', hidden_size=None, steps=7)
  assert c.model.hidden_size == 128 and c.train.steps == 7  # None: default
  # Every task trains with ACT's default loop (cost, not maths).
  assert c.model.loop == act_lib.DEFAULT_LOOP
  with pytest.raises(ValueError, match='no argument'):
    act_sweep.default_config('logic', task_kwargs={'bits': 8})
  with pytest.raises(ValueError, match='task must be one of'):
    act_sweep.default_config('nope')
  with pytest.raises(ValueError, match='unknown SweepConfig field'):
    act_sweep.default_config('parity', ponder_slots=3)


def test_a_sweep_json_of_the_flat_layout_still_matches(tmp_path):
  # sweep.json keeps one flat layout, so a workdir made before the settings
  # were grouped (task, model, train) resumes; as written then by
  # act_sweep --task=parity --bits=8 --steps=4 (other flags at defaults).
  (tmp_path / 'sweep.json').write_text(json.dumps({
      'batch_size': 128, 'cell': 'elman', 'checkpoint_every': None,
      'compact_rows': 0, 'difficulties': list(range(1, 9)),
      'difficulty_seq_len': None, 'epsilon': 0.01, 'eval_batch_size': 1000,
      'eval_every': 10000, 'grad_clip_norm': None, 'halting_bias': 1.0,
      'hidden_size': 128, 'keep_checkpoints': 3, 'learning_rate': 0.001,
      'loop': 'while', 'max_steps': 100, 'ponder_slots': 4, 'quiet': False,
      'save_residuals': True, 'steps': 4, 'task': 'parity',
      'task_kwargs': {'bits': 8, 'layout': 'prefix'}}))
  config = act_sweep.default_config('parity', task_kwargs={'bits': 8},
                                    steps=4, keep_checkpoints=3)
  act_sweep.check_manifest(tmp_path, config)
  written = json.loads((tmp_path / 'sweep.json').read_text())
  # Loop settings change the cost, not the numbers: today's are written.
  assert written['cell'] == 'elman'
  assert written['ponder_slots'] == act_lib.DEFAULT_LOOP.checkpoints


def test_manifest_rejects_other_settings(tmp_path):
  config = act_sweep.default_config('parity', task_kwargs={'bits': 8})
  act_sweep.check_manifest(tmp_path, config)
  act_sweep.check_manifest(tmp_path, config)   # Same settings: fine.
  longer = act_sweep.default_config('parity', task_kwargs={'bits': 8}, steps=99)
  act_sweep.check_manifest(tmp_path, longer)   # More steps continue the runs.
  other = act_sweep.default_config('parity', task_kwargs={'bits': 8},
                               hidden_size=16)
  with pytest.raises(ValueError, match='hidden_size=128'):
    act_sweep.check_manifest(tmp_path, other)


def test_upsert_rows_replaces_a_run_rows_and_round_trips(tmp_path):
  path = tmp_path / 'difficulty.csv'
  def rows(tau, seed, error):
    return [dict(task='parity', act=tau is not None, tau=tau, seed=seed,
                 difficulty=d, sequence_error=error, ponder=1.5)
            for d in (1, 2)]
  sweep.upsert_rows(path, act_sweep.DIFFICULTY_FIELDS, rows(0.01, 0, 0.5),
                    key=act_sweep.RUN_KEY)
  sweep.upsert_rows(path, act_sweep.DIFFICULTY_FIELDS, rows(None, 0, 0.4),
                    key=act_sweep.RUN_KEY)
  sweep.upsert_rows(path, act_sweep.DIFFICULTY_FIELDS, rows(0.01, 0, 0.1 + 0.2),
                    key=act_sweep.RUN_KEY)
  got = sweep.read_rows(path)
  assert len(got) == 4
  assert [(r['act'], r['tau'], r['difficulty']) for r in got] == [
      (False, None, 1), (False, None, 2), (True, 0.01, 1), (True, 0.01, 2)]
  assert got[2]['sequence_error'] == 0.1 + 0.2       # Exact float round trip.
  assert path.read_text().splitlines()[1] == 'parity,false,,0,1,0.4,1.5'


def test_upsert_rows_extends_a_file_with_appended_columns(tmp_path):
  path = tmp_path / 'table.csv'
  sweep.upsert_rows(path, ('model', 'seed', 'a'),
                    [dict(model='m', seed=0, a=1.0)], key=('model', 'seed'))
  sweep.upsert_rows(path, ('model', 'seed', 'a', 'b'),
                    [dict(model='m', seed=1, a=2.0, b=3.0)],
                    key=('model', 'seed'))
  got = sweep.read_rows(path)
  assert [r['seed'] for r in got] == [0, 1] and got[1]['b'] == 3.0
  assert math.isnan(got[0]['b'])
  with pytest.raises(ValueError, match='move it away'):
    sweep.upsert_rows(path, ('model', 'seed', 'b'),
                      [dict(model='m', seed=2, b=1.0)], key=('model', 'seed'))


def test_default_config_rejects_impossible_difficulties():
  with pytest.raises(ValueError, match=r'difficulties must be in 1\.\.8'):
    act_sweep.default_config('parity', task_kwargs={'bits': 8},
                         difficulties=(1, 9))


def test_run_sweep_marks_a_diverged_run_and_skips_it_later(tmp_path,
                                                           monkeypatch):
  config = act_sweep.default_config('parity', task_kwargs={'bits': 8}, steps=3,
                                difficulties=(1, 2))
  runs = act_sweep.make_grid([0.5], [0])
  calls = []

  def fake_run_one(config, run, run_dir, processes):
    del config
    assert not processes.is_multiprocess()
    calls.append(run.name)
    if run.act:
      raise TrainingDiverged('loss is nan at step 2; training stopped.')
    key = dict(task='parity', act=False, tau=None, seed=0)
    return act_sweep.RunOutcome(
        dict(key, steps=3, sequence_error=0.5, ponder=1.0, loss=0.7,
             wall_seconds=1.0),
        [dict(key, difficulty=d, sequence_error=0.5, ponder=1.0)
         for d in (1, 2)], 3)

  monkeypatch.setattr(act_sweep, 'run_one', fake_run_one)
  lines = []
  summary = act_sweep.run_sweep(config, runs, tmp_path, log=lines.append)
  assert [r.name for r in summary.diverged] == ['tau=0.5_seed=0']
  assert [r.name for r in summary.trained] == ['noact_seed=0']
  assert 'loss is nan' in (tmp_path / 'tau=0.5_seed=0' /
                           sweep.DIVERGED_FILENAME).read_text()
  assert len(summary.results) == 1 and len(summary.difficulty) == 2
  summary = act_sweep.run_sweep(config, runs, tmp_path, log=lines.append)
  assert calls == ['noact_seed=0', 'tau=0.5_seed=0', 'noact_seed=0']
  assert 'diverged before' in lines[-1]
  assert len(sweep.read_rows(tmp_path / 'results.csv')) == 1


# ----------------------------------------------------------------------------
# The binary.


def test_sweep_binary_writes_rows_and_plots_and_resumes(tmp_path):
  workdir = tmp_path / 'sweep'
  rc, out, err = _run(TINY + [f'--workdir={workdir}'])
  assert rc == 0, err[-3000:]
  assert '6 trained, 0 restored, 0 already done' in out

  results = _csv(workdir / 'results.csv')
  assert list(results[0]) == list(act_sweep.RESULTS_FIELDS)
  keys = [(r['act'], r['tau'], r['seed']) for r in results]
  assert sorted(keys) == sorted(
      [('false', '', s) for s in '01'] +
      [('true', t, s) for t in ('0.001', '0.01') for s in '01'])
  for r in results:
    assert r['task'] == 'parity' and r['steps'] == '4'
    assert 0 <= float(r['sequence_error']) <= 1
    assert float(r['wall_seconds']) > 0 and math.isfinite(float(r['loss']))
    assert float(r['ponder']) == 1.0 if r['act'] == 'false' else (
        1.0 <= float(r['ponder']) <= 5.0)
  difficulty = _csv(workdir / 'difficulty.csv')
  assert list(difficulty[0]) == list(act_sweep.DIFFICULTY_FIELDS)
  assert len(difficulty) == 6 * 2
  assert {r['difficulty'] for r in difficulty} == {'1', '8'}
  for name in ('error_by_tau.png', 'error_vs_ponder.png', 'by_difficulty.png'):
    data = (workdir / name).read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10_000, name
  for run in ('noact_seed=0', 'tau=0.001_seed=1'):
    assert (workdir / run / 'checkpoints' / '4').is_dir()

  # Second invocation, after damage of the two kinds a resume must repair:
  # one run lost its difficulty rows (restore: no training), one lost its
  # final checkpoint (resume from step 2). The other four are untouched.
  first_results = (workdir / 'results.csv').read_text()
  first_difficulty = (workdir / 'difficulty.csv').read_text()
  metrics = {p.parent.name: p.read_text()
             for p in workdir.glob('*/metrics.jsonl')}
  lines = first_difficulty.splitlines()
  (workdir / 'difficulty.csv').write_text('\n'.join(
      l for l in lines if not l.startswith('parity,true,0.01,1,')) + '\n')
  restored_dir = workdir / 'tau=0.01_seed=1'
  resumed_dir = workdir / 'tau=0.001_seed=1'
  for step_dir in (resumed_dir / 'checkpoints').iterdir():
    if step_dir.name == '4':
      for p in sorted(step_dir.rglob('*'), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
      step_dir.rmdir()

  rc, out, err = _run(TINY + [f'--workdir={workdir}'])
  assert rc == 0, err[-3000:]
  assert '1 trained, 1 restored, 4 already done' in out
  assert 'tau=0.001_seed=1: trained 2 steps' in out
  assert 'tau=0.01_seed=1: restored from step 4' in out
  assert out.count('rows present, skipped') == 4
  # No duplicated rows, and every number as before (the resumed run is
  # bit-for-bit the uninterrupted one); only its wall time grew.
  assert (workdir / 'difficulty.csv').read_text() == first_difficulty
  new_results = (workdir / 'results.csv').read_text().splitlines()
  old_results = first_results.splitlines()
  assert len(new_results) == len(old_results) == 7
  for old, new in zip(old_results, new_results):
    if ',0.001,1,' in old:
      assert old.rsplit(',', 1)[0] == new.rsplit(',', 1)[0]
      assert float(new.rsplit(',', 1)[1]) > float(old.rsplit(',', 1)[1])
    else:
      assert old == new
  # Nothing but the resumed run trained: their logs are untouched.
  for name, text in metrics.items():
    if name != resumed_dir.name:
      assert (workdir / name / 'metrics.jsonl').read_text() == text, name
  assert (resumed_dir / 'checkpoints' / '4').is_dir()
  assert (restored_dir / 'checkpoints' / '4').is_dir()   # Only restored.

  # --plot_only redraws the figures from the CSVs alone.
  for png in workdir.glob('*.png'):
    png.unlink()
  rc, out, err = _run(['--plot_only', '--task=parity', f'--workdir={workdir}'])
  assert rc == 0, err[-3000:]
  assert len(list(workdir.glob('*.png'))) == 3
  assert 'trained' not in out


def test_sweep_binary_bad_flags_give_one_line_errors(tmp_path):
  cases = [
      (['--taus=abc'], "'abc' is not a number"),
      (['--seeds=3-1'], 'seeds'),
      (['--bits=0'], 'bits'),
      (['--task=logic', '--bits=8'], '--task=parity only'),
      (['--task=sort', '--layout=random'], '--layout applies to --task=parity'),
      (['--plot_only'], 'no parity rows'),
  ]
  for args, needle in cases:
    rc, _, err = _run(args + [f'--workdir={tmp_path / "w"}'])
    assert rc != 0, args
    lines = err.strip().splitlines()
    assert len(lines) == 1, (args, err)
    assert needle in lines[0] and 'Traceback' not in err, (args, err)
    assert lines[0].startswith('act_sweep: error:'), lines[0]


# ----------------------------------------------------------------------------
# Plots from hand-made rows.


def _hand_rows():
  """CSV-like rows (strings, as csv.DictReader reads them): 3 taus x 3 seeds."""
  results, difficulty = [], []
  for seed in range(3):
    runs = [('false', '', 0.40 + 0.01 * seed, 1.0)]
    runs += [('true', tau, 0.02 + tau + 0.005 * seed, 1.0 - math.log10(tau))
             for tau in (1e-3, 1e-2, 1e-1)]
    for act, tau, error, ponder in runs:
      key = dict(task='parity', act=act, tau=str(tau), seed=str(seed))
      results.append(dict(key, steps='10', sequence_error=str(error),
                          ponder=str(ponder), loss='0.5', wall_seconds='1'))
      for d in range(1, 9):
        difficulty.append(dict(key, difficulty=str(d),
                               sequence_error=str(min(1.0, error * d / 4)),
                               ponder=str(ponder * (0.5 + d / 8))))
  return results, difficulty


def _assert_png(path):
  data = pathlib.Path(path).read_bytes()
  assert data.startswith(PNG_MAGIC) and len(data) > 10_000


def test_sweep_plots_from_hand_made_rows(tmp_path):
  results, difficulty = _hand_rows()
  paths = act_plots.plot_sweep(results, difficulty, tmp_path, task='parity')
  assert [p.name for p in paths] == [
      'error_by_tau.png', 'error_vs_ponder.png', 'by_difficulty.png']
  for path in paths:
    _assert_png(path)
  # Typed rows (as sweep.read_rows gives them) work too; so does a sweep with
  # the paper's 37 taus (colour bar instead of legend) and no baseline.
  typed = [dict(act=True, tau=t, seed=0, sequence_error=t, ponder=2.0 - t)
           for t in act_sweep.paper_taus()]
  _assert_png(act_plots.plot_error_by_tau(typed, tmp_path / 'a.png'))
  _assert_png(act_plots.plot_error_vs_ponder(typed, tmp_path / 'b.png'))
  by_difficulty = [dict(r, difficulty=d) for r in typed for d in (1, 2)]
  _assert_png(act_plots.plot_by_difficulty(by_difficulty, tmp_path / 'c.png'))
  # Only a baseline: still a readable figure.
  _assert_png(act_plots.plot_error_by_tau(results[:1], tmp_path / 'd.png'))


def test_plots_reject_bad_rows(tmp_path):
  with pytest.raises(ValueError, match='no rows'):
    act_plots.plot_error_by_tau([], tmp_path / 'x.png')
  with pytest.raises(ValueError, match='lacks column'):
    act_plots.plot_error_vs_ponder([{'act': 'true', 'tau': '0.1',
                                 'sequence_error': '0.1'}], tmp_path / 'x.png')
  with pytest.raises(ValueError, match='without a tau'):
    act_plots.plot_error_by_tau([{'act': 'true', 'tau': '',
                              'sequence_error': '0.1'}], tmp_path / 'x.png')


def test_plot_ponder_over_text(tmp_path):
  text = 'The cat sat, on the mat.\nA café.'.encode()
  ponder = [1.0 + (0.8 if b == ord(' ') else 1.5 if b in b',.' else 0.1)
            for b in text]
  path = act_plots.plot_ponder_over_text(text, ponder, tmp_path / 'fig23.png',
                                     chars_per_row=20)
  _assert_png(path)
  _assert_png(act_plots.plot_ponder_over_text('abc', [1.0, 1.2, 1.1],
                                          tmp_path / 's.png'))
  labels = plots.byte_labels(text)
  assert len(labels) == len(text)
  assert labels[:4] == ['T', 'h', 'e', '␣'] and '↵' in labels
  assert labels[-3:] == ['é', '', '.']          # é is two bytes
  assert plots.byte_labels(b'\xff\x00a') == ['·', '·', 'a']
  with pytest.raises(ValueError, match='one ponder value per byte'):
    act_plots.plot_ponder_over_text(text, ponder[:-1], tmp_path / 'x.png')
  with pytest.raises(ValueError, match='empty'):
    act_plots.plot_ponder_over_text(b'', [], tmp_path / 'x.png')
  with pytest.raises(ValueError, match='NaN'):
    act_plots.plot_ponder_over_text(b'ab', [1.0, float('nan')],
                                    tmp_path / 'x.png')


def test_missing_matplotlib_gives_a_clear_error(tmp_path, monkeypatch):
  monkeypatch.setitem(sys.modules, 'matplotlib', None)
  with pytest.raises(ImportError, match='pip install matplotlib'):
    act_plots.plot_ponder_over_text(b'ab', [1.0, 1.0], tmp_path / 'x.png')


def test_depth_along_text_labels_are_thinned_and_equal_layers_shift():
  # 200 words on a 26-inch axis: every word labelled overlapped into a band.
  width = 0.12 * 200 + 2
  assert plots.label_stride(200, width) == 2
  assert plots.label_stride(30, 6.5) == 1
  assert plots.label_stride(1000, 30.0) == 6
  # Two layers of equal depth are drawn apart, the first where it is.
  assert plots.layer_offsets(1) == [0.0]
  shifts = plots.layer_offsets(2)
  assert shifts[0] == 0 and 0 < shifts[1] < 0.5


def test_depth_along_sequence_with_many_labels_and_equal_layers(tmp_path):
  words = [f'word{i}' for i in range(200)]
  depth = np.full(200, 3.0)
  path = rehn_plots.plot_depth_along_sequence(
      {'depth_0': depth, 'depth_1': depth}, tmp_path / 'd.png', title='t',
      labels=words)
  assert path.stat().st_size > 0


def test_wide_figures_raise_their_legends_and_labels_to_read_at_column_width():
  from experiments.reports import plots  # pylint: disable=g-import-not-at-top
  fig = plots.new_figure((14.0, 4.0))     # shown at half size in the docs
  ax = fig.subplots()
  ax.plot([0, 1], [0, 1], label='a')
  ax.legend(fontsize=6)
  ax.set_xlabel('step', fontsize=20)
  ax.set_xticks([0, 1], ['0', '1'], fontsize=5)
  plots.legible(fig)
  assert ax.get_legend().get_texts()[0].get_fontsize() == 16.0
  assert ax.xaxis.label.get_fontsize() == 20       # already large enough
  assert ax.get_xticklabels()[0].get_fontsize() == 5   # ticks left alone
