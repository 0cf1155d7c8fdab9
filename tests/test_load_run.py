"""vcrnn_jax.papers.runs.load_run: a binary's run rebuilt from its workdir.

A tiny run of two binary families (ACT's parity, EI-REHN's synthetic task
with its seed folders) trains once in this process (tests/_binaries.py);
each loads with the params of its checkpoint (the checksums its manifest
recorded), the rebuilt experiment evaluates them to the numbers the run
logged, and its model applied to the evaluation's batch gives the
evaluation's outputs. A data-reading binary loads from a corpus that has
moved. No binary is imported to load a run: the slow test loads one in a
process that sees only the installed package, from another folder.
"""

import configparser
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import zlib

import _binaries
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import setuptools

from vcrnn_jax import tasks
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.papers.runs import BINARIES, load_run
from vcrnn_jax.tasks import elastic_depth
from vcrnn_jax.training import train

RUNS = {
    'act_parity': ['--steps=4', '--eval_every=2', '--eval_batch_size=16',
                   '--hidden_size=8', '--batch_size=4', '--bits=4',
                   '--max_steps=5'],
    'rehn_synthetic': ['--cell=rnn', '--hidden_size=4', '--num_sequences=100',
                       '--batch_size=10', '--steps=2', '--eval_every=2',
                       '--eval_batch_size=10', '--seeds=1'],
}
EVAL_SEED = 2**31 - 1     # task_experiment's held-out key stream


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
  run = load_run(workdir)
  assert run.binary == f'experiments.{module}'
  assert run.step == _logged(workdir)['step'] == run.config.steps
  _assert_checkpoint_params(run)
  # Evaluated as the run was: its evaluation size is a resumable flag (not
  # in flags.json), read from the manifest's values.
  assert f'--eval_batch_size={run.flags["eval_batch_size"]}' in RUNS[module]
  got = run.experiment.evaluate(run.params, run.step)
  np.testing.assert_allclose(got[metric], _logged(workdir)[metric],
                             rtol=1e-6)
  _assert_finite_loss(run)
  # No binary was imported and no absl flag defined.
  assert set(flags.FLAGS) == names
  assert not [m for m in set(sys.modules) - modules
              if m.split('.')[0] == 'experiments']


def test_the_model_applied_to_the_evaluation_batch_gives_its_numbers(
    trained):
  run = load_run(trained['act_parity'])
  task = tasks.get('parity', bits=run.flags['bits'],
                   layout=run.flags['layout'])
  batch = task.sample(jax.random.fold_in(jax.random.PRNGKey(EVAL_SEED), 0),
                      run.flags['eval_batch_size'])
  _, lengths = act_tasks.step_mask(batch.mask)
  logits, ys = run.apply(batch.inputs, lengths)
  got = run.experiment.evaluate(run.params, run.step)
  np.testing.assert_allclose(
      float(jnp.mean(task.sequence_errors(logits, batch))),
      got['sequence_error'], rtol=1e-6)
  np.testing.assert_allclose(float(jnp.mean(ys.ponder)), got['ponder'],
                             rtol=1e-5)
  assert ys.steps.shape == batch.inputs.shape[:2]
  # The ACT cell reads the task's width; the flag counted in is an error
  # naming both widths.
  wide = jnp.concatenate([batch.inputs, batch.inputs[..., :1]], axis=-1)
  with pytest.raises(ValueError, match=r'\[batch, 4\].*got shape \(16, 5\)'):
    run.apply(wide, lengths)


def test_the_regression_model_applied_to_the_valid_split_gives_its_mse(
    trained):
  run = load_run(trained['rehn_synthetic'])
  ds = elastic_depth.load(run.flags['data_seed'],
                          num_sequences=run.flags['num_sequences'],
                          noise_variance=run.flags['noise_variance'])
  inputs, targets = ds.valid
  outputs, _ = run.apply(jnp.asarray(inputs))
  mse = float(jnp.mean(jnp.square(outputs - jnp.asarray(targets))))
  valid = run.experiment.evaluate(run.params, run.step)['valid_mse']
  np.testing.assert_allclose(mse, valid, rtol=1e-5)


def test_a_seed_of_a_binary_of_several_seeds_is_its_folder(trained):
  run = load_run(trained['rehn_synthetic'])
  assert run.flags['seed'] == run.config.seed == 1
  parent = trained['rehn_synthetic'].parent
  with pytest.raises(FileNotFoundError) as e:
    load_run(parent)
  assert str(e.value) == (f'{parent} is not a run\'s workdir but holds one '
                          f'below it, seed=1; pass that folder, {parent}/'
                          'seed=1.')


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
    load_run(workdir)
  assert str(corpus) in str(e.value) and 'data_path=' in str(e.value)
  assert '\n' not in str(e.value)
  run = load_run(workdir, data_path=moved)
  assert run.flags['data_path'] == str(moved)
  np.testing.assert_allclose(
      run.experiment.evaluate(run.params, run.step)['bpc'],
      _logged(workdir)['bpc'], rtol=1e-6)
  logits, _ = run.apply(jnp.zeros((1, 3), jnp.int32))
  assert logits.shape == (1, 3, 256)


def _strip_flags(workdir, name=None):
  """Removes the recorded flag values of the manifest (or only ``name``)."""
  path = workdir / 'manifest.jsonl'
  lines = [json.loads(line) for line in path.read_text().splitlines()]
  for line in lines:
    if name is None:
      del line['flags']
    else:
      del line['flags'][name]
  path.write_text(''.join(json.dumps(line) + '\n' for line in lines))


