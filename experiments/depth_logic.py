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
* ``--halting=per_token_pondernet``: to each position's own depth, with
  PonderNet's halting distribution per position
  (``depth.per_token(halting='pondernet')``): the state passed on is the
  mean field ``sum_n p_n s^n`` of each position, and the loss adds
  ``--beta`` times the mean KL of the positions' ``p`` to a geometric
  prior with ``--lambda_p`` (PonderNet's P3) instead of ``--tau``'s
  ponder cost; ``ponder`` is the expected steps ``sum_n n p_n``;
* ``--halting=per_example``: to each example's depth, ACT over the mean of
  its positions' states (``depth.per_example(halting='act')``);
* ``--halting=route``: by capacity instead of halting, Mixture-of-
  Recursions' expert-choice routing (``routing.per_token``): at step ``r``
  of ``--max_depth`` the block runs on the top ``k_r = max(1, floor(c_r
  n))`` of each example's ``n`` tokens still routed (``--capacity``), so
  its compute is fixed in advance; ``--aux_weight`` weighs the routers'
  BCE. The default capacity (1, 11/12, ..., 1/12 for M = 12) gives about
  6.5 applications per token; a comparison at equal compute picks
  ``--capacity`` so that ``sum_r c_r`` is a halting run's mean depth (the
  floor rounds short examples down);
* ``--halting=fixed``: exactly ``--depth`` times, no halting unit (the
  fixed-depth Transformer of the same block);

then a LayerNorm and one logit per position. The loss is binary
cross-entropy at every gate position on the prefix result ``b_{i+1}``
(``--targets=prefix``) or at the last gate only (``--targets=final``), plus
``--tau`` times the mean ponder ``N + R`` (ACT Eq. 12, ``depth.mean_ponder``)
for the ACT kinds. Every ``--eval_every`` steps metrics.jsonl gets, on
``--eval_batch_size`` fixed held-out examples: ``error`` (the fraction of
examples whose final result ``b_{B+1}`` is wrong), ``token_error`` (the
fraction of gate positions wrong), ``depth`` (block applications per
position for the per-position kinds, per example otherwise), ``ponder``
and ``loss``. ``--difficulty_report`` writes ``difficulty.csv``: per ``B``
the error and the mean depth (per position: also per position index).
results.json holds the final metrics (and those rows).

The block gets no depth-step signal (UT Sec. 2.1 adds one): what the task
needs is one rule, "combine my gate with my predecessor's bits", the same at
every depth, and without a step signal the block is that rule, whatever
depth a position halts at; its halting unit can only read from the state
whether a position has been resolved, not count steps.

Recorded on CPU-2 (2 cores, shared with other runs), seeds 0-2, 5,000
updates each at the defaults otherwise (64 features, 4 heads, batch 64,
Adam at 1e-3 clipped to norm 1, M = 12, tau = 0.01, prefix targets), on
1,000 held-out examples: the command above, ``--halting=per_token``,
``--halting=per_token_pondernet``, ``--halting=route --max_depth=7`` and
``--halting=fixed`` at depths 3, 4, 7 and 12, each followed by its
``--difficulty_report`` (docs/results/plans/depth.toml has the exact
commands; ``python -m experiments.plan --plans=depth`` which of them are
recorded). docs/results/depth.md, 'The
runs', has each configuration's error on the final result per seed, its
mean depth and wall time; 'Error and depth per chain length' the error
and depth against ``B`` (and, per token, against the position); 'Claims
(from records)' the verdicts. ``--targets=final`` and
``--learning_rate=3e-3`` have no records: each trained to a worse,
shallower solution in a single seed-0 run, which is why prefix targets
and 1e-3 are the defaults.
"""

from absl import flags

from experiments import _common
from vcrnn_jax.papers.depth import logic
from vcrnn_jax.tasks import logic_tokens

DIFFICULTY_CSV = 'difficulty.csv'

flags.DEFINE_enum('halting', 'per_example', list(logic.HALTING),
                  'How deep the shared block runs: "per_token" (ACT per '
                  'position, Universal Transformer halting), '
                  '"per_token_pondernet" (PonderNet\'s halting distribution '
                  'per position, regularised by --beta and --lambda_p), '
                  '"per_example" '
                  '(ACT over the pooled state of each example), "route" '
                  '(Mixture-of-Recursions: a router keeps the top '
                  '--capacity of the tokens at each step) or "fixed" '
                  '(exactly --depth applications, no halting unit).')
_common.define_positive_int('max_depth', 12, 'Most block applications M of '
                            'per_token, per_example (ACT Eq. 13) and route '
                            '(its steps); the last gate of a chain of B '
                            'needs about B.')
flags.DEFINE_string('capacity', '', 'Comma-separated fractions c_r in '
                    '(0, 1], one per step of --halting=route (--max_depth '
                    'of them, non-increasing), or one for every step: step '
                    'r runs the block on the top max(1, floor(c_r n)) of an '
                    "example's n tokens still routed. Empty: MoR's (M - "
                    "r)/M, a mean depth of about (M + 1)/2.")
_common.define_float('aux_weight', logic.Model._field_defaults['aux_weight'],
                     "Weight of the routers' BCE against their own top-k "
                     'choice (routing.aux_loss; MoR: 0.001) in '
                     '--halting=route.')
_common.define_float('gate_scale', None, 'alpha of --halting=route\'s gate '
                     'g = alpha sigmoid(z) that weighs the block\'s update; '
                     'unset: 0.1, MoR\'s.', strict=True)
_common.define_positive_int('depth', 12, 'Block applications of '
                            '--halting=fixed.')
_common.define_float('tau', 0.01, 'Ponder cost weight tau (ACT Eq. 12) of '
                     'per_token and per_example (route and '
                     'per_token_pondernet have none).')
_common.define_float('beta', logic.Model._field_defaults['beta'], 'Weight '
                     'beta of the KL between each position\'s halting '
                     'distribution and the geometric prior (PonderNet\'s '
                     'P3; 0.01 in its public reproductions) in '
                     '--halting=per_token_pondernet, which has no --tau.')
_common.define_float('lambda_p', logic.Model._field_defaults['lambda_p'],
                     'The geometric prior\'s halting probability lambda_p '
                     'of --halting=per_token_pondernet, in (0, 1): a prior '
                     'mean of 1/lambda_p block applications per position. '
                     '0.2 gives 5: position i of a chain needs about i, '
                     'about 4 on average over the gate positions of chains '
                     'of B uniform on 1..10, so the prior asks for a little '
                     'more than the task needs (PonderNet\'s reproductions '
                     'use 0.1-0.2).', strict=True, upper=1.0)
_common.define_positive_int('features', 64, 'Width of the token states.')
_common.define_positive_int('heads', 4, 'Attention heads (they split '
                            '--features).')
flags.DEFINE_enum('targets', 'prefix', list(logic.TARGETS),
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


def main(processes):
  run = logic.run(_common.flag_values())
  model = run.settings
  run_dir = _common.default_workdir('depth_logic',
                                    leading=('halting', 'seed'))
  result = _common.train(run.experiment, run.config, run_dir,
                         processes=processes)
  if not processes.is_chief():
    return result
  sections = _common.metric_sections(result.metrics)
  results = {'halting': model.halting, 'seed': FLAGS.seed,
             'model': model._asdict(), 'updates': result.step, **sections}
  if FLAGS.difficulty_report:
    rows = logic.difficulty_rows(model, result.params,
                                 FLAGS.eval_batch_size)
    _common.write_csv(run_dir / DIFFICULTY_CSV, rows)
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
