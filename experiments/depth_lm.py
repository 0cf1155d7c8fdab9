r"""Adaptive Transformer depth in a character language model (PTB chars).

Command::

  python -m experiments.depth_lm --data_dir=DIR --mode=per_token \
      --class_report

A causal character-level Transformer language model on Penn Treebank
characters (Mikolov's ``ptb.char.*.txt``) whose one shared pre-LayerNorm
block (causal multi-head self-attention, then a 2x GELU MLP) is applied
again and again, ``--mode`` saying how often:

* ``--mode=fixed``: exactly ``--depth`` times, no unit;
* ``--mode=per_token``: ACT per character (the Universal Transformer's
  dynamic halting, ``depth.per_token``), at most ``--max_depth``; the loss
  adds ``--tau`` times the mean ponder ``N + R`` (ACT Eq. 12);
* ``--mode=per_token_pondernet``: PonderNet's halting distribution per
  character (``depth.per_token(halting='pondernet')``), at most
  ``--max_depth``; the loss adds ``--beta`` times the mean KL of each
  character's halting distribution to a geometric prior with
  ``--lambda_p`` (PonderNet's P3);
* ``--mode=route``: Mixture-of-Recursions' expert-choice routing
  (``routing.per_token``): ``--max_depth`` steps, step ``r`` runs the block
  on the top ``k_r = max(1, floor(c_r T))`` characters of a window still
  routed (``--capacity``; default MoR's ``(M - r)/M``, a mean depth of ``(M
  + 1)/2``); the loss adds ``--aux_weight`` times the routers' BCE. Top-k
  reads the future, so route is *evaluated* by the causal threshold rule
  (a character goes on while its router says ``z > 0``), with the same
  params; top-k's numbers come beside it as ``bpc_top_k`` and
  ``depth_top_k``, for reference only.

Token and learned position embeddings feed the block, a LayerNorm and an
untied softmax read it out; training draws ``--batch_size`` windows of
``--context`` characters at random offsets of the train split. Every
``--eval_every`` steps metrics.jsonl gets, over the first ``--eval_windows``
x ``--context`` characters of the validation split (non-overlapping
windows): ``bpc`` (bits per character), ``depth`` (block applications per
character), ``ponder``, ``mults`` (multiply-adds per character at that
depth: ``sum_{r < s} c(w_r)`` averaged over the characters plus the
readout ``F V``, with ``c(w) = 8 F^2 + 2 w F (+ F for a unit)`` per
application over ``w`` key slots; vcrnn_jax.papers.depth.lm has the
derivation) and ``mults_run`` (what this implementation computes: ACT runs
every position of the batch until its deepest halts; the threshold rule all
steps on all slots). ``--class_report`` writes ``classes.csv``: the mean
depth, ponder and bpc at characters that are a space (``_``), the first
character of a word, inside a word, or punctuation and the sentence end
(ACT Sec. 3.5 reports more ponder at spaces). results.json holds the final
metrics, ``steps_per_sec`` (for comparisons at equal time) and those rows.

Speed, measured on CPU-2 (2-core AMD EPYC, shared with two other training
runs), at the defaults (128 features, 4 heads, 128 characters of context,
batch 32, M = 6), as the median of 47 interleaved updates each: fixed depth
6 1.2 updates/s, fixed depth 3 2.2, per_token 1.3 (1.4 with every
character at M = 6: the halting loop runs the whole batch until its deepest
character halts, so it costs about what fixed depth 6 does whatever its
mean depth), route with ``--max_depth=5`` 3.0. The default 3,000 updates
would take about 40 minutes for per_token and fixed depth 6, 25 for fixed
depth 3 and 20 for route at M = 5 at those rates; a whole run of fixed
depth 3 beside two other training runs on the same CPU ran at 1.9 s
per update (about 95 minutes for 3,000), so the rate depends on what else
the machine runs. docs/results/plans/depth.toml lists the planned runs
(fixed depths 3 and 6, per_token, PonderNet per token, route at the
compute of fixed depth 3), three seeds each; no
run at these sizes has a record yet, so no result is quoted here.

Why Adam at 3e-3: in two short runs at a tiny size (64 features, 64
characters, batch 16, fixed depth 2, 1,500 updates) 3e-3 reached 2.63 bpc
and 1e-3 2.92; no run at the default sizes compared them.

Rerunning the same command resumes from the last checkpoint in the workdir
(``runs/depth_lm/mode=..._seed=0_<non-default flags>``); rerunning a
finished run with ``--class_report`` only evaluates.
"""

from absl import flags

from experiments import _common
from vcrnn_jax.papers.depth import lm

CLASSES_CSV = 'classes.csv'

_common.mark_resumable(flags.DEFINE_string(
    'data_dir', None, "Folder holding ptb/ptb.char.*.txt (Mikolov's "
    'simple-examples layout); default: the download cache.'))
