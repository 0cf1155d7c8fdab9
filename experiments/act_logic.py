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

Results on a 2-core CPU (BUILD_NOTES.md has the log): with this command,
54.3% sequence error after 10k steps, 29.6% after 20k and 3.9% after 35k,
still falling (ponder 73 at 6k down to 25 at 35k: tau=1e-3 lets the network
ponder near M early in training). Steps ran at ~2/s on one core before
padded rows stopped pondering and ``--compact_rows=8`` (the default) was
added, 4-8/s after. ``--act=false`` is at 61.3% after 20k steps. The paper's
~0% took 10k iterations on each of 16 threads (~160k updates); the <=1%
target was not reached within this session's CPU budget.

Deviations: Adam with learning rate 1e-3 on one worker (paper: 1e-4, 16
Hogwild threads, 1M iterations per thread).
"""

from absl import flags

from experiments import _act
from experiments import _common

_common.define_positive_int('max_len', 10, 'Most vectors per sequence '
                            '(paper: 10; lengths are uniform on 1..max_len).')
_common.define_positive_int('num_gates', 10, 'Gate chunks per vector, the '
                            'most gates a vector applies (paper: 10).')
_act.define_flags(cell='lstm', hidden_size=128, batch_size=16, max_steps=100,
                  steps=20_000, learning_rate=1e-3, eval_every=1000,
                  tau=0.001, workdir='act_logic')
# Shared flags are key flags of this binary, so --help lists them.
flags.adopt_module_key_flags(_common)
flags.adopt_module_key_flags(_act)
FLAGS = flags.FLAGS


def main(argv):
  del argv
  _act.main('act_logic', 'logic',
            dict(max_len=FLAGS.max_len, num_gates=FLAGS.num_gates))


if __name__ == '__main__':
  _common.run(main)
