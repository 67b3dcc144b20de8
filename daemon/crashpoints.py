"""Fault injection for the crash-safety tests: inert unless DISTILLD_CRASH_AT or DISTILLD_PAUSE_AT is set.

``DISTILLD_CRASH_AT=<boundary>[:<n>]`` makes the process SIGKILL itself at the n-th time (default
the first) it reaches that write boundary, so a test can prove recovery from that exact instant.
``DISTILLD_CRASH_SIGNAL=SIGINT`` sends that signal instead (a Ctrl-C at that instant).
``DISTILLD_PAUSE_AT=<boundary>[:<n>]`` with ``DISTILLD_PAUSE_FILE=<path>`` makes it stop there
instead: it creates that file and goes on once the test has removed it, so a test can change the
store under a running pass (or kill it while it waits).

It sits at the package's top level and imports the standard library only, so that both the
engine and gitstore/ (which the engine calls) reach the same boundaries without an upward import.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

CRASH_ENV = "DISTILLD_CRASH_AT"
PAUSE_ENV = "DISTILLD_PAUSE_AT"
PAUSE_FILE_ENV = "DISTILLD_PAUSE_FILE"
PAUSE_LIMIT_SECONDS = 600.0  # a test that never answers does not leave the pass waiting forever
_reached: dict[str, int] = {}


def _nth_time(spec: str, boundary: str, kind: str) -> bool:
    name, _, nth = spec.partition(":")
    if name != boundary:
        return False
    key = f"{kind}:{name}"
    _reached[key] = _reached.get(key, 0) + 1
    return _reached[key] == int(nth or "1")


def crashpoint(boundary: str) -> None:
    spec = os.environ.get(CRASH_ENV)
    if spec and _nth_time(spec, boundary, "crash"):
        chosen = getattr(signal, os.environ.get("DISTILLD_CRASH_SIGNAL", "SIGKILL"))
        if chosen == signal.SIGINT and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            # started in the background by a shell, SIGINT comes ignored: a Ctrl-C in a terminal is not
            signal.signal(signal.SIGINT, signal.default_int_handler)
        os.kill(os.getpid(), chosen)
    pause = os.environ.get(PAUSE_ENV)
    if pause and _nth_time(pause, boundary, "pause"):
        flag = Path(os.environ[PAUSE_FILE_ENV])
        flag.write_text(f"{os.getpid()} {boundary}\n")
        deadline = time.monotonic() + PAUSE_LIMIT_SECONDS
        while flag.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
