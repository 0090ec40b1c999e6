"""A one-line progress display on standard error, only when it is a terminal."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, label: str, *, enabled: bool | None = None, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = (self.stream.isatty() if enabled is None else enabled)
        self.label = label
        self.start = self.last = time.monotonic()
        self.docs = 0
        self.bytes = 0

    def update(self, docs: int, nbytes: int = 0) -> None:
        self.docs += docs
        self.bytes += nbytes
        now = time.monotonic()
        if self.enabled and now - self.last >= 0.5:
            self.last = now
            rate = self.bytes / max(now - self.start, 1e-9) / 1e6
            self.stream.write(f"\r{self.label}: {self.docs:,} documents, {self.bytes / 1e6:,.1f} MB, {rate:,.1f} MB/s ")
            self.stream.flush()

    def stage(self, text: str) -> None:
        if self.enabled:
            self.stream.write(f"\r\x1b[K{self.label}: {text}")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
