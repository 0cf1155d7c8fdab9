"""Tests for vcrnn_jax.training.metric_writer and
vcrnn_jax.training.progress."""

import io
import json
import math
import os
import pathlib
import re
import struct
import sys
import time
import types

import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax.training import progress as progress_lib
from vcrnn_jax.training.metric_writer import MetricsWriter, read_metrics
from vcrnn_jax.training.progress import Progress, summary_table

# ---------------------------------------------------------------- metrics --


def _read_events(logdir):
  """Decodes every event in the TFRecord files under ``logdir``."""
  # pylint: disable-next=g-import-not-at-top
  from tensorboardX.proto import event_pb2
  events = []
  files = sorted(logdir.glob('events.out.tfevents.*'))
  for path in files:
    data = path.read_bytes()
    offset = 0
    # TFRecord framing: uint64 length, uint32 length CRC, payload, uint32 CRC.
    while offset < len(data):
      (length,) = struct.unpack_from('<Q', data, offset)
      payload = data[offset + 12:offset + 12 + length]
      assert len(payload) == length, 'truncated record'
      events.append(event_pb2.Event.FromString(payload))
      offset += 12 + length + 4
  return files, events


def _scalars(events):
  return [(e.step, v.tag, v.simple_value)
          for e in events for v in e.summary.value]


def test_writes_jsonl_and_tensorboard(tmp_path):
  with MetricsWriter(tmp_path) as writer:
    writer.write(10, {'loss': jnp.float32(0.5), 'error': np.float64(0.25)})
    writer.write(20, {'loss': 0.125, 'count': 3, 'bad': float('nan'),
                      'big': np.inf})
  lines = (tmp_path / 'metrics.jsonl').read_text().splitlines()
  assert len(lines) == 2
  first = json.loads(lines[0])  # Strict JSON: no bare NaN.
  assert first['step'] == 10 and first['loss'] == 0.5
  assert first['error'] == 0.25
  assert abs(first['time'] - time.time()) < 60
  second = json.loads(lines[1])
  assert second['bad'] is None and second['big'] == 'inf'   # null for NaN
  assert second['count'] == 3.0 and isinstance(second['count'], float)

  records = read_metrics(tmp_path / 'metrics.jsonl')
  assert [r['step'] for r in records] == [10, 20]
  assert math.isnan(records[1]['bad']) and records[1]['big'] == math.inf
  assert records == read_metrics(tmp_path)  # The workdir works too.

  files, events = _read_events(tmp_path / 'tensorboard')
  assert files
  scalars = _scalars(events)
  assert (10, 'loss', 0.5) in scalars and (20, 'loss', 0.125) in scalars
  assert (10, 'error', 0.25) in scalars


@pytest.mark.slow
def test_a_killed_run_keeps_every_logged_evaluation_in_tensorboard(tmp_path):
  # The writer's process dies by SIGKILL right after logging: no close, no
  # timed flush. metrics.jsonl and TensorBoard must both hold every step.
  import subprocess  # pylint: disable=g-import-not-at-top
  code = (
      'import os, signal, sys\n'
      'from vcrnn_jax.training.metric_writer import MetricsWriter\n'
      'w = MetricsWriter(sys.argv[1])\n'
      'for step in (100, 200, 300):\n'
      '  w.write(step, {"loss": step / 1000})\n'
      'os.kill(os.getpid(), signal.SIGKILL)\n')
  repo = str(pathlib.Path(__file__).resolve().parents[1])
  env = dict(os.environ, PYTHONPATH=repo)
  proc = subprocess.run([sys.executable, '-c', code, str(tmp_path)], env=env,
                        capture_output=True, text=True, timeout=120)
  assert proc.returncode == -9, proc.stderr
  assert [r['step'] for r in read_metrics(tmp_path)] == [100, 200, 300]
  _, events = _read_events(tmp_path / 'tensorboard')
  assert sorted(s for s, tag, _ in _scalars(events) if tag == 'loss') == [
      100, 200, 300]


def test_nan_is_written_as_null_and_read_back(tmp_path):
  with MetricsWriter(tmp_path) as writer:
    writer.write(1, {'steps_per_sec': float('nan'), 'loss': 1.0})
  line = (tmp_path / 'metrics.jsonl').read_text()
  assert '"steps_per_sec": null' in line and '"nan"' not in line
  assert math.isnan(read_metrics(tmp_path)[0]['steps_per_sec'])
  # Files of older versions wrote the string "nan": still read as NaN.
  (tmp_path / 'metrics.jsonl').write_text(
      '{"step": 2, "time": 0, "x": "nan"}\n')
  assert math.isnan(read_metrics(tmp_path)[0]['x'])


