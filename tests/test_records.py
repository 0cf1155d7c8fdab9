"""Run records (experiments.reports.records), the generator and its checks.

The first tests are the guard of the published numbers: every generated
fragment and figure under docs/results/generated, and every generated block
of README.md and docs/getting_started.md, must be what the records under
docs/results/records give (``python -m experiments.results`` rebuilds them).
"""

import json
import pathlib
import re
import subprocess

import pytest

from experiments.reports import manifest, records, results
from tests import _binaries

REPO = _binaries.REPO
RECORDS = REPO / results.RECORDS
GENERATED = REPO / results.GENERATED


@pytest.fixture(scope='module')
def repo_outputs():
  groups = records.read_records(RECORDS)
  return groups, results.outputs(groups)


def test_generated_files_match_the_records(repo_outputs):
  _, outs = repo_outputs
  stale = records.stale_outputs(outs, GENERATED)
  assert not stale, ('generated results are stale; run `python -m '
                     'experiments.results`:\n' + '\n'.join(stale))


@pytest.mark.parametrize('path', results.QUOTING, ids=str)
def test_quoted_results_are_the_generated_ones(repo_outputs, path):
  _, outs = repo_outputs
  text = (REPO / path).read_text()
  blocks = records.marked_blocks(text)
  assert blocks, f'{path} quotes no generated result'
  fragments = results.fragments(outs)
  for name, body in blocks.items():
    assert body == fragments.get(name), (
        f'{path}: block "{name}" is not what the records give; run `python '
        '-m experiments.results`')
  if path.name == 'BUILD_NOTES.md':
    return    # its other results are typed history, each with its commit
  # Outside the generated blocks, no measured percentage: a result typed by
  # hand is not held by any record.
  outside = re.sub(r'<!-- generated: (\S+) begin -->.*?<!-- generated: \1 '
                   r'end -->', '', text, flags=re.S)
  # ("the 5% largest m_t" names a measure, not a result.)
  typed = [line for line in outside.splitlines()
           if re.search(r'\d(\.\d+)?\s?%(?! largest)', line)]
  assert not typed, f'{path} quotes numbers no record holds: {typed}'


@pytest.mark.parametrize('path', results.RESULT_PAGES, ids=str)
def test_results_pages_type_no_number_or_verdict(path):
  typed = results.typed_results((REPO / path).read_text())
  assert not typed, (f'{path} types results outside generated blocks (move '
                     f'them to a generated fragment, or to the "'
                     f'{results.HISTORY}" appendix without verdict):\n'
                     + '\n'.join(typed))


def test_typed_results_finds_numbers_and_verdicts_in_prose_only():
  page = ('# P\n\nWe reach 1.5% at `--tau=0.01`, $\\tau = 0.01$ (Sec. 3.1).\n'
          '<!-- generated: a/b begin -->\n3.2% **holds**\n'
          '<!-- generated: a/b end -->\n| x | reproduced |\n'
          f'{results.HISTORY}\n\nseed 0 ended at 0.2%.\n')
  assert results.typed_results(page) == [
      'We reach 1.5% at  ,   ( ).', '| x | reproduced |']
  assert results.typed_results(page + 'then **holds**\n') == [
      'We reach 1.5% at  ,   ( ).', '| x | reproduced |',
      '(history) then **holds**']


def test_every_record_is_small_and_complete():
  for path in sorted(RECORDS.glob('**/*.json')):
    assert path.stat().st_size < 30_000, path
    record = json.loads(path.read_text())
    for key in ('command', 'flags', 'seed', 'commit', 'versions', 'machine',
                'final', 'curve', 'wall_s', 'steps'):
      assert key in record, (path, key)
    assert re.fullmatch(r'[0-9a-f]{40}', record['commit']), path
    assert record['command'].startswith('python -m experiments.'), path


def test_the_main_command_has_ten_clean_seeds(repo_outputs):
  # README's claim covers the spread a user meets: ten seeds, each run
  # recorded from its manifest, from a clean tree.
  groups, _ = repo_outputs
  main = groups['act/parity']
  assert sorted(r['seed'] for r in main) == list(range(10))
  assert {r['steps'] for r in main} == {300_000}
  assert all(r['starts'] and not r['problems'] for r in main)
  assert {r['command'].split(' --workdir')[0] for r in main} == {
      f'python -m experiments.act_parity --tau=0.01 --seed={s}'
      for s in range(10)}


# ----------------------------------------------------------------------------
# The record of a run.


