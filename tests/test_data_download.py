"""Download and cache against a real HTTP server on 127.0.0.1.

The server serves small fixture archives. Checks success, SHA-256/size
mismatch refused with the cache left clean, an interrupted transfer, 404, an
unreachable host (offline), and that a second call is served from the cache
without a request.
"""

import hashlib
import http.server
import io
import logging
import socket
import tarfile
import threading
import zipfile

import numpy as np
import pytest

from vcrnn_jax import data
from vcrnn_jax.data import download

PTB_TEXT = {
    'ptb.train.txt': ' the cat sat \n the dog sat \n',
    'ptb.valid.txt': ' the cat \n',
    'ptb.test.txt': ' the dog \n',
    'ptb.char.train.txt': 't h e _ c a t _ s a t \n t h e _ d o g _ s a t \n ',
    'ptb.char.valid.txt': 't h e _ c a t \n ',
    'ptb.char.test.txt': 't h e _ d o g \n ',
}
TUNES = 'M:4/4\nK:maj\n=c 2 |\n\n' * 9 + 'M:6/8\nK:min\n=d |\n'


def sha(b: bytes) -> str:
  return hashlib.sha256(b).hexdigest()


def make_tgz(files: dict[str, str]) -> bytes:
  """simple-examples.tgz as published: members named './simple-examples/...'."""
  buf = io.BytesIO()
  with tarfile.open(fileobj=buf, mode='w:gz') as tf:
    for name, text in files.items():
      raw = text.encode()
      info = tarfile.TarInfo(f'./simple-examples/data/{name}')
      info.size = len(raw)
      tf.addfile(info, io.BytesIO(raw))
  return buf.getvalue()


def make_zip(files: dict[str, bytes]) -> bytes:
  buf = io.BytesIO()
  with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as zf:
    for name, raw in files.items():
      zf.writestr(name, raw)
  return buf.getvalue()


