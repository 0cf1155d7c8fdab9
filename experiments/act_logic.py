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

Results: the recorded runs of this command, of ``--tau=0.01``,
``--tau=0.1`` and ``--act=false``, each with its ``--difficulty_report``
(error and ponder per number of gates, Fig. 10), are in
docs/results/act.md, 'Logic (Sec. 3.2)', with the verdicts on Sec. 3.2's
claims in its 'Claims (from records)'. A typed run of this command, with
its evaluations along training and runs at the paper's learning rate, is in
docs/results/notebooks/act.md, 'Logic (Sec. 3.2)'.

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
