r"""ACT paper Section 3.2: sequences of binary logic operations with an LSTM.

Command::

  python -m experiments.act_logic --tau=0.001

Each sequence has 1-10 vectors of size 102 (two bits, then 10 one-hot chunks
naming 1-10 gates of Table 1); the target of each vector is Eq. 21 applied
recursively, with ``b_0`` of later vectors the previous target (zero in the
input). Single-layer LSTM with 128 cells, one sigmoid output, binary
cross-entropy, batch 16, ACT with M=100, epsilon=0.01, halting bias 1.
Reports the sequence error rate and the mean ponder on 1,000 held-out
sequences. ``--act=false`` is the no-ACT baseline (paper: ~20% error; ACT with
tau <= 0.01: virtually zero).

Results: one run (seed 0) of this command reached 0.2% sequence error in
60k steps, with the ponder falling as the task is learnt and growing with
the number of gates (the trend of Fig. 10); it took hours of one core, so it
is kept on docs/results/act.md as history, with the commit that made it,
and is not among the run records.

Deviations: Adam with learning rate 1e-3 on one worker (paper: 1e-4, 16
Hogwild threads, 1M iterations per thread).
"""

from absl import flags

from experiments import _act, _common
from vcrnn_jax.papers.act import tasks as act_tasks

_PAPER = act_tasks.PAPER_SETTINGS['logic']
_TASK = _PAPER['task_kwargs']
_common.define_positive_int(
    'max_len', _TASK['max_len'], 'Most vectors per sequence '
    '(paper: 10; lengths are uniform on 1..max_len).')
_common.define_positive_int(
    'num_gates', _TASK['num_gates'], 'Gate chunks per vector, the '
    'most gates a vector applies (paper: 10).')
_act.define_flags(_PAPER)
_act.define_workdir('act_logic')
# Shared flags are key flags of this binary, so --help lists them.
flags.adopt_module_key_flags(_common)
flags.adopt_module_key_flags(_act)
FLAGS = flags.FLAGS


def main(processes):
  _act.main('act_logic', 'logic', processes)


if __name__ == '__main__':
  _common.run(main)
