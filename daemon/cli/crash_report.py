"""The last resort of the command line: an error nobody foresaw is one line and a file, never a
traceback on the user's terminal (issue 27). The file holds the traceback and the versions."""

from __future__ import annotations

import platform
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path


def write_crash_report(error: BaseException, argv: list[str]) -> Path | None:
    """The traceback in a file of the state folder; None if even that cannot be written."""
    from .. import __version__
    from ..locations import state_dir

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    try:
        folder = state_dir()
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"crash-{stamp}.txt"
        text = (f"distilld {__version__}, Python {platform.python_version()} on {platform.platform()}\n"
                f"command: distilld {' '.join(argv)}\n\n"
                + "".join(traceback.format_exception(type(error), error, error.__traceback__)))
        target.write_text(text, encoding="utf-8", errors="backslashreplace")
        return target
    except OSError:
        return None


def crash_line(error: BaseException, argv: list[str] | None) -> str:
    args = sys.argv[1:] if argv is None else argv
    where = write_crash_report(error, list(args))
    details = f"the details are in {where}" if where else "no crash report could be written"
    return (f"unexpected error ({type(error).__name__}: {error}); nothing more was changed; {details}: "
            "please report it")
