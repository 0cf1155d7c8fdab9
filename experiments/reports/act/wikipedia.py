r"""Character prediction with ACT (Graves 2016, Sec. 3.5), from its records.

The paper: networks trained with ACT "consistently pause at spaces between
words, and pause for longer at 'boundary' characters such as commas and full
stops" (Fig. 23), with error rates "fairly similar with and without ACT"
and ACT networks "somewhat more data efficient" (Figs. 21-22).

**Folders.** ``act/wikipedia_<corpus>_lstm<H>_tau<T>`` holds the runs of
``python -m experiments.act_wikipedia --data=text`` with ACT at ``--tau=T``
and ``--hidden_size=H`` on a corpus (``shakespeare``: tinyshakespeare,
``enwik8``, ...), and ``act/wikipedia_<corpus>_lstm<H>_noact`` the same
network with ``--act=false``; a folder with ACT is paired with the
``noact`` folder of the same ``<corpus>_lstm<H>``, seed by seed. Tau and
the cap :math:`M` are read from each record's flags; the name only pairs.

**What the records hold.** The final held-out bits per character and mean
ponder (``final``), and the binary's analysis (``results.analysis``,
:mod:`vcrnn_jax.papers.act.wikipedia`): the mean ponder :math:`\rho_t` per
class of the character the step *reads* over the first characters of the
valid split, and the ponder of each of its first characters.

:func:`outputs` writes

* ``act/wikipedia.md``: bits per character with and without ACT per seed,
  and the mean ponder per character class per seed;
* ``act/wikipedia_verdicts.md``: the claims, each by its criterion: ponder
  at spaces, at the first character after a space and at sentence ends
  above that inside words (the per-seed difference,
  :func:`~experiments.reports.verdicts.exceeds`), and bits per character
  with ACT below those without (paired by seed,
  :func:`~experiments.reports.verdicts.paired`); a seed whose ponder never
  leaves its floor or sits at its cap on every character read is *inert*
  and left out of the class claims, and a class claim with fewer than three
  seeds whose ponder acts is not testable here;
* ``act/wikipedia_ponder.svg``: the ponder over the first characters of the
  valid split, one seed, characters on the x axis (Figs. 23-24).

:func:`summary_rows` gives the rows of the ACT summary.
"""

from collections.abc import Mapping, Sequence
import re
from typing import Any

from experiments.reports import plots, records, verdicts, verify

__all__ = [
    'PREFIX',
    'CLASS_LABELS',
    'CLAIMS',
    'FLOOR',
    'INERT_SHARE',
    'parse',
    'settings',
    'class_mean',
    'inert',
    'claim_rows',
    'summary_rows',
    'table',
    'verdicts_text',
    'ponder_data',
    'draw_ponder',
    'outputs',
]

PREFIX = 'act/wikipedia_'
_NAME = re.compile(r'^act/wikipedia_(?P<base>.+)_(?P<setting>noact|tau[^_]+)$')
# The classes of vcrnn_jax.papers.act.wikipedia, as the tables name them.
CLASS_LABELS = {
    'all': 'all',
    'space': 'space',
    'word_start': 'first after a space',
    'inside_word': 'inside a word',
    'word_end': 'last of a word',
    'sentence_end': 'sentence end (. ! ? and the next)',
    'newline': 'newline',
    'punctuation': 'punctuation',
}
# The claims of Sec. 3.5 on where ACT ponders: a class against
# 'inside_word' (letters with a letter on both sides), and the paper's words.
CLAIMS = (
    ('space', 'ponder at spaces above inside words',
     '"pause at spaces between words" (Fig. 23)'),
    ('word_start', 'ponder at the first character after a space above '
     'inside words', 'a pause where the next word starts (Fig. 23)'),
    ('sentence_end', 'ponder at sentence ends above inside words',
     '"pause for longer at \'boundary\' characters such as commas and full '
     'stops" (Fig. 23)'),
)
BASELINE = 'inside_word'
# rho_t = N(t) + R(t) (Eq. 10) is 2 when the first step halts (N = 1,
# R = 1) and above M when every step up to the cap M is taken.
FLOOR = 2.0
# A seed is inert when this share of the characters read sits at the floor
# or at the cap.
INERT_SHARE = 0.95


def parse(name: str) -> tuple[str, str] | None:
  """``(base, setting)`` of a Wikipedia folder (``'shakespeare_lstm128'``,
  ``'tau0.006'`` or ``'noact'``), or None for another folder."""
  m = _NAME.match(name)
  return (m.group('base'), m.group('setting')) if m else None


