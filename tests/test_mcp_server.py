"""`distilld serve`: the read-only MCP server. The SDK's in-memory client drives it in this
process; a real `distilld serve` child is driven by the SDK's stdio client (slow). The CLI and
the MCP tools give the same answer for the same input (100 queries)."""

from __future__ import annotations

import json
import random
import time
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from builders import healthy_store
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from distilld.cli import main
from distilld.mcp_server import build_server
from distilld.search.session import index_path

TOOLS = {"spine", "search_knowledge", "read_knowledge", "bundle"}


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def test_every_tool_is_read_only_and_answers(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    local = store / "local/SPINE.md"

    async def run() -> None:
        async with Client(build_server(store)) as client:
            tools = (await client.list_tools()).tools
            assert {t.name for t in tools} == TOOLS
            for tool in tools:
                assert tool.annotations is not None and tool.annotations.read_only_hint is True
                assert tool.annotations.destructive_hint is False
            spine = await call(client, "spine", {})
            assert spine["spine"] == (store / "SPINE.md").read_text() and "local_spine" not in spine
            local.parent.mkdir()
            local.write_text("# Local index\n")
            assert (await call(client, "spine", {}))["local_spine"] == "# Local index\n"
            found = await call(client, "search_knowledge", {"query": "schema registry"})
            assert found["results"][0]["path"] == "projects/kestrel.md"
            read = await call(client, "read_knowledge", {"paths": ["ops/deploy.md", "../x.md"]})
            assert read["files"][0]["text"] == (store / "ops/deploy.md").read_text() and "error" in read["files"][1]
            bundle = await call(client, "bundle", {"task": "deploy canary", "budget": 500})
            assert bundle["used_tokens"] <= 500 and bundle["files"][0]["path"] == "ops/deploy.md"
            for tool, arguments in (("search_knowledge", {"query": ""}), ("search_knowledge", {"query": "x" * 100_000}),
                                    ("bundle", {"task": "deploy", "budget": 0}), ("read_knowledge", {"paths": []})):
                bad = await client.call_tool(tool, arguments)
                assert bad.is_error and "Traceback" not in bad.content[0].text  # type: ignore[union-attr]

    anyio.run(run)


def queries_for(store: Path, count: int) -> list[str]:
    """Words from the files, pairs of them, identifiers, and words no file holds."""
    rng = random.Random(87)
    words = sorted({w for p in store.rglob("*.md") for w in p.read_text(errors="replace").split()
                    if w.isalpha() and len(w) > 3})
    queries = []
    while len(queries) < count:
        kind = rng.random()
        if kind < 0.4:
            queries.append(rng.choice(words))
        elif kind < 0.8:
            queries.append(" ".join(rng.sample(words, 2)))
        else:
            queries.append(f"{rng.choice(words)} zq{rng.randint(0, 999)}x")
    return queries


@pytest.mark.slow
def test_the_cli_and_mcp_give_the_same_answers_to_100_queries(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    queries = queries_for(store, 100)
    from_cli = []
    for query in queries:
        code, answer = cli_json(capsys, "find", query, str(store), "-k", "3")
        assert code == (2 if "error" in answer else 0 if answer["found"] else 9)
        from_cli.append(answer)
    bundles = [cli_json(capsys, "bundle", q, str(store), "--budget", "700")[1] for q in queries[:10]]

    async def run() -> None:
        async with Client(build_server(store)) as client:
            for query, expected in zip(queries, from_cli):
                if "error" in expected:  # the same refusal, said the same way
                    refused = await client.call_tool("search_knowledge", {"query": query, "k": 3})
                    assert refused.is_error and expected["error"] in refused.content[0].text  # type: ignore[union-attr]
                    continue
                assert await call(client, "search_knowledge", {"query": query, "k": 3}) == expected
            for query, expected in zip(queries, bundles):
                assert await call(client, "bundle", {"task": query, "budget": 700}) == expected

    anyio.run(run)
    assert sum(a.get("found", False) for a in from_cli) > 50
    assert sum(a.get("found") is False for a in from_cli) > 5 and sum("error" in a for a in from_cli) >= 1


@pytest.mark.slow
def test_a_real_serve_process_over_stdio(tmp_path: Path, distilld_dirs: dict[str, Path],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    env = {"DISTILLD_STATE_DIR": str(distilld_dirs["state"]), "DISTILLD_CONFIG_DIR": str(distilld_dirs["config"]),
           "DISTILLD_RUNTIME_DIR": str(distilld_dirs["runtime"]), "HOME": str(tmp_path)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "distilld", "serve", str(store)], env=env)
    _, expected = cli_json(capsys, "find", "legal hold exports", str(store))

    async def run() -> None:
        async with Client(params) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            assert await call(client, "search_knowledge", {"query": "legal hold exports"}) == expected
            index = index_path(store.resolve())
            index.unlink()  # deleted under the running server
            assert await call(client, "search_knowledge", {"query": "legal hold exports"}) == expected
            with open(index, "r+b") as handle:
                handle.truncate(512)  # truncated under it
            assert await call(client, "search_knowledge", {"query": "legal hold exports"}) == expected
            (store / "projects/osprey.md").write_text("# Osprey\n\n- The walrus export rule.\n")  # edited in place
            deadline = time.monotonic() + 15  # seen within the server's recheck window (1 s)
            while True:
                moved = await call(client, "search_knowledge", {"query": "walrus"})
                if moved["found"] or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.1)
            assert moved["results"][0]["path"] == "projects/osprey.md"
            assert moved["fingerprint"] != expected["fingerprint"]
            (store / "craft/new.md").write_text("# New\n\n- The narwhal rule.\n")  # a new file: seen at once
            assert (await call(client, "search_knowledge", {"query": "narwhal"}))["found"]

    anyio.run(run)


def test_overlapping_calls_get_whole_answers(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    queries = ["schema registry", "canary soak", "legal hold", "emoji commit", "zebra quantum"] * 8

    async def run() -> None:
        async with Client(build_server(store)) as client:
            expected = {q: await call(client, "search_knowledge", {"query": q}) for q in set(queries)}
            results: dict[int, dict[str, Any]] = {}

            async def one(i: int, query: str) -> None:
                results[i] = await call(client, "search_knowledge", {"query": query})

            async with anyio.create_task_group() as group:
                for i, query in enumerate(queries):
                    group.start_soon(one, i, query)
            assert all(results[i] == expected[q] for i, q in enumerate(queries))

    anyio.run(run)
