r"""Adaptive Transformer depth on ACT's logic task: does depth follow the chain?

Command::

  python -m experiments.depth_logic --halting=per_example --difficulty_report

One example is one logic vector of ACT Sec. 3.2 as tokens
(:mod:`vcrnn_jax.tasks.logic_tokens`): the two bits at position 0, then a
chain of ``B`` gates (``B`` uniform on 1..10), padded to 10 gates. Gate
``i`` needs the result of gate ``i - 1``: a shared Transformer block applied
again and again resolves one more position per application, so position
``i`` needs about ``i`` applications and an example about ``B``. The model:
token and learned position embeddings (added once, at the input), one
shared pre-LayerNorm block (multi-head self-attention over the real
positions, then a 2x GELU MLP) applied

* ``--halting=per_token``: to each position's own depth, ACT per position
  (the Universal Transformer's dynamic halting, ``depth.per_token``);
* ``--halting=per_example``: to each example's depth, ACT over the mean of
  its positions' states (``depth.per_example(halting='act')``);
* ``--halting=fixed``: exactly ``--depth`` times, no halting unit (the
  fixed-depth Transformer of the same block);

then a LayerNorm and one logit per position. The loss is binary
cross-entropy at every gate position on the prefix result ``b_{i+1}``
(``--targets=prefix``) or at the last gate only (``--targets=final``), plus
``--tau`` times the mean ponder ``N + R`` (ACT Eq. 12, ``depth.mean_ponder``)
for the adaptive kinds. Every ``--eval_every`` steps metrics.jsonl gets, on
``--eval_batch_size`` fixed held-out examples: ``error`` (the fraction of
examples whose final result ``b_{B+1}`` is wrong), ``token_error`` (the
fraction of gate positions wrong), ``depth`` (block applications per
position for per_token, per example otherwise), ``ponder`` and ``loss``.
``--difficulty_report`` writes ``difficulty.csv``: per ``B`` the error and
the mean depth (per_token: also per position index). results.json holds
the final metrics (and those rows).

The block gets no depth-step signal (UT Sec. 2.1 adds one): what the task
needs is one rule, "combine my gate with my predecessor's bits", the same at
every depth, and without a step signal the block is that rule, whatever
depth a position halts at; its halting unit can only read from the state
whether a position has been resolved, not count steps.

Recorded on CPU-2 (2 cores, shared with other runs), seeds 0-2, 5,000
updates each at the defaults otherwise (64 features, 4 heads, batch 64,
Adam at 1e-3 clipped to norm 1, M = 12, tau = 0.01, prefix targets), on
1,000 held-out examples; error on the final result per seed, and the mean
depth over seeds:

* the command above (per_example): 0.5% / 17.0% / 1.0%, depth 3.09. Seeds
  0 and 2 take more applications for longer chains (seed 0: 1.26 at
  ``B`` = 1 to 7.82 at ``B`` = 10); seed 1 settles at one application.
* ``--halting=per_token``: 5.5% / 7.9% / 0.0%, depth 3.21.
* ``--halting=fixed --depth=4``: 4.0% / 3.1% / 3.3%.
* ``--halting=fixed --depth=12``: 0.0% / 0.4% / 0.0%.

docs/results/depth.md has every number with its provenance, the figures
and the verdicts (generated from the records). ``--targets=final`` and
``--learning_rate=3e-3`` each trained to a worse, shallower solution in a
single seed-0 run: prefix targets and 1e-3 are the defaults.
"""

import functools
import math
from typing import NamedTuple

from absl import flags
import jax
from jax import lax
import jax.numpy as jnp
import numpy as np

from experiments import _common
from vcrnn_jax import depth
from vcrnn_jax.files import atomic_write
from vcrnn_jax.tasks import logic_tokens
from vcrnn_jax.training.train import Experiment

HALTING = ('per_token', 'per_example', 'fixed')
TARGETS = ('prefix', 'final')
DIFFICULTY_CSV = 'difficulty.csv'
_EVAL_SEED = 2**31 - 1        # held-out examples, apart from training's
_REPORT_SEED = 2**31 - 2      # the per-B report's
_MLP = 2                      # MLP width, times --features

flags.DEFINE_enum('halting', 'per_example', list(HALTING),
                  'How deep the shared block runs: "per_token" (ACT per '
                  'position, Universal Transformer halting), "per_example" '
                  '(ACT over the pooled state of each example) or "fixed" '
                  '(exactly --depth applications, no halting unit).')
