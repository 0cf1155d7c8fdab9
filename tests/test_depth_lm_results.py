"""The character language model's results (experiments.reports.depth.lm):
each verdict follows from synthetic records by its criterion (holds, does
not hold, not testable, undecided), the tables hold the records' numbers,
the figures draw and round-trip, and missing folders leave every claim
undecided."""

import pathlib

import pytest

from experiments.reports import records, results
from experiments.reports.depth import lm

REPO = pathlib.Path(__file__).resolve().parents[1]
PAGE = REPO / 'docs' / 'results' / 'depth.md'
COMMAND = ('python -m experiments.depth_lm --data_dir=D --mode={mode}{extra} '
           '--seed={seed} --workdir=runs/depth_lm/{folder}/seed={seed}')
# Multiply-adds of one application per character and of the readout, about
# the defaults' (128 features, 128 characters, 50 symbols).
APPLICATION, READOUT = 164_000, 6_400


def _mults(depth: float) -> float:
  return depth * APPLICATION + READOUT


def _classes(space=4.0, start=3.5, inside=2.5, punctuation=3.0):
  """A class report: per class its count, depth, ponder and bpc."""
  rows = []
  for name, count, depth, bpc in (
      ('space', 200, space, 2.0), ('word start', 200, start, 3.0),
      ('inside word', 500, inside, 1.2),
      ('punctuation / end', 100, punctuation, 1.5)):
    rows.append({'class': name, 'count': count, 'depth': depth,
                 'ponder': depth + 0.3, 'bpc': bpc})
  return rows


def _record(seed, bpc, *, mode='per_token', depth=3.0, max_depth=6,
            rate=1.3, classes=None, load=2.0, folder=None, top_k_depth=3.0,
            report=True):
  """A record as ``experiments.record`` writes it, with what the module
  reads: flags, final metrics, starts (their load) and the class table."""
  extra = {'fixed': f' --depth={depth:g}', 'route':
           f' --max_depth={max_depth}'}.get(mode, '')
  command = COMMAND.format(mode=mode, extra=extra, seed=seed,
                           folder=folder or mode)
  final = {'bpc': bpc, 'loss': bpc * 0.693, 'depth': depth,
           'ponder': depth + 0.3, 'mults': _mults(depth),
           'mults_run': _mults(max_depth if mode != 'fixed' else depth),
           'steps_per_sec': rate + 0.01 * seed, 'step': 3000}
  if mode == 'route':
    final.update(bpc_top_k=bpc - 0.05, depth_top_k=top_k_depth)
  record = {
      'seed': seed, 'steps': 3000, 'wall_s': 1500.0 + seed,
      'commit': 'c' * 40, 'dirty': False, 'command': command,
      'flags': {'mode': mode, 'depth': int(depth) if mode == 'fixed' else 6,
                'max_depth': max_depth, 'seed': seed},
      'machine': {'name': 'CPU-2', 'cores': 2, 'cpu': 'x'},
      'versions': {'python': '3.11', 'jax': '0.10', 'flax': '0.12',
                   'optax': '0.2'},
      'final': final, 'curve': [{'step': 3000, 'bpc': bpc}],
      'starts': [{'command': command, 'load': [load, load, load]},
                 {'command': command + ' --class_report',
                  'load': [9.0, 9.0, 9.0]}],
      'tables': {}}
  if report:
    if classes is None:
      classes = (_classes(depth, depth, depth, depth) if mode == 'fixed'
                 else _classes())
    record['tables']['classes'] = classes
  return record


