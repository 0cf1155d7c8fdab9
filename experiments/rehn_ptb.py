r"""EI-REHN paper Section 4.3 (Tables 3-4): word-level Penn Treebank.

The paper's configuration (Table 3/4, EI-REHN-1200D; for a GPU)::

  python -m experiments.rehn_ptb --data_dir=DIR

trains the model of Fig. 3 (word embedding of size D_h, EI-REHN with D_h =
1200, D_z = 600, R_max = 4, the embedding matrix reused as the softmax
weights) with the RHN recipe of Zilly et al.'s code, which the paper follows
("we just replace the RHNCell class ... with an EIREHNCell"): truncated BPTT
over 35 steps with the state carried and reset each epoch, batch 20, the
loss summed over the 35 steps and averaged over the batch, plain SGD at
learning rate 0.2 divided by 1.02 every epoch after the 20th, global-norm
clipping at 10, L2 weight decay 1e-7, every weight uniform in [-0.04, 0.04],
variational dropout with masks shared over time and redrawn per window (word
types 0.25, embedding features 0.75, recurrent state 0.25, output 0.75), 500
epochs. It reports the validation perplexity every epoch and the test
perplexity of the final parameters (over the whole stream, the state
carried). ``--cell=rhn --depth=D`` trains Table 3's RHN baselines and
``--max_depth`` its EI-REHN columns (paper: R_max 2-5, best 4: 66.2 test;
RHN depth 5: 67.6, Table 4's RHN 65.4-66.0).

A small configuration that trains on a 2-core CPU (a typed run of it is
in docs/results/notebooks/rehn.md, 'Penn Treebank, CPU configuration
(commit 91a6b16)')::

  python -m experiments.rehn_ptb --data_dir=DIR \
      --hidden_size=200 --max_depth=3 --epochs=2 --eval_batch_size=20

The recorded runs, RHN at depths 2-5 against EI-REHN at R_max 2-5 at
``--hidden_size=100 --epochs=3 --eval_batch_size=20``, are in
docs/results/rehn.md, 'Table 3 at hidden size 100 (from records)', with
the verdicts in its 'Claims (from records)'.

Deviations: the paper's final evaluation after Zilly et al. reruns the best
validation checkpoint at batch 1; here the final parameters are evaluated
(``--eval_batch_size`` rows, state carried, every token once), and the
learning-rate decay follows the step (an epoch is a fixed number of
windows), as in Zilly et al.'s schedule.
"""

import collections

from absl import flags
import numpy as np

from experiments import _common, _rehn
from vcrnn_jax import data
from vcrnn_jax.papers.rehn import runs as rehn_runs
from vcrnn_jax.papers.rehn import tasks as rehn_tasks

_common.mark_resumable(flags.DEFINE_string(
    'data_dir', None, 'Folder holding ptb/ptb.*.txt (Mikolov\'s layout); '
    'default: the download cache.'))
flags.DEFINE_enum('cell', 'ei_rehn', ['rhn', 'srhn', 'srehn', 'ei_rehn'],
                  'Recurrent cell (Table 3: RHN and EI-REHN).')
_common.define_positive_int('hidden_size', 1200, 'D_h, also the embedding '
                            'size (tied; paper: 1200, and 1000 in Table 4).')
_common.define_positive_int('hyper_size', None, 'D_z (paper: 600; default '
                            'D_h / 2).')
_common.define_positive_int('max_depth', 4, 'R_max of EI-REHN (paper: 2-5, '
                            'best 4).')
flags.DEFINE_enum('gate', 'elastic', ['elastic', 'open'], 'EI-REHN/SREHN: '
                  'the elastic gate of Eq. 11 (the paper), or held open '
                  '(d = 1 in Eq. 10: every step runs R_max micro-layers), '
                  'which judges the gate apart from the hypernetwork.')
_common.define_float('alpha_init', None, 'EI-REHN/SREHN: initial alpha '
                     '(Eq. 13; default the cell\'s 0.1, which with beta 0.9 '
                     'puts the Eq. 15 bound at 6.96 micro-layers; the paper '
                     'states none).', strict=True)
_common.define_positive_int('depth', 5, 'Depth of the RHN baseline (paper: '
                            '2-5).')
_common.define_positive_int('epochs', 500, 'Training epochs (Zilly et al.: '
                            '500).')
_common.define_positive_int('seq_len', 35, 'BPTT window (Zilly et al.: 35).')
_common.define_float('init_scale', 0.04, 'Weights uniform in [-s, s] '
                     '(Zilly et al.: 0.04).', strict=True)
flags.DEFINE_float('transform_bias', None, 'Initial transform-gate bias '
                   '(RHN: -2 as Zilly et al.; default: the cell\'s).')
_common.define_float('drop_word', 0.25, 'Dropout of word types per window '
                     '(Zilly et al. drop_x).', upper=1.0)
