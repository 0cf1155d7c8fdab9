"""The VC results page (experiments.reports.vc.results, docs/results/vc.md):
its summary's verdicts follow from the records by the criteria it prints,
and the page types no result of its own."""

import pathlib

from experiments.reports import results as paper_results
from experiments.reports.vc import results

PAGE = pathlib.Path(__file__).resolve().parents[1] / 'docs/results/vc.md'


def _classes(table: dict) -> dict:
  return {grouping: {c: {'mean': m, 'count': 100} for c, m in means.items()}
          for grouping, means in table.items()}


def _run(seed: int, *, bpc: float = 1.9, rnn_d: float = 224.0,
         classes: dict | None = None, perplexity: float = 10.0) -> dict:
  """A record as ``experiments.vc_ptb``/``vc_music`` write it, with only
  the keys the results module reads."""
  test = {'bpc': bpc, 'rnn_d': rnn_d, 'm': rnn_d / 256,
          'perplexity': perplexity}
  run = {'seed': seed, 'commit': 'c6ead81' + '0' * 33, 'dirty': False,
         'path': f'vc/x/seed={seed}.json', 'machine': {'name': 'CPU-2'},
         'versions': {'python': '3.11.7'},
         'command': 'python -m experiments.vc_ptb --level=char '
                    f'--seed={seed}',
         'final': {'bpc': bpc, 'perplexity': perplexity, 'step': 3000},
         'curve': [{'step': 3000, 'bpc': bpc}],
         'results': {'test': test}}
  if classes:
    run['results']['analysis'] = {
        'mean_m_by_class': _classes(classes),
        'peak_rate_by_class': _classes(classes)}
  return run


def _symbol(boundary: float, inside: float) -> dict:
  return {'symbol': {'boundary': boundary, 'inside word': inside}}


def _label(row: list[str]) -> str:
  return row[3].strip('*')


def _ptb(elman, vc, guided=None) -> dict:
  """Groups as ``records.read_records`` gives them: folder -> runs."""
  groups = {'vc/ptb_elman224': [_run(s, bpc=b) for s, b in enumerate(elman)],
            'vc/ptb_vcrnn256': [
                _run(s, bpc=b, rnn_d=210.0, classes=_symbol(0.9, 0.7))
                for s, b in enumerate(vc)]}
  if guided is not None:
    groups['vc/ptb_vcrnn256_guided'] = [
        _run(s, bpc=b, rnn_d=215.0) for s, b in enumerate(guided)]
  return groups


def _ptb_rows(groups) -> list[list[str]]:
  return results.ptb_rows(results._experiments(groups, results.PTB))


def test_central_claim_is_paired_by_seed():
  better = _ptb(elman=[1.93, 1.92, 1.94], vc=[1.90, 1.89, 1.91])
  rows = _ptb_rows(better)
  assert _label(rows[0]) == 'holds'
  assert 'better on 3 of 3 seeds' in rows[0][2]
  assert 'RNN-d 210' in rows[0][2] and 'RNN-d 224' in rows[0][2]
  worse = _ptb(elman=[1.90, 1.89, 1.91], vc=[1.93, 1.92, 1.94])
  assert _label(_ptb_rows(worse)[0]) == 'does not hold'
  mixed = _ptb(elman=[1.93, 1.92, 1.94], vc=[1.90, 1.95, 1.93])
  assert _label(_ptb_rows(mixed)[0]) == 'within noise'


def test_pairs_only_common_seeds():
  groups = _ptb(elman=[1.93, 1.92, 1.94], vc=[1.90, 1.89, 1.91])
  groups['vc/ptb_elman224'] = groups['vc/ptb_elman224'][:2]
  assert _label(_ptb_rows(groups)[0]) == 'undecided'


def test_guided_with_two_seeds_is_undecided():
  groups = _ptb(elman=[1.93, 1.92, 1.94], vc=[1.90, 1.89, 1.91],
                guided=[1.80, 1.81])
  rows = _ptb_rows(groups)
  assert [_label(r) for r in rows[2:4]] == ['undecided', 'undecided']


def test_cost_row_compares_rnn_d_with_the_baseline():
  rows = _ptb_rows(_ptb(elman=[1.9] * 3, vc=[1.9] * 3))
  # RNN-d 210 on every seed against 224: no spread, below.
  assert _label(rows[1]) == 'holds'


def test_word_boundary_rows_follow_the_sign_on_every_seed():
  groups = _ptb(elman=[1.9] * 3, vc=[1.9] * 3)
  rows = _ptb_rows(groups)
  assert [_label(r) for r in rows[4:6]] == ['holds', 'holds']
  runs = groups['vc/ptb_vcrnn256']
  runs[0]['results']['analysis'] = {
      k: _classes(_symbol(0.5, 0.8)) for k in runs[1]['results']['analysis']}
  # One seed the other way: the mean is still above, the interval is not.
  assert _label(_ptb_rows(groups)[4]) == 'within noise'


def _music(kinds: dict, lengths: dict, n: int = 3) -> dict:
  return {'vc/music_vcrnn128': [
      _run(s, rnn_d=110.0, classes={'symbol kind': kinds,
                                    'note length': lengths})
      for s in range(n)]}


