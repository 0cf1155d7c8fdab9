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

Results on a 2-core CPU (docs/results/act.md has the log): reduced size only.
``--hidden_size=128 --steps=30000 --eval_every=2000`` gives 78.6% sequence
error with ACT (ponder 17.2 of M=20, 1059 s on one core) and 78.3% without
(85 s): at this size and budget neither learns much beyond the length-1
sequences, which have no target. A smaller task, ``--hidden_size=128
--max_digits=3 --max_len=3 --steps=20000 --eval_every=2000``, is learnt:
5.8% with ACT (ponder 8.8, rising from 8.2 per step for 1-digit numbers to
11.6 for 3-digit ones, the direction of Fig. 14) and 7.9% without. The
paper's perfect score came after ~16M updates (1M iterations x 16 threads);
the full-size run needs a GPU or many CPU hours.

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
