r"""VCRNN's results, from its run records (``docs/results/records/vc``).

The experiments (folders of records) this module reads, one record per
seed:

* ``vc/ptb_<model>``: ``experiments.vc_ptb --level=char`` (Table 3 at a
  reduced size: valid and test bits per character, mean :math:`m_t`, RNN-d,
  and where the scheduler computes: mean :math:`m_t` and the rate of the 5%
  largest :math:`m_t` on word boundaries against inside words, Fig. 3);
* ``vc/music_<model>``: ``experiments.vc_music`` (Table 2: perplexity and
  mean :math:`m_t` per symbol kind).

:func:`outputs` gives the page's tables (``vc/ptb.md``, ``vc/music.md``:
mean ± standard deviation over seeds, every seed listed) and figures
(``vc/ptb_curves.svg``: valid bits per character per seed;
``vc/where.svg``: mean :math:`m_t` per symbol class, per seed).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from vcrnn_jax.analysis import plots, records

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


def outputs(groups: Mapping[str, Sequence[Mapping[str, Any]]],
            statuses: Mapping[str, Mapping[str, Any]] | None = None
            ) -> list[records.Output]:
  """Every generated VC file, from the records grouped by experiment."""
  out = []
  where = {}
  ptb = _experiments(groups, PTB)
  if ptb:
    text = lm_table(ptb, 'bpc', PTB_CLASSES)
    for vc in [n for n in ptb if n.startswith('vcrnn')]:
      text += '\n' + compare(ptb, 'bpc', vc, 'elman224')
    data = {name: records.curve_series(runs, 'bpc')
            for name, runs in ptb.items()}
    out += [records.Output('vc/ptb.md', text),
            records.Output('vc/ptb_curves.svg', data=data,
                           draw=lambda p: records.draw_curves(
                               data, p, xlabel='training step',
                               ylabel='valid bits per character',
                               title='Character PTB: valid bpc per seed'))]
    where.update({f'PTB {k}': v for k, v in where_data(
        ptb, PTB_CLASSES).items()})
  music = _experiments(groups, MUSIC)
  if music:
    out.append(records.Output('vc/music.md', lm_table(
        music, 'perplexity', MUSIC_CLASSES)))
    where.update({f'music {k}': v for k, v in where_data(
        music, MUSIC_CLASSES).items()})
  if where:
    out.append(records.Output('vc/where.svg', data=where,
                              draw=lambda p: draw_where(where, p)))
  return out
