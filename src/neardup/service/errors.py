"""The errors of a request and their answers: :class:`UserError` (a 4xx), :class:`Busy` (503),
and :func:`error_of`, the status and body of any exception, the same on every path."""

from __future__ import annotations

import logging
import os
import re

from ..errors import MissingDependencyError, NeardupError, StoreError
from .metrics import count

__all__ = ["UserError", "Busy", "error_of", "scrubber"]

log = logging.getLogger("neardup.service")


def scrubber(index):
    """A function that takes the index file's path (and its folder) out of a message: error
    bodies go to clients, who have no business knowing the server's file system."""
    path = os.fspath(getattr(index, "path", "") or "")
    names = sorted({p for p in (path, os.path.abspath(path) if path else "", os.path.realpath(path) if path else "")
                    if p}, key=len, reverse=True)
    if not names:
        return lambda message: message
    pattern = re.compile("(?:the )?(?:index )?(?:" + "|".join(re.escape(n) for n in names) + ")")
    return lambda message: pattern.sub("the index", message)


def error_of(exc: Exception, where: str, scrub=None, metrics=None) -> tuple[int, dict, list | None]:
    """(status, body, headers) for an exception of the index, as the app's exception handlers give."""
    scrub = scrub or (lambda m: m)
    if isinstance(exc, UserError):
        count(metrics, exc.kind)
        return exc.status, {"error": exc.message}, None
    if isinstance(exc, Busy):
        return 503, {"error": str(exc)}, [(b"retry-after", b"1")]
    if isinstance(exc, StoreError):
        log.warning("store error: %s", exc)
        count(metrics, "store_busy")
        return 503, {"error": scrub(str(exc))}, [(b"retry-after", b"1")]
    if isinstance(exc, MissingDependencyError):
        count(metrics, "missing_dependency")
        return 501, {"error": scrub(str(exc))}, None
    if isinstance(exc, NeardupError):
        count(metrics, "bad_document")
        return 400, {"error": scrub(str(exc))}, None
    log.exception("internal error on %s", where, exc_info=exc)
    count(metrics, "internal")
    return 500, {"error": f"internal error ({type(exc).__name__}); see the server log"}, None



class UserError(Exception):
    """A request the client got wrong: its status, message and the kind counted in the metrics."""

    def __init__(self, status: int, message: str, kind: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind or {413: "document_too_large", 422: "batch_too_large", 404: "not_found"}.get(
            status, f"status_{status}")

    def __reduce__(self):  # raised in a batch process, re-raised here
        return (UserError, (self.status, self.message, self.kind))


class Busy(Exception):
    """A request over its time budget: 503 with Retry-After."""