def _workdir(root: pathlib.Path, seed=3, resumed=False) -> pathlib.Path:
  """A finished run's files: metrics, flags, two TensorBoard segments when
  ``resumed``, a difficulty table."""
  root.mkdir(parents=True)
  lines = []
  for i, step in enumerate(range(100, 1100, 100)):
    lines.append({'step': step, 'time': 1000.0 + 10 * i,
                  'train_loss': 0.5, 'sequence_error': 0.5 - 0.04 * i,
                  'ponder': 2.0 + 0.1 * i, 'steps_per_sec': 50.0})
  lines.append(dict(lines[-1], sequence_error=0.1))  # step 1000 re-evaluated
  (root / 'metrics.jsonl').write_text(
      ''.join(json.dumps(x) + '\n' for x in lines))
  (root / 'flags.json').write_text(json.dumps({'seed': seed, 'tau': 0.01}))
  tb = root / 'tensorboard'
  tb.mkdir()
  (tb / 'events.out.tfevents.995.host').write_text('')
  if resumed:
    (tb / 'events.out.tfevents.1045.host').write_text('')
  (root / 'difficulty.csv').write_text(
      'difficulty,sequence_error,ponder\n1,0.0,3.000000238418579\n2,0.25,3.5\n')
  return root


def test_make_record(tmp_path):
  wd = _workdir(tmp_path / 'seed=3')
  record = records.make_record(
      wd, command='python -m experiments.act_parity --seed={seed}',
      commit='a' * 40, machine_info={'name': 'M', 'cpu': 'x', 'cores': 2},
      versions_info={'python': '3.11', 'jax': '0.10'}, max_points=4)
  assert record['command'] == 'python -m experiments.act_parity --seed=3'
  assert record['binary'] == 'act_parity' and record['seed'] == 3
  assert record['steps'] == 1000 and record['wall_s'] == 95.0
  # The re-evaluated step keeps its last line; the curve is held-out only.
  assert record['final']['sequence_error'] == 0.1
  assert [p['step'] for p in record['curve']] == [100, 400, 700, 1000]
  assert set(record['curve'][0]) == {'step', 'sequence_error', 'ponder'}
  assert record['tables']['difficulty'] == [
      {'difficulty': 1, 'sequence_error': 0.0, 'ponder': 3.0},
      {'difficulty': 2, 'sequence_error': 0.25, 'ponder': 3.5}]
  text = records.record_text(record)
  assert json.loads(text)['seed'] == 3
  # One line per curve point.
  assert '\n  {"ponder": 2.0, "sequence_error": 0.5, "step": 100},\n' in text


def test_wall_seconds_adds_the_segments_of_a_resumed_run(tmp_path):
  wd = _workdir(tmp_path / 'run', resumed=True)
  rows = records.read_metrics(wd)
  # 995 -> 1040 (the evaluations before the restart), 1045 -> 1090.
  assert records.wall_seconds(wd, rows) == 45.0 + 45.0
  assert records.wall_seconds(tmp_path, rows) is None


def test_seed_entry_of_a_multi_seed_binary(tmp_path):
  wd = _workdir(tmp_path / 'model' / 'seed=1', seed=None)
  (tmp_path / 'model' / 'results.json').write_text(json.dumps({
      'model': 'ei_rehn20', 'test_mse_e3': {'mean': 1.0, 'std': 0.1},
      'seeds': [{'seed': 0, 'test': {'mse': 2.0}},
                {'seed': 1, 'test': {'mse': 3.0}}]}))
  record = records.make_record(wd, command='python -m experiments.x',
                               commit='b' * 40, machine_info={},
                               versions_info={})
  assert record['seed'] == 1
  assert record['results']['test'] == {'mse': 3.0}
  assert record['results']['shared'] == {
      'model': 'ei_rehn20', 'test_mse_e3': {'mean': 1.0, 'std': 0.1}}


def test_find_runs_and_names(tmp_path):
  for s in (0, 1):
    _workdir(tmp_path / 'runs' / f'seed={s}')
  runs = records.find_runs(tmp_path / 'runs')
  assert [records.run_name(r, tmp_path / 'runs') for r in runs] == [
      'seed=0', 'seed=1']
  assert records.find_runs(runs[0]) == [runs[0]]
  with pytest.raises(ValueError, match='no metrics.jsonl under'):
    records.find_runs(tmp_path / 'empty')


def test_thin_keeps_the_ends():
  rows = [{'step': i} for i in range(10)]
  assert [r['step'] for r in records.thin(rows, 4)] == [0, 3, 6, 9]
  assert records.thin(rows[:3], 4) == rows[:3]
  with pytest.raises(ValueError, match='max_points'):
    records.thin(rows, 1)


