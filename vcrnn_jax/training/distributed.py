"""Several processes training one model: start-up, agreement and failures.

A run of N processes (one per host, or several on one machine) is the same
command started N times with ``--coordinator_address=HOST:PORT
--num_processes=N --process_id=I`` (or ``--distributed`` on a cluster that
JAX detects). :func:`initialize` connects them and returns the run's handle,
a :class:`Processes`; from then on ``jax.devices()`` spans every process and
:func:`vcrnn_jax.training.train_and_evaluate`, given the handle, splits each
global batch over all of them. The handle holds all the state of the run
(the connection, the watchdog, the folders found shared); nothing is kept
in this module. :data:`LOCAL` is the handle of a run of one process.

The contract the training stack keeps on top of ``jax.distributed``:

* One workdir, on a filesystem every process sees
  (:meth:`Processes.check_shared_folder` proves it before training). Process
  0 (:meth:`Processes.is_chief`) alone writes the run's files; every
  process takes part in each Orbax save and restore.
* Decisions that could differ between processes (do the flags match the
  workdir's run, which checkpoint was restored) are taken on the values of
  every process (:meth:`Processes.agree`) and, when they fail, raise the same
  :class:`AgreedError` on every process.
* No process waits for a peer that is gone. A watchdog thread in each process
  beats every ``BEAT_S`` seconds through the run's key-value store (a small
  server in process 0, :class:`_Store`, whose address process 0 sends the
  others with ``multihost_utils.broadcast_one_to_all`` once they have
  joined) and watches the others' beats. A process that fails calls
  :meth:`Processes.abort_peers` with its one-line error; the others print
  ``process I failed: <its line>`` and exit with status 1. A process killed
  outright stops beating and is declared gone after ``STALE_S`` seconds (in
  ``GRACE_S`` if it dies inside a collective: the others' all-reduce fails on
  the closed socket). The watchdog ends its process with ``os._exit``: the
  main thread may be blocked inside a collective, where no Python exception
  can reach it. Losing process 0, which hosts JAX's coordination service,
  ends the others at once, through JAX itself: its client aborts the process
  (status 134) with its own fatal-error message (jax offers no hook to
  replace it); the watchdog's own line comes only where JAX is slower.

Example (two processes on one machine)::

  python -m experiments.act_parity --workdir=/tmp/run \\
      --coordinator_address=127.0.0.1:12345 --num_processes=2 --process_id=0 &
  python -m experiments.act_parity --workdir=/tmp/run \\
      --coordinator_address=127.0.0.1:12345 --num_processes=2 --process_id=1
"""

from collections.abc import Callable, Sequence
import inspect
import itertools
import json
import logging
from multiprocessing import connection
import os
import pathlib
import re
import socket
import sys
import threading
import time
import uuid

import jax
from jax.experimental import multihost_utils
import numpy as np

from vcrnn_jax.files import atomic_write

__all__ = [
    'BEAT_S',
    'STALE_S',
    'ACK_S',
    'GRACE_S',
    'CONNECT_TIMEOUT_S',
    'AGREE_TIMEOUT_S',
    'AgreedError',
    'exit_now',
    'Processes',
    'LOCAL',
    'initialize',
]

# How often each process beats, and how long a silent process may stay
# silent before the others declare it gone. A Python thread beats, so the
# silence must cover the longest time it can be starved of the GIL; on a
# loaded 2-core machine that was 1.2 s, during an XLA compilation.
BEAT_S = 0.5
STALE_S = 10.0
# How long a failing process waits for its peers to read its message before
# it exits (process 0 hosts the key-value store: once it exits, nobody can).
ACK_S = 5.0
# After an error in a collective, how long to look for the peer that caused
# it before reporting the error itself.
GRACE_S = 3.0
# Default --connect_timeout: how long the processes wait for each other at
# start-up.
CONNECT_TIMEOUT_S = 120
# jax's own connection timeout and shutdown barrier, both a backstop behind
# ours (they end the process with a C++ fatal error, not one line).
_JAX_CONNECT_MARGIN_S = 60
_SHUTDOWN_TIMEOUT_S = 60
# An agreement that is not reached in this long (a peer alive but elsewhere
# in the program) is an error rather than a hang.
AGREE_TIMEOUT_S = 600.0

