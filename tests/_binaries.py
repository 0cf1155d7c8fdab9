"""Running an experiment binary as a user runs it, from the repository root."""

import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]


def run_binary(module: str, args, **env_extra) -> subprocess.CompletedProcess:
  """``python -m experiments.<module> *args`` from the repository root."""
  env = dict(os.environ, **env_extra)
  env.pop('XLA_FLAGS', None)
  env['PYTHONPATH'] = os.pathsep.join(
      [str(REPO)] + [p for p in [env.get('PYTHONPATH')] if p])
  return subprocess.run([sys.executable, '-m', f'experiments.{module}', *args],
                        cwd=REPO, env=env, capture_output=True, text=True,
                        timeout=300)