def _act(run: Mapping[str, Any]) -> bool:
  return bool(run.get('flags', {}).get('act', True))


def settings(groups: Mapping[str, Sequence[Mapping[str, Any]]]
             ) -> dict[str, dict[str, list]]:
  """base -> {folder: records in seed order} for every Wikipedia folder."""
  out: dict[str, dict[str, list]] = {}
  for name in sorted(groups):
    parsed = parse(name)
    if parsed and groups[name]:
      out.setdefault(parsed[0], {})[name] = sorted(groups[name],
                                                   key=lambda r: r['seed'])
  return out


def _no_act(by_folder: Mapping[str, list]) -> list:
  return next((runs for name, runs in by_folder.items()
               if parse(name)[1] == 'noact'), [])


def _with_act(by_folder: Mapping[str, list]) -> list[tuple[str, list]]:
  """The ACT folders of one base, tau ascending."""
  found = [(name, runs) for name, runs in by_folder.items()
           if parse(name)[1] != 'noact' and _act(runs[0])]
  return sorted(found, key=lambda kv: float(kv[1][0]['flags'].get('tau',
                                                                  0.0)))


def _analysis(run: Mapping[str, Any]) -> Mapping[str, Any]:
  return records.value(run, 'results.analysis') or {}


def class_mean(run: Mapping[str, Any], cls: str) -> float | None:
  """The run's mean ponder over the characters of class ``cls``; None
  without an analysis or with no such character."""
  return records.value(run, f'results.analysis.mean_ponder_by_class.{cls}.'
                       'mean')


def inert(run: Mapping[str, Any]) -> str | None:
  """Why the run's ponder cannot show where it pauses, or None: on at least
  :data:`INERT_SHARE` of the characters the analysis read it never leaves
  its floor (the first step halts, ponder :data:`FLOOR`) or sits at its cap
  (all :math:`M` steps taken). "Every character" is read as that share: the
  first character of each window, read from a zero state, often differs
  (one in ``seq_len``)."""
  found = _analysis(run)
  floor, cap = found.get('share_at_floor'), found.get('share_at_cap')
  if floor is not None and floor >= INERT_SHARE:
    return (f'ponder at its floor (the first step halts) on {floor:.1%} of '
            'the characters')
  if cap is not None and cap >= INERT_SHARE:
    return (f'ponder at its cap (M = {found.get("max_steps")}) on '
            f'{cap:.1%} of the characters')
  return None


def _fmt(x: float) -> str:
  return f'{x:.3f}'


def _bpc(run) -> float | None:
  return records.value(run, 'final.bpc')


def _where(base: str, runs) -> str:
  flags = runs[0].get('flags', {})
  corpus = base.rsplit('_lstm', 1)[0]
  return f'{corpus}, {str(flags.get("cell", "lstm")).upper()}-' \
         f'{flags.get("hidden_size", "?")}'


def _class_verdict(runs, cls: str, claim: str) -> verdicts.Verdict:
  """Ponder of class ``cls`` above inside words: the per-seed difference
  of the two means, over the seeds with both whose ponder acts.

  An inert seed's difference is 0 by construction (every class at the
  floor or at the cap): it measures a halting unit that never chose, not
  where the network pauses, so it is left out, as Fig. 6 is judged over
  the seeds that solve parity; fewer than
  :data:`~experiments.reports.verdicts.MIN_SEEDS` seeds left is not
  testable here.
  """
  criterion_claim = (f'{claim} (per seed, the mean ponder of the class '
                     'minus that inside words, over the first characters '
                     'of the valid split; seeds whose ponder is inert are '
                     'left out)')
  diffs, dead = [], []
  for r in runs:
    a, b = class_mean(r, cls), class_mean(r, BASELINE)
    if a is None or b is None:
      continue
    why = inert(r)
    if why:
      dead.append((r['seed'], why))
    else:
      diffs.append(a - b)
  v = verdicts.exceeds(diffs, claim=criterion_claim, fmt=_fmt)
  if not dead:
    return v
  seen = len(diffs) + len(dead)
  excluded = (f'{len(dead)} of {seen} seeds inert ('
              + '; '.join(f'seed {s}: {why}' for s, why in dead) + ')')
  if seen >= verdicts.MIN_SEEDS and len(diffs) < verdicts.MIN_SEEDS:
    return verdicts.not_testable(v.criterion, f'{excluded}: an inert '
                                 'mechanism cannot show where it pauses, and '
                                 f'{len(diffs)} seeds whose ponder acts are '
                                 f'fewer than {verdicts.MIN_SEEDS}')
  return v._replace(evidence=f'{excluded}, left out; ' + v.evidence)


