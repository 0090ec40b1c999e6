"""``python -m neardup serve`` on loopback in a child process, for the service tests
(tests/service/test_app.py, tests/service/test_html_page_fingerprints.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import httpx

from cloud_servers import free_port


class Server:
    """``python -m neardup serve`` in a child process."""

    def __init__(self, db: str, *, token_file: str | None = None, extra: tuple = ()):
        self.db = db
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [sys.executable, "-m", "neardup", "serve", "--db", db, "--port", str(self.port),
                "--log-level", "info", *extra]
        if token_file:
            args += ["--token-file", token_file]
        self.log = open(db + ".log", "w+b")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"server exited: {self.log.read().decode(errors='replace')}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start in 60 s")
            time.sleep(0.1)

    def output(self) -> str:
        with open(self.db + ".log", "rb") as fh:
            return fh.read().decode(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode
