"""Writing an index: group commit, the write locks, the background checkpoint, read snapshots.

:class:`GroupCommit` is the transaction half of :class:`neardup.store.sqlite.SeenIndex` (a
mixin over the index's connections, path and locks): writers of one process queue their work and
the one holding the lock commits everything queued in one transaction; writers of several
processes take a file lock; a background thread keeps the write-ahead log bounded.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import contextmanager

from ..errors import InputError, StoreError

__all__ = ["GroupCommit", "Pending", "Prepared"]


class Pending:
    """A piece of write work waiting for (or done by) a group commit."""

    __slots__ = ("work", "result", "error", "done")

    def __init__(self, work):
        self.work = work
        self.result = None
        self.error: BaseException | None = None
        self.done = False


class Prepared:
    """Sketched documents and the write that stores them (see :meth:`SeenIndex.run_prepared`)."""

    __slots__ = ("index", "work")

    def __init__(self, index, work):
        self.index = index
        self.work = work




class GroupCommit:
    """Transactions of a :class:`~neardup.store.sqlite.SeenIndex` (see the module docstring)."""

    def _store_error(self, exc: sqlite3.Error) -> StoreError:
        msg = str(exc)
        if "locked" in msg or "busy" in msg:
            return StoreError(f"index {self.path} is busy: another writer held it for more than {self.timeout:g} s")
        if "full" in msg:
            return StoreError(f"index {self.path}: the disk is full ({msg})")
        if "readonly" in msg or "read-only" in msg:
            return StoreError(f"index {self.path} is read-only ({msg}); check the file and folder permissions")
        return StoreError(f"index {self.path}: {msg}")

    # -- transactions ------------------------------------------------------------------------
    def _run_write(self, work):
        """``work(conn)`` in a write transaction, committed together with other threads' (group commit).

        Writers in this process queue their work; whoever holds the write lock runs everything
        queued so far in one transaction, each piece in its own savepoint (one failing does not
        undo the others), and commits once. Under concurrent load (the service), one commit and
        one WAL append serve many requests; alone, a call is one transaction of its own. Each
        call returns only after the transaction holding its work has committed.
        """
        item = self._run_writes([work])[0]
        if item.error is not None:
            raise item.error
        return item.result

    def _run_writes(self, works) -> list[Pending]:
        """Pieces of work queued together, in order, and run as in :meth:`_run_write`; their
        :class:`Pending` records (result or error each) once all have committed."""
        if self._checkpointer is None:
            self._start_checkpointer()
        items = [Pending(work) for work in works]
        if not items:
            return items
        with self._queue_lock:
            self._queue.extend(items)
        with self._write_lock:
            if not items[-1].done:  # the queue is run in order: the last one done means all are
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                try:
                    self._lock_file()
                except StoreError as exc:
                    for other in batch:
                        other.error, other.done = exc, True
                else:
                    try:
                        self._commit_group(batch)
                    finally:
                        self._unlock_file()
        return items

    def run_prepared(self, prepared: list) -> list:
        """Run writes made by :meth:`prepare_add` and :meth:`prepare_check_and_add` in one
        transaction (one ``COMMIT``), in order: each sees the ones before it. Returns, for each,
        what :meth:`add_many` or :meth:`check_and_add_many` would have returned, or the exception
        it would have raised (one failing does not undo the others).

        For servers: sketch each request as it comes (``prepare_*``, no lock taken), and let one
        thread commit whatever has gathered meanwhile. Returns after the commit.
        """
        for p in prepared:
            if not isinstance(p, Prepared) or p.index is not self:
                raise InputError("run_prepared takes what prepare_add or prepare_check_and_add of this index returned")
        return [item.error if item.error is not None else item.result
                for item in self._run_writes([p.work for p in prepared])]

    #: Seconds between the background checkpoints (when something was written in between).
    CHECKPOINT_SECONDS = 1.0
    #: A write-ahead log past this size is checkpointed with ``TRUNCATE`` (which waits, up to a
    #: second, for the readers of older snapshots to move on, then starts the log again from the
    #: beginning of the file): under uninterrupted writes a ``PASSIVE`` checkpoint copies what it
    #: can but the log only grows, since a reader always holds some frame.
    WAL_LIMIT_BYTES = 64 << 20

    def _start_checkpointer(self) -> None:
        with self._conns_lock:
            if self._checkpointer is None and not self._closed:
                self._checkpointer = threading.Thread(target=self._checkpoint_loop, name="neardup-checkpoint",
                                                      daemon=True)
                self._checkpointer.start()

    def _checkpoint_loop(self) -> None:
        """Copy the WAL into the database file, off the writers' path: every
        :attr:`CHECKPOINT_SECONDS` after a write, with ``PASSIVE`` (which never waits for, nor
        blocks, readers and writers; what a reader still needs is copied next time). A page
        written by many transactions in between is copied once. Writers of other processes run
        their own; the last connection to close checkpoints everything."""
        try:
            conn = sqlite3.connect(self.path, timeout=1.0, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return
        try:
            conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
            wal = self.path + "-wal"
            while not self._stop.wait(self.CHECKPOINT_SECONDS):
                if self._written:
                    self._written = False
                    # (one checkpoint at a time in this process: SQLite refuses a second one, -1)
                    with self._checkpoint_lock:
                        try:
                            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                            if os.path.exists(wal) and os.path.getsize(wal) > self.WAL_LIMIT_BYTES:
                                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                                self.truncations += 0 if busy else 1
                                if busy:
                                    self._written = True  # readers held on: try again next time
                        except sqlite3.Error:
                            self._written = True  # busy (another process checkpoints): next time
        finally:
            conn.close()

    def _lock_file(self) -> None:
        """Take the writer lock shared with other processes (``<path>-lock``, flock).

        SQLite would serialise writers of several processes by itself, but a writer that finds
        the database locked sleeps 1, 2, 5, ... up to 100 ms between retries; waiting on this
        lock instead (retried every 0.5-2 ms) keeps the latency of concurrent writers, such as
        the workers of ``neardup serve --workers N``, low. Without fcntl, or when the lock file
        cannot be created, SQLite's own locking does the job alone.
        """
        if self._flock_fd is None:
            return
        import fcntl

        deadline = time.monotonic() + self.timeout
        pause = 0.0005
        while True:
            try:
                fcntl.flock(self._flock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreError(f"index {self.path} is busy: another process held its write lock for more "
                                     f"than {self.timeout:g} s") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.002)

    def _unlock_file(self) -> None:
        if self._flock_fd is not None:
            import fcntl

            fcntl.flock(self._flock_fd, fcntl.LOCK_UN)

    def _commit_group(self, batch: list) -> None:
        # One connection does every write of this object, whichever thread leads the group: its
        # page cache and memory map stay warm, where one connection per calling thread (the
        # service's thread pool) would each fault the file in again and re-read what the
        # others changed (measured: 1.5 times the CPU per check_and_add with 2-8 threads).
        conn = None
        several = len(batch) > 1
        try:
            if self._closed:
                raise StoreError(f"the index {self.path} is closed")
            conn = self._write_conn
            if conn is None:
                conn = self._write_conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")
            for item in batch:
                if several:
                    conn.execute("SAVEPOINT work")
                try:
                    item.result = item.work(conn)
                except Exception as exc:
                    if not several:
                        raise
                    conn.execute("ROLLBACK TO work")
                    item.error = self._store_error(exc) if isinstance(exc, sqlite3.Error) else exc
                if several:
                    conn.execute("RELEASE work")
            conn.execute("COMMIT")
            self._written = True
        except BaseException as exc:
            # (the run key filter may have seen numbers of this transaction, given again after it)
            self._run_key_filter = None
            if conn is not None and conn.in_transaction:
                conn.execute("ROLLBACK")
            error = self._store_error(exc) if isinstance(exc, sqlite3.Error) else exc
            for item in batch:
                item.result, item.error = None, error
            if not isinstance(exc, Exception):
                raise
        finally:
            for item in batch:
                item.done = True

    @contextmanager
    def _read(self):
        conn = self._conn()
        try:
            conn.execute("BEGIN")
        except sqlite3.Error as exc:
            raise self._store_error(exc) from None
        try:
            yield conn
        except sqlite3.Error as exc:
            raise self._store_error(exc) from None
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")


    def checkpoint(self) -> tuple[int, int]:
        """Copy the WAL into the database file now (``PRAGMA wal_checkpoint(PASSIVE)``).

        The background thread does this every :attr:`CHECKPOINT_SECONDS` after writes; call it
        to pay for the copy at a moment of your choosing (after a bulk load, before a backup of
        the file alone). Returns (frames in the WAL, frames copied); frames that a reader still
        needs stay for the next checkpoint.
        """
        with self._write_lock, self._checkpoint_lock:
            try:
                busy, log, done = self._conn().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error as exc:
                raise self._store_error(exc) from None
        return log, done

