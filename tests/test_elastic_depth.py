"""EI-REHN's synthetic data (Algorithm 2) against a slow loop of it."""

import math

import numpy as np
import pytest

from vcrnn_jax.tasks import elastic_depth


def slow_algorithm_2(seed, n, steps, r_max, theta, variance):
  """Algorithm 2 one sequence, step and micro-step at a time.

  Consumes the documented random stream: h_0 of every sequence, then per t
  a [n, 2 r_max - 1, 2] block of N(0, variance) noise.
  """
  rng = np.random.default_rng(seed)
  h0 = rng.uniform(-1.0, 1.0, size=(n, 2))
  noise = [math.sqrt(variance) * rng.standard_normal((n, 2 * r_max - 1, 2))
           for _ in range(steps)]
  c, s = math.cos(theta), math.sin(theta)
  xs = np.zeros((n, steps, 2))
  depths = np.zeros((n, steps), int)
  for i in range(n):
    h = [float(h0[i, 0]), float(h0[i, 1])]
    for t in range(steps):
      big_r = round((r_max - 1) * (h[0] ** 2 + h[1] ** 2)) + 1
      for r in range(big_r):
        n1, n2 = noise[t][i, r]
        h = [math.tanh(c * h[0] - s * h[1] + n1),
             math.tanh(s * h[0] + c * h[1] + n2)]
      xs[i, t] = [big_r / r_max * math.tanh(h[0] + h[1]),
                  big_r / r_max * math.tanh(h[0] - h[1])]
      depths[i, t] = big_r
  return xs, depths


@pytest.mark.parametrize('r_max,theta,variance', [(10, math.pi / 6, 0.1),
                                                  (3, 1.0, 0.5)])
def test_matches_the_slow_loop(r_max, theta, variance):
  seqs = elastic_depth.generate(3, num_sequences=7, seq_len=6,
                                max_depth=r_max, theta=theta,
                                noise_variance=variance)
  xs, depths = slow_algorithm_2(3, 7, 6, r_max, theta, variance)
  np.testing.assert_array_equal(seqs.depth, depths)
  np.testing.assert_allclose(seqs.x, xs, rtol=1e-13, atol=1e-14)
  # h_0 is the first draw, and x_t is a function of h_t.
  np.testing.assert_array_equal(
      seqs.h[:, 0], np.random.default_rng(3).uniform(-1, 1, (7, 2)))
  np.testing.assert_allclose(
      seqs.x[..., 0],
      seqs.depth / r_max * np.tanh(seqs.h[:, 1:, 0] + seqs.h[:, 1:, 1]))


def test_noise_is_read_as_variance_not_std():
  # Same stream, other variance reading: the sequences differ.
  as_std = elastic_depth.generate(0, num_sequences=5, seq_len=4,
                                  noise_variance=0.1 ** 2)
  xs, _ = slow_algorithm_2(0, 5, 4, 10, math.pi / 6, 0.1)
  default = elastic_depth.generate(0, num_sequences=5, seq_len=4)
  np.testing.assert_allclose(default.x, xs, rtol=1e-13, atol=1e-14)
  assert not np.allclose(as_std.x, xs)