def test_mean_std_and_seeds_text():
  assert records.mean_std([1.0, None, 3.0]) == (2.0, pytest.approx(2 ** .5),
                                                2)
  assert records.mean_std([4.0]) == (4.0, None, 1)
  with pytest.raises(ValueError):
    records.mean_std([None])
  assert records.seeds_text([{'seed': s} for s in (2, 0, 1)]) == 'seeds 0-2'
  assert records.seeds_text([{'seed': s} for s in (0, 2)]) == 'seeds 0, 2'
  assert records.seeds_text([{'seed': 5}]) == 'seed 5'
  assert records.span_text([5, 3, 4, 4]) == '3-5'
  assert records.span_text([2]) == '2'


# ----------------------------------------------------------------------------
# Generated files and blocks.


def test_outputs_round_trip_and_staleness(tmp_path):
  drawn = []

  def draw(path):
    drawn.append(path)
    path.write_text('<svg/>')

  outs = [records.Output('p/table.md', '| a |\n'),
          records.Output('p/fig.svg', draw=draw, data={'x': [1, 2]})]
  records.write_outputs(outs, tmp_path)
  assert drawn == [tmp_path / 'p' / 'fig.svg']
  assert records.stale_outputs(outs, tmp_path) == []
  changed = [records.Output('p/table.md', '| b |\n'),
             records.Output('p/fig.svg', draw=draw, data={'x': [1, 3]})]
  assert records.stale_outputs(changed, tmp_path) == [
      'p/table.md: text differs from the records',
      'p/fig.svg: drawn from other inputs than the records']
  (tmp_path / 'p' / 'old.md').write_text('x')
  assert records.stale_outputs(outs, tmp_path) == [
      'p/old.md: no record makes it']
  # Rewriting removes what no output names.
  records.write_outputs(outs, tmp_path)
  assert not (tmp_path / 'p' / 'old.md').exists()


def test_fill_blocks():
  text = ('a\n<!-- generated: x/y begin -->\nold\n'
          '<!-- generated: x/y end -->\nb\n')
  assert records.marked_blocks(text) == {'x/y': 'old\n'}
  new = records.fill_blocks(text, {'x/y': 'new 1%\n'})
  assert records.marked_blocks(new) == {'x/y': 'new 1%\n'}
  assert new.startswith('a\n') and new.endswith('end -->\nb\n')
  with pytest.raises(ValueError, match='no generated fragment'):
    records.fill_blocks(text, {})


def test_record_binary(tmp_path):
  _workdir(tmp_path / 'runs' / 'seed=0', seed=0)
  _workdir(tmp_path / 'runs' / 'seed=1', seed=1)
  out = tmp_path / 'records' / 'act' / 'parity'
  proc = _binaries.run('record', [
      f'--workdir={tmp_path / "runs"}', f'--out={out}', '--machine=M',
      '--commit=' + 'c' * 40,
      '--command=python -m experiments.act_parity --tau=0.01 --seed={seed}'])
  # Runs without a manifest are refused, with the reason, unless forced.
  assert proc.returncode == 2 and 'no manifest.jsonl' in proc.stderr
  assert not out.exists()
  proc = _binaries.run('record', [
      f'--workdir={tmp_path / "runs"}', f'--out={out}', '--machine=M',
      '--commit=' + 'c' * 40, '--force',
      '--command=python -m experiments.act_parity --tau=0.01 --seed={seed}'])
  assert proc.returncode == 0, proc.stderr
  assert sorted(p.name for p in out.iterdir()) == ['seed=0.json',
                                                   'seed=1.json']
  record = json.loads((out / 'seed=1.json').read_text())
  assert record['command'].endswith('--seed=1')
  assert record['machine']['name'] == 'M' and record['dirty'] is False
  assert record['starts'] == [] and 'no manifest.jsonl' in record[
      'problems'][0]
  assert records.read_records(tmp_path / 'records')['act/parity'][1][
      'path'] == 'act/parity/seed=1.json'


def _act_record(seed, error, ponder=3.0, steps=300_000, wall=100.0):
  return {'seed': seed, 'steps': steps, 'wall_s': wall, 'commit': 'd' * 40,
          'machine': {'name': 'M', 'cores': 2, 'cpu': 'x'},
          'versions': {'python': '3.11', 'jax': '0.10', 'flax': '0.12',
                       'optax': '0.2'},
          'final': {'sequence_error': error, 'ponder': ponder,
                    'steps_per_sec': 10.0},
          'curve': [{'step': steps, 'sequence_error': error}]}


