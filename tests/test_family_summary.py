"""experiments.reports.family.summary and experiments/family_summary."""

import csv
import json
import pathlib

import _binaries
import pytest

from experiments.reports import results as papers_results
from experiments.reports.family import conclusions, summary
from experiments.reports.family import results as family_results


def _by_count(acc_train, acc_test, steps):
  return [{'count': 1, 'split': 'train', 'accuracy': acc_train,
           'ponder': steps, 'steps': steps},
          {'count': 2, 'split': 'test', 'accuracy': acc_test,
           'ponder': steps + 1, 'steps': steps + 1}]


_PN = {'cell': 'gru', 'hidden_size': 8, 'kl': 'paper',
       'ponder_epsilon': 0.05, 'lambda_p': 0.2, 'beta': 0.01}
_SETUP = dict(setting='extrapolation', bits=2, layout='random', updates=100)


def _write_runs(root):
  """Two PonderNet seeds (one solves its training range), one ACT run,
  two adding-task runs."""
  runs = {
      'par/pn_s0': {'method': 'pondernet', **_SETUP, 'seed': 0,
                    'model': _PN, 'accuracy': 0.6, 'ponder': 4.0,
                    'steps': 4.0, 'multiplications': 400.0,
                    'training_range_accuracy': 1.0,
                    'sample_accuracy': 0.5, 'last_step_mass': 0.1,
                    'seconds_per_update': 0.01,
                    'by_count': _by_count(1.0, 0.6, 4.0)},
      'par/pn_s1': {'method': 'pondernet', **_SETUP, 'seed': 1,
                    'model': _PN, 'accuracy': 0.8, 'ponder': 6.0,
                    'steps': 6.0, 'multiplications': 600.0,
                    'training_range_accuracy': 0.8,
                    'sample_accuracy': 0.7, 'last_step_mass': 0.3,
                    'seconds_per_update': 0.03,
                    'by_count': _by_count(0.8, 0.8, 6.0)},
      # An older run without training_range_accuracy: the per-count mean.
      'par/act_s0': {'method': 'act', **_SETUP, 'seed': 0,
                     'model': {'cell': 'gru', 'hidden_size': 8, 'tau': 0.01},
                     'accuracy': 0.5, 'ponder': 2.0, 'steps': 1.0,
                     'multiplications': 100.0, 'seconds_per_update': 0.002,
                     'by_count': _by_count(0.5, 0.5, 2.0)},
      'add/skip': {'model': 'skip_lstm', 'seed': 0, 'updates': 10,
                   'spec': {'budget': 1e-3},
                   'valid': {'mse': 2e-3, 'mse_over_baseline': 0.012,
                             'update_fraction': 0.4}},
      'add/lstm': {'model': 'lstm', 'seed': 0, 'updates': 10,
                   'spec': {'budget': 1e-4},
                   'valid': {'mse': 1e-3, 'mse_over_baseline': 0.006,
                             'update_fraction': 1.0}},
  }
  for name, results in runs.items():
    (root / name).mkdir(parents=True)
    (root / name / 'results.json').write_text(json.dumps(results))
  return runs


