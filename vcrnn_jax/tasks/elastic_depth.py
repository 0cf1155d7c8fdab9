r"""EI-REHN's synthetic sequences of varying depth (Park & Yoo 2017, Alg. 2).

A 2-D latent state is rotated and squashed a state-dependent number of times
``R_t`` between observations; the observation ``x_t`` is a fixed function of
the state scaled by ``R_t / R_max``. A model must infer how much computation
happened between inputs, which is what the elastic depth of EI-REHN is for::

  ds = vcrnn_jax.tasks.elastic_depth.load(seed=0)
  inputs, targets = ds.train        # float32 [8000, 20, 2] each
  ds.meta['depth']['train']         # int32 [8000, 21]: R_t of x_1..x_21

Algorithm 2, for each of ``N`` sequences:

.. math::

  h_0 \sim U[-1, 1]^2; \quad \text{for } t = 1..T:\ h_t^0 = h_{t-1},\quad
  R_t = \mathrm{round}((R_{max} - 1) \|h_{t-1}\|_2^2) + 1,

  h_t^r = \tanh\Big(\begin{bmatrix}\cos\theta & -\sin\theta \\
      \sin\theta & \cos\theta\end{bmatrix} h_t^{r-1} + n_r\Big),\quad
  n_r \sim \mathcal N(0, 0.1\, I),\quad r = 1..R_t,

  h_t = h_t^{R_t}, \quad x_t = \frac{R_t}{R_{max}}
      [\tanh(h_t(1) + h_t(2)); \tanh(h_t(1) - h_t(2))].

Readings of the algorithm (the paper's defaults are ``(N, T, R_max, theta) =
(10000, 21, 10, pi/6)``, split 8000/1000/1000):

* ``N(0, 0.1 I)`` is read as a covariance, the usual meaning of the
  notation: each noise component has variance 0.1 (standard deviation
  ``sqrt(0.1) = 0.316``). ``noise_variance`` changes it.
* ``R_max`` is not a cap: :math:`\|h\|_2^2` of a point of :math:`[-1, 1]^2`
  reaches 2, so ``R_t`` ranges over ``1 .. 2 R_max - 1`` (1..19 by default)
  and ``|x_t|`` up to ``(2 R_max - 1) / R_max``. With the defaults, 17% of
  the first steps (``h_0`` is uniform on the square) and 2% of all steps
  have ``R_t > R_max``. The algorithm is implemented as written: a model
  whose ``max_depth`` is ``R_max`` cannot mirror those steps.
* ``round`` is round-half-to-even (``numpy.rint``); ties have probability 0.
* The task (Section 4.1, "predicting [the] two-dimensional real vector of
  [the] next step after observing [the] sequence up to the current step") is
  next-step regression: inputs ``x_1 .. x_{T-1}``, targets ``x_2 .. x_T``,
  scored by MSE (Table 1).

Randomness: ``numpy.random.default_rng(seed)`` draws, in this order, ``h_0``
for all sequences (``uniform(-1, 1, (N, 2))``), then for each ``t = 1..T``
the noise of every sequence and micro-step, ``normal(0, sqrt(v), (N, 2 R_max
- 1, 2))``, of which sequence ``n`` uses the first ``R_t`` rows. The arrays are
a pure function of the arguments. Sequences are i.i.d., so the splits are
consecutive blocks: train first, then valid, then test.

References:
  Park & Yoo, Early Improving Recurrent Elastic Highway Network, 2017.
  Algorithm 2 and Section 4.1.
"""

import math
import numbers
from typing import Any, NamedTuple

import numpy as np

from vcrnn_jax.data.dataset import Dataset, split_counts

__all__ = [
    'NAME',
    'NUM_SEQUENCES',
    'SEQ_LEN',
    'MAX_DEPTH',
    'THETA',
    'NOISE_VARIANCE',
    'SPLIT_FRACTIONS',
    'INPUT_SIZE',
    'OUTPUT_SIZE',
    'Sequences',
    'generate',
    'noise_floor',
    'load',
]

NAME = 'elastic_depth'
# The paper's setting, Section 4.1.
NUM_SEQUENCES = 10_000
SEQ_LEN = 21
MAX_DEPTH = 10
THETA = math.pi / 6
NOISE_VARIANCE = 0.1
SPLIT_FRACTIONS = (0.8, 0.1, 0.1)   # 8000 / 1000 / 1000 of 10000
INPUT_SIZE = OUTPUT_SIZE = 2


class Sequences(NamedTuple):
  """The raw output of Algorithm 2 (float64, before any split)."""
  x: np.ndarray       # [N, T, 2] float64, x_1 .. x_T
  depth: np.ndarray   # [N, T] int32, R_1 .. R_T
  h: np.ndarray       # [N, T + 1, 2] float64, h_0 .. h_T