def test_act_headline_counts_seeds_and_decides_by_its_criterion():
  from experiments.reports.act import results as act_results
  main = [_act_record(0, 0.01), _act_record(1, 0.05)]
  text = act_results.main_command_text(main, [])
  assert '**3.00% ± 2.83%**' in text and 'per seed 1.0% / 5.0%' in text
  assert "1 of 2 seeds end below the paper's 5%" in text
  assert 'verdict: **undecided**' in text     # two seeds: too few
  main = [_act_record(s, e) for s, e in enumerate((0.01, 0.012, 0.008))]
  text = act_results.main_command_text(main, [_act_record(0, 0.4)])
  assert 'verdict: **holds**' in text and '95% interval' in text
  assert 'without ACT' in text and 'stays at 40.00%' in text
  wide = [_act_record(s, e) for s, e in enumerate((0.01, 0.09, 0.02))]
  assert 'verdict: **within noise**' in act_results.main_command_text(
      wide, [])


def test_act_gpu_run_is_a_curve_with_its_device_and_note():
  from experiments.reports.act import results as act_results
  run = _act_record(0, 0.777, steps=6000)
  run['curve'] = [{'step': 100, 'sequence_error': 0.821, 'ponder': 2.77},
                  {'step': 6000, 'sequence_error': 0.777, 'ponder': 5.68}]
  run['starts'] = [{'device': {'kind': 'NVIDIA H200', 'platform': 'gpu'}}]
  run['note'] = 'Stopped by the time limit.'
  text = act_results.curve_table(run)
  assert '| 6,000 | 77.7% | 5.68 |' in text
  assert 'Device: NVIDIA H200. Stopped by the time limit.' in text
  outs = act_results.outputs({act_results.MAIN: [_act_record(0, 0.01)],
                              act_results.ADDITION_GPU: [run]})
  gpu, = [o for o in outs if o.path == 'act/addition_h200.md']
  assert gpu.text.startswith('| step | sequence error | ponder |')


def test_act_ponder_slope_from_the_difficulty_report():
  from experiments.reports.act import results as act_results
  run = {'tables': {'difficulty': [
      {'difficulty': d, 'sequence_error': 0.0, 'ponder': 3 + 0.5 * d}
      for d in range(1, 5)]}}
  assert act_results.difficulty_slope(run) == 0.5
  assert act_results.difficulty_slope({'tables': {}}) is None
  # A network that solves the short inputs in 3 steps and ponders 50 steps
  # at chance on the long ones has a steep slope overall and none over
  # what it solves: Fig. 6's growth is read over the latter.
  rows = [{'difficulty': d, 'ponder': 3.0 if d <= 32 else 50.0,
           'sequence_error': 0.0 if d <= 32 else 0.5} for d in range(1, 65)]
  jump = {'tables': {'difficulty': rows}}
  assert act_results.difficulty_slope(jump) > 0.5
  assert act_results.solved_slope(jump) == 0.0
  rows[0]['sequence_error'] = 0.5
  assert act_results.solved_slope(
      {'tables': {'difficulty': rows[:2]}}) is None