def claim_rows(groups) -> list[list[str]]:
  """Every Wikipedia claim row, ``[claim, the paper, verdict, evidence,
  criterion]``, per ACT setting: the class claims of :data:`CLAIMS`, then
  bits per character against the network without ACT."""
  rows = []
  for base, by_folder in sorted(settings(groups).items()):
    no_act = _no_act(by_folder)
    for _, runs in _with_act(by_folder):
      tau = float(runs[0]['flags'].get('tau', 0.0))
      where = _where(base, runs)
      for cls, claim, paper in CLAIMS:
        rows.append([f'Wikipedia, τ = {tau:g}: {claim} ({where})',
                     f'{paper}, Sec. 3.5',
                     *_class_verdict(runs, cls, claim).cells()])
      if no_act:
        by_seed = {r['seed']: _bpc(r) for r in no_act}
        shared = [r for r in runs if r['seed'] in by_seed]
        v = verdicts.paired(
            [_bpc(r) for r in shared], [by_seed[r['seed']] for r in shared],
            claim='ACT ends at fewer held-out bits per character than the '
            'same network without ACT after as many updates', fmt=_fmt)
        rows.append([f'Wikipedia, τ = {tau:g}: bits per character with ACT '
                     f'against without ({where})', 'error "fairly similar" '
                     'with and without ACT, ACT "somewhat more data '
                     'efficient" (Figs. 21-22)', *v.cells()])
  return rows


def summary_rows(groups) -> dict[str, list[list[str]]]:
  """``{'Wikipedia': rows}`` for the ACT summary once a Wikipedia folder
  with ACT has records; ``{}`` before."""
  rows = claim_rows(groups)
  return {'Wikipedia': rows} if rows else {}


def _mean_std(values) -> str:
  xs = [v for v in values if v is not None]
  if not xs:
    return '-'
  mean, std, _ = records.mean_std(xs)
  return _fmt(mean) + (f' ± {_fmt(std)}' if std is not None else '')


def table(groups, statuses=None) -> str:
  """Bits per character and ponder per setting (with and without ACT),
  then the mean ponder per character class per seed."""
  found = settings(groups)
  if not found:
    return 'No record yet.\n'
  rows, class_rows, everything = [], [], []
  classes = list(CLASS_LABELS)
  for base, by_folder in sorted(found.items()):
    no_act = _no_act(by_folder)
    for runs in ([no_act] if no_act else []) + [
        r for _, r in _with_act(by_folder)]:
      act = _act(runs[0])
      tau = runs[0]['flags'].get('tau')
      setting = f'`--tau={tau:g}`' if act else '`--act=false`'
      steps = ' / '.join(f'{s:,}' for s in sorted({r['steps'] for r in runs}))
      bpc = [_bpc(r) for r in runs]
      rows.append([_where(base, runs), setting, records.seeds_text(runs),
                   steps, _mean_std(bpc),
                   ' / '.join('-' if b is None else _fmt(b) for b in bpc),
                   _mean_std(r['final'].get('ponder') for r in runs)
                   if act else '1 (fixed)'])
      everything += runs
      if not act:
        continue
      for r in runs:
        means = [class_mean(r, c) for c in classes]
        if all(m is None for m in means):
          continue
        why = inert(r)
        class_rows.append([_where(base, runs), setting, r['seed']]
                          + ['-' if m is None else _fmt(m) for m in means]
                          + [why or ''])
      counts = [records.value(runs[0], f'results.analysis.'
                              f'mean_ponder_by_class.{c}.count')
                for c in classes]
      if any(c is not None for c in counts):
        class_rows.append([_where(base, runs), setting, 'characters']
                          + ['-' if c is None else f'{c:,}'
                             for c in counts] + [''])
  text = records.table(['corpus, network', 'setting', 'seeds', 'steps',
                        'bits per character', 'per seed', 'ponder'], rows)
  if class_rows:
    first = next(r for runs in found.values() for rs in runs.values()
                 for r in rs if _analysis(r))
    a = _analysis(first)
    text += (f'\nMean ponder $\\rho_t$ of the step that reads each class of '
             f'character, over the first {a.get("symbols", 0):,} '
             f'{a.get("unit", "char")}s of the valid split in windows of '
             f'{a.get("seq_len", "?")} from a zero state (the last row of '
             'each setting counts the characters in each class; classes '
             'overlap, and *inside a word* shares no character with the '
             'others):\n\n')
    text += records.table(['corpus, network', 'setting', 'seed']
                          + [CLASS_LABELS[c] for c in classes]
                          + ['inert'], class_rows)
  status = ' '.join(
      f'`{name}`: {verify.status_line(name, runs, statuses or {})}'
      for by_folder in found.values() for name, runs in by_folder.items())
  return text + '\n' + records.provenance(everything) + ' ' + status + '\n'


