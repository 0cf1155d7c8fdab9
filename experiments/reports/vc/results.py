r"""VCRNN's results, from its run records (``docs/results/records/vc``).

The experiments (folders of records) this module reads, one record per
seed:

* ``vc/ptb_<model>``: ``experiments.vc_ptb --level=char`` (Table 3 at a
  reduced size: valid and test bits per character, mean :math:`m_t`, RNN-d,
  and where the scheduler computes: mean :math:`m_t` and the rate of the 5%
  largest :math:`m_t` on word boundaries against inside words, Fig. 3);
* ``vc/music_<model>``: ``experiments.vc_music`` (Table 2: perplexity and
  mean :math:`m_t` per symbol kind and per note length).

:func:`outputs` gives the page's summary (``vc/summary.md``: one row per
claim of the paper, its verdict from :mod:`experiments.reports.verdicts` by
the criterion printed beside it; a claim with no record says so), its
tables (``vc/ptb.md``, ``vc/music.md``: mean ± standard deviation over
seeds, every seed listed, then whether today's code still computes the
records) and figures (``vc/ptb_curves.svg``: valid bits per character per
seed; ``vc/where.svg``: mean :math:`m_t` per symbol class, per seed).
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from experiments.reports import plots, records, verdicts, verify
from experiments.reports.vc import frontier

__all__ = [
    'NOT_RUN',
    'not_run',
    'OVERFLOW',
    'overflow_table',
    'PTB',
    'MUSIC',
    'PTB_CLASSES',
    'MUSIC_CLASSES',
    'lm_table',
    'compare',
    'where_data',
    'draw_where',
    'MUSIC_VC',
    'NAMES',
    'PAPER_PTB',
    'PAPER_PTB_COST',
    'PAPER_GUIDE',
    'PAPER_BOUNDARY',
    'PAPER_BAR',
    'PAPER_REST',
    'PAPER_FAST',
    'PAPER_MUSIC',
    'PAPER_VCGRU',
    'PAPER_BIT',
    'PAPER_BIT_WHERE',
    'PAPER_TEXT8',
    'PAPER_EUROPARL',
    'SUMMARY_HEADER',
    'against_elman',
    'cost_row',
    'where_row',
    'frontier_where_rows',
    'ptb_rows',
    'music_rows',
    'unrecorded_rows',
    'summary',
    'status_lines',
    'outputs',
    'ptb_outputs',
]

PTB = 'vc/ptb_'
MUSIC = 'vc/music_'
# (grouping, class) pairs compared on each corpus.
PTB_CLASSES = ('symbol', ('boundary', 'inside word'))
MUSIC_CLASSES = ('symbol kind', ('bar', 'note'))


def _experiments(groups, prefix) -> dict[str, list]:
  return {name[len(prefix):]: sorted(runs, key=lambda r: r['seed'])
          for name, runs in sorted(groups.items()) if name.startswith(prefix)}


def _ms(values, digits: int) -> str:
  values = [v for v in values if v is not None]
  if not values:
    return '-'
  mean, std, _ = records.mean_std(values)
  return f'{mean:.{digits}f}' + (f' ± {std:.{digits}f}' if std is not None
                                 else '')


def _class_value(run, table: str, grouping: str, cls: str) -> float | None:
  return records.value(run, f'results.analysis.{table}.{grouping}.{cls}.mean'
                       ) if grouping and cls else None


def _by_class(runs, table, grouping, classes) -> str:
  cells = [_ms([_class_value(r, table, grouping, c) for r in runs], 3)
           for c in classes]
  return '-' if all(c == '-' for c in cells) else ' / '.join(cells)


def _command_flags(run) -> str:
  words = run['command'].split()
  keep = [w for w in words[3:] if not w.startswith(('--seed=', '--data_dir=',
                                                    '--data_path=',
                                                    '--workdir='))]
  return ' '.join(keep)


def lm_table(models: Mapping[str, list], metric: str, classes) -> str:
  """Per experiment: valid and test ``metric``, :math:`m_t`, RNN-d and the
  per-class measures, mean ± std over seeds."""
  grouping, names = classes
  header = ['run', f'valid {metric}', 'per seed', f'test {metric}',
            'mean m_t', 'RNN-d', f'mean m_t {" / ".join(names)}',
            f'5% largest m_t {" / ".join(names)}', 'seeds', 'flags']
  rows = []
  for name, runs in models.items():
    rows.append([
        name, _ms([r['final'].get(metric) for r in runs], 4),
        ' / '.join(f'{r["final"][metric]:.4f}' for r in runs),
        _ms([records.value(r, f'results.test.{metric}') for r in runs], 4),
        _ms([records.value(r, 'results.test.m') for r in runs], 3),
        _ms([records.value(r, 'results.test.rnn_d') for r in runs], 0),
        _by_class(runs, 'mean_m_by_class', grouping, names),
        _by_class(runs, 'peak_rate_by_class', grouping, names),
        records.seeds_text(runs), f'`{_command_flags(runs[0])}`'])
  every = [r for runs in models.values() for r in runs]
  return (records.table(header, rows) + '\n'
          + records.provenance(every) + '\n')


def compare(models: Mapping[str, list], metric: str, vc: str, base: str
            ) -> str:
  """One sentence: on how many common seeds ``vc`` has the lower valid
  ``metric`` than ``base``, and at which RNN-d."""
  if vc not in models or base not in models:
    return ''
  theirs = {r['seed']: r for r in models[base]}
  pairs = [(r, theirs[r['seed']]) for r in models[vc] if r['seed'] in theirs]
  if not pairs:
    return ''
  wins = [r['seed'] for r, b in pairs if r['final'][metric]
          < b['final'][metric]]
  d_vc = [records.value(r, 'results.test.rnn_d') for r, _ in pairs]
  d_base = [records.value(b, 'results.test.rnn_d') for _, b in pairs]
  return (f'{vc} has a lower valid {metric} than {base} on {len(wins)} of '
          f'{len(pairs)} seeds'
          + (f' ({", ".join(map(str, wins))})' if wins else '')
          + f', at RNN-d {_ms(d_vc, 0)} against {_ms(d_base, 0)}.\n')


def where_data(models: Mapping[str, list], classes) -> dict:
  """Per VC experiment and seed, mean :math:`m_t` of each compared class."""
  grouping, names = classes
  out = {}
  for name, runs in models.items():
    values = {f'seed {r["seed"]}': [_class_value(r, 'mean_m_by_class',
                                                 grouping, c) for c in names]
              for r in runs}
    if any(None not in v for v in values.values()):
      out[name] = {'classes': list(names), 'seeds': values}
  return out


def draw_where(data: Mapping[str, Any], path):
  """Mean :math:`m_t` per class, one panel per experiment, a line per
  seed."""
  fig = plots.new_figure((3.2 * len(data) + 0.8, 3.6))
  axes = fig.subplots(1, len(data), squeeze=False)[0]
  for ax, (name, d) in zip(axes, data.items()):
    for label, values in d['seeds'].items():
      ax.plot(range(len(values)), values, 'o-', label=label)
    ax.set_xticks(range(len(d['classes'])), d['classes'])
    ax.set_ylim(0, 1)
    ax.set_title(name, fontsize=9)
    ax.grid(alpha=0.3)
  axes[0].set_ylabel('mean m_t')
  axes[0].legend(fontsize=7)
  return records.save_svg(fig, path)


# The summary's experiments (folders under vc/ptb_ and vc/music_) and their
# names in it.
LEARNED, GUIDED, BASELINE = 'vcrnn256', 'vcrnn256_guided', 'elman224'
MUSIC_VC = 'vcrnn128'
NAMES = {LEARNED: 'VCRNN-256 (learned)', GUIDED: 'VCRNN-256 (guided)',
         BASELINE: 'Elman-224', MUSIC_VC: 'VCRNN-128'}
# The note lengths Table 2's fast passages are judged by, in the tokens'
# units (the default length, an eighth note in thesession's tunes): "0.5" is
# a sixteenth note, "1" an eighth.
SIXTEENTH, EIGHTH = '0.5', '1'

# The paper's numbers (Jernite et al. 2016), each where it is printed: the
# summary's "the paper" column.
# Table 3 left (character-level PTB, test bpc) and Sec. 5.2.1.
PAPER_PTB = ('VCRNN-1024 1.46 bpc at RNN-d 760; RNN-1024 1.47 at 1024, '
             'RNN-760 1.47 at 760 (Table 3 left)')
# Table 3 left: VCRNN-1024's computation against RNN-1024's.
PAPER_PTB_COST = 'VCRNN-1024 at RNN-d 760 against 1024 (Table 3 left)'
# Sec. 5.2.2: the per-symbol target (guide) is the paper's Europarl setting
# only (Fig. 4); on PTB it is this repository's question.
PAPER_GUIDE = ('not run on PTB: the guide (Sec. 5.2.2) is used on Europarl '
               'only (Fig. 4)')
# Fig. 3 top (English) and Sec. 5.2.1, "Character Level Scheduler".
PAPER_BOUNDARY = ('the highest dimensions are used about once per word, at '
                  'word boundaries (Fig. 3 top, Sec. 5.2.1)')
# Sec. 5.2, "Character Level Scheduler", of the VCGRU.
PAPER_BOUNDARY_VCGRU = ('"the VCGRU scheduler follows the same patterns" as '
                        'the VCRNN\'s, used about once per word (Sec. 5.2)')
# Sec. 5.1: mean m_t on bar lines against all other symbols, and on rests.
PAPER_BAR = 'mean m_t 0.14 on bar lines against 0.46 on all others (Sec. 5.1)'
PAPER_REST = 'mean m_t 0.34 on rests, 0.46 on all symbols but bars (Sec. 5.1)'
# Table 2: mean m_t by note length in quarter notes: 0.25 (sixteenths)
# 0.61, 1/3 (triplets) 0.77, 0.5 (eighths) 0.39.
PAPER_FAST = ('mean m_t 0.61 on sixteenth notes against 0.39 on eighths '
              '(Table 2, lengths 0.25 and 0.5)')
# Table 1: music, test perplexity at RNN-d.
PAPER_MUSIC = ('VCRNN-500 8.51 at RNN-d 233; RNN-250 8.70, RNN-200 9.13 '
               '(Table 1)')
# Table 3 left: VCGRU against GRUs.
PAPER_VCGRU = ('VCGRU-1024 1.42 bpc at RNN-d 648; GRU-458 1.47 at 648, '
               'GRU-1024 1.42 at 1450 (Table 3 left)')
# Table 3 middle: bit-level PTB, bits per bit.
PAPER_BIT = ('VCRNN-1000 0.215 at RNN-d 460 and 0.231 at 340; RNN-1000 '
             '0.223 at 1000 (Table 3 middle)')
# Fig. 2 and Sec. 5.2.1, "Bit Level Scheduler".
PAPER_BIT_WHERE = ('the highest dimensions are updated about every 8 bits; '
                   'with 8 or 24 buffer bits per character, computation goes '
                   'to the characters (Fig. 2)')
# Table 3 right: Text8.
PAPER_TEXT8 = ('VCGRU-1024 1.63-1.69 bpc at RNN-d 464-820; GRU-512 1.69 at '
               '725, GRU-1024 1.58 at 1450 (Table 3 right)')
# Fig. 4 and Sec. 5.2.2: Europarl Czech and German.
PAPER_EUROPARL = ('VCRNN, guided or learned, below an RNN\'s bpc at each '
                  'computational load, Czech and German (Fig. 4); more '
                  'dimensions at word boundaries (Fig. 3 middle, bottom)')

SUMMARY_HEADER = ['claim', 'the paper', 'here', 'verdict', 'criterion']
# Where each claim's data is shown on the results page (vc.md).
_THREE_SEEDS = '#character-ptb-and-music-three-seeds-from-records'
SECTIONS = (
    ('a VCRNN reaches', f'[PTB]({_THREE_SEEDS})'),
    ('VCRNN-256', f'[PTB]({_THREE_SEEDS})'),
    ('with the word', f'[PTB]({_THREE_SEEDS})'),
    ('more computation at word boundaries (learned)',
     '[PTB](#character-ptb-and-music-three-seeds-from-records)'),
    ('the largest updates',
     '[PTB](#character-ptb-and-music-three-seeds-from-records)'),
    ('a VCRNN predicts music',
     '[music](#character-ptb-and-music-three-seeds-from-records)'),
    ('bar lines get less computation (frontier',
     '[frontier](#the-irish-tunes-frontier-from-records)'),
    ('fast passages get more computation (frontier',
     '[frontier](#the-irish-tunes-frontier-from-records)'),
    ('bar lines', '[music](#character-ptb-and-music-three-seeds-from-records)'),
    ('rests', '[music](#character-ptb-and-music-three-seeds-from-records)'),
    ('fast passages',
     '[music](#character-ptb-and-music-three-seeds-from-records)'),
    ('Table 3, Sec. 5.2.1: VCRNN-1024',
     '[GPU](#character-ptb-at-the-papers-width-on-a-gpu-from-records)'),
    ('Table 3', '[frontier](#the-character-ptb-frontier-from-records)'),
    ('Sec. 5.2.2', '[frontier](#the-character-ptb-frontier-from-records)'),
    ('Table 1', '[frontier](#the-irish-tunes-frontier-from-records)'),
    ('more computation at word boundaries (frontier',
     '[frontier](#the-character-ptb-frontier-from-records)'),
)
Rows = list[list[str]]


_fixed = frontier.fixed
# The range of a mean m_t and of a rate of the largest m_t (both in
# [0, 1]), and of a difference of two of them.
UNIT, DIFFERENCE = (0.0, 1.0), (-1.0, 1.0)


def _interval(values, digits: int, bounds: verdicts.Bounds = None) -> str:
  """The mean with its 95% interval and n (``-`` for no value); ``bounds``:
  the quantity's range (:func:`experiments.reports.verdicts.interval`)."""
  values = [v for v in values if v is not None]
  return (verdicts.mean_interval_text(values, _fixed(digits), bounds)
          if values else '-')


