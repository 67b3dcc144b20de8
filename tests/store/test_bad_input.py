"""Bad input: broken encodings, odd line endings, huge or unreadable files, hostile paths.

For every case: no traceback, the problem is reported (naming the file), and ``check``,
``budget`` and ``catalog --print`` write nothing: the whole tmp tree (bytes and mtimes, the
store and its surroundings) is identical before and after. Paths that fail D10 (STORE-FORMAT.md
1.10) and symlinks are reported and never read: a spy on every file-opening call proves it.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import pathlib
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from builders import EM, KESTREL_ENTRY, StoreBuilder, healthy_store

from distilld.cli import main
from distilld.policy import load_policy
from distilld.store.findings import Finding
from distilld.store.invariants import check_store
from distilld.store.snapshot import take_snapshot

LIMITS = load_policy().limits

SECRET = "ZEBRA-7731-OUTSIDE-SECRET"
GROUPS = ("C1", "C2", "C3")


# -- fixtures and helpers ------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.md").write_text(f"# {SECRET}\nlast_updated: 2026-11-01\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("DISTILLD_STORE", raising=False)
    monkeypatch.delenv("DISTILLD_POLICY", raising=False)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the store holding files with a distinctive string."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.md").write_text(f"---\nscope: {SECRET}\nlifecycle: pinned\n---\n# {SECRET}\n- {SECRET}\n")
    (out / "dir").mkdir()
    (out / "dir" / "secret.md").write_text(f"# {SECRET}\n")
    return out


@pytest.fixture
def store(tmp_path: Path) -> StoreBuilder:
    return healthy_store(tmp_path / "store")


_REAL_SCANDIR = os.scandir  # the tree walk must not show up in a ReadSpy's record


def tree_state(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``root`` (links not followed): kind, bytes or link target, mtime."""
    state: dict[str, tuple[Any, ...]] = {".": ("dir", os.lstat(root).st_mtime_ns)}
    pending = [str(root)]
    while pending:
        directory = pending.pop()
        with _REAL_SCANDIR(directory) as entries:
            children = list(entries)
        for entry in children:
            rel = os.path.relpath(entry.path, root)
            info = os.lstat(entry.path)
            if stat.S_ISLNK(info.st_mode):
                state[rel] = ("link", os.readlink(entry.path), info.st_mtime_ns)
            elif stat.S_ISDIR(info.st_mode):
                state[rel] = ("dir", info.st_mtime_ns)
                pending.append(entry.path)
            else:
                with io.FileIO(entry.path) as handle:
                    state[rel] = ("file", handle.readall(), info.st_mtime_ns, info.st_mode)
    return state


def findings(root: Path) -> list[Finding]:
    return check_store(take_snapshot(root), LIMITS)


def fails(found: list[Finding], group: str | None = None) -> list[str]:
    return [f.message for f in found if f.severity == "fail" and (group is None or f.group == group)]


def notes(found: list[Finding], group: str | None = None) -> list[str]:
    return [f.message for f in found if f.severity == "note" and (group is None or f.group == group)]


def verdicts(found: list[Finding]) -> dict[str, str]:
    return {g: "FAIL" if fails(found, g) else "PASS" for g in GROUPS}


READ_ONLY_COMMANDS = (
    ("check",),
    ("check", "--json"),
    ("budget",),
    ("budget", "--json"),
    ("catalog", "--print"),
    ("catalog",),
)


def run_cli(*argv: str) -> tuple[int, bytes, bytes]:
    """Run ``main`` with stdout and stderr as strict UTF-8 text streams over byte buffers.

    Like a terminal in a UTF-8 locale: text that cannot be encoded raises, and whatever the
    CLI writes to the binary stream is kept byte for byte.
    """
    out_buffer, err_buffer = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_buffer, encoding="utf-8", errors="strict", newline="", write_through=True)
    err = io.TextIOWrapper(err_buffer, encoding="utf-8", errors="strict", newline="", write_through=True)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = main(list(argv))
        out.flush()
        err.flush()
        return code, out_buffer.getvalue(), err_buffer.getvalue()
    finally:
        sys.stdout, sys.stderr = saved
        out.detach()
        err.detach()


