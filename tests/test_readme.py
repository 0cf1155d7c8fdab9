"""Every Python block of README.md runs pasted alone into a fresh REPL."""

import code
import contextlib
import io
import pathlib
import re

import flax
import jax
import numpy as np
import pytest

README = pathlib.Path(__file__).resolve().parents[1] / 'README.md'


def _blocks() -> list[str]:
  return re.findall(r'```python\n(.*?)```', README.read_text(), re.S)


class _Repl(code.InteractiveConsole):
  """Python's interactive console, raising what it would print."""

  def showsyntaxerror(self, filename=None, **kwargs):
    raise

  def showtraceback(self):
    raise


def _paste(block: str) -> dict:
  """Runs ``block`` as the REPL runs it pasted, line by line, in a fresh
  namespace; returns that namespace."""
  repl = _Repl(locals={'__name__': '__console__'})
  with contextlib.redirect_stdout(io.StringIO()):   # echoed expressions
    for line in block.splitlines() + ['']:
      repl.push(line)
  return repl.locals


def test_no_blank_line_inside_an_indented_block():
  # The REPL ends a class or function body at a blank line.
  for i, block in enumerate(_blocks()):
    lines = block.splitlines()
    for j in range(1, len(lines) - 1):
      if not lines[j].strip():
        assert not lines[j + 1].startswith((' ', '\t')), (
            f'README.md block {i}: a blank line inside an indented block '
            f'(before {lines[j + 1].strip()!r})')


@pytest.mark.parametrize('i', range(len(_blocks())))
def test_each_readme_python_block_runs_alone_and_says_what_it_shows(i):
  code_text = _blocks()[i]
  # As a user runs them, in JAX's default float32 (the suite runs in
  # float64).
  with jax.enable_x64(False):
    scope = _paste(code_text)
  # What each block's comments say it gives.
  if 'act.adaptive(cells.lstm(128)' in code_text:
    assert scope['out'].output.shape == (16, 20, 10)
    assert scope['out'].ponder.shape == (16, 20)
    assert np.isfinite(scope['loss_penalty'])
  if 'rehn.ei_rehn(20' in code_text:
    assert scope['out'].output.shape == (8, 21, 20)
    assert scope['out'].depth.shape == (8, 21)
  if 'ponder.pondernet(' in code_text:
    assert scope['out'].probs.shape == (4, 20)
    np.testing.assert_allclose(scope['out'].probs.sum(-1), 1, rtol=1e-5)
    assert np.isfinite(scope['loss'])
  if 'nn.RNN(linen.GRU' in code_text:
    params = scope['variables']['params']['cell']['cell']
    assert params['input_kernel'].shape == (32, 3 * 64)
  if 'vnnx.LSTM(' in code_text:
    assert scope['ys'].shape == (4, 7, 16)
    assert scope['ys'].dtype == np.float32
    assert scope['cell'].input_kernel[...].dtype == np.float32
  if 'self.sow(' in code_text:
    _check_sow_example(scope)
  if 'TrainConfig(' in code_text:
    assert scope['config'].clip_apart == ('scheduler',)


def test_the_blocks_show_what_the_tests_check():
  blocks = _blocks()
  assert len(blocks) >= 7
  for marker in ('act.adaptive(cells.lstm(128)', 'rehn.ei_rehn(20',
                 'ponder.pondernet(', 'nn.RNN(linen.GRU', 'vnnx.LSTM(',
                 'self.sow(', 'TrainConfig('):
    assert any(marker in b for b in blocks), marker


def test_a_block_the_repl_cannot_run_is_caught():
  with pytest.raises(SyntaxError):
    _paste('class A:\n  x = 1\n\n  def f(self):\n    return 1\n')


def _check_sow_example(scope):
  assert np.isfinite(scope['loss'])
  leaves = jax.tree_util.tree_leaves(scope['grads'])
  assert leaves and all(np.all(np.isfinite(g)) for g in leaves)
  # The ponder cost is in the loss: its gradient reaches the halting unit.
  flat = flax.traverse_util.flatten_dict(scope['grads'])
  (halting,) = [g for path, g in flat.items() if 'halting' in path
                and path[-1] == 'kernel']
  assert np.any(halting != 0)