_PREFIX = 'vcrnn_jax'
_RESUME = ('Stopping; rerun the same command on every process to resume from '
           'the last checkpoint.')


class AgreedError(ValueError):
  """A bad setting found on the values of every process.

  Raised with the same message on every process of the run at the same
  point, so no process has to stop the others: they all stop by themselves.
  """


_ADDRESS = re.compile(r'^\[?[^\s\]]+\]?:(\d{1,5})$')


def _check(coordinator_address, num_processes, process_id, auto) -> bool:
  """Validates the settings; returns whether this is a multi-process run."""
  given = [v is not None for v in (coordinator_address, num_processes,
                                   process_id)]
  if auto:
    if any(given):
      raise ValueError('--distributed lets JAX detect the cluster; do not '
                       'also pass --coordinator_address, --num_processes or '
                       '--process_id.')
    return True
  if not any(given):
    return False
  if not all(given):
    raise ValueError('a multi-process run needs --coordinator_address, '
                     '--num_processes and --process_id together.')
  if not _ADDRESS.match(coordinator_address) or not (
      0 < int(_ADDRESS.match(coordinator_address).group(1)) < 65536):
    raise ValueError(f'--coordinator_address must be HOST:PORT, got '
                     f'{coordinator_address!r}.')
  if num_processes < 1:
    raise ValueError(f'--num_processes must be >= 1, got {num_processes}.')
  if not 0 <= process_id < num_processes:
    raise ValueError(f'--process_id must be in 0..{num_processes - 1} '
                     f'(--num_processes={num_processes}), got {process_id}.')
  return True


def _use_gloo_on_cpu() -> None:
  """Gives the CPU backend cross-process collectives (gloo over TCP).

  Without them a CPU computation spanning processes fails. Newer jax
  versions default to gloo; older ones named the option differently or had
  none (then GPU/TPU runs still work). A choice the user made (``mpi``) is
  kept.
  """
  values = jax.config.values
  if 'jax_cpu_collectives_implementation' in values:
    if values['jax_cpu_collectives_implementation'] in (None, 'none', ''):
      jax.config.update('jax_cpu_collectives_implementation', 'gloo')
  elif 'jax_cpu_enable_gloo_collectives' in values:
    jax.config.update('jax_cpu_enable_gloo_collectives', True)


def _initialize_kwargs(timeout_s: float) -> dict:
  """The timeouts this jax version's ``jax.distributed.initialize`` takes."""
  accepted = inspect.signature(jax.distributed.initialize).parameters
  wanted = {'initialization_timeout': int(timeout_s) + _JAX_CONNECT_MARGIN_S,
            'shutdown_timeout_seconds': _SHUTDOWN_TIMEOUT_S}
  return {k: v for k, v in wanted.items() if k in accepted}


def _reachable(address: str, timeout_s: float = 1.0) -> bool:
  host, port = address.rsplit(':', 1)
  try:
    with socket.create_connection((host.strip('[]'), int(port)),
                                  timeout=timeout_s):
      return True
  except OSError:
    return False


def _write_line(line: str) -> None:
  try:
    sys.stdout.flush()
  except (OSError, ValueError):
    pass
  try:
    sys.stderr.write(line + '\n')
    sys.stderr.flush()
  except (OSError, ValueError):
    pass


def exit_now(status: int) -> None:
  """Ends this process at once (no atexit handlers, no shutdown barrier).

  For a process of a failed multi-process run: JAX's shutdown at exit waits
  for every process at a barrier that peers which already exited never
  reach.
  """
  try:
    sys.stdout.flush()
    sys.stderr.flush()
  except (OSError, ValueError):
    pass
  os._exit(status)  # pylint: disable=protected-access