def _check_int(name: str, value: Any, minimum: int) -> int:
  if isinstance(value, bool) or not isinstance(value, numbers.Integral) or (
      value < minimum):
    raise ValueError(f'{name} must be an integer >= {minimum}, got '
                     f'{value!r}.')
  return int(value)


def _check_finite(name: str, value: Any, positive: bool = False) -> float:
  if isinstance(value, bool) or not isinstance(value, numbers.Real) or (
      not math.isfinite(value)) or (positive and value <= 0):
    allowed = 'a finite number > 0' if positive else 'a finite number'
    raise ValueError(f'{name} must be {allowed}, got {value!r}.')
  return float(value)


def _step(h: np.ndarray, noise, r_max: int, rotation: np.ndarray):
  """One observation of Algorithm 2 from ``h = h_{t-1}`` (any leading axes).

  ``noise(r)`` gives ``n_{r+1}`` with ``h``'s shape; rows stop after their
  own ``R_t`` micro-steps. Returns ``(h_t, R_t, x_t)``.
  """
  r_t = np.rint((r_max - 1) * np.sum(h * h, axis=-1)).astype(np.int32) + 1
  for r in range(int(r_t.max())):
    stepped = np.tanh(h @ rotation.T + noise(r))
    h = np.where((r < r_t)[..., None], stepped, h)
  x = np.stack([np.tanh(h[..., 0] + h[..., 1]),
                np.tanh(h[..., 0] - h[..., 1])], axis=-1)
  return h, r_t, x * (r_t / r_max)[..., None]


def generate(
    seed: int = 0,
    *,
    num_sequences: int = NUM_SEQUENCES,
    seq_len: int = SEQ_LEN,
    max_depth: int = MAX_DEPTH,
    theta: float = THETA,
    noise_variance: float = NOISE_VARIANCE,
) -> Sequences:
  """Runs Algorithm 2: ``num_sequences`` sequences of ``seq_len`` steps.

  Args:
    seed: non-negative int seeding ``numpy.random.default_rng``.
    num_sequences: ``N``.
    seq_len: ``T``, the observations per sequence.
    max_depth: ``R_max`` (see the module docstring: ``R_t`` reaches
      ``2 R_max - 1``).
    theta: the rotation angle ``theta``.
    noise_variance: the variance of each noise component (0.1 in the paper).

  Returns:
    :class:`Sequences` ``(x, depth, h)``.

  Raises:
    ValueError: a size that is not a positive int, a negative seed, a
      non-finite ``theta`` or a non-positive ``noise_variance``.

  Example::

    seqs = generate(0, num_sequences=4)
    seqs.x.shape, seqs.depth.max()      # (4, 21, 2), at most 19
  """
  seed = _check_int('seed', seed, 0)
  n = _check_int('num_sequences', num_sequences, 1)
  steps = _check_int('seq_len', seq_len, 1)
  r_max = _check_int('max_depth', max_depth, 1)
  theta = _check_finite('theta', theta)
  std = math.sqrt(_check_finite('noise_variance', noise_variance,
                                positive=True))
  rng = np.random.default_rng(seed)
  # ||h||^2 < 2 on [-1, 1)^2 and (-1, 1)^2, so R_t <= 2 R_max - 1.
  r_cap = 2 * r_max - 1
  rotation = np.array([[math.cos(theta), -math.sin(theta)],
                       [math.sin(theta), math.cos(theta)]])
  h = rng.uniform(-1.0, 1.0, size=(n, 2))                         # h_0
  hs = np.empty((n, steps + 1, 2))
  xs = np.empty((n, steps, 2))
  depth = np.empty((n, steps), np.int32)
  hs[:, 0] = h
  for t in range(steps):
    noise = rng.normal(0.0, std, size=(n, r_cap, 2))
    h, depth[:, t], xs[:, t] = _step(h, lambda r, noise=noise: noise[:, r],
                                     r_max, rotation)
    hs[:, t + 1] = h
  return Sequences(x=xs, depth=depth, h=hs)