def test_act_tau_sweep_pools_by_tau_and_decides_each_claim(tmp_path):
  from experiments.reports.act import results as act_results

  def run(seed, tau, error, slope):
    r = _act_record(seed, error)
    r['flags'] = {'tau': tau}
    r['tables'] = {'difficulty': [
        {'difficulty': d, 'sequence_error': error, 'ponder': 3 + slope * d}
        for d in (1, 32, 64)]}
    return r
  groups = {
      act_results.MAIN: [run(s, 0.01, 0.01 + s / 1000, 0.002)
                         for s in range(3)],
      'act/parity_tau1e-3': [run(s, 1e-3, 0.02, 0.05) for s in range(3)],
      'act/parity_tau1e-1': [run(s, 0.1, 0.3, 0.0) for s in range(2)],
      act_results.NO_ACT: [run(0, 0.01, 0.45, 0.0)]}
  sweep = act_results.sweep_groups(groups)
  assert [t for t, _ in sweep] == [1e-3, 0.01, 0.1]
  table = act_results.sweep_table(sweep, groups[act_results.NO_ACT])
  assert '| 0.001 | seeds 0-2 | 300k | 2.00% ± 0.00% |' in table
  assert '| no ACT | seed 0 |' in table
  text = act_results.sweep_verdicts(sweep)
  # The bound is judged at tau <= 0.03 only; growth at every tau.
  assert 'τ = 0.1: error below' not in text
  assert '| τ = 0.001: error below 5% | Fig. 4 | **holds**' in text
  grows = '| τ = {}: ponder grows by more than one step across 1-64 bits | '
  assert grows.format('0.001') + 'Fig. 6 | **holds**' in text
  assert grows.format('0.01') + 'Fig. 6 | **does not hold**' in text
  assert grows.format('0.1') + 'Fig. 6 | **undecided**' in text
  # A ponder that is the same at every number of bits on every seed is an
  # inert halting unit: not testable here.
  flat = [run(s, 0.01, 0.01, 0.0) for s in range(3)]
  v = act_results._growth_verdict(flat)
  assert v.label == 'not testable here' and 'inert' in v.evidence
  # Fig. 5: ponder falls as tau rises, judged once every tau has 3 seeds.
  assert ('| the lower τ, the longer the ponder | Fig. 5, right | '
          '**undecided**') in text
  assert ('| the lower τ, the lower the error | Fig. 5, Sec. 3.1 | '
          '**undecided**') in text
  ponders = {1e-3: 9.0, 0.01: 3.0, 0.1: 1.0}
  for runs in groups.values():
    for r in runs:
      r['final']['ponder'] = ponders[r['flags']['tau']] + r['seed'] / 100
  groups['act/parity_tau1e-1'].append(run(2, 0.1, 0.3, 0.0))
  groups['act/parity_tau1e-1'][-1]['final']['ponder'] = 1.02
  text = act_results.sweep_verdicts(act_results.sweep_groups(
      {k: v for k, v in groups.items() if k != act_results.NO_ACT}))
  assert ('| the lower τ, the longer the ponder | Fig. 5, right | '
          '**holds** | τ = 0.001 9.01 ± 0.01 > τ = 0.01 3.01 ± 0.01 > '
          'τ = 0.1 1.01 ± 0.01 |') in text
  # Error: tau 1e-3 (2%) is worse than 0.01 (1.1%), out of the paper's
  # order although both are far below tau 0.1.
  assert ('| the lower τ, the lower the error | Fig. 5, Sec. 3.1 | '
          '**does not hold** | τ = 0.001 2.00% ± 0.00% > '
          'τ = 0.01 1.10% ± 0.10% < τ = 0.1 30.00% ± 0.00% |') in text
  # Fig. 6's order of slopes counts only the tau below 5% error: 1e-3 and
  # 0.01 here, whose slopes (0.05 against 0) are in the paper's order.
  assert ('| the lower τ, the steeper the growth of ponder with difficulty '
          '| Fig. 6 | **holds** | τ = 0.001 0.0500 ± 0.0000 > '
          'τ = 0.01 0.0020 ± 0.0000 |') in text
  assert 'τ = 0.1 0.0000' not in text.split('steeper')[1]
  # Fig. 6 is judged over the seeds that solve parity only: a failing
  # seed's slope does not count, and with fewer than 3 solving seeds the
  # claim is not testable here.
  failing = [run(0, 3e-3, 0.02, 0.002), run(1, 3e-3, 0.02, 0.002),
             run(2, 3e-3, 0.4, 0.5)]
  v = act_results._growth_verdict(failing)
  assert v.label == 'not testable here'
  assert v.evidence.startswith('2 of 3 seeds solve parity')
  v = act_results._growth_verdict(failing[:2] + [run(2, 3e-3, 0.01, 0.002)])
  assert v.label == 'does not hold' and v.evidence.startswith(
      '3 of 3 seeds solve')
  outs = {o.path: o for o in act_results.outputs(groups)}
  assert {'act/tau_sweep.md', 'act/tau_sweep_verdicts.md',
          'act/tau_sweep.svg'} <= set(outs)
  outs['act/tau_sweep.svg'].draw(tmp_path / 'sweep.svg')
  assert (tmp_path / 'sweep.svg').read_text().startswith('<?xml')
  # Fig. 6: one column per tau, each seed's ponder and error per difficulty.
  fig6 = outs['act/tau_sweep_difficulty.svg']
  assert list(fig6.data) == ['0.001', '0.01', '0.1']
  assert fig6.data['0.001']['seed 0'][-1] == [64, 0.02, 3 + 0.05 * 64]
  fig6.draw(tmp_path / 'fig6.svg')
  assert (tmp_path / 'fig6.svg').read_text().startswith('<?xml')
  # Without a sweep folder there is no sweep output.
  assert 'act/tau_sweep.md' not in {
      o.path for o in act_results.outputs({act_results.MAIN: groups[
          act_results.MAIN]})}


