"""The flags every benchmark of the suite takes: ``--quick`` and ``--json``."""

import argparse
import functools
import json
import math
import pathlib
import sys


def add_quick(parser: argparse.ArgumentParser, quick: list[str],
              what: str = 'tiny settings') -> None:
  """Adds ``--quick`` (``quick``'s flags, appended so they win) and
  ``--json`` (see :func:`writes_json`)."""
  parser.add_argument('--quick', action='store_true',
                      help=f'{what} (' + ' '.join(quick) + '), which '
                      'override the others')
  parser.add_argument('--json', default='',
                      help='also write the rows of the table to this file '
                      'as JSON (a list of objects, NaN as null); the suite '
                      '(python -m benchmarks) reads it')


def parse(parser: argparse.ArgumentParser, argv, quick: list[str]):
  """``parser``'s arguments from ``argv`` (None: the command line), with
  ``quick``'s flags appended when ``--quick`` is given."""
  argv = sys.argv[1:] if argv is None else list(argv)
  args = parser.parse_args(argv)
  return parser.parse_args(argv + quick) if args.quick else args


def json_ready(value):
  """``value`` with NaN and infinities as None (strict JSON)."""
  if isinstance(value, dict):
    return {k: json_ready(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [json_ready(v) for v in value]
  if isinstance(value, float) and not math.isfinite(value):
    return None
  return value


def write_json(path, value) -> None:
  """Writes ``value`` to ``path`` as strict, indented JSON."""
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps(json_ready(value), indent=1, allow_nan=False)
                  + '\n', encoding='utf-8')


def writes_json(main):
  """``main(argv) -> rows`` that also writes the rows to ``--json=FILE``
  when ``argv`` (None: the command line) gives it."""
  @functools.wraps(main)
  def wrapped(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    rows = main(argv)
    flag = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    flag.add_argument('--json', default='')
    path = flag.parse_known_args(argv)[0].json
    if path:
      write_json(path, rows)
    return rows
  return wrapped
