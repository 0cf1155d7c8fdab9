"""The VCRNN experiment binaries end to end (tiny sizes, in this process), and
their analysis."""

import json
import re
import sys

import _binaries
import numpy as np
import pytest

from vcrnn_jax.papers.vc import lm as vc_lm

TINY = ['--hidden_size=8', '--batch_size=4', '--seq_len=10', '--steps=2',
        '--eval_every=2', '--sharpness_every=1', '--max_symbols=3000',
        '--analysis_symbols=400', '--plot_symbols=40']


def _run(module, args, tmp_path, cwd=None):
  return _binaries.run(module, args, cwd=cwd,
                       env={'VCRNN_JAX_DATA': str(tmp_path / 'cache')})


def _results(workdir):
  return json.loads((workdir / 'results.json').read_text())


def _metrics(workdir):
  return [json.loads(l) for l in
          (workdir / 'metrics.jsonl').read_text().splitlines()]


def test_vc_ptb_char_trains_logs_m_and_rnn_d_and_resumes(tmp_path,
                                                         shared_data_dir):
  workdir = tmp_path / 'ptb'
  args = [f'--data_dir={shared_data_dir}', '--level=char', '--cell=vcrnn',
          f'--workdir={workdir}'] + TINY
  proc = _run('vc_ptb', args, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  line = _metrics(workdir)[-1]
  assert line['step'] == 2 and 4 < line['bpc'] < 7
  assert 0 < line['m'] < 1 and 0 < line['rnn_d'] <= 8
  out = _results(workdir)
  assert set(out['analysis']['mean_m_by_class']['symbol']) == {
      'boundary', 'inside word'}
  assert {'boundary', 'first letter', 'last letter'} <= set(
      out['analysis']['mean_m_by_class']['position in word'])
  assert (workdir / 'm_over_text.png').stat().st_size > 0
  assert (workdir / 'm_by_class.png').stat().st_size > 0
  # The same command with more steps resumes from the checkpoint.
  args = [a if not a.startswith('--steps') else '--steps=4' for a in args]
  proc = _run('vc_ptb', args, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert 'Resumed from step 2' in proc.stdout + proc.stderr
  assert [l['step'] for l in _metrics(workdir)] == [2, 4]
  # Other run-defining flags are refused with one line.
  proc = _run('vc_ptb', args + ['--target=0.3'], tmp_path)
  assert proc.returncode == 2 and 'holds a run' in proc.stderr
  assert 'Traceback' not in proc.stderr
  # The guide setting on PTB: the boundary's own target reaches the penalty.
  guided = tmp_path / 'guided'
  swap = {'--workdir': f'--workdir={guided}', '--steps': '--steps=2'}
  proc = _run('vc_ptb', [swap.get(a.split('=')[0], a) for a in args]
              + ['--boundary_target=1.0'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  plain = _metrics(workdir)[0]
  assert _metrics(guided)[0]['train_loss_total'] != pytest.approx(
      plain['train_loss_total'])


def test_vc_ptb_bit_level_with_buffer_measures_the_period(tmp_path,
                                                          shared_data_dir):
  workdir = tmp_path / 'bit'
  proc = _run('vc_ptb', [f'--data_dir={shared_data_dir}', '--level=bit',
                         '--buffer_bits=8', '--cell=vcgru',
                         f'--workdir={workdir}'] + TINY, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  analysis = _results(workdir)['analysis']
  assert set(analysis['mean_m_by_class']['bit kind']) == {
      'character bit', 'buffer bit'}
  assert list(analysis['mean_m_by_class']['buffer bit']) == [
      f'buffer {k}' for k in range(1, 9)] + ['character bit']
  rates = analysis['peak_rate_by_class']['bit kind']
  assert set(rates) == {'character bit', 'buffer bit'}
  assert all(0 <= r['mean'] <= 1 for r in rates.values())
  assert 'rate of the 5% largest m_t by bit kind' in proc.stdout
  found = analysis['period_m']
  assert 2 <= found['fundamental'] <= found['period'] <= 64
  assert -1 <= found['at_character_period'] <= 1
  assert 'mean update of the top dims' in proc.stdout
  assert 'period of m_t: ' in proc.stdout and ' bits (autocorrelation ' in (
      proc.stdout)
  assert re.search(r'period of m_t: \d+ bits \(autocorrelation -?[.\d]+'
                   r'(; highest -?[.\d]+ at \d+)?; -?[.\d]+ at 16\);',
                   proc.stdout), proc.stdout
  assert (workdir / 'bits_top_dims.png').stat().st_size > 0


def test_vc_ptb_baseline_and_bad_flags(tmp_path, shared_data_dir):
  workdir = tmp_path / 'gru'
  proc = _run('vc_ptb', [f'--data_dir={shared_data_dir}', '--cell=gru',
                         f'--workdir={workdir}'] + TINY, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  line = _metrics(workdir)[-1]
  assert line['m'] == 1 and line['rnn_d'] == pytest.approx(8 * 2**0.5)
  assert 'analysis' not in _results(workdir)
  proc = _run('vc_ptb', ['--buffer_bits=8'], tmp_path)
  assert proc.returncode == 2 and proc.stderr.count('\n') == 1
  assert '--buffer_bits is for --level=bit' in proc.stderr
  proc = _run('vc_ptb', ['--level=bit', '--boundary_target=0.8'], tmp_path)
  assert proc.returncode == 2 and proc.stderr.count('\n') == 1
  assert '--boundary_target is for --level=char' in proc.stderr


def test_vc_text8_on_a_small_file_in_the_text8_format(tmp_path):
  (tmp_path / 'text8').write_text('the cat sat on the mat ' * 300)
  workdir = tmp_path / 't8'
  proc = _run('vc_text8', [f'--data_dir={tmp_path}', f'--workdir={workdir}',
                           '--scheduler_lr_scale=0.1'] + TINY, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  out = _results(workdir)
  assert out['model'] == 'VCGRU-8'
  assert out['analysis']['mean_m_by_class']['symbol']['boundary']['count'] > 0
  flags = json.loads((workdir / 'flags.json').read_text())
  assert flags['scheduler_lr_scale'] == 0.1 and flags['clip_scheduler_apart']
  assert flags['kernel_init'] == 'glorot_uniform'   # the binaries' default
  # A baseline has no scheduler to clip apart: the default still trains it,
  # and the VC-only flags set by hand are refused in one line.
  proc = _run('vc_text8', [f'--data_dir={tmp_path}', '--cell=elman',
                           f'--workdir={tmp_path / "e"}'] + TINY, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert _results(tmp_path / 'e')['model'] == 'ELMAN-8'
  for flag in ('--scheduler_lr_scale=0.1', '--noclip_scheduler_apart'):
    proc = _run('vc_text8', [f'--data_dir={tmp_path}', '--cell=elman',
                             f'--workdir={tmp_path / "e2"}', flag] + TINY,
                tmp_path)
    assert proc.returncode == 2 and proc.stderr.count('\n') == 1
    assert (f'{flag.split("=")[0].replace("--no", "--")} is for the VC cells'
            in proc.stderr)


@pytest.mark.parametrize('setting', ['guide'])
def test_vc_europarl_guide_on_a_utf8_corpus(tmp_path, setting):
  corpus = tmp_path / 'cs.txt'
  corpus.write_text('Žluťoučký kůň úpěl ďábelské ódy.\n' * 200,
                    encoding='utf-8')
  workdir = tmp_path / 'eu'
  proc = _run('vc_europarl', [f'--data_path={corpus}', f'--setting={setting}',
                              f'--workdir={workdir}'] + TINY, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  flags = json.loads((workdir / 'flags.json').read_text())
  assert flags['setting'] == 'guide' and flags['boundary_target'] == 0.8
  assert 'boundary' in _results(workdir)['analysis']['mean_m_by_class'][
      'symbol']


def test_vc_music_reports_perplexity_and_m_per_symbol_kind(tmp_path):
  tunes = tmp_path / 'tunes.txt'
  tunes.write_text(''.join(
      f'M:4/4 K:maj |: =c 2 =d /2 =e /2 z | =f{i % 2 + 1} =g 3/2 :|\n'
      for i in range(60)))
  workdir = tmp_path / 'music'
  proc = _run('vc_music', [f'--data_path={tunes}', f'--workdir={workdir}']
              + TINY, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert 'test perplexity' in proc.stdout
  kinds = _results(workdir)['analysis']['mean_m_by_class']
  assert {'bar', 'note', 'rest'} <= set(kinds['symbol kind'])
  assert list(kinds['note length']) == ['0.5', '1', '1.5', '2']


def _tunes(tmp_path):
  tunes = tmp_path / 'tunes.txt'
  tunes.write_text(''.join(
      f'M:4/4 K:maj |: =c 2 =d /2 =e /2 z | =f{i % 2 + 1} =g 3/2 :|\n'
      for i in range(60)))
  return tunes


def test_each_vc_binary_writes_under_its_own_name(tmp_path):
  # The default workdir is runs/<binary>/..., relative to where it runs:
  # two binaries with the same flags share no folder, and each summary and
  # progress title names its binary.
  (tmp_path / 'text8').write_text('the cat sat on the mat ' * 300)
  runs = {'vc_text8': [f'--data_dir={tmp_path}'],
          'vc_music': [f'--data_path={_tunes(tmp_path)}']}
  for name, data_flags in runs.items():
    proc = _run(name, data_flags + TINY, tmp_path, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = list((tmp_path / 'runs').glob('*/*/results.json'))
    assert [p.parts[-3] for p in found if p.parts[-3] == name] == [name]
    model = 'VCGRU-8' if name == 'vc_text8' else 'VCRNN-8'
    assert f'\n{name} {model}\n---' in proc.stdout, proc.stdout  # summary
  assert sorted(p.name for p in (tmp_path / 'runs').iterdir()) == [
      'vc_music', 'vc_text8']
  assert not (tmp_path / 'runs' / 'clip_scheduler_apart').exists()


def test_results_json_one_layout_and_written_before_the_plots(tmp_path,
                                                             monkeypatch):
  # matplotlib that cannot be imported: the run's numbers are written, the
  # plots are skipped with one warning line each, and the run succeeds.
  with monkeypatch.context() as broken:
    for name in [m for m in sys.modules
                 if m == 'matplotlib' or m.startswith('matplotlib.')] + [
                     'matplotlib']:
      broken.setitem(sys.modules, name, None)
    workdir = tmp_path / 'music'
    proc = _run('vc_music', [f'--data_path={_tunes(tmp_path)}',
                             f'--workdir={workdir}'] + TINY, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  warnings = [l for l in proc.stderr.splitlines() if 'warning' in l]
  assert len(warnings) == 2 and all(
      l.startswith('vc_music: warning: ') and 'not written' in l
      for l in warnings), proc.stderr
  out = _results(workdir)
  assert set(out) >= {'model', 'step', 'valid', 'train', 'steps_per_sec',
                      'test', 'analysis'}
  assert not any(k.startswith('train_') for k in out['valid'])
  assert {'bpc', 'loss_total', 'grad_norm'} <= set(out['train'])
  assert not (workdir / 'm_over_text.png').exists()
  # Rerun after the end (as after a kill past the final checkpoint): the
  # same layout, the same numbers.
  proc = _run('vc_music', [f'--data_path={_tunes(tmp_path)}',
                           f'--workdir={workdir}'] + TINY, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  again = _results(workdir)
  assert set(again) == set(out) and again['train'] == out['train']
  assert again['valid'] == pytest.approx(out['valid'])
  assert (workdir / 'm_over_text.png').stat().st_size > 0


def test_vc_europarl_split_unit_flag_is_the_hint_it_gives(tmp_path):
  corpus = tmp_path / 'one_line.txt'
  corpus.write_text('Žluťoučký kůň úpěl ďábelské ódy. ' * 300, encoding='utf-8')
  args = [f'--data_path={corpus}', f'--workdir={tmp_path / "eu"}'] + TINY
  proc = _run('vc_europarl', args, tmp_path)
  assert proc.returncode == 2 and proc.stderr.count('\n') == 1
  assert '--split_unit=char' in proc.stderr
  proc = _run('vc_europarl', args + ['--split_unit=char'], tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert json.loads((tmp_path / 'eu' / 'flags.json').read_text())[
      'split_unit'] == 'char'


def test_vc_music_refuses_both_data_flags(tmp_path):
  proc = _run('vc_music', [f'--data_path={_tunes(tmp_path)}',
                           f'--data_dir={tmp_path}'] + TINY, tmp_path)
  assert proc.returncode == 2 and proc.stderr.count('\n') == 1
  assert 'not both' in proc.stderr


@pytest.mark.parametrize('cell', vc_lm.CELL_NAMES)
def test_kernel_init_reaches_every_cell_of_the_vc_binaries(cell):
  import jax  # pylint: disable=g-import-not-at-top
  bound = (6 / (64 + 64)) ** 0.5     # Glorot-uniform's, per gate block
  peak = {}
  for init in vc_lm.KERNEL_INITS:
    params = vc_lm.build_cell(vc_lm.ModelSpec(cell, 64, kernel_init=init)
                              ).init(jax.random.key(0), 64)
    peak[init] = float(np.abs(params['input_kernel']).max())
  assert peak['glorot_uniform'] <= bound < peak['lecun_normal']
  with pytest.raises(ValueError, match='kernel_init must be one of'):
    vc_lm.build_cell(vc_lm.ModelSpec(cell, 8, kernel_init='zeros'))


def test_music_classes_and_note_lengths():
  found = vc_lm.music_classes(['|:', '=d2', 'z/2', '^G,', ':|', '(3', '|1',
                               '=c/', 'M:4/4', '=A3/2>'])
  assert found['kind'] == ['bar', 'note', 'rest', 'note', 'bar', 'other',
                           'bar', 'note', 'other', 'note']
  assert found['length'] == [None, '2', '0.5', '1', None, None, None, '0.5',
                             None, '1.5']


def test_buffer_classes_count_the_buffer_bits_after_each_character():
  positions = [0, 1, -1, -1, -1, 0, 1, -1]
  assert vc_lm.buffer_classes(positions) == [
      'character bit', 'character bit', 'buffer 1', 'buffer 2', 'buffer 3',
      'character bit', 'character bit', 'buffer 1']
  from experiments import _vc  # pylint: disable=g-import-not-at-top
  assert _vc._class_order(['buffer 10', 'character bit', 'buffer 2',
                           'buffer 1']) == [
      'buffer 1', 'buffer 2', 'buffer 10', 'character bit']


def test_word_position_classes_tell_word_ends_from_boundaries():
  # "ab c de" with ' ' = 0: a-b one word, c a one-letter word, then d-e.
  tokens = [1, 2, 0, 3, 0, 4, 5, 6, 0, 7]
  assert vc_lm.word_position_classes(tokens, [0]) == [
      'first letter', 'last letter', 'boundary', 'one-letter word',
      'boundary', 'first letter', 'middle letter', 'last letter', 'boundary',
      'first letter']
  assert vc_lm.boundary_classes(tokens, [0]).count('boundary') == 3


def test_dominant_period_finds_eight_and_mean_by_class():
  t = np.arange(800)
  signal = (t % 8 == 0).astype(float) + 0.01 * np.sin(t)
  assert vc_lm.dominant_period(signal, 32)['period'] == 8
  # Ties at multiples of the period: the highest peak may land on any of
  # them, the fundamental is the shortest.
  rng = np.random.default_rng(1)
  noisy = np.tile(rng.normal(size=8), 100) + 0.3 * rng.normal(size=800)
  found = vc_lm.dominant_period(noisy, 32)
  assert found['period'] == 24 and found['fundamental'] == 8
  assert found['fundamental_autocorrelation'] >= 0.9 * found[
      'autocorrelation']
  flat = vc_lm.dominant_period(np.ones(100), 8)
  assert flat['period'] == flat['fundamental'] == 0
  with pytest.raises(ValueError, match='tolerance'):
    vc_lm.dominant_period(noisy, 32, tolerance=0.0)
  out = vc_lm.mean_by_class([1.0, 0.0, 0.5, np.nan], ['a', 'b', 'a', None])
  assert out == {'a': {'mean': 0.75, 'count': 2},
                 'b': {'mean': 0.0, 'count': 1}}


def test_top_dims_usage_follows_m():
  usage = vc_lm.top_dims_usage([0.1, 0.99, 1.0], 100, 1.0)
  assert usage[0] == 0 and 0 < usage[1] < usage[2] <= 1


def test_peak_steps_marks_the_largest_updates_and_their_class_rate():
  # A spike every 20 steps on top of a ramp: the 5% largest are the spikes.
  t = np.arange(400)
  m = 0.4 + 0.001 * (t % 20) + 0.5 * (t % 20 == 3)
  peaks = vc_lm.peak_steps(m, 0.05)
  np.testing.assert_array_equal(np.flatnonzero(peaks), t[t % 20 == 3])
  rate = vc_lm.mean_by_class(peaks.astype(float),
                             ['spike' if i % 20 == 3 else 'other' for i in t])
  assert rate['spike']['mean'] == 1.0 and rate['other']['mean'] == 0.0
  assert not vc_lm.peak_steps(np.full(50, 0.5)).any()  # ties: none marked
  assert vc_lm.peak_steps([]).shape == (0,)
  with pytest.raises(ValueError, match='fraction'):
    vc_lm.peak_steps(m, 1.0)