def test_act_sweep_bound_is_decided_over_every_tau_up_to_0_03():
  from experiments.reports.act import results as act_results

  def runs(tau, errors):
    out = []
    for seed, e in enumerate(errors):
      r = _act_record(seed, e)
      r['flags'] = {'tau': tau}
      out.append(r)
    return out
  low = [0.01, 0.012, 0.011]
  sweep = [(1e-3, runs(1e-3, low)), (0.01, runs(0.01, low)),
           (0.1, runs(0.1, [0.4] * 3))]          # 0.1 is not judged
  v = act_results.sweep_bound_verdict(sweep)
  assert v.label == 'holds'
  assert 'τ = 0.1' not in v.evidence
  mixed = sweep[:2] + [(0.03, runs(0.03, [0.3, 0.35, 0.4]))]
  assert act_results.sweep_bound_verdict(mixed).label == 'does not hold'
  noisy = sweep[:2] + [(0.03, runs(0.03, [0.01, 0.09, 0.02]))]
  assert act_results.sweep_bound_verdict(noisy).label == 'within noise'
  short = [(1e-3, runs(1e-3, low[:1])), (0.01, runs(0.01, low))]
  assert act_results.sweep_bound_verdict(short).label == 'undecided'
  text = act_results.summary_text(runs(0.01, low), [], sweep=sweep)
  assert ('every $\\tau \\le 0.03$ of the sweep, at 300k updates on one '
          'worker | Fig. 4 | **holds**') in text
  assert 'of the sweep' not in act_results.summary_text(
      runs(0.01, low), [], sweep=sweep[1:2])


def test_act_avx2_twin_is_paired_with_records_of_its_own_code():
  from experiments.reports.act import results as act_results

  def at(commit, seed, error):
    return {**_act_record(seed, error), 'commit': commit * 40}
  main = [at('a', s, 0.02) for s in range(3)]
  older = [at('b', s, 0.01) for s in range(3)]
  avx2 = [at('b', s, 0.01) for s in range(2)]
  assert act_results.same_code(avx2, main, older) is older
  assert act_results.same_code(avx2, main) == ()
  # Against records of other code there is no instruction-set sentence.
  assert 'AVX2' not in act_results.main_command_text(main, [], {}, avx2, ())
  text = act_results.main_command_text(main, [], {}, avx2, older)
  assert 'changed nothing: seeds 0, 1' in text

def test_tree_commit_dirty_ignores_excluded_folders(tmp_path):
  def git(*args):
    subprocess.run(['git', '-C', str(tmp_path), *args], check=True,
                   capture_output=True)
  git('init', '-q')
  (tmp_path / 'records').mkdir()
  (tmp_path / 'records' / 'a.json').write_text('{}')
  (tmp_path / 'code.py').write_text('x = 1\n')
  git('add', '.')
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'c')
  assert manifest.tree_commit(tmp_path)[1] is False
  (tmp_path / 'records' / 'a.json').write_text('{"new": 1}')
  assert manifest.tree_commit(tmp_path)[1] is True
  assert manifest.tree_commit(tmp_path, exclude=[tmp_path / 'records'])[
      1] is False
  (tmp_path / 'code.py').write_text('x = 2\n')
  assert manifest.tree_commit(tmp_path, exclude=[tmp_path / 'records'])[
      1] is True


def test_act_headline_and_summary_show_what_the_cpu_moves():
  from experiments.reports.act import results as act_results
  main = [_act_record(s, e) for s, e in enumerate((0.01, 0.012, 0.008))]
  avx2 = [_act_record(0, 0.05), _act_record(1, 0.012)]
  text = act_results.main_command_text(main, [], None, avx2)
  assert 'seeds 0, 1 end at 5.0% / 1.2% instead of 1.0% / 1.2%' in text
  same = [_act_record(0, 0.01), _act_record(1, 0.012)]
  text = act_results.main_command_text(main, [], None, same)
  assert 'changed nothing: seeds 0, 1 at commit' in text
  row = act_results.twin_row('x', 'AVX2 against AVX-512', avx2, main)
  assert len(row) == 2     # no verdict: not a claim of the paper
  assert 'final error 5.0% against 1.0% / 1.2% against 1.2%' in row[1]
  assert 'first evaluation that differs: 300k, none' in row[1]