def test_music_rows_read_kinds_and_dotted_note_lengths():
  kinds = {'bar': 0.5, 'note': 0.9, 'rest': 0.7, 'other': 0.6}
  rows = results.music_rows(results._experiments(
      _music(kinds, {'0.5': 0.95, '1': 0.9}), results.MUSIC))
  labels = [_label(r) for r in rows]
  assert labels == ['undecided', 'holds', 'holds', 'holds']
  # Sixteenth notes ('0.5', a class with a dot) below eighths.
  rows = results.music_rows(results._experiments(
      _music(kinds, {'0.5': 0.7, '1': 0.9}), results.MUSIC))
  assert _label(rows[3]) == 'does not hold'
  assert '0.700' in rows[3][2]


def test_others_mean_is_weighted_by_count():
  run = _run(0, classes={'symbol kind': {'bar': 0.2}})
  run['results']['analysis']['mean_m_by_class']['symbol kind'].update(
      {'note': {'mean': 0.9, 'count': 300}, 'rest': {'mean': 0.5,
                                                      'count': 100}})
  assert results._others_mean(run, 'symbol kind', ['bar']) == 0.8


def test_summary_without_records_says_not_recorded():
  text = results.summary({})
  body = [line for line in text.splitlines()[2:] if line.startswith('|')]
  assert body and all('undecided' in line for line in body)


def test_outputs_follow_each_table_with_its_verification():
  groups = {**_ptb(elman=[1.9] * 3, vc=[1.9] * 3),
            **_music({'bar': 0.5, 'note': 0.9}, {'0.5': 0.7, '1': 0.9})}
  outs = {o.path: o for o in results.outputs(groups, None)}
  assert {'vc/summary.md', 'vc/ptb.md', 'vc/music.md'} <= set(outs)
  ptb = outs['vc/ptb.md'].text
  assert '- `vc/ptb_elman224`: Not verified' in ptb
  assert '- `vc/ptb_vcrnn256`: Not verified' in ptb
  assert '- `vc/music_vcrnn128`: Not verified' in outs['vc/music.md'].text


def test_page_includes_the_summary_and_types_no_result():
  text = PAGE.read_text()
  assert '```{include} generated/vc/summary.md\n```' in text
  assert paper_results.typed_results(text) == []
  # The history is on the notebook page, its last section.
  assert paper_results.HISTORY not in text
  notebook = (PAGE.parent / 'notebooks' / PAGE.name).read_text()
  assert notebook.count(paper_results.HISTORY) == 1
  tail = notebook.split(paper_results.HISTORY, 1)[1]
  assert '\n## ' not in tail


def test_a_stale_folder_marks_the_verdicts_resting_on_it():
  groups = _ptb(elman=[1.9] * 3, vc=[1.9] * 3)
  folder = next(g for g in groups if g.endswith('vcrnn256'))
  text = results.summary(groups, {folder: {'status': 'stale'}})
  assert '** *stale records* |' in text
  assert 'records*' not in results.summary(groups)
  # A row with no records carries no mark.
  assert all('records*' not in line for line in text.splitlines()
             if 'records missing' in line)


def test_overflow_table_reads_the_run_past_the_sharpness_of_one():
  run = {'seed': 0, 'steps': 3000, 'commit': 'a' * 40, 'dirty': False,
         'machine': {'name': 'CPU-2'}, 'versions': {'python': '3.11.7'},
         'flags': {'sharpness_every': 200},
         'curve': [{'step': 1500, 'bpc': 2.1}, {'step': 2000, 'bpc': 2.0},
                   {'step': 3000, 'bpc': 1.9}],
         'final': {'train_grad_norm': 812.5,
                   'train_rescaled_grad_norm_steps': 3, 'm': 0.52}}
  assert results._reaches_one(run['flags']) == 1800
  text = results.overflow_table({'vc/overflow_ptb_vcrnn1024_m0.5_fast': [run]})
  assert ('| `vc/overflow_ptb_vcrnn1024_m0.5_fast` | 0 | 3,000 | 1,800 | '
          '2.100 (step 1,500) | 1.900 | 812.5 | 3 | 0.520 |') in text
  assert 'Not verified' in text
  assert results.overflow_table({}) == 'No record yet.\n'


def test_class_means_rates_and_their_differences_stay_in_their_range():
  groups = _ptb(elman=[1.9] * 3, vc=[1.9] * 3)
  runs = groups['vc/ptb_vcrnn256']
  for run, (b, i) in zip(runs, [(0.99, 0.1), (0.05, 0.9), (0.9, 0.2)]):
    run['results']['analysis'] = {
        k: _classes(_symbol(b, i)) for k in run['results']['analysis']}
  for row in _ptb_rows(groups)[4:6]:
    ends = [float(x) for part in row[2].split('95% CI ')[1:]
            for x in part.split(';')[0].split(' to ')]
    class_ends, diff_ends = ends[:4], ends[4:]
    assert all(0 <= x <= 1 for x in class_ends), row[2]
    assert all(-1 <= x <= 1 for x in diff_ends), row[2]


def test_the_music_row_names_the_updates_no_elman_network_has():
  groups = _music({'bar': 0.5, 'note': 0.9}, {'0.5': 0.7, '1': 0.9})
  for run in groups['vc/music_vcrnn128']:
    run['steps'] = 1500
  elman = [dict(_run(s, rnn_d=128.0), steps=5000) for s in range(3)]
  groups['vc/frontier_music_elman128'] = elman
  text = results.summary(groups)
  assert ("no Elman network on music is recorded at this row's 1,500 "
          "updates; the frontier's Elman-128 (5,000 updates)") in text
  assert 'no Elman network on music is recorded |' not in text