def test_rows_aggregate_and_table(tmp_path):
  _write_runs(tmp_path)
  runs = summary.read_runs(tmp_path)
  assert [r['run'] for r in runs] == ['add/lstm', 'add/skip', 'par/act_s0',
                                      'par/pn_s0', 'par/pn_s1']
  parity = summary.parity_rows(runs)
  pn_grid = 'kl=paper eps=0.05 lambda_p=0.2 beta=0.01'
  assert [(r['method'], r['grid'], r['training_range_accuracy'])
          for r in parity] == [('act', 'tau=0.01', 0.5),
                               ('pondernet', pn_grid, 1.0),
                               ('pondernet', pn_grid, 0.8)]
  setup = 'extrapolation, 2 elements (train 1-1), random, gru 8, 100 updates'
  assert {r['setup'] for r in parity} == {setup}
  assert summary.setup_slug(parity[0]) == 'extrapolation_2_random_gru8'
  adding = summary.adding_rows(runs)
  # A plain LSTM has no budget, whatever its spec says.
  assert [(r['model'], r['budget'], r['vc_target']) for r in adding] == [
      ('lstm', None, None), ('skip_lstm', 1e-3, None)]
  lines = summary.parity_table(parity).splitlines()
  assert lines[0].startswith('| method | grid | seeds | training range | '
                             'solved / undecided / not (Wilson, 0.95) | '
                             'test range (solved seeds) | '
                             'steps | mults / input | ms / update |')
  # Stage two only for the seeds that solved the training range: ACT none
  # (not judged), PonderNet seed 0 alone (0.6, not the mean 0.7).
  assert lines[2] == ('| act | tau=0.01 | 1 | 0.5 | 0 / 0 / 1 | not judged: '
                      'training range not learned | 1 | 100 | 2 | - | - |')
  assert lines[3] == (f'| pondernet | {pn_grid} | 2 | 0.9 ± 0.14 | '
                      '1 / 0 / 1 | '
                      '0.6 | 5 ± 1.4 | 500 ± 141 | 20 ± 14 | '
                      '0.6 ± 0.14 | 0.2 ± 0.14 |')
  points = summary.pareto_points(parity)
  assert points[1] == {'label': f'pondernet {pn_grid}', 'method': 'pondernet',
                       'multiplications': 500.0, 'accuracy': 0.9,
                       'test_accuracy': 0.6}
  assert points[0]['test_accuracy'] is None


def test_by_count_means_average_the_seeds(tmp_path):
  _write_runs(tmp_path)
  runs = summary.read_runs(tmp_path)
  setup = summary.parity_rows(runs)[0]['setup']
  series = summary.by_count_means(runs, setup)
  pn_label = 'pondernet kl=paper eps=0.05 lambda_p=0.2 beta=0.01'
  assert list(series) == ['act tau=0.01', pn_label]
  pn = series[pn_label]
  assert [r['split'] for r in pn] == ['train', 'test']
  assert pn[0]['accuracy'] == pytest.approx(0.9)
  assert pn[1]['steps'] == pytest.approx(6.0)
  assert summary.by_count_means(runs, 'another setup') == {}


def test_read_runs_refuses_an_empty_directory(tmp_path):
  with pytest.raises(ValueError, match='no results.json under'):
    summary.read_runs(tmp_path)


def test_binary_writes_tables_and_figures(tmp_path):
  _write_runs(tmp_path / 'runs')
  out = tmp_path / 'out'
  proc = _binaries.run('family_summary', [
      f'--runs={tmp_path / "runs"}', f'--out={out}'])
  assert proc.returncode == 0, proc.stderr
  with open(out / 'adding_runs.csv', encoding='utf-8') as f:
    rows = list(csv.DictReader(f))
  assert [(r['model'], r['update_fraction']) for r in rows] == [
      ('lstm', '1.0'), ('skip_lstm', '0.4')]
  with open(out / 'parity_runs.csv', encoding='utf-8') as f:
    assert len(list(csv.DictReader(f))) == 3
  text = (out / 'summary.md').read_text()
  assert '## Parity' in text and '## Adding task' in text
  assert '| skip_lstm | 0.001 | - | 2.00e-03 |' in text
  for png in ('error_vs_updates.png',
              'by_count_extrapolation_2_random_gru8.png',
              'compute_extrapolation_2_random_gru8.png'):
    assert (out / png).stat().st_size > 0
  # A directory that does not exist: one line, status 2.
  proc = _binaries.run('family_summary',
                              [f'--runs={tmp_path / "missing"}'])
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines() == [
      f'family_summary: error: --runs: no such directory: '
      f'{tmp_path / "missing"}']


def test_solved_uses_the_wilson_interval():
  # 999 of 1,000: the interval is above 0.95; 955 of 1,000 reaches below
  # it; 930 is under it; 96 of 100 is too few vectors to tell.
  assert summary.solved(0.999) == 'solved'
  assert summary.solved(0.955) == 'undecided'
  assert summary.solved(0.93) == 'not solved'
  assert summary.solved(0.96, 100) == 'undecided'
  assert summary.solved_counts(['solved', 'not solved', 'solved']) == (
      '2 / 0 / 1')


def _record(name, seed, results, curve=(), paper='family'):
  return {'path': f'{paper}/{name}/seed={seed}.json', 'seed': seed,
          'commit': 'abcdef0123456789', 'machine': {'name': 'M'},
          'versions': {'python': '3'}, 'command': 'python -m experiments.x',
          'results': results, 'curve': list(curve)}


