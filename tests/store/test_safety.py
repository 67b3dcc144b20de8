"""No write through a symbolic link, no name the ledger cannot hold (store/fs.py, store/safety.py).

Every folder is built in tmp_path; a ``canary`` folder beside the store stands for everything
outside it, and each test asserts that nothing there changed.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from builders import FIXED_NOW, healthy_store
from distilld.errors import UnsafeStore
from distilld.policy import load_policy
from distilld.store import fs, safety
from distilld.store.catalog import render_catalog
from distilld.store.invariants import check_store
from distilld.store.ledger import UnwritableLedgerValue, archive_event, restore_event
from distilld.store.safety import store_links, store_unsafe_names, unsafe_name_reason
from distilld.store.snapshot import take_snapshot

LIMITS = load_policy().limits


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    store, canary = tmp_path / "store", tmp_path / "canary"
    healthy_store(store)
    canary.mkdir()
    (canary / "keep.md").write_bytes(b"outside\n")
    return store, canary


def listing(folder: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for directory, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(directory, name)
            out[str(path.relative_to(folder))] = (f"-> {os.readlink(path)}" if path.is_symlink()
                                                  else b"" if path.is_dir() else path.read_bytes())
    return out


# -- the writer refuses links, component by component -----------------------------------------

@pytest.mark.parametrize("write", [
    lambda p: fs.atomic_write(p, b"x\n"),
    lambda p: fs.append_line(p, "- x"),
    lambda p: fs.append_bytes(p, b"x\n"),
    lambda p: fs.write_text_keeping_endings(p, "x\n"),
    lambda p: fs.copy_exact(p.parents[1] / "ops/deploy.md", p),
])
def test_a_linked_folder_on_the_way_is_refused_naming_link_and_target(layout: tuple[Path, Path], write) -> None:
    store, canary = layout
    (canary / "projects").mkdir()
    os.rename(store / "archive/projects", canary / "projects" / "moved")
    (store / "archive/projects").symlink_to(canary / "projects" / "moved")
    before = listing(canary)
    with fs.confined_to(store), pytest.raises(UnsafeStore) as refused:
        write(store / "archive/projects/new.md")
    assert f"{store}/archive/projects is a symbolic link (to {canary}/projects/moved)" in str(refused.value)
    assert listing(canary) == before


def test_a_link_in_place_of_the_file_is_refused(layout: tuple[Path, Path]) -> None:
    store, canary = layout
    (store / "archive/LEDGER.md").unlink()
    (store / "archive/LEDGER.md").symlink_to(canary / "keep.md")
    with fs.confined_to(store):
        for write in (lambda: fs.append_line(store / "archive/LEDGER.md", "- line"),
                      lambda: fs.atomic_write(store / "archive/LEDGER.md", b"x")):
            with pytest.raises(UnsafeStore, match="LEDGER.md is a symbolic link"):
                write()
    assert (canary / "keep.md").read_bytes() == b"outside\n"
    assert (store / "archive/LEDGER.md").is_symlink()


def test_a_move_never_lands_on_a_planted_link(layout: tuple[Path, Path]) -> None:
    store, canary = layout
    (store / "archive/projects/kestrel.md").symlink_to(canary / "kestrel.md")
    with fs.confined_to(store), pytest.raises(FileExistsError):
        fs.move_exact(store / "projects/kestrel.md", store / "archive/projects/kestrel.md")
    assert not (canary / "kestrel.md").exists()
    assert (store / "projects/kestrel.md").is_file()


def test_a_linked_source_is_not_moved(layout: tuple[Path, Path]) -> None:
    store, canary = layout
    (store / "projects/alias.md").symlink_to(canary / "keep.md")
    with fs.confined_to(store), pytest.raises(UnsafeStore):
        fs.move_exact(store / "projects/alias.md", store / "archive/projects/alias.md")


@pytest.mark.parametrize("escape", ["../canary/new.md", "projects/../../canary/new.md"])
def test_a_confined_write_outside_the_root_is_refused(layout: tuple[Path, Path], escape: str) -> None:
    store, canary = layout
    with fs.confined_to(store), pytest.raises(UnsafeStore, match="outside the store"):
        fs.atomic_write(store / escape, b"x")
    with fs.confined_to(store), pytest.raises(UnsafeStore, match="outside the store"):
        fs.atomic_write(canary / "abs.md", b"x")
    assert sorted(p.name for p in canary.iterdir()) == ["keep.md"]


def test_creating_folders_goes_through_no_link(layout: tuple[Path, Path]) -> None:
    store, canary = layout
    (store / "data").symlink_to(canary)
    with fs.confined_to(store), pytest.raises(UnsafeStore, match="data is a symbolic link"):
        fs.atomic_write(store / "data/gc-manifests/x.json", b"{}")
    assert not (canary / "gc-manifests").exists()


def test_unconfined_writes_still_work_and_leave_no_temp(tmp_path: Path) -> None:
    fs.atomic_write(tmp_path / "a/b/c.txt", b"one\n", mode=0o600)
    fs.append_line(tmp_path / "a/b/c.txt", "two")
    assert (tmp_path / "a/b/c.txt").read_bytes() == b"one\ntwo\n"
    assert oct((tmp_path / "a/b/c.txt").stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in (tmp_path / "a/b").iterdir()] == ["c.txt"]


def test_temp_names_carry_the_pid_and_match_the_sweep_pattern() -> None:
    name = fs.temp_name("SPINE.md")
    match = fs.TEMP_RE.match(name)
    assert match is not None and int(match.group(1)) == os.getpid()


def test_append_line_refuses_a_line_break(tmp_path: Path) -> None:
    for line in ("- a\nb", "- a\rb"):
        with pytest.raises(ValueError, match="line break"):
            fs.append_line(tmp_path / "LEDGER.md", line)
    assert not (tmp_path / "LEDGER.md").exists()


# -- the pre-pass scan ----------------------------------------------------------------------------

@pytest.mark.parametrize("folder", ["projects", "craft", "archive", "archive/projects", "evidence",
                                    "evidence/craft", "inbox", "data", "data/gc-manifests", "local",
                                    "local/craft", "backup", "backup/pre-migrate"])
def test_every_linked_managed_folder_is_found(layout: tuple[Path, Path], folder: str) -> None:
    store, canary = layout
    path = store / folder
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        os.rename(path, canary / "moved")
    else:
        (canary / "moved").mkdir()
    path.symlink_to(canary / "moved")
    assert [(link.path, link.target) for link in store_links(store)] == [(folder, str(canary / "moved"))]


def test_linked_files_count_in_archive_and_data_only(layout: tuple[Path, Path]) -> None:
    store, canary = layout
    (store / "archive/projects/x.md").symlink_to(canary / "keep.md")
    (store / "craft/alias.md").symlink_to(canary / "keep.md")
    (store / "CATALOG.md").unlink()
    (store / "CATALOG.md").symlink_to(canary / "keep.md")
    assert sorted(link.path for link in store_links(store)) == ["CATALOG.md", "archive/projects/x.md"]


def test_a_healthy_store_has_no_links(layout: tuple[Path, Path]) -> None:
    assert store_links(layout[0]) == []


def test_a_link_whose_target_cannot_be_read_is_still_refused_and_says_why(
        layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    store, canary = layout
    (store / "inbox").symlink_to(canary)

    real_readlink = safety.os.readlink

    def unreadable(path: Any, *args: Any, **kwargs: Any) -> str:
        if isinstance(path, Path) and path.name == "inbox":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_readlink(path, *args, **kwargs)

    monkeypatch.setattr(safety.os, "readlink", unreadable)
    assert [str(link) for link in store_links(store)] == ["inbox -> (unreadable: Permission denied)"]


@pytest.mark.parametrize("error", [FileNotFoundError(errno.ENOENT, "No such file or directory"),
                                   PermissionError(errno.EACCES, "Permission denied")])
def test_a_folder_that_vanishes_or_cannot_be_read_mid_check_does_not_end_the_check(
        layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, error: OSError) -> None:
    # A folder removed between being listed and being read (an agent tidying up), or one this
    # user cannot read, is skipped; the folders after it are still looked at.
    store, canary = layout
    (store / "archive/aaa").mkdir()
    (store / "archive/zzz").mkdir()
    (store / "archive/zzz/linked.md").symlink_to(canary / "keep.md")
    real_scandir = safety.os.scandir

    def vanishing(path: Any) -> Any:  # os.scandir for everyone meanwhile: pytest lists by descriptor too
        if isinstance(path, (str, Path)) and Path(path).name == "aaa":
            raise error
        return real_scandir(path)

    monkeypatch.setattr(safety.os, "scandir", vanishing)
    assert [link.path for link in store_links(store)] == ["archive/zzz/linked.md"]


# -- names -------------------------------------------------------------------------------------------

CONTROL = "it holds the control character {} (a line break would split a ledger line)"
OTHER_CONTROL = ("it holds the control character {} (the ledger and the catalog keep names as plain text, and "
                 "a terminal would act on it)")
NOT_UTF8 = ("it is not valid UTF-8 (the byte \\xe9): the ledger and the catalog are UTF-8 text, and a line of "
            "the append-only ledger can never be mended; rename it to UTF-8")
WINDOWS = "it holds {!r}, which Windows does not allow in a file name"
DASH = "a part of it starts with '-', which reads as a list item or an option"
TRAILING = "a part of it ends with a dot or a space, which Windows drops"
DEVICE = "{!r} is a reserved device name on Windows"


@pytest.mark.parametrize(("name", "reason"), [
    ("projects/new\nline.md", CONTROL.format("\\n")), ("projects/cr\rret.md", CONTROL.format("\\r")),
    ("projects/tab\tx.md", OTHER_CONTROL.format("\\t")), ("projects/bell\x07.md", OTHER_CONTROL.format("\\x07")),
    ("projects/del\x7f.md", OTHER_CONTROL.format("\\x7f")), ("projects/esc\x1b[2J.md", OTHER_CONTROL.format("\\x1b")),
    ("projects/caf\udce9.md", NOT_UTF8),
    ("projects/a | b.md", "it holds ' | ', the field separator of the ledger and the catalog"),
    ("projects/-dash.md", DASH), ("-top/x.md", DASH),
    *((f"projects/a{c}b.md", WINDOWS.format(c)) for c in '<>:"|?*'),
    ("projects/trail.", TRAILING), ("projects/trail ", TRAILING), ("projects/sub./x.md", TRAILING),
    *((f"projects/{n}.md", DEVICE.format(f"{n}.md"))
      for n in ("CON", "PRN", "AUX", "nul", "com1", "COM9", "LPT1", "lpt9")),
    ("projects/aux", DEVICE.format("aux")), ("projects/CON.tar.md", DEVICE.format("CON.tar.md")),
])
def test_names_the_ledger_cannot_hold_and_why(name: str, reason: str) -> None:
    assert unsafe_name_reason(name) == reason


@pytest.mark.parametrize("name", [
    "projects/café.md", "projects/数据.md", "projects/a-b.md", "projects/console.md",
    "projects/con-notes.md", "projects/x.y.md", "projects/a b.md", "projects/a|.md".replace("|", "_"),
    "projects/COM10.md", "projects/lpt10.md", "projects/COM0.md", "projects/LPT0.md",
    "projects/./x.md", "projects/../x.md",  # "." and "..": D10's to refuse, not a name's
])
def test_names_that_stay_writable(name: str) -> None:
    assert unsafe_name_reason(name) is None


def test_the_ledger_writer_refuses_line_breaks_and_unsafe_paths() -> None:
    stamp = "2026-11-30T12:00:00Z"
    with pytest.raises(UnwritableLedgerValue) as unsafe:
        archive_event(stamp, "projects/new\nline.md", "a", "b", "stale", "- [x](projects/x.md)")
    assert str(unsafe.value) == ("projects/new\\nline.md: refusing to write it into archive/LEDGER.md: it holds "
                                 "the control character \\n (a line break would split a ledger line)")
    with pytest.raises(UnwritableLedgerValue) as broken:
        archive_event(stamp, "projects/x.md", "a", "b", "stale\nsecond", "- [x](projects/x.md)")
    assert str(broken.value) == "refusing a ledger value holding a line break: 'stale\\nsecond'"
    with pytest.raises(UnwritableLedgerValue):
        archive_event(stamp, "projects/x.md", "a", "b", "stale", "- hook\r")
    with pytest.raises(UnwritableLedgerValue):
        restore_event(stamp, "projects/a | b.md", "revert", None)
    assert "\n" not in archive_event(stamp, "projects/café.md", "a", "b", "stale", "hook | pipe")
    with pytest.raises(UnwritableLedgerValue, match=r"caf\\xe9\.md: .*not valid UTF-8"):
        archive_event(stamp, "projects/caf\udce9.md", "a", "b", "stale", "hook")


def test_the_unsafe_names_status_reports_are_the_knowledge_files_of_the_store_only(layout: tuple[Path, Path]) -> None:
    store, canary = layout
    (canary / "elsewhere | x.md").write_bytes(b"# outside\n")
    (store / "craft/linked").symlink_to(canary)  # never followed: the names out there are not the store's
    for path in ("archive/projects/a | b.md", "evidence/craft/-dash.md", "inbox/a?.md", "projects/sub/CON.md",
                 "projects/.hidden/a | b.md", "projects/.a | b.md", "projects/a | b.txt", "data/a | b.md"):
        (store / path).parent.mkdir(parents=True, exist_ok=True)
        (store / path).write_bytes(b"# x\n")
    found = store_unsafe_names(store)
    assert [str(u) for u in found] == [
        "'archive/projects/a | b.md': it holds ' | ', the field separator of the ledger and the catalog",
        "'evidence/craft/-dash.md': " + DASH, "'inbox/a?.md': " + WINDOWS.format("?"),
        "'projects/sub/CON.md': " + DEVICE.format("CON.md")]


def test_check_budget_and_catalog_report_or_leave_out_unsafe_names(layout: tuple[Path, Path]) -> None:
    store, _ = layout
    (store / "projects/new\nline.md").write_bytes(b"# x\n")
    (store / "projects/a<b.md").write_bytes(b"# y\n")
    notes = [f.message for f in check_store(take_snapshot(store), LIMITS) if f.code == "unsafe-name"]
    assert len(notes) == 2 and all("rename it" in n for n in notes)
    catalog = render_catalog(take_snapshot(store), FIXED_NOW)
    assert "new\nline" not in catalog and "- projects/a<b.md |" in catalog  # a row broken by it is left out
    assert [u.path for u in store_unsafe_names(store)] == ["projects/a<b.md", "projects/new\nline.md"]
