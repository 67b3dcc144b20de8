"""Folders distilld does not manage (topics/, private/ beside the tiers): init, status and check
name them; git.extra_folders syncs them as they are; they are never moved, cataloged or archived.
And check's first and last lines: a pre-1.2 store says it needs migrate; a failing one counts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from builders import FIXED_NOW, healthy_store
from gitmachines import Machine, Origin
from maintenance_fixtures import unmigrated_store

import distilld.cli as cli_module
from distilld.cli import main
from distilld.store.paths import set_extra_synced_folders


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "config"
    config.mkdir()
    for name, where in {"HOME": "home", "DISTILLD_STATE_DIR": "state", "DISTILLD_RUNTIME_DIR": "rt"}.items():
        monkeypatch.setenv(name, str(tmp_path / where))
    monkeypatch.setenv("DISTILLD_CONFIG_DIR", str(config))
    monkeypatch.delenv("DISTILLD_STORE", raising=False)
    monkeypatch.setattr(cli_module, "_now", lambda: FIXED_NOW)
    yield config
    set_extra_synced_folders(())


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def with_topics(root: Path) -> None:
    healthy_store(root)
    for name in ("a", "b", "c"):
        (root / "topics" / f"{name}.md").parent.mkdir(parents=True, exist_ok=True)
        (root / "topics" / f"{name}.md").write_text(f"---\nlast_updated: 2020-01-01\n---\n\n# {name}\n")
    (root / "private").mkdir()
    (root / "private" / "notes.md").write_text("# mine\n")


def tracked(root: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True,
                          check=True).stdout.split()


def test_check_and_status_name_every_unmanaged_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "store"
    with_topics(root)
    code, out, _ = run(capsys, "check", str(root))
    assert code == 0
    assert "note: not synced: topics/ (3 files); add it to git.extra_folders to sync it" in out
    assert "note: not synced: private/ (1 file)" in out
    _, out, _ = run(capsys, "status", str(root))
    assert "folders: not synced: topics/ (3 files)" in out


def test_init_names_them_and_does_not_track_them(tmp_path: Path, origin: Origin,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "store"
    with_topics(root)
    code, out, _ = run(capsys, "init", str(root), "--remote", origin.url)
    assert code == 0 and "note: not synced: topics/ (3 files)" in out
    assert not [p for p in tracked(root) if p.startswith(("topics/", "private/"))]


def test_extra_folders_are_synced_as_they_are(tmp_path: Path, origin: Origin, _isolated: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    (_isolated / "config.toml").write_text('[git]\nextra_folders = ["topics"]\n')
    root = tmp_path / "store"
    with_topics(root)
    code, out, _ = run(capsys, "init", str(root), "--remote", origin.url)
    assert code == 0 and "synced as it is (git.extra_folders), not maintained: topics/ (3 files)" in out
    assert {"topics/a.md", "topics/b.md", "topics/c.md"} <= set(tracked(root))
    assert not [p for p in tracked(root) if p.startswith("private/")]
    (root / "topics" / "d.md").write_text("# d\n")
    code, out, _ = run(capsys, "sync", str(root))
    assert code == 0 and "topics/d.md" in tracked(root)
    other = Machine("other", tmp_path / "other", origin)
    other.init()
    assert (other.root / "topics" / "d.md").read_text() == "# d\n"


def test_they_are_never_moved_cataloged_or_archived(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "store"
    with_topics(root)
    before = {p: p.read_bytes() for p in (root / "topics").iterdir()}
    _, catalog, _ = run(capsys, "catalog", str(root))
    assert "topics/" not in catalog and "private/" not in catalog
    run(capsys, "gc", "--apply", str(root))
    run(capsys, "compact", "--apply", str(root))
    assert {p: p.read_bytes() for p in (root / "topics").iterdir()} == before
    assert not (root / "archive" / "topics").exists()


def test_check_on_a_pre_1_2_store_says_migrate_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "old"
    unmigrated_store(root)
    code, out, _ = run(capsys, "check", str(root))
    assert out.splitlines()[0].startswith("this store needs `distilld migrate`")


def test_a_failing_check_ends_with_a_count_per_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = healthy_store(tmp_path / "store")
    b.write("ops/archive/old.md", "# old\n")
    (b.root / "SPINE.md").write_bytes(b.read("SPINE.md") + b"- [Gone](projects/gone.md) \xe2\x80\x94 x\n")
    code, out, _ = run(capsys, "check", str(b.root))
    assert code == 1
    assert out.splitlines()[-1] == "summary: C1 pass, C2 2 failing, C3 pass"