def _parity(method, seed, accuracy, *, mults=100.0, slope=0.0, **model):
  by_count = [{'count': c, 'split': 'both', 'accuracy': accuracy,
               'ponder': 1.0, 'steps': 2.0 + slope * c} for c in (1, 2, 3)]
  return {'method': method, 'setting': 'interpolation', 'bits': 3,
          'layout': 'random', 'updates': 10, 'seed': seed,
          'model': {'cell': 'gru', 'hidden_size': 8, 'max_steps': 20,
                    **model},
          'accuracy': accuracy, 'training_range_accuracy': accuracy,
          'steps': 2.0, 'capped': 0.0, 'multiplications': mults,
          'train': {'steps': 3.0}, 'by_count': by_count}


def _groups():
  """ACT at tau 1e-3 with one seed at 0.955 (undecided), ACT at 1e-2 not
  solved, Repeat-RNN cheaper on every seed, PonderNet's two KL variants
  with opposite slopes, ACT's binary at 90k, the LSTM on the adding
  task."""
  accs = {'interp16_act_tau1e-3': (0.999, 0.999, 0.955),
          'interp16_act_tau1e-2': (0.6, 0.62, 0.58),
          'interp16_repeat_rho2': (1.0, 0.999, 0.998)}
  groups = {f'family/{name}': [
      _record(name, s, _parity(name.split('_')[1], s, a,
                               mults=30.0 if 'repeat' in name else 120.0,
                               tau=0.001, rho=2))
      for s, a in enumerate(values)] for name, values in accs.items()}
  for name, slope, kl in (('interp16_pondernet_paper', -0.5, 'paper'),
                          ('interp16_pondernet_reverse', 0.5, 'reverse')):
    groups[f'family/{name}'] = [
        _record(name, s, _parity('pondernet', s, 0.999, slope=slope, kl=kl))
        for s in range(3)]
  groups['act/parity'] = [
      _record('parity', s, {}, [{'step': 90_000, 'sequence_error': e}],
              paper='act') for s, e in enumerate((0.03, 0.2, 0.2))]
  groups['family/adding_lstm'] = [
      _record('adding_lstm', s, {'model': 'lstm', 'seed': s, 'updates': 10,
                                 'spec': {}, 'valid': {
                                     'mse': 1e-3, 'mse_over_baseline': r,
                                     'update_fraction': 1.0}})
      for s, r in enumerate((0.010, 0.012, 0.011))]
  return groups


def test_conclusions_follow_from_the_records():
  claims = {c.claim: c for c in conclusions.conclusion_claims(_groups())}

  def label(start):
    (claim,) = [c for text, c in claims.items() if text.startswith(start)]
    return claim.verdict.label

  # One seed undecided at 0.955: not "holds" on every seed.
  assert label('ACT solves parity interpolation') == 'within noise'
  assert 'interp16_act_tau1e-3: 2 / 1 / 0' in claims[next(
      c for c in claims if c.startswith('ACT solves parity'))].here
  assert label('ACT at tau 1e-2 does not solve') == 'holds'
  assert label('Repeat-RNN (rho 2) needs fewer multiplications per input '
               'than ACT') == 'holds'
  assert label('PonderNet\'s halting steps grow with difficulty: the '
               'paper\'s KL with') == 'does not hold'
  assert label('PonderNet\'s halting steps grow with difficulty: reverse '
               'KL, eps stop off (interp') == 'holds'
  # Two of the four KL x eps variants only: no verdict on which sets the
  # slope, and the row says what is missing.
  factors = claims['interp16: the KL direction, not the eps stop, sets the '
                   'slope of PonderNet\'s halting steps']
  assert factors.verdict.label == 'undecided'
  assert 'needs the four variants' in factors.cells()[2]
  assert label('ACT\'s own binary') == 'within noise'
  assert '1 of 3 seeds strictly below 5.00% sequence error' in claims[next(
      c for c in claims if c.startswith('ACT\'s own binary'))].here
  assert label('adding_lstm: at (nearly) full') == 'holds'
  # No records of a group: fewer than three seeds, undecided.
  assert label('PonderNet solves ACT\'s setting') == 'undecided'
  # No two rows make the same claim.
  texts = [c.claim for c in conclusions.conclusion_claims(_groups())]
  assert len(texts) == len(set(texts))
  # No row of the table may break it.
  table = conclusions.conclusions(_groups())
  rows = table.split('\n\n')[0].splitlines()
  assert all(line.count(' | ') == 4 for line in rows
             if not line.startswith('| ---'))


