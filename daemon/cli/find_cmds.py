"""Finding knowledge: find, bundle, and serve (the read-only MCP server).

`find` and `bundle` print the same answer the MCP tools give (search/answers.py) with --json,
or a plain rendering of it; a query the store holds nothing on exits NOT_FOUND.
"""

from __future__ import annotations

import json
from typing import Any

import click

from ._common import emit, json_option, policy_option, store_command, store_input, store_path
from ..exits import NOT_FOUND

CLIP = 240


def _clip(text: str, limit: int = CLIP) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(answer: dict[str, Any]) -> str:
    return json.dumps(answer, indent=2, ensure_ascii=False) + "\n"


def _stamp_line(answer: dict[str, Any]) -> str:
    head = answer["head"][:12] if answer["head"] != "none" else "no git HEAD"
    return f"store fingerprint {answer['fingerprint']} ({head})\n"


def render_find(answer: dict[str, Any]) -> str:
    out: list[str] = []
    if answer["terms"]["cut"]:
        out.append(f"note: only the first {len(answer['terms']['words'])} distinct words were searched\n")
    for result in answer["results"]:
        status = " [archived]" if result["status"] == "archived" else ""
        out.append(f"{result['rank']}. {result['path']}{status}  (matched: {', '.join(result['matched_fields'])})\n")
        if result["spine_line"]:
            out.append(f"   SPINE: {_clip(result['spine_line'])}\n")
        if result["catalog_hook"]:
            out.append(f"   catalog: {_clip(result['catalog_hook'])}\n")
        if result["snippet"]:
            out.append(f"   {_clip(result['snippet'])}\n")
        if "archived" in result:
            out.append(f"   {result['archived']}\n")
    missing = answer.get("not_found")
    if missing:
        out.append(missing["message"] + "\n")
        for item in missing["archived"]:
            out.append(f"  found in the archive: {item['path']} ({item['note']})\n")
    out.append(_stamp_line(answer))
    return "".join(out)


def render_bundle(answer: dict[str, Any]) -> str:
    out = [f"# Knowledge bundle for: {_clip(str(answer['task']), 120)}\n\n",
           f"{_stamp_line(answer)}budget {answer['budget']} tokens, used {answer['used_tokens']} "
           f"(estimate: {answer['token_estimate']})\n"]
    if answer["binding"]:
        out.append("\n## Binding rules\n\n")
        out.extend(f"From {rule['path']}:\n{rule['rule']}\n\n" for rule in answer["binding"])
    for item in answer["files"]:
        why = f"read_with of {item['of']}" if item.get("of") else item["why"]
        out.append(f"\n## {item['path']} ({why}, {item['tokens']} tokens)\n\n{item['text'].rstrip()}\n")
    if answer["overflow"]:
        out.append("\n## Overflow (matched, did not fit)\n\n")
        out.extend(f"- {item['path']}: {item['kind']}, {item['tokens']} tokens\n" for item in answer["overflow"])
    if answer.get("not_found"):
        out.append("\n" + answer["not_found"]["message"] + "\n")
    return "".join(out)


@click.command()
@click.argument("query")
@store_input
@policy_option
@click.option("-k", "k", type=int, default=5, show_default=True, help="How many files at most (1-50).")
@click.option("--archived", is_flag=True, help="Rank archived files too (each says how to restore it).")
@json_option("the answer (the same the MCP tool search_knowledge gives)")
@click.pass_context
def find(ctx: click.Context, query: str, k: int, archived: bool, as_json: bool) -> None:
    """Find the knowledge files about QUERY, beyond what the SPINE names. Writes nothing in the store.

    Files are ranked by fusing the rank of their SPINE line with the rank of their own text
    (title, headings, body, index detail, evidence). When no file holds enough of the query's
    words, it says so and exits 9: an honest not-found, never a weak guess. The index is kept
    in distilld's state folder and brought up to date first.
    """
    from ..search.answers import find_answer
    from ..search.session import SearchIndex

    answer = find_answer(SearchIndex(store_path(ctx)), query, k, archived)
    emit(_json(answer) if as_json else render_find(answer), as_json)
    ctx.exit(0 if answer["found"] else NOT_FOUND)


@click.command()
@click.argument("task")
@store_input
@policy_option
@click.option("--budget", type=int, default=8000, show_default=True,
              help="Tokens at most (estimated as characters / 4).")
@json_option("the bundle (the same the MCP tool bundle gives)")
@click.pass_context
def bundle(ctx: click.Context, task: str, budget: int, as_json: bool) -> None:
    """Gather the knowledge TASK needs within a token budget, deterministically. Writes nothing in the store.

    First the binding rules ([NON-NEGOTIABLE], [DIRECTIVE]) of the files that answer the task,
    then those files whole (pinned first) with their read_with companions, then an explicit
    overflow of what matched but did not fit. Stamped with the store's fingerprint; never over
    the budget. Exits 9 when no file answers the task.
    """
    from ..search.answers import bundle_answer
    from ..search.session import SearchIndex

    answer = bundle_answer(SearchIndex(store_path(ctx)), task, budget)
    emit(_json(answer) if as_json else render_bundle(answer), as_json)
    ctx.exit(0 if answer["found"] else NOT_FOUND)


@store_command()
@click.pass_context
def serve(ctx: click.Context) -> None:
    """Serve the store read-only to agents over MCP on stdio (tools: spine, search_knowledge,
    read_knowledge, bundle).

    Needs the optional extra: pip install 'distilld[mcp]'. Register it with Claude Code:
    claude mcp add distilld -- distilld serve STORE
    """
    from ..errors import DistilldError

    try:
        from ..mcp_server import serve as run_server
    except ImportError as error:
        raise DistilldError(f"`distilld serve` needs the MCP SDK ({error.name or 'mcp'} is missing): "
                            "pip install 'distilld[mcp]'") from None
    from ..search.session import SearchIndex

    root = store_path(ctx)
    SearchIndex(root)  # a missing store is said here, before the protocol starts
    run_server(root)


COMMANDS = (find, bundle, serve)
