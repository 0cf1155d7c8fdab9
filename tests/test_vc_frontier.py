"""VC's frontier (experiments.reports.vc.frontier): likelihood against
computation, each VC setting judged against its constant counterpart at its
own RNN-d, seed by seed."""

import pytest

from experiments.reports.vc import frontier
from experiments.reports.vc import results as vc


def _record(seed: int, rnn_d: float, bpc: float, steps: int = 6000) -> dict:
  return {'seed': seed, 'steps': steps, 'commit': 'a' * 40, 'dirty': False,
          'flags': {}, 'machine': {'name': 'CPU-2'},
          'versions': {'python': '3.11.7'},
          'results': {'test': {'rnn_d': rnn_d, 'bpc': bpc, 'perplexity': bpc,
                               'cost': rnn_d ** 2, 'm': 0.5}}}


def _groups(corpus='ptb', **by_model) -> dict:
  """model -> [(rnn_d, metric) per seed]."""
  return {f'{frontier.FRONTIER}{corpus}_{model}': [
      _record(seed, d, y) for seed, (d, y) in enumerate(points)]
          for model, points in by_model.items()}


ELMAN = dict(elman128=[(128, 2.00), (128, 2.02), (128, 2.01)],
             elman256=[(256, 1.80), (256, 1.82), (256, 1.81)])


@pytest.mark.parametrize('name,expected', [
    ('elman128', frontier.Model('elman', 128, None)),
    ('vcrnn256_m0.3', frontier.Model('vcrnn', 256, 0.3)),
    ('vcgru192_m0.5', frontier.Model('vcgru', 192, 0.5)),
    ('vcrnn256_m0.6_w1', frontier.Model('vcrnn', 256, 0.6, 1.0)),
    ('vcrnn256_m0.5_guided', frontier.Model('vcrnn', 256, 0.5, guided=True))])
def test_folder_names_parse(name, expected):
  assert frontier.parse(name) == expected
  assert frontier._folder(expected) == name


def test_a_bad_folder_name_says_what_is_expected():
  with pytest.raises(ValueError, match='elman128 or vcrnn256_m0.3'):
    frontier.parse('vcrnn_big')
  with pytest.raises(ValueError, match='the guide needs a target'):
    frontier.parse('vcrnn256_w1')
  with pytest.raises(ValueError, match='the guide needs a target'):
    frontier.parse('vcrnn256_guided')


def test_a_penalty_weight_names_its_own_setting():
  assert frontier.parse('vcrnn256_m0.6_w1').label == (
      'VCRNN-256 (m̄ 0.6, Ω weight 1)')
  assert frontier.parse('vcrnn256_m0.1').label == 'VCRNN-256 (m̄ 0.1)'
  assert frontier.parse('vcrnn256_m0.5_guided').label == (
      'VCRNN-256 (m̄ 0.5, guided)')


def test_a_guided_setting_is_judged_but_kept_apart_from_the_learned_one():
  groups = _groups(**ELMAN, **{
      'vcrnn256_m0.5': [(192, 1.85), (192, 1.86), (192, 1.86)],
      'vcrnn256_m0.5_guided': [(192, 1.95), (192, 1.97), (192, 1.96)]})
  learned, guided = frontier.frontier_rows(groups, 'ptb')
  assert learned[0].startswith('Table 3, Sec. 5.2.1: VCRNN-256 (m̄ 0.5) ')
  assert guided[0].startswith('Sec. 5.2.2, the guide')
  assert guided[3] == '**does not hold**'
  # The figure neither joins the guided mean to the learned line nor
  # pools its runs into where the learned scheduler computes.
  cells = {label: entry['cell'] for label, entry in
           frontier.frontier_data(groups, 'ptb')['models'].items()}
  assert cells['VCRNN-256 (m̄ 0.5, guided)'] == 'vcrnn_guided'
  assert cells['VCRNN-256 (m̄ 0.5)'] == 'vcrnn'
  label, runs = vc._frontier_vc_runs(groups, 'ptb')
  assert len(runs) == 3 and 'guided' not in label


def test_interpolation_stays_inside_the_frontier():
  pts = [(128, 2.0), (256, 1.8)]
  assert frontier.interpolate(pts, 192) == pytest.approx(1.9)
  assert frontier.interpolate(pts, 128) == 2.0
  assert frontier.interpolate(pts, 100) is None
  assert frontier.interpolate(pts, 300) is None


