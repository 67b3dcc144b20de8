"""The search index: derived, kept in the state folder, updated in increments, and rebuilt
whenever it cannot be trusted (corrupt, foreign, truncated or deleted under a running reader)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from builders import EM, healthy_store

from distilld.search.answers import find_answer, read_answer, spine_answer
from distilld.search.fingerprint import scan_stamps
from distilld.search.index import update_index
from distilld.search.session import SearchIndex, index_path


def listing(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def paths_found(answer: dict[str, object]) -> list[str]:
    return [r["path"] for r in answer["results"]]  # type: ignore[index,union-attr]


def test_the_index_lives_in_the_state_folder_and_the_store_is_untouched(tmp_path: Path,
                                                                        distilld_dirs: dict[str, Path]) -> None:
    store = healthy_store(tmp_path / "store").root
    before = listing(store)
    index = SearchIndex(store)
    answer = find_answer(index, "schema registry")
    assert paths_found(answer)[0] == "projects/kestrel.md"
    assert listing(store) == before
    assert index.path.is_file() and distilld_dirs["state"] in index.path.parents
    docs = {row[0] for row in index.current().conn.execute("SELECT path FROM docs")}
    assert docs == {"profile/rowan.md", "craft/testing.md", "craft/testing-2.md", "ops/deploy.md",
                    "projects/kestrel.md", "projects/osprey.md", "feedback/preferences.md",
                    "archive/projects/marlin.md", "archive/old-notes.md"}


def test_two_clones_with_the_same_bytes_have_the_same_fingerprint(tmp_path: Path) -> None:
    first = healthy_store(tmp_path / "one").root
    second = tmp_path / "two"
    shutil.copytree(first, second)  # new inodes and times, the same bytes
    os.utime(second / "ops/deploy.md", (1, 1))
    one, two = find_answer(SearchIndex(first), "canary"), find_answer(SearchIndex(second), "canary")
    assert one["fingerprint"] == two["fingerprint"]
    assert one == two
    (second / "ops/deploy.md").write_bytes((second / "ops/deploy.md").read_bytes() + b"\n")
    assert find_answer(SearchIndex(second), "canary")["fingerprint"] != one["fingerprint"]


def test_a_commit_changes_the_fingerprint(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    git = ["git", "-C", str(store), "-c", "user.name=Rowan", "-c", "user.email=rowan@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    index = SearchIndex(store)
    unborn = spine_answer(index)
    assert unborn["head"] == "none"
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    committed = spine_answer(index)
    assert committed["head"] == head and committed["fingerprint"] != unborn["fingerprint"]
    subprocess.run([*git, "pack-refs", "--all"], check=True)  # the ref now lives in packed-refs
    assert spine_answer(index)["fingerprint"] == committed["fingerprint"]


def test_one_changed_file_is_the_only_one_indexed_again(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    index = SearchIndex(b.root)
    current = index.current()
    b.write("projects/kestrel.md", "# Kestrel\n\n- The zeppelin topic replaced the schema registry.\n")
    state_before = scan_stamps(b.root)
    assert state_before["projects/kestrel.md"] != current.state.stamps["projects/kestrel.md"]
    from distilld.search.fingerprint import store_state

    assert update_index(current.conn, index.root, store_state(b.root)) == 1
    assert paths_found(find_answer(index, "zeppelin")) == ["projects/kestrel.md"]


def test_a_spine_edit_reaches_the_index_without_reading_the_files_again(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    index = SearchIndex(b.root)
    assert not find_answer(index, "quokka")["found"]
    spine = b.read("SPINE.md").decode().replace("canary then soak.", "canary then soak; quokka drills.")
    b.write("SPINE.md", spine)
    answer = find_answer(index, "quokka")
    assert paths_found(answer) == ["ops/deploy.md"]
    assert answer["results"][0]["matched_fields"] == ["SPINE line"]
    assert "quokka drills" in answer["results"][0]["spine_line"]


def test_a_removed_and_an_added_file(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    index = SearchIndex(b.root)
    assert paths_found(find_answer(index, "emoji commit"))[0] == "feedback/preferences.md"
    b.remove("feedback/preferences.md")
    b.tier("craft/sql.md", "# SQL\n\n- Window functions before self joins.\n", scope="SQL habits")
    assert not find_answer(index, "emoji")["found"]
    assert paths_found(find_answer(index, "window functions")) == ["craft/sql.md"]


@pytest.mark.parametrize("junk", [b"", b"not a database at all\n" * 100, b"SQLite format 3\x00" + b"\xff" * 5000])
def test_a_corrupt_index_file_is_rebuilt_never_trusted(tmp_path: Path, junk: bytes) -> None:
    store = healthy_store(tmp_path / "store").root
    path = index_path(store.resolve())
    path.parent.mkdir(parents=True)
    path.write_bytes(junk)
    index = SearchIndex(store)
    assert paths_found(find_answer(index, "schema registry"))[0] == "projects/kestrel.md"
    assert index.rebuilds == 1


def test_another_stores_index_is_rebuilt(tmp_path: Path) -> None:
    one = healthy_store(tmp_path / "one").root
    two = tmp_path / "two"
    shutil.copytree(one, two)
    (two / "projects/kestrel.md").write_text("# Kestrel\n\n- Only the heron topic now.\n")
    find_answer(SearchIndex(one), "schema")
    foreign = index_path(two.resolve())
    foreign.parent.mkdir(parents=True)
    shutil.copyfile(index_path(one.resolve()), foreign)
    index = SearchIndex(two)
    assert paths_found(find_answer(index, "heron")) == ["projects/kestrel.md"]
    assert index.rebuilds == 1


def test_an_index_deleted_or_truncated_under_a_running_reader(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    index = SearchIndex(store)
    expected = find_answer(index, "legal hold exports")
    index.path.unlink()
    assert find_answer(index, "legal hold exports") == expected
    with open(index.path, "r+b") as handle:
        handle.truncate(1024)
    assert find_answer(index, "legal hold exports") == expected
    with open(index.path, "r+b") as handle:  # garbage over the pages a reader already knows
        handle.seek(4096)
        handle.write(b"\x00" * 8192)
    assert find_answer(index, "legal hold exports") == expected


def test_a_schema_this_version_does_not_know_is_rebuilt(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    index = SearchIndex(store)
    find_answer(index, "canary")
    index.close()
    with sqlite3.connect(index.path) as conn:
        conn.execute("UPDATE meta SET value = 'distilld-search/0' WHERE key = 'schema'")
    again = SearchIndex(store)
    assert find_answer(again, "canary")["found"] and again.rebuilds == 1


def test_links_are_neither_indexed_nor_part_of_the_fingerprint(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n\n- the wombat password\n")
    index = SearchIndex(b.root)
    fingerprint = spine_answer(index)["fingerprint"]
    (b.root / "craft/link.md").symlink_to(outside)
    (b.root / "local").symlink_to(tmp_path)
    assert spine_answer(index)["fingerprint"] == fingerprint
    assert not find_answer(index, "wombat password", archived=True)["found"]
    assert "link" not in str(read_answer(index, ["craft/link.md"])["files"][0].get("text", ""))


def test_an_entry_names_its_file_under_its_spine_line(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    result = find_answer(SearchIndex(store), "schema registry")["results"][0]
    assert result["spine_line"].startswith(f"- [Kestrel](projects/kestrel.md) {EM} Kestrel ingest pipeline")
    assert result["catalog_hook"] == "Kestrel ingest pipeline"


def test_a_server_checks_folders_between_full_checks_and_a_command_checks_every_file(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    command = SearchIndex(b.root, tmp_path / "command.sqlite3")
    server = SearchIndex(b.root, tmp_path / "server.sqlite3", recheck_after=3600)
    assert not find_answer(server, "ibis")["found"]
    b.write("ops/deploy.md", b.read("ops/deploy.md") + b"- The ibis rule.\n")  # in place: no folder moves
    assert find_answer(command, "ibis")["found"]
    assert not find_answer(server, "ibis")["found"]  # within its window, as documented
    b.tier("ops/oncall.md", "# On call\n\n- The ibis pager.\n", scope="On call")  # a new file moves its folder
    assert {r["path"] for r in find_answer(server, "ibis")["results"]} == {"ops/deploy.md", "ops/oncall.md"}


def test_a_server_never_stamps_what_another_process_indexed_with_its_old_fingerprint(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    command, server = SearchIndex(b.root), SearchIndex(b.root, recheck_after=3600)
    before = find_answer(server, "canary")
    b.write("ops/deploy.md", b.read("ops/deploy.md") + b"- The ibis rule.\n")
    by_command = find_answer(command, "ibis")  # updates the index file the server reads too
    by_server = find_answer(server, "ibis")
    assert by_server == by_command and by_server["fingerprint"] != before["fingerprint"]
