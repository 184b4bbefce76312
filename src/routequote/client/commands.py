"""`routequote session …`: drive a session on a server. It never signs: it shows what to sign, verified.

State kept by the caller: the token file (created 0600, never printed) and a session file holding the
session id, the server URL and the verification context (intent, wallets, approval_v3, route summary)
every later action is checked against. The session file holds no secret."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

session_app = typer.Typer(
    help="Drive a session on a server (--url): create, show, next, observe, refresh, cancel. Never signs."
)
console = Console()
SESSION_FILE_VERSION = "routequote-cli-session-v1"
TOKEN_OPT = typer.Option(
    Path("routequote-session.token"),
    "--token-file",
    help="Session token file (created 0600 with a fresh token if missing; never printed)",
)
SESSION_OPT = typer.Option(
    Path("routequote-session.json"),
    "--session-file",
    help="Where the session id and its verification context are kept (no secret)",
)
URL_OPT = typer.Option(
    None, "--url", envvar="ROUTEQUOTE_URL", help="Server base URL (default: the session file's)"
)
# what the caller accepted at create, kept in the session file for every later action
ACCEPT_OPTIONS = ("accept_unconfigured_fee_recipient", "accept_modelled_bounds")
KEY_OPT = typer.Option(None, "--idempotency-key", help="Reuse a key to retry the same request safely")


def _fail(message: str, code: int = 1) -> None:
    console.print(message, overflow="fold")
    raise typer.Exit(code)


def show_client_error(exc: Exception) -> None:
    """Print a routequote.client error (never a token: none of them carries one) and exit 1."""
    from routequote.client import RateLimited, ReapprovalRequired, ResponseInvalid, ServerError

    if isinstance(exc, ReapprovalRequired):
        console.print(f"[red]reapproval required[/red] ({exc.reason}): {exc.message}", overflow="fold")
        if exc.funds:
            console.print(
                f"funds: {exc.funds.get('amount_base')} base units of {exc.funds.get('endpoint')} "
                f"in {exc.funds.get('wallet')} ({exc.funds.get('state')})",
                overflow="fold",
            )
        if exc.quote_from_here:
            console.print(f"quote from here: {json.dumps(exc.quote_from_here)}", overflow="fold")
    elif isinstance(exc, RateLimited):
        console.print(f"[red]rate limited[/red]: retry after {exc.retry_after} s")
    elif isinstance(exc, ServerError):
        console.print(f"[red]{exc.error}[/red] ({exc.reason_class}): {exc.message}", overflow="fold")
    elif isinstance(exc, ResponseInvalid):
        console.print(f"[red]response refused[/red]: {exc}", overflow="fold")
    else:
        console.print(f"[red]refused[/red]: {exc}", overflow="fold")
    raise typer.Exit(1)


def _token(path: Path, *, create: bool) -> Any:
    from routequote.client.token import SessionToken

    try:
        if create:
            token, created = SessionToken.load_or_create(path)
            if created:
                console.print(
                    f"created token file {path} (mode 0600); keep it: it is the only key to this session"
                )
        else:
            token = SessionToken(path.read_text().strip())
    except FileNotFoundError:
        _fail(f"[red]no token file[/red] {path}")
    except ValueError as exc:
        _fail(f"[red]token file {path}[/red]: {exc}")
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        console.print(f"[yellow]warning[/yellow]: {path} is readable by others (mode {mode:o}); chmod 600 it")
    return token


def _load(session_file: Path, token_file: Path, url: str | None) -> tuple[Any, str, dict[str, Any]]:
    """(session handle, server URL, the client's accept options the session was created with: a placeholder
    fee recipient, modelled bounds)."""
    from routequote.client.token import SessionHandle

    try:
        doc = json.loads(session_file.read_text())
    except FileNotFoundError:
        _fail(f"[red]no session file[/red] {session_file} (run `routequote session create` first)")
    except ValueError:
        _fail(f"[red]session file {session_file}[/red] is not JSON")
    if not isinstance(doc, dict) or doc.get("version") != SESSION_FILE_VERSION:
        _fail(f"[red]session file {session_file}[/red] is not a {SESSION_FILE_VERSION} file")
    base = url or doc.get("base_url")
    if not base:
        _fail("[red]no server[/red]: pass --url")
    handle = SessionHandle(doc["session_id"], _token(token_file, create=False), doc["context"])
    return handle, base, {k: doc.get(k) is True for k in ACCEPT_OPTIONS}


_TERMINAL_STEP = ("complete", "failed", "cancelled")


def step_status(session_status: str, step_status: str) -> str:
    """A step's status as shown: once the session is cancelled a step that never finished is not ready for
    anything, whatever the engine last recorded for it."""
    if session_status == "cancelled" and step_status not in _TERMINAL_STEP:
        return f"cancelled (was {step_status})"
    return step_status


def _grid() -> Any:
    """Label / value rows: a label is never split, a long value wraps inside its own column (80 columns)."""
    from rich.table import Table

    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    return grid


def _show_session(s: Any) -> None:
    from routequote.client.units import token_amount

    grid = _grid()
    grid.add_row("session", s.session_id)
    grid.add_row("status", f"{s.status}; next: {s.next_operation}")
    grid.add_row("route", s.route)
    grid.add_row("step", f"{s.current_step + 1} of {s.step_count} ({s.phase})")
    f = s.funds
    amount = token_amount(f.amount_base, f.endpoint) if f.amount_base is not None else "amount not known yet"
    grid.add_row("funds", f"{amount} ({f.endpoint}) {f.state}")
    grid.add_row("", f"in {f.wallet}")
    if f.note:
        grid.add_row("", f.note)
    for st in s.steps:
        shown = step_status(s.status, st["status"])
        grid.add_row(f"step {st['index']}", f"{st['provider']} {st['from']} -> {st['to']}: {shown}")
    if s.reapproval:
        grid.add_row("reapproval", f"{s.reapproval.get('reason')}: {s.reapproval.get('message')}")
    if s.note:
        grid.add_row("note", s.note)
    console.print(grid, highlight=False)
    if s.current_action is not None:
        console.print("an action is ready (verified): `routequote session next` shows what to sign")
        _show_preflight(s.preflight)


def _show_preflight(preflight: Any) -> None:
    """What each chain of the route will need from the caller, before signing (advice, never a refusal)."""
    from routequote.client.describe import describe_preflight

    for i, line in enumerate(describe_preflight({"preflight": preflight})):
        style = "bold" if i == 0 else ("red" if line.lstrip().startswith("BLOCKS") else "")
        console.print(
            f"[{style}]{escape(line)}[/{style}]" if style else escape(line), overflow="fold", highlight=False
        )


def show_receipt(receipt: dict[str, Any], session_status: str) -> None:
    """The receipt view as a table: per step what was quoted and what actually happened on chain."""
    from rich.table import Table

    from routequote.client.units import token_amount

    def amount(base: Any, endpoint: str) -> str:
        return token_amount(base, endpoint) if base is not None else "-"

    table = Table(title="receipt: quoted vs actual (base units converted)", show_lines=False)
    table.add_column("step", no_wrap=True)
    table.add_column("provider / path", overflow="fold")
    table.add_column("status", overflow="fold")
    table.add_column("quoted min out", justify="right", overflow="fold")
    table.add_column("actual out", justify="right", overflow="fold")
    for st in receipt.get("steps", []):
        actual = st.get("actual") or {}
        quoted = st.get("quoted") or {}
        table.add_row(
            str(st.get("index")),
            f"{st.get('provider')}\n{st.get('from')} -> {st.get('to')}",
            step_status(session_status, str(st.get("status"))),
            amount(quoted.get("minimum_output_base"), st["to"]),
            amount(actual.get("output_base"), st["to"]),
        )
    console.print(table, highlight=False)
    route = receipt.get("route") or {}
    grid = _grid()
    grid.add_row("complete", "yes" if route.get("complete") else "no")
    if route.get("complete"):
        endpoint = receipt["steps"][-1]["to"]
        grid.add_row("received", amount(route.get("actual_output_base"), endpoint))
        grid.add_row("at or above minimum", "yes" if route.get("at_or_above_minimum") else "NO")
        grid.add_row(
            "realized cost",
            f"{route.get('realized_cost_bps')} bps (quoted {route.get('quoted_expected_cost_bps')})",
        )
    console.print(grid, highlight=False)


def _show_action(action: Any) -> None:
    from routequote.client.describe import describe_action

    console.print("[bold]your wallet would be asked to sign[/bold] (routequote never signs):")
    for line in describe_action(action):
        console.print(line, overflow="fold", highlight=False)
    for w in action.warnings:
        console.print(f"[yellow]warning[/yellow] {w.code}: {w.message}", overflow="fold")


def _wallets(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        chain, sep, address = item.partition("=")
        if not sep or not chain or not address:
            _fail(f"[red]--wallet[/red] takes chain=address, not {item!r}", 2)
        out[chain.strip().lower()] = address.strip()
    return out


def _opened_but_refused(session_id: str, session_file: Path, token_file: Path) -> None:
    """The server opened the session but its answer was refused: say where it is kept and what to do."""
    import shlex

    files = f"--session-file {shlex.quote(str(session_file))} --token-file {shlex.quote(str(token_file))}"
    console.print(
        f"session {session_id} is open on the server and saved to {session_file}; its first action was "
        "refused above: do not sign it.",
        overflow="fold",
        highlight=False,
    )
    console.print(f"cancel it:  routequote session cancel {files}", overflow="fold", highlight=False)
    console.print(
        f"or, once the cause is fixed, continue (verified again):  routequote session next {files}",
        overflow="fold",
        highlight=False,
    )


@session_app.command("create")
def create_cmd(
    quote_file: Path = typer.Option(
        ...,
        "--quote",
        help="A quote from this server, saved with "
        "`routequote quote --url URL --save FILE` (its quote_id binds the session)",
    ),
    wallet: list[str] = typer.Option(..., "--wallet", help="chain=public address, once per required chain"),
    url: str = typer.Option(..., "--url", envvar="ROUTEQUOTE_URL", help="Server base URL"),
    event_signer: str = typer.Option(
        None, help="Public key of your fresh event-data keypair (Solana CCTP routes)"
    ),
    min_output_base: str = typer.Option(None, help="Your own stricter minimum output (base units)"),
    idempotency_key: str = KEY_OPT,
    token_file: Path = TOKEN_OPT,
    session_file: Path = SESSION_OPT,
    json_out: bool = typer.Option(False, "--json", help="Print the session JSON"),
    accept_unconfigured_fee_recipient: bool = typer.Option(
        False,
        help="Accept fees going to the server's development placeholder (local tests; kept for the session)",
    ),
    accept_modelled_bounds: bool = typer.Option(
        False,
        help="Accept actions whose bounds are modelled from the embedded snapshot, not live market data "
        "(local tests; kept for the session)",
    ),
) -> None:
    """Create a session from a saved quote; prints its first action, verified."""
    from routequote.client import ClientError, RouteQuoteClient, approval_for
    from routequote.client.models import Quote
    from routequote.client.validate import quote_problems

    if session_file.exists():
        _fail(f"[red]{session_file} exists[/red]: one session per file (pass --session-file)")
    try:
        raw = json.loads(quote_file.read_text())
        quote = Quote.from_raw(raw)
    except (OSError, ValueError) as exc:
        _fail(f"[red]--quote {quote_file}[/red]: not a readable quote ({str(exc)[:200]})", 2)
    problems = quote_problems(raw)
    if problems:
        _fail(f"[red]quote refused[/red]: {'; '.join(problems)}")
    token = _token(token_file, create=True)
    accepted: dict[str, Any] = {
        "accept_unconfigured_fee_recipient": accept_unconfigured_fee_recipient,
        "accept_modelled_bounds": accept_modelled_bounds,
    }
    opened: list[str] = []

    def keep(handle: Any) -> None:  # the server opened it: saved before its answer is verified
        doc = {
            "version": SESSION_FILE_VERSION,
            "base_url": url,
            "session_id": handle.session_id,
            "context": handle.context,
            **{k: True for k, v in accepted.items() if v},
        }
        session_file.write_text(json.dumps(doc, indent=1) + "\n")
        opened.append(handle.session_id)

    try:
        approval = approval_for(
            quote, "session", minimum_output_base=min_output_base, idempotency_key=idempotency_key
        )
        with RouteQuoteClient(url, **accepted) as rq:
            s = rq.create_session(
                quote,
                _wallets(wallet),
                approval=approval,
                event_signer_public=event_signer,
                token=token,
                on_created=keep,
            )
    except ClientError as exc:
        try:
            show_client_error(exc)
        finally:
            if opened:
                _opened_but_refused(opened[0], session_file, token_file)
    if json_out:
        typer.echo(json.dumps(s.raw, indent=2))
        return
    _show_session(s)
    console.print(f"session file: {session_file}")


@session_app.command("show")
def show_cmd(
    view: str = typer.Option("session", help="session, workflow or receipt (workflow prints JSON)"),
    url: str = URL_OPT,
    token_file: Path = TOKEN_OPT,
    session_file: Path = SESSION_OPT,
    json_out: bool = typer.Option(False, "--json", help="Print the view JSON"),
) -> None:
    """Show the session (status, funds, steps), its workflow or its receipt."""
    from routequote.client import ClientError, RouteQuoteClient

    handle, base, accept = _load(session_file, token_file, url)
    try:
        with RouteQuoteClient(base, **accept) as rq:
            answer = rq.read_session(handle) if view == "session" else rq.session_view(handle, view)
    except ClientError as exc:
        show_client_error(exc)
    except ValueError as exc:
        _fail(f"[red]--view[/red]: {exc}", 2)
    if json_out or view not in ("session", "receipt"):
        typer.echo(json.dumps(answer.raw, indent=2))
        return
    if view == "receipt":
        show_receipt(answer.raw["receipt"], str(answer.raw.get("status")))
        return
    _show_session(answer)


@session_app.command("next")
def next_cmd(
    url: str = URL_OPT,
    token_file: Path = TOKEN_OPT,
    session_file: Path = SESSION_OPT,
    json_out: bool = typer.Option(
        False, "--json", help="Print the verified unsigned bundle JSON (for a wallet tool)"
    ),
) -> None:
    """The next action, verified, and what your wallet would be asked to sign. Exit 3 when none is ready."""
    from routequote.client import ClientError, RouteQuoteClient

    handle, base, accept = _load(session_file, token_file, url)
    try:
        with RouteQuoteClient(base, **accept) as rq:
            s = rq.read_session(handle)
    except ClientError as exc:
        show_client_error(exc)
    if s.current_action is None:
        console.print(f"no action to sign: status {s.status}, next operation {s.next_operation}")
        raise typer.Exit(3)
    if json_out:
        typer.echo(json.dumps(s.current_action.raw, indent=2))
        return
    _show_action(s.current_action)
    _show_preflight(s.preflight)


@session_app.command("observe")
def observe_cmd(
    tx: list[str] = typer.Option(
        None,
        "--tx",
        help="A transaction hash / signature you submitted (repeatable); "
        "omit to re-check what you named before",
    ),
    idempotency_key: str = KEY_OPT,
    url: str = URL_OPT,
    token_file: Path = TOKEN_OPT,
    session_file: Path = SESSION_OPT,
) -> None:
    """Name what you submitted; the server reads the chain and advances only on verified output."""
    from routequote.client import ClientError, RouteQuoteClient

    handle, base, accept = _load(session_file, token_file, url)
    try:
        with RouteQuoteClient(base, **accept) as rq:
            s = rq.observe(handle, tx or None, idempotency_key=idempotency_key)
    except ClientError as exc:
        show_client_error(exc)
    _show_session(s)


def _key_only(
    op: str, idempotency_key: str | None, url: str | None, token_file: Path, session_file: Path
) -> None:
    from routequote.client import ClientError, RouteQuoteClient

    handle, base, accept = _load(session_file, token_file, url)
    try:
        with RouteQuoteClient(base, **accept) as rq:
            s = getattr(rq, op)(handle, idempotency_key=idempotency_key)
    except ClientError as exc:
        show_client_error(exc)
    _show_session(s)


@session_app.command("refresh")
def refresh_cmd(
    idempotency_key: str = KEY_OPT,
    url: str = URL_OPT,
    token_file: Path = TOKEN_OPT,
    session_file: Path = SESSION_OPT,
) -> None:
    """A new action for an expired, unsubmitted step (inside the approved bounds)."""
    _key_only("refresh", idempotency_key, url, token_file, session_file)


@session_app.command("cancel")
def cancel_cmd(
    idempotency_key: str = KEY_OPT,
    url: str = URL_OPT,
    token_file: Path = TOKEN_OPT,
    session_file: Path = SESSION_OPT,
) -> None:
    """Stop the session; prints where the funds are now."""
    _key_only("cancel", idempotency_key, url, token_file, session_file)
