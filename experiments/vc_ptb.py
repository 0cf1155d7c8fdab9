r"""VCRNN paper Sec. 5.2.1 (Table 3, Fig. 2, 3): character and bit level PTB.

The paper's configurations (D = 1024; for a GPU), each with the paper's
Table 3 bpc::

  python -m experiments.vc_ptb --data_dir=DIR --level=char \
      --cell=vcrnn              # paper, Table 3: VCRNN-1024, 1.46 bpc
  python -m experiments.vc_ptb --data_dir=DIR --level=char \
      --cell=elman              # paper, Table 3: RNN-1024, 1.47 bpc
  python -m experiments.vc_ptb --data_dir=DIR --level=char \
      --cell=vcgru              # paper, Table 3: VCGRU-1024, 1.42 at RNN-d 648
  python -m experiments.vc_ptb --data_dir=DIR --level=bit \
      --hidden_size=1000 [--buffer_bits=8|24]   # Table 3 middle, Fig. 2

An embedding of size D feeds the cell (the paper's D-dimensional x_t), a
linear softmax reads it out; the loss is the NLL summed over the window plus
Omega (Eq. 10: symmetric l1 around --target), the sharpness starts at 0.1 and
grows by 0.1 per epoch up to 1 (Sec. 5), read by the cell from the step.
Every evaluation (each epoch, over the whole valid stream with the state
carried) logs bits per symbol (``bpc``: per character, or per bit), mean
m_t (``m``) and RNN-d (``rnn_d`` from the dimensions the soft mask updates,
``rnn_d_m`` from m_t D). After training the test split is evaluated,
``<workdir>/results.json`` gets every number, and for a VC cell:

* char level: mean m_t on word boundaries (``_`` and line ends) vs inside
  words, ``m_by_class.png``, and m_t along the valid text,
  ``m_over_text.png`` (Fig. 3);
* bit level: the period of m_t and of the updates of the highest 5% of
  dimensions (autocorrelation peak), their mean per bit position, on
  buffer bits and per buffer bit (``buffer 1`` .. ``buffer B``, counted
  from the character before), ``m_by_class.png`` and ``bits_top_dims.png``
  (Fig. 2);
* for every grouping, also the rate at which each class gets one of the 5%
  largest m_t (``peak_rate_by_class``; 0.05 is no preference): Fig. 2 and
  3 show the highest dimensions, which only the largest m_t reach, so this
  is their picture at a size where m_t never reaches 0.95.

Rerunning the same command resumes from the last checkpoint in the workdir
(``runs/vc_ptb/cell=..._seed=0_<non-default flags>``).

Reduced size on a 2-core CPU::

  python -m experiments.vc_ptb --data_dir=DIR --level=char \
      --cell=vcrnn --hidden_size=512 --steps=3000 --eval_every=1000 \
      --sharpness_every=300 --penalty_weight=0.1
  python -m experiments.vc_ptb --data_dir=DIR --level=bit \
      --hidden_size=256 --steps=3000 --eval_every=1500 \
      --sharpness_every=300 --max_symbols=4000000 --penalty_weight=0.01

The records train the char command at ``--hidden_size=256`` beside
``--cell=elman --hidden_size=224``, three seeds each, on CPU-2 (2-core AMD
EPYC): docs/results/vc.md, 'Character PTB and music, three seeds (from
records)', has their bpc, RNN-d and where m_t goes, 'The character PTB
frontier (from records)' the widths around them, and 'Claims (from
records)' the verdict on each of the paper's claims by its criterion. The
char command at the paper's width is in 'Character PTB at the paper's
width, on a GPU (from records)'. Typed runs of the two commands above are
in docs/results/notebooks/vc.md, 'Char PTB: VCRNN against Elman at equal
updates, earlier runs' and 'Bit level (Sec. 5.2.1, Fig. 2)'.

Deviations and choices: the paper gives no optimiser, batch, BPTT length,
penalty weight or epsilon (see experiments/_vc.py: Adam 1e-3, clip 1 with
the scheduler clipped apart, batch 32, BPTT 100, weight 1, epsilon 0.01);
the soft mask indexes dimensions from 0 (vc.soft_mask's warning);
``--sharpness_every`` lets short runs reach a sharp mask in fewer steps
than an epoch per increment; ``--boundary_target`` applies the "guide"
setting, which the paper uses only on Europarl (Sec. 5.2.2), to PTB
characters.
"""

from absl import flags

from experiments import _common, _vc
from vcrnn_jax.papers.vc import lm as vc_lm
from vcrnn_jax.papers.vc import runs as vc_runs

_common.mark_resumable(flags.DEFINE_string(
    'data_dir', None, 'Folder holding ptb/ptb.char.*.txt (Mikolov\'s '
    'simple-examples layout); default: the download cache.'))
flags.DEFINE_enum('level', 'char', ['char', 'bit'], 'Character level (50 '
                  'symbols) or bit level (each character as its 8-bit code, '
                  'most significant bit first).')
flags.DEFINE_integer('buffer_bits', 0, 'Bit level: zero bits added after '
                     'every character (Fig. 2: 0, 8 or 24).', lower_bound=0)
_common.define_float('boundary_target', None, 'Char level: the "guide" '
                     'setting of Sec. 5.2.2 on PTB, this m_bar where the '
                     'input is a word boundary (_ or a line end) and '
                     '--target elsewhere. Unset: the paper\'s PTB setting, '
                     'one target everywhere.', upper=1.0001)
_vc.define_flags(cell='vcrnn', hidden_size=1024, epochs=20)
_common.define_workdir('runs/vc_ptb/cell=<cell>_seed=<seed>_<flags>')
flags.adopt_module_key_flags(_common)
flags.adopt_module_key_flags(_vc)
FLAGS = flags.FLAGS


def main(processes):
  values = _common.flag_values()
  ds, bounds = vc_runs.ptb_corpus(values)
  if values['level'] == 'char':

    def classes(ids, offset):
      del offset
      return vc_lm.word_groupings(ids, bounds)

    bits = None
  else:
    positions = ds.meta['bit_position']['valid']
    char_vocab = ds.meta['char_vocab']

    def classes(ids, offset):
      pos = positions[offset:offset + len(ids)]
      kinds = ['buffer bit' if p < 0 else 'character bit' for p in pos]
      out = {'bit kind': kinds, 'bit position': vc_lm.bit_classes(pos)}
      if values['buffer_bits']:
        out['buffer bit'] = vc_lm.buffer_classes(pos)
      return out

    bits = {'positions': positions, 'period': ds.meta['period'],
            'chars': char_vocab.decode(ds.meta['char_ids']['valid'][:5000])}
  _vc.train_and_analyse(
      'vc_ptb', vc_runs.truncate(values, ds.train),
      vc_runs.truncate(values, ds.valid), vc_runs.truncate(values, ds.test),
      ds.vocab.size, decode=ds.vocab.decode,
      classes=classes, boundary_ids=bounds, bits=bits,
      boundary_target=values['boundary_target'],
      leading=('level', 'cell', 'seed'),
      data_files=ds.meta['files'], processes=processes)


if __name__ == '__main__':
  _common.run(main)