flags.DEFINE_enum('mode', 'per_token', list(lm.MODES),
                  'How deep the shared block runs: "fixed" (exactly '
                  '--depth applications), "per_token" (ACT per character, '
                  'Universal Transformer halting), "per_token_pondernet" '
                  "(PonderNet's halting distribution per character, "
                  'regularised by --beta and --lambda_p) or "route" '
                  '(Mixture-of-'
                  'Recursions: a router keeps the top --capacity of the '
                  'characters at each step; evaluated causally by its '
                  'threshold rule).')
_common.define_positive_int('max_depth', 6, 'Most block applications M of '
                            'per_token (ACT Eq. 13), per_token_pondernet (P4) '
                            'and the steps of route.')
_common.define_positive_int('depth', 6, 'Block applications of '
                            '--mode=fixed.')
_common.define_float('tau', 0.01, 'Ponder cost weight tau (ACT Eq. 12) of '
                     '--mode=per_token.')
_common.define_float('beta', lm.Model._field_defaults['beta'], 'Weight beta '
                     "of the KL between each character's halting "
                     'distribution and the geometric prior (PonderNet P3) '
                     'in --mode=per_token_pondernet; 0.01 is the public '
                     'reproductions\' value.')
_common.define_float('lambda_p', lm.Model._field_defaults['lambda_p'],
                     "The geometric prior's halting probability lambda_p "
                     'of --mode=per_token_pondernet, in (0, 1): a prior '
                     'mean of 1/lambda_p block applications per character '
                     '(0.2: 5, a little under --max_depth 6).')
flags.DEFINE_string('capacity', '', 'Comma-separated fractions c_r in '
                    '(0, 1], one per step of --mode=route (--max_depth of '
                    'them, non-increasing), or one for every step: step r '
                    'runs the block on the top max(1, floor(c_r T)) of a '
                    "window's T characters still routed. Empty: MoR's "
                    '(M - r)/M, a mean depth of (M + 1)/2.')
_common.define_float('aux_weight', lm.Model._field_defaults['aux_weight'],
                     "Weight of the routers' BCE against their own top-k "
                     'choice (routing.aux_loss; MoR: 0.001) in --mode=route; '
                     'it trains the threshold rule the evaluation uses.')
_common.define_float('gate_scale', None, "alpha of --mode=route's gate g = "
                     "alpha sigmoid(z) that weighs the block's update; "
                     "unset: 0.1, MoR's.", strict=True)
_common.define_positive_int('features', 128, 'Width F of the character '
                            'states.')
_common.define_positive_int('heads', 4, 'Attention heads (they split '
                            '--features).')
_common.define_positive_int('context', 128, 'Characters T per window, in '
                            'training and evaluation (learned positions).')
_common.define_positive_int('eval_windows', 256, 'Held-out windows per '
                            'evaluation: the first eval_windows x context '
                            'validation characters, the same every time, '
                            'and the text of --class_report.', resumable=True)
_common.define_positive_int('eval_batch_size', 64, 'Windows per evaluation '
                            'batch (per_token: mults_run depends on it).',
                            resumable=True)
_common.mark_resumable(flags.DEFINE_bool(
    'class_report', False, 'After training, evaluate the final params on '
    'the held-out windows per character class (space, word start, inside '
    'word, punctuation / end), print mean depth, ponder and bpc per class '
    f'and write <workdir>/{CLASSES_CSV}. Rerunning a finished run with it '
    'only evaluates.'))
_common.define_training_flags(steps=3000, batch_size=32, learning_rate=3e-3,
                              eval_every=500, grad_clip_norm=1.0)
_common.define_workdir('runs/depth_lm/mode=<mode>_seed=<seed>, then '
                       '_<flag>=<value> for each other non-default flag that '
                       'defines the run')
flags.adopt_module_key_flags(_common)
FLAGS = flags.FLAGS


def _class_report(run, params, run_dir) -> list[dict]:
  rows = lm.class_rows(run.settings, params, run.held_out,
                       run.corpus.vocab.decode,
                       batch_size=FLAGS.eval_batch_size)
  _common.write_csv(run_dir / CLASSES_CSV, rows)
  print(f'{"class":<18}  {"count":>6}  {"depth":>6}  {"ponder":>6}  '
        f'{"bpc":>6}')
  for r in rows:
    print(f'{r["class"]:<18}  {r["count"]:>6}  {r["depth"]:>6.3f}  '
          f'{r["ponder"]:>6.3f}  {r["bpc"]:>6.3f}')
  print(f'wrote {run_dir / CLASSES_CSV}')
  return rows


def main(processes):
  run = lm.run(_common.flag_values())
  model = run.settings
  run_dir = _common.default_workdir('depth_lm', leading=('mode', 'seed'))
  result = _common.train(run.experiment, run.config, run_dir,
                         processes=processes,
                         data_files=run.corpus.meta['files'])
  if not processes.is_chief():
    return result
  sections = _common.metric_sections(result.metrics)
  results = {'mode': model.mode, 'seed': FLAGS.seed,
             'model': model._asdict(), 'updates': result.step, **sections}
  if FLAGS.class_report:
    results['by_class'] = _class_report(run, result.params, run_dir)
  _common.write_results(run_dir, results, processes=processes)
  return result


if __name__ == '__main__':
  _common.run(main)
