"""`distilld report`: the store's health, measured; writes nothing in the store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from ._common import emit, policy, store_command, store_path


@store_command("report")
@click.option("--since", type=click.DateTime(formats=["%Y-%m-%d"]), metavar="DATE",
              help="Measure growth from this day (YYYY-MM-DD); default: the first commit that touched SPINE.md.")
@click.option("--json", "as_json", is_flag=True, help="Print every figure as JSON (with a `schema` version).")
@click.option("--html", "html_file", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
              help="Also write the report as one self-contained HTML page with charts (needs distilld[report]).")
@click.option("--helpers", type=click.IntRange(min=0), default=0, show_default=True,
              help="Helper agents a session starts: each one loads the index again.")
@click.pass_context
def report(ctx: click.Context, since: datetime | None, as_json: bool, html_file: Path | None, helpers: int) -> None:
    """Measure the store's health: index cost, growth from the git history, tier files,
    lifecycle, links, archive and ledger, and what distilld did. Writes nothing in the store.

    Every figure says how it is counted; estimates are marked; what cannot be known is shown
    as unknown, never as 0.
    """
    from ..actions import health, health_html, health_render
    from ..settings import InstancePaths
    from ..store import fs

    if html_file is not None:
        health_html.require()
    root = store_path(ctx)
    built = health.build_report(root, policy(ctx), datetime.now(UTC), since.date() if since else None, helpers,
                                InstancePaths.for_store(root.absolute()).activity_log)
    if html_file is not None:
        fs.atomic_write(html_file, health_html.render_html(built).encode("utf-8", "surrogateescape"), durable=False)
        click.echo(f"distilld: wrote {html_file}", err=True)
    emit(health_render.render_json(built) if as_json else health_render.render_text(built), as_json)


COMMANDS = (report,)
