"""Small filesystem helpers shared by every layer (no model code)."""

import os
import pathlib
import tempfile

__all__ = ['atomic_write']

PathLike = str | os.PathLike


def _umask() -> int:
  # Linux shows the umask in /proc; elsewhere reading it means setting it,
  # briefly, for the whole process (other threads may be writing files).
  try:
    with open('/proc/self/status', encoding='ascii') as f:
      for line in f:
        if line.startswith('Umask:'):
          return int(line.split()[1], 8)
  except (OSError, ValueError):
    pass
  umask = os.umask(0o022)
  os.umask(umask)
  return umask


def _mode_for(path: pathlib.Path) -> int:
  try:
    return path.stat().st_mode & 0o777
  except FileNotFoundError:
    return 0o666 & ~_umask()


def atomic_write(path: PathLike, data: str | bytes) -> pathlib.Path:
  """Writes ``data`` to ``path`` through a temporary file and a rename.

  A process killed mid-write leaves the old file (or none), never half of
  one. The temporary file has a unique name in the same folder, so several
  processes writing the same path (a shared workdir) cannot trip over each
  other's temporary file; the last rename wins. The file gets the mode a
  plain ``open(path, 'w')`` would give it (``0o666`` less the umask, or the
  mode of the file it replaces), not the temporary file's ``0o600``.

  Args:
    path: the file to write (its folder must exist).
    data: text (written as UTF-8) or bytes.

  Returns:
    ``path`` as a ``pathlib.Path``.
  """
  path = pathlib.Path(path)
  raw = data.encode('utf-8') if isinstance(data, str) else data
  fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f'.{path.name}.',
                             suffix='.tmp')
  try:
    with os.fdopen(fd, 'wb') as f:
      f.write(raw)
    os.chmod(tmp, _mode_for(path))
    os.replace(tmp, path)
  except BaseException:
    try:
      os.unlink(tmp)
    except OSError:
      pass
    raise
  return path