class _Run:
  """This process's view of a multi-process run, and its watchdog."""

  def __init__(self, client, process_id: int, num_processes: int,
               address: str, prefix: str):
    self.client = client
    self.pid = process_id
    self.n = num_processes
    self.address = address
    self.prefix = prefix         # the start of the lines this process prints
    self.aborting = False        # the main thread owns the exit
    self.exiting = False         # the watchdog is ending the process
    self.counter = itertools.count()
    self.stop = threading.Event()
    self.thread = threading.Thread(target=self._watch, daemon=True,
                                   name='vcrnn_jax-watchdog')
    self.beat_seen: dict = {}    # pid -> (beat value, monotonic time seen)

  def key(self, *parts) -> str:
    return '/'.join((_PREFIX,) + tuple(str(p) for p in parts))

  def entries(self) -> dict:
    # One round trip returns every key of the run: beats, aborts, acks, ends.
    return dict(self.client.key_value_dir_get(_PREFIX + '/'))

  def set(self, key: str, value: str) -> None:
    self.client.key_value_set(key, value, allow_overwrite=True)

  # -- the watchdog thread --------------------------------------------------

  def _watch(self) -> None:
    beat = 0
    unreachable_since = None
    now = time.monotonic()
    self.beat_seen = {j: (None, now) for j in range(self.n) if j != self.pid}
    while not self.stop.wait(BEAT_S):
      now = time.monotonic()
      try:
        self.set(self.key('beat', self.pid), str(beat))
        beat += 1
        entries = self.entries()
      except Exception:  # pylint: disable=broad-exception-caught
        # Any error talking to the store: it is in process 0, so that
        # process is gone (or this machine lost the network).
        if self.stop.is_set() or self.pid == 0:
          continue
        unreachable_since = unreachable_since or now
        if now - unreachable_since >= 2 * BEAT_S:
          self._die(f'lost process 0 (the coordinator at {self.address}): it '
                    f'exited or was killed. {_RESUME}')
        continue
      unreachable_since = None
      if self.aborting:
        continue
      failed = self._first_abort(entries)
      if failed is not None:
        j, message = failed
        self._die(f'process {j} failed: {message}', ack=True)
      for j, (value, since) in list(self.beat_seen.items()):
        if entries.get(self.key('stopped', j)) is not None:
          continue
        current = entries.get(self.key('beat', j))
        if current != value:
          self.beat_seen[j] = (current, now)
        elif now - since > STALE_S:
          message = (f'process {j} stopped responding for {now - since:.0f} '
                     f's (killed, or its machine is down). {_RESUME}')
          try:
            self.set(self.key('abort', self.pid), message)
          except Exception:  # pylint: disable=broad-exception-caught
            pass
          self._die(message)

  def _first_abort(self, entries: dict):
    for j in range(self.n):
      if j != self.pid:
        message = entries.get(self.key('abort', j))
        if message is not None:
          return j, message
    return None

  def _die(self, line: str, ack: bool = False) -> None:
    self.exiting = True
    _write_line(f'{self.prefix}{line}')
    if ack:
      try:
        self.set(self.key('ack', self.pid), '1')
      except Exception:  # pylint: disable=broad-exception-caught
        pass
    exit_now(1)

  # -- the main thread ------------------------------------------------------

  def gather(self, parts: Sequence, what: str,
             timeout_s: float | None = AGREE_TIMEOUT_S,
             poll_s: float = 0.05) -> list:
    """Every process's value under ``<parts>/<process>``, once all are set.

    A peer that dies meanwhile is the watchdog's business; a peer that ended
    normally (``stopped``) without setting its value never will, and neither
    may a peer still alive after ``timeout_s`` (None: no limit).

    Raises:
      ValueError: naming the process that will not set its value.
    """
    keys = [self.key(*parts, j) for j in range(self.n)]
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    values = [None] * self.n
    while True:
      try:
        entries = self.entries()
      except Exception:  # pylint: disable=broad-exception-caught
        entries = None   # The coordinator is gone: the watchdog ends this.
      if entries is not None:
        values = [entries.get(k) for k in keys]
        if all(v is not None for v in values):
          return values
        for j, value in enumerate(values):
          if value is None and entries.get(self.key('stopped', j)):
            raise ValueError(f'process {j} ended before {what}; see its '
                             'error.')
      if deadline is not None and time.monotonic() > deadline:
        late = [str(j) for j, v in enumerate(values) if v is None]
        raise ValueError(
            f'process {", ".join(late)} did not reach {what} within '
            f'{timeout_s:.0f} s; start every process with the same command '
            '(only --process_id differs).')
      time.sleep(poll_s)

  def abort(self, message: str) -> None:
    self.aborting = True
    try:
      self.set(self.key('abort', self.pid), message)
    except Exception:  # pylint: disable=broad-exception-caught
      return        # No coordinator: the peers see that by themselves.
    deadline = time.monotonic() + ACK_S
    while time.monotonic() < deadline:
      try:
        entries = self.entries()
      except Exception:  # pylint: disable=broad-exception-caught
        return
      if all(self.silent_for(j) > 4 * BEAT_S
             or any(entries.get(self.key(kind, j)) is not None
                    for kind in ('ack', 'abort', 'stopped'))
             for j in range(self.n) if j != self.pid):
        return
      time.sleep(0.05)

  def silent_for(self, j: int) -> float:
    """Seconds since this process last saw process j's beat change."""
    now = time.monotonic()
    return now - self.beat_seen.get(j, (None, now))[1]

  def peer_problem(self, grace_s: float) -> str | None:
    """What a peer did, if anything, that explains an error seen here."""
    deadline = time.monotonic() + grace_s
    while True:
      try:
        entries = self.entries()
      except Exception:  # pylint: disable=broad-exception-caught
        return (f'lost process 0 (the coordinator at {self.address}): it '
                f'exited or was killed. {_RESUME}') if self.pid != 0 else None
      failed = self._first_abort(entries)
      if failed is not None:
        return f'process {failed[0]} failed: {failed[1]}'
      if time.monotonic() >= deadline:
        break
      time.sleep(0.1)
    # A peer killed outright left no message; its beat is the oldest, and
    # older than a live one's can be.
    silent = [j for j in sorted(self.beat_seen)
              if self.silent_for(j) > 4 * BEAT_S
              and entries.get(self.key('stopped', j)) is None]
    if silent:
      return (f'lost process {silent[0]} (it was killed, or its machine is '
              f'down). {_RESUME}')
    return None

  def finish(self) -> None:
    self.set(self.key('done', self.pid), '1')
    self.gather(['done'], 'the end of the run', timeout_s=None, poll_s=0.2)
    self.close()

  def close(self) -> None:
    if self.stop.is_set():
      return
    try:
      self.set(self.key('stopped', self.pid), '1')
    except Exception:  # pylint: disable=broad-exception-caught
      pass
    self.stop.set()
    self.thread.join(timeout=2 * BEAT_S + 1)


