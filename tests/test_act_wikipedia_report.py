"""ACT Sec. 3.5 from fabricated records (experiments.reports.act.wikipedia):
folder names, the class claims, the inert case, bits per character paired
by seed, the summary rows and the figure."""

from experiments.reports.act import results as act_results
from experiments.reports.act import wikipedia

ACT = 'act/wikipedia_shakespeare_lstm128_tau0.006'
NO_ACT = 'act/wikipedia_shakespeare_lstm128_noact'


def _record(seed, bpc, by_class=None, act=True, floor=0.1, cap=0.02):
  analysis = None
  if by_class is not None:
    analysis = {
        'split': 'valid', 'unit': 'char', 'symbols': 20000, 'seq_len': 100,
        'windows': 200, 'mean_ponder': by_class.get('all', 3.0),
        'ponder_min': 2.0, 'ponder_max': 5.0, 'max_steps': 100,
        'share_at_floor': floor, 'share_at_cap': cap,
        'mean_ponder_by_class': {
            c: {'mean': by_class.get(c), 'count': 0 if by_class.get(c) is None
                else 100} for c in wikipedia.CLASS_LABELS},
        'ponder_over_text': {'symbols': list('To be, or not'),
                             'ponder': [2.0 + i % 3 for i in range(13)],
                             'bits': [1.0] * 13, 'resets': [0]}}
  return {'seed': seed, 'steps': 20000, 'commit': 'a' * 40, 'dirty': False,
          'machine': {'name': 'CPU-2'}, 'versions': {'python': '3.11.7'},
          'flags': {'act': act, 'tau': 0.006, 'hidden_size': 128,
                    'cell': 'lstm', 'max_steps': 100},
          'final': {'bpc': bpc, 'ponder': 3.0 if act else 1.0},
          'results': {'analysis': analysis}}


def _classes(space, start, end, inside=2.5):
  return {'all': 3.0, 'space': space, 'word_start': start,
          'sentence_end': end, 'inside_word': inside, 'word_end': 2.6,
          'newline': 3.5, 'punctuation': 3.2}


def _labels(groups):
  return {row[0]: row[2] for row in wikipedia.claim_rows(groups)}


def test_folder_names_parse():
  assert wikipedia.parse(ACT) == ('shakespeare_lstm128', 'tau0.006')
  assert wikipedia.parse(NO_ACT) == ('shakespeare_lstm128', 'noact')
  assert wikipedia.parse('act/parity_tau0.01') is None


def test_class_claims_and_paired_bits():
  groups = {
      ACT: [_record(0, 2.10, _classes(4.0, 3.0, 2.4)),
            _record(1, 2.12, _classes(4.2, 3.1, 2.5)),
            _record(2, 2.08, _classes(3.9, 2.9, 2.6))],
      NO_ACT: [_record(s, b, act=False) for s, b in
               ((0, 2.20), (1, 2.25), (2, 2.19))]}
  labels = _labels(groups)
  where = '(shakespeare, LSTM-128)'
  assert labels[f'Wikipedia, τ = 0.006: ponder at spaces above inside words '
                f'{where}'] == '**holds**'
  assert labels['Wikipedia, τ = 0.006: ponder at the first character after '
                f'a space above inside words {where}'] == '**holds**'
  # Sentence ends (2.4-2.6) against inside words (2.5): no direction.
  assert labels['Wikipedia, τ = 0.006: ponder at sentence ends above inside '
                f'words {where}'] == '**within noise**'
  assert labels['Wikipedia, τ = 0.006: bits per character with ACT against '
                f'without {where}'] == '**holds**'
  table = wikipedia.table(groups)
  assert 'inside a word' in table and '`--act=false`' in table
  assert '4.000' in table and '2.200' in table
  assert 'No record yet' not in wikipedia.verdicts_text(groups)