def test_log_interpolation_is_the_convex_curve_below_the_chord():
  pts = [(128, 2.0), (256, 1.8)]
  # Linear in log RNN-d: at the geometric midpoint, the midpoint value.
  assert frontier.interpolate(pts, 181.019, log=True) == pytest.approx(
      1.9, abs=1e-4)
  # Between the widths the convex curve lies below the chord: the
  # counterpart is better there, and VC's gain smaller.
  for x in (140, 192, 240):
    assert frontier.interpolate(pts, x, log=True) < frontier.interpolate(
        pts, x)
  assert frontier.interpolate(pts, 128, log=True) == 2.0
  assert frontier.interpolate(pts, 300, log=True) is None
  with pytest.raises(ValueError, match='x > 0'):
    frontier.interpolate([(0, 2.0), (256, 1.8)], 100, log=True)


def test_the_frontier_verdict_holds_only_when_both_fits_hold():
  # Gains that hold against the chord but not against the convex curve:
  # within noise, never holds.
  lin = {0: 0.011, 1: 0.012, 2: 0.010}
  log = {0: 0.004, 1: -0.006, 2: 0.015}
  v = frontier.frontier_verdict({False: lin, True: log}, claim='c',
                                fmt=str)
  assert v.label == 'within noise'
  assert 'linear in RNN-d' in v.evidence and 'linear in log RNN-d' in (
      v.evidence)
  assert frontier.frontier_verdict({False: lin, True: lin}, claim='c',
                                   fmt=str).label == 'holds'
  worse = {s: -g for s, g in lin.items()}
  assert frontier.frontier_verdict({False: worse, True: worse}, claim='c',
                                   fmt=str).label == 'does not hold'
  assert frontier.frontier_verdict({False: lin, True: {0: 0.1}}, claim='c',
                                   fmt=str).label == 'undecided'


def test_gains_pair_each_seed_with_its_own_counterpart():
  groups = _groups(**ELMAN, **{'vcrnn256_m0.5': [(192, 1.85), (192, 1.95),
                                                 (300, 1.7)]})
  found = frontier.models(groups, 'ptb')
  base = {m: r for m, r in found.items() if m.cell == 'elman'}
  vc_runs = found[frontier.Model('vcrnn', 256, 0.5)]
  got = frontier.gains(vc_runs, base, 'bpc')
  # Seed 0: Elman at 192 is (2.00 + 1.80) / 2 = 1.90; seed 1: 1.92. Seed 2
  # lies beyond the widest Elman and is left out.
  assert got == pytest.approx({0: 0.05, 1: -0.03})


def test_verdict_holds_when_every_seed_is_below_the_frontier():
  better = _groups(**ELMAN, **{'vcrnn256_m0.5': [(192, 1.85), (192, 1.86),
                                                 (192, 1.86)]})
  (row,) = frontier.frontier_rows(better, 'ptb')
  assert row[3] == '**holds**'
  assert '3 of 3 seeds inside the Elman frontier (RNN-d 128-256)' in row[2]
  worse = _groups(**ELMAN, **{'vcrnn256_m0.5': [(192, 1.95), (192, 1.97),
                                                (192, 1.96)]})
  assert frontier.frontier_rows(worse, 'ptb')[0][3] == '**does not hold**'


def test_outside_the_frontier_is_undecided():
  beyond = _groups(**ELMAN, **{'vcrnn512_m0.9': [(400, 1.7)] * 3})
  (row,) = frontier.frontier_rows(beyond, 'ptb')
  assert row[3] == '**undecided**'
  assert '0 of 3 seeds inside' in row[2]


def test_vcgru_is_judged_against_gru_only():
  groups = _groups(**ELMAN, gru128=[(180, 1.9)] * 3, gru256=[(360, 1.7)] * 3,
                   **{'vcgru256_m0.5': [(270, 1.75)] * 3})
  (row,) = frontier.frontier_rows(groups, 'ptb')
  assert 'VCGRU-256 (m̄ 0.5) below the GRU frontier' in row[0]
  # GRU at RNN-d 270: 1.9 + (1.7 - 1.9) * 90 / 180 = 1.8, so every seed
  # gains 0.05 (the Elman frontier would give no verdict: 270 > 256).
  assert '3 of 3 seeds inside the GRU frontier (RNN-d 180-360)' in row[2]
  assert '; 0.0500 (95% CI' in row[2]
  assert row[3] == '**holds**'


def test_the_table_lists_every_seed_and_its_status():
  groups = _groups(**ELMAN)
  text = frontier.frontier_table(groups, 'ptb')
  assert '| Elman-128 | 128.0 ± 0.0 | 16,384 |' in text
  assert '2.0000 / 2.0200 / 2.0100' in text
  assert text.count("Not verified against today's code") == 2


