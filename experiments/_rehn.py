"""Flags of the EI-REHN binaries' model, defined once (each binary picks its
own paper defaults for the size and the fixed depth)."""

from absl import flags

from experiments import _common
from vcrnn_jax.papers.rehn import tasks as rehn_tasks

FLAGS = flags.FLAGS


def define_model_flags(*, cell_help: str, hidden_size: int, hidden_help: str,
                       depth: int, depth_help: str) -> None:
  """--cell, --hidden_size, --depth, --max_depth, --hyper_size, --loop and
  --ponder_slots (the last two resumable: they change cost, not results)."""
  flags.DEFINE_enum('cell', 'ei_rehn', list(rehn_tasks.CELL_NAMES), cell_help)
  _common.define_positive_int('hidden_size', hidden_size, hidden_help)
  _common.define_positive_int('depth', depth, depth_help)
  _common.define_positive_int('max_depth', 10, 'R_max of srehn and ei_rehn.')
  _common.define_positive_int('hyper_size', None, 'D_z of ei_rehn (default '
                              'ceil(D_h / 2)).')
  _common.mark_resumable(flags.DEFINE_enum(
      'loop', 'while', ['while', 'scan'], 'Elastic depth loop: "while" costs '
      'the realized depth; "scan" is the masked reference over R_max.'))
  _common.define_positive_int('ponder_slots', 8, 'Backward-pass slots of the '
                              'elastic depth loop.', resumable=True)


# The model flags each cell reads; any other, given, is refused.
CELL_FLAGS = {
    'rnn': (), 'lstm': (), 'rhn': ('depth',), 'srhn': ('depth',),
    'srehn': ('max_depth', 'loop', 'ponder_slots'),
    'ei_rehn': ('max_depth', 'hyper_size', 'loop', 'ponder_slots'),
}


def check_cell_flags(cell: str, flags_of: dict) -> None:
  """Refuses model flags given on the command line that ``cell`` ignores.

  Args:
    cell: the ``--cell`` value.
    flags_of: cell -> the flags it reads, among ``every`` such flag.

  Raises:
    ValueError: one line naming the flag, the cell and the cells it is for.
  """
  every = sorted({f for names in flags_of.values() for f in names})
  for name in every:
    if FLAGS[name].present and name not in flags_of[cell]:
      users = [c for c, names in flags_of.items() if name in names]
      raise ValueError(f'--{name} is for --cell={"|".join(users)}; '
                       f'--cell={cell} does not use it.')
