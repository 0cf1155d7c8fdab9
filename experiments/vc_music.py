r"""VCRNN paper Sec. 5.1 (Tables 1-2): Irish traditional tunes (thesession.org).

The paper's configuration (VCRNN-500; for a GPU), with the paper's Table 1
test perplexity (VCRNN-500 8.51 at RNN-d 233, RNN-200 9.13, RNN-250
8.70)::

  python -m experiments.vc_music --data_dir=DIR
  python -m experiments.vc_music --data_dir=DIR --cell=elman \
      --hidden_size=250

Tunes in the folk-rnn v3 tokenisation (``thesession/tunes_v3_valid.txt``,
2,000 tunes, or folk-rnn's ``data_v3``), split by tune 80/10/10; every
(pitch, length) pair is one symbol (``=d 2`` -> ``=d2``), with rests, bar
lines and the other tokens as their own symbols, and ``</s>`` after each tune
(vcrnn_jax.data.thesession). The model, loss, sharpness schedule and logged
metrics are those of vc_ptb; the headline metric is the perplexity per
symbol (``perplexity``; ``bpc`` is its log2). After training, mean m_t per
symbol kind (bar lines, rests, notes, other) and per note length (Table 2;
a length is the duration token's value in units, triplets are not
rescaled) over the valid tunes (``m_by_class.png``), m_t along the first
valid tunes (``m_over_text.png``), the rate at which each kind gets one of
the 5% largest m_t (``peak_rate_by_class``), all numbers in
``<workdir>/results.json``. Rerunning the command resumes.

Reduced size on a 2-core CPU::

  python -m experiments.vc_music \
      --data_path=DIR/thesession/tunes_v3_valid.txt \
      --hidden_size=128 --steps=1500 --eval_every=750 \
      --sharpness_every=150 --penalty_weight=0.1

What this reaches on CPU-2 (2-core AMD EPYC), over three seeds, is in
docs/results/vc.md, 'Character PTB and music, three seeds (from
records)', and the verdicts on Sec. 5.1's claims in its 'Claims (from
records)' (generated from the run records under
docs/results/records/vc/); VCRNN against Elman networks of several
widths on the same tunes is in 'The Irish tunes frontier (from records)',
and typed runs of this command in docs/results/notebooks/vc.md, 'Music
(Sec. 5.1, Table 2), earlier runs'.

Deviations and choices: the shared file has 2,000 tunes (the paper: 19,511,
split 16,000/1,511/2,000 with no melody's variations across subsets, which
folk-rnn's files do not record); the paper's 730 symbols become the pairs
of those tunes; m_bar 0.5 (the paper: 0.2-0.5); Adam 1e-3, clip 1, batch
32, BPTT 100, penalty weight 1, epsilon 0.01 as vc_ptb, the scheduler's
gradient clipped apart (experiments/_vc.py says why).
"""

from absl import flags

from experiments import _common, _vc
from vcrnn_jax.papers.vc import lm as vc_lm
from vcrnn_jax.papers.vc import runs as vc_runs

_common.mark_resumable(flags.DEFINE_string(
    'data_dir', None, 'Folder holding thesession/tunes_v3_valid.txt or '
    'thesession/data_v3; default: the download cache.'))
flags.DEFINE_string('data_path', None, 'The tune file itself (instead of '
                    '--data_dir).')
flags.DEFINE_integer('shuffle_seed', None, 'Shuffle the tunes with this seed '
                     'before the split (default: file order).', lower_bound=0)
_vc.define_flags(cell='vcrnn', hidden_size=500, epochs=20, plot_symbols=200)
_common.define_workdir('runs/vc_music/cell=<cell>_seed=<seed>_<flags>')
flags.adopt_module_key_flags(_common)
flags.adopt_module_key_flags(_vc)
FLAGS = flags.FLAGS

KINDS = ('bar', 'note', 'rest', 'other')


def main(processes):
  values = _common.flag_values()
  ds = vc_runs.music_corpus(values)
  print(f'{ds.vocab.size} symbols; {ds.meta["num_tunes"]} tunes; '
        f'{len(ds.train)}/{len(ds.valid)}/{len(ds.test)} tokens')

  def classes(ids, offset):
    del offset
    found = vc_lm.music_classes(ds.vocab.decode(ids))
    lengths = sorted({l for l in found['length'] if l is not None},
                     key=float)
    return {'symbol kind': found['kind'],
            'note length': [l if l in lengths else None
                            for l in found['length']]}

  _vc.train_and_analyse(
      'vc_music', vc_runs.truncate(values, ds.train),
      vc_runs.truncate(values, ds.valid), vc_runs.truncate(values, ds.test),
      ds.vocab.size, decode=ds.vocab.decode,
      classes=classes, metric='perplexity',
      data_files=ds.meta['files'], processes=processes)


if __name__ == '__main__':
  _common.run(main)
