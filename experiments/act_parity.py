r"""ACT paper Section 3.1: parity of 64-element vectors with a simple RNN.

The main command::

  python -m experiments.act_parity --tau=0.01

trains an Elman RNN (128 tanh units, one sigmoid output, binary cross-entropy,
batch 128) with Adaptive Computation Time (M=100, epsilon=0.01, initial halting
bias 1) on vectors of 64 elements of which the first k (k uniform on 1..64) are
randomly +1/-1, and reports the sequence error rate and mean ponder on 1,000
held-out vectors every ``--eval_every`` steps. ``--act=false`` trains the
paper's baseline (the same network without ACT; with one input step its
recurrence is unused and it is a one-hidden-layer feed-forward net).
``--difficulty_report`` adds error and ponder per number of bits (Fig. 6).

Results: docs/results/act.md gives what this command reaches on a 2-core
CPU (CPU-2: AMD EPYC, AVX-512), ten seeds with their 95% interval and the
verdict on the paper's 5% by its criterion, generated from the run records
under docs/results/records/act/ (README.md quotes the same block), and
the network without ACT. ``--layout=random`` (non-zero bits at random
positions instead of a prefix) is much harder: the ACT notebook
(docs/results/notebooks/act.md) has typed runs of it.

Deviations from the paper: Adam with learning rate 1e-3 (``--learning_rate``)
on one worker instead of 1e-4 with 16 Hogwild threads, and 300k updates by
default instead of the paper's ~16M, so that a run fits a CPU (its recorded
wall time, and the machine's, are in the main command's block of
docs/results/act.md). Section 3.1 does not say which k elements are non-zero;
``--layout`` picks the reading (see ``vcrnn_jax.tasks.parity``).
"""

from absl import flags

from experiments import _act, _common
from vcrnn_jax import tasks
from vcrnn_jax.papers.act import tasks as act_tasks

_PAPER = act_tasks.PAPER_SETTINGS['parity']
_TASK = _PAPER['task_kwargs']
_common.define_positive_int(
    'bits', _TASK['bits'], 'Elements per parity vector (paper: '
                            '64).')
flags.DEFINE_enum('layout', _TASK['layout'], list(tasks.parity.LAYOUTS),
                  'Which k elements of a vector are non-zero: "prefix" (the '
                  'first k: a k-bit vector zero-padded, as public '
                  'reproductions build it) or "random" (a uniformly random '
                  'k-subset). Sec. 3.1 does not say; docs/results/act.md '
                  'compares the two.')
_act.define_flags(_PAPER)
_act.define_workdir('act_parity')
# Shared flags are key flags of this binary, so --help lists them.
flags.adopt_module_key_flags(_common)
flags.adopt_module_key_flags(_act)
FLAGS = flags.FLAGS


def main(processes):
  _act.main('act_parity', 'parity', processes)


if __name__ == '__main__':
  _common.run(main)