# What XLA says when a collective loses a peer (the exception type varies:
# a jit call raises ValueError, a transfer JaxRuntimeError).
_LOST_PEER = re.compile(r'gloo|nccl|mpi|collective|all-?reduce|all-?gather|'
                        r'connection (reset|closed|refused)|socket closed|'
                        r'unavailable', re.IGNORECASE)


class Processes:
  """The processes of a run as this one sees them; this class: one process.

  :func:`initialize` returns the handle and the caller passes it to what
  needs it (:func:`vcrnn_jax.training.train_and_evaluate`, the sweeps), so
  that no module holds the state of a run: two handles share nothing. This
  class is the run of one process (:data:`LOCAL`), which is its own chief,
  agrees with itself and has no peer to tell or to wait for; a run of
  several processes gets a subclass holding the connection and the
  watchdog. It has no state (``__slots__`` is empty), so one value serves
  every single-process run.
  """

  __slots__ = ()

  def is_chief(self) -> bool:
    """Whether this process writes the run's files (process 0)."""
    return True

  def is_multiprocess(self) -> bool:
    """Whether this is a run of several processes."""
    return False

  def agree(self, name: str, value: str) -> list[str]:
    """Every process's ``value``, in process order (a gather of strings).

    Every process of the run must call it, in the same order; ``name`` says
    what is agreed on (a process that reaches another agreement is an
    error). One process: ``[value]``.

    Raises:
      AgreedError: the processes are at different agreements.
      ValueError: a process ended, or did not arrive within
        ``AGREE_TIMEOUT_S``.
    """
    del name
    return [value]

  def check_everywhere(self, name: str, check: Callable[[], None]) -> None:
    """Runs ``check`` on every process; its first refusal stops them all.

    ``check`` raises ``ValueError`` to refuse (a workdir holding another
    run). Each process checks what it sees; the first message, in process
    order, is raised on every process as :class:`AgreedError`, so they all
    stop with the same line. One process: ``check()`` itself.

    Raises:
      ValueError: from ``check`` (:class:`AgreedError` with several
        processes).
    """
    del name
    check()

  def check_shared_folder(self, path) -> None:
    """Checks that every process sees ``path`` as one folder.

    Process 0 writes a file with a fresh token into ``path`` and every
    process looks for it (for up to 5 s, for network filesystems), then it
    is removed. Checkpoints and ``flags.json`` are written once, by process
    0, for all. Each folder is checked once per handle. One process:
    nothing to check.

    Raises:
      AgreedError: some processes do not see process 0's file.
    """
    del path

  def abort_peers(self, message: str) -> None:
    """Tells the other processes that this one failed with ``message``.

    They print ``process I failed: <message>`` and exit with status 1.
    Waits (at most ``ACK_S``) until each has read it, then returns: the
    caller exits, with :func:`exit_now` (the peers skip JAX's shutdown
    barrier). One process: does nothing.
    """
    del message

  def peer_failure(self, error: BaseException) -> str | None:
    """The failure of a peer that explains ``error`` here, as one line.

    Looks for a peer's message (:meth:`abort_peers`), a lost coordinator or
    a peer gone silent; after an error that looks like a collective losing
    its peer, for up to ``GRACE_S`` seconds (the peer may still be writing
    its message), else only at once. None if nothing explains it (or one
    process).
    """
    del error
    return None

  def exiting(self) -> bool:
    """Whether the watchdog is ending this process (print nothing more)."""
    return False

  def finish(self) -> None:
    """Waits until every process has finished, then stops the watchdog.

    Call it at the end of a successful run, on every process: a process
    that is done waits here, still watched, for the others (process 0
    writing its reports), and JAX's shutdown barrier at exit then finds
    them all. One process: does nothing.
    """

  def stop_watching(self) -> None:
    """Stops the watchdog (before an exit that every process makes)."""