@pytest.mark.parametrize('case,error,needle', [
    ('missing', FileNotFoundError, 'is not a directory; pass a binary\'s '
     '--workdir'),
    ('empty', FileNotFoundError, 'is empty: a binary writes manifest.jsonl '
     'into its --workdir when it starts training; pass the --workdir of a '
     'run.'),
    ('stray', FileNotFoundError, 'holds no run (no manifest.jsonl in it or '
     'in a folder below it)'),
    ('parent', FileNotFoundError, 'is not a run\'s workdir but a folder of 2 '
     'runs: a/copy, b; pass one of them, e.g. '),
    ('unknown', ValueError, 'holds a run of experiments.act_sweep, which is '
     'not rebuilt from its workdir (binary must be one of '),
    ('no_flags', FileNotFoundError, 'flags.json'),
    ('no_checkpoint', FileNotFoundError, 'checkpoints: the run has started '
     'but saved none yet'),
    ('old_manifest', ValueError, 'has no "flags" (it was written before '
     'binaries recorded their flag values): rerun its command once, '
     '`python -m experiments.act_parity --steps=4'),
    ('data_dir', ValueError, 'experiments.act_parity has no --data_dir'),
    ('new_flag', ValueError, 'recorded no --eval_batches, a flag its binary '
     'has gained since; rerun its command once, `python -m '
     'experiments.act_parity --steps=4'),
])
def test_errors_are_one_line_that_names_the_fix(trained, tmp_path, case,
                                                error, needle):
  workdir, options = tmp_path / case, {}
  if case in ('empty', 'stray', 'parent'):
    workdir.mkdir()
  elif case != 'missing':
    workdir = shutil.copytree(trained['act_parity'], tmp_path / 'copy')
  if case == 'stray':
    (workdir / 'notes.txt').write_text('not a run')
  elif case == 'parent':
    shutil.copytree(trained['act_parity'], workdir / 'a' / 'copy')
    shutil.copytree(trained['act_parity'], workdir / 'b')
  elif case == 'unknown':
    (workdir / 'manifest.jsonl').write_text(json.dumps(
        {'command': 'python -m experiments.act_sweep --task=parity',
         'argv': ['--task=parity'], 'flags': {}}) + '\n')
  elif case == 'no_flags':
    (workdir / 'flags.json').unlink()
  elif case == 'no_checkpoint':
    shutil.rmtree(workdir / 'checkpoints')
  elif case == 'old_manifest':
    _strip_flags(workdir)
  elif case == 'new_flag':
    _strip_flags(workdir, 'eval_batches')
  elif case == 'data_dir':
    options['data_dir'] = tmp_path
  with pytest.raises(error) as e:
    load_run(workdir, **options)
  assert needle in str(e.value) and '\n' not in str(e.value)


def test_every_binary_that_trains_one_run_per_workdir_loads():
  binaries = {p.stem for p in (_binaries.REPO / 'experiments').glob('*.py')
              if not p.stem.startswith('_')}
  # Tools and the binaries whose workdir is not one run (act_sweep: a grid).
  others = {'act_sweep', 'family_summary', 'plan', 'record', 'results',
            'verify'}
  assert {f'experiments.{b}' for b in binaries - others} == set(BINARIES)


def _installed_package(site: pathlib.Path) -> None:
  """What ``pip install .`` installs, copied to ``site``: the packages
  setup.cfg's ``[options.packages.find]`` finds, and nothing else."""
  cfg = configparser.ConfigParser()
  cfg.read(_binaries.REPO / 'setup.cfg')
  include = cfg['options.packages.find']['include'].split()
  for package in setuptools.find_packages(str(_binaries.REPO),
                                          include=include):
    folder = pathlib.Path(*package.split('.'))
    (site / folder).mkdir(parents=True, exist_ok=True)
    for source in (_binaries.REPO / folder).glob('*.py'):
      shutil.copy(source, site / folder / source.name)


@pytest.mark.slow
def test_a_run_loads_and_applies_from_another_folder_with_the_package_alone(
    trained, tmp_path):
  site, elsewhere = tmp_path / 'site', tmp_path / 'elsewhere'
  site.mkdir()
  elsewhere.mkdir()
  _installed_package(site)
  script = textwrap.dedent(f'''
      import importlib.util, json
      import jax, jax.numpy as jnp
      from vcrnn_jax import tasks
      from vcrnn_jax.papers.act.tasks import step_mask
      from vcrnn_jax.papers.runs import load_run
      assert importlib.util.find_spec('experiments') is None
      run = load_run({str(trained['act_parity'])!r})
      task = tasks.get('parity', bits=run.flags['bits'])
      key = jax.random.fold_in(jax.random.PRNGKey({EVAL_SEED}), 0)
      batch = task.sample(key, run.flags['eval_batch_size'])
      logits, ys = run.apply(batch.inputs, step_mask(batch.mask)[1])
      print(json.dumps({{
          'applied': float(jnp.mean(task.sequence_errors(logits, batch))),
          'evaluated': run.experiment.evaluate(run.params, run.step)[
              'sequence_error'],
          'step': run.step}}))
  ''')
  env = {k: v for k, v in os.environ.items()
         if k not in ('PYTHONPATH', 'JAX_ENABLE_X64')}
  env['PYTHONPATH'] = str(site)
  proc = subprocess.run([sys.executable, '-c', script], cwd=elsewhere,
                        env=env, capture_output=True, text=True, timeout=300,
                        check=False)
  assert proc.returncode == 0, proc.stderr[-3000:]
  out = json.loads(proc.stdout.splitlines()[-1])
  assert out['step'] == _logged(trained['act_parity'])['step']
  np.testing.assert_allclose(out['applied'], out['evaluated'], rtol=1e-6)
  np.testing.assert_allclose(out['evaluated'],
                             _logged(trained['act_parity'])['sequence_error'],
                             rtol=1e-6)
