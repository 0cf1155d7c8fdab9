"""Every Python block of README.md runs, in order, as a user runs it."""

import pathlib
import re

import flax
import jax
import numpy as np

README = pathlib.Path(__file__).resolve().parents[1] / 'README.md'


def _blocks() -> list[str]:
  return re.findall(r'```python\n(.*?)```', README.read_text(), re.S)


def test_every_readme_python_block_runs_and_says_what_it_shows():
  blocks = _blocks()
  assert len(blocks) >= 5
  scope = {}
  # As a user runs them, one after another in one session and in JAX's
  # default float32 (the suite runs in float64).
  with jax.enable_x64(False):
    for i, code in enumerate(blocks):
      exec(compile(code, f'README.md block {i}', 'exec'), scope)
      # What each block's comments say it gives.
      if 'act.adaptive(cells.lstm(128)' in code:
        assert scope['out'].output.shape == (16, 20, 10)
        assert scope['out'].ponder.shape == (16, 20)
        assert np.isfinite(scope['loss_penalty'])
      if 'rehn.ei_rehn(20' in code:
        assert scope['out'].output.shape == (8, 21, 20)
        assert scope['out'].depth.shape == (8, 21)
      if 'ponder.pondernet(' in code:
        assert scope['out'].probs.shape == (4, 20)
        np.testing.assert_allclose(scope['out'].probs.sum(-1), 1, rtol=1e-5)
        assert np.isfinite(scope['loss'])
      if 'self.sow(' in code:
        _check_sow_example(scope)
  assert scope['config'].clip_apart == ('scheduler',)


def _check_sow_example(scope):
  assert np.isfinite(scope['loss'])
  leaves = jax.tree_util.tree_leaves(scope['grads'])
  assert leaves and all(np.all(np.isfinite(g)) for g in leaves)
  # The ponder cost is in the loss: its gradient reaches the halting unit.
  flat = flax.traverse_util.flatten_dict(scope['grads'])
  (halting,) = [g for path, g in flat.items() if 'halting' in path
                and path[-1] == 'kernel']
  assert np.any(halting != 0)