def test_act_task_claims_pair_act_with_no_act_and_replace_the_summary_row(
    tmp_path):
  from experiments.reports.act import results as act_results
  from experiments.reports.act import task_claims

  def run(task_flags, seed, error, tau=None, slope=0.0, report=True):
    r = _act_record(seed, error, ponder=1.0 if tau is None else 4.0,
                    steps=20_000)
    r['flags'] = {'act': tau is not None, 'tau': tau or 0.001,
                  'hidden_size': 128, **task_flags}
    if report:
      r['tables'] = {'difficulty': [
          {'difficulty': d, 'sequence_error': error, 'ponder': 2 + slope * d}
          for d in range(1, 4)]}
    return r
  add = {'max_digits': 3, 'max_len': 3}
  gpu = run({'max_digits': 5, 'max_len': 5}, 0, 0.8, 1e-3, report=False)
  gpu['curve'][0]['ponder'] = 5.0
  groups = {
      act_results.MAIN: [_act_record(0, 0.01)],
      act_results.ADDITION_GPU: [gpu],
      'act/addition_d3n3_noact': [run(add, s, 0.10 + s / 100)
                                  for s in range(3)],
      'act/addition_d3n3_tau0.001': [run(add, s, 0.04, 1e-3, slope=1.0)
                                     for s in (2, 0, 1)],
      'act/addition_d3n3_tau0.01': [run(add, s, 0.10 + s / 100 + (
          0.01 if s == 1 else -0.01), 1e-2) for s in range(3)],
      'act/logic_tau0.001': [run({'num_gates': 10, 'max_len': 10}, 0, 0.002,
                                 1e-3, slope=1.0)],
  }
  table = task_claims.task_table(groups, task_claims.TASKS[1], exclude=(
      act_results.ADDITION_GPU,))
  # No ACT first; seeds in order; the GPU record is not a setting.
  assert table.index('`--act=false`') < table.index('`--tau=0.001`')
  assert ('| `--hidden_size=128` `--max_digits=3` `--max_len=3` | '
          '`--tau=0.001` | seeds 0-2 | 20,000 | 4.0% ± 0.0% | 4.0% / 4.0% / '
          '4.0% | 4.00 | 1.000 (95% CI 1.000 to 1.000; n = 3) | 1.000 (95% '
          'CI 1.000 to 1.000; n = 3) |') in table
  assert 'max_digits=5' not in table
  text = task_claims.task_verdicts(groups, task_claims.TASKS[1],
                                   exclude=(act_results.ADDITION_GPU,))
  assert ('addition, τ = 0.001: ACT improves the error (`--hidden_size=128` '
          '`--max_digits=3` `--max_len=3`) | Sec. 3.3, Fig. 12 | **holds** | '
          'better on 3 of 3 seeds') in text
  assert 'τ = 0.01: ACT improves the error' in text and (
      '**within noise** | better on 2 of 3 seeds') in text
  assert ('τ = 0.001: ponder grows by more than one step across the digits '
          'per number' in text
          and '**holds**' in text)
  # The growth is read over what a run solves: ponder that rises while the
  # network solves and falls where it fails at chance still grows.
  logic = groups['act/logic_tau0.001'][0]
  logic['tables']['difficulty'] = [
      {'difficulty': d, 'sequence_error': 0.0 if d <= 4 else 0.5,
       'ponder': 3.0 + d if d <= 4 else 12.0 - d} for d in range(1, 11)]
  assert task_claims.ponder_slope(logic) < 0
  assert task_claims.ponder_slope(logic, task_claims.SOLVED_ERROR) == 1.0
  logic_text = task_claims.task_verdicts(groups, task_claims.TASKS[0])
  assert '1 seed: fewer than 3' in logic_text.split('ponder grows')[1]
  assert '| 1.000 (n = 1) |' in task_claims.task_table(
      groups, task_claims.TASKS[0])
  # One logic seed: its bound is undecided, and it replaces the
  # not-recorded row of the summary; sort stays not recorded.
  summary = act_results.summary_text(groups[act_results.MAIN], [],
                                     groups=groups)
  assert ('| logic, τ = 0.001: virtually zero error (`--hidden_size=128` '
          '`--num_gates=10` `--max_len=10`) | Sec. 3.2, Fig. 8 | '
          '**undecided** | 1 seed: fewer than 3') in summary
  assert 'logic: virtually zero error' not in summary
  assert ('| sort: ACT improves the error | Sec. 3.4, Fig. 17 | '
          '**undecided**') in summary
  outs = {o.path: o for o in act_results.outputs(groups)}
  assert outs['act/sort.md'].text == 'No record yet.\n'
  assert 'act/sort_difficulty.svg' not in outs
  fig = outs['act/addition_difficulty.svg']
  assert list(fig.data) == [
      'no ACT, hidden_size=128 max_digits=3 max_len=3',
      'τ = 0.001, hidden_size=128 max_digits=3 max_len=3',
      'τ = 0.01, hidden_size=128 max_digits=3 max_len=3']
  fig.draw(tmp_path / 'addition.svg')
  assert (tmp_path / 'addition.svg').read_text().startswith('<?xml')
  assert 'ponder grows with the digits' not in summary


