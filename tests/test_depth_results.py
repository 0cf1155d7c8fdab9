"""The adaptive-depth results page (experiments.reports.depth.results): each
verdict follows from synthetic records by its criterion, the tables hold the
records' numbers, the figures draw, and the page types no result."""

import pathlib

import pytest

from experiments.reports import records, results
from experiments.reports.depth import lm
from experiments.reports.depth import results as depth

REPO = pathlib.Path(__file__).resolve().parents[1]
PAGE = REPO / 'docs' / 'results' / 'depth.md'
GATES = range(1, 11)
COMMAND = ('python -m experiments.depth_logic --halting={halting}{extra} '
           '--seed={seed} --workdir=runs/depth/{folder}/seed={seed}')


def _difficulty(halting, slope, base=1.0, position_slope=1.0, error=0.01):
  """A difficulty report: depth ``base + slope * B`` per chain length; per
  token also ``depth_i = base + position_slope * i`` for ``i <= B`` (position
  0, the bits, deeper than any, so that a slope that counted it would
  differ)."""
  rows = []
  for b in GATES:
    row = {'gates': b, 'error': error * b, 'token_error': error,
           'depth': base + slope * b, 'ponder': base + slope * b + 0.5}
    if halting == 'per_token':
      row.update({f'depth_{i}': (20.0 if i == 0 else
                                 base + position_slope * i) if i <= b else ''
                  for i in range(11)})
    rows.append(row)
  return rows


def _record(seed, error, *, halting='per_example', fixed_depth=12,
            mean_depth=4.0, slope=0.7, position_slope=1.0, report=True,
            folder=None):
  """A record as ``experiments.record`` writes it, with what the module
  reads: final metrics, flags, starts and the difficulty table."""
  extra = f' --depth={fixed_depth}' if halting == 'fixed' else ''
  folder = folder or halting
  command = COMMAND.format(halting=halting, extra=extra, seed=seed,
                           folder=folder)
  record = {
      'seed': seed, 'steps': 5000, 'wall_s': 300.0 + seed, 'commit': 'c' * 40,
      'dirty': False, 'command': command,
      'flags': {'halting': halting, 'depth': fixed_depth, 'seed': seed},
      'machine': {'name': 'CPU-2', 'cores': 2, 'cpu': 'x'},
      'versions': {'python': '3.11', 'jax': '0.10', 'flax': '0.12',
                   'optax': '0.2'},
      'final': {'error': error, 'token_error': error / 4,
                'depth': float(fixed_depth) if halting == 'fixed'
                else mean_depth, 'ponder': mean_depth + 0.5,
                'steps_per_sec': 20.0},
      'curve': [{'step': 5000, 'error': error}],
      'starts': [{'command': command},
                 {'command': command + ' --difficulty_report'}],
      'tables': {}}
  if report:
    flat = 0.0 if halting == 'fixed' else slope
    base = float(fixed_depth) if halting == 'fixed' else 1.0
    record['tables']['difficulty'] = _difficulty(halting, flat, base,
                                                 position_slope)
  return record


def _groups(per_example=(0.01, 0.012, 0.008), fixed4=(0.05, 0.06, 0.04),
            per_token=(0.02, 0.03, 0.025), fixed12=(0.02, 0.03, 0.025),
            **kwargs) -> dict:
  """The four folders, one record per seed of each error list."""
  make = lambda errors, **kw: [_record(s, e, **kw)
                               for s, e in enumerate(errors)]
  groups = {
      depth.PER_EXAMPLE: make(per_example, **kwargs),
      depth.PER_TOKEN: make(per_token, halting='per_token', mean_depth=3.5,
                            **kwargs),
      depth.FIXED_EQUAL: make(fixed4, halting='fixed', fixed_depth=4),
      depth.FIXED_MAX: make(fixed12, halting='fixed', fixed_depth=12)}
  return {k: v for k, v in groups.items() if v}


def _verdicts(groups) -> dict[str, str]:
  """Claim -> verdict label, from the summary's rows."""
  table = depth.summary_text(groups).split('\n\n')[0]
  out = {}
  for line in table.splitlines()[2:]:
    cells = [c.strip() for c in line.strip('|').split('|')]
    out[cells[0]] = cells[2].strip('*')
  return out


GROWTH = '(a) depth grows with the chain length, per example'
POSITION = ('(b) depth grows along the chain, per token: later gate '
            'positions of the longest chains take more applications')
EQUAL_EXAMPLE = ('(c) against the fixed depth of equal compute: '
                 'per example against fixed depth 4')
EQUAL_TOKEN = ('(c) against the fixed depth of equal compute: per '
               'token against fixed depth 4')
MAX_EXAMPLE = ('(d) against the fixed depth at the maximum depth: per '
               'example against fixed depth 12')
MAX_TOKEN = ('(d) against the fixed depth at the maximum depth: per token '
             'against fixed depth 12')