def _groups(fixed3=(1.60, 1.62, 1.61), fixed6=(1.50, 1.52, 1.51),
            per_token=(1.55, 1.56, 1.57), pondernet=(1.49, 1.50, 1.49),
            route=(1.58, 1.59, 1.58), *, per_token_depth=3.1,
            route_rate=2.4, **route_kw) -> dict:
  """The five planned folders, one record per seed of each bpc list: per
  token near fixed depth 3's compute, PonderNet near fixed depth 6's,
  routing at fixed depth 3's and faster than per token."""
  make = lambda values, **kw: [_record(s, v, **kw)
                               for s, v in enumerate(values)]
  groups = {
      lm.FIXED_SHALLOW: make(fixed3, mode='fixed', depth=3.0, rate=2.2),
      lm.FIXED_DEEP: make(fixed6, mode='fixed', depth=6.0, rate=1.2),
      lm.PER_TOKEN: make(per_token, depth=per_token_depth),
      lm.PER_TOKEN_PONDERNET: make(pondernet, mode='per_token_pondernet',
                                   depth=5.8),
      lm.ROUTE: make(route, mode='route', depth=3.0, max_depth=5,
                     rate=route_rate, **route_kw)}
  return {k: v for k, v in groups.items() if v}


def _rows(groups) -> dict[str, list[str]]:
  """Claim -> its cells (claim, papers, verdict, evidence, criterion key)."""
  table = lm.summary_text(groups).split('\n\n')[0]
  out = {}
  for line in table.splitlines()[2:]:
    cells = [c.strip() for c in line.strip('|').split('|')]
    out[cells[0]] = cells
  return out


def _verdicts(groups) -> dict[str, str]:
  return {claim: cells[2].strip('*') for claim, cells in _rows(groups).items()}


EQUAL = {lm.PER_TOKEN: '(e) per token ends below the fixed depth of equal '
                       'compute in bpc',
         lm.PER_TOKEN_PONDERNET: '(e) per token, PonderNet ends below the '
                                 'fixed depth of equal compute in bpc',
         lm.ROUTE: '(e) routing, 5 steps ends below the fixed depth of '
                   'equal compute in bpc'}
CLOCK_FIXED = ('(f) routing, 5 steps trains as fast as the fixed depth of '
               'its compute')
CLOCK_ACT = '(f) routing, 5 steps trains faster than per token'
SPACES = '(g) per token: deeper at spaces than inside words'
STARTS = '(g) per token: deeper at word starts than inside words'
ROUTE_SPACES = '(g) routing, 5 steps: deeper at spaces than inside words'


def test_every_claim_holds_when_the_records_say_so():
  labels = _verdicts(_groups())
  assert len(labels) == 11
  assert set(labels.values()) == {'holds'}, labels


def test_equal_compute_names_the_fixed_depth_and_both_mults():
  rows = _rows(_groups())
  # Per token at depth 3.1 is nearest fixed depth 3 (498k), 3% apart;
  # PonderNet at depth 5.8 nearest fixed depth 6.
  assert ('against fixed depth 3, nearest in mults: 515k against 498k per '
          'character, 3% apart; bpc 1.560 ± 0.010 against 1.610 ± 0.010; '
          'better on 3 of 3 seeds') in rows[EQUAL[lm.PER_TOKEN]][3]
  assert 'against fixed depth 6' in rows[EQUAL[lm.PER_TOKEN_PONDERNET]][3]
  assert 'Dehghani et al. 2019' in rows[EQUAL[lm.PER_TOKEN]][1]
  assert 'Bae et al. 2025' in rows[EQUAL[lm.ROUTE]][1]
  # One criterion for the three rows.
  assert len({rows[c][4] for c in EQUAL.values()}) == 1


def test_worse_than_the_fixed_depth_does_not_hold():
  labels = _verdicts(_groups(per_token=(1.70, 1.72, 1.71),
                             route=(1.62, 1.63, 1.63)))
  assert labels[EQUAL[lm.PER_TOKEN]] == 'does not hold'
  assert labels[EQUAL[lm.ROUTE]] == 'does not hold'
  assert labels[EQUAL[lm.PER_TOKEN_PONDERNET]] == 'holds'


def test_unequal_compute_is_not_testable():
  # Depth 5: 826k mults, 164k from fixed depth 6 (990k, 17% of it), 328k
  # from fixed depth 3 (498k): no recorded fixed depth has its compute.
  rows = _rows(_groups(per_token_depth=5.0))
  cells = rows[EQUAL[lm.PER_TOKEN]]
  assert cells[2] == '**not testable here**'
  assert ('against fixed depth 6, nearest in mults: 826k against 990k per '
          'character, 17% apart, more than 15%') in cells[3]
  # Its criterion is the one the testable rows are judged by.
  assert cells[4] == rows[EQUAL[lm.ROUTE]][4]
  assert lm.COMPUTE_TOLERANCE == 0.15
  # Inside the tolerance: testable.
  assert _verdicts(_groups(per_token_depth=3.4))[EQUAL[lm.PER_TOKEN]] == (
      'holds')


