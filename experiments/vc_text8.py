r"""VCRNN paper Sec. 5.2.1 (Table 3 right): character-level Text8.

The paper's configuration (for a GPU), with the paper's Table 3 bpc
(VCGRU-1024 at m_bar = 0.3, 0.4, 0.5: 1.69, 1.64, 1.63 at RNN-d 464, 648,
820; GRU-1024 1.58, GRU-512 1.69)::

  python -m experiments.vc_text8 --data_dir=/path/to/data --target=0.3
  python -m experiments.vc_text8 --data_dir=/path/to/data --cell=gru

where ``/path/to/data`` holds ``text8`` or ``text8.zip`` (Mahoney's file: one
line of a-z and spaces, split 90M/5M/5M); without ``--data_dir`` it is
downloaded into the cache. The model, loss, sharpness schedule, logged
metrics and analysis are those of ``experiments.vc_ptb --level=char`` (see
its docstring): bits per character, mean m_t and RNN-d at every evaluation,
then mean m_t on spaces vs inside words (``m_by_class.png``) and m_t along
the valid text (``m_over_text.png``), all numbers in
``<workdir>/results.json``. Rerunning the command resumes.

Text8 is not available on the machines that built this project, so there is
no measured result here; ``--max_symbols`` (or ``--max_chars``, read at
load time) gives quick runs. One epoch is 90M / (32 * 100) = 28,125 steps,
so the default 10 epochs take the sharpness to 1 as the paper's schedule.

Deviations and choices: as vc_ptb (Adam 1e-3, clip 1 with the scheduler
apart, batch 32, BPTT 100, penalty weight 1, epsilon 0.01; the paper gives
none of them).
"""

from absl import flags

from experiments import _common, _vc
from vcrnn_jax.papers.vc import lm as vc_lm
from vcrnn_jax.papers.vc import runs as vc_runs

_common.mark_resumable(flags.DEFINE_string(
    'data_dir', None, 'Folder holding text8 or text8.zip (or '
    '<data_dir>/text8/); default: the download cache.'))
_common.define_positive_int('max_chars', None, 'Read only the first this '
                            'many characters of the file (before the '
                            '90/5/5 split; quick runs).')
_vc.define_flags(cell='vcgru', hidden_size=1024, epochs=10)
_common.define_workdir('runs/vc_text8/cell=<cell>_seed=<seed>_<flags>')
flags.adopt_module_key_flags(_common)
flags.adopt_module_key_flags(_vc)
FLAGS = flags.FLAGS


def main(processes):
  values = _common.flag_values()
  ds, bounds = vc_runs.text8_corpus(values)

  def classes(ids, offset):
    del offset
    return vc_lm.word_groupings(ids, bounds)

  _vc.train_and_analyse(
      'vc_text8', vc_runs.truncate(values, ds.train),
      vc_runs.truncate(values, ds.valid), vc_runs.truncate(values, ds.test),
      ds.vocab.size, decode=ds.vocab.decode, classes=classes,
      boundary_ids=bounds, data_files=ds.meta['files'], processes=processes)


if __name__ == '__main__':
  _common.run(main)