def test_slopes_from_the_difficulty_report():
  run = _record(0, 0.01, halting='per_token', slope=0.5, position_slope=0.8)
  assert depth.depth_slope(run) == pytest.approx(0.5)
  # Positions 1..10 of the chains of 10: position 0 (the bits) is left out.
  assert [i for i, _ in depth.position_depths(run)] == list(GATES)
  assert depth.position_slope(run) == pytest.approx(0.8)
  assert depth.depth_slope(_record(0, 0.01, report=False)) is None
  assert depth.position_slope(_record(0, 0.01)) is None    # per example
  assert depth.slope([1, 1], [0, 5]) is None


def test_every_claim_holds_when_the_records_say_so():
  labels = _verdicts(_groups())
  # Routing and PonderNet per token have no record in _groups(): their
  # comparisons are undecided.
  route = {claim: label for claim, label in labels.items()
           if 'routing' in claim or 'PonderNet' in claim}
  assert set(route.values()) == {'undecided'} and len(route) == 4
  labels = {claim: label for claim, label in labels.items()
            if claim not in route}
  assert labels == {GROWTH: 'holds', POSITION: 'holds',
                    EQUAL_EXAMPLE: 'holds', EQUAL_TOKEN: 'holds',
                    MAX_EXAMPLE: 'holds', MAX_TOKEN: 'within noise'}


def test_flat_depth_does_not_grow():
  # A slope under one application across B = 1..10 is no growth, however
  # steady: 0.1 < 1/9.
  labels = _verdicts(_groups(slope=0.1, position_slope=0.0))
  assert labels[GROWTH] == 'does not hold'
  assert labels[POSITION] == 'does not hold'
  labels = _verdicts(_groups(slope=0.12, position_slope=0.12))
  assert labels[GROWTH] == 'holds' and labels[POSITION] == 'holds'


def test_worse_than_the_fixed_depth_does_not_hold():
  labels = _verdicts(_groups(per_example=(0.10, 0.12, 0.11),
                             fixed12=(0.01, 0.01, 0.01)))
  assert labels[EQUAL_EXAMPLE] == 'does not hold'
  assert labels[MAX_EXAMPLE] == 'does not hold'
  assert labels[MAX_TOKEN] == 'does not hold'


def test_two_seeds_are_undecided_and_missing_folders_not_recorded():
  labels = _verdicts(_groups(per_example=(0.01, 0.012), per_token=(0.02,),
                             fixed12=()))
  assert labels[GROWTH] == 'undecided'
  assert labels[POSITION] == 'undecided'
  assert labels[EQUAL_EXAMPLE] == 'undecided'
  assert labels[MAX_EXAMPLE] == 'undecided'
  assert labels[MAX_TOKEN] == 'undecided'


def test_pairs_by_seed():
  # Seeds 1-3 of the adaptive model against seeds 0-2 of the fixed one:
  # only seeds 1 and 2 pair, too few for a verdict.
  groups = _groups()
  groups[depth.PER_EXAMPLE] = [_record(s, 0.01) for s in (1, 2, 3)]
  assert _verdicts(groups)[EQUAL_EXAMPLE] == 'undecided'


def test_summary_states_the_compute_beside_the_comparison():
  text = depth.summary_text(_groups())
  row, = [line for line in text.splitlines()
          if line.startswith('|') and MAX_EXAMPLE in line]
  assert ('error 1.00% ± 0.20% against 2.50% ± 0.50%; compute (mean depth) '
          '4.00 ± 0.00 against 12.00 ± 0.00; better on 3 of 3 seeds') in row
  row, = [line for line in text.splitlines()
          if line.startswith('|') and GROWTH in line]
  assert ('depth 1.70 at B = 1, 8.00 at B = 10 (mean over 3 seeds); slope '
          'per seed 0.700 / 0.700 / 0.700; 3 of 3 seeds') in row
  assert 'Graves 2016, Fig. 6' in row and 'Dehghani et al. 2019' in row
  # Per token, the ends of the chain and its deepest position.
  groups = _groups()
  for run in groups[depth.PER_TOKEN]:
    run['tables']['difficulty'][9].update(depth_9=2.0, depth_10=2.0)
  row, = [line for line in depth.summary_text(groups).splitlines()
          if line.startswith('|') and POSITION in line]
  assert ('depth 2.00 at position 1, 2.00 at position 10, the most 9.00 at '
          'position 8 (mean over 3 seeds)') in row


def test_logic_table_holds_the_numbers_and_the_commands():
  text = depth.logic_table(_groups())
  assert ('| per example | seeds 0-2 | 5,000 | 1.00% ± 0.20% | 0.60% to '
          '1.63% | 1.00% / 1.20% / 0.80% | 0.25% ± 0.05% | 4.00 ± 0.00 | '
          '301 s ± 1 s |') in text
  lines = text.splitlines()
  order = [line.split('|')[1].strip() for line in lines[2:6]]
  assert order == ['per example', 'per token', 'fixed depth 4',
                   'fixed depth 12']
  assert ('- fixed depth 4: `python -m experiments.depth_logic '
          '--halting=fixed --depth=4 --seed=S '
          '--workdir=runs/depth/fixed/seed=S`, then `python -m '
          'experiments.depth_logic --halting=fixed --depth=4 --seed=S '
          '--workdir=runs/depth/fixed/seed=S --difficulty_report`') in text
  assert 'Recorded at commit ccccccc on CPU-2' in text
  assert '- per token: Not verified against today\'s code' in text