def test_outputs_show_the_verification_status():
  groups = _groups()
  texts = {o.path: o.text for o in family_results.outputs(groups)}
  assert 'family/conclusions.md' in texts
  parity = texts['family/parity_interpolation_3_random_gru8.md']
  assert 'Not verified against today\'s code' in parity
  assert 'step cap, evaluation' in parity
  status = {'status': 'current', 'record_commit': 'abcdef0',
            'verified_at': '1234567abc', 'seed': 0, 'step': 10}
  texts = {o.path: o.text for o in family_results.outputs(
      groups, {'family/interp16_act_tau1e-2': status})}
  parity = texts['family/parity_interpolation_3_random_gru8.md']
  assert 'Verification of interp16_act_tau1e-2: **Current**' in parity
  assert 'Verification of adding_lstm: Not verified' in texts[
      'family/adding.md']


def test_the_page_types_no_result():
  page = pathlib.Path(__file__).parents[1] / 'docs/results/family.md'
  assert papers_results.typed_results(page.read_text()) == []


def test_one_factor_claims_separate_the_kl_direction_from_the_eps_stop():
  # Slopes: the stop off steepens under both directions; the direction
  # changes nothing (one seed of each pair ties).
  slopes = {'pondernet_paper': (0.10, 0.11, 0.12),
            'pondernet_paper_noeps': (0.50, 0.52, 0.51),
            'pondernet_reverse_eps': (0.10, 0.13, 0.11),
            'pondernet_reverse': (0.51, 0.50, 0.52)}
  groups = {}
  for variant, values in slopes.items():
    name = f'interp16_{variant}'
    groups[f'family/{name}'] = [
        _record(name, s, _parity('pondernet', s, 0.999, slope=v))
        for s, v in enumerate(values)]
  claims = {c.claim.split(':')[1].split('steepens')[0].strip(): c.verdict
            for c in conclusions.conclusion_claims(groups)
            if c.claim.startswith('interp16: ') and 'steepens' in c.claim}
  assert claims['turning the eps stop off (the paper\'s KL)'].label == 'holds'
  assert claims['turning the eps stop off (reverse KL)'].label == 'holds'
  assert claims['reversing the KL (eps stop on)'].label != 'holds'
  assert claims['reversing the KL (eps stop off)'].label != 'holds'
  # Without the four variants: no verdict.
  del groups['family/interp16_pondernet_paper_noeps']
  rows = [c for c in conclusions.conclusion_claims(groups)
          if c.claim.startswith('interp16: the KL direction')]
  assert rows[0].verdict.label == 'undecided'


def test_lambda_claims_pair_each_prior_with_the_next():
  # Steps per input: lambda_p 0.1 above 0.2 on every seed; 0.2 and 0.4 tie.
  steps = {'pondernet_lambda0.1': (9.0, 9.5, 10.0),
           'pondernet_paper': (7.0, 7.4, 7.2),
           'pondernet_lambda0.4': (7.1, 7.3, 7.2)}
  groups = {}
  for variant, values in steps.items():
    name = f'interp16_{variant}'
    groups[f'family/{name}'] = []
    for seed, value in enumerate(values):
      results = _parity('pondernet', seed, 0.999)
      results['steps'] = value
      groups[f'family/{name}'].append(_record(name, seed, results))
  claims = [c for c in conclusions.conclusion_claims(groups)
            if c.claim.startswith('interp16: lambda_p')]
  assert [c.verdict.label for c in claims] == ['holds', 'within noise']
  assert 'lambda_p 0.1 instead of 0.2' in claims[0].claim
  del groups['family/interp16_pondernet_lambda0.4']
  rows = [c for c in conclusions.conclusion_claims(groups)
          if 'smaller lambda_p' in c.claim]
  assert rows[0].verdict.label == 'undecided'