def test_the_summary_takes_the_frontier_rows_and_drops_the_unrecorded_vcgru():
  groups = _groups(**ELMAN, gru128=[(180, 1.9)] * 3, gru256=[(360, 1.7)] * 3,
                   **{'vcgru256_m0.5': [(270, 1.75)] * 3})
  text = vc.summary(groups)
  assert 'VCGRU-256 (m̄ 0.5) below the GRU frontier' in text
  assert 'no VCGRU or GRU run is recorded' not in text
  assert 'no VCGRU or GRU run is recorded' in vc.summary({})


def test_outputs_per_corpus_with_records():
  groups = _groups(**ELMAN) | _groups('music', elman128=[(128, 9.0)] * 3)
  paths = [o.path for o in frontier.outputs(groups)]
  assert paths == ['vc/frontier_ptb.md', 'vc/frontier_ptb.svg',
                   'vc/frontier_music.md', 'vc/frontier_music.svg']
  assert frontier.outputs({}) == []


def test_the_paper_width_frontier_stays_apart_from_the_cpu_one():
  # Another budget and machine: its runs never enter the CPU frontier.
  groups = _groups(**ELMAN) | _groups(
      'ptb1024', elman768=[(768, 1.6)], elman1024=[(1024, 1.62)],
      **{'vcrnn1024_m0.5': [(988, 1.87)]})
  assert len(frontier.models(groups, 'ptb')) == 2
  paper = frontier.models(groups, 'ptb1024')
  assert [m.width for m in paper] == [768, 1024, 1024]
  gains = frontier.gains(paper[frontier.Model('vcrnn', 1024, 0.5)],
                         {m: r for m, r in paper.items()
                          if m.cell == 'elman'}, 'bpc')
  # Elman-1024 ends worse than Elman-768: the envelope stays at 1.6.
  assert gains[0] == pytest.approx(1.6 - 1.87)
  assert 'vc/frontier_ptb1024.svg' in [o.path for o in
                                       frontier.outputs(groups)]


def test_the_figure_draws(tmp_path):
  groups = _groups(**ELMAN, **{'vcrnn256_m0.5': [(192, 1.85)] * 3})
  data = frontier.frontier_data(groups, 'ptb')
  path = frontier.draw_frontier(data, tmp_path / 'f.svg')
  assert path.read_text().startswith('<?xml')


def _with_classes(record: dict, boundary: float, inside: float) -> dict:
  record['results']['analysis'] = {'mean_m_by_class': {'symbol': {
      'boundary': {'mean': boundary, 'count': 10},
      'inside word': {'mean': inside, 'count': 50}}}}
  return record


def test_where_computation_goes_is_judged_over_every_frontier_vc_run():
  assert vc.frontier_where_rows(_groups(**ELMAN)) == []
  groups = _groups(**ELMAN, **{'vcrnn256_m0.1': [(150, 1.9)] * 3,
                               'vcrnn256_m0.5': [(200, 1.85)] * 3})
  for name, runs in groups.items():
    if 'vcrnn' in name:
      for r in runs:
        _with_classes(r, 0.6, 0.4)
  (row,) = vc.frontier_where_rows(groups)
  assert row[0] == ('more computation at word boundaries (frontier '
                    'VCRNN-256 at m̄ 0.1/0.5, every run)')
  assert row[3] == '**holds**' and '6 of 6 seeds' in row[2]
  assert 'per run, mean m_t on word boundaries minus' in row[4]
  next(iter(groups[f'{frontier.FRONTIER}ptb_vcrnn256_m0.1']))[
      'results']['analysis']['mean_m_by_class']['symbol']['boundary'][
          'mean'] = 0.3
  assert '5 of 6 seeds' in vc.frontier_where_rows(groups)[0][2]


def test_the_vcgru_gets_its_own_word_boundary_row():
  groups = _groups(**ELMAN, **{'vcrnn256_m0.1': [(150, 1.9)] * 3,
                               'vcgru256_m0.1': [(300, 1.7)] * 3,
                               'vcgru256_m0.6_w1': [(200, 1.8)] * 3})
  for name, runs in groups.items():
    for r in runs:
      if 'vcrnn' in name:
        _with_classes(r, 0.6, 0.4)
      elif 'vcgru' in name:
        _with_classes(r, 0.3, 0.4)
  vcrnn_row, vcgru_row = vc.frontier_where_rows(groups)
  assert 'VCRNN-256 at m̄ 0.1, every run' in vcrnn_row[0]
  assert vcgru_row[0] == ('more computation at word boundaries (frontier '
                          'VCGRU-256 at m̄ 0.1/0.6, every run)')
  assert vcrnn_row[3] == '**holds**'
  assert 'the VCGRU scheduler follows the same patterns' in vcgru_row[1]
  assert vcgru_row[3] == '**does not hold**' and '0 of 6 seeds' in (
      vcgru_row[2])