def as_text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def exercise(tmp_path: Path, store: Path) -> dict[str, tuple[int, str, str]]:
    """Run every read-only command; none may crash or change one byte or mtime under tmp_path."""
    before = tree_state(tmp_path)
    outputs: dict[str, tuple[int, str, str]] = {}
    for command in READ_ONLY_COMMANDS:
        code, out, err = run_cli(*command, str(store))
        name = " ".join(command)
        assert b"Traceback" not in out + err, name
        assert code in (0, 1), (name, code, err)
        if command[0] != "check":
            assert code == 0, (name, err)
        outputs[name] = (code, as_text(out), as_text(err))
    assert tree_state(tmp_path) == before
    report = json.loads(outputs["check --json"][1])
    assert set(report["groups"]) == set(GROUPS)
    assert report["ok"] is (outputs["check"][0] == 0)
    json.loads(outputs["budget --json"][1])
    return outputs


def json_verdicts(outputs: dict[str, tuple[int, str, str]]) -> dict[str, str]:
    return json.loads(outputs["check --json"][1])["groups"]


class ReadSpy:
    """Records every path opened for reading or listed, through any of the usual doors."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real_open, real_os_open = builtins.open, os.open
        real_scandir, real_listdir = os.scandir, os.listdir
        real_read_bytes, real_read_text = pathlib.Path.read_bytes, pathlib.Path.read_text
        spy = self

        def _record(target: Any) -> None:
            if isinstance(target, (str, bytes, os.PathLike)):
                spy.paths.append(os.fsdecode(os.fspath(target)))

        def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            _record(file)
            return real_open(file, *args, **kwargs)

        def spy_os_open(path: Any, *args: Any, **kwargs: Any) -> Any:
            _record(path)
            return real_os_open(path, *args, **kwargs)

        def spy_scandir(path: Any = ".") -> Any:
            _record(path)
            return real_scandir(path)

        def spy_listdir(path: Any = ".") -> Any:
            _record(path)
            return real_listdir(path)

        def spy_read_bytes(self: pathlib.Path) -> bytes:
            _record(self)
            return real_read_bytes(self)

        def spy_read_text(self: pathlib.Path, *args: Any, **kwargs: Any) -> str:
            _record(self)
            return real_read_text(self, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", spy_open)
        monkeypatch.setattr(io, "open", spy_open)
        monkeypatch.setattr(os, "open", spy_os_open)
        monkeypatch.setattr(os, "scandir", spy_scandir)
        monkeypatch.setattr(os, "listdir", spy_listdir)
        monkeypatch.setattr(pathlib.Path, "read_bytes", spy_read_bytes)
        monkeypatch.setattr(pathlib.Path, "read_text", spy_read_text)

    def reads_under(self, *roots: Path) -> list[str]:
        real_roots = [os.path.realpath(r) for r in roots]
        hits = []
        for path in self.paths:
            real = os.path.realpath(path)
            if any(real == r or real.startswith(r + os.sep) for r in real_roots):
                hits.append(path)
        return hits


def text_of(b: StoreBuilder, relative: str) -> str:
    return b.read(relative).decode("utf-8")


def edit(b: StoreBuilder, relative: str, old: str, new: str) -> StoreBuilder:
    text = text_of(b, relative)
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {relative}"
    return b.write(relative, text.replace(old, new))


# -- encodings and binary content ------------------------------------------------------------------


def test_non_utf8_bytes_in_a_tier_file(tmp_path: Path, store: StoreBuilder) -> None:
    raw = store.read("projects/kestrel.md")
    store.write("projects/kestrel.md", raw + b"- caf\xe9 and \xff\xfe bytes\n")
    found = findings(store.root)
    # The byte-level rules do not care: the catalog row, caps and pointers still agree.
    assert verdicts(found) == {"C1": "PASS", "C2": "PASS", "C3": "PASS"}
    assert any("projects/kestrel.md" in m and "UTF-8" in m for m in notes(found)), notes(found)
    outputs = exercise(tmp_path, store.root)
    assert json_verdicts(outputs) == {"C1": "PASS", "C2": "PASS", "C3": "PASS"}
    assert "- projects/kestrel.md | Kestrel ingest pipeline | validated 2026-11-02\n" in outputs["catalog --print"][1]


def test_non_utf8_bytes_in_spine(tmp_path: Path, store: StoreBuilder) -> None:
    raw = store.read("SPINE.md")
    kestrel = KESTREL_ENTRY.encode()
    store.write("SPINE.md", raw.replace(kestrel, kestrel + b" caf\xe9 \xff"))
    found = findings(store.root)
    assert verdicts(found) == {"C1": "PASS", "C2": "PASS", "C3": "PASS"}
    assert any("SPINE.md" in m and "UTF-8" in m for m in notes(found, "C1")), notes(found)
    exercise(tmp_path, store.root)


def test_non_utf8_spine_entry_over_cap_is_measured_in_raw_bytes(
    tmp_path: Path, store: StoreBuilder
) -> None:
    # Invalid bytes inside the first 60 bytes of an over-long entry end up in the message.
    entry = b"- [Kestrel](projects/kestrel.md) -- \xff\xfe\xe9 " + b"k" * 400
    store.write("SPINE.md", store.read("SPINE.md").replace(KESTREL_ENTRY.encode(), entry))
    found = findings(store.root)
    assert any(m.startswith(f"entry over 400 bytes ({len(entry)}): ") for m in fails(found, "C1")), fails(found)
    outputs = exercise(tmp_path, store.root)
    assert json_verdicts(outputs)["C1"] == "FAIL"
    assert f"C1 FAIL\n    - entry over 400 bytes ({len(entry)}): - [Kestrel](projects/kestrel.md) -- " in outputs["check"][1]


def run_subprocess(extra_env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISTILLD_STORE", "DISTILLD_POLICY", "PYTHONIOENCODING")}
    env.update(extra_env)
    return subprocess.run([sys.executable, "-m", "distilld", *argv], capture_output=True, env=env, timeout=60)


# C.UTF-8 gives Python's stdout the surrogateescape handler; an ordinary UTF-8 locale such as
# en_US.UTF-8 gives it the strict one (simulated with PYTHONIOENCODING, which needs no locale).
STDOUTS = {"c-utf8-locale": {"LC_ALL": "C.UTF-8"}, "strict-utf8-terminal": {"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8:strict"}}


@pytest.mark.slow
@pytest.mark.parametrize("stdout_env", list(STDOUTS.values()), ids=list(STDOUTS))
def test_non_utf8_bytes_survive_a_real_stdout(tmp_path: Path, store: StoreBuilder, stdout_env: dict[str, str]) -> None:
    """Through a real process (real stdout encoding), invalid bytes neither crash nor vanish."""
    store.write("projects/kestrel.md", store.read("projects/kestrel.md").replace(b"ingest pipeline", b"ingest \xff pipeline"))
    entry = b"- [Kestrel](projects/kestrel.md) -- \xff " + b"k" * 400
    store.write("SPINE.md", store.read("SPINE.md").replace(KESTREL_ENTRY.encode(), entry))
    before = tree_state(tmp_path)
    printed = run_subprocess(stdout_env, "catalog", "--print", str(store.root))
    checked = run_subprocess(stdout_env, "check", str(store.root))
    assert b"Traceback" not in printed.stderr + checked.stderr, (printed.stderr + checked.stderr).decode(errors="replace")
    assert printed.returncode == 0
    # The catalog copies the scope's bytes as they are (the reference prints raw bytes).
    assert b"- projects/kestrel.md | Kestrel ingest \xff pipeline | validated 2026-11-02\n" in printed.stdout
    assert b"C1 FAIL\n    - entry over 400 bytes (" in checked.stdout
    assert tree_state(tmp_path) == before


def test_binary_tier_file_with_nul_bytes(tmp_path: Path, store: StoreBuilder) -> None:
    store.write("projects/kestrel.md", store.read("projects/kestrel.md") + b"\x00\x01\x02binary\x00\xff\n")
    found = findings(store.root)
    assert verdicts(found) == {"C1": "PASS", "C2": "PASS", "C3": "PASS"}
    assert any("projects/kestrel.md" in m and "NUL" in m for m in notes(found)), notes(found)
    exercise(tmp_path, store.root)


def test_nul_bytes_in_spine_and_evidence(tmp_path: Path, store: StoreBuilder) -> None:
    store.write("SPINE.md", store.read("SPINE.md") + b"\x00\x00\n")
    store.write("evidence/craft/testing.md", store.read("evidence/craft/testing.md") + b"\x00 trailing\n")
    found = findings(store.root)
    assert verdicts(found) == {"C1": "PASS", "C2": "PASS", "C3": "PASS"}
    assert any("SPINE.md" in m and "NUL" in m for m in notes(found, "C1"))
    assert any("evidence/craft/testing.md" in m and "NUL" in m for m in notes(found))
    exercise(tmp_path, store.root)


BOM = b"\xef\xbb\xbf"


def test_bom_hides_the_frontmatter_of_a_pinned_file(tmp_path: Path, store: StoreBuilder) -> None:
    # 1.2: frontmatter exists only if line 1 is exactly '---'. With a BOM it is not, so
    # projects/osprey.md has no 'lifecycle: pinned' any more, while its row still says pinned.
    store.write("projects/osprey.md", BOM + store.read("projects/osprey.md"))
    found = findings(store.root)
    assert fails(found) == ["catalog row says pinned but projects/osprey.md is not"]
    assert verdicts(found) == {"C1": "PASS", "C2": "FAIL", "C3": "PASS"}
    bom_notes = [m for m in notes(found) if "projects/osprey.md" in m]
    assert bom_notes and "byte-order mark" in bom_notes[0] and "frontmatter" in bom_notes[0]
    outputs = exercise(tmp_path, store.root)
    catalog = outputs["catalog --print"][1]
    # Not pinned, and the scope falls back to the first heading (the stamp is found anywhere).
    assert "- projects/osprey.md | Osprey | validated 2026-02-01\n" in catalog
    assert "byte-order mark" in outputs["check"][1]


def test_bom_before_the_catalog_line_hides_it(tmp_path: Path, store: StoreBuilder) -> None:
    lines = text_of(store, "SPINE.md").split("\n")
    catalog_line = next(line for line in lines if line.startswith("- [Catalog](CATALOG.md)"))
    rest = [line for line in lines if line != catalog_line]
    store.write("SPINE.md", BOM + ("\n".join([catalog_line, *rest])).encode())
    found = findings(store.root)
    assert "SPINE has no catalog line" in fails(found, "C1")
    assert any("SPINE.md" in m and "byte-order mark" in m for m in notes(found, "C1"))
    exercise(tmp_path, store.root)


# -- line endings and final newlines -----------------------------------------------------------------


def all_markdown(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.md") if p.is_file())


def test_crlf_everywhere_except_archived_bytes_passes(tmp_path: Path, store: StoreBuilder) -> None:
    for rel in all_markdown(store.root):
        if rel.startswith("archive/") and rel != "archive/LEDGER.md":
            continue  # archived bytes are checksummed raw; converting them is a different test
        store.write(rel, store.read(rel).replace(b"\n", b"\r\n"))
    found = findings(store.root)
    assert fails(found) == []
    assert not any("mixes" in m for m in notes(found))
    outputs = exercise(tmp_path, store.root)
    assert json_verdicts(outputs) == {"C1": "PASS", "C2": "PASS", "C3": "PASS"}


def test_mixed_line_endings(tmp_path: Path, store: StoreBuilder) -> None:
    raw = store.read("projects/kestrel.md")
    store.write("projects/kestrel.md", raw.replace(b"\n", b"\r\n", 3))
    spine = store.read("SPINE.md")
    store.write("SPINE.md", spine.replace(b"\n", b"\r\n", 5))
    found = findings(store.root)
    assert fails(found) == []
    assert any("projects/kestrel.md" in m and "CRLF" in m for m in notes(found))
    assert any("SPINE.md" in m and "CRLF" in m for m in notes(found, "C1"))
    exercise(tmp_path, store.root)


def test_lone_cr_is_not_a_line_break(tmp_path: Path, store: StoreBuilder) -> None:
    # Counts ignore CR (tr -d '\r'): 70 CR-separated chunks on one line are one line.
    store.write("projects/kestrel.md", store.read("projects/kestrel.md") + b"\r".join([b"chunk"] * 70) + b"\n")
    found = findings(store.root)
    assert fails(found) == []
    exercise(tmp_path, store.root)


@pytest.mark.parametrize(
    "relative",
    ["SPINE.md", "CATALOG.md", "archive/LEDGER.md", "projects/kestrel.md", "evidence/craft/testing.md"],
)
def test_missing_final_newline(tmp_path: Path, store: StoreBuilder, relative: str) -> None:
    raw = store.read(relative)
    assert raw.endswith(b"\n")
    store.write(relative, raw[:-1])
    found = findings(store.root)
    assert fails(found) == []
    outputs = exercise(tmp_path, store.root)
    assert json_verdicts(outputs) == {"C1": "PASS", "C2": "PASS", "C3": "PASS"}


# -- size and shape ------------------------------------------------------------------------------------


def test_huge_tier_file_is_a_c3_finding_not_a_crash(tmp_path: Path, store: StoreBuilder) -> None:
    raw = store.read("projects/kestrel.md")
    line = b"- " + b"payload " * 12 + b"\n"
    body = line * (5_000_000 // len(line))
    store.write("projects/kestrel.md", raw + body)
    size = len(raw) + len(body)
    lines = (raw + body).count(b"\n")
    assert size > 4_900_000
    found = findings(store.root)
    assert fails(found) == [
        f"projects/kestrel.md has {lines} lines (max 60)",
        f"projects/kestrel.md is {size} bytes (max 6000; declare oversize: <reason> to exempt)",
    ]
    assert verdicts(found) == {"C1": "PASS", "C2": "PASS", "C3": "FAIL"}
    outputs = exercise(tmp_path, store.root)
    assert "payload payload" not in outputs["check"][1]


def test_unclosed_frontmatter(tmp_path: Path, store: StoreBuilder) -> None:
    text = text_of(store, "projects/kestrel.md")
    head, sep, body = text.partition("---\n\n# Kestrel")
    assert sep
    store.write("projects/kestrel.md", head + "\n# Kestrel" + body)
    found = findings(store.root)
    assert verdicts(found) == {"C1": "PASS", "C2": "PASS", "C3": "PASS"}
    assert any("projects/kestrel.md" in m and "frontmatter" in m for m in notes(found)), notes(found)
    exercise(tmp_path, store.root)


def test_block_list_read_with_is_refused_and_its_items_never_read(
    tmp_path: Path, store: StoreBuilder, outside: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    edit(store, "ops/deploy.md", "read_with: [craft/testing.md]\n",
         "read_with:\n  - craft/testing.md\n  - ../outside/secret.md\n")
    spy = ReadSpy(monkeypatch)
    outputs = exercise(tmp_path, store.root)
    found = findings(store.root)
    assert fails(found) == ["ops/deploy.md read_with must be an inline list [a.md, b.md]"]
    assert spy.reads_under(outside) == []
    assert "    - ops/deploy.md read_with must be an inline list [a.md, b.md]\n" in outputs["check"][1]


# -- hostile paths (D10) -----------------------------------------------------------------------------

BAD_FORMS = ["dotdot", "tilde", "absolute", "backslash", "colon"]


def bad_path(form: str, outside: Path) -> str:
    return {
        "dotdot": "../outside/secret.md",  # relative to the store root: really resolves outside
        "tilde": "~/secret.md",  # $HOME is tmp_path/home, which holds secret.md
        "absolute": str(outside / "secret.md"),
        "backslash": "craft\\..\\..\\outside\\secret.md",
        "colon": "C:/outside/secret.md",
    }[form]


def plant(store: StoreBuilder, where: str, path: str) -> tuple[str, str]:
    """Put ``path`` into one synced field; returns (group, expected message)."""
    if where == "spine":
        store.write("SPINE.md", store.read("SPINE.md") + f"- [Secret]({path}) {EM} must not be followed.\n".encode())
        return "C2", f"uncontained path in SPINE.md: {path}"
    if where == "read_with":
        edit(store, "ops/deploy.md", "read_with: [craft/testing.md]", f"read_with: [craft/testing.md, {path}]")
        return "C3", f"uncontained path in ops/deploy.md read_with: {path}"
    if where == "split_from":
        edit(store, "craft/testing-2.md", "split_from: craft/testing.md", f"split_from: {path}")
        return "C3", f"uncontained path in craft/testing-2.md split_from: {path}"
    if where == "ledger_from":
        store.append_ledger(f"- 2026-09-12T00:00:00Z restore | from: {path} | to: projects/marlin.md | reason: forged")
        return "C2", f"uncontained path in archive/LEDGER.md from: {path}"
    if where == "ledger_to":
        store.append_ledger(f"- 2026-09-12T00:00:00Z archive | from: projects/kestrel.md | to: {path} | reason: forged")
        return "C2", f"uncontained path in archive/LEDGER.md to: {path}"
    if where == "catalog":
        edit(store, "CATALOG.md", "## archived\n", f"- {path} | {SECRET} row\n\n## archived\n")
        return "C2", f"uncontained path in CATALOG.md: {path}"
    raise AssertionError(where)


@pytest.mark.parametrize("form", BAD_FORMS)
@pytest.mark.parametrize("where", ["spine", "read_with", "split_from", "ledger_from", "ledger_to", "catalog"])
def test_uncontained_path_is_reported_and_never_read(
    tmp_path: Path, store: StoreBuilder, outside: Path,
    monkeypatch: pytest.MonkeyPatch, where: str, form: str,
) -> None:
    path = bad_path(form, outside)
    group, message = plant(store, where, path)
    spy = ReadSpy(monkeypatch)
    found = findings(store.root)
    assert message in fails(found, group), fails(found)
    outputs = exercise(tmp_path, store.root)
    assert f"    - {message}\n" in outputs["check"][1]
    assert spy.reads_under(outside, tmp_path / "home") == []
    assert spy.reads_under(store.root / "craft"), "the spy saw no read at all"
    for name, (_, out, err) in outputs.items():
        if where == "catalog" and name.startswith("check"):
            continue  # the planted row itself carries the marker; check may quote it
        assert SECRET not in out + err, name


# -- symlinks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "link, target",
    [
        ("craft/leak.md", "outside/secret.md"),
        ("projects/ext", "outside/dir"),
        ("ops", "outside/dir"),
        ("evidence/craft/leak.md", "outside/secret.md"),
        ("archive/projects/leak.md", "outside/secret.md"),
        ("archive/LEDGER.md", "outside/secret.md"),
        ("local/SPINE.md", "outside/secret.md"),
        ("CATALOG.md", "outside/secret.md"),
        ("SPINE.md", "outside/secret.md"),
    ],
)
def test_symlink_out_of_the_store_is_reported_and_never_read(
    tmp_path: Path, store: StoreBuilder, outside: Path,
    monkeypatch: pytest.MonkeyPatch, link: str, target: str,
) -> None:
    where = store.root / link
    if where.is_dir():
        import shutil

        shutil.rmtree(where)
    elif where.exists():
        where.unlink()
    where.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(tmp_path / target, where)
    if link == "craft/leak.md":  # tempt the checker: a pointer and a read_with at the link
        store.write("SPINE.md", store.read("SPINE.md") + f"- [Leak](craft/leak.md) {EM} tempting.\n".encode())
        edit(store, "ops/deploy.md", "read_with: [craft/testing.md]", "read_with: [craft/testing.md, craft/leak.md]")
    spy = ReadSpy(monkeypatch)
    found = findings(store.root)
    assert f"symlink in store: {link}" in fails(found, "C2"), fails(found)
    outputs = exercise(tmp_path, store.root)
    assert f"    - symlink in store: {link}\n" in outputs["check"][1]
    assert spy.reads_under(outside) == []
    assert spy.reads_under(store.root / "craft"), "the spy saw no read at all"
    for name, (_, out, err) in outputs.items():
        assert SECRET not in out + err, name


# -- missing things ----------------------------------------------------------------------------------


def test_missing_spine(tmp_path: Path, store: StoreBuilder) -> None:
    store.remove("SPINE.md")
    outputs = exercise(tmp_path, store.root)
    assert outputs["check"][1].startswith("C1 FAIL\n    - SPINE.md missing\n")
    assert "SPINE.md: missing" in outputs["budget"][1]
    assert json.loads(outputs["budget --json"][1])["spine_present"] is False


@pytest.mark.parametrize(
    "command",
    [("check",), ("check", "--json"), ("budget",), ("budget", "--json"), ("catalog", "--print"), ("catalog", "--write")],
)
def test_missing_store_directory(tmp_path: Path, command: tuple[str, ...]) -> None:
    missing = tmp_path / "no" / "such-store"
    before = tree_state(tmp_path)
    code, out, err = run_cli(*command, str(missing))
    assert code == 2
    if "--json" in command:  # the error is JSON on stdout, and nothing else is said
        error = json.loads(out)
        assert error["exit"] == 2 and str(missing) in error["error"] and err == b""
        return
    assert out == b""
    lines = as_text(err).strip().splitlines()
    assert len(lines) == 1 and str(missing) in lines[0], err
    assert b"Traceback" not in err
    assert tree_state(tmp_path) == before
    assert not missing.exists()


def test_store_path_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "store.md"
    target.write_text("# not a store\n")
    code, _, err = run_cli("check", str(target))
    assert code == 2
    assert str(target) in as_text(err)
    assert b"Traceback" not in err


@pytest.mark.parametrize("relative, group", [("projects/kestrel.md", "C3"), ("SPINE.md", "C1"), ("archive/LEDGER.md", "C2")])
def test_unreadable_file_is_named(
    tmp_path: Path, store: StoreBuilder, monkeypatch: pytest.MonkeyPatch,
    relative: str, group: str,
) -> None:
    blocked = os.path.realpath(store.root / relative)
    real_read_bytes, real_open = pathlib.Path.read_bytes, builtins.open

    def read_bytes(self: pathlib.Path) -> bytes:
        if os.path.realpath(self) == blocked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_bytes(self)

    def blocked_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        # Root reads any file whatever its mode: refuse it at each door a reader may use.
        if isinstance(file, (str, pathlib.Path)) and os.path.realpath(file) == blocked:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_bytes", read_bytes)
    monkeypatch.setattr(builtins, "open", blocked_open)
    monkeypatch.setattr(io, "open", blocked_open)
    found = findings(store.root)
    named = [f for f in found if relative in f.message and ("read" in f.message or "ermission" in f.message)]
    assert named, [f.message for f in found]
    # A file that could not be read cannot pass as checked.
    assert any(f.severity == "fail" for f in named)
    outputs = exercise(tmp_path, store.root)
    report = json.loads(outputs["check --json"][1])
    assert report["ok"] is False
    assert any(relative in f["message"] for f in report["findings"])
    assert relative in outputs["check"][1]