def test_an_inert_ponder_is_not_testable_and_a_missing_class_is_skipped():
  floor = {c: 2.0 for c in wikipedia.CLASS_LABELS}
  groups = {ACT: [_record(s, 2.1, floor, floor=1.0, cap=0.0)
                  for s in range(3)]}
  labels = _labels(groups)
  assert set(labels.values()) == {'**not testable here**'}
  rows = wikipedia.claim_rows(groups)
  assert 'floor' in rows[0][3]
  capped = {c: 100.5 for c in wikipedia.CLASS_LABELS}
  # At the cap but for the first character of each window (1 in 100).
  groups = {ACT: [_record(s, 2.1, capped, floor=0.0, cap=0.99)
                  for s in range(3)]}
  assert set(_labels(groups).values()) == {'**not testable here**'}
  assert 'cap (M = 100) on 99.0%' in wikipedia.claim_rows(groups)[0][3]
  # One inert seed of three: the two that act cannot decide.
  live = [_record(s, 2.1, _classes(4.0 + s / 10, 3.0, 3.0)) for s in (1, 2)]
  groups = {ACT: [_record(0, 2.1, capped, cap=0.99)] + live}
  rows = wikipedia.claim_rows(groups)
  assert rows[0][2] == '**not testable here**'
  assert rows[0][3].startswith('1 of 3 seeds inert (seed 0: ponder at its cap')
  assert '2 seeds whose ponder acts are fewer than 3' in rows[0][3]
  # One inert seed of four: judged over the three that act, which all pause
  # at spaces (the inert seed's difference of 0 would have pulled the mean
  # interval over 0).
  groups[ACT].append(_record(3, 2.1, _classes(4.3, 3.0, 3.0)))
  rows = wikipedia.claim_rows(groups)
  assert rows[0][2] == '**holds**'
  assert rows[0][3].startswith('1 of 4 seeds inert (seed 0: ponder at its cap')
  assert 'left out' in rows[0][3] and 'n = 3' in rows[0][3]
  # No sentence mark in the text read: that claim has no seed (undecided);
  # no analysis at all (an older record): no class row in the table.
  no_end = _classes(4.0, 3.0, None)
  groups = {ACT: [_record(s, 2.1, no_end) for s in range(3)]
            + [_record(3, 2.1)]}
  labels = _labels(groups)
  assert [v for k, v in labels.items() if 'sentence' in k] == [
      '**undecided**']
  assert '| 3 |' not in wikipedia.table(groups)


def test_summary_rows_replace_the_undecided_row_and_link_the_section():
  assert wikipedia.summary_rows({}) == {}
  groups = {ACT: [_record(s, 2.1, _classes(4.0, 3.0, 3.0))
                  for s in range(3)]}
  rows = wikipedia.summary_rows(groups)['Wikipedia']
  assert len(rows) == 3 and all(r[0].startswith('Wikipedia') for r in rows)
  assert ('Wikipedia', '[Wikipedia](#wikipedia-sec-35)') in \
      act_results.SECTIONS


def test_outputs_and_figure(tmp_path):
  empty = wikipedia.outputs({})
  assert [o.path for o in empty] == ['act/wikipedia.md',
                                     'act/wikipedia_verdicts.md',
                                     'act/wikipedia_ponder.svg']
  assert empty[0].text == 'No record yet.\n' and empty[2].data == {}
  assert empty[2].draw(tmp_path / 'empty.svg').stat().st_size > 0
  groups = {ACT: [_record(s, 2.1, _classes(4.0, 3.0, 3.0))
                  for s in (2, 1)]}
  data = wikipedia.ponder_data(groups)
  assert data['seed'] == 1 and data['symbols'] == list('To be, or not')
  # A seed at its floor is passed over for one whose ponder acts.
  groups[ACT].append(_record(0, 2.1, _classes(2.0, 2.0, 2.0, 2.0), floor=1.0))
  assert wikipedia.ponder_data(groups)['seed'] == 1
  inert_only = {ACT: [_record(0, 2.1, _classes(2.0, 2.0, 2.0, 2.0),
                              floor=1.0)]}
  assert wikipedia.ponder_data(inert_only)['seed'] == 0
  out = wikipedia.outputs(groups)[2]
  path = out.draw(tmp_path / 'ponder.svg')
  assert path.read_text().lstrip().startswith('<?xml')