def _name(model: str) -> str:
  return NAMES.get(model, model)


def _row(claim: str, paper: str, measured: str,
         verdict: verdicts.Verdict) -> list[str]:
  """A summary row; ``here`` is what the records measure, then the
  verdict's evidence."""
  label, evidence, criterion = verdict.cells()
  sep = ' ' if measured.endswith(':') else '; '
  here = f'{measured}{sep}{evidence}' if measured else evidence
  return [claim, paper, here, label, criterion]


def _paired(a_runs, b_runs, key: str) -> tuple[list, list]:
  """The values at ``key`` of the seeds both have, in seed order: a
  paired comparison must not pair different seeds."""
  a = {r['seed']: records.value(r, key) for r in a_runs}
  b = {r['seed']: records.value(r, key) for r in b_runs}
  seeds = sorted(set(a) & set(b))
  return [a[s] for s in seeds], [b[s] for s in seeds]


def _missing(*names: str) -> verdicts.Verdict:
  return verdicts.not_recorded(
      'no records of ' + ' and '.join(f'`{n}`' for n in names))


def _rnn_d(runs) -> list:
  return [records.value(r, 'results.test.rnn_d') for r in runs]


def against_elman(ptb: Mapping[str, list], vc: str, claim: str,
                  paper: str) -> list[str]:
  """Table 3's central claim for ``vc``: a lower test bpc than the Elman
  baseline, paired by seed, with the computation (RNN-d) of each."""
  if vc not in ptb or BASELINE not in ptb:
    return _row(claim, paper, '', _missing(PTB + vc, PTB + BASELINE))
  a, b = _paired(ptb[vc], ptb[BASELINE], 'results.test.bpc')
  da, db = _paired(ptb[vc], ptb[BASELINE], 'results.test.rnn_d')
  verdict = verdicts.paired(
      a, b, claim=f'{_name(vc)} has a lower test bpc than '
      f'{_name(BASELINE)}', fmt=_fixed(4))
  measured = (f'test bpc {_name(vc)} {_interval(a, 4)} at RNN-d '
              f'{_interval(da, 0)}; {_name(BASELINE)} {_interval(b, 4)} at '
              f'RNN-d {_interval(db, 0)}')
  return _row(claim, paper, measured, verdict)


