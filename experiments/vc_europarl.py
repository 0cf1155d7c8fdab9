r"""VCRNN paper Sec. 5.2.2 (Fig. 3-5): Europarl Czech and German, guide/learn.

Any UTF-8 corpus works (``--data_path=FILE``; split 90/5/5 at line starts,
characters as symbols). Europarl is not available on the machines that built
this project; the Czech and German fortune-cookie collections in
``text/`` of the corpora directory ``DIR`` stand in for it::

  python -m experiments.vc_europarl \
      --data_path=DIR/text/fortunes_cs.txt --setting=guide
  python -m experiments.vc_europarl \
      --data_path=DIR/text/fortunes_de.txt --setting=learn

``--setting=learn`` (fully unsupervised) penalises |m_t - m_bar| with one
target ``--target`` everywhere, encouraging lower m_t across the board;
``--setting=guide`` targets ``--boundary_target`` where the input symbol is
whitespace (space, newline, tab) and ``--target`` elsewhere, "to encourage
the model to use more dimensions on white spaces" (vc.guide_targets). The
paper gives neither value nor the model size; defaults here: m_bar 0.3,
boundary 0.8, D = 1024, 20 epochs. The model, loss, sharpness schedule and
logged metrics are those of vc_ptb (bits per character, mean m_t, RNN-d at
every evaluation); the analysis gives mean m_t on whitespace vs inside words
and by position in the word (``m_by_class.png``), the rate at which each
gets one of the 5% largest m_t (``peak_rate_by_class``) and m_t along the
valid text (``m_over_text.png``, Fig. 3 and 5), all numbers in
``<workdir>/results.json``. Rerunning the command resumes.
``--cell=elman`` etc. trains Fig. 4's constant baselines.

Reduced size on a 2-core CPU::

  python -m experiments.vc_europarl \
      --data_path=DIR/text/fortunes_cs.txt --setting=guide \
      --hidden_size=256 --steps=1500 --eval_every=750 --sharpness_every=150

No run of this binary is recorded (docs/results/vc.md, 'The paper's
sizes and corpora'). Single typed runs of the guide and learn settings on
the Czech and German fortunes, with their commits and without verdicts,
are in docs/results/notebooks/vc.md, 'Word boundaries on the fortunes
(learn setting)' and 'Further runs'.
At the default width::

  python -m experiments.vc_europarl \
      --data_path=DIR/text/fortunes_cs.txt --setting=learn \
      --hidden_size=1024 --steps=3000 --eval_every=1000 \
      --sharpness_every=300 --penalty_weight=0.1

Deviations and choices: as vc_ptb (Adam 1e-3, clip 1 with the scheduler
apart, batch 32, BPTT 100, penalty weight 1, epsilon 0.01); characters
seen fewer than --min_count times in train become one unknown symbol.
"""

from absl import flags

from experiments import _common, _vc
from vcrnn_jax.papers.vc import lm as vc_lm
from vcrnn_jax.papers.vc import runs as vc_runs

flags.DEFINE_string('data_path', None, 'The UTF-8 corpus: a Europarl '
                    'side such as europarl-v7.cs-en.cs, or any text file (the '
                    'results page used Czech and German fortune files).')
flags.DEFINE_enum('setting', 'learn', list(vc_lm.SETTINGS), 'learn: one '
                  'target m_bar everywhere; guide: a higher target on '
                  'whitespace (Sec. 5.2.2).')
_common.define_float('boundary_target', 0.8, 'The guide setting\'s m_bar '
                     'on whitespace inputs (not given in the paper).',
                     upper=1.0001)
_common.define_positive_int('min_count', 5, 'Characters seen fewer times in '
                            'train map to one unknown symbol.')
flags.DEFINE_enum('split_unit', 'line', ['line', 'char'], 'Cut the 90/5/5 '
                  'split at line starts (no line straddles two splits) or at '
                  'any character (for files of few, long lines).')
_common.define_positive_int('max_chars', None, 'Read only the first this '
                            'many characters of the file (before the split).')
_vc.define_flags(cell='vcrnn', hidden_size=1024, epochs=20, target=0.3)
_common.define_workdir('runs/vc_europarl/setting=<setting>_cell=<cell>_'
                       'seed=<seed>_<flags>')
flags.adopt_module_key_flags(_common)
flags.adopt_module_key_flags(_vc)
FLAGS = flags.FLAGS


def main(processes):
  values = _common.flag_values()
  ds, bounds = vc_runs.europarl_corpus(values)

  def classes(ids, offset):
    del offset
    return vc_lm.word_groupings(ids, bounds)

  _vc.train_and_analyse(
      'vc_europarl', vc_runs.truncate(values, ds.train),
      vc_runs.truncate(values, ds.valid), vc_runs.truncate(values, ds.test),
      ds.vocab.size, decode=ds.vocab.decode, classes=classes,
      boundary_ids=bounds,
      boundary_target=(values['boundary_target']
                       if values['setting'] == 'guide' else None),
      leading=('setting', 'cell', 'seed'),
      data_files=ds.meta['files'], processes=processes)


if __name__ == '__main__':
  _common.run(main)
