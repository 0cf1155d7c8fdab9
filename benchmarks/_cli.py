"""The ``--quick`` flag every benchmark of the suite takes."""

import argparse
import sys


def add_quick(parser: argparse.ArgumentParser, quick: list[str],
              what: str = 'tiny settings') -> None:
  """Adds ``--quick``: ``quick``'s flags, appended so they win."""
  parser.add_argument('--quick', action='store_true',
                      help=f'{what} (' + ' '.join(quick) + '), which '
                      'override the others')


def parse(parser: argparse.ArgumentParser, argv, quick: list[str]):
  """``parser``'s arguments from ``argv`` (None: the command line), with
  ``quick``'s flags appended when ``--quick`` is given."""
  argv = sys.argv[1:] if argv is None else list(argv)
  args = parser.parse_args(argv)
  return parser.parse_args(argv + quick) if args.quick else args