def cost_row(ptb: Mapping[str, list], vc: str) -> list[str]:
  """Table 3's cost side: ``vc`` updates fewer dimensions than the Elman
  baseline (RNN-d below the baseline's)."""
  claim = (f'{_name(vc)} computes less than {_name(BASELINE)} (test '
           'RNN-d)')
  if vc not in ptb or BASELINE not in ptb:
    return _row(claim, PAPER_PTB_COST, '', _missing(PTB + vc,
                                                    PTB + BASELINE))
  bound = min(_rnn_d(ptb[BASELINE]))
  verdict = verdicts.below(_rnn_d(ptb[vc]), bound, what='test RNN-d',
                           fmt=_fixed(0))
  return _row(claim, PAPER_PTB_COST, '', verdict)


def _classes(run, table: str, grouping: str) -> Mapping[str, Any]:
  """``{class: {'mean', 'count'}}``; a class may hold a dot (a note length
  of ``'0.5'``), so it is not part of a dotted key."""
  return records.value(run, f'results.analysis.{table}.{grouping}') or {}


def _class_mean(run, table: str, grouping: str, cls: str) -> float | None:
  return _classes(run, table, grouping).get(cls, {}).get('mean')


def _others_mean(run, grouping: str, exclude: Sequence[str]
                 ) -> float | None:
  """Mean :math:`m_t` over the classes of ``grouping`` not in ``exclude``,
  weighted by count: the paper's "as opposed to ... all others"."""
  classes = _classes(run, 'mean_m_by_class', grouping)
  others = [v for k, v in classes.items() if k not in exclude]
  total = sum(v['count'] for v in others)
  return (sum(v['mean'] * v['count'] for v in others) / total if total
          else None)


