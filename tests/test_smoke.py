"""Each experiment binary once as a user runs it: ``python -m experiments.X``.

Every other test runs the binaries in this process (tests/_binaries.py); a
smoke run checks what only a fresh process shows: the module runs as
``__main__`` through absl's app, its flags and ``--help`` come from the
command line, and a run trains, writes its files and exits with status 0 at
tiny sizes. Corpora are small stand-ins in each corpus's published layout
(UCI HAR's is ``benchmarks.compile_time``'s). ``act_parity`` is started by the
SIGKILL, eight-device and two-process tests instead.
"""

import json
import math

import _binaries
import numpy as np
import pytest
import test_family_summary

from benchmarks import compile_time

pytestmark = pytest.mark.slow

STEPS = ['--steps=2', '--eval_every=2']
ACT = STEPS + ['--hidden_size=4', '--batch_size=4', '--eval_batch_size=8',
               '--max_steps=3']
VC = STEPS + ['--hidden_size=4', '--batch_size=2', '--seq_len=8',
              '--sharpness_every=1', '--max_symbols=2000',
              '--analysis_symbols=200', '--plot_symbols=20']
REHN = ['--cell=srehn', '--hidden_size=4', '--max_depth=2', '--seeds=0']


def _corpus(name, tmp_path):
  root = tmp_path / 'data'
  compile_time.CORPORA[name].write(root)
  return compile_time.CORPORA[name].flags(root)


def _ptb(tmp_path):
  """Penn Treebank's layout (words, and characters split by spaces), with a
  vocabulary of eight words instead of 10,000."""
  words = ['the', 'cat', 'sat', 'on', 'mat', 'a', 'dog', 'ran']
  rng = np.random.default_rng(0)
  root = tmp_path / 'data'
  (root / 'ptb').mkdir(parents=True)
  for split, n in (('train', 60), ('valid', 40), ('test', 40)):
    lines = [rng.choice(words, 10).tolist() for _ in range(n)]
    (root / 'ptb' / f'ptb.{split}.txt').write_text(
        ''.join(f' {" ".join(l)} \n' for l in lines))
    (root / 'ptb' / f'ptb.char.{split}.txt').write_text(
        ''.join(' '.join('_'.join(l)) + ' \n' for l in lines))
  return [f'--data_dir={root}']


def _tunes(tmp_path):
  path = tmp_path / 'tunes.txt'
  path.write_text(''.join(f'M:4/4 K:maj |: =c 2 =d /2 z | =f{i % 2 + 1} :|\n'
                          for i in range(40)))
  return path


def _czech(tmp_path):
  path = tmp_path / 'cs.txt'
  path.write_text('Žluťoučký kůň úpěl ďábelské ódy.\n' * 100,
                  encoding='utf-8')
  return path


# binary -> (its flags given tmp_path, a file the run leaves in --workdir)
RUNS = {
    'act_addition': (lambda t: ACT + ['--max_len=2', '--max_digits=2'],
                     'metrics.jsonl'),
    'act_logic': (lambda t: ACT + ['--max_len=2', '--num_gates=2'],
                  'metrics.jsonl'),
    'act_sort': (lambda t: ACT + ['--max_len=3'], 'metrics.jsonl'),
    'act_sweep': (lambda t: [
        '--task=parity', '--bits=4', '--hidden_size=4', '--batch_size=4',
        '--max_steps=3', '--taus=0.01', '--seeds=0', '--baseline=false',
        '--eval_batch_size=8', '--difficulties=1,4', '--quiet', *STEPS],
                  'results.csv'),
    'family_adding': (lambda t: STEPS + [
        '--model=skip_gru', '--hidden_size=4', '--batch_size=4',
        '--eval_batch_size=8'], 'results.json'),
    'family_parity': (lambda t: STEPS + [
        '--method=repeat', '--bits=4', '--hidden_size=4', '--batch_size=4',
        '--eval_batch_size=8', '--count_batch_size=4'], 'results.json'),
    'rehn_synthetic': (lambda t: REHN + [
        '--epochs=1', '--num_sequences=40', '--batch_size=10',
        f'--table_csv={t / "table.csv"}'], 'seed=0/metrics.jsonl'),
    'rehn_har': (lambda t: REHN + STEPS + [
        '--eval_batch_size=100', f'--table_csv={t / "table.csv"}',
        *_corpus('rehn_har', t)], 'results.json'),
    'rehn_ptb': (lambda t: STEPS + [
        '--hidden_size=4', '--max_depth=2', '--batch_size=2', '--seq_len=8',
        '--plot_words=0', *_ptb(t)], 'results.json'),
    'vc_ptb': (lambda t: VC + ['--level=char', *_ptb(t)], 'results.json'),
    'vc_text8': (lambda t: VC + _text8(t), 'results.json'),
    'vc_music': (lambda t: VC + [f'--data_path={_tunes(t)}'], 'results.json'),
    'vc_europarl': (lambda t: VC + [f'--data_path={_czech(t)}'],
                    'results.json'),
}


def _text8(tmp_path):
  (tmp_path / 'text8').write_text('the cat sat on the mat ' * 300)
  return [f'--data_dir={tmp_path}']


@pytest.mark.parametrize('module', sorted(RUNS))
def test_binary_trains_as_a_user_runs_it(module, tmp_path):
  flags, leaves = RUNS[module]
  workdir = tmp_path / 'run'
  proc = _binaries.run(module, flags(tmp_path) + [f'--workdir={workdir}'],
                       process=True,
                       env={'VCRNN_JAX_DATA': str(tmp_path / 'cache')})
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert (workdir / leaves).stat().st_size > 0
  assert 'Traceback' not in proc.stderr
  if module == 'act_sweep':     # JAX's compilation cache, in the workdir
    assert any((workdir / 'jax_cache').iterdir())


def test_wikipedia_on_characters_plots_with_a_fresh_font_cache(tmp_path):
  # A first matplotlib import builds its font cache silently (no "generated
  # new fontManager" line): a new process with its own config folder.
  corpus = tmp_path / 'corpus.txt'
  corpus.write_text('žluťoučký kůň úpěl ďábelské ódy.\n' * 300,
                    encoding='utf-8')
  workdir = tmp_path / 'run'
  proc = _binaries.run('act_wikipedia', [
      '--data=text', f'--data_path={corpus}', '--hidden_size=4',
      '--batch_size=2', '--seq_len=8', '--eval_windows=2', '--max_steps=3',
      '--plot_ponder_bytes=20', f'--workdir={workdir}', *STEPS],
      process=True, env={'MPLCONFIGDIR': str(tmp_path / 'mpl')})
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert (workdir / 'ponder_over_text.png').stat().st_size > 0
  assert 'fontManager' not in proc.stderr + proc.stdout
  line = json.loads((workdir / 'metrics.jsonl').read_text().splitlines()[-1])
  # 25 distinct characters and <unk>: the vocabulary is the text's.
  assert 0 < line['bpc'] < math.log2(30)


def test_summary_of_runs(tmp_path):
  test_family_summary._write_runs(tmp_path / 'runs')
  out = tmp_path / 'out'
  proc = _binaries.run('family_summary', [f'--runs={tmp_path / "runs"}',
                                          f'--out={out}'], process=True)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert '## Parity' in (out / 'summary.md').read_text()


def test_help_is_the_docstring_as_plain_text_and_the_flags():
  proc = _binaries.run('vc_ptb', ['--help'], process=True)
  assert 'python -m experiments.vc_ptb' in proc.stdout
  assert '--sharpness_every' in proc.stdout and '``' not in proc.stdout