def test_the_clock():
  rows = _rows(_groups())
  assert ('against fixed depth 3, nearest in training depth: 3.00 (top-k) '
          'against 3.00, 0% apart; updates/s 2.41 ± 0.01 (routing, 5 steps) '
          'against 2.21 ± 0.01 (fixed depth 3)') in rows[CLOCK_FIXED][3]
  assert 'mean depth 3.00 (top-k, as it trains) against 3.10' in (
      rows[CLOCK_ACT][3])
  # Slower than the fixed depth by more than the tolerance, and than ACT.
  labels = _verdicts(_groups(route_rate=1.0))
  assert labels[CLOCK_FIXED] == 'does not hold'
  assert labels[CLOCK_ACT] == 'does not hold'
  # 10% slower than fixed depth 3: within the tolerance, still holds.
  labels = _verdicts(_groups(route_rate=1.98))
  assert labels[CLOCK_FIXED] == 'holds'
  # Top-k's depth 5 trains at no recorded fixed depth's compute (the
  # nearest, 6, is 17% from it).
  rows = _rows(_groups(top_k_depth=5.0))
  assert rows[CLOCK_FIXED][2] == '**not testable here**'
  assert 'against fixed depth 6' in rows[CLOCK_FIXED][3]


def test_the_clock_says_whether_the_runs_trained_alone():
  text = lm.summary_text(_groups())
  # The class report's start (load 9) times nothing and is left out.
  assert ('measured on CPU-2: runs started beside other jobs (a 1-minute '
          'load average of 2.0 to 2.0 at their starts)') in text
  alone = [_record(0, 1.5, load=0.1)]
  assert lm.load_text(alone).startswith('every run started alone')
  old = _record(0, 1.5)
  del old['starts'][0]['load']
  assert lm.load_text([old]) == ('1 of 1 start recorded no load average, so '
                                 'whether those runs trained alone is '
                                 'unknown')
  assert lm.load_text([]) == ''


def test_depth_at_spaces_and_word_starts():
  groups = _groups()
  rows = _rows(groups)
  assert ('depth space 4.00, word start 3.50, inside word 2.50, '
          'punctuation / end 3.00 (mean over 3 seeds); better on 3 of 3 '
          'seeds') in rows[SPACES][3]
  assert 'Graves 2016, Sec. 3.5' in rows[SPACES][1]
  # Shallower at spaces: does not hold.
  for run in groups[lm.PER_TOKEN]:
    run['tables']['classes'] = _classes(space=1.5, start=1.6, inside=2.5)
  labels = _verdicts(groups)
  assert labels[SPACES] == 'does not hold'
  assert labels[STARTS] == 'does not hold'


@pytest.mark.parametrize('depths', [(1.0, 1.02, 1.0, 1.04),
                                    (6.0, 5.97, 6.0, 5.99)],
                         ids=['floor', 'cap'])
def test_an_inert_unit_is_not_testable(depths):
  groups = _groups()
  for run in groups[lm.PER_TOKEN]:
    run['tables']['classes'] = _classes(*depths)
  rows = _rows(groups)
  assert rows[SPACES][2] == '**not testable here**'
  assert rows[STARTS][2] == '**not testable here**'
  assert ('seeds 0, 1, 2 inert (every class within 0.05 of the floor 1 or '
          'of the cap 6); 0 seeds left, fewer than 3') in rows[SPACES][3]
  assert lm.inert_seeds(groups[lm.PER_TOKEN]) == [0, 1, 2]


