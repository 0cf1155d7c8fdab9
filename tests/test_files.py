"""Tests for vcrnn_jax.files."""

import os
import stat

from vcrnn_jax.files import atomic_write


def _mode(path):
  return stat.S_IMODE(os.stat(path).st_mode)


def test_atomic_write_gives_the_mode_of_a_plain_open(tmp_path):
  old = os.umask(0o022)
  try:
    path = atomic_write(tmp_path / 'flags.json', '{}\n')
    with open(tmp_path / 'plain.txt', 'w', encoding='utf-8') as f:
      f.write('x')
  finally:
    os.umask(old)
  assert _mode(path) == _mode(tmp_path / 'plain.txt') == 0o644
  assert path.read_text() == '{}\n'
  assert [p.name for p in tmp_path.iterdir() if p.name.startswith('.')] == []


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path):
  path = tmp_path / 'results.json'
  path.write_text('old')
  os.chmod(path, 0o640)
  atomic_write(path, b'new')
  assert path.read_bytes() == b'new' and _mode(path) == 0o640