def test_best_on_training_range_picks_by_the_training_range_only():
  groups = {}
  for name, train in (('extrap16_act_tau1e-3', 0.99),
                      ('extrap16_act_tau1e-2', 0.7)):
    groups[f'family/{name}'] = [
        _record(name, s, _parity('act', s, train)) for s in range(3)]
  assert conclusions.best_on_training_range(groups, 'extrap16', 'act') == (
      'extrap16_act_tau1e-3')
  assert conclusions.best_on_training_range(groups, 'extrap16',
                                            'pondernet') is None


def test_equal_compute_reads_the_curve_within_the_budget():
  curve = [{'step': s, 'training_range_accuracy': a}
           for s, a in ((5, 0.6), (10, 0.9))]
  repeat = {'method': 'repeat', 'train_cap': 2, 'updates': 10,
            'curve': curve, 'grid': 'rho=2'}
  act = {'method': 'act', 'train_steps': 4.0, 'updates': 10, 'curve': curve,
         'grid': 'tau=0.01'}
  assert summary.compute_budget([repeat, act]) == 20.0
  assert summary.equal_compute(repeat, 20.0) == 0.9
  assert summary.equal_compute(act, 20.0) == 0.6     # 5 updates x 4 steps
  assert summary.equal_compute(act, 10.0) is None


def test_a_stale_folder_marks_only_the_claims_that_read_it():
  groups = _groups()
  plain = {c.claim: c for c in conclusions.conclusion_claims(groups)}
  stale = sorted(g for g in groups if g.startswith('family/'))[0]
  marked = {c.claim: c for c in conclusions.conclusion_claims(
      groups, {stale: {'status': 'stale'}})}
  hit = [k for k, c in marked.items() if c.verdict.records == 'stale']
  assert hit and len(hit) < len(marked)
  for k in hit:
    assert stale in marked[k].folders
    assert marked[k].cells()[3].endswith('*stale records*')
    assert plain[k].verdict.records == 'current'


def _claims(groups):
  return {c.claim: c for c in conclusions.conclusion_claims(groups)}


def _only(claims, start):
  (claim,) = [c for text, c in claims.items() if text.startswith(start)]
  return claim


def test_solved_on_every_seed_is_a_seed_level_rule():
  # Two configurations solve on every seed, one fails on one seed: the
  # mean over seeds would clear 0.95, the seed-level rule does not.
  groups = {}
  for name, accs in (('interp16_act_tau1e-3', (0.999, 0.999, 0.999)),
                     ('interp16_act_tau1e-4', (0.999, 0.90, 0.999)),
                     ('interp16_repeat_rho2', (0.999, 0.999, 0.999))):
    groups[f'family/{name}'] = [
        _record(name, s, _parity(name.split('_')[1], s, a))
        for s, a in enumerate(accs)]
  claims = _claims(groups)
  row = _only(claims, 'Interpolation, 16 elements: every adaptive method')
  assert row.verdict.label == 'does not hold'
  assert 'seed-level rule' in row.verdict.criterion
  assert 'not solved: interp16_act_tau1e-4 seed 1 at 0.900' in (
      row.verdict.evidence)
  assert _only(claims, 'ACT solves parity interpolation').verdict.label == (
      'holds')



def test_a_seed_that_fails_while_still_learning_makes_it_not_testable():
  # ACT's 64-element setting: the failing seed's accuracy rises from 0.70
  # at half the run to 0.90 at its end (1,000 vectors: far beyond noise),
  # so the run was too short; the same seed flat over its second half
  # fails the claim.
  def claim(curve):
    groups = {'family/actset64_act_tau1e-2': [
        _record('actset64_act_tau1e-2', s, _parity('act', s, a),
                curve if s == 1 else ())
        for s, a in enumerate((0.999, 0.90, 0.999))]}
    return _only(_claims(groups), 'ACT with its tau 0.01 solves').verdict

  rising = [{'step': k * 10, 'training_range_accuracy': a}
            for k, a in ((1, 0.6), (2, 0.7), (3, 0.8), (4, 0.9))]
  got = claim(rising)
  assert got.label == 'not testable here'
  assert 'seed 1 0.700 at 20 -> 0.900 at 40' in got.evidence
  assert 'still learning' in got.criterion
  flat = [{**point, 'training_range_accuracy': min(
      point['training_range_accuracy'] + 0.2, 0.9)} for point in rising]
  assert claim(flat).label == 'does not hold'
  assert claim(()).label == 'does not hold'   # no curve: nothing says more

