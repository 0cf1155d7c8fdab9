r"""Our Elman, GRU and LSTM against flax.linen's, forward and backward.

For each cell and each ``hidden x batch x T`` of ``--sizes`` this times,
side by side in one run, a jitted ``jax.value_and_grad`` (with respect to
the params) of the mean squared output of a ``T``-step sequence of
``--input_size`` features, computed by

  (a) ``ours``: the pure cell (:func:`vcrnn_jax.cells.elman`, ``gru``,
      ``lstm``) run by :func:`vcrnn_jax.unroll` (a ``lax.scan``);
  (b) ``linen``: our Linen module (:class:`vcrnn_jax.linen.Elman`, ``GRU``,
      ``LSTM``) under ``flax.linen.RNN``;
  (c) ``flax``: flax's own cell under ``flax.linen.RNN``:
      ``nn.SimpleCell``, ``nn.GRUCell`` and ``nn.OptimizedLSTMCell``
      (``--flax_lstm=plain``: ``nn.LSTMCell``);

and reports the median of ``--repeats`` interleaved calls of each (the
variants take turns, so a change in the machine's load hits them alike) and
the ratios ``ours/flax`` and ``linen/flax``.

Same maths? Elman and LSTM: yes. The Elman unit is ``SimpleCell``'s
``tanh(W_i x + b + W_h h)`` and our LSTM is flax's (gate order aside), so
(a), (b) and (c) start from the same params (converted to flax's layout)
and the benchmark checks that their losses agree (``maths`` = ``same``).
GRU: no (``maths`` = ``differs``). Ours is the VCRNN paper's Eq. 4-6 (Cho
et al. 2014): the reset gate multiplies ``h`` *before* the recurrent matmul,
``z`` weights the new state, and the matmuls are fused (``x`` by one
``[in, 3H]`` kernel, ``h`` by ``[H, 2H]`` for the gates, then ``r * h`` by
``[H, H]``). ``nn.GRUCell`` applies the reset gate *after* its recurrent
matmul (cuDNN's form), weights the old state by ``z``, and computes six
separate dense layers. The multiply-adds are the same, the computation is
not: the ratio compares two GRUs, not one GRU's two implementations.

(a) and (b) run the same cell from the same params; how far apart their
ratios are shows the timing noise.

``--dtypes=float32,bfloat16`` times each setting once per computation dtype
(flax's ``dtype``: inputs, params and state cast for the step; params stay
float32), a row each. Losses must then agree to 5e-2 in bfloat16, and to 1e-2
in float32 off the CPU, where a GPU's float32 matmuls may run in TF32.

Usage::

  python -m benchmarks.flax_rnn                # ~2 minutes on CPU-2
  python -m benchmarks.flax_rnn --cells=lstm --sizes=512x64x50
  python -m benchmarks.flax_rnn --sizes=256x64x100,1024x64x100 \
      --dtypes=float32,bfloat16     # the GPU settings

The suite, ``python -m benchmarks --only=flax_rnn``, runs it as a user does
(unpinned, every core) and pinned to one core, 3 times each in fresh
processes taking turns, and reports both: docs/performance.md.
"""

import argparse
import statistics
import time

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import _cli
from vcrnn_jax import cells, linen
from vcrnn_jax.unroll import unroll

CELLS = ('elman', 'gru', 'lstm')
# Computation dtypes by name (--dtypes); None computes in the params' float32.
DTYPES = {'float32': None, 'bfloat16': jnp.bfloat16}
# The cells whose flax counterpart computes the same function (docstring).
SAME_MATHS = ('elman', 'lstm')
# The suite's table (python -m benchmarks): the headline ratio columns
# (fnmatch patterns), then the time columns shown beside them.
RATIOS = ('ours/flax', 'linen/flax')
TIMES = ('ms_flax',)
QUICK = ['--sizes=16x4x10', '--repeats=2', '--dtypes=float32,bfloat16']
# Our cell, our Linen module and flax's, by cell name.
_OURS = {'elman': cells.elman, 'gru': cells.gru, 'lstm': cells.lstm}
_LINEN = {'elman': linen.Elman, 'gru': linen.GRU, 'lstm': linen.LSTM}


