"""The store's git history, read for the health report: read-only, nothing is written.

Walks the commits reachable from HEAD, oldest first. For each day with a commit that touched
SPINE.md, the last such commit's tree (SPINE.md and the tier files) is handed to a measuring
function; each commit carrying distilld's ``Distilld-Operation`` trailer is described with the
SPINE on both sides and the files it added.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, date, datetime
from pathlib import Path

import pygit2
from pygit2.enums import DeltaStatus, SortMode

from ..store.health_history import GitFacts, HistoryPoint, OperationCommit
from ..store.paths import SPINE, TIERS
from .errors import GitStoreError
from .repo import discover

TRAILER_RE = re.compile(r"^Distilld-([A-Za-z-]+): (.*)$", re.MULTILINE)
Measure = Callable[[date, str, Mapping[str, bytes]], HistoryPoint]


def _blob_id(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        return tree[path].id
    except KeyError:
        return None


def _blob(repo: pygit2.Repository, oid: pygit2.Oid | None) -> bytes | None:
    if oid is None:
        return None
    obj = repo[oid]
    return obj.data if isinstance(obj, pygit2.Blob) else None


def _walk_markdown(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> Iterator[tuple[str, bytes]]:
    for entry in tree:
        path = f"{prefix}/{entry.name}"
        obj = repo[entry.id]
        if isinstance(obj, pygit2.Tree):
            yield from _walk_markdown(repo, obj, path)
        elif isinstance(obj, pygit2.Blob) and (entry.name or "").endswith(".md"):
            yield path, obj.data


def knowledge_files(repo: pygit2.Repository, tree: pygit2.Tree) -> dict[str, bytes]:
    """SPINE.md and every Markdown file under the tiers, as the commit holds them."""
    files: dict[str, bytes] = {}
    spine = _blob(repo, _blob_id(tree, SPINE))
    if spine is not None:
        files[SPINE] = spine
    for tier in TIERS:
        try:
            sub = repo[tree[tier].id]
        except KeyError:
            continue
        if isinstance(sub, pygit2.Tree):
            files.update(_walk_markdown(repo, sub, tier))
    return files


def _day(commit: pygit2.Commit) -> date:
    return datetime.fromtimestamp(commit.commit_time, tz=UTC).date()


def _added(repo: pygit2.Repository, parent: pygit2.Commit | None, commit: pygit2.Commit) -> dict[str, bytes]:
    diff = parent.tree.diff_to_tree(commit.tree) if parent is not None else commit.tree.diff_to_tree(swap=True)
    added: dict[str, bytes] = {}
    for delta in diff.deltas:
        if delta.status == DeltaStatus.ADDED and delta.new_file.path.endswith(".md"):
            data = _blob(repo, delta.new_file.id)
            if data is not None:
                added[delta.new_file.path] = data
    return added


def read_history(store: Path, measure: Measure, since: date | None = None) -> GitFacts:
    """The facts of ``store``'s history; ``available`` False (with the reason) when it has none."""
    try:
        repo = discover(store)
    except GitStoreError as error:
        return GitFacts(False, str(error))
    if repo is None:
        return GitFacts(False, "the store is not a git repository (`distilld init` makes it one)")
    if repo.head_is_unborn:
        return GitFacts(False, "the store's repository has no commits yet")
    facts = GitFacts(True)
    head = repo.head.peel(pygit2.Commit)
    last_of_day: dict[date, pygit2.Commit] = {}
    for commit in repo.walk(head.id, SortMode.TOPOLOGICAL | SortMode.TIME | SortMode.REVERSE):
        facts.commits += 1
        day = _day(commit)
        if facts.first_commit is None or day < facts.first_commit:
            facts.first_commit = day
        parent = commit.parents[0] if commit.parents else None
        before = _blob_id(parent.tree, SPINE) if parent is not None else None
        after = _blob_id(commit.tree, SPINE)
        if before != after:
            facts.spine_commits += 1
            last_of_day[day] = commit
        trailers = dict(TRAILER_RE.findall(commit.message))
        operation = trailers.get("Operation")
        if operation:
            facts.operations.append(OperationCommit(
                commit=str(commit.id), day=day.isoformat(), operation=operation.strip(),
                pass_id=(trailers.get("Pass") or "").strip() or None,
                spine_before=_blob(repo, before), spine_after=_blob(repo, after),
                added=_added(repo, parent, commit)))
    days = sorted(last_of_day)
    if since is not None:
        baseline = [d for d in days if d <= since]
        start = baseline[-1] if baseline else None
        days = [d for d in days if start is None or d >= start]
    for day in days:
        commit = last_of_day[day]
        facts.points.append(measure(day, str(commit.id), knowledge_files(repo, commit.tree)))
    return facts
