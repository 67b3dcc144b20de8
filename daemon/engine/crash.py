"""Fault injection for the crash-safety tests: inert unless DISTILLD_CRASH_AT is set.

``DISTILLD_CRASH_AT=<boundary>[:<n>]`` makes the process SIGKILL itself at the n-th time (default
the first) it reaches that write boundary, so a test can prove recovery from that exact instant.
``DISTILLD_CRASH_SIGNAL=SIGINT`` sends that signal instead (a Ctrl-C at that instant).
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "DISTILLD_CRASH_AT"
_reached: dict[str, int] = {}


def crashpoint(boundary: str) -> None:
    spec = os.environ.get(CRASH_ENV)
    if not spec:
        return
    name, _, nth = spec.partition(":")
    if name != boundary:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] == int(nth or "1"):
        os.kill(os.getpid(), getattr(signal, os.environ.get("DISTILLD_CRASH_SIGNAL", "SIGKILL")))