def test_inertness_per_seed_and_per_mode():
  groups = _groups()
  # One inert seed of three: two are left, too few.
  groups[lm.PER_TOKEN][1]['tables']['classes'] = _classes(1.0, 1.0, 1.0, 1.0)
  assert _verdicts(groups)[SPACES] == 'not testable here'
  # Route's threshold rule may run no step: its floor is 0, not 1.
  for run in groups[lm.ROUTE]:
    run['tables']['classes'] = _classes(0.02, 0.0, 0.01, 0.03)
  assert _verdicts(groups)[ROUTE_SPACES] == 'not testable here'
  for run in groups[lm.ROUTE]:
    run['tables']['classes'] = _classes(1.0, 1.0, 1.0, 1.0)
  assert lm.inert_seeds(groups[lm.ROUTE]) == []
  # Spaces at the cap and words at the floor: a unit at work, not inert.
  for run in groups[lm.PER_TOKEN]:
    run['tables']['classes'] = _classes(6.0, 5.0, 1.0, 6.0)
  assert lm.inert_seeds(groups[lm.PER_TOKEN]) == []
  assert _verdicts(groups)[SPACES] == 'holds'


def test_missing_folders_leave_every_claim_undecided():
  labels = _verdicts({})
  assert len(labels) == 11 and set(labels.values()) == {'undecided'}
  assert 'No record yet.' in lm.summary_text({})
  # The fixed depths alone: every claim still needs an adaptive folder.
  groups = _groups()
  only_fixed = {k: groups[k] for k in (lm.FIXED_SHALLOW, lm.FIXED_DEEP)}
  assert set(_verdicts(only_fixed).values()) == {'undecided'}
  # No fixed depth: (e) and (f) against it are undecided, (g) is not.
  adaptive = {k: groups[k] for k in lm.ADAPTIVE}
  rows = _rows(adaptive)
  assert rows[EQUAL[lm.PER_TOKEN]][2] == '**undecided**'
  assert rows[EQUAL[lm.PER_TOKEN]][3] == ('no record of a fixed depth '
                                          '(depth/lm_fixed*)')
  assert rows[CLOCK_FIXED][2] == '**undecided**'
  assert rows[CLOCK_ACT][2] == '**holds**'
  assert rows[SPACES][2] == '**holds**'
  # Without a class report, (g) says so.
  bare = _groups()
  for run in bare[lm.PER_TOKEN]:
    del run['tables']['classes']
  assert _rows(bare)[SPACES][3] == ('no class report (--class_report) in '
                                    'depth/lm_per_token')


def test_pairs_by_seed():
  # Seeds 1-3 of per token against seeds 0-2 of the fixed depth: only
  # seeds 1 and 2 pair, too few for a verdict.
  groups = _groups()
  groups[lm.PER_TOKEN] = [_record(s, 1.5, depth=3.1) for s in (1, 2, 3)]
  assert _verdicts(groups)[EQUAL[lm.PER_TOKEN]] == 'undecided'
  groups[lm.PER_TOKEN] = [_record(s, 1.5, depth=3.1) for s in (0, 1)]
  assert _verdicts(groups)[CLOCK_ACT] == 'undecided'


def test_class_rows_from_the_table_or_the_results():
  run = _record(0, 1.5)
  rows = run['tables'].pop('classes')
  assert lm.class_rows(run) == []
  run['results'] = {'by_class': list(reversed(rows))}
  assert [d['class'] for d in lm.class_rows(run)] == [
      'space', 'word start', 'inside word', 'punctuation / end']
  assert lm.class_depth(run, 'space') == 4.0
  assert lm.class_depth(run, 'space', 'bpc') == 2.0


def test_labels_and_order():
  configs = lm.configurations(_groups())
  assert [name for _, name, _ in configs] == [
      'per token', 'per token, PonderNet', 'routing, 5 steps',
      'fixed depth 3', 'fixed depth 6']
  assert lm.label('depth/lm_per_token_tau3', []) == 'per token tau3'


