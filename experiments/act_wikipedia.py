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
valid split. After training with ACT, ``<workdir>/results.json`` holds under
``analysis`` the mean ponder per character class (space, first character
after a space, inside a word, sentence end, newline, punctuation) over the
first ``--analysis_symbols`` inputs of the valid split, and the ponder of its
first ``--analysis_shown`` characters (:mod:`vcrnn_jax.papers.act.wikipedia`
defines the classes and which step's ponder each reads); without ACT
``analysis`` is null. After training, ``--plot_ponder_bytes=N`` plots the
ponder ``rho_t`` over the first N bytes of the valid split (Fig. 23) into
``<workdir>/ponder_over_text.png``; rerunning with the same ``--steps`` and
``--workdir`` restores the checkpoint and only plots.

Reduced size on a 2-core CPU::

  python -m experiments.act_wikipedia \
      --data_path=DIR/text/tinyshakespeare.txt \
      --hidden_size=128 --seq_len=100 --batch_size=16 --steps=2000

Results: no enwik8 and no GPU on CPU-2. A typed reduced run on
tinyshakespeare, ``--data_path=.../tinyshakespeare.txt --hidden_size=128
--seq_len=100 --batch_size=16 --steps=300 --eval_every=100
--max_steps=20`` with and without ACT, is in docs/results/notebooks/act.md,
'Addition, sort, Wikipedia (Sec. 3.3-3.5), reduced size'.

Deviations: Adam with learning rate 1e-3 on one worker (paper: 1e-4, 16
Hogwild threads); the paper does not state its batch size (default 16 here);
error is reported on held-out valid windows (the paper reports training-set
error since its networks could not overfit).
"""

from absl import flags

from experiments import _act, _common
from vcrnn_jax.papers.act import lm as act_lm
from vcrnn_jax.papers.act import runs as act_runs
from vcrnn_jax.papers.act import tasks as act_tasks
from vcrnn_jax.papers.act import wikipedia as act_wikipedia

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
_common.mark_resumable(flags.DEFINE_integer(
    'analysis_symbols', 20_000, 'After training with ACT, the mean ponder per '
    'character class (space, first character after a space, inside a word, '
    'sentence end, ...; vcrnn_jax.papers.act.wikipedia) over this many '
    'inputs of the valid split, read in --seq_len windows from a zero state, '
    'into results.json under "analysis"; 0: none.', lower_bound=0))
_common.mark_resumable(flags.DEFINE_integer(
    'analysis_shown', 200, 'Of those, how many (from the start) are written '
    'to results.json character by character with their ponder (Figs. 23-24; '
    'a record keeps lists of up to 200).', lower_bound=0))
_act.define_flags(act_tasks.WIKIPEDIA_SETTINGS, task_flags=False)
_act.define_workdir('act_wikipedia')
# Shared flags are key flags of this binary, so --help lists them.
flags.adopt_module_key_flags(_common)
flags.adopt_module_key_flags(_act)
FLAGS = flags.FLAGS


def main(processes):
  run = act_runs.wikipedia_run(_common.flag_values())
  workdir = _act.workdir('act_wikipedia')
  result = _common.train(run.experiment, run.config, workdir,
                         processes=processes,
                         data_files=run.dataset.meta['files'])
  if processes.is_chief():
    _common.write_results(workdir, {
        'step': result.step, **_common.metric_sections(result.metrics),
        'analysis': _analysis(run, result)}, processes=processes)
  if FLAGS.plot_ponder_bytes and processes.is_chief():
    from experiments.reports.act import plots  # pylint: disable=g-import-not-at-top
    text = run.dataset.valid[:FLAGS.plot_ponder_bytes + 1]
    ponder = act_lm.ponder_over_text(run.task, result.params, text)
    path = workdir / 'ponder_over_text.png'
    shown = (bytes(text[:-1].tolist()) if run.kind != 'text'
             else list(run.dataset.vocab.decode(text[:-1])))
    if _common.plot(path.name, lambda: plots.plot_ponder_over_text(
        shown, ponder, path)) is not None:
      print(f'wrote {path}')


def _analysis(run, result) -> dict | None:
  """Mean ponder per character class over the valid split and the ponder of
  its first characters (:func:`vcrnn_jax.papers.act.wikipedia.analysis`);
  None without ACT (one step per input: no ponder to analyse) or with
  ``--analysis_symbols=0``."""
  if not FLAGS.act or not FLAGS.analysis_symbols:
    return None
  found = act_wikipedia.analysis(
      run.task.per_step, result.params, run.dataset.valid,
      run.dataset.vocab.decode, seq_len=FLAGS.seq_len,
      symbols=FLAGS.analysis_symbols, shown=FLAGS.analysis_shown,
      step=result.step, unit='char' if run.kind == 'text' else 'byte',
      max_steps=FLAGS.max_steps)
  means = found['mean_ponder_by_class']
  print(f'mean ponder by class over {found["symbols"]} valid '
        f'{found["unit"]}s: ' + ', '.join(
            f'{k} {v["mean"]:.3f} ({v["count"]})' if v['mean'] is not None
            else f'{k} - (0)' for k, v in means.items()))
  return found


if __name__ == '__main__':
  _common.run(main)
