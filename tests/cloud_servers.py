"""Cloud storage services on loopback for the input and output tests (tests/io/test_inputs.py,
tests/io/test_outputs.py): a Google Cloud Storage API (the gcp-storage-emulator package, from the
test extra) and a stand-in for the Hugging Face Hub's HTTP API (written here: the Hub's own server
is not software that can run on this machine).

Both are real HTTP servers; the command under test reaches them through the settings its users
would use: ``STORAGE_EMULATOR_HOST`` for gcsfs, ``HF_ENDPOINT`` for huggingface_hub. ``free_port``
is every test server's loopback port (the service and crash-safety tests use it too)."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import re
import socket
import threading
import urllib.parse

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------- Google Cloud Storage


@contextlib.contextmanager
def gcs_emulator(bucket: str):
    """A GCS JSON API on a loopback port holding the empty ``bucket``: ``(fs, env)``, with ``fs`` a
    gcsfs filesystem for the test's own reads and writes and ``env`` the environment a child
    ``neardup`` needs to reach it.

    gcsfs (2025.x and later) sends its bucket-layout question to a gRPC control API first
    (its "zonal and hierarchical buckets" support, on by default); an emulator serves only the
    JSON API, so ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false`` is set, as gcsfs documents for
    emulators. ``FSSPEC_GS_TOKEN=anon``: no credentials are looked for."""
    emulator = pytest.importorskip("gcp_storage_emulator.server",
                                   reason="the GCS test server is gcp-storage-emulator (the test extra)")
    gcsfs_core = pytest.importorskip("gcsfs.core", reason="gs:// needs gcsfs (pip install 'neardup[gcs]')")
    port = free_port()
    server = emulator.create_server("127.0.0.1", port, in_memory=True, default_bucket=bucket)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    env = {"STORAGE_EMULATOR_HOST": endpoint, "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false",
           "FSSPEC_GS_TOKEN": "anon", "FSSPEC_GS_PROJECT": "neardup-tests"}
    try:
        # the core class: the test process's gcsfs may have been imported with the gRPC layer on
        fs = gcsfs_core.GCSFileSystem(endpoint_url=endpoint, token="anon", project="neardup-tests",
                                      skip_instance_cache=True)
        yield fs, env
    finally:
        server.stop()


# ------------------------------------------------------------------------------- Hugging Face Hub

#: the commit every revision of the fake Hub's repositories resolves to
FAKE_COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeHub:
    """The few routes of the Hugging Face Hub's HTTP API that huggingface_hub's HfFileSystem
    (``hf://datasets/ORG/NAME/...``) calls to list and read a dataset repository:

    - ``GET /api/datasets/ORG/NAME[/revision/REV]``: the repository exists (``repo_info``);
    - ``GET /api/datasets/ORG/NAME/tree/REV[/PATH][?recursive=true]``: a folder's entries;
    - ``POST /api/datasets/ORG/NAME/paths-info/REV`` (form ``paths``): entries by path;
    - ``GET|HEAD /datasets/ORG/NAME/resolve/REV/PATH``: a file's bytes, with ``Range``.

    A stand-in for the Hub, which cannot run here: the shapes of its answers are those
    huggingface_hub parses (``RepoFile``, ``RepoFolder``, ``DatasetInfo``; errors carry the
    ``X-Error-Code`` header it turns into ``RepositoryNotFoundError``/``EntryNotFoundError``).
    ``repos`` maps ``"ORG/NAME"`` to ``{path in repo: bytes}``; ``requests`` logs every request
    line served, so a test can show the files were read through this server."""

    def __init__(self):
        self.repos: dict[str, dict[str, bytes]] = {}
        self.requests: list[str] = []
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                hub._serve(self, "GET")

            def do_HEAD(self):
                hub._serve(self, "HEAD")

            def do_POST(self):
                hub._serve(self, "POST")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    # -- answers

    @staticmethod
    def _send(handler, status: int, body: bytes = b"", headers: dict | None = None, method: str = "GET"):
        handler.send_response(status)
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if method != "HEAD":
            handler.wfile.write(body)

    def _json(self, handler, value, method="GET"):
        self._send(handler, 200, json.dumps(value).encode(), {"Content-Type": "application/json"}, method)

    def _error(self, handler, status: int, code: str, message: str, method="GET"):
        self._send(handler, status, json.dumps({"error": message}).encode(),
                   {"Content-Type": "application/json", "X-Error-Code": code, "X-Error-Message": message}, method)

    def _entries(self, repo: str, folder: str, recursive: bool) -> list[dict] | None:
        """The tree entries under ``folder`` ("" for the root), or None when it is not a folder."""
        files = self.repos[repo]
        prefix = folder.strip("/") + "/" if folder.strip("/") else ""
        if prefix and not any(p.startswith(prefix) for p in files):
            return None
        out: dict[str, dict] = {}
        for path in sorted(files):
            if not path.startswith(prefix):
                continue
            rest = path[len(prefix):].split("/")
            depth = len(rest) if recursive else 1
            for i in range(1, min(depth, len(rest) - 1) + 1):  # the folders on the way
                sub = prefix + "/".join(rest[:i])
                out.setdefault(sub, self._folder_entry(sub))
            if recursive or len(rest) == 1:
                out[path] = self._file_entry(path, files[path])
        return list(out.values())

    @staticmethod
    def _file_entry(path: str, data: bytes) -> dict:
        oid = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's blob id
        return {"type": "file", "oid": oid, "size": len(data), "path": path}

    @staticmethod
    def _folder_entry(path: str) -> dict:
        return {"type": "directory", "oid": hashlib.sha1(path.encode()).hexdigest(), "path": path}

    def _serve(self, handler, method: str):
        parts = urllib.parse.urlsplit(handler.path)
        path = urllib.parse.unquote(parts.path)
        query = urllib.parse.parse_qs(parts.query)
        self.requests.append(f"{method} {handler.path}")
        body = b""
        if method == "POST":
            body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))

        m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)(?:/revision/([^/]+))?", path)
        if m and method == "GET":
            repo = m.group(1)
            if repo not in self.repos:
                return self._error(handler, 404, "RepoNotFound", f"Repository {repo} not found")
            return self._json(handler, {"id": repo, "author": repo.split("/")[0], "sha": FAKE_COMMIT,
                                        "private": False, "disabled": False, "gated": False,
                                        "downloads": 0, "likes": 0, "tags": [],
                                        "siblings": [{"rfilename": p} for p in sorted(self.repos[repo])]})
        m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?", path)
        if m and method == "GET":
            repo, folder = m.group(1), m.group(3) or ""
            if repo not in self.repos:
                return self._error(handler, 404, "RepoNotFound", f"Repository {repo} not found")
            entries = self._entries(repo, folder, query.get("recursive", ["false"])[0].lower() == "true")
            if entries is None:
                return self._error(handler, 404, "EntryNotFound", f"{folder} does not exist in {repo}")
            return self._json(handler, entries)
        m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/paths-info/([^/]+)", path)
        if m and method == "POST":
            repo = m.group(1)
            if repo not in self.repos:
                return self._error(handler, 404, "RepoNotFound", f"Repository {repo} not found")
            asked = urllib.parse.parse_qs(body.decode()).get("paths", [])
            files = self.repos[repo]
            out = []
            for p in asked:
                p = p.strip("/")
                if p in files:
                    out.append(self._file_entry(p, files[p]))
                elif any(f.startswith(p + "/") for f in files):
                    out.append(self._folder_entry(p))
            return self._json(handler, out)
        m = re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m and method in ("GET", "HEAD"):
            repo, file = m.group(1), m.group(3)
            if repo not in self.repos:
                return self._error(handler, 404, "RepoNotFound", f"Repository {repo} not found", method)
            if file not in self.repos[repo]:
                return self._error(handler, 404, "EntryNotFound", f"{file} does not exist in {repo}", method)
            data = self.repos[repo][file]
            headers = {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes",
                       "ETag": '"%s"' % self._file_entry(file, data)["oid"], "X-Repo-Commit": FAKE_COMMIT}
            rng = re.fullmatch(r"bytes=(\d+)-(\d*)", handler.headers.get("Range", "") or "")
            if rng:
                start = int(rng.group(1))
                end = min(int(rng.group(2)) + 1 if rng.group(2) else len(data), len(data))
                if start >= len(data):
                    return self._send(handler, 416, b"", {"Content-Range": f"bytes */{len(data)}"}, method)
                headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
                return self._send(handler, 206, data[start:end], headers, method)
            return self._send(handler, 200, data, headers, method)
        self._error(handler, 501, "NotImplemented", f"the fake Hub does not serve {method} {path}", method)