def test_act_flat_ponder_runs_sit_beside_the_main_command(tmp_path):
  from experiments.reports.act import results as act_results

  def run(seed, tau, error, slope, **flags):
    r = _act_record(seed, error, steps=flags.pop('steps', 300_000))
    r['flags'] = {'tau': tau, 'learning_rate': 1e-3, 'layout': 'prefix',
                  **flags}
    r['tables'] = {'difficulty': [
        {'difficulty': d, 'sequence_error': 0.0, 'ponder': 3 + slope * d}
        for d in (1, 32, 64)]}
    return r
  groups = {act_results.MAIN: [run(s, 0.01, 0.02, 0.0) for s in range(3)],
            'act/parity_lr1e-4_tau0.01': [run(0, 0.01, 0.01, 0.1,
                                              learning_rate=1e-4,
                                              steps=1_000_000)],
            'act/parity_random_tau0.01': [run(0, 0.01, 0.5, 0.0,
                                              layout='random')]}
  outs = {o.path: o for o in act_results.outputs(groups)}
  text = outs['act/flat_ponder.md'].text
  assert ('| 0.01 | learning rate changed | `--learning_rate=0.0001` '
          '`--layout=prefix` | seed 0 | 1000k | 1.00% | 3.00 ± 0.00 | '
          '0.1000 (n = 1) | 0.1000 (n = 1) |') in text
  assert ('| 0.01 | the main command settings | `--learning_rate=0.001` '
          '`--layout=prefix` | seeds 0-2 | 300k |') in text
  # The main command's row comes once per tau.
  assert text.count('the main command settings') == 1
  assert '| the reading of the data changed | `--learning_rate=0.001` ' in (
      text)
  assert list(outs['act/flat_ponder.svg'].data) == [
      'parity_lr1e-4_tau0.01, seed 0', 'parity_random_tau0.01, seed 0']
  outs['act/flat_ponder.svg'].draw(tmp_path / 'flat.svg')
  assert (tmp_path / 'flat.svg').read_text().startswith('<?xml')
  # Not a sweep folder: tau 0.01 keeps the main command's seeds only.
  assert [len(r) for _, r in act_results.sweep_groups(groups)] == [3]


def test_act_paper_learning_rate_runs_are_judged_per_tau():
  from experiments.reports.act import results as act_results

  def at(tau, seed):
    run = _act_record(seed, 0.01, steps=1_000_000)
    run['flags'] = {**run.get('flags', {}), 'tau': tau,
                    'learning_rate': 0.0001}
    return run
  groups = {'act/parity_lr1e-4_tau0.001': [at(0.001, s) for s in range(3)],
            'act/parity_lr1e-4_tau0.01': [at(0.01, 0)],
            'act/parity_tau0.001': [at(0.001, 5)]}
  taus = act_results.paper_lr_groups(groups)
  assert [(tau, len(runs)) for tau, runs in taus] == [(0.001, 3), (0.01, 1)]
  text = act_results.sweep_verdicts(taus)
  assert '| τ = 0.001: error below 5% | Fig. 4 | **holds** |' in text
  assert '| τ = 0.01: error below 5% | Fig. 4 | **undecided** |' in text
  summary = act_results.summary_text([at(0.01, s) for s in range(3)], [],
                                     groups=groups)
  rows = [line for line in summary.splitlines()
          if line.startswith('| parity at the paper')]
  assert len(rows) == 2 and all('[flat ponder]' in row for row in rows)


def test_act_runtime_says_whether_the_runs_ran_alone():
  from experiments.reports.act import results as act_results

  def run(*loads):
    r = _act_record(0, 0.01)
    r['machine'] = {'name': 'CPU-2'}
    r['starts'] = [{'load': [x, x, x]} for x in loads]
    return r
  assert act_results._machine_load_text([run(0.1), run(0.2, 0.3)]) == (
      'CPU-2, each run alone (load at every start below 0.5)')
  assert 'beside other jobs (load at the start up to 3.2)' in (
      act_results._machine_load_text([run(0.1), run(3.2)]))
  old = _act_record(1, 0.01)
  old['machine'] = {'name': 'CPU-2'}
  assert 'the load at the start was not recorded' in (
      act_results._machine_load_text([run(0.1), old]))