_common.define_positive_int('max_depth', 12, 'Most block applications M of '
                            'per_token and per_example (ACT Eq. 13); the '
                            'last gate of a chain of B needs about B.')
_common.define_positive_int('depth', 12, 'Block applications of '
                            '--halting=fixed.')
_common.define_float('tau', 0.01, 'Ponder cost weight tau (ACT Eq. 12) of '
                     'per_token and per_example.')
_common.define_positive_int('features', 64, 'Width of the token states.')
_common.define_positive_int('heads', 4, 'Attention heads (they split '
                            '--features).')
flags.DEFINE_enum('targets', 'prefix', list(TARGETS),
                  'Loss positions: "prefix" (every gate position i on '
                  'b_{i+1}) or "final" (the last gate on b_{B+1}).')
_common.define_positive_int('num_gates', logic_tokens.NUM_GATES, 'Longest '
                            'chain B (ACT: 10); B is uniform on '
                            '1..num_gates.')
_common.define_positive_int('eval_batch_size', 1000, 'Held-out examples per '
                            'evaluation (the same ones every time), and per '
                            'B in --difficulty_report.', resumable=True)
_common.mark_resumable(flags.DEFINE_bool(
    'difficulty_report', False, 'After training, evaluate the final params '
    'on --eval_batch_size fresh examples of each chain length B = '
    '1..num_gates, print error and depth per B and write '
    f'<workdir>/{DIFFICULTY_CSV}. Rerunning a finished run with it only '
    'evaluates.'))
_common.define_training_flags(steps=5000, batch_size=64, learning_rate=1e-3,
                              eval_every=500, grad_clip_norm=1.0)
_common.define_workdir('runs/depth_logic/halting=<halting>_seed=<seed>, then '
                       '_<flag>=<value> for each other non-default flag that '
                       'defines the run')
flags.adopt_module_key_flags(_common)
FLAGS = flags.FLAGS


class Model(NamedTuple):
  """The static settings of the model and its loss."""
  halting: str
  features: int
  heads: int
  max_depth: int
  depth: int
  tau: float
  targets: str
  num_gates: int


def model_config(values) -> Model:
  """The model the flag ``values`` describe; a bad combination raises."""
  model = Model(**{name: values[name] for name in Model._fields})
  if model.features % model.heads:
    raise ValueError(f'--features={model.features} must be a multiple of '
                     f'--heads={model.heads}.')
  return model


# ----------------------------------------------------------------------------
# The model: pure functions of a params dict.


def _dense(key, fan_in, fan_out, gain=1.0):
  return gain * jax.random.normal(key, (fan_in, fan_out)) / math.sqrt(fan_in)


def _norm_params(features):
  return {'scale': jnp.ones((features,)), 'bias': jnp.zeros((features,))}


def _vector(v, x):
  """``v [F]`` shaped to add to ``x [..., F]`` (ranks are not promoted)."""
  return v.reshape((1,) * (x.ndim - 1) + (-1,))


def _layer_norm(p, x):
  mu = jnp.mean(x, -1, keepdims=True)
  y = (x - mu) * lax.rsqrt(jnp.var(x, -1, keepdims=True) + 1e-6)
  return y * _vector(p['scale'], y) + _vector(p['bias'], y)


def init_block(key, features: int) -> dict:
  """The shared block's weights; the residual branches start small so that
  twelve applications keep the states' scale."""
  k = jax.random.split(key, 4)
  return {'ln1': _norm_params(features),
          'qkv': _dense(k[0], features, 3 * features),
          'out': _dense(k[1], features, features, 0.5),
          'ln2': _norm_params(features),
          'w1': _dense(k[2], features, _MLP * features),
          'b1': jnp.zeros((_MLP * features,)),
          'w2': _dense(k[3], _MLP * features, features, 0.5),
          'b2': jnp.zeros((features,))}


