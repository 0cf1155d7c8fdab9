r"""ACT paper Section 3.5: byte-level Wikipedia (enwik8) prediction with ACT.

Command (paper size; needs a GPU to be practical)::

  python -m experiments.act_wikipedia --data_dir=/path/to/data --tau=0.01

where ``/path/to/data`` holds ``enwik8`` or ``enwik8.zip`` (Hutter prize
layout: raw bytes, the last 5M test and the 5M before valid); any byte file
works with ``--data=bytes --data_path=FILE``, and any UTF-8 text with
``--data=text --data_path=FILE`` (a character vocabulary instead of 256 bytes).
Without either, enwik8 is downloaded into the
cache (``$VCRNN_JAX_DATA`` or ``~/.cache/vcrnn_jax``). One byte per step
(one-hot), next byte predicted with a 256-way softmax, windows of 500
consecutive bytes at random offsets with the state reset to zero at each
window, LSTM with 1500 cells, ACT with M=100, epsilon=0.01, halting bias 1.
Reports bits per character and mean ponder on fixed held-out windows of the
valid split. After training, ``--plot_ponder_bytes=N`` plots the ponder
``rho_t`` over the first N bytes of the valid split (Fig. 23) into
``<workdir>/ponder_over_text.png``; rerunning with the same ``--steps`` and
``--workdir`` restores the checkpoint and only plots.

Reduced size on a 2-core CPU (see docs/results/act.md for the numbers)::

  python -m experiments.act_wikipedia \
      --data_path=DIR/text/tinyshakespeare.txt \
      --hidden_size=128 --seq_len=100 --batch_size=16 --steps=2000

Results (CPU-2, docs/results/act.md has the log): no enwik8 here and no GPU, so
only a reduced run on tinyshakespeare: ``--data_path=.../tinyshakespeare.txt
--hidden_size=128 --seq_len=100 --batch_size=16 --steps=300 --eval_every=100
--max_steps=20`` gives 3.85 bits per character on held-out windows with ACT
(ponder at the cap of 20, 199 s) against 4.32 without ACT (14 s).

Deviations: Adam with learning rate 1e-3 on one worker (paper: 1e-4, 16
Hogwild threads); the paper does not state its batch size (default 16 here);
error is reported on held-out valid windows (the paper reports training-set
error since its networks could not overfit).
"""

from absl import flags

from experiments import _act, _common
from vcrnn_jax import data
from vcrnn_jax.papers.act import lm as act_lm
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.training import lm

flags.DEFINE_enum('data', 'enwik8', ['enwik8', 'bytes', 'text'], 'Corpus: '
                  '"enwik8" (the paper\'s; bytes), "bytes" (any file as raw '
                  'bytes, split like enwik8) or "text" (any UTF-8 file, a '
                  'character vocabulary; split 90/5/5 at line starts); the '
                  'last two read --data_path.')
_common.mark_resumable(flags.DEFINE_string(
    'data_dir', None, 'Folder holding enwik8 or enwik8.zip (or '
    '<data_dir>/enwik8/); bypasses downloading.'))
flags.DEFINE_enum('split_unit', 'line', ['line', 'char'], 'With --data=text: '
                  'cut the split at line starts (no line straddles two '
                  'splits) or at any character (files of few, long lines).')
_common.mark_resumable(flags.DEFINE_string(
    'data_path', None, 'The file of --data=bytes or --data=text (with '
    '--data=enwik8 it means --data=bytes).'))
_common.define_positive_int('max_bytes', None, 'Read only the first this many '
                            'bytes of the corpus (quick runs).')
_common.define_positive_int('seq_len', 500, 'Bytes per training window '
                            '(paper: 500).')
_common.define_positive_int('eval_windows', 64, 'Held-out windows of the '
                            'valid split per evaluation.', resumable=True)
_common.mark_resumable(flags.DEFINE_integer(
    'plot_ponder_bytes', 0, 'After training, plot the ponder over this many '
    'bytes of the valid split (Fig. 23); 0: no plot.', lower_bound=0))
_act.define_flags(act_tasks.WIKIPEDIA_SETTINGS, task_flags=False)
_act.define_workdir('act_wikipedia')
# Shared flags are key flags of this binary, so --help lists them.
flags.adopt_module_key_flags(_common)
flags.adopt_module_key_flags(_act)
FLAGS = flags.FLAGS


def _corpus(values) -> tuple[str, data.Dataset]:
  """The kind of corpus (enwik8, bytes or text) and its dataset."""
  kind = ('bytes' if values['data'] == 'enwik8' and values['data_path']
          else values['data'])
  if values['split_unit'] != 'line' and kind != 'text':
    raise ValueError('--split_unit is for --data=text (the other corpora '
                     'split at bytes).')
  if kind == 'enwik8':
    return kind, data.load('enwik8', values['data_dir'],
                           max_length=values['max_bytes'])
  if not values['data_path']:
    raise ValueError(f'--data={kind} reads --data_path; give the file.')
  options = {'split_unit': values['split_unit']} if kind == 'text' else {}
  return kind, data.load(kind, path=values['data_path'],
                         max_length=values['max_bytes'], **options)


def _task(values, model, kind: str, ds) -> lm.LanguageModelTask:
  vocab = act_lm.BYTES if kind != 'text' else ds.vocab.size
  return act_lm.lm_task(
      ds.train, ds.valid, model, batch_size=values['batch_size'],
      seq_len=values['seq_len'], vocab_size=vocab,
      eval_windows=values['eval_windows'])


def build(values):
  """``(experiment, config)`` of a run with these flag ``values``: what
  ``main`` trains and ``experiments.load_run`` rebuilds."""
  model = _act.model_config(values)
  task = _task(values, model, *_corpus(values))
  return task.experiment, _act.train_config(values, 'act_wikipedia')


def main(processes):
  values = _common.flag_values()
  model = _act.model_config(values)
  kind, ds = _corpus(values)
  task = _task(values, model, kind, ds)
  workdir = _act.workdir('act_wikipedia')
  result = _common.train(task.experiment,
                         _act.train_config(values, 'act_wikipedia'),
                         workdir, processes=processes,
                         data_files=ds.meta['files'])
  if FLAGS.plot_ponder_bytes and processes.is_chief():
    from experiments.reports.act import plots  # pylint: disable=g-import-not-at-top
    text = ds.valid[:FLAGS.plot_ponder_bytes + 1]
    ponder = act_lm.ponder_over_text(task, result.params, text)
    path = workdir / 'ponder_over_text.png'
    shown = (bytes(text[:-1].tolist()) if kind != 'text'
             else list(ds.vocab.decode(text[:-1])))
    if _common.plot(path.name, lambda: plots.plot_ponder_over_text(
        shown, ponder, path)) is not None:
      print(f'wrote {path}')


if __name__ == '__main__':
  _common.run(main)