_common.define_float('drop_input', 0.75, 'Dropout of embedding features '
                     '(drop_i).', upper=1.0)
_common.define_float('drop_state', 0.25, 'Dropout of the recurrent state '
                     '(drop_h).', upper=1.0)
_common.define_float('drop_output', 0.75, 'Dropout of the output before the '
                     'softmax (drop_o).', upper=1.0)
_common.define_positive_int('eval_batch_size', 20, 'Rows of the held-out '
                            'evaluation (1 is Zilly et al.\'s final; every '
                            'token is counted once either way).',
                            resumable=True)
_common.mark_resumable(flags.DEFINE_enum(
    'loop', 'while', ['while', 'scan'], 'Elastic depth loop.'))
_common.define_positive_int('ponder_slots', 8, 'Backward-pass slots of the '
                            'elastic depth loop.', resumable=True)
_common.mark_resumable(flags.DEFINE_integer(
    'plot_words', 200, 'After training, plot the realized depth over this '
    'many test words and its histogram per frequent word (0: no plots).',
    lower_bound=0))
_common.define_training_flags(steps=None, batch_size=20, learning_rate=0.2,
                              eval_every=None, optimizer='sgd',
                              grad_clip_norm=10.0)
flags.FLAGS.set_default('weight_decay', 1e-7)
flags.FLAGS.set_default('lr_decay', 1 / 1.02)
_common.define_workdir('runs/rehn_ptb/<cell>_<flags>')
flags.adopt_module_key_flags(_common)
FLAGS = flags.FLAGS


# The model flags each cell reads (the others, given, are refused).
CELL_FLAGS = {
    'rhn': ('depth', 'transform_bias'), 'srhn': ('depth', 'transform_bias'),
    'srehn': ('max_depth', 'transform_bias', 'loop', 'ponder_slots',
              'gate', 'alpha_init'),
    'ei_rehn': ('max_depth', 'hyper_size', 'transform_bias', 'loop',
                'ponder_slots', 'gate', 'alpha_init'),
}


def main(processes):
  _rehn.check_cell_flags(FLAGS.cell, CELL_FLAGS)
  ds = data.load('ptb_word', FLAGS.data_dir)
  run = rehn_runs.ptb_setup(_common.flag_values(), ds)
  spec, task = run.spec, run.task
  workdir = _common.default_workdir('rehn_ptb', leading=('cell', 'seed'))
  result = _common.train(run.experiment, run.config, workdir,
                         processes=processes, data_files=ds.meta['files'])
  if not processes.is_chief():
    return    # Process 0 reports (the others wait for it to finish).
  test = task.evaluate_stream(result.params, ds.test, result.step)
  params = rehn_tasks.parameter_count(result.params)
  print(f'{spec.name}: {params / 1e6:.2f}M params, test perplexity '
        f'{test["perplexity"]:.2f}, valid '
        f'{result.metrics.get("perplexity", float("nan")):.2f}'
        + (f', mean depth {test["depth"]:.2f}' if 'depth' in test else ''))
  _common.write_results(workdir, {
      'model': spec.name, 'step': result.step, 'parameters': params,
      **_common.metric_sections(result.metrics), 'test': test},
                        processes=processes)
  if FLAGS.plot_words and 'depth' in test:
    for path in (_plot_depth_along_text(task, result, ds, workdir),
                 _plot_depth_by_word(task, result, ds, workdir)):
      if path is not None:
        print(f'wrote {path}')


def _plot_depth_along_text(task, result, ds, workdir):
  from experiments.reports.rehn import plots  # pylint: disable=g-import-not-at-top
  tokens = ds.test[:FLAGS.plot_words + 1]

  def draw():
    per = task.per_step(result.params, tokens, result.step)
    words = list(ds.vocab.decode(tokens[:-1]))
    return plots.plot_depth_along_sequence(
        {'depth': per['depth']}, workdir / 'depth_along_text.png',
        labels=words, title=f'Realized depth over {len(words)} test words')

  return _common.plot('depth_along_text.png', draw)


def _plot_depth_by_word(task, result, ds, workdir):
  from experiments.reports.rehn import plots  # pylint: disable=g-import-not-at-top

  def draw():
    long = ds.test[:20_000]
    per = task.per_step(result.params, long, result.step)
    ids = np.asarray(long[:-1])
    common = [w for w, _ in collections.Counter(ids.tolist()).most_common(8)]
    groups = np.array([common.index(i) if i in common else len(common)
                       for i in ids])
    names = list(ds.vocab.decode(common)) + ['other words']
    return plots.plot_depth_histograms(
        {'depth': per['depth']}, groups, names,
        workdir / 'depth_by_word.png',
        title='Realized depth per word (test, most frequent words)')

  return _common.plot('depth_by_word.png', draw)


if __name__ == '__main__':
  _common.run(main)