def noise_floor(
    seqs: Sequences,
    *,
    max_depth: int = MAX_DEPTH,
    theta: float = THETA,
    noise_variance: float = NOISE_VARIANCE,
    samples: int = 256,
    seed: int = 0,
    start: int = 1,
) -> float:
  r"""The least MSE any next-step predictor can reach on ``seqs`` (estimate).

  ``x_{t+1}`` depends on the past only through ``h_t``: given ``h_t`` it is
  a function of the fresh noise of step ``t + 1``, independent of
  ``x_1 .. x_t``. So for any predictor ``f`` of the history,

  .. math::

    E\,[(x_{t+1} - f(x_{1..t}))^2] \ge E\,[\mathrm{Var}(x_{t+1} \mid h_t)],

  the noise floor of next-step regression (Section 4.1). It is estimated by
  re-drawing the noise of each target step ``samples`` times from the true
  ``h_t`` of ``seqs`` (its ``h``), averaged over sequences, targets
  ``x_{start+1} .. x_T`` and the two components (the MSE of Table 1).

  Args:
    seqs: the output of :func:`generate` (with the same ``max_depth``,
      ``theta`` and ``noise_variance``).
    max_depth, theta, noise_variance: as for :func:`generate`.
    samples: noise draws per target (the estimate's error shrinks as
      ``1 / sqrt(samples * targets)``).
    seed: seed of those draws.
    start: the first target is ``x_{start+1}`` (1: the targets of
      :func:`load`, which predicts ``x_2 .. x_T``).

  Returns:
    The floor as a float (in the units of the MSE, not x1e-3).

  Example::

    seqs = generate(0, num_sequences=1000)
    noise_floor(seqs)      # about 0.06: no model gets below it
  """
  r_max = _check_int('max_depth', max_depth, 1)
  theta = _check_finite('theta', theta)
  std = math.sqrt(_check_finite('noise_variance', noise_variance,
                                positive=True))
  samples = _check_int('samples', samples, 1)
  steps = seqs.x.shape[1]
  start = _check_int('start', start, 0)
  if start >= steps:
    raise ValueError(f'start must be < seq_len ({steps}), got {start}.')
  rng = np.random.default_rng(_check_int('seed', seed, 0))
  rotation = np.array([[math.cos(theta), -math.sin(theta)],
                       [math.sin(theta), math.cos(theta)]])
  variances = []
  for t in range(start, steps):
    h = np.repeat(seqs.h[:, t][:, None], samples, axis=1)      # [n, S, 2]
    _, _, x = _step(h, lambda r, h=h: rng.normal(0.0, std, h.shape), r_max,
                    rotation)
    variances.append(np.var(x, axis=1, ddof=1).mean())
  return float(np.mean(variances))


def load(
    seed: int = 0,
    *,
    num_sequences: int = NUM_SEQUENCES,
    seq_len: int = SEQ_LEN,
    max_depth: int = MAX_DEPTH,
    theta: float = THETA,
    noise_variance: float = NOISE_VARIANCE,
) -> Dataset:
  """The next-step regression dataset of EI-REHN Section 4.1.

  Args:
    seed, num_sequences, seq_len, max_depth, theta, noise_variance: as for
      :func:`generate`; ``seq_len`` must be at least 2.

  Returns:
    A :class:`vcrnn_jax.data.Dataset` whose ``train``, ``valid`` and
    ``test`` are ``(inputs, targets)``, both ``float32 [n, seq_len - 1,
    2]`` (``targets[:, t] = x_{t+2} = inputs[:, t + 1]``), split 80/10/10%
    (8000/1000/1000 of the paper's 10000). ``vocab`` is None; ``meta`` has
    ``'name'``, ``'config'`` (the arguments) and ``'depth'``: per split
    ``int32 [n, seq_len]``, ``R_t`` of ``x_1 .. x_T``, so ``depth[:, 1:]``
    is the depth behind each target.

  Raises:
    ValueError: as :func:`generate`, or ``seq_len < 2``.

  Example::

    ds = load(seed=0)
    inputs, targets = ds.train        # [8000, 20, 2] each
  """
  _check_int('seq_len', seq_len, 2)
  seqs = generate(seed, num_sequences=num_sequences, seq_len=seq_len,
                  max_depth=max_depth, theta=theta,
                  noise_variance=noise_variance)
  x = seqs.x.astype(np.float32)
  n_train, n_valid, _ = split_counts(num_sequences, SPLIT_FRACTIONS)
  bounds = {'train': (0, n_train), 'valid': (n_train, n_train + n_valid),
            'test': (n_train + n_valid, num_sequences)}
  splits = {k: (x[a:b, :-1], x[a:b, 1:]) for k, (a, b) in bounds.items()}
  depth = {k: seqs.depth[a:b] for k, (a, b) in bounds.items()}
  config = dict(seed=seed, num_sequences=num_sequences, seq_len=seq_len,
                max_depth=max_depth, theta=theta,
                noise_variance=noise_variance)
  return Dataset(splits['train'], splits['valid'], splits['test'], None,
                 {'name': NAME, 'files': (), 'config': config,
                  'depth': depth})