def test_as_accurate_as_is_read_against_a_margin():
  # The sampled rule half a point below the median rule on every seed:
  # inside the margin of one point, so it holds (it is not "more accurate").
  groups = {}
  for name in ('interp16_pondernet_paper', 'interp16_pondernet_reverse'):
    records_ = []
    for s, a in enumerate((0.997, 0.996, 0.998)):
      results = _parity('pondernet', s, a)
      results['sample_accuracy'] = a - 0.005
      records_.append(_record(name, s, results))
    groups[f'family/{name}'] = records_
  rows = [c for c in conclusions.conclusion_claims(groups)
          if c.claim.startswith('PonderNet\'s sampled halting rule')]
  assert [r.verdict.label for r in rows] == ['holds', 'holds']
  assert len({r.claim for r in rows}) == 2
  assert 'interp16_pondernet_paper: the paper\'s KL, eps stop on' in (
      rows[0].claim)
  assert 'within a margin of 0.01' in rows[0].verdict.criterion
  # Every accuracy interval stays inside [0, 1].
  for row in rows:
    for part in row.here.split('CI ')[1:]:
      assert float(part.split(' to ')[1].split(';')[0]) <= 1


def _extrap(accuracy_by_name):
  groups = {}
  for name, accs in accuracy_by_name.items():
    method = name.split('_')[1]
    groups[f'family/{name}'] = []
    for s, a in enumerate(accs):
      results = _parity(method, s, 0.999, kl='paper')
      results['accuracy'] = a
      groups[f'family/{name}'].append(_record(name, s, results))
  return groups


def test_extrapolation_at_chance_everywhere_is_not_testable():
  chance = {'extrap16_act_tau1e-3': (0.46, 0.50, 0.50),
            'extrap16_pondernet_paper': (0.50, 0.49, 0.51),
            'extrap16_pondernet_reverse': (0.49, 0.49, 0.51),
            'extrap16_rnn': (0.50, 0.50, 0.50)}
  claims = _claims(_extrap(chance))
  for start in ('PonderNet extrapolates: it solves',
                'ACT does not extrapolate',
                'PonderNet extrapolates better than ACT (',
                'PonderNet extrapolates better than ACT, each'):
    verdict = _only(claims, start).verdict
    assert verdict.label == 'not testable here', start
    assert 'at chance' in verdict.evidence
    assert 'extrap16_rnn 0.500' in verdict.evidence
  # One configuration off chance: the claims are judged.
  claims = _claims(_extrap({**chance,
                            'extrap16_pondernet_paper': (1.0, 1.0, 1.0)}))
  assert _only(claims, 'PonderNet extrapolates: it solves').verdict.label == (
      'does not hold')       # the reverse KL fails on every seed
  assert _only(claims, 'ACT does not extrapolate').verdict.label == 'holds'


def test_act_binary_counts_a_seed_at_the_bound_as_not_below():
  groups = {'act/parity': [
      _record('parity', s, {}, [{'step': 90_000, 'sequence_error': e}],
              paper='act') for s, e in enumerate((0.026, 0.05, 0.2))]}
  row = _only(_claims(groups), 'ACT\'s own binary')
  assert row.here.startswith('1 of 3 seeds strictly below 5.00%')
  assert 'at it, not below: seed 1 at 5.00%' in row.here


def test_adding_rows_keep_mse_positive_and_skip_lstm_not_testable():
  groups = {}
  for name, ratios in (('adding_lstm', (0.001, 0.03, 0.002)),
                       ('adding_skip_lstm_budget1e-2', (0.5, 0.6, 0.55))):
    groups[f'family/{name}'] = [
        _record(name, s, {'model': 'lstm', 'seed': s, 'updates': 10,
                          'spec': {}, 'valid': {
                              'mse': 1e-3, 'mse_over_baseline': r,
                              'update_fraction': 1.0}})
        for s, r in enumerate(ratios)]
  claims = _claims(groups)
  lstm = _only(claims, 'adding_lstm: at (nearly) full').verdict
  low = lstm.evidence.split('CI ')[1].split(' to ')[0]
  assert float(low) > 0
  skip = _only(claims, 'Skip-LSTM solves the adding task').verdict
  assert skip.label == 'not testable here'
  assert 'training to convergence' in skip.evidence