def _difference(high, low) -> list:
  return [None if h is None or l is None else h - l
          for h, l in zip(high, low)]


def where_row(runs, claim: str, paper: str, measure: str,
              high: tuple[str, Callable], low: tuple[str, Callable],
              unit: str = 'seed') -> list[str]:
  """A where-computation-goes claim: per seed (or per ``unit``: a run of
  several settings), ``high``'s value minus ``low``'s (each a name and a
  function of a run) is positive on every one. Both values lie in [0, 1]
  (a mean :math:`m_t`, a rate), so their intervals are a rate's and their
  difference's lies in [-1, 1]."""
  if not runs:
    return _row(claim, paper, '', verdicts.not_recorded('no records'))
  hv = [high[1](r) for r in runs]
  lv = [low[1](r) for r in runs]
  verdict = verdicts.exceeds(
      _difference(hv, lv), claim=f'per {unit}, {measure} on {high[0]} minus '
      f'on {low[0]}', fmt=_fixed(3), bounds=DIFFERENCE)
  measured = (f'{measure}: {high[0]} {_interval(hv, 3, UNIT)}, {low[0]} '
              f'{_interval(lv, 3, UNIT)}; their difference, per {unit}:')
  return _row(claim, paper, measured, verdict)


def _of(table: str, grouping: str, cls: str) -> Callable:
  return lambda run: _class_mean(run, table, grouping, cls)