# The run of one process: what every function taking a handle defaults to.
LOCAL = Processes()


class _MultiProcess(Processes):
  """A run of several processes: :class:`Processes` over a :class:`_Run`."""

  __slots__ = ('_run', '_shared_ok')

  def __init__(self, run: _Run):
    self._run = run
    # Folders check_shared_folder proved shared, as absolute paths: a sweep
    # trains many runs in subfolders of one.
    self._shared_ok: set = set()

  def is_chief(self) -> bool:
    return self._run.pid == 0

  def is_multiprocess(self) -> bool:
    return True

  def agree(self, name: str, value: str) -> list[str]:
    run = self._run
    n = next(run.counter)
    run.set(run.key('agree', n, run.pid), json.dumps([name, value]))
    got = [json.loads(v) for v in run.gather(['agree', n], name)]
    names = [g[0] for g in got]
    if len(set(names)) > 1:
      raise AgreedError(
          f'the processes are at different points ({", ".join(names)}); '
          'start every process with the same command (only --process_id '
          'differs).')
    return [g[1] for g in got]

  def check_everywhere(self, name: str, check: Callable[[], None]) -> None:
    try:
      check()
      mine = ''
    except ValueError as e:
      mine = str(e).splitlines()[0] if str(e) else type(e).__name__
    for message in self.agree(name, mine):
      if message:
        raise AgreedError(message)

  def check_shared_folder(self, path) -> None:
    path = pathlib.Path(path)
    if str(path.absolute()) in self._shared_ok:
      return
    written = ''
    if self.is_chief():
      token = uuid.uuid4().hex
      atomic_write(path / f'.shared-check-{token}', token)
      written = json.dumps([token, str(path)])
    # Process 0's token, and its name for the folder (for the message).
    token, chief_path = json.loads(
        self.agree('the shared-workdir check', written)[0])
    probe = path / f'.shared-check-{token}'
    seen = False
    deadline = time.monotonic() + 5.0
    while True:
      try:
        seen = probe.read_text() == token
      except OSError:
        seen = False
      if seen or time.monotonic() > deadline:
        break
      time.sleep(0.2)
    views = self.agree('the shared-workdir result', 'yes' if seen else 'no')
    if self.is_chief():
      try:
        probe.unlink()
      except OSError:
        pass
    blind = [str(j) for j, v in enumerate(views) if v != 'yes']
    if blind:
      raise AgreedError(
          f'process{"es" if len(blind) > 1 else ""} {", ".join(blind)} '
          f'cannot see the file process 0 wrote in its --workdir '
          f'({chief_path}): --workdir must be one folder that every process '
          'shares (a network filesystem on several machines).')
    self._shared_ok.add(str(path.absolute()))

  def abort_peers(self, message: str) -> None:
    self._run.abort(message)

  def peer_failure(self, error: BaseException) -> str | None:
    text = f'{type(error).__name__}: {error}'
    grace = GRACE_S if _LOST_PEER.search(text) else 0.0
    return self._run.peer_problem(grace)

  def exiting(self) -> bool:
    return self._run.exiting

  def finish(self) -> None:
    self._run.finish()

  def stop_watching(self) -> None:
    self._run.close()