class Server:
  """Serves ``routes`` (path -> bytes); records every request path."""

  def __init__(self):
    self.routes: dict[str, bytes] = {}
    self.truncate: set[str] = set()
    self.requests: list[str] = []
    server = self

    class Handler(http.server.BaseHTTPRequestHandler):

      def do_GET(self):  # noqa: N802 (http.server's naming)
        server.requests.append(self.path)
        body = server.routes.get(self.path)
        if body is None:
          self.send_error(404, 'Not Found')
          return
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.path in server.truncate:
          # Announce the whole body, send half, hang up: a dropped connection.
          self.wfile.write(body[:len(body) // 2])
          self.wfile.flush()
          self.close_connection = True
          return
        self.wfile.write(body)

      def log_message(self, *args):
        pass

    self.httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    self.url = f'http://127.0.0.1:{self.httpd.server_address[1]}'
    self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
    self.thread.start()

  def close(self):
    self.httpd.shutdown()
    self.httpd.server_close()


@pytest.fixture(scope='module')
def server():
  s = Server()
  yield s
  s.close()


def ptb_resource(tgz_url: str) -> download.Resource:
  """The real PTB resource with the fixture files' digests."""
  real = download.RESOURCES['ptb']
  files = tuple(
      f._replace(sha256=sha(PTB_TEXT[f.path.split('/')[-1]].encode()))
      for f in real.files)
  return real._replace(url=tgz_url, files=files)


def assert_clean(cache):
  """Nothing but verified files: no temporary folders, no partial files."""
  leftovers = [p for p in cache.rglob('*') if p.name.startswith('.tmp-')]
  assert not leftovers, leftovers


def test_default_cache_dir_honours_env(monkeypatch, tmp_path):
  monkeypatch.setenv('VCRNN_JAX_DATA', str(tmp_path / 'c'))
  assert download.default_cache_dir() == tmp_path / 'c'
  monkeypatch.delenv('VCRNN_JAX_DATA')
  assert download.default_cache_dir().parts[-2:] == ('.cache', 'vcrnn_jax')


def test_success_then_cache_hit_without_request(server, tmp_path, capfd):
  server.routes['/ok/simple-examples.tgz'] = make_tgz(PTB_TEXT)
  res = ptb_resource(server.url + '/ok/simple-examples.tgz')
  cache = tmp_path / 'cache'
  before = len(server.requests)
  root = download.fetch(res, cache)
  assert root == cache and len(server.requests) == before + 1
  assert capfd.readouterr() == ('', '')  # pooch's own logging stays quiet.
  for name, text in PTB_TEXT.items():
    assert (cache / 'ptb' / name).read_text() == text
  assert_clean(cache)
  ds = data.load('ptb_word', root)
  assert ds.vocab.decode(ds.test) == ['the', 'dog', '<eos>']
  # Second call: served from the cache, the server sees no request.
  assert download.fetch(res, cache) == cache
  assert len(server.requests) == before + 1
  assert download.is_cached(res, cache)


def test_checksum_mismatch_is_refused_and_cache_stays_clean(server, tmp_path):
  # The real PTB resource pins the real files' digests; fixture files differ.
  server.routes['/fake/simple-examples.tgz'] = make_tgz(PTB_TEXT)
  cache = tmp_path / 'cache'
  with pytest.raises(
      download.ChecksumError,
      match=r'ptb/ptb\.\S+ .*has SHA-256 \w+, '
      r'expected \w+; refusing it'):
    download.fetch('ptb', cache, url=server.url + '/fake/simple-examples.tgz')
  assert not (cache / 'ptb').exists()
  assert_clean(cache)
  # A known archive digest is checked before anything is unpacked (enwik8).
  server.routes['/fake/enwik8.zip'] = make_zip({'enwik8': b'not wikipedia'})
  with pytest.raises(download.ChecksumError, match='refusing it'):
    download.fetch('enwik8', cache, url=server.url + '/fake/enwik8.zip')
  assert not (cache / 'enwik8').exists()
  assert_clean(cache)
  # Without a known size, the SHA-256 check refuses it.
  with pytest.raises(
      download.ChecksumError,
      match=r'enwik8\.zip from \S+ has SHA-256 \w+, expected 547994\w+; '
      'refusing it'):
    download.fetch(download.RESOURCES['enwik8']._replace(size=None), cache,
                   url=server.url + '/fake/enwik8.zip')
  assert_clean(cache)


def test_interrupted_transfer_leaves_nothing(server, tmp_path):
  server.routes['/cut/simple-examples.tgz'] = make_tgz(
      PTB_TEXT) + b'\0' * 50_000
  server.truncate.add('/cut/simple-examples.tgz')
  res = ptb_resource(server.url + '/cut/simple-examples.tgz')
  cache = tmp_path / 'cache'
  with pytest.raises(download.DownloadError, match='was interrupted') as e:
    download.fetch(res, cache)
  assert '\n' not in str(e.value)
  assert not (cache / 'ptb').exists()
  assert_clean(cache)


def test_404_is_a_one_line_error_with_the_fix(server, tmp_path):
  cache = tmp_path / 'cache'
  with pytest.raises(download.DownloadError, match='HTTP 404') as e:
    download.fetch('text8', cache, url=server.url + '/missing/text8.zip')
  msg = str(e.value)
  assert '\n' not in msg and 'If offline' in msg and str(cache / 'text8') in msg
  assert not (cache / 'text8').exists()
  assert_clean(cache)


def test_offline_host_unreachable(tmp_path):
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]  # closed again before the request: refused
  with pytest.raises(
      download.DownloadError, match='cannot download uci_har') as e:
    download.fetch(
        'uci_har', tmp_path, url=f'http://127.0.0.1:{port}/x.zip', timeout=5)
  assert '\n' not in str(e.value) and 'data_dir' in str(e.value)


def test_corrupt_archive_with_matching_digest_is_refused(server, tmp_path):
  junk = b'PK\x03\x04 this is not really a zip' * 10
  server.routes['/junk/text8.zip'] = junk
  res = download.RESOURCES['text8']._replace(sha256=sha(junk), size=len(junk))
  with pytest.raises(
      download.ChecksumError, match='is not a readable zip archive'):
    download.fetch(res, tmp_path, url=server.url + '/junk/text8.zip')
  assert not (tmp_path / 'text8').exists()
  assert_clean(tmp_path)


def test_missing_or_linked_member_is_refused(server, tmp_path):
  server.routes['/nomember/text8.zip'] = make_zip({'other': b'x'})
  with pytest.raises(download.ChecksumError, match="has no member 'text8'"):
    download.fetch(
        download.RESOURCES['text8']._replace(size=None), tmp_path,
        url=server.url + '/nomember/text8.zip')
  # A member that is a link could point out of the cache.
  buf = io.BytesIO()
  with tarfile.open(fileobj=buf, mode='w:gz') as tf:
    info = tarfile.TarInfo('simple-examples/data/ptb.train.txt')
    info.type, info.linkname = tarfile.SYMTYPE, '/etc/hostname'
    tf.addfile(info)
  server.routes['/link/simple-examples.tgz'] = buf.getvalue()
  # Python >= 3.12 refuses it while unpacking (tarfile's 'data' filter).
  with pytest.raises(
      download.ChecksumError, match='(has no member|not a readable).*refusing'):
    download.fetch(
        'ptb', tmp_path, url=server.url + '/link/simple-examples.tgz')
  assert not (tmp_path / 'text8').exists() and not (tmp_path / 'ptb').exists()
  assert_clean(tmp_path)


def test_unknown_scheme_is_refused_before_any_write(tmp_path, monkeypatch):
  monkeypatch.setenv('VCRNN_JAX_DATA_MIRROR', tmp_path.as_uri())
  with pytest.raises(ValueError, match="url must be .*ftp://.*got 'file:"):
    download.fetch('thesession', tmp_path / 'c')
  assert not (tmp_path / 'c').exists()


def test_zip_resource_sizes_checked(server, tmp_path):
  body = b'the quick brown fox ' * 50
  archive = make_zip({'text8': body})
  server.routes['/z/text8.zip'] = archive
  good = download.RESOURCES['text8']._replace(
      size=len(archive),
      files=(download.FileSpec('text8', 'text8/text8', sha(body), len(body)),))
  download.fetch(good, tmp_path, url=server.url + '/z/text8.zip')
  assert (tmp_path / 'text8' / 'text8').read_bytes() == body
  bad = good._replace(
      files=(download.FileSpec('text8', 'text8/text8', None, 10**8),))
  with pytest.raises(
      download.ChecksumError, match='has 1000 bytes, expected 100000000'):
    download.fetch(bad, tmp_path / 'other', url=server.url + '/z/text8.zip')
  # The real text8 entry checks the archive size (31,344,016 bytes).
  with pytest.raises(download.ChecksumError, match='expected 31344016'):
    download.fetch('text8', tmp_path / 'real', url=server.url + '/z/text8.zip')


def test_load_without_data_dir_downloads_into_cache(server, tmp_path,
                                                    monkeypatch, caplog):
  server.routes['/mirror/data_v3'] = TUNES.encode()
  monkeypatch.setenv('VCRNN_JAX_DATA', str(tmp_path / 'cache'))
  monkeypatch.setenv('VCRNN_JAX_DATA_MIRROR', server.url + '/mirror/')
  before = len(server.requests)
  with caplog.at_level(logging.WARNING, logger='vcrnn_jax.data.download'):
    ds = data.load('thesession')
  # No published digest: the download is accepted and its digest is logged.
  assert sha(TUNES.encode()) in caplog.text
  assert (tmp_path / 'cache' / 'thesession' / 'data_v3').read_text() == TUNES
  assert ds.meta['num_tunes'] == {'train': 8, 'valid': 1, 'test': 1}
  np.testing.assert_array_equal(data.load('thesession').train, ds.train)
  assert len(server.requests) == before + 1  # the second load used the cache


def test_data_dir_never_downloads(server, tmp_path, monkeypatch):
  monkeypatch.setenv('VCRNN_JAX_DATA_MIRROR', server.url + '/mirror/')
  before = len(server.requests)
  with pytest.raises(FileNotFoundError):
    data.load('thesession', tmp_path)
  assert len(server.requests) == before


def test_unknown_resource_and_cli(tmp_path, server, capsys, monkeypatch):
  with pytest.raises(ValueError, match="unknown resource 'wikitext'"):
    download.fetch('wikitext', tmp_path)
  server.routes['/cli/data_v3'] = TUNES.encode()
  monkeypatch.setenv('VCRNN_JAX_DATA_MIRROR', server.url + '/cli')
  assert download.main(['thesession', '--cache_dir', str(tmp_path)]) == 0
  assert capsys.readouterr().out.strip() == str(tmp_path)
  assert download.main(['text8', '--cache_dir',
                        str(tmp_path)]) == 1  # 404 on the mirror
  err = capsys.readouterr().err
  assert err.startswith('error: cannot download text8') and err.count('\n') == 1