def verdicts_text(groups) -> str:
  """The claims of Sec. 3.5, each by its criterion."""
  rows = claim_rows(groups)
  if not rows:
    return 'No record yet.\n'
  return verdicts.claims_table(['claim', 'the paper', 'verdict', 'here',
                                'criterion'], rows)


def ponder_data(groups) -> dict:
  """What the figure draws: the ponder and loss over the first characters
  of the valid split of the lowest seed of the first ACT setting (tau
  ascending) that has them, a seed whose ponder acts before an inert one;
  ``{}`` without one."""
  found = [(base, name, runs, r)
           for base, by_folder in sorted(settings(groups).items())
           for name, runs in _with_act(by_folder) for r in runs
           if (_analysis(r).get('ponder_over_text') or {}).get('symbols')]
  if not found:
    return {}
  base, name, runs, r = next(
      (f for f in found if not inert(f[3])), found[0])
  shown = _analysis(r)['ponder_over_text']
  return {'folder': name, 'seed': r['seed'],
          'tau': r.get('flags', {}).get('tau'), 'where': _where(base, runs),
          'steps': r['steps'], 'symbols': shown['symbols'],
          'ponder': shown['ponder'], 'bits': shown.get('bits', []),
          'resets': shown.get('resets', [])}


def draw_ponder(data: Mapping[str, Any], path, chars_per_row: int = 50):
  """Ponder per character read (bars) and the loss of its prediction in
  bits (grey line, right axis), the text along the x axis in rows of
  ``chars_per_row``; dotted lines where a window starts from a zero
  state. Without data, a figure that says so."""
  if not data:
    fig = plots.new_figure((6.0, 1.2))
    ax = fig.subplots()
    ax.axis('off')
    ax.text(0.5, 0.5, 'No record yet.', ha='center', va='center')
    return records.save_svg(fig, path)
  labels = plots.symbol_labels(data['symbols'])
  ponder, bits = data['ponder'], data.get('bits') or []
  n = len(labels)
  n_rows = -(-n // chars_per_row)
  fig = plots.new_figure((1.2 + 0.14 * min(n, chars_per_row),
                          0.8 + 1.5 * n_rows))
  axes = fig.subplots(n_rows, 1, squeeze=False)[:, 0]
  base = min(FLOOR, min(ponder))
  top = max(ponder) + 0.08 * max(max(ponder) - base, 1e-3)
  for row, ax in enumerate(axes):
    lo, hi = row * chars_per_row, min((row + 1) * chars_per_row, n)
    x = list(range(hi - lo))
    ax.bar(x, [p - base for p in ponder[lo:hi]], bottom=base, width=0.85,
           color='tab:blue')
    ax.set_xlim(-0.6, chars_per_row - 0.4)
    ax.set_ylim(base, top)
    ax.set_xticks(x)
    ax.set_xticklabels(labels[lo:hi], fontfamily='monospace', fontsize=8,
                       parse_math=False)
    ax.tick_params(axis='x', length=0)
    ax.set_ylabel('ponder', fontsize=8)
    for start in data.get('resets', []):
      if 0 < start and lo <= start < hi:
        ax.axvline(start - lo - 0.5, color='black', linestyle=':',
                   linewidth=0.8)
    if len(bits) == n:
      loss = ax.twinx()
      loss.plot(x, bits[lo:hi], color='0.5', linewidth=0.8)
      loss.set_ylim(0, max(bits) * 1.05 or 1.0)
      loss.set_ylabel('loss, bits', fontsize=8, color='0.4')
  axes[-1].set_xlabel('input character (␣ space, ↵ newline); dotted: a '
                      'window starts from a zero state')
  fig.suptitle(f'Ponder per character read: {data["where"]}, '
               f'τ = {data["tau"]:g}, seed {data["seed"]}, '
               f'{data["steps"]:,} updates\n(the first {n} characters of '
               'the valid split; grey: loss of the prediction)')
  return records.save_svg(fig, path)


def outputs(groups, statuses=None) -> list[records.Output]:
  """The table, the verdicts and the figure (each says ``No record yet``
  before the first record)."""
  data = ponder_data(groups)
  return [records.Output('act/wikipedia.md', table(groups, statuses)),
          records.Output('act/wikipedia_verdicts.md', verdicts_text(groups)),
          records.Output('act/wikipedia_ponder.svg', data=data,
                         draw=lambda p: draw_ponder(data, p))]