class _Store:
  """The run's key-value store, a server in process 0 (and its own view).

  Holds the agreements, the beats and the failure messages of
  :class:`_Run`: strings under keys. JAX's coordination service has such a
  store, but jax offers no public way to reach its client, so process 0
  serves its own on an ephemeral port; the others reach it through
  :class:`_StoreClient`, authenticated with a random key. It lives as long
  as process 0 (past the end of the run, until JAX's shutdown barrier has
  seen every process).
  """

  def __init__(self):
    self._values: dict = {}
    self._lock = threading.Lock()
    self.authkey = os.urandom(32)
    self._listener = connection.Listener(('', 0), authkey=self.authkey)
    self.port = self._listener.address[1]
    threading.Thread(target=self._accept, daemon=True,
                     name='vcrnn_jax-store').start()

  def key_value_set(self, key: str, value: str,
                    allow_overwrite: bool = False) -> None:
    with self._lock:
      if not allow_overwrite and key in self._values:
        raise ValueError(f'key {key!r} is already set.')
      self._values[key] = value

  def key_value_dir_get(self, prefix: str) -> list[tuple[str, str]]:
    with self._lock:
      return [(k, v) for k, v in self._values.items() if k.startswith(prefix)]

  def _accept(self) -> None:
    while True:
      try:
        conn = self._listener.accept()
      except (OSError, EOFError, connection.AuthenticationError):
        continue    # A connection that failed or was not a peer's.
      threading.Thread(target=self._serve, args=(conn,), daemon=True,
                       name='vcrnn_jax-store-peer').start()

  def _serve(self, conn) -> None:
    with conn:
      while True:
        try:
          method, args = conn.recv()
          reply = getattr(self, method)(*args) if method in (
              'key_value_set', 'key_value_dir_get') else None
          conn.send(reply)
        except (EOFError, OSError, ValueError, TypeError):
          return    # The peer ended (or sent what no peer sends).


class _StoreClient:
  """A process's connection to process 0's :class:`_Store` (thread-safe).

  Raises an ``OSError`` or ``EOFError`` once process 0 is gone.
  """

  def __init__(self, address: tuple[str, int], authkey: bytes):
    self._conn = connection.Client(address, authkey=authkey)
    self._lock = threading.Lock()

  def _call(self, method: str, *args):
    with self._lock:
      self._conn.send((method, args))
      return self._conn.recv()

  def key_value_set(self, key: str, value: str,
                    allow_overwrite: bool = False) -> None:
    del allow_overwrite   # Every key of a run is written by one process.
    self._call('key_value_set', key, value, True)

  def key_value_dir_get(self, prefix: str) -> list[tuple[str, str]]:
    return [tuple(kv) for kv in self._call('key_value_dir_get', prefix)]


# Bytes of the store's address message (host, port and key, as JSON).
_ADDRESS_BYTES = 1024


def _open_store(host: str):
  """Process 0's :class:`_Store`, or a client of it on the other processes.

  Every process calls it at once, right after joining: process 0 sends the
  store's address and key to the others in a collective.
  """
  store = _Store() if jax.process_index() == 0 else None
  message = np.zeros(_ADDRESS_BYTES, np.int32)
  if store is not None:
    text = json.dumps([host, store.port, store.authkey.hex()]).encode()
    message[:len(text)] = np.frombuffer(text, np.uint8)
  received = np.asarray(multihost_utils.broadcast_one_to_all(message))
  if store is not None:
    return store
  text = bytes(received.astype(np.uint8).tolist()).rstrip(b'\0').decode()
  host, port, authkey = json.loads(text)
  return _StoreClient((host, port), bytes.fromhex(authkey))


def _start_timer(timeout_s: float, message: Callable[[], str]
                 ) -> threading.Event:
  """Ends the process with one line if start-up takes longer than timeout_s.

  jax's own connection timeout ends the process with a C++ fatal error and a
  stack trace; this fires first. The connection releases the GIL, so the
  timer thread runs while the main thread waits in it.
  """
  done = threading.Event()

  def watch():
    if not done.wait(timeout_s):
      _write_line(message())
      exit_now(2)

  threading.Thread(target=watch, daemon=True,
                   name='vcrnn_jax-connect-timer').start()
  return done


