"""The `routequote` command line. Server stacks are imported lazily so quick commands start fast."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from routequote.cli_json import json_arg as _json_arg
from routequote.client.commands import session_app, show_client_error  # typer only; the client loads on use
from routequote.doctor import doctor_command  # typer only; the checks load on use

app = typer.Typer(help="routequote: non-custodial route quotes for agents. Never signs, never submits.")
app.add_typer(market_app := typer.Typer(help="Market data: the embedded snapshot."), name="market")
app.add_typer(keys_app := typer.Typer(help="Manifest signing keys."), name="keys")
app.command("doctor")(doctor_command)  # routequote/doctor.py: is this configuration fit to go live?
console = Console()

if TYPE_CHECKING:
    from routequote.config import Settings
    from routequote.service import RouteQuoteService


@app.command()
def serve(
    host: str = typer.Option(None, help="Bind address (ROUTEQUOTE_HOST, default 127.0.0.1)"),
    port: int = typer.Option(None, help="Port (ROUTEQUOTE_PORT, default 8080)"),
    workers: int = typer.Option(None, help="Worker processes (ROUTEQUOTE_WORKERS, default 1)"),
) -> None:
    """Start the HTTP service (REST, and every surface this build mounts). Exits 2 on a bad setting."""
    import os
    import shutil
    import signal

    from routequote.config_check import load_settings
    from routequote.logging import configure_logging

    given = {k: v for k, v in (("host", host), ("port", port), ("workers", workers)) if v is not None}
    settings, found = load_settings(**given)
    if found:  # every bad setting, one line each, before anything starts
        for line in found:
            typer.echo(f"configuration error: {line}", err=True)
        raise typer.Exit(2)
    host, port, workers = settings.host, settings.port, settings.workers
    os.environ.update(ROUTEQUOTE_HOST=host, ROUTEQUOTE_PORT=str(port), ROUTEQUOTE_WORKERS=str(workers))
    configure_logging(settings.log_level)  # JSON lines from uvicorn's own loggers too (log_config=None below)

    def stopped(*_: object) -> None:
        # uvicorn drains in-flight requests on SIGTERM, then re-raises the signal: end with status 0
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stopped)
    peer_dir = ""
    if workers > 1 or settings.resolved_quote_store() == "peers":  # workers' own directory, gone at exit
        from routequote.storage.peer_quotes import PEER_DIR_ENV, make_serve_dir
        from routequote.surfaces.worker_balance import make_board

        peer_dir = os.environ[PEER_DIR_ENV] = make_serve_dir()
        make_board(peer_dir)  # their open-connection counts, so that they share connections evenly
    try:
        _run_uvicorn(settings, host, port, workers)
    finally:
        if peer_dir:
            shutil.rmtree(peer_dir, ignore_errors=True)


def _run_uvicorn(settings: Settings, host: str, port: int, workers: int) -> None:
    import uvicorn

    from routequote.surfaces.forwarded import proxy_options
    from routequote.surfaces.input_guard import uvicorn_options

    uvicorn.run(
        "routequote.app:create_served_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        access_log=False,
        log_level=settings.log_level,
        log_config=None,  # uvicorn's loggers propagate to the one redacting JSON handler
        timeout_graceful_shutdown=settings.graceful_shutdown_seconds,  # SIGTERM: in-flight requests finish
        **uvicorn_options(settings),  # header bytes / count / time limits, keep-alive (docs/operations.md)
        **proxy_options(settings.trusted_proxies),  # forwarded headers only from the proxies named
    )


@app.command()
def mcp(
    profile: str = typer.Option(
        "spec", help="spec: the 15 tools of /mcp; v2: the v2 lifecycle of /mcp/v2 (prepare and sessions)"
    ),
    remote: str = typer.Option("", help="Caller-side: v2 tools against this instance, verified here"),
    accept_modelled_bounds: bool = typer.Option(False, help="--remote: accept modelled bounds (tests)"),
    accept_unconfigured_fee_recipient: bool = typer.Option(False, help="--remote: accept a placeholder fee"),
) -> None:
    """Serve the MCP tools over stdio (for desktop agent hosts). Stdout carries only MCP messages."""
    if remote:  # the caller-side MCP (docs/api.md): no local service, every action verified on this machine
        from routequote.caller_mcp import RemoteOptions, serve_remote

        return serve_remote(remote, RemoteOptions(accept_modelled_bounds, accept_unconfigured_fee_recipient))
    import sys

    import structlog

    from routequote.app import create_app
    from routequote.surfaces.mcp_tools import run_stdio
    from routequote.user_data import stdio_settings

    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))  # never on the MCP stream
    if profile not in ("spec", "v2"):
        raise typer.BadParameter("--profile is spec or v2")
    app = create_app(stdio_settings(rate_limit="off"))  # one local client; files in the per-user directory
    if profile == "v2":
        from routequote.surfaces.mcp_v2 import run_stdio_v2

        asyncio.run(run_stdio_v2(app))
    else:
        asyncio.run(run_stdio(app))


def _service() -> RouteQuoteService:
    from routequote.app import in_process_service
    from routequote.config import Settings

    return in_process_service(Settings())


def _amount_usd(text: str) -> int | float:
    """The USD notional as the API takes it, parsed as a decimal (an integral value stays an integer)."""
    from decimal import Decimal, InvalidOperation

    try:
        d = Decimal(text)
    except InvalidOperation:
        console.print(f"[red]amount_usd[/red]: {text!r} is not a number")
        raise typer.Exit(2) from None
    if not d.is_finite():
        console.print("[red]amount_usd[/red]: must be finite")
        raise typer.Exit(2)
    return int(d) if d == d.to_integral_value() else float(d)


def _intent(source: str, target: str, amount: str) -> dict[str, Any]:
    try:
        fc, ft = source.split(":", 1)
        tc, tt = target.split(":", 1)
    except ValueError:
        console.print("[red]endpoints are chain:TOKEN, e.g. solana:SOL base:USDC[/red]")
        raise typer.Exit(2) from None
    return {
        "from_chain": fc.lower(),
        "from_token": ft.upper(),
        "to_chain": tc.lower(),
        "to_token": tt.upper(),
        "amount_usd": _amount_usd(amount),
    }


@app.command()
def quote(
    source: str = typer.Argument(..., help="chain:TOKEN, e.g. solana:SOL"),
    target: str = typer.Argument(..., help="chain:TOKEN, e.g. base:USDC"),
    amount_usd: str = typer.Argument(..., help="USD notional, 1..1000"),
    url: str = typer.Option(
        None, "--url", envvar="ROUTEQUOTE_URL", help="Quote a running server (default: in-process)"
    ),
    base_units: bool = typer.Option(False, "--base-units", help="Show amounts in integer base units"),
    json_out: bool = typer.Option(False, "--json", help="Print the full quote JSON"),
    save: Path = typer.Option(
        None, "--save", help="Also write the quote JSON here (for `session create --quote`)"
    ),
) -> None:
    """Quote one route and show its steps, amounts (exact token units), fees and ETA."""
    from routequote.client import ClientError
    from routequote.client.render import render_quote
    from routequote.client.validate import quote_problems
    from routequote.errors import RouteQuoteError

    body = _intent(source, target, amount_usd)
    if url:
        from routequote.client import RouteQuoteClient

        try:
            with RouteQuoteClient(url) as rq:  # validated: custody flags, chaining, hashes
                q = rq.quote(source, target, body["amount_usd"]).raw
        except ClientError as exc:
            show_client_error(exc)
    else:
        try:
            q = asyncio.run(_service().quote_request(body))
        except RouteQuoteError as exc:
            console.print(f"[red]{exc.error}[/red] ({exc.reason_class}): {exc.message}")
            raise typer.Exit(1) from None
        problems = quote_problems(json.loads(json.dumps(q)), body)
        if problems:  # the in-process quote is held to the same checks as a served one
            console.print(f"[red]quote refused[/red]: {'; '.join(problems)}")
            raise typer.Exit(1)
    if save is not None:
        save.write_text(json.dumps(q, indent=1) + "\n")
    if json_out:
        typer.echo(json.dumps(q, indent=2))
        return
    render_quote(console, q, base_units=base_units)
    if save is not None:
        console.print(f"saved to {save}")


@app.command()
def matrix(
    amount: str = typer.Option("1000", "--amount", help="USD notional for every cell, 1..1000"),
    url: str = typer.Option(
        None, "--url", envvar="ROUTEQUOTE_URL", help="Fill it from a running server (default: in-process)"
    ),
    concurrency: int = typer.Option(8, help="Quotes in flight at once against --url"),
    max_retries: int = typer.Option(6, help="Per cell: how often a 429 is waited out (Retry-After)"),
    json_out: bool = typer.Option(False, "--json", help="Print the cells as JSON"),
) -> None:
    """The 9 x 9 route matrix (72 routes): expected cost in bps and ETA per cell. Waits out rate limits;
    exits 1 when any cell is missing."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from routequote.client.matrix import fill_cells
    from routequote.client.render import matrix_cell, render_matrix
    from routequote.core.routes import ROUTES

    value = _amount_usd(amount)

    async def fill(progress: Progress, task: Any) -> tuple[dict[str, dict[str, Any]], int]:
        from routequote.client import AsyncRouteQuoteClient

        client = AsyncRouteQuoteClient(url) if url else None
        service = None if url else _service()

        async def quote(key: str) -> dict[str, Any]:
            src, dst = key.split("->")
            if client is not None:
                return (await client.quote(src, dst, value)).raw
            assert service is not None
            (fc, ft), (tc, tt) = src.split(":"), dst.split(":")
            body = {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": value}
            return dict(await service.quote_request(body))

        try:
            cells, pause = await fill_cells(
                list(ROUTES),
                quote,
                matrix_cell,
                concurrency=concurrency,
                max_retries=max(0, max_retries),
                on_done=lambda: progress.advance(task),
            )
        finally:
            if client is not None:
                await client.aclose()
        return cells, pause.waits

    with Progress(
        TextColumn("quoting routes"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=json_out,
    ) as progress:
        task = progress.add_task("matrix", total=len(ROUTES))
        cells, waits = asyncio.run(fill(progress, task))
    failed = sum("error" in c for c in cells.values())
    if json_out:
        out = {"amount_usd": value, "cells": dict(sorted(cells.items())), "missing": failed}
        typer.echo(json.dumps(out, indent=2))
    else:
        where = url or "in-process (embedded market)"
        render_matrix(console, cells, title=f"${value} route matrix from {where}: cost bps / ETA")
        console.print(
            f"{len(cells) - failed} of {len(ROUTES)} cells filled"
            + (f"; waited out the rate limit {waits} times" if waits else "")
        )
    if failed:
        if not json_out:
            console.print(f"[red]{failed} cells missing[/red]", highlight=False)
        raise typer.Exit(1)


app.add_typer(session_app, name="session")


@app.command()
def routes() -> None:
    """List the 72 directed routes with their provider paths."""
    from rich import box

    from routequote.core.routes import ROUTES

    # at 80 columns the route name is never cut (it is what a user copies) and the other columns wrap at
    # spaces, never inside a provider name; the mode column joins when there is room for it
    wide = console.width >= 120
    table = Table(
        title=f"{len(ROUTES)} directed routes", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    table.add_column("route", no_wrap=True, min_width=29)
    table.add_column("providers (* = fee step)", min_width=25)
    if wide:
        table.add_column("mode", no_wrap=True)
    table.add_column("wallets", min_width=9, max_width=12)
    table.add_column("signer", no_wrap=True, min_width=6)
    for r in ROUTES.values():
        path = " > ".join(s.provider.value + ("*" if s.fee_step else "") for s in r.steps)
        table.add_row(
            r.key,
            path,
            *([r.mode.value] if wide else []),
            " ".join(r.required_wallet_chains),
            "yes" if r.event_signer_required else "",
        )
    console.print(table)
    from routequote.route_proof import route_proof

    proof = route_proof()
    if proof is not None:  # what the whole-route suite carried to `complete` (docs/routes.md: per step)
        live = proof["of_which_on_a_live_market_from_recorded_upstreams"]
        amounts = " and $".join(str(a) for a in proof["amounts_usd"])
        console.print(
            f"tests: {proof['routes_complete_at_every_amount']} of {proof['routes']} routes complete at ${amounts}"
            + (f" ({live} on a live market from recorded upstreams)" if live else "")
            + f"; how each step ran: {proof['document']}"
        )


@market_app.command("build-snapshot")
def build_snapshot_cmd(
    as_of: str = typer.Option(..., help="Snapshot time, RFC 3339 (e.g. 2026-11-20T00:00:00Z)"),
    out: Path = typer.Option(..., help="Output file; serve it with ROUTEQUOTE_SNAPSHOT_PATH=<file>"),
    seed: int = typer.Option(20261120, help="Seed of the modelled pool shapes"),
) -> None:
    """Regenerate the embedded (modelled) market snapshot file."""
    from routequote.market.synthetic import build_snapshot

    doc = build_snapshot(as_of=as_of, seed=seed)
    out.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    console.print(f"wrote {out} ({len(doc['pools'])} pools, version {doc['version']})")


@keys_app.command("generate")
def keys_generate(
    out: Path = typer.Option(..., "--out", help="Where to write the private key (PKCS#8 PEM, mode 0600)"),
    force: bool = typer.Option(False, help="Replace an existing file"),
) -> None:
    """Generate an Ed25519 manifest signing key. Point ROUTEQUOTE_SIGNING_KEY_PATH at it."""
    from routequote.core.manifest import key_id_for, public_key_pem
    from routequote.discovery.keys import generate_private_key, write_private_key

    if out.exists():
        if not force:
            console.print(f"[red]{out} exists[/red]; pass --force to replace it")
            raise typer.Exit(1)
        out.unlink()
    key = generate_private_key()
    write_private_key(out, key)
    typer.echo(f"wrote {out} (mode 0600)")
    typer.echo(f"key_id: {key_id_for(key.public_key())}")
    typer.echo(public_key_pem(key.public_key()).rstrip())
    typer.echo(f"serve with: ROUTEQUOTE_SIGNING_KEY_PATH={out} routequote serve")


@app.command("verify-manifest")
def verify_manifest_cmd(
    base_url: str = typer.Argument(..., help="Base URL of the instance, e.g. https://quotes.example.org"),
    public_key: Path = typer.Option(
        None, "--public-key", help="Pinned public key (SPKI PEM); default: fetch it"
    ),
    key_id: str = typer.Option(None, "--key-id", help="Pinned key id (routequote-<16 hex>)"),
    max_age: int = typer.Option(
        None, "--max-age", help="Fail when the manifest is older than this many seconds"
    ),
    allow_other_origin: bool = typer.Option(
        False, help="Accept manifest URLs on another origin than BASE_URL (e.g. behind a proxy)"
    ),
    timeout: float = typer.Option(20.0, help="HTTP timeout in seconds"),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON"),
) -> None:
    """Verify an instance's signed manifest, key and safety document. Exits 1 on any failure."""
    from datetime import UTC, datetime

    import httpx

    from routequote.discovery.verify import verify_remote

    pinned = None
    if public_key is not None:
        try:
            pinned = public_key.read_bytes()
        except OSError as exc:
            console.print(f"[red]pinned_key_invalid[/red]: cannot read {public_key}: {exc.strerror}")
            raise typer.Exit(1) from None
    with httpx.Client(timeout=timeout, headers={"accept": "application/json"}) as client:
        report = verify_remote(
            base_url,
            client=client,
            now=datetime.now(UTC),
            max_age_seconds=max_age,
            pinned_public_key_pem=pinned,
            pinned_key_id=key_id,
            require_same_origin=not allow_other_origin,
        )
    if json_out:
        failures = [{"cause": f.cause, "message": f.message} for f in report.failures]
        typer.echo(json.dumps({"ok": report.ok, "failures": failures, "facts": report.facts}, indent=2))
    else:
        for f in report.failures:
            typer.echo(f"FAIL {f.cause}: {f.message}", err=True)
        if report.ok:
            facts = report.facts
            dev = ", development key: generated by the instance, not an operator's release key"
            typer.echo(
                f"OK {base_url}: signature by {facts.get('key_id')} ({facts.get('public_key_source')} key"
                f"{dev if facts.get('development_key') else ''}), "
                f"safety sha256 {facts.get('safety_sha256')}, issued {facts.get('issued_at')}, "
                f"valid until {facts.get('valid_until')}, release {facts.get('release_commit')}"
            )
    if not report.ok:
        raise typer.Exit(1)


@market_app.command("refresh")
def market_refresh_cmd(
    out: Path = typer.Option(
        None, help="Output file (default: ROUTEQUOTE_SNAPSHOT_PATH, else the packaged snapshot)"
    ),
    allow_partial: bool = typer.Option(
        False, help="Write even when some sources failed (they keep old values)"
    ),
    dry_run: bool = typer.Option(False, help="Print the diff summary only"),
) -> None:
    """Rebuild the embedded snapshot file from live sources (needs ROUTEQUOTE_RPC_URL_* and API bases)."""
    from importlib import resources

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from routequote.clock import SystemClock
    from routequote.config import Settings
    from routequote.market.live import LiveMarket
    from routequote.market.live_config import live_config_from_settings
    from routequote.market.refresh import RefreshResult, refresh_snapshot, write_document
    from routequote.market.snapshot import load_snapshot_document

    settings = Settings()
    old_doc = load_snapshot_document(settings.snapshot_path or None)
    target = out or Path(
        settings.snapshot_path or str(resources.files("routequote.data") / "market_snapshot.json")
    )
    config = live_config_from_settings(settings)
    market = LiveMarket(config, SystemClock(), snapshot_document=old_doc)

    async def run() -> RefreshResult:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            try:
                return await refresh_snapshot(market, old_doc, progress)
            finally:
                await market.aclose()

    result = asyncio.run(run())
    table = Table(title="market refresh: what moved")
    for col in ("item", "snapshot", "live", "moved"):
        table.add_column(col)
    for c in result.changes:
        moved = "n/a" if c.moved_percent is None else f"{c.moved_percent:+.3f}%"
        table.add_row(c.what, c.old, c.new, moved)
    console.print(table)
    for name, reason in sorted(result.failed.items()):
        console.print(f"[red]failed[/red] {name}: {reason}")
    if dry_run:
        return
    if result.failed and not allow_partial:
        console.print(
            f"not written: {len(result.failed)} source(s) failed (use --allow-partial to keep their old values)"
        )
        raise typer.Exit(code=1)
    write_document(target, result.document)
    console.print(
        f"wrote {target} (version {result.document['version']}, {len(result.refreshed)} sources refreshed)"
    )


@app.command("verify-action")
def verify_action_cmd(
    bundle_file: Path = typer.Argument(..., help="The POST /v2/prepare response (bundle JSON) to check"),
    intent: str = typer.Option(None, help="Your 5 quote fields: inline JSON or a file"),
    wallets: str = typer.Option(None, help="Your chain -> public address map: inline JSON or a file"),
    context: str = typer.Option(
        None, help="Your verification context (intent, wallets, approval, summary): JSON/file"
    ),
    approval: str = typer.Option(None, help="Your approval_v3: inline JSON or a file"),
    quote_file: str = typer.Option(
        None, "--quote", help="The approved quote (its direct_route_summary is used)"
    ),
    event_signer: str = typer.Option(
        None, help="The public key of the event-data keypair you generated (Solana CCTP)"
    ),
    fee_recipient_evm: str = typer.Option(None, help="The operator's published EVM fee recipient to pin"),
    fee_recipient_solana: str = typer.Option(
        None, help="The operator's published Solana fee recipient to pin"
    ),
    now: int = typer.Option(None, help="Unix time to check deadlines against (default: now)"),
    accept_unconfigured_fee_recipient: bool = typer.Option(
        False, help="Accept a fee going to a development placeholder (tests and local chains only)"
    ),
    accept_modelled_bounds: bool = typer.Option(
        False,
        help="Accept bounds modelled from the embedded snapshot, not live data (tests, local chains only)",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print findings as JSON"),
) -> None:
    """Check an unsigned action bundle before signing it. Exits 1 on any error finding. Offline."""
    from routequote import verify_action_cli
    from routequote.verify import check_verification_context

    bundle = _json_arg(str(bundle_file), "bundle")
    pinned = verify_action_cli.pinned_recipients(fee_recipient_evm, fee_recipient_solana)
    ctx = _json_arg(context, "context")
    problems: list[str] = []
    summary = None
    if ctx is not None:
        problems = check_verification_context(ctx)
        intent_v, wallets_v = ctx.get("intent"), ctx.get("wallets")
        approval_v, summary = ctx.get("approval_v3"), ctx.get("direct_route_summary")
        event_signer = event_signer or ctx.get("event_signer_public")
    else:
        intent_v, wallets_v, approval_v = _json_arg(intent, "intent"), _json_arg(wallets, "wallets"), None
        approval_v = _json_arg(approval, "approval")
    quote_v = _json_arg(quote_file, "quote")
    if quote_v is not None:
        summary = quote_v.get("direct_route_summary")
    if not isinstance(intent_v, dict) or not isinstance(wallets_v, dict):
        console.print("[red]usage[/red]: give --intent and --wallets, or --context")
        raise typer.Exit(2)
    verify_action_cli.run(
        bundle,
        verify={
            "intent": intent_v,
            "wallets": wallets_v,
            "now_unix": now,
            "approval_v3": approval_v,
            "direct_route_summary": summary,
            "event_signer_public": event_signer,
            "fee_recipients": pinned,
        },
        problems=problems,
        accept_unconfigured_fee_recipient=accept_unconfigured_fee_recipient,
        accept_modelled_bounds=accept_modelled_bounds,
        json_out=json_out,
    )


def main() -> None:
    app()
