"""The reference checker (tests/oracle/distill-check-store.sh), run once per distinct input.

The oracle is a bash script that takes about a second per store; the differential and
maintenance tests ask it about the same stores run after run. Its answer depends only on the
script, the bash running it, its arguments, the environment variables it reads and the bytes of
the stores it is given, so the answer is kept under a key of exactly those: a sha256 of the
script's bytes, bash's version, the arguments with each store's path replaced by a placeholder,
those variables, and every store's tree (each entry's path, its kind, and its bytes or link
target). The same input gives the same key; any change to any of them gives another.

The answers live in pytest's cache folder (``.pytest_cache/d/oracle-verdicts``, shared by the
xdist workers, written atomically); set DISTILLD_TEST_ORACLE_CACHE=0 to run the script every time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

ORACLE = Path(__file__).resolve().parent / "oracle" / "distill-check-store.sh"
# Every variable the script reads (tests/oracle/README.md); nothing else reaches its answer.
ORACLE_VARIABLES = ("DISTILL_NOW", "SPINE_MAX_LINES", "SPINE_MAX_BYTES", "ENTRY_MAX_BYTES", "FILE_MAX_LINES",
                    "FILE_MAX_BYTES")

# Set by conftest.py at start-up to a folder under pytest's cache; None: no caching.
cache_dir: Path | None = None


@dataclass(frozen=True)
class OracleRun:
    returncode: int
    stdout: bytes
    stderr: bytes


def run_oracle(args: list[str | Path], env: dict[str, str] | None = None, timeout: float = 120) -> OracleRun:
    """``bash distill-check-store.sh ARGS`` (each Path argument a store folder), from the cache
    when this exact input was answered before. The script's own clock is read only by
    --print-catalog without DISTILL_NOW: that one is never cached."""
    environment = {**os.environ, **(env or {})}
    stores = [arg for arg in args if isinstance(arg, Path)]
    reads_the_clock = "--print-catalog" in args and "DISTILL_NOW" not in environment
    key = None if cache_dir is None or reads_the_clock else _key(args, stores, environment)
    if key is not None:
        kept = _load(key, stores)
        if kept is not None:
            return kept
    done = subprocess.run(["bash", str(ORACLE), *map(str, args)], capture_output=True, env=environment,
                          timeout=timeout, check=False)
    answer = OracleRun(done.returncode, done.stdout, done.stderr)
    if key is not None:
        _store(key, answer, stores)
    return answer


def _key(args: list[str | Path], stores: list[Path], environment: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for part in (_script_digest(), _bash_version()):
        digest.update(part.encode() + b"\0")
    placeholders = {arg: f"<store {index}>" for index, arg in enumerate(stores)}
    digest.update(json.dumps([placeholders.get(arg, arg) if isinstance(arg, Path) else arg for arg in args]).encode())
    digest.update(json.dumps({name: environment.get(name) for name in ORACLE_VARIABLES}).encode())
    for store in stores:
        digest.update(b"\0store\0" + _tree_digest(store).encode())
    return digest.hexdigest()


@functools.cache
def _script_digest() -> str:
    return hashlib.sha256(ORACLE.read_bytes()).hexdigest()


@functools.cache
def _bash_version() -> str:
    return subprocess.run(["bash", "--version"], capture_output=True, text=True, check=False).stdout.split("\n")[0]


def _tree_digest(root: Path) -> str:
    """Every entry under ``root``: its relative path, its kind, and its bytes or link target."""
    digest = hashlib.sha256()
    if not root.exists() and not root.is_symlink():
        return "missing"
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix().encode("utf-8", "surrogateescape")
            if path.is_symlink():
                entry = b"link\0" + os.readlink(path).encode("utf-8", "surrogateescape")
            elif path.is_dir():
                entry = b"dir"
            elif path.is_file():
                entry = b"file\0" + hashlib.sha256(path.read_bytes()).digest()
            else:
                entry = b"other"
            digest.update(rel + b"\0" + entry + b"\n")
    return digest.hexdigest()


def _load(key: str, stores: list[Path]) -> OracleRun | None:
    assert cache_dir is not None
    try:
        kept = json.loads((cache_dir / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    return OracleRun(kept["returncode"], _with_paths(kept["stdout"], stores), _with_paths(kept["stderr"], stores))


def _store(key: str, answer: OracleRun, stores: list[Path]) -> None:
    """Written to a temp file and renamed into place: a parallel worker reads all of it or none."""
    assert cache_dir is not None
    record = {"returncode": answer.returncode, "stdout": _without_paths(answer.stdout, stores),
              "stderr": _without_paths(answer.stderr, stores)}
    cache_dir.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=cache_dir, prefix=f".{key}.")
    with os.fdopen(handle, "w") as out:
        json.dump(record, out)
    os.replace(temp, cache_dir / f"{key}.json")


# A store's path may appear in the oracle's messages: kept as a placeholder, put back on reading.
def _without_paths(raw: bytes, stores: list[Path]) -> str:
    text = raw.decode("utf-8", "surrogateescape")
    for index, store in sorted(enumerate(stores), key=lambda pair: -len(str(pair[1]))):
        text = text.replace(str(store), f"\0store{index}\0")
    return text


def _with_paths(text: str, stores: list[Path]) -> bytes:
    for index, store in enumerate(stores):
        text = text.replace(f"\0store{index}\0", str(store))
    return text.encode("utf-8", "surrogateescape")