def block(params, h, context, *, heads: int):
  """``block(params, h, context) -> h``: pre-LN attention over the real
  positions (``context.mask``), then an MLP, both residual."""
  b, t, f = h.shape
  x = _layer_norm(params['ln1'], h)
  q, k, v = jnp.split((x @ params['qkv']).reshape(b, t, heads, 3 * f // heads),
                      3, axis=-1)
  logits = jnp.einsum('bqhd,bkhd->bhqk', q, k) / math.sqrt(f // heads)
  logits = jnp.where(context.mask[:, None, None, :], logits, -1e9)
  att = jnp.einsum('bhqk,bkhd->bqhd', jax.nn.softmax(logits, axis=-1), v)
  h = h + att.reshape(b, t, f) @ params['out']
  x = _layer_norm(params['ln2'], h)
  y = jax.nn.gelu(x @ params['w1'] + _vector(params['b1'], x))
  return h + y @ params['w2'] + _vector(params['b2'], h)


def _adaptive(model: Model):
  """The :class:`depth.Depth` of ``model.halting``; None for fixed."""
  step = functools.partial(block, heads=model.heads)
  if model.halting == 'per_token':
    return depth.per_token(step, max_depth=model.max_depth)
  if model.halting == 'per_example':
    return depth.per_example(step, max_depth=model.max_depth, halting='act')
  return None


def init(model: Model, key) -> dict:
  """``{'embed', 'depth': {'block'[, 'halting']}, 'readout'}``."""
  k = jax.random.split(key, 4)
  f = model.features
  block_params = init_block(k[0], f)
  adaptive = _adaptive(model)
  return {
      'embed': {'tokens': jax.random.normal(
          k[1], (logic_tokens.vocab_size(), f)),
                'positions': jax.random.normal(k[2],
                                               (model.num_gates + 1, f))},
      'depth': ({'block': block_params} if adaptive is None
                else adaptive.init(k[3], f, block_params)),
      'readout': {'ln': _norm_params(f), 'kernel': jnp.zeros((f, 1)),
                  'bias': jnp.zeros((1,))},
  }


class Forward(NamedTuple):
  """What the model gives for a batch."""
  logits: jax.Array   # [n, T] one per position
  steps: jax.Array    # [n, T] block applications of each position
  ponder: jax.Array   # scalar, depth.mean_ponder (fixed: the depth)


def forward(model: Model, params, batch: logic_tokens.TokenBatch) -> Forward:
  """The logits and the depth of every position of ``batch``."""
  e = params['embed']
  h = e['tokens'][batch.tokens] + e['positions'][None]
  adaptive = _adaptive(model)
  if adaptive is None:
    def apply(h, n):
      context = depth.BlockContext(mask=batch.mask, step=n, key=None,
                                   extra=None)
      return block(params['depth']['block'], h, context,
                   heads=model.heads), None
    h, _ = lax.scan(apply, h, jnp.arange(model.depth, dtype=jnp.int32))
    steps = jnp.full(batch.tokens.shape, model.depth, jnp.int32)
    ponder = jnp.asarray(model.depth, h.dtype)
  else:
    h, out = adaptive.apply(params['depth'], h, batch.mask)
    steps = (out.steps if out.steps.ndim == 2
             else jnp.broadcast_to(out.steps[:, None], batch.tokens.shape))
    ponder = depth.mean_ponder(out)
  r = params['readout']
  logits = (_layer_norm(r['ln'], h) @ r['kernel'])[..., 0] + r['bias'][0]
  steps = jnp.where(batch.mask, steps, 0)
  return Forward(logits, steps, ponder)


def _bce(logits, y):
  return jnp.logaddexp(0.0, logits) - y * logits


def _masked_mean(x, mask):
  return jnp.sum(jnp.where(mask, x, 0.0)) / jnp.maximum(
      jnp.sum(mask.astype(x.dtype)), 1.0)


def _last_gate(batch):
  """[n, T] bool: the position of the last gate, B."""
  return jnp.arange(batch.tokens.shape[1])[None, :] == batch.gates[:, None]


def statistics(model: Model, params, batch) -> dict:
  """Loss and held-out numbers of ``batch`` (scalars, ``depth_by_position``
  [T]): error on the final result, per-gate error, depth, ponder."""
  out = forward(model, params, batch)
  on = batch.target_mask if model.targets == 'prefix' else _last_gate(batch)
  wrong = (out.logits > 0) != (batch.targets > 0.5)
  unit = out.steps if model.halting == 'per_token' else out.steps[:, :1]
  real = batch.mask if model.halting == 'per_token' else batch.mask[:, :1]
  counts = jnp.maximum(jnp.sum(batch.mask, axis=0), 1)
  return {
      'loss': _masked_mean(_bce(out.logits, batch.targets), on),
      'error': _masked_mean(wrong.astype(jnp.float32), _last_gate(batch)),
      'token_error': _masked_mean(wrong.astype(jnp.float32),
                                  batch.target_mask),
      'depth': _masked_mean(unit.astype(jnp.float32), real),
      'ponder': out.ponder,
      'depth_by_position': (jnp.sum(out.steps, axis=0).astype(jnp.float32)
                            / counts.astype(jnp.float32)),
  }


# ----------------------------------------------------------------------------
# The run.


def experiment(model: Model, *, batch_size: int,
               eval_batch_size: int) -> Experiment:
  """The :class:`Experiment` of ``model`` on the token logic task."""
  def loss(params, batch, info):
    del info  # No dropout and no schedules.
    stats = statistics(model, params, batch)
    cost = 0.0 if model.halting == 'fixed' else model.tau * stats['ponder']
    return stats['loss'] + cost, {k: stats[k] for k in (
        'loss', 'ponder', 'depth', 'error')}

  @jax.jit
  def sample(key, step):
    return logic_tokens.sample(jax.random.fold_in(key, step), batch_size,
                               num_gates=model.num_gates)

  held_out = logic_tokens.sample(jax.random.key(_EVAL_SEED), eval_batch_size,
                                 num_gates=model.num_gates)
  stats = jax.jit(functools.partial(statistics, model))

  def evaluate(params, step):
    del step  # The held-out examples are fixed.
    s = stats(params, held_out)
    return {k: float(s[k]) for k in ('error', 'token_error', 'loss', 'depth',
                                      'ponder')}

  return Experiment(init=functools.partial(init, model), loss=loss,
                    sample=sample, evaluate=evaluate)


def build(values):
  """``(experiment, config)`` of a run with these flag ``values``: what
  ``main`` trains and ``experiments.load_run`` rebuilds."""
  model = model_config(values)
  config = _common.train_config(values, f'depth_logic ({model.halting})')
  return experiment(model, batch_size=values['batch_size'],
                    eval_batch_size=values['eval_batch_size']), config


def _round(x) -> float:
  return float(f'{float(x):.6g}')   # float32's digits, not repr's


def difficulty_rows(model: Model, params, batch_size: int) -> list[dict]:
  """Per chain length ``B``: error, per-gate error, depth, ponder (and, per
  token, the mean depth of each position index), on fresh examples."""
  stats = jax.jit(functools.partial(statistics, model))
  rows = []
  for b in range(1, model.num_gates + 1):
    batch = logic_tokens.sample(jax.random.fold_in(
        jax.random.key(_REPORT_SEED), b), batch_size,
                                num_gates=model.num_gates, difficulty=b)
    s = stats(params, batch)
    row = {'gates': b, **{k: _round(s[k]) for k in (
        'error', 'token_error', 'depth', 'ponder')}}
    if model.halting == 'per_token':
      by_position = np.asarray(s['depth_by_position'])
      row.update({f'depth_{i}': (_round(by_position[i]) if i <= b else '')
                  for i in range(model.num_gates + 1)})
    rows.append(row)
  return rows


def _write_csv(path, rows) -> None:
  columns = list(rows[0])
  lines = [','.join(columns)] + [','.join(str(r[c]) for c in columns)
                                 for r in rows]
  atomic_write(path, '\n'.join(lines) + '\n')


def main(processes):
  values = _common.flag_values()
  model = model_config(values)
  exp, config = build(values)
  run_dir = _common.default_workdir('depth_logic',
                                    leading=('halting', 'seed'))
  result = _common.train(exp, config, run_dir, processes=processes)
  if not processes.is_chief():
    return result
  sections = _common.metric_sections(result.metrics)
  results = {'halting': model.halting, 'seed': FLAGS.seed,
             'model': model._asdict(), 'updates': result.step, **sections}
  if FLAGS.difficulty_report:
    rows = difficulty_rows(model, result.params, FLAGS.eval_batch_size)
    _write_csv(run_dir / DIFFICULTY_CSV, rows)
    print(f'{"gates":>5}  {"error":>7}  {"token_error":>11}  {"depth":>6}')
    for r in rows:
      print(f'{r["gates"]:>5}  {r["error"]:>7.4f}  {r["token_error"]:>11.4f}'
            f'  {r["depth"]:>6.2f}')
    print(f'wrote {run_dir / DIFFICULTY_CSV}')
    results['by_gates'] = rows
  _common.write_results(run_dir, results, processes=processes)
  return result


if __name__ == '__main__':
  _common.run(main)
