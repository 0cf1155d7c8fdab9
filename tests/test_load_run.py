"""experiments.load_run: a binary's run rebuilt from its workdir.

A tiny run of two binary families (ACT's parity, EI-REHN's synthetic task
with its seed folders) trains once in this process (tests/_binaries.py);
each loads with the params of its checkpoint (the checksums its manifest
recorded), and the rebuilt experiment evaluates them to the numbers the run
logged. A data-reading binary loads from a corpus that has moved.
"""

import importlib
import json
import shutil
import sys
import zlib

import _binaries
from absl import flags
from absl.testing import flagsaver
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import experiments
from vcrnn_jax.training import train

RUNS = {
    'act_parity': ['--steps=4', '--eval_every=2', '--eval_batch_size=16',
                   '--hidden_size=8', '--batch_size=4', '--bits=4',
                   '--max_steps=5'],
    'rehn_synthetic': ['--cell=rnn', '--hidden_size=4', '--num_sequences=100',
                       '--batch_size=10', '--steps=2', '--eval_every=2',
                       '--eval_batch_size=10', '--seeds=1'],
}


def _run(module, args, tmp_path):
  proc = _binaries.run(module, args,
                       env={'VCRNN_JAX_DATA': str(tmp_path / 'cache')})
  assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  """The workdir of a tiny run of each binary of RUNS, trained once."""
  root = tmp_path_factory.mktemp('runs')
  for module, args in RUNS.items():
    table = [f'--table_csv={root / "table.csv"}'] if 'rehn' in module else []
    _run(module, args + table + [f'--workdir={root / module}'], root)
  return {'act_parity': root / 'act_parity',
          'rehn_synthetic': root / 'rehn_synthetic' / 'seed=1'}


@pytest.fixture(autouse=True)
def _float32():
  # The binaries train under JAX's defaults; the suite turns on x64.
  with _binaries._jax_defaults():  # pylint: disable=protected-access
    yield


def _logged(workdir) -> dict:
  return json.loads((workdir / 'metrics.jsonl').read_text().splitlines()[-1])


def _assert_checkpoint_params(run):
  meta = json.loads((run.workdir / 'checkpoints' / str(run.step) / 'meta' /
                     'metadata').read_text())
  saved = {e['path']: e for e in meta['leaves']
           if e['path'].startswith('.params')}
  leaves = {'.params' + jax.tree_util.keystr(path): np.asarray(leaf)
            for path, leaf in jax.tree_util.tree_flatten_with_path(
                run.params)[0]}
  assert sorted(leaves) == sorted(saved)
  for path, leaf in leaves.items():
    want = saved[path]
    assert list(leaf.shape) == want['shape'], path
    assert leaf.dtype.name == want['dtype'], path
    assert zlib.crc32(leaf.tobytes()) == want['crc32'], path


def _assert_finite_loss(run):
  _, data_key, loss_key = train.run_keys(run.config.seed)
  batch = run.experiment.sample(data_key, run.step)
  info = train.StepInfo(jax.random.fold_in(loss_key, run.step),
                        jnp.int32(run.step))
  loss, _ = run.experiment.loss(run.params, batch, info)
  assert np.isfinite(float(loss))


@pytest.mark.parametrize('module,metric', [('act_parity', 'sequence_error'),
                                           ('rehn_synthetic', 'valid_mse')])
def test_a_run_loads_with_its_checkpoint_params_and_evaluates_as_logged(
    trained, module, metric):
  workdir = trained[module]
  names, modules = set(flags.FLAGS), set(sys.modules)
  run = experiments.load_run(workdir)
  assert run.binary == f'experiments.{module}'
  assert run.step == _logged(workdir)['step'] == run.config.steps
  _assert_checkpoint_params(run)
  # Evaluated as the run was: its evaluation size comes from its command
  # (--eval_batch_size is resumable, not in flags.json).
  assert f'--eval_batch_size={run.flags["eval_batch_size"]}' in RUNS[module]
  got = run.experiment.evaluate(run.params, run.step)
  np.testing.assert_allclose(got[metric], _logged(workdir)[metric],
                             rtol=1e-6)
  _assert_finite_loss(run)
  # absl's flags and the binaries' modules are left as they were found, so
  # the other family (another --cell) loads next in this process.
  assert set(flags.FLAGS) == names
  assert not [m for m in set(sys.modules) - modules
              if m.startswith('experiments.') and m != 'experiments._load']


