"""The service's settings: the defaults, :class:`Settings`, the options of
:func:`~neardup.service.app.create_app` checked once, :class:`ServerOptions`, how ``neardup serve``
runs the app, and the definitions of the command-line options that fill them
(:data:`SERVE_OPTIONS`)."""

from __future__ import annotations

from dataclasses import dataclass

from .._validate import check_bool, check_choice, check_float, check_int, check_text
from ..errors import ConfigError
from ..options import Option, option_table

__all__ = ["Settings", "ServerOptions", "SERVE_SETTINGS", "SERVE_OPTIONS", "LOG_LEVELS", "SERVE_ENV",
           "MAX_ID_LENGTH", "DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_BATCH", "DEFAULT_MAX_DOCUMENT_CHARS",
           "DEFAULT_MAX_DOCUMENT_TOKENS", "DEFAULT_REQUEST_TIMEOUT", "DEFAULT_BODY_TIMEOUT", "DEFAULT_HEADER_TIMEOUT",
           "DEFAULT_WORK_THREADS"]

DEFAULT_MAX_BODY_BYTES = 32 << 20
DEFAULT_MAX_BATCH = 1000
#: Longest document text, in code points after NFKC (a web page's main text is rarely 100,000).
DEFAULT_MAX_DOCUMENT_CHARS = 1 << 20
#: Most word tokens in one document: the simhash of a document costs 64 bytes per distinct word.
DEFAULT_MAX_DOCUMENT_TOKENS = 200_000
#: Seconds a request may take once its body has arrived (queueing included) before 503.
DEFAULT_REQUEST_TIMEOUT = 30.0
#: Seconds for the whole request body to arrive before 408.
DEFAULT_BODY_TIMEOUT = 30.0
#: Seconds for a request's headers to arrive (a new connection, or the next request of a
#: kept-alive one) before the connection is closed: :func:`protocol_with_header_timeout`.
DEFAULT_HEADER_TIMEOUT = 10.0
#: Threads that sketch and query for requests outside the writer (checks, batches, HTML).
DEFAULT_WORK_THREADS = 2
MAX_ID_LENGTH = 4096

SERVE_ENV = "NEARDUP_SERVE_SETTINGS"


@dataclass(frozen=True)
class Settings:
    """The options of one app (:func:`~neardup.service.app.create_app`'s keywords), checked.

    token: the bearer token every request but ``/healthz`` and ``/readyz`` must carry (None: no auth).
    max_body_bytes: larger request bodies are refused with 413, after reading at most this
        much of them.
    max_batch: most documents in one ``{"documents": [...]}`` request (more: 422, before
        the documents are validated or sketched).
    html_mode: ``"main"`` or ``"whole"``, how ``html`` bodies become text.
    close_index: close the index when the server shuts down (the app then owns it).
    resident: when the server starts, keep the index file mapped in memory
        (:meth:`SeenIndex.keep_resident`): a server's queries then do not wait for pages the
        operating system evicted while they were not read (the p99 of a large index).
    writer_process: run the fast path's writes (single-document add and check-and-add) in a
        child process of their own (:class:`~neardup.service.writer.Writer`; ``neardup serve``
        does). The index must be a file that the child can open.
    max_document_chars: the budget of one document: most code points of its text (or HTML)
        and of its text after NFKC (413 beyond).
    max_document_tokens: the budget of one document in word tokens (413 beyond).
    request_timeout: seconds a request may wait and work once its body has arrived; later,
        503 with ``Retry-After`` (a check-and-add or add may still be stored then).
    body_timeout: seconds for the whole body to arrive (408 and the connection closed).
    work_threads: threads sketching and querying for checks, batches and HTML, off the
        event loop (single-document writes go to the writer).
    batch_processes: child processes (at a lower CPU priority, ``nice`` +10) that run
        batches and HTML requests instead of the worker threads (``neardup serve`` uses
        1). Sketching a batch of 1000 pages holds a GIL for about a second; in a process of
        its own it does not hold this one's, which the event loop and the writer need for
        every single-document request. The index must be a file that the children can open.
    """

    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_batch: int = DEFAULT_MAX_BATCH
    html_mode: str = "main"
    close_index: bool = False
    resident: bool = True
    writer_process: bool = False
    max_document_chars: int = DEFAULT_MAX_DOCUMENT_CHARS
    max_document_tokens: int = DEFAULT_MAX_DOCUMENT_TOKENS
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    work_threads: int = DEFAULT_WORK_THREADS
    batch_processes: int = 0

    def __post_init__(self):
        if self.token is not None and not self.token:
            raise ConfigError("the service token must not be empty")
        check_int("max_body_bytes", self.max_body_bytes, 1, None, owner="create_app")
        check_int("max_batch", self.max_batch, 1, None, owner="create_app")
        check_int("max_document_chars", self.max_document_chars, 1, None, owner="create_app")
        check_int("max_document_tokens", self.max_document_tokens, 1, None, owner="create_app")
        check_int("work_threads", self.work_threads, 1, 1024, owner="create_app")
        check_int("batch_processes", self.batch_processes, 0, 1024, owner="create_app")
        check_bool("resident", self.resident, owner="create_app")
        check_float("request_timeout", self.request_timeout, 0.0, float("inf"), closed="neither", owner="create_app")
        check_float("body_timeout", self.body_timeout, 0.0, float("inf"), closed="neither", owner="create_app")