def _flax_cell(name: str, hidden: int, lstm: str,
               dtype=None) -> nn.RNNCellBase:
  if name == 'elman':
    return nn.SimpleCell(hidden, dtype=dtype)
  if name == 'gru':
    return nn.GRUCell(hidden, dtype=dtype)
  lstm_cell = nn.OptimizedLSTMCell if lstm == 'optimized' else nn.LSTMCell
  return lstm_cell(hidden, dtype=dtype)


def _flax_params(name: str, ours: dict) -> dict:
  """Our Elman or LSTM params in flax's cell's layout."""
  if name == 'elman':
    return {'i': {'kernel': ours['input_kernel'], 'bias': ours['bias']},
            'h': {'kernel': ours['recurrent_kernel']}}
  return linen.lstm_params_to_flax(ours)


def _mse(ys) -> jax.Array:
  return jnp.mean(jnp.square(ys))


def variants(name: str, hidden: int, xs: jax.Array, lstm: str,
             dtype=None) -> dict:
  """``{variant: (jitted value_and_grad, params)}`` for (a), (b) and (c).

  Each function takes ``(params, xs)`` and differentiates the params, which
  are float32; ``dtype`` is the computation dtype of all three (None: the
  params').
  """
  cell = _OURS[name](hidden, dtype=dtype)
  ours = cell.init(jax.random.key(0), xs.shape[-1])

  def loss_ours(params, xs):
    state = cell.initial_state(xs.shape[0])
    return _mse(unroll(cell, params, state, xs)[1])

  rnn_linen = nn.RNN(_LINEN[name](hidden, dtype=dtype))
  rnn_flax = nn.RNN(_flax_cell(name, hidden, lstm, dtype))
  if name in SAME_MATHS:
    flax_params = _flax_params(name, ours)
  else:   # flax's GRU has params of its own
    flax_params = rnn_flax.init(jax.random.key(0), xs)['params']['cell']

  def loss_module(rnn):
    return lambda params, xs: _mse(rnn.apply({'params': params}, xs))

  def loss_flax(params, xs):
    # flax's cells start from a carry in their params' dtype and return one
    # in the computation dtype, which lax.scan refuses: start it in the
    # computation dtype.
    carry = rnn_flax.cell.initialize_carry(jax.random.key(0), xs[:, 0].shape)
    carry = jax.tree.map(lambda c: c.astype(dtype or c.dtype), carry)
    return _mse(rnn_flax.apply({'params': params}, xs, initial_carry=carry))

  grad = lambda f: jax.jit(jax.value_and_grad(f))
  return {'ours': (grad(loss_ours), ours),
          'linen': (grad(loss_module(rnn_linen)), {'cell': {'cell': ours}}),
          'flax': (grad(loss_flax), {'cell': flax_params})}


def loss_rtol(dtype: str, backend: str) -> float:
  """How far apart the losses of variants computing one function may be:
  float32 on a CPU rounds alike; a GPU's float32 matmuls may run in TF32
  (10-bit mantissa) and bfloat16 has an 8-bit one, in whichever order each
  implementation sums."""
  if dtype == 'bfloat16':
    return 5e-2
  return 1e-3 if backend == 'cpu' else 1e-2


def check_losses(name: str, losses: dict, rtol: float = 1e-3) -> str:
  """``'same'`` or ``'differs'``: whether flax's cell computes ours.

  Raises RuntimeError if variants that compute the same function (ours and
  our Linen module always; flax's too for ``SAME_MATHS``) disagree by more
  than ``rtol``.
  """
  same = name in SAME_MATHS
  values = {k: float(v) for k, v in losses.items() if same or k != 'flax'}
  if not np.allclose(list(values.values()), values['ours'], rtol=rtol):
    raise RuntimeError(f'{name}: the variants compute different losses '
                       f'{values}; they should agree.')
  return 'same' if same else 'differs'


def time_variants(jobs: dict, xs: jax.Array,
                  repeats: int) -> tuple[dict, dict]:
  """Median seconds per call of each job, interleaved; and their losses."""
  losses = {k: jax.block_until_ready(f(p, xs))[0]   # compile and warm up
            for k, (f, p) in jobs.items()}
  times = {k: [] for k in jobs}
  for _ in range(repeats):
    for k, (f, p) in jobs.items():
      t0 = time.perf_counter()
      jax.block_until_ready(f(p, xs))
      times[k].append(time.perf_counter() - t0)
  return {k: statistics.median(v) for k, v in times.items()}, losses


