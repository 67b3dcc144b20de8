"""`distilld report`: the click command (kept apart from cli.py so it can move with the CLI)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from .policy import load_policy


def _write(text: str) -> None:
    data = text.encode("utf-8", "surrogateescape")
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:
        sys.stdout.write(data.decode("utf-8", "replace"))
        return
    sys.stdout.flush()
    stream.write(data)
    stream.flush()


@click.command("report")
@click.argument("store", required=False, type=click.Path(path_type=Path), metavar="[STORE]")
@click.option("--since", type=click.DateTime(formats=["%Y-%m-%d"]), metavar="DATE",
              help="Measure growth from this day (YYYY-MM-DD); default: the first commit that touched SPINE.md.")
@click.option("--json", "as_json", is_flag=True, help="Print every figure as JSON (with a `schema` version).")
@click.option("--html", "html_file", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
              help="Also write the report as one self-contained HTML page with charts (needs distilld[report]).")
@click.option("--helpers", type=click.IntRange(min=0), default=0, show_default=True,
              help="Helper agents a session starts: each one loads the index again.")
@click.pass_context
def report_command(ctx: click.Context, store: Path | None, since: datetime | None, as_json: bool,
                   html_file: Path | None, helpers: int) -> None:
    """Measure the store's health: index cost, growth from the git history, tier files,
    lifecycle, links, archive and ledger, and what distilld did. Writes nothing in the store.

    Every figure says how it is counted; estimates are marked; what cannot be known is shown
    as unknown, never as 0.
    """
    from .actions import health, health_html, health_render
    from .settings import InstancePaths, default_store
    from .store import fs

    if html_file is not None:
        health_html.require()
    obj: dict[str, Any] = ctx.obj or {}
    root = (store or default_store()).expanduser()
    report = health.build_report(root, load_policy(obj.get("policy_path")), datetime.now(UTC),
                                 since.date() if since else None, helpers,
                                 InstancePaths.for_store(root.absolute()).activity_log)
    if html_file is not None:
        fs.atomic_write(html_file, health_html.render_html(report).encode("utf-8", "surrogateescape"),
                        durable=False)
        click.echo(f"distilld: wrote {html_file}", err=True)
    _write(health_render.render_json(report) if as_json else health_render.render_text(report))