#: uvicorn's log levels (``neardup serve --log-level``).
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


@dataclass(frozen=True)
class ServerOptions:
    """How ``neardup serve`` runs the app with uvicorn, checked: the ``host`` address and ``port``
    it listens on, ``token_file`` (the file holding the bearer token; None: no token),
    ``header_timeout`` (seconds for a request's headers to arrive:
    :func:`~neardup.service.guard.protocol_with_header_timeout`), ``limit_concurrency`` (open
    connections and requests in progress per server process; more get 503), ``workers`` (server
    processes), ``fsync`` (every commit flushed to the disk, so that it survives a power loss, not
    only the process dying), ``access_log`` (a line per request) and ``log_level``."""

    port: int = 8000
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    limit_concurrency: int = 256
    workers: int = 1
    log_level: str = "info"
    # (after the fields above, so that their positions stay as they were)
    host: str = "127.0.0.1"
    token_file: str | None = None
    fsync: bool = False
    access_log: bool = False

    def __post_init__(self) -> None:
        check_text("host", self.host, owner="ServerOptions")
        check_int("port", self.port, 0, 65535, owner="ServerOptions")
        check_text("token_file", self.token_file, owner="ServerOptions", optional=True)
        check_bool("fsync", self.fsync, owner="ServerOptions")
        check_bool("access_log", self.access_log, owner="ServerOptions")
        check_float("header_timeout", self.header_timeout, 0.0, float("inf"), closed="neither", owner="ServerOptions")
        check_int("limit_concurrency", self.limit_concurrency, 1, None, owner="ServerOptions")
        check_int("workers", self.workers, 1, None, owner="ServerOptions")
        check_choice("log_level", self.log_level, LOG_LEVELS, owner="ServerOptions")


#: The app's settings under ``neardup serve``: batches and HTML requests in a child process.
SERVE_SETTINGS = Settings(batch_processes=1)

#: The options of ``neardup serve`` that fill :class:`Settings` (``settings.``, their defaults
#: those of :data:`SERVE_SETTINGS`) and :class:`ServerOptions` (``server.``).
SERVE_OPTIONS = option_table(
    Option(("--host",), "server.host", "ServerOptions", "host", help="address to listen on (default {default})"),
    Option(("--port",), "server.port", "ServerOptions", "port", kind=int, help="port (default {default})"),
    Option(("--token-file",), "server.token_file", "ServerOptions", "token_file", metavar="F",
           help="file holding the bearer token every request but /healthz must carry"),
    Option(("--max-body-bytes",), "settings.max_body_bytes", "create_app", "max_body_bytes", kind=int,
           help="largest request body (default 32 MiB)"),
    Option(("--max-batch",), "settings.max_batch", "create_app", "max_batch", kind=int,
           help="most documents per request (default {default})"),
    Option(("--max-document-chars",), "settings.max_document_chars", "create_app", "max_document_chars", kind=int,
           help="longest document text, in characters, also after NFKC normalization (default {default})"),
    Option(("--max-document-tokens",), "settings.max_document_tokens", "create_app", "max_document_tokens",
           kind=int, help="most word tokens in one document (default {default})"),
    Option(("--request-timeout",), "settings.request_timeout", "create_app", "request_timeout", kind=float,
           metavar="S", help="seconds a request may queue and work once its body has arrived, then 503 "
                             "(default {default})"),
    Option(("--body-timeout",), "settings.body_timeout", "create_app", "body_timeout", kind=float, metavar="S",
           help="seconds for a request body to arrive, then 408 and the connection closed (default {default})"),
    Option(("--header-timeout",), "server.header_timeout", "ServerOptions", "header_timeout", kind=float,
           metavar="S", help="seconds for a request's headers to arrive, then the connection is closed "
                             "(default {default})"),
    Option(("--limit-concurrency",), "server.limit_concurrency", "ServerOptions", "limit_concurrency", kind=int,
           metavar="N", help="most open connections and requests in progress per server process; more get 503 "
                             "(default {default})"),
    Option(("--batch-processes",), "settings.batch_processes", "create_app", "batch_processes", kind=int,
           metavar="N", help="child processes, at a lower CPU priority, that run batches and HTML requests so that "
                             "they do not hold the server's GIL (default {default}; 0: in the server's threads)"),
    Option(("--workers",), "server.workers", "ServerOptions", "workers", kind=int,
           help="server processes (default {default}); more use more cores, each with its own connections"),
    Option(("--fsync",), "server.fsync", "ServerOptions", "fsync", kind=bool,
           help="fsync every commit (survives power loss)"),
    Option(("--no-resident",), "settings.resident", "create_app", "resident", kind=bool, negate=True,
           help="do not keep the index file mapped in memory (by default the server maps the whole file, so "
                "that its pages stay cached; costs the file's size in page cache)"),
    Option(("--access-log",), "server.access_log", "ServerOptions", "access_log", kind=bool,
           help="log every request"),
    Option(("--log-level",), "server.log_level", "ServerOptions", "log_level", choices=LOG_LEVELS, help=""),
)
