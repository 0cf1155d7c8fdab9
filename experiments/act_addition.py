r"""ACT paper Section 3.3: cumulative addition of 1-5 digit numbers with an
LSTM.

Command::

  python -m experiments.act_addition --tau=0.001

Each sequence has 1-5 vectors of size 50, each a D-digit number (D in 1..5) as
D one-hot digits; the target at every step but the first is the cumulative sum
as 6 digit classifications of 11 classes (class 10 marks digits beyond the end
of the number). Single-layer LSTM with 512 cells, 6 softmax groups, joint
cross-entropy, batch 32, ACT with M=20 (as in the paper), epsilon=0.01, halting
bias 1. Reports sequence error rate and mean ponder on 1,000 held-out
sequences; ``--act=false`` is the baseline.

Results on a 2-core CPU, reduced size only: the recorded runs of a smaller
task, ``--hidden_size=128 --max_digits=3 --max_len=3 --steps=20000
--eval_every=2000`` with ``--act=false``, ``--tau=0.001`` and
``--tau=0.01``, each with its ``--difficulty_report`` (Fig. 14), are in
docs/results/act.md, 'Addition (Sec. 3.3)', with the verdicts in its
'Claims (from records)'. Typed runs of the paper's task with LSTM 128,
``--hidden_size=128 --steps=30000 --eval_every=2000``, with and without
ACT, are in docs/results/notebooks/act.md, 'Addition, sort, Wikipedia
(Sec. 3.3-3.5), reduced size'. The paper's perfect score came after ~16M
updates (1M iterations x 16 threads); the full-size run needs a GPU or many
CPU hours, and a GPU run of its first updates is in docs/results/act.md,
'Addition at the paper's size, on a GPU'.

Deviations: Adam with learning rate 1e-3 on one worker (paper: 1e-4, 16
Hogwild threads, 1M iterations per thread).
"""

from absl import flags

from experiments import _act, _common
from vcrnn_jax.papers.act import tasks as act_tasks

_PAPER = act_tasks.PAPER_SETTINGS['addition']
_TASK = _PAPER['task_kwargs']
_common.define_positive_int(
    'max_len', _TASK['max_len'], 'Most numbers per sequence (paper: '
    '5).')
_common.define_positive_int(
    'max_digits', _TASK['max_digits'], 'Most digits per number (paper: '
    '5).')
_act.define_flags(_PAPER)
_act.define_workdir('act_addition')
# Shared flags are key flags of this binary, so --help lists them.
flags.adopt_module_key_flags(_common)
flags.adopt_module_key_flags(_act)
FLAGS = flags.FLAGS


def main(processes):
  _act.main('act_addition', 'addition', processes)


if __name__ == '__main__':
  _common.run(main)