def ptb_rows(ptb: Mapping[str, list]) -> Rows:
  """Table 3 and Fig. 3 on character PTB."""
  learned = ptb.get(LEARNED, [])
  boundary, inside = ('word boundaries', 'inside words')
  return [
      against_elman(ptb, LEARNED, 'a VCRNN reaches a lower test bpc than '
                    'an Elman RNN of equal or more computation (Table 3, '
                    'Sec. 5.2.1)', PAPER_PTB),
      cost_row(ptb, LEARNED),
      against_elman(ptb, GUIDED, 'with the word boundary guided, the same',
                    PAPER_GUIDE),
      cost_row(ptb, GUIDED),
      where_row(learned, 'more computation at word boundaries (learned)',
                PAPER_BOUNDARY, 'mean m_t',
                (boundary, _of('mean_m_by_class', 'symbol', 'boundary')),
                (inside, _of('mean_m_by_class', 'symbol', 'inside word'))),
      where_row(learned, 'the largest updates at word boundaries (learned)',
                PAPER_BOUNDARY, 'rate of the 5% largest m_t',
                (boundary, _of('peak_rate_by_class', 'symbol', 'boundary')),
                (inside, _of('peak_rate_by_class', 'symbol',
                             'inside word')))]


def _music_elman(runs, groups) -> str:
  """Why the music row has no Elman network to compare with: none at the
  row's updates; the frontier's, at theirs, are judged in its own rows."""
  steps = sorted({r['steps'] for r in runs if r.get('steps')})
  at = f' at this row\'s {" / ".join(f"{s:,}" for s in steps)} updates'
  elman = {m: rs for m, rs in frontier.models(groups or {}, 'music').items()
           if m.cell == 'elman'}
  if not elman:
    return f'no Elman network on music is recorded{at if steps else ""}'
  same = [m.label for m, rs in elman.items()
          if any(r.get('steps') in steps for r in rs)]
  if same:
    return (f'{", ".join(same)}{at} are in the frontier\'s folders; this '
            'row does not compare them')
  theirs = sorted({r['steps'] for rs in elman.values() for r in rs})
  return (f'no Elman network on music is recorded{at}; the frontier\'s '
          f'{", ".join(m.label for m in elman)} '
          f'({" / ".join(f"{s:,}" for s in theirs)} updates) are compared '
          'with VCRNN-192 at their own updates in the Table 1 frontier rows')


