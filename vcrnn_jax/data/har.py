"""UCI Human Activity Recognition Using Smartphones (Anguita et al. 2013).

Reads the raw inertial signals of the UCI layout, either the extracted folder
``UCI HAR Dataset/`` or the ``UCI HAR Dataset.zip`` archive directly (the folder
wins when both exist)::

  UCI HAR Dataset/{train,test}/Inertial Signals/
      {body_acc,body_gyro,total_acc}_{x,y,z}_{split}.txt
  UCI HAR Dataset/{train,test}/y_{split}.txt         labels 1..6
  UCI HAR Dataset/{train,test}/subject_{split}.txt   volunteer ids 1..30

Each signal file has one 128-step window (2.56 s at 50 Hz) per line. The
561-feature ``X_*.txt`` files are not used.
"""

from collections.abc import Sequence
import pathlib
import zipfile

import numpy as np

from vcrnn_jax.data import dataset as ds_lib
from vcrnn_jax.data.dataset import Dataset, PathLike

__all__ = [
    'ROOT',
    'ZIP_NAME',
    'CHANNELS',
    'CLASSES',
    'STEPS',
    'member_paths',
    'load_uci_har',
]

ROOT = 'UCI HAR Dataset'
ZIP_NAME = 'UCI HAR Dataset.zip'
# The channel order of the widely used LSTM-HAR baselines.
CHANNELS = ('body_acc_x', 'body_acc_y', 'body_acc_z', 'body_gyro_x',
            'body_gyro_y', 'body_gyro_z', 'total_acc_x', 'total_acc_y',
            'total_acc_z')
CLASSES = ('WALKING', 'WALKING_UPSTAIRS', 'WALKING_DOWNSTAIRS', 'SITTING',
           'STANDING', 'LAYING')
STEPS = 128


def member_paths(split: str) -> dict[str, str]:
  """Paths (relative to the archive root) of the files one split needs."""
  files = {
      c: f'{ROOT}/{split}/Inertial Signals/{c}_{split}.txt' for c in CHANNELS
  }
  files['y'] = f'{ROOT}/{split}/y_{split}.txt'
  files['subject'] = f'{ROOT}/{split}/subject_{split}.txt'
  return files


class _Source:
  """Reads members from the extracted folder or the zip."""

  def __init__(self, path: pathlib.Path):
    # ``path`` is the extracted ``UCI HAR Dataset`` folder or the zip; member
    # names start with ``UCI HAR Dataset/`` in both cases.
    self.path = path
    self.base = path.parent
    self.zip = None
    if not path.is_dir():
      try:
        self.zip = zipfile.ZipFile(path)
      except (zipfile.BadZipFile, OSError) as e:
        raise ValueError(
            f'{str(path)!r} is not a readable zip archive (truncated or '
            f'corrupt?): {e}.') from None
      self.names = set(self.zip.namelist())

  def where(self, member: str) -> str:
    if self.zip is None:
      return str(self.base / member)
    return f'{self.path}:{member}'

  def read(self, member: str) -> bytes:
    if self.zip is None:
      p = self.base / member
      if not p.is_file():
        raise FileNotFoundError(f'UCI HAR file {str(p)!r} is missing.')
      return p.read_bytes()
    if member not in self.names:
      raise FileNotFoundError(
          f'UCI HAR archive {str(self.path)!r} has no member '
          f'{member!r}.')
    try:
      return self.zip.read(member)
    except (zipfile.BadZipFile, EOFError, OSError) as e:
      raise ValueError(
          f'{self.where(member)!r}: cannot read from the zip (truncated '
          f'or corrupt?): {e}.') from None

  def close(self):
    if self.zip is not None:
      self.zip.close()


def _parse_matrix(raw: bytes, where: str, cols: int | None,
                  dtype) -> np.ndarray:
  """Parses whitespace-separated numbers, one row per line."""
  ds_lib.check_not_empty(raw, where, 'numbers, one row per line')
  rows = raw.count(b'\n') + (0 if raw.endswith(b'\n') else 1)
  try:
    flat = np.array(raw.split(), dtype=dtype)
  except ValueError as e:
    raise ValueError(f'{where!r}: not numeric text ({e}).') from None
  width = cols if cols is not None else 1
  if flat.size != rows * width:
    # Find the offending line only on this error path (it costs a Python loop).
    for i, line in enumerate(raw.split(b'\n'), 1):
      if line.strip() and len(line.split()) != width:
        raise ValueError(
            f'{where!r} line {i} has {len(line.split())} values; expected '
            f'{width} per line (truncated or wrong file?).')
    raise ValueError(
        f'{where!r}: {flat.size} values on {rows} lines; expected {width} '
        'per line.')
  return flat.reshape(rows, width) if cols is not None else flat


