r"""ACT paper Section 3.4: sorting 2-15 standard-normal numbers with an LSTM.

Command::

  python -m experiments.act_sort --tau=0.001

The numbers arrive one per step as (value, end-flag) vectors, followed by as
many zero vectors, during which the network outputs the indices of the inputs
in ascending order (15-way softmax). Single-layer LSTM with 512 cells, batch
16, ACT with M=100, epsilon=0.01, halting bias 1. Reports sequence error rate
and mean ponder on 1,000 held-out sequences (paper: ~12% without ACT, ~6% for
the best tau); ``--act=false`` is the baseline.

Results on a 2-core CPU, reduced size only: the recorded runs of sorting
2-8 numbers, ``--hidden_size=128 --max_len=8 --steps=20000
--eval_every=2000`` with ``--act=false``, ``--tau=0.001`` and
``--tau=0.01``, each with its ``--difficulty_report`` (Fig. 19), are in
docs/results/act.md, 'Sort (Sec. 3.4)', with the verdicts in its 'Claims
(from records)'. Typed runs of the paper's task with LSTM 128,
``--hidden_size=128 --steps=30000 --eval_every=2000``, with and without
ACT, are in docs/results/notebooks/act.md, 'Addition, sort, Wikipedia
(Sec. 3.3-3.5), reduced size'. The paper's 6% / 12% came after ~16M
updates; the full-size run needs a GPU or many CPU hours.

Deviations: Adam with learning rate 1e-3 on one worker (paper: 1e-4, 16
Hogwild threads, 1M iterations per thread).
"""

from absl import flags

from experiments import _act, _common
from vcrnn_jax.papers.act import tasks as act_tasks

_PAPER = act_tasks.PAPER_SETTINGS['sort']
_TASK = _PAPER['task_kwargs']
_common.define_positive_int(
    'min_len', _TASK['min_len'], 'Fewest numbers to sort (paper: 2).')
_common.define_positive_int(
    'max_len', _TASK['max_len'], 'Most numbers to sort (paper: 15).')
_act.define_flags(_PAPER)
_act.define_workdir('act_sort')
# Shared flags are key flags of this binary, so --help lists them.
flags.adopt_module_key_flags(_common)
flags.adopt_module_key_flags(_act)
FLAGS = flags.FLAGS


def main(processes):
  _act.main('act_sort', 'sort', processes)


if __name__ == '__main__':
  _common.run(main)