def initialize(coordinator_address: str | None = None,
               num_processes: int | None = None,
               process_id: int | None = None, *,
               auto: bool = False,
               timeout_s: float = CONNECT_TIMEOUT_S,
               error_prefix: str = '') -> Processes:
  """Joins a multi-process run, or does nothing for a single process.

  Must run before anything touches a JAX device. Sets the CPU collectives to
  gloo (so CPU processes can all-reduce), connects to the coordinator (process
  0 starts it), and starts the watchdog described in the module docstring.

  Args:
    coordinator_address: ``HOST:PORT`` of process 0; None with the other
      two None: one process.
    num_processes: how many processes the run has.
    process_id: this process, in ``0..num_processes-1``.
    auto: let JAX detect the three from the cluster (SLURM, Open MPI, TPU
      pods) instead.
    timeout_s: how long to wait for every process to join. Past it the
      process prints one line (``error_prefix`` and the reason) and exits
      with status 2.
    error_prefix: the start of every line this module prints before ending
      the process, e.g. ``'act_parity: error: '``.

  Returns:
    The handle of the run (:class:`Processes`), to pass to what trains:
    :data:`LOCAL` for one process.

  Raises:
    ValueError: bad or incomplete settings, or ``auto`` found no cluster.
  """
  if not _check(coordinator_address, num_processes, process_id, auto):
    return LOCAL
  if timeout_s <= 0:
    raise ValueError(f'--connect_timeout must be > 0, got {timeout_s}.')
  _use_gloo_on_cpu()
  # Its INFO lines ("Starting JAX distributed service") are not for users.
  logging.getLogger('jax._src.distributed').setLevel(logging.WARNING)
  kwargs = _initialize_kwargs(timeout_s)
  if auto:
    where = 'the coordinator JAX detected'

    def late():
      return (f'{error_prefix}the processes of this cluster job did not all '
              f'join within {timeout_s:g} s (--connect_timeout).')
    timer = _start_timer(timeout_s, late)
    try:
      jax.distributed.initialize(**kwargs)
    except (ValueError, RuntimeError) as e:
      timer.set()
      said = str(e).splitlines()[0].rstrip('.') if str(e) else type(e).__name__
      raise ValueError(
          '--distributed found no cluster job to join (JAX detects SLURM, '
          f'Open MPI and TPU pods; it said: {said}); pass '
          '--coordinator_address, --num_processes and --process_id '
          'instead.') from None
  else:
    where = coordinator_address

    def late():
      if process_id != 0 and not _reachable(coordinator_address):
        reason = (f'nothing answers at {coordinator_address}: start process '
                  '0 there with the same --coordinator_address (a HOST:PORT '
                  'of its machine that this one can reach)')
      else:
        reason = (f'not all {num_processes} processes joined at '
                  f'{coordinator_address}: start --num_processes='
                  f'{num_processes} processes, --process_id=0..'
                  f'{num_processes - 1}, with the same --coordinator_address')
      return (f'{error_prefix}process {process_id} gave up after '
              f'{timeout_s:g} s (--connect_timeout): {reason}.')
    timer = _start_timer(timeout_s, late)
    try:
      jax.distributed.initialize(coordinator_address, num_processes,
                                 process_id, **kwargs)
    except (ValueError, RuntimeError) as e:
      timer.set()
      said = str(e).splitlines()[0] if str(e) else type(e).__name__
      hint = (' (is its port taken by another program?)' if process_id == 0
              else '')
      raise ValueError(
          f'could not start process {process_id} of {num_processes} at '
          f'{coordinator_address}{hint}: {said}') from None
  count, index = jax.process_count(), jax.process_index()
  if count == 1:
    timer.set()
    return LOCAL
  # The others reach process 0's store at the coordinator's host (a cluster
  # job's: process 0's own name).
  store = _open_store(coordinator_address.rsplit(':', 1)[0].strip('[]')
                      if coordinator_address else socket.getfqdn())
  timer.set()
  run = _Run(store, index, count, where, error_prefix)
  run.thread.start()
  return _MultiProcess(run)