def music_rows(music: Mapping[str, list], groups=None) -> Rows:
  """Tables 1-2 and Sec. 5.1 on thesession's tunes (``groups``: every
  record, for the frontier's Elman networks on music)."""
  runs = music.get(MUSIC_VC, [])
  kind, length = 'symbol kind', 'note length'
  perplexity = [records.value(r, 'results.test.perplexity') for r in runs]
  measured = (f'{_name(MUSIC_VC)}: test perplexity {_interval(perplexity, 2)}'
              f' at RNN-d {_interval(_rnn_d(runs), 0)}' if runs else '')
  return [
      _row('a VCRNN predicts music better than an Elman RNN of more '
           'computation', PAPER_MUSIC, measured,
           verdicts.not_recorded(_music_elman(runs, groups))),
      where_row(runs, 'bar lines get less computation', PAPER_BAR,
                'mean m_t', ('all other symbols',
                             lambda r: _others_mean(r, kind, ['bar'])),
                ('bar lines', _of('mean_m_by_class', kind, 'bar'))),
      where_row(runs, 'rests get less computation', PAPER_REST,
                'mean m_t', ('all symbols but bars and rests',
                             lambda r: _others_mean(r, kind,
                                                    ['bar', 'rest'])),
                ('rests', _of('mean_m_by_class', kind, 'rest'))),
      where_row(runs, 'fast passages get more computation', PAPER_FAST,
                'mean m_t', ('sixteenth notes',
                             _of('mean_m_by_class', length, SIXTEENTH)),
                ('eighth notes', _of('mean_m_by_class', length, EIGHTH)))]


def _frontier_vc_runs(groups, corpus: str, cell: str = 'vcrnn'
                      ) -> tuple[str, list]:
  """The frontier's runs of a VC cell on a corpus, every target of the
  learned scheduler pooled (a guided one is told where to compute), and how
  the rows name them."""
  found = {m: r for m, r in frontier.models(groups, corpus).items()
           if m.cell == cell and not m.guided}
  runs = [r for rs in found.values() for r in rs]
  targets = '/'.join(f'{m.target:g}' for m in found)
  widths = sorted({m.width for m in found})
  return (f'frontier {cell.upper()}-{"/".join(map(str, widths))} at m̄ '
          f'{targets}, every run', runs)


def frontier_where_rows(groups) -> Rows:
  """Where computation goes (Fig. 3, Table 2, Sec. 5.1) over every run of
  the frontier's VCRNN settings, each run one unit, and on PTB over the
  VCGRU's too (Fig. 3 shows a VCRNN; the same measure asks it of the
  VCGRU): rows only where the frontier has records of the cell."""
  rows = []
  for cell, paper in (('vcrnn', PAPER_BOUNDARY),
                      ('vcgru', PAPER_BOUNDARY_VCGRU)):
    label, ptb = _frontier_vc_runs(groups, 'ptb', cell)
    if ptb:
      rows.append(where_row(
          ptb, f'more computation at word boundaries ({label})',
          paper, 'mean m_t',
          ('word boundaries', _of('mean_m_by_class', 'symbol', 'boundary')),
          ('inside words', _of('mean_m_by_class', 'symbol', 'inside word')),
          unit='run'))
  label, music = _frontier_vc_runs(groups, 'music')
  kind, length = 'symbol kind', 'note length'
  if music:
    rows += [
        where_row(music, f'bar lines get less computation ({label})',
                  PAPER_BAR, 'mean m_t',
                  ('all other symbols',
                   lambda r: _others_mean(r, kind, ['bar'])),
                  ('bar lines', _of('mean_m_by_class', kind, 'bar')),
                  unit='run'),
        where_row(music, f'fast passages get more computation ({label})',
                  PAPER_FAST, 'mean m_t',
                  ('sixteenth notes',
                   _of('mean_m_by_class', length, SIXTEENTH)),
                  ('eighth notes', _of('mean_m_by_class', length, EIGHTH)),
                  unit='run')]
  return rows


def unrecorded_rows(groups=None) -> Rows:
  """The paper's claims no record here tests (the VCGRU row only until
  the PTB frontier has a VCGRU)."""
  def row(claim, paper, reason):
    return _row(claim, paper, '', verdicts.not_recorded(reason))
  vcgru = any(m.cell == 'vcgru'
              for m in frontier.models(groups or {}, 'ptb'))
  return [
      *([] if vcgru else [
          row('a VCGRU reaches a GRU\'s bpc at less computation',
              PAPER_VCGRU, 'no VCGRU or GRU run is recorded')]),
      row('bit-level PTB: a VCRNN below an Elman RNN\'s bits per bit at '
          'less computation', PAPER_BIT, 'no bit-level run is recorded'),
      row('bit level: computation follows the character; buffers are '
          'ignored', PAPER_BIT_WHERE, 'no bit-level run is recorded'),
      row('Text8: a VCGRU below GRUs of similar or more computation',
          PAPER_TEXT8, 'no Text8 run (the corpus is not on this machine)'),
      row('Europarl: guided and learned VCRNNs below an RNN at each load; '
          'word boundaries', PAPER_EUROPARL,
          'no Europarl run (the corpus is not on this machine)')]


