"""Small filesystem helpers shared by every layer (no model code)."""

import os
import pathlib
import tempfile
from typing import Union

PathLike = Union[str, os.PathLike]


def atomic_write(path: PathLike, data: Union[str, bytes]) -> pathlib.Path:
  """Writes ``data`` to ``path`` through a temporary file and a rename.

  A process killed mid-write leaves the old file (or none), never half of
  one. The temporary file has a unique name in the same folder, so several
  processes writing the same path (a shared workdir) cannot trip over each
  other's temporary file; the last rename wins.

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
    os.replace(tmp, path)
  except BaseException:
    try:
      os.unlink(tmp)
    except OSError:
      pass
    raise
  return path