def test_resume_drops_later_lines_and_purges_tensorboard(tmp_path):
  with MetricsWriter(tmp_path) as writer:
    for step in (100, 200, 300, 400):
      writer.write(step, {'loss': step / 1000})
  # A process killed mid-write leaves a partial line.
  with open(tmp_path / 'metrics.jsonl', 'a') as f:
    f.write('{"step": 500, "ti')

  with MetricsWriter(tmp_path, resume_step=200) as writer:
    assert [r['step'] for r in read_metrics(tmp_path)] == [100, 200]
    writer.write(300, {'loss': 0.0})
  records = read_metrics(tmp_path)
  assert [(r['step'], r['loss']) for r in records] == [
      (100, 0.1), (200, 0.2), (300, 0.0)]

  # The resumed run's event file tells TensorBoard to drop steps >= 201.
  _, events = _read_events(tmp_path / 'tensorboard')
  purges = [e.step for e in events if e.HasField('session_log')]
  assert 201 in purges


def test_append_without_resume_repairs_partial_line(tmp_path):
  with MetricsWriter(tmp_path) as writer:
    writer.write(1, {'a': 1.0})
  with open(tmp_path / 'metrics.jsonl', 'a') as f:
    f.write('{"step": 2, "a"')
  assert [r['step'] for r in read_metrics(tmp_path)] == [1]
  with MetricsWriter(tmp_path) as writer:
    writer.write(2, {'a': 2.0})
  assert [r['step'] for r in read_metrics(tmp_path)] == [1, 2]


def test_read_metrics_rejects_corrupt_middle_line(tmp_path):
  path = tmp_path / 'metrics.jsonl'
  path.write_text('{"step": 1, "time": 0}\nnot json\n{"step": 2, "time": 0}\n')
  with pytest.raises(ValueError, match='line 2'):
    read_metrics(path)


def test_metrics_writer_validation(tmp_path):
  with pytest.raises(ValueError, match='resume_step.*got -1'):
    MetricsWriter(tmp_path, resume_step=-1)
  writer = MetricsWriter(tmp_path)
  with pytest.raises(ValueError, match="'step'"):
    writer.write(1, {'step': 1.0})
  with pytest.raises(ValueError, match="metric 'v' must be a real scalar"):
    writer.write(1, {'v': np.ones(3)})
  with pytest.raises(ValueError, match="metric 's' must be a real scalar"):
    writer.write(1, {'s': 'abc'})
  with pytest.raises(ValueError, match='step must be.*got -2'):
    writer.write(-2, {'a': 1.0})
  writer.close()
  with pytest.raises(ValueError, match='closed'):
    writer.write(3, {'a': 1.0})
  assert read_metrics(tmp_path) == []


# --------------------------------------------------------------- progress --


class _Clock:

  def __init__(self):
    self.now = 1000.0

  def __call__(self):
    return self.now


@pytest.fixture
def clock(monkeypatch):
  clock = _Clock()
  monkeypatch.setattr(progress_lib, '_monotonic', clock)
  return clock


class _Tty(io.StringIO):

  def isatty(self):
    return True


# tqdm's '[elapsed<remaining, rate' part of a line.
_TIMES = re.compile(r'\[([\d:]+)<([\d:?]+), *([\d.?]+)(step/s|s/step)')


def _times(line):
  """(elapsed, ETA, rate text) of one line; asserts that all are shown."""
  match = _TIMES.search(line)
  assert match, line
  return match.group(1), match.group(2), match.group(3) + match.group(4)


def test_plain_stream_prints_every_tenth(clock):
  stream = io.StringIO()
  bar = Progress(1000, stream=stream, desc='train')
  for step in range(1, 1001):
    # The first step includes compilation and must not drag the rate down.
    clock.now += 30.0 if step == 1 else 1 / 128  # Exact in binary.
    bar.update(step, loss=np.float32(0.69314718), err=jnp.float32(0.41))
    if step == 550:
      bar.write('eval: error=0.300')
  assert bar.rate == 128.0
  bar.close()
  lines = stream.getvalue().splitlines()
  assert '\r' not in stream.getvalue()
  # A heartbeat after the slow first step, 10%, ..., 100% and the eval line.
  assert len(lines) == 12
  assert '1/1000' in lines[0] and _times(lines[0])[1:] == ('?', '?step/s')
  assert lines[6] == 'eval: error=0.300'
  for i, line in enumerate(lines[1:6] + lines[7:], start=1):
    assert line.startswith('train:') and f'{i * 100}/1000' in line
    assert f'{i * 10}%' in line and 'loss=0.6931, err=0.41' in line
  half = lines[5]
  # 499 steps in 3.9 s after the first: 128 steps/s, 500 to go in 3.9 s.
  assert _times(half) == ('00:03', '00:03', '128.00step/s')
  assert _times(lines[-1])[1:] == ('00:00', '128.00step/s')


def test_plain_stream_heartbeat_for_slow_runs(clock):
  stream = io.StringIO()
  bar = Progress(1000, stream=stream, min_interval=0.5)
  bar.update(1)
  for step in range(2, 6):
    clock.now += 4.0  # A 10% mark is far away; the 10 s heartbeat is not.
    bar.update(step)
  lines = stream.getvalue().splitlines()
  assert len(lines) == 1 and ' 4/1000 ' in lines[0]
  # 3 steps in 12 s: slow runs read as time per step.
  assert _times(lines[0]) == ('00:12', '1:06:24', '4.00s/step')
  bar.close()  # Prints the last state, which no line showed yet.
  assert ' 5/1000 ' in stream.getvalue().splitlines()[-1]