def test_a_seed_of_a_binary_of_several_seeds_is_its_folder(trained):
  run = experiments.load_run(trained['rehn_synthetic'])
  assert run.flags['seed'] == run.config.seed == 1
  with pytest.raises(FileNotFoundError, match=r'one run per seed: load its '
                     r'folder seed=1\.$'):
    experiments.load_run(trained['rehn_synthetic'].parent)


def test_a_binary_imported_here_keeps_its_flags_and_a_clash_is_refused(
    trained):
  with flagsaver.flagsaver():
    try:
      importlib.import_module('experiments.act_parity')
      names = set(flags.FLAGS)
      assert experiments.load_run(trained['act_parity']).flags['bits'] == 4
      # The run's --bits=4 went to a private copy of the flag, not to this
      # process's, still at its default.
      assert set(flags.FLAGS) == names
      assert flags.FLAGS['bits'].value == flags.FLAGS['bits'].default == 64
      with pytest.raises(ValueError, match='another binary\'s flags'):
        experiments.load_run(trained['rehn_synthetic'])
      assert set(flags.FLAGS) == names
    finally:
      _binaries._forget_binaries()  # pylint: disable=protected-access


def test_a_moved_corpus_is_one_error_line_and_data_path_finds_it(tmp_path):
  corpus = tmp_path / 'corpus.txt'
  corpus.write_bytes(b'the quick brown fox jumps over the lazy dog. ' * 40)
  workdir = tmp_path / 'wiki'
  _run('act_wikipedia', ['--act=false', '--cell=elman', '--steps=2',
                         '--eval_every=2', '--hidden_size=4',
                         '--batch_size=2', '--seq_len=8', '--eval_windows=2',
                         f'--data_path={corpus}', f'--workdir={workdir}'],
       tmp_path)
  moved = corpus.rename(tmp_path / 'moved.txt')
  with pytest.raises(FileNotFoundError) as e:
    experiments.load_run(workdir)
  assert str(corpus) in str(e.value) and 'data_path=' in str(e.value)
  assert '\n' not in str(e.value)
  run = experiments.load_run(workdir, data_path=moved)
  assert run.flags['data_path'] == str(moved)
  np.testing.assert_allclose(
      run.experiment.evaluate(run.params, run.step)['bpc'],
      _logged(workdir)['bpc'], rtol=1e-6)


@pytest.mark.parametrize('case,error,needle', [
    ('missing', FileNotFoundError, 'is not a directory'),
    ('empty', FileNotFoundError, 'manifest.jsonl'),
    ('unknown', ValueError, 'a run of experiments.act_sweep, not of a binary'),
    ('no_flags', FileNotFoundError, 'flags.json'),
    ('no_checkpoint', FileNotFoundError, 'no checkpoint in'),
    ('data_dir', ValueError, 'experiments.act_parity has no --data_dir'),
])
def test_errors_are_one_clear_line(trained, tmp_path, case, error, needle):
  workdir, options = tmp_path / case, {}
  if case == 'empty':
    workdir.mkdir()
  elif case != 'missing':
    workdir = shutil.copytree(trained['act_parity'], tmp_path / 'copy')
  if case == 'unknown':
    (workdir / 'manifest.jsonl').write_text(json.dumps(
        {'command': 'python -m experiments.act_sweep --task=parity',
         'argv': ['--task=parity']}) + '\n')
  elif case == 'no_flags':
    (workdir / 'flags.json').unlink()
  elif case == 'no_checkpoint':
    shutil.rmtree(workdir / 'checkpoints')
  elif case == 'data_dir':
    options['data_dir'] = tmp_path
  with pytest.raises(error) as e:
    experiments.load_run(workdir, **options)
  assert needle in str(e.value) and '\n' not in str(e.value)
