r"""Skip-RNN's adding task: LSTM, GRU, Skip-LSTM, Skip-GRU and VCGRU compared.

The command for one model::

  python -m experiments.family_adding --model=skip_lstm --budget=1e-4

trains it (110 units, the Skip-RNN paper's adding-task size) on sequences of
50 (value, marker) pairs whose target is the sum of the two marked values
(Campos et al. 2018, Sec. 4.1; :mod:`vcrnn_jax.tasks.adding`), and reports
the held-out mean squared error and the fraction of the state updated: the
mean ``u_t`` of a Skip cell, the mean ``m_t`` of VCGRU, 1 for LSTM and GRU.
``<workdir>/results.json`` holds both; a model that solves the task is far
below the ``1/6`` of predicting the mean (``mse_over_baseline`` < 1).

The comparison is one run per model and seed, e.g.::

  for m in lstm gru skip_lstm skip_gru vcgru; do
    for s in 0 1 2; do python -m experiments.family_adding --model=$m \
      --seed=$s; done; done

Defaults: Adam at 1e-4 with gradients clipped to norm 1 and batch 256 (the
authors' code), budget 1e-4 (their cost per sample for the adding task),
VCGRU's target m-bar 0.3 with weight 0.1 (VCRNN Eq. 10). The authors train
until the error stops improving; 30,000 steps here.

On CPU-2 (2 cores, two runs at a time) the runs recorded are reduced to
1,000 updates, seeds 0-2 (the time per update typed from them is in
docs/results/notebooks/family.md)::

  python -m experiments.family_adding --model=<m> --steps=1000 \
      --eval_every=250 --seed=<s> [--budget=<b>]

docs/results/family.md, 'Adding task: LSTM, GRU, Skip-LSTM, Skip-GRU,
VCGRU', has each model's MSE relative to predicting the mean (1/6) and
its share of the state updated, generated from those records; 'What
holds, what does not, what cannot be judged here' has the verdicts, among
them on the Skip-RNN paper's claim of the task solved with most steps
skipped.
"""

from absl import flags

from experiments import _common
from vcrnn_jax.papers.family import adding as family_adding
from vcrnn_jax.papers.family import runs as family_runs

flags.DEFINE_enum('model', 'skip_lstm', list(family_adding.MODELS),
                  'The model: a plain LSTM or GRU, either with Skip-RNN\'s '
                  'update gate (skip_lstm, skip_gru), or VCGRU.')
_common.define_positive_int('hidden_size', 110, 'Units of the recurrent '
                            'cell (the Skip-RNN paper: 110).')
_common.define_positive_int('seq_len', 50, 'Length of each sequence (paper: '
                            '50; at least 10).')
_common.define_float('budget', 1e-4, 'Skip cells: the weight lambda of the '
                     'number of updates in the loss (Skip-RNN Eq. S5).')
_common.define_float('vc_target', 0.3, 'VCGRU: the target share of hidden '
                     'dimensions updated, m-bar of VCRNN Eq. 10.', upper=1.0,
                     strict=True)
_common.define_float('vc_penalty', 0.1, 'VCGRU: the weight of the penalty '
                     'Omega(m, m-bar) of VCRNN Eq. 10 in the loss.')
_common.define_positive_int('eval_batch_size', 1000, 'Held-out sequences per '
                            'evaluation (the same ones every time).',
                            resumable=True)
_common.define_training_flags(steps=30_000, batch_size=256,
                              learning_rate=1e-4, eval_every=1_000,
                              grad_clip_norm=1.0)
_common.define_workdir('runs/family_adding/model=<model>_seed=<seed>, then '
                       '_<flag>=<value> for each other non-default flag that '
                       'defines the run')
flags.adopt_module_key_flags(_common)
FLAGS = flags.FLAGS


def main(processes):
  run = family_runs.adding_run(_common.flag_values())
  workdir = _common.default_workdir('family_adding',
                                    leading=('model', 'seed'))
  result = _common.train(run.experiment, run.config, workdir,
                         processes=processes)
  _common.write_results(workdir, {
      'model': FLAGS.model, 'seed': FLAGS.seed, 'updates': result.step,
      'spec': run.spec._asdict(),
      **_common.metric_sections(result.metrics)}, processes=processes)
  return result


if __name__ == '__main__':
  _common.run(main)