def test_resumed_run_rollback_and_unknown_rate(clock):
  stream = io.StringIO()
  bar = Progress(100, initial=50, stream=stream, desc='train')
  assert '50/100' in bar.format_line() and bar.rate is None
  assert _times(bar.format_line())[1:] == ('?', '?step/s')
  bar.update(60)
  assert _times(bar.format_line())[1] == '?' and bar.rate is None
  clock.now += 10.0
  bar.update(70, loss='0.1234')
  assert bar.rate == 1.0
  assert _times(bar.format_line()) == ('00:10', '00:30', '1.00step/s')
  # A rollback restarts the rate measurement.
  bar.update(65)
  assert bar.rate is None and _times(bar.format_line())[2] == '?step/s'
  clock.now += 5.0
  bar.update(75)
  assert bar.rate == 2.0
  bar.close()
  last = stream.getvalue().splitlines()[-1]
  assert last.startswith('train:  75%|') and 'loss' not in last
  bar.update(80)  # Ignored once closed.
  assert stream.getvalue().splitlines()[-1] == last


def test_tty_redraws_in_place(clock):
  stream = _Tty()
  # An hour between redraws: only the first, the last and write() draw.
  bar = Progress(10, stream=stream, desc='x', min_interval=3600)
  assert stream.getvalue() == ''  # Nothing before the first update.
  bar.update(1, loss=1.0)
  assert stream.getvalue().count('\r') == 1 and 'loss=1' in stream.getvalue()
  bar.update(2, loss=0.5)  # Throttled.
  assert stream.getvalue().count('\r') == 1
  bar.write('eval done')
  clock.now += 2.0
  bar.update(10, loss=0.125)  # The last step is always drawn.
  assert bar.rate == pytest.approx(4.5)  # 9 steps in 2 s after the first.
  bar.close()
  text = stream.getvalue()
  assert text.endswith('\n') and text.count('\n') == 2
  # The eval line sits on a line of its own, and the bar is redrawn after it.
  before, after = text.split('eval done\n')
  assert '\n' not in before and before.endswith('\r')
  assert after.startswith('\rx:  20%|') and '2/10' in after.split('\r')[1]
  final = after.rstrip('\n').split('\r')[-1]
  assert final.startswith('x: 100%|') and '10/10' in final
  assert 'loss=0.125' in final


@pytest.mark.skipif(not hasattr(os, 'openpty'), reason='needs a pty')
def test_terminal_of_size_zero_still_shows_the_bar():
  # A new pty has no window size (0 x 0), like `script` or some CI runners.
  master, slave = os.openpty()
  with os.fdopen(slave, 'w') as stream:
    assert os.get_terminal_size(stream.fileno()).columns == 0
    with Progress(4, stream=stream, desc='x', min_interval=0) as bar:
      bar.update(1)
      bar.update(4)
  chunks = []
  with os.fdopen(master, 'rb', buffering=0) as out:
    while True:
      try:
        chunk = out.read(1 << 16)
      except OSError:  # EIO: the other end is closed and all was read.
        break
      if not chunk:
        break
      chunks.append(chunk)
  text = b''.join(chunks).decode()
  assert '\rx: 100%|' in text and '4/4' in text


def test_notebook_stdout_redraws_in_place(monkeypatch):
  # Jupyter's stdout is no terminal but renders tqdm's bar.
  monkeypatch.setitem(sys.modules, 'ipykernel', types.ModuleType('ipykernel'))
  monkeypatch.setattr(sys, 'stdout', io.StringIO())
  with Progress(4) as bar:
    bar.update(1)
    bar.update(4)
  assert '\r' in sys.stdout.getvalue() and '4/4' in sys.stdout.getvalue()


def test_progress_validation():
  with pytest.raises(ValueError, match='total.*got -1'):
    Progress(-1)
  with pytest.raises(ValueError, match=r'initial.*\[0, total=10\].*got 11'):
    Progress(10, initial=11)
  with pytest.raises(ValueError, match='min_interval.*got -0.5'):
    Progress(10, min_interval=-0.5)


def test_summary_table_aligns():
  table = summary_table(
      {'steps': 1000, 'test error': np.float32(0.0412), 'note': 'a\nb',
       'loss': float('nan')}, title='Run summary')
  lines = table.splitlines()
  assert lines[0] == 'Run summary'
  assert set(lines[1]) == {'-'} and lines[-1] == lines[1]
  body = lines[2:-1]
  assert body == [
      'steps       1000',
      'test error  0.0412',
      'note        a',
      '            b',
      'loss        nan',
  ]
  assert len(lines[1]) == max(len(line) for line in lines)
  assert summary_table({}) == '' and summary_table({}, 'T') == 'T'
