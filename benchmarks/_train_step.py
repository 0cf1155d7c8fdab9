"""One jitted :func:`vcrnn_jax.training.train.train_step`, timed.

The benchmarks time what the trainer runs: the library's own ``train_step``
(``value_and_grad`` of the loss, the optax update, the step's metrics) on an
:class:`~vcrnn_jax.training.train.Experiment` whose ``loss`` is the one under
test, with Adam at 1e-3 (:func:`~vcrnn_jax.training.train.make_optimizer`).
"""

from collections.abc import Callable
import statistics
import time

import jax
import jax.numpy as jnp

from vcrnn_jax.training import train

_CONFIG = train.TrainConfig(learning_rate=1e-3, optimizer='adam')


def _compiled(params, loss: Callable, batch):
  """The compiled train step and the arguments it is called with."""
  experiment = train.Experiment(
      init=None, loss=lambda p, b, info: loss(p, b), sample=None,
      evaluate=None)
  tx = train.make_optimizer(_CONFIG)
  state = train.TrainState(params, tx.init(params), jnp.zeros((), jnp.int32),
                           jax.random.key_data(jax.random.key(0)))
  key = jax.random.key(1)
  step = jax.jit(train.train_step, static_argnums=(0, 1))
  return step.lower(experiment, tx, state, batch, key).compile(), (
      state, batch, key)


def compile_step(params, loss: Callable, batch) -> Callable[[], object]:
  """The compiled train step on ``batch``, as a function of nothing."""
  compiled, args = _compiled(params, loss, batch)
  jax.block_until_ready(compiled(*args))
  return lambda: compiled(*args)


def compile_measured(params, loss: Callable, batch,
                     metric: str) -> tuple[Callable[[], object], object, float]:
  """:func:`compile_step`, its compiled temp bytes and the first step's
  value of the loss metric ``metric``."""
  compiled, args = _compiled(params, loss, batch)
  mem = compiled.memory_analysis()
  temp = getattr(mem, 'temp_size_in_bytes', None) if mem is not None else None
  _, metrics = compiled(*args)
  value = float(jax.block_until_ready(metrics[metric]))
  return (lambda: compiled(*args)), temp, value


def interleaved(steps: dict, repeats: int) -> dict:
  """Median seconds of each of ``steps`` (name -> function), run in turn.

  Interleaving spreads any change in the machine's load over every entry,
  so their ratios stay comparable.
  """
  times = {name: [] for name in steps}
  for _ in range(repeats):
    for name, f in steps.items():
      t0 = time.perf_counter()
      jax.block_until_ready(f())
      times[name].append(time.perf_counter() - t0)
  return {name: statistics.median(t) for name, t in times.items()}


def measure(params, loss: Callable, batch, repeats: int,
            metric: str) -> tuple[float, object, float]:
  """Median seconds of one train step, its compiled temp bytes, a metric.

  Args:
    params: the initial params.
    loss: ``(params, batch) -> (scalar, {metric: value})``.
    batch: the step's batch (the same one every repeat).
    repeats: timed steps (after one untimed step that compiles).
    metric: the name of the loss metric to return (its first step's value).
  """
  step, temp, value = compile_measured(params, loss, batch, metric)
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(step())
    times.append(time.perf_counter() - t0)
  return statistics.median(times), temp, value