def _marked(rows: Rows, folders, statuses) -> Rows:
  """``rows`` with their verdict cells marked when a folder they read is
  stale or unverifiable (a block of rows shares the folders it reads)."""
  mark = verdicts.mark_text(verify.states(list(folders), statuses))
  return [[*r[:3], r[3] + mark if 'records missing' not in r[4] else r[3],
           *r[4:]] for r in rows]


def summary(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            statuses: Mapping[str, Mapping[str, Any]] | None = None) -> str:
  """The summary table: every claim of the paper, its verdict from the
  records, and where the records were made; verdict cells carry the
  record state of the folders their block reads (``statuses``)."""
  statuses = statuses or {}
  ptb, music = _experiments(groups, PTB), _experiments(groups, MUSIC)
  rows = (_marked(ptb_rows(ptb), [PTB + n for n in ptb], statuses)
          + _marked(music_rows(music, groups), [MUSIC + n for n in music],
                    statuses))
  for corpus in frontier.CORPORA:
    prefix = f'{frontier.FRONTIER}{corpus}_'
    rows += _marked(frontier.frontier_rows(groups, corpus),
                    [g for g in groups if g.startswith(prefix)], statuses)
  rows += _marked(frontier_where_rows(groups),
                  [g for g in groups if g.startswith(frontier.FRONTIER)
                   and g.split('_')[1] in ('ptb', 'music')], statuses)
  rows += unrecorded_rows(groups)
  text = verdicts.claims_table(SUMMARY_HEADER, rows, SECTIONS)
  every = [r for runs in [*ptb.values(), *music.values(),
                          *_experiments(groups, frontier.FRONTIER).values()]
           for r in runs]
  return text + ('\n' + records.provenance(every) + '\n' if every else '')


def status_lines(models: Mapping[str, list], prefix: str,
                 statuses: Mapping[str, Mapping[str, Any]]) -> str:
  """Per experiment of a table, whether today's code still computes its
  records (:func:`experiments.reports.verify.status_line`)."""
  return ''.join(f'- `{prefix}{name}`: '
                 f'{verify.status_line(prefix + name, runs, statuses)}\n'
                 for name, runs in models.items())


# The paper's experiments at its size or on its corpus, with the command
# that runs each: what has records here is counted from them.
NOT_RUN = (
    ('Text8, Table 3 right (VCGRU against GRUs)', 'vc/text8',
     '`python -m experiments.vc_text8 --target=0.3` (0.4, 0.5)'),
    ('Europarl Czech and German, Fig. 4 (guided and learned)', 'vc/europarl',
     '`python -m experiments.vc_europarl --setting=guide` (`learn`)'),
    ('bit-level PTB, Fig. 2', 'vc/bit',
     '`python -m experiments.vc_ptb --level=bit --hidden_size=1000 '
     '--buffer_bits=0` (8, 24)'),
    ('character PTB at the paper\'s width, Table 3', 'vc/frontier_ptb1024',
     '`python -m experiments.vc_ptb --level=char --cell=vcrnn '
     '--hidden_size=1024` (`elman`, `vcgru`); on a GPU: '
     '`benchmarks/gpu_vc_ptb.sh`'),
    ('music at the paper\'s width, Table 1 (VCRNN-500)', 'vc/music500',
     '`python -m experiments.vc_music`'),
)


OVERFLOW = 'vc/overflow_'


def _reaches_one(flags: Mapping[str, Any]) -> int | None:
  """The step at which the sharpness schedule reaches its maximum (Sec.
  5: from ``sharpness_initial`` by ``sharpness_increment`` every
  ``sharpness_every`` steps); None when the record lacks the flags."""
  every = flags.get('sharpness_every')
  if not every:
    return None
  start = flags.get('sharpness_initial') or 0.1
  step = flags.get('sharpness_increment') or 0.1
  top = flags.get('sharpness_maximum') or 1.0
  return every * max(0, round((top - start) / step))