def _read_split(src: _Source, split: str):
  files = member_paths(split)
  signals = [
      _parse_matrix(src.read(files[c]), src.where(files[c]), STEPS, np.float32)
      for c in CHANNELS
  ]
  n = signals[0].shape[0]
  for c, s in zip(CHANNELS, signals):
    if s.shape[0] != n:
      raise ValueError(f'{src.where(files[c])!r} has {s.shape[0]} windows but '
                       f'{src.where(files[CHANNELS[0]])!r} has {n}.')
  labels = _parse_matrix(
      src.read(files['y']), src.where(files['y']), None, np.int64)
  subjects = _parse_matrix(
      src.read(files['subject']), src.where(files['subject']), None, np.int64)
  for key, arr in (('y', labels), ('subject', subjects)):
    if arr.shape[0] != n:
      raise ValueError(
          f'{src.where(files[key])!r} has {arr.shape[0]} lines; expected '
          f'{n} (one per window of the signal files).')
  if labels.min() < 1 or labels.max() > len(CLASSES):
    raise ValueError(
        f'{src.where(files["y"])!r}: labels range over [{labels.min()}, '
        f'{labels.max()}]; expected 1..{len(CLASSES)}.')
  inputs = np.stack(signals, axis=-1)  # [N, 128, 9]
  return inputs, (labels - 1).astype(np.int32), subjects.astype(np.int32)


def load_uci_har(data_dir: PathLike, normalize: bool = True,
                 valid_subjects: Sequence[int] = ()) -> Dataset:
  """The 9 inertial channels x 128 steps of UCI HAR, labels 0..5.

  UCI HAR ships train and test only. ``valid`` is carved from train by
  volunteer (``valid_subjects``), never by random windows: windows overlap by
  50%, so a random split would leak. The default holds out nobody, as the
  EI-REHN paper trains on all of train; then ``valid`` is empty
  (``[0, 128, 9]``).

  Normalisation (default on) subtracts the per-channel mean and divides by the
  per-channel standard deviation, both computed on the (remaining) train split
  only and stored in ``meta['mean']`` / ``meta['std']``.

  Args:
    data_dir: the data root holding ``har/`` with ``UCI HAR Dataset/`` or
      ``UCI HAR Dataset.zip`` (or a folder holding either directly).
    normalize: standardise channels with train statistics.
    valid_subjects: train volunteer ids to move to ``valid``.

  Returns:
    A :class:`Dataset` with splits ``(inputs float32 [N, 128, 9], labels int32
    [N])``, ``vocab=None`` and ``meta`` holding ``'subjects'`` (per split int32
    [N]), ``'channels'``, ``'classes'``, ``'mean'``, ``'std'``.

  Raises:
    FileNotFoundError: the folder/zip or one of its files is missing.
    ValueError: a file is empty, truncated (wrong number of values), not
      numeric, has labels outside 1..6, or ``valid_subjects`` names a volunteer
      that train lacks.

  Example::

    ds = load_uci_har('corpora')
    x, y = ds.train        # float32 [7415, 128, 9], int32 [7415]
  """
  path = ds_lib.find_file(
      data_dir, 'har', [ROOT, ZIP_NAME], f'{ROOT}/ or {ZIP_NAME}', dirs=(ROOT,))
  src = _Source(path)
  try:
    train = _read_split(src, 'train')
    test = _read_split(src, 'test')
  finally:
    src.close()
  valid_subjects = [int(s) for s in valid_subjects]
  missing = sorted(set(valid_subjects) - set(train[2].tolist()))
  if missing:
    raise ValueError(
        f'valid_subjects {missing} are not train volunteers; train has '
        f'{sorted(set(train[2].tolist()))}.')
  in_valid = np.isin(train[2], valid_subjects)
  if in_valid.all():
    raise ValueError(
        f'valid_subjects {valid_subjects} would leave train empty.')
  valid = tuple(a[in_valid] for a in train)
  train = tuple(a[~in_valid] for a in train)
  x = train[0].astype(np.float64)
  mean = x.mean(axis=(0, 1)).astype(np.float32)
  std = x.std(axis=(0, 1)).astype(np.float32)
  if normalize:
    if (std <= 0).any():
      raise ValueError(
          f'UCI HAR: channel(s) {np.flatnonzero(std <= 0).tolist()} are '
          'constant on train; cannot normalise.')
    scale = (1.0 / std).astype(np.float32)
    train, valid, test = ((((a[0] - mean) * scale).astype(np.float32),) + a[1:]
                          for a in (train, valid, test))
  meta = {
      'name': 'uci_har',
      'files': [str(path)],
      'subjects': {'train': train[2], 'valid': valid[2], 'test': test[2]},
      'channels': CHANNELS,
      'classes': CLASSES,
      'mean': mean,
      'std': std,
      'normalized': bool(normalize),
      'valid_subjects': tuple(valid_subjects),
  }
  return Dataset(train[:2], valid[:2], test[:2], None, meta)