def test_paper_dataset_shapes_splits_and_determinism():
  ds = elastic_depth.load(seed=0)
  sizes = {}
  for name in ('train', 'valid', 'test'):
    inputs, targets = ds.split(name)
    assert inputs.dtype == targets.dtype == np.float32
    assert inputs.shape == targets.shape == (inputs.shape[0], 20, 2)
    # Next-step regression: the target of step t is the input of t + 1.
    np.testing.assert_array_equal(targets[:, :-1], inputs[:, 1:])
    depth = ds.meta['depth'][name]
    assert depth.shape == (inputs.shape[0], 21) and depth.dtype == np.int32
    sizes[name] = inputs.shape[0]
  assert sizes == {'train': 8000, 'valid': 1000, 'test': 1000}
  assert ds.vocab is None and ds.meta['name'] == 'elastic_depth'
  assert ds.meta['config']['max_depth'] == 10
  # R_t in 1 .. 2 R_max - 1, and R_max is exceeded (||h||^2 reaches 2).
  depth = np.concatenate([ds.meta['depth'][k] for k in ('train', 'valid',
                                                        'test')])
  assert depth.min() == 1 and 10 < depth.max() <= 19
  # Mostly at t = 1, where h_0 is uniform on the square (17% then, 2% of
  # all steps); later states are squashed by tanh.
  assert 0.1 < np.mean(depth[:, 0] > 10) < 0.25
  assert 0.01 < np.mean(depth > 10) < 0.05
  # |x_t| <= R_t / R_max componentwise.
  inputs = ds.train[0]
  assert np.all(np.abs(inputs) <= ds.meta['depth']['train'][:, :-1, None]
                / 10 + 1e-6)
  # The same seed gives the same arrays; another seed others.
  again = elastic_depth.load(seed=0)
  for name in ('train', 'valid', 'test'):
    for a, b in zip(ds.split(name), again.split(name)):
      np.testing.assert_array_equal(a, b)
  other = elastic_depth.load(seed=1, num_sequences=100)
  assert not np.allclose(other.train[0], ds.train[0][:80])
  # Splits are consecutive blocks of the same generated sequences.
  seqs = elastic_depth.generate(0)
  np.testing.assert_array_equal(ds.test[1], seqs.x[9000:, 1:].astype(
      np.float32))


@pytest.mark.parametrize('kwargs,match', [
    (dict(seed=-1), 'seed must be an integer >= 0'),
    (dict(num_sequences=0), 'num_sequences must be an integer >= 1'),
    (dict(seq_len=1), 'seq_len must be an integer >= 2'),
    (dict(max_depth=2.0), 'max_depth must be an integer >= 1'),
    (dict(noise_variance=0.0), 'noise_variance must be a finite number > 0'),
    (dict(theta=float('nan')), 'theta must be a finite number'),
])
def test_bad_arguments(kwargs, match):
  with pytest.raises(ValueError, match=match):
    elastic_depth.load(**kwargs)


def _conditional_mean(h, r_max, theta, std, rng, samples):
  """E[x_{t+1} | h_t] by Monte Carlo, one h_t at a time (slow reference)."""
  c, s = math.cos(theta), math.sin(theta)
  big_r = round((r_max - 1) * float(h @ h)) + 1
  hs = np.repeat(h[None], samples, axis=0)
  for _ in range(big_r):
    hs = np.tanh(hs @ np.array([[c, s], [-s, c]])
                 + rng.normal(0.0, std, hs.shape))
  x = big_r / r_max * np.stack([np.tanh(hs[:, 0] + hs[:, 1]),
                                np.tanh(hs[:, 0] - hs[:, 1])], axis=-1)
  return x.mean(axis=0)


def test_noise_floor_is_the_mse_of_the_best_predictor():
  # The best predictor of x_{t+1} from the past is E[x_{t+1} | h_t]; its MSE
  # on the real targets must match the floor (both are estimates).
  seqs = elastic_depth.generate(1, num_sequences=150, seq_len=4)
  floor = elastic_depth.noise_floor(seqs, samples=512)
  rng = np.random.default_rng(5)
  errors = [np.mean((seqs.x[i, t]
                     - _conditional_mean(seqs.h[i, t], 10, math.pi / 6,
                                         math.sqrt(0.1), rng, 512)) ** 2)
            for i in range(150) for t in range(1, 4)]
  assert abs(np.mean(errors) - floor) < 0.15 * floor, (np.mean(errors), floor)
  # A predictor that ignores h_t (the mean target) does worse, though under
  # the paper's noise by only ~15% (BUILD_NOTES, "EI-REHN Table 1").
  targets = seqs.x[:, 1:]
  assert np.mean((targets - targets.mean(axis=(0, 1))) ** 2) > 1.05 * floor


def test_noise_floor_shrinks_with_the_noise():
  floors = [elastic_depth.noise_floor(
      elastic_depth.generate(0, num_sequences=200, seq_len=5,
                             noise_variance=v), noise_variance=v)
            for v in (0.1, 0.01, 0.001)]
  assert floors[0] > floors[1] > floors[2] > 0
  with pytest.raises(ValueError, match='start'):
    elastic_depth.noise_floor(
        elastic_depth.generate(0, num_sequences=2, seq_len=3), start=3)