def test_the_frontier_is_the_lower_envelope_of_the_widths():
  # A wider network that ends worse (Elman-192 above Elman-128) does not
  # raise the frontier: the best of any width up to the RNN-d counts.
  assert frontier.envelope([(192, 9.3), (64, 10.0), (128, 8.9)]) == [
      (64, 10.0), (128, 8.9), (192, 8.9)]
  groups = _groups('music', elman64=[(64, 10.0)] * 3,
                   elman128=[(128, 8.9)] * 3, elman192=[(192, 9.3)] * 3,
                   **{'vcrnn192_m0.5': [(160, 9.1)] * 3})
  found = frontier.models(groups, 'music')
  base = {m: r for m, r in found.items() if m.cell == 'elman'}
  runs = found[frontier.Model('vcrnn', 192, 0.5)]
  # Against the straight line between the widths the VC run would gain
  # 8.9 + 0.4 / 2 - 9.1 = 0; against the envelope it loses 0.2.
  for log in frontier.FITS:
    assert frontier.gains(runs, base, 'perplexity', log) == pytest.approx(
        {0: -0.2, 1: -0.2, 2: -0.2})
  (row,) = frontier.frontier_rows(groups, 'music')
  assert row[3] == '**does not hold**'
  assert 'lower envelope' in row[4]


def test_a_value_near_zero_is_printed_with_its_sign():
  fmt = frontier.fixed(3)
  assert fmt(-0.0002) == '-0.0002'
  assert fmt(0.00004) == '0.00004'
  assert fmt(0.0) == '0.000' and fmt(-0.0) == '0.000'
  assert fmt(-0.2721) == '-0.272'
  v = frontier.frontier_verdict(
      {False: {0: -0.30, 1: -0.25, 2: -0.2719}, True: {0: -0.3, 1: -0.2,
                                                       2: -0.25}},
      claim='c', fmt=fmt)
  assert '-0.000' not in v.evidence


def test_a_row_gives_the_mean_m_t_against_the_target():
  groups = _groups(**ELMAN, **{'vcrnn256_m0.1': [(192, 1.85)] * 3})
  (row,) = frontier.frontier_rows(groups, 'ptb')
  assert 'mean m_t 0.500 ± 0.000 against the target m̄ 0.1' in row[2]
  assert 'at the RNN-d it reaches (not at its target m̄)' in row[0]


def test_a_setting_planned_with_one_seed_says_so(tmp_path):
  plan = tmp_path / 'vc.toml'
  plan.write_text(
      '[[run]]\nfolder = "vc/frontier_ptb_vcrnn256_m0.3"\nseeds = "0"\n'
      'command = "x --seed={seed} --workdir={workdir}"\n')
  groups = _groups(**ELMAN, **{'vcrnn256_m0.3': [(192, 1.85)]})
  (row,) = frontier.frontier_rows(groups, 'ptb', plan)
  assert row[3] == '**undecided**'
  assert 'planned with one seed by design' in row[2]
  # Without such a plan the row only counts its seeds.
  (row,) = frontier.frontier_rows(groups, 'ptb', tmp_path / 'none.toml')
  assert 'by design' not in row[2]


def test_the_table_says_which_runs_end_with_an_infinite_norm():
  groups = _groups('ptb1024', elman768=[(768, 1.6)],
                   **{'vcrnn1024_m0.5': [(988, 1.87), (600, 5.0)]})
  runs = groups[f'{frontier.FRONTIER}ptb1024_vcrnn1024_m0.5']
  runs[0]['final'] = {'train_grad_norm_scheduler': 250.7}
  runs[1]['final'] = {'train_grad_norm_scheduler': 'inf'}
  text = frontier.frontier_table(groups, 'ptb1024')
  assert ('is not finite (`inf`) for VCRNN-1024 (m̄ 0.5) seed 1; finite '
          'for VCRNN-1024 (m̄ 0.5) seed 0.') in text
  runs[1]['final'] = {'train_grad_norm_scheduler': 3.0}
  assert 'not finite' not in frontier.frontier_table(groups, 'ptb1024')