def test_difficulty_table_is_the_mean_over_seeds():
  groups = _groups()
  groups[depth.PER_EXAMPLE][0]['tables']['difficulty'][9]['depth'] = 11.0
  text = depth.difficulty_table(groups)
  # B = 10: per example (11 + 8 + 8) / 3 = 9; the errors 10 x 1%.
  assert ('| 10 | 10.00% | 10.00% | 10.00% | 10.00% | 9.00 | 8.00 | 4.00 | '
          '12.00 |') in text
  assert text.startswith('| B | error, per example | error, per token |')
  assert '| 10 | 11.00 ± 0.00 | 11.00 / 11.00 / 11.00 |' in text  # positions
  assert depth.difficulty_table({depth.PER_EXAMPLE: [
      _record(0, 0.01, report=False)]}) == ''


def test_outputs_draw_and_round_trip(tmp_path):
  assert depth.outputs({'act/parity': [_record(0, 0.01)]}) == []
  outs = depth.outputs(_groups())
  # Then the character language model's, written without records too
  # (tests/test_depth_lm_results.py).
  lm_paths = [o.path for o in lm.outputs({})]
  assert [o.path for o in outs] == [
      'depth/summary.md', 'depth/logic.md', 'depth/logic_difficulty.md',
      'depth/logic_difficulty.svg', 'depth/logic_positions.svg',
      'depth/logic_pareto.svg', *lm_paths]
  data = {o.path: o.data for o in outs}
  # The Pareto figure: [seed, mean depth, seconds per update, error].
  pareto = data['depth/logic_pareto.svg']
  assert pareto['fixed depth 4']['mode'] == 'fixed'
  assert [p[1] for p in pareto['fixed depth 4']['seeds']] == [4.0] * 3
  assert list(data['depth/logic_difficulty.svg']) == [
      'per example', 'per token', 'fixed depth 4', 'fixed depth 12']
  assert data['depth/logic_positions.svg']['mean'][-1] == [10, 11.0]
  assert data['depth/logic_positions.svg']['per_example'] == 8.0
  records.write_outputs(outs, tmp_path)
  assert records.stale_outputs(outs, tmp_path) == []
  for name in ('logic_difficulty.svg', 'logic_positions.svg',
               'logic_pareto.svg'):
    svg = (tmp_path / 'depth' / name).read_text()
    assert svg.startswith('<?xml') and 'per token' in svg
  # Without a difficulty report: the tables say so, no figure.
  bare = depth.outputs({depth.PER_EXAMPLE: [_record(0, 0.01, report=False)]})
  assert [o.path for o in bare] == ['depth/summary.md', 'depth/logic.md',
                                    'depth/logic_difficulty.md',
                                    'depth/logic_pareto.svg', *lm_paths]
  assert bare[2].text == 'No record yet.\n'


def test_registered_and_the_page_includes_every_fragment():
  assert results.PAPERS['depth'] is depth
  assert list(results.PAPERS)[-1] == 'depth'
  assert pathlib.Path('docs', 'results', 'depth.md') in results.RESULT_PAGES
  page = PAGE.read_text()
  for out in depth.outputs(_groups()):
    assert f'generated/{out.path}' in page, out.path
  assert results.typed_results(page) == []
  assert 'results/depth' in (REPO / 'docs' / 'index.md').read_text()


def test_equal_compute_is_the_nearest_recorded_fixed_depth():
  # PonderNet per token at a mean depth of 7: fixed depth 4 is 75% away,
  # so without a fixed depth near 7 its comparison is not testable...
  groups = _groups()
  groups[depth.PER_TOKEN_PONDERNET] = [
      _record(s, 0.001, halting='per_token_pondernet', mean_depth=7.0,
              folder='per_token_pondernet') for s in range(3)]
  labels = _verdicts(groups)
  claim = ('(c) against the fixed depth of equal compute: per token, '
           'PonderNet against fixed depth 4')
  assert labels[claim] == 'not testable here'
  assert depth.nearest_fixed(groups, 7.0) == (depth.FIXED_EQUAL, 4.0, 0.75)
  # ... and with fixed depth 7 recorded it is judged against that one.
  groups['depth/logic_fixed7'] = [
      _record(s, e, halting='fixed', fixed_depth=7, folder='fixed7')
      for s, e in enumerate((0.01, 0.02, 0.015))]
  labels = _verdicts(groups)
  claim = ('(c) against the fixed depth of equal compute: per token, '
           'PonderNet against fixed depth 7')
  assert labels[claim] == 'holds'
  assert 'the nearest recorded: mean depth 7.00, 0% apart' in (
      depth.summary_text(groups))
