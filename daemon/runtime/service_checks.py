"""The service managers' own tools: systemd-analyze's verdict on a unit and its hardening
score, and whether a systemd user manager or launchctl can be reached here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

COMMAND_TIMEOUT = 30


def run_tool(*command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT,
                              stdin=subprocess.DEVNULL, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return subprocess.CompletedProcess(command, 127, "", str(error))


@dataclass
class Verdict:
    """What systemd-analyze verify said: about distilld's own unit, and about anything else."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def judge_verify(stderr: str, returncode: int, path: Path) -> Verdict:
    """systemd-analyze also loads the machine's other user units and warns about them (a socket
    path too long under a long runtime dir, say): only lines naming our unit judge it; the others
    are shown as notes. It exits 0 even for an unknown key, so any line about us is a problem."""
    names = {str(path), path.name}
    verdict = Verdict()
    for line in (line.strip() for line in stderr.splitlines()):
        if line:
            (verdict.problems if any(name in line for name in names) else verdict.notes).append(line)
    if returncode != 0 and not verdict.problems and not verdict.notes:
        verdict.problems.append(f"systemd-analyze exited {returncode}")
    return verdict


def _analyze(*args: str) -> subprocess.CompletedProcess[str] | None:
    """systemd-analyze --user with the arguments; None when the tool is not installed."""
    tool = shutil.which("systemd-analyze")
    if tool is None:
        return None
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="distilld-analyze-") as scratch:
        if not env.get("XDG_RUNTIME_DIR") or not Path(env["XDG_RUNTIME_DIR"]).is_dir():
            env["XDG_RUNTIME_DIR"] = scratch  # --user needs one, even only to verify
        return run_tool(tool, args[0], "--user", *args[1:], env=env)


def verify_systemd(path: Path) -> Verdict | None:
    """Run systemd-analyze verify on a unit; None when the tool is not installed."""
    done = _analyze("verify", "--man=no", str(path))
    return None if done is None else judge_verify(done.stderr or "", done.returncode, path)


def systemd_reachable() -> bool:
    """A user manager we can talk to (never the case in tests, whose runtime dir is a temp dir)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return bool(shutil.which("systemctl") and runtime and Path(runtime, "systemd", "private").exists())


def launchd_reachable() -> bool:
    return sys.platform == "darwin" and shutil.which("launchctl") is not None


def security_score(path: Path) -> str | None:
    """`systemd-analyze security --offline` of the instance: its exposure line, or None."""
    done = _analyze("security", "--offline=yes", "--no-pager", str(path))
    if done is None:
        return None
    for line in reversed((done.stdout or "").splitlines()):
        if "Overall exposure level" in line:
            return " ".join(line.encode("ascii", "ignore").decode().split())
    return None