def _sizes(text: str) -> list[tuple[int, int, int]]:
  out = []
  for item in text.split(','):
    parts = [int(v) for v in item.split('x')]
    if len(parts) != 3 or min(parts) < 1:
      raise ValueError(item)
    out.append(tuple(parts))
  return out


@_cli.writes_json
def main(argv=None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--cells', default=','.join(CELLS),
                      help='comma-separated cells, of: ' + ', '.join(CELLS))
  parser.add_argument('--sizes', default='128x32x100,512x32x100,128x256x100',
                      help='comma-separated HIDDENxBATCHxT settings')
  parser.add_argument('--input_size', type=int, default=64,
                      help='input features per step')
  parser.add_argument('--flax_lstm', default='optimized',
                      choices=('optimized', 'plain'),
                      help="flax's LSTM: nn.OptimizedLSTMCell (one fused "
                      'matmul per side) or nn.LSTMCell (one per gate)')
  parser.add_argument('--repeats', type=int, default=10,
                      help='timed calls per variant (median); the variants '
                      'take turns so load hits them alike')
  parser.add_argument('--dtypes', default='float32',
                      help='comma-separated computation dtypes, of: '
                      + ', '.join(DTYPES) + ' (params stay float32; '
                      "flax's meaning of dtype)")
  _cli.add_quick(parser, QUICK)
  args = _cli.parse(parser, argv, QUICK)
  names = [n for n in args.cells.split(',') if n]
  if not names or set(names) - set(CELLS):
    parser.error(f'--cells takes names of {", ".join(CELLS)}; got '
                 f'{args.cells!r}')
  try:
    sizes = _sizes(args.sizes)
  except ValueError:
    parser.error(f'--sizes must be HIDDENxBATCHxT[,...] of positive '
                 f'integers, got {args.sizes!r}')
  dtypes = [d for d in args.dtypes.split(',') if d]
  if not dtypes or set(dtypes) - set(DTYPES):
    parser.error(f'--dtypes takes names of {", ".join(DTYPES)}; got '
                 f'{args.dtypes!r}')
  if args.input_size < 1 or args.repeats < 1:
    parser.error('--input_size and --repeats must be >= 1')
  print(f'jax {jax.__version__} on {jax.devices()[0].device_kind} '
        f'({jax.default_backend()}); value_and_grad of an MSE over T steps, '
        f'{args.input_size} input features, median of {args.repeats}; '
        f'flax LSTM: {args.flax_lstm}')
  print(f'{"cell":>5} {"hidden":>6} {"batch":>5} {"T":>4} {"dtype":>8} '
        f'{"maths":>7} {"ours ms":>8} {"linen ms":>8} {"flax ms":>8} '
        f'{"ours/flax":>9} {"linen/flax":>10}')
  rows = []
  for name in names:
    for hidden, batch, steps in sizes:
      xs = jax.random.normal(jax.random.key(1),
                             (batch, steps, args.input_size))
      for dtype in dtypes:
        rows.append(_row(name, hidden, xs, dtype, args))
  return rows


def _row(name: str, hidden: int, xs: jax.Array, dtype: str, args) -> dict:
  """Times (a), (b) and (c) of one cell, size and dtype; prints the row."""
  batch, steps = xs.shape[:2]
  med, losses = time_variants(
      variants(name, hidden, xs, args.flax_lstm, DTYPES[dtype]), xs,
      args.repeats)
  row = {'cell': name, 'hidden': hidden, 'batch': batch, 'T': steps,
         'dtype': dtype,
         'maths': check_losses(name, losses,
                               loss_rtol(dtype, jax.default_backend())),
         **{f'ms_{k}': v * 1e3 for k, v in med.items()},
         'ours/flax': med['ours'] / med['flax'],
         'linen/flax': med['linen'] / med['flax']}
  print(f'{name:>5} {hidden:>6} {batch:>5} {steps:>4} {dtype:>8} '
        f'{row["maths"]:>7} {row["ms_ours"]:>8.2f} {row["ms_linen"]:>8.2f} '
        f'{row["ms_flax"]:>8.2f} {row["ours/flax"]:>9.3f} '
        f'{row["linen/flax"]:>10.3f}', flush=True)
  return row


if __name__ == '__main__':
  main()
