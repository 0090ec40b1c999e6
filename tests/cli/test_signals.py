"""SIGTERM stops a run cleanly: the command ends by the signal, its extraction workers end with it (they hold
the caller's pipes otherwise), and the same command again finishes the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from neardup.cli import settle_threads

pytestmark = pytest.mark.slow


def children_of(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(name))
    return out


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process tree from /proc")
def test_sigterm_ends_the_extraction_workers_and_the_run_resumes(tmp_path):
    pages = tmp_path / "pages.jsonl"
    with open(pages, "w") as fh:
        for i in range(20000):
            words = " ".join(f"w{(i * 7 + j) % 5000}" for j in range(300))
            fh.write(json.dumps({"id": str(i), "html": f"<html><body><nav>home about</nav><article><h1>Page {i}</h1>"
                                                       f"<p>{words}</p></article></body></html>"}) + "\n")
    cmd = [sys.executable, "-m", "neardup", "dedup", str(pages), "--text-field", "html", "--content", "html",
           "--jobs", "2", "-o", str(tmp_path / "out"), "--quiet"]
    # the extraction in worker processes whatever the caller's environment says, and no test hook of theirs
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_TEST_")}
    env["NEARDUP_EXTRACT_WORKERS"] = "processes"
    # Standard output is the pipe the workers must let go of; standard error goes to a file, which
    # the run can never fill while this test only watches the process tree (a pipe that nobody
    # reads stops the run once 64 kB are written to it).
    with open(tmp_path / "stderr", "w+b") as err_file:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err_file, env=env)
        workers: list[int] = []
        while not workers and proc.poll() is None:  # the extraction pool's processes, under the forkserver
            workers = [w for child in children_of(proc.pid) for w in children_of(child)]
            time.sleep(0.02)
        if not workers:
            proc.communicate()
            err_file.seek(0)
            pytest.fail(f"the run ended (exit {proc.returncode}) before its extraction workers started: "
                        f"{err_file.read()!r}")
        proc.send_signal(signal.SIGTERM)
        try:  # returns once every process holding stdout has ended; the timeout only stops a hang
            proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
            pytest.fail("after SIGTERM the extraction workers still hold the command's pipes")
        err_file.seek(0)
        err = err_file.read()
    # (a run that ended with 0 says whether it went to its end: its summary is written last)
    assert proc.returncode == -signal.SIGTERM, (err, (tmp_path / "out" / "summary.json").exists())
    assert b"neardup: terminated" in err
    assert not (tmp_path / "out" / "summary.json").exists()

    again = subprocess.run(cmd, capture_output=True, env=env)
    assert again.returncode == 0, again.stderr
    with open(tmp_path / "out" / "clusters.jsonl") as fh:
        assert sorted(int(json.loads(line)["id"]) for line in fh) == list(range(20000))


def test_settle_threads_waits_for_the_others_and_no_longer_than_told():
    go, never = threading.Event(), threading.Event()
    ending = threading.Thread(target=go.wait)
    stuck = threading.Thread(target=never.wait)
    ending.start()
    stuck.start()
    try:
        go.set()
        settle_threads(seconds=0.5)
        assert not ending.is_alive()  # joined: what it prints comes before the error line
        assert stuck.is_alive()  # a thread that does not end does not hold the command
    finally:
        never.set()
        stuck.join()


def command_with(handler: str) -> str:
    """A neardup command whose work is ``handler`` (Python source defining ``handler(args)``)."""
    return f"""
import argparse, os, signal, sys
from neardup import cli

{handler}

class Parser:
    def parse_args(self, argv):
        return argparse.Namespace(handler=handler)

cli.build_parser = Parser
sys.exit(cli.main([]))
"""


def signalled_then(ending: str) -> str:
    """A handler that sends itself SIGTERM and works on, then ``ending`` (the clause of its try)."""
    return f"""
def handler(args):
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100000):
            pass
{ending}
    return 0
"""


# Code that catches anything and carries on, as some libraries do, while a SIGTERM comes.
SWALLOWED_ON_ITS_WAY = signalled_then("    except BaseException:\n        pass")

# An error raised while the run unwinds from the signal: a pool writes to a worker that has
# already gone. A broken pipe is how a closed standard output ends a command quietly (exit 0);
# this one must not turn the signal into a clean exit.
BROKEN_PIPE_ON_THE_WAY_OUT = signalled_then("    finally:\n        raise BrokenPipeError(32, \"Broken pipe\")")


@pytest.mark.parametrize("handler", [SWALLOWED_ON_ITS_WAY, BROKEN_PIPE_ON_THE_WAY_OUT],
                         ids=["caught-on-its-way", "broken-pipe-while-unwinding"])
def test_a_sigterm_during_the_command_ends_it_by_the_signal(handler):
    done = subprocess.run([sys.executable, "-c", command_with(handler)], capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGTERM, done.stderr
    assert b"neardup: terminated" in done.stderr