def overflow_table(groups, statuses=None) -> str:
  """VCRNN at the paper's width past the sharpness of 1 on a CPU: per
  run, where the schedule reaches 1, the validation bpc there and at the
  end, the final training gradient norm (finite or not) and how many
  updates needed the overflow-safe norm
  (``train_rescaled_grad_norm_steps``)."""
  found = {name: runs for name, runs in sorted(groups.items())
           if name.startswith(OVERFLOW)}
  if not found:
    return 'No record yet.\n'
  body, every = [], []
  for name, runs in found.items():
    for run in sorted(runs, key=lambda r: r['seed']):
      one = _reaches_one(run.get('flags', {}))
      curve = run.get('curve', [])
      at_one = [p for p in curve if one is not None and p['step'] <= one]
      final = run.get('final', {})
      norm = final.get('train_grad_norm')
      body.append([
          f'`{name}`', str(run['seed']), f'{run["steps"]:,}',
          '-' if one is None else f'{one:,}',
          f'{at_one[-1]["bpc"]:.3f} (step {at_one[-1]["step"]:,})'
          if at_one else '-',
          f'{curve[-1]["bpc"]:.3f}' if curve else '-',
          '-' if norm is None else f'{norm:.4g}',
          # Logged only when an update needed it: absent is none.
          str(final.get('train_rescaled_grad_norm_steps', 0)),
          f'{final["m"]:.3f}' if 'm' in final else '-'])
      every.append(run)
  return (records.table(['folder', 'seed', 'updates', 'sharpness 1 at step',
                         'valid bpc before it', 'valid bpc at the end',
                         'final training gradient norm',
                         'updates with the overflow-safe norm', 'mean m_t'],
                        body)
          + '\n' + records.provenance(every) + '\n\n'
          + status_lines({n[len('vc/'):]: r for n, r in found.items()}, 'vc/',
                         statuses or {}))


def not_run(groups) -> str:
  """The paper's experiments at its size or corpus, each with the records
  that exist here (:data:`NOT_RUN`)."""
  return ('What the paper runs at its size or on its corpus, and what of it '
          'has records here (counted from the records):\n\n'
          + records.not_run_table(groups, NOT_RUN))


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            statuses: Mapping[str, Mapping[str, Any]] | None = None
            ) -> list[records.Output]:
  """Every generated VC file, from the records grouped by experiment and
  their verification (``statuses``: experiment folder -> entry; None is
  none verified)."""
  if not any(name.startswith('vc/') for name in groups):
    return []
  statuses = statuses or {}
  ptb, music = _experiments(groups, PTB), _experiments(groups, MUSIC)
  out = [records.Output('vc/summary.md', summary(groups, statuses)),
         records.Output('vc/not_run.md', not_run(groups)),
         records.Output('vc/overflow.md', overflow_table(groups, statuses))]
  if ptb:
    out += ptb_outputs(ptb, statuses)
  if music:
    out.append(records.Output('vc/music.md', lm_table(
        music, 'perplexity', MUSIC_CLASSES) + '\n'
        + status_lines(music, MUSIC, statuses)))
  where = {f'PTB {k}': v for k, v in where_data(ptb, PTB_CLASSES).items()}
  where.update({f'music {k}': v for k, v in where_data(
      music, MUSIC_CLASSES).items()})
  if where:
    out.append(records.Output('vc/where.svg', data=where,
                              draw=lambda p: draw_where(where, p)))
  return out + frontier.outputs(groups, statuses)


def ptb_outputs(ptb: Mapping[str, list],
                statuses: Mapping[str, Mapping[str, Any]]
                ) -> list[records.Output]:
  """The character PTB table (with the seed-by-seed comparisons and the
  verification of each experiment) and its curves."""
  text = lm_table(ptb, 'bpc', PTB_CLASSES)
  for vc in [n for n in ptb if n.startswith('vcrnn')]:
    text += '\n' + compare(ptb, 'bpc', vc, BASELINE)
  text += '\n' + status_lines(ptb, PTB, statuses)
  data = {name: records.curve_series(runs, 'bpc')
          for name, runs in ptb.items()}
  return [records.Output('vc/ptb.md', text),
          records.Output('vc/ptb_curves.svg', data=data,
                         draw=lambda p: records.draw_curves(
                             data, p, xlabel='training step',
                             ylabel='valid bits per character',
                             title='Character PTB: valid bpc per seed'))]