def test_lm_table_holds_the_numbers_and_the_commands():
  text = lm.lm_table(_groups())
  assert ('| fixed depth 3 | seeds 0-2 | 3,000 | 1.610 ± 0.010 | 1.585 to '
          '1.635 | 1.600 / 1.620 / 1.610 | 3.00 ± 0.00 | 498k ± 0k | '
          '498k ± 0k | 2.21 ± 0.01 | 1501 s ± 1 s |') in text
  assert '| routing, 5 steps | seeds 0-2 |' in text
  assert ('- routing, 5 steps: bpc 1.533 ± 0.006, depth 3.00 ± 0.00') in text
  assert ('- per token: `python -m experiments.depth_lm --data_dir=D '
          '--mode=per_token --seed=S --workdir=runs/depth_lm/per_token/'
          'seed=S`, then `python -m experiments.depth_lm --data_dir=D '
          '--mode=per_token --seed=S --workdir=runs/depth_lm/per_token/'
          'seed=S --class_report`') in text
  assert 'Recorded at commit ccccccc on CPU-2' in text
  assert '- fixed depth 6: Not verified against today\'s code' in text
  assert lm.lm_table({}) == ''


def test_classes_table_is_the_mean_over_seeds():
  groups = _groups()
  groups[lm.PER_TOKEN][0]['tables']['classes'] = _classes(space=7.0)
  text = lm.classes_table(groups)
  assert text.startswith('| class | share | depth, per token |')
  # Spaces: per token (7 + 4 + 4) / 3 = 5; 200 of 1,000 characters.
  assert '| space | 20% | 5.00 | 4.00 | 4.00 | 3.00 | 6.00 | 2.000 |' in text
  assert 'per token: n = 3' in text
  assert lm.classes_table({}) == ''


def test_outputs_draw_and_round_trip(tmp_path):
  outs = lm.outputs(_groups())
  assert [o.path for o in outs] == [
      'depth/lm_summary.md', 'depth/lm.md', 'depth/lm_classes.md',
      'depth/lm_pareto.svg', 'depth/lm_classes.svg']
  data = {o.path: o.data for o in outs}
  pareto = data['depth/lm_pareto.svg']
  assert list(pareto) == ['per token', 'per token, PonderNet',
                          'routing, 5 steps', 'fixed depth 3',
                          'fixed depth 6']
  assert pareto['fixed depth 3']['seeds'][0] == [0, 498_400.0, 1 / 2.2, 1.6]
  assert pareto['fixed depth 3']['mean'][0] == pytest.approx(498_400.0)
  assert data['depth/lm_classes.svg']['per token']['mean'][0] == [
      'space', 0.2, 4.0, 2.0]
  records.write_outputs(outs, tmp_path)
  assert records.stale_outputs(outs, tmp_path) == []
  for name in ('lm_pareto.svg', 'lm_classes.svg'):
    svg = (tmp_path / 'depth' / name).read_text()
    assert svg.startswith('<?xml') and 'per token' in svg
  # A figure is current while its inputs are: a changed bpc makes it stale.
  groups = _groups()
  groups[lm.FIXED_DEEP][0]['final']['bpc'] = 1.4
  assert 'depth/lm_pareto.svg: drawn from other inputs than the records' in (
      records.stale_outputs(lm.outputs(groups), tmp_path))


def test_no_record_yet(tmp_path):
  outs = lm.outputs({'depth/logic_fixed4': [_record(0, 0.1)]})
  assert [o.path for o in outs] == [
      'depth/lm_summary.md', 'depth/lm.md', 'depth/lm_classes.md',
      'depth/lm_pareto.svg', 'depth/lm_classes.svg']
  assert outs[1].text == outs[2].text == 'No record yet.\n'
  assert outs[3].data == outs[4].data == {}
  records.write_outputs(outs, tmp_path)
  assert 'No record yet' in (tmp_path / 'depth' / 'lm_pareto.svg').read_text()
  assert records.stale_outputs(outs, tmp_path) == []


def test_the_depth_page_includes_every_output():
  # results.outputs of the depth page carries these, whichever are recorded.
  paths = [o.path for o in results.PAPERS['depth'].outputs(_groups())]
  page = PAGE.read_text()
  for out in lm.outputs(_groups()):
    assert out.path in paths
    assert f'generated/{out.path}' in page, out.path
  assert results.typed_results(page) == []
