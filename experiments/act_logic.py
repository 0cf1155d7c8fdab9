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

Results on a 2-core CPU (docs/results/act.md has the log): this command (60k
steps by default) reached **0.2% sequence error** (0.17% on 10,000 held-out
sequences; the paper: virtually zero, a reproduction: 0-0.2%), first below
1% at 45k steps. The ponder climbs to ~73 of M=100 early on (tau=1e-3) and
falls back as the task is learnt: 67 at 10k, 25 at 35k, 14 at 60k, from 8
steps per vector at 1 gate to 23 at 10 gates (the trend of Fig. 10). Error
54.3% at 10k, 29.6% at 20k, 3.9% at 35k. One run, seed 0, trained in
resumed segments on one core, ~2 steps/s while the ponder was high (before
padded rows stopped pondering and ``--compact_rows=8`` was added), 4-24/s
after: roughly 3-4 hours of one core in all. ``--act=false`` with the same
60k steps: 45.7%, still falling (1m56s). The paper's runs took ~160k
updates (10k iterations on each of 16 threads).

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
  _act.main('act_logic', 'logic',
            dict(max_len=FLAGS.max_len, num_gates=FLAGS.num_gates),
            processes)


if __name__ == '__main__':
  _common.run(main)
