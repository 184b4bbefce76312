"""`routequote doctor`: is this configuration fit to go live? One line per check (✓ / ✗ / ⚠ with the fix).

It reads the settings as `routequote serve` would and, where it can, reaches each dependency: the RPC of every
chain (the chain id or genesis it must serve, and the widest log range a session asks for), Circle Iris, LayerZero
Scan, the live market's Across and Pyth Hermes, the session database, Redis, and the pinned USDG OFT program.

✗ (exit 1): a live deployment would hand out something it cannot finish (a configured RPC or lookup that does not
answer, an OFT program that is not one), label something wrongly (an RPC serving another chain, modelled bounds
from the embedded market, development fee recipients or signing key), or not start (a bad setting, an
unreachable database or Redis). ⚠: honest but reduced (a chain without an RPC URL, the OFT program not pinned,
the embedded fallback): those routes say why they are not session-ready. No URL, key or password is printed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:  # the checks import what they use: `routequote --help` stays quick
    import httpx

    from routequote.config import Settings
    from routequote.core.assets import Chain
    from routequote.core.routes import Provider

OK, WARN, FAIL = "ok", "warn", "fail"
MARKS = {OK: "✓", WARN: "⚠", FAIL: "✗"}
SOLANA_MAINNET_GENESIS = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"
NO_MATCH_TOPIC = "0x" + "00" * 32  # a log search that finds nothing: only the range is tested
GOING_LIVE = "docs/going-live.md"


@dataclass(frozen=True)
class Check:
    status: str
    name: str
    message: str
    fix: str = ""

    def line(self) -> str:
        fix = f" → {self.fix}" if self.fix and self.status != OK else ""
        return f"{MARKS[self.status]} {self.name}: {self.message}{fix}"


class Unreachable(Exception):
    """A dependency did not answer as it must; the message names no URL."""


def _routes_touching(chain: Chain) -> int:
    from routequote.core.routes import ROUTES
    from routequote.readiness import route_chains

    return sum(1 for r in ROUTES.values() if chain in route_chains(r))


def _routes_using(provider: Provider) -> int:
    from routequote.core.routes import ROUTES

    return sum(1 for r in ROUTES.values() if any(s.provider is provider for s in r.steps))


def _why(exc: BaseException) -> str:
    import httpx

    from routequote.market.jsonrpc import RpcError
    from routequote.ports import ObservationUnavailable

    if isinstance(exc, Unreachable | RpcError | ObservationUnavailable):  # their messages name no URL path
        return str(exc)[:200]
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return "timed out"
    if isinstance(exc, httpx.HTTPError):
        return f"unreachable ({type(exc).__name__})"
    return f"failed ({type(exc).__name__})"


async def _rpc(http: httpx.AsyncClient, url: str, method: str, params: list[Any]) -> Any:
    r = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    if r.status_code != 200:
        raise Unreachable(f"{method} answered HTTP {r.status_code}")
    try:
        body = r.json()
    except ValueError:
        raise Unreachable(f"{method} answered with a body that is not JSON") from None
    if not isinstance(body, dict) or "error" in body or "result" not in body:
        error = body.get("error") if isinstance(body, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        raise Unreachable(f"{method} answered an error{f' (code {code})' if code is not None else ''}")
    return body["result"]


def _int(value: Any, what: str) -> int:
    try:
        return int(value, 16) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise Unreachable(f"{what}: not a number") from None


async def check_evm(http: httpx.AsyncClient, chain: Chain, url: str, log_blocks: int) -> Check:
    from routequote.core.assets import CHAINS
    from routequote.readiness import rpc_setting

    name, want = f"rpc {chain.value}", CHAINS[chain].chain_id
    setting = rpc_setting(chain)
    try:
        got = _int(await _rpc(http, url, "eth_chainId", []), "eth_chainId")
        if got != want:
            return Check(
                FAIL, name, f"serves chain id {got}, not {want}", f"point {setting} at {chain.value}"
            )
        latest = _int(await _rpc(http, url, "eth_blockNumber", []), "eth_blockNumber")
        span = {
            "address": "0x" + "00" * 20,
            "topics": [NO_MATCH_TOPIC],
            "fromBlock": hex(max(0, latest - log_blocks)),
            "toBlock": hex(latest),
        }
        try:
            await _rpc(http, url, "eth_getLogs", [span])
        except Unreachable as exc:
            return Check(
                FAIL,
                name,
                f"refuses eth_getLogs over {log_blocks:,} blocks ({exc})",
                "use a provider plan that allows that range, or lower ROUTEQUOTE_ACROSS_FILL_SEARCH_BLOCKS",
            )
    except Exception as exc:
        return Check(FAIL, name, _why(exc), f"check {setting} (and the provider's key and plan)")
    return Check(OK, name, f"chain id {got}, block {latest:,}, eth_getLogs over {log_blocks:,} blocks")


async def check_solana(http: httpx.AsyncClient, url: str) -> Check:
    from routequote.core.assets import Chain
    from routequote.readiness import rpc_setting

    name, setting = "rpc solana", rpc_setting(Chain.SOLANA)
    try:
        genesis = await _rpc(http, url, "getGenesisHash", [])
        if genesis != SOLANA_MAINNET_GENESIS:
            return Check(
                FAIL, name, "serves another cluster than mainnet-beta", f"point {setting} at mainnet"
            )
        health = await _rpc(http, url, "getHealth", [])
        if health != "ok":
            return Check(FAIL, name, "getHealth is not ok (the node is behind)", f"check {setting}")
        slot = _int(await _rpc(http, url, "getSlot", [{"commitment": "finalized"}]), "getSlot")
    except Exception as exc:
        return Check(FAIL, name, _why(exc), f"check {setting} (and the provider's key and plan)")
    return Check(OK, name, f"mainnet-beta genesis, healthy, finalized slot {slot:,}")


async def check_oft_program(http: httpx.AsyncClient, settings: Settings) -> Check:
    from routequote.core.routes import Provider

    name, program = "usdg oft program", settings.usdg_oft_solana_program
    routes = _routes_using(Provider.PAXOS_OFT)
    if not program:
        return Check(
            WARN,
            name,
            f"not pinned: the {routes} routes over the USDG OFT are not session-ready (they say so)",
            f"set ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM to the program that owns the Solana OFT store ({GOING_LIVE})",
        )
    if not settings.rpc_url_solana:
        return Check(
            WARN, name, f"pinned to {program}, not checked: no Solana RPC", "set ROUTEQUOTE_RPC_URL_SOLANA"
        )
    try:
        info = await _rpc(http, settings.rpc_url_solana, "getAccountInfo", [program, {"encoding": "base64"}])
    except Exception as exc:
        return Check(
            FAIL, name, f"pinned to {program}, not checked: {_why(exc)}", "check ROUTEQUOTE_RPC_URL_SOLANA"
        )
    value = info.get("value") if isinstance(info, dict) else None
    if not isinstance(value, dict):
        return Check(
            FAIL,
            name,
            f"{program} does not exist on Solana",
            "pin the program that owns the Solana OFT store",
        )
    if value.get("executable") is not True:
        return Check(
            FAIL,
            name,
            f"{program} is not an executable program",
            "pin the program that owns the Solana OFT store",
        )
    return Check(OK, name, f"{program} is an executable program on Solana")


async def _probe(name: str, probe: Callable[[], Awaitable[str]], fix: str) -> Check:
    try:
        return Check(OK, name, await probe())
    except Exception as exc:
        return Check(FAIL, name, _why(exc), fix)


async def check_lookups(http: httpx.AsyncClient, settings: Settings, timeout: float) -> list[Check]:
    """Circle Iris and LayerZero Scan (sessions), Across and Pyth Hermes (the live market's fees and SOL price):
    each read as the service reads it, with its own parser."""
    from routequote.core.assets import CHAINS, Chain, Token
    from routequote.core.routes import Provider
    from routequote.market.live_bridges import AcrossFeesSource, AcrossRoute, IrisFeesSource, PythHermesSource
    from routequote.observe.layerzero_scan import LayerZeroScanReader

    out: list[Check] = []
    live = settings.market == "live"
    cctp = (CHAINS[Chain.SOLANA].cctp_domain or 0, CHAINS[Chain.BASE].cctp_domain or 0)

    async def iris() -> str:
        await IrisFeesSource(http, settings.iris_url, [cctp], timeout).fetch()
        return "answers /v2/burn/USDC/fees (the same host serves /v2/messages attestations)"

    async def scan() -> str:
        reader = LayerZeroScanReader(settings.layerzero_scan_url, http, timeout=timeout)
        await reader.messages_by_source_tx("0x" + "00" * 32)
        return "answers /v1/messages/tx"

    async def across() -> str:
        route = AcrossRoute(
            CHAINS[Chain.BASE].chain_id or 0,
            _address("base:USDC"),
            _address("robinhood:USDG"),
            CHAINS[Chain.ROBINHOOD].chain_id or 0,
        )
        await AcrossFeesSource(http, settings.across_url, [route], 500_000_000, timeout).fetch()
        return "answers /suggested-fees"

    async def hermes() -> str:
        await PythHermesSource(http, settings.hermes_url, [Token.SOL], timeout).fetch()
        return "answers the SOL/USD price"

    lookups: list[tuple[str, str, Callable[[], Awaitable[str]], str, bool]] = [
        (
            "circle iris",
            "ROUTEQUOTE_IRIS_URL",
            iris,
            f"the {_routes_using(Provider.CIRCLE_CCTP)} CCTP routes",
            True,
        ),
        ("layerzero scan", "ROUTEQUOTE_LAYERZERO_SCAN_URL", scan, "the USDG OFT routes", True),
        ("across api", "ROUTEQUOTE_ACROSS_URL", across, "the live market's Across fees", live),
        ("pyth hermes", "ROUTEQUOTE_HERMES_URL", hermes, "the live market's SOL/USD price", live),
    ]
    probes = []
    for name, setting, probe, needed_by, used in lookups:
        url = getattr(settings, setting.removeprefix("ROUTEQUOTE_").lower())
        if not used:
            out.append(Check(OK, name, "not used by the embedded market"))
        elif not url:
            out.append(Check(WARN, name, f"not set: {needed_by} cannot finish", f"set {setting}"))
        else:
            probes.append(_probe(name, probe, f"check {setting}"))
    return out + list(await asyncio.gather(*probes))


def _address(endpoint: str) -> str:
    from routequote.core.assets import ASSETS

    return ASSETS[endpoint].address or ""


def check_market(settings: Settings) -> Check:
    if settings.market != "live":
        return Check(
            FAIL,
            "market",
            "the embedded snapshot: every quote and every prepared bound is modelled, not live",
            "set ROUTEQUOTE_MARKET=live with an RPC URL per chain",
        )
    if settings.market_fallback == "embedded":
        return Check(
            WARN,
            "market",
            "live, with the embedded fallback: a failing source is priced from the snapshot and those bounds "
            "are modelled",
            "set ROUTEQUOTE_MARKET_FALLBACK=none (a failing source then makes its routes unavailable)",
        )
    return Check(OK, "market", "live, no fallback: a failing source makes its routes unavailable")


def check_fee_recipients(settings: Settings) -> list[Check]:
    from routequote.core.fee_recipient import recipients_configured

    out = []
    for family, ok in recipients_configured(
        settings.fee_recipient_evm, settings.fee_recipient_solana
    ).items():
        setting = f"ROUTEQUOTE_FEE_RECIPIENT_{family.upper()}"
        if ok:
            out.append(Check(OK, f"fee recipient {family}", "set"))
        else:
            out.append(
                Check(
                    FAIL,
                    f"fee recipient {family}",
                    "the development placeholder: every action says fee_recipient_configured false",
                    f"set {setting} to your own address",
                )
            )
    return out


def check_signing_key(settings: Settings) -> Check:
    from routequote.core.manifest import key_id_for
    from routequote.discovery.keys import SigningKeyError, parse_private_key

    fix = "run `routequote keys generate` and set ROUTEQUOTE_SIGNING_KEY_PATH (or ROUTEQUOTE_SIGNING_KEY)"
    try:
        if settings.signing_key.strip():
            key = parse_private_key(settings.signing_key.strip(), "ROUTEQUOTE_SIGNING_KEY")
        elif settings.signing_key_path:
            key = parse_private_key(
                Path(settings.signing_key_path).read_bytes(), "ROUTEQUOTE_SIGNING_KEY_PATH"
            )
        else:
            return Check(
                FAIL,
                "signing key",
                "none set: a development key signs the manifest (callers pinning the key see it change)",
                fix,
            )
    except (OSError, SigningKeyError) as exc:
        what = f"cannot be read ({exc.strerror})" if isinstance(exc, OSError) else "is not an Ed25519 key"
        return Check(FAIL, "signing key", f"the configured key {what}", fix)
    return Check(OK, "signing key", f"Ed25519, key id {key_id_for(key.public_key())}")


async def check_database(settings: Settings) -> Check:
    from routequote.storage.sessions_sql import SqlSessionStore

    url = settings.database_url
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[-1].split("?", 1)[0]
        folder = Path(path).expanduser().parent if path and ":memory:" not in path else None
        if folder is not None and folder.exists() and not (folder.is_dir() and _writable(folder)):
            return Check(
                FAIL,
                "database",
                "the SQLite file's folder is not a writable directory",
                "check ROUTEQUOTE_DATABASE_URL and the folder's permissions",
            )
        return Check(
            OK,
            "database",
            "SQLite file (one machine; set a postgresql:// URL to share sessions across replicas)",
        )
    store = SqlSessionStore(url, connect_timeout=3.0)
    try:
        await store.ping()
    except Exception as exc:
        return Check(FAIL, "database", f"unreachable ({_why(exc)})", "check ROUTEQUOTE_DATABASE_URL")
    finally:
        await store.aclose()
    return Check(OK, "database", "PostgreSQL answers SELECT 1")


def _writable(folder: Path) -> bool:
    import os

    return os.access(folder, os.W_OK)


async def check_redis(settings: Settings) -> Check:
    if not settings.redis_url:
        note = "not set: rate limits are counted per process"
        return Check(OK if settings.workers <= 1 else WARN, "redis", note, "set ROUTEQUOTE_REDIS_URL")
    import redis.asyncio as aioredis

    client: Any = aioredis.Redis.from_url(settings.redis_url, socket_timeout=3, socket_connect_timeout=3)
    try:
        await client.ping()
    except Exception as exc:
        return Check(FAIL, "redis", f"unreachable ({type(exc).__name__})", "check ROUTEQUOTE_REDIS_URL")
    finally:
        await client.aclose()
    return Check(OK, "redis", "answers PING")


async def run_checks(
    settings: Settings,
    problems: list[str] | None = None,
    *,
    timeout: float = 5.0,
    lookup_timeout: float | None = None,
) -> list[Check]:
    """Every check, at once. The REST lookups get `timeout`, but at most the live market's 1.5 s, unless
    `lookup_timeout` says otherwise (a test whose fakes answer from its own process gives a hang bound)."""
    import httpx

    from routequote.core.assets import Chain

    out = [Check(FAIL, "configuration", line, "fix the setting") for line in problems or []]
    if not problems:
        out.append(Check(OK, "configuration", "every setting is valid"))
    out.append(check_market(settings))
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as http:
        rpcs: list[Awaitable[Check]] = []
        for chain in Chain:
            url = getattr(settings, f"rpc_url_{chain.value}")
            if not url:
                rpcs.append(_missing_rpc(chain, settings))
            elif chain is Chain.SOLANA:
                rpcs.append(check_solana(http, url))
            else:
                rpcs.append(check_evm(http, chain, url, settings.across_fill_search_blocks))
        rpc_checks, lookups, oft, database, redis = await asyncio.gather(
            asyncio.gather(*rpcs),
            check_lookups(http, settings, min(timeout, 1.5) if lookup_timeout is None else lookup_timeout),
            check_oft_program(http, settings),
            check_database(settings),
            check_redis(settings),
        )
    out += rpc_checks + lookups + [oft, database, redis, check_signing_key(settings)]
    out += check_fee_recipients(settings)
    return out


async def _missing_rpc(chain: Chain, settings: Settings) -> Check:
    from routequote.readiness import rpc_setting

    live = " nor quoted live" if settings.market == "live" else ""
    return Check(
        WARN,
        f"rpc {chain.value}",
        f"not set: the {_routes_touching(chain)} routes touching {chain.value} are not session-ready{live} "
        "(they say so)",
        f"set {rpc_setting(chain)}",
    )


def readiness_counts(settings: Settings) -> dict[str, Any]:
    """What capabilities will count under these settings (no network: a configured URL counts)."""
    from routequote.app import build_market
    from routequote.clock import SystemClock, UuidFactory
    from routequote.prepare import PrepareService
    from routequote.readiness import Observation, bounds_by_route, session_gaps
    from routequote.service import RouteQuoteService, ServiceConfig
    from routequote.storage.quotes import MemoryIdempotencyStore, MemoryQuoteStore

    service = RouteQuoteService(
        build_market(settings), MemoryQuoteStore(), SystemClock(), UuidFactory(), ServiceConfig()
    )
    prepare = PrepareService(service, settings, idempotency=MemoryIdempotencyStore())
    gaps = session_gaps(prepare.step_unsupported_reason, Observation.from_settings(settings))
    service.config.prepare_ready_routes = prepare.supported_routes()
    service.config.prepare_unavailable_reasons = prepare.unsupported_reasons()
    service.config.session_unavailable_details = gaps
    service.config.session_unavailable_reasons = {k: "; ".join(v) for k, v in gaps.items()}
    service.config.bounds = bounds_by_route(service.market)
    readiness: dict[str, Any] = service.capabilities()["route_readiness"]
    return readiness


def summary(readiness: dict[str, Any]) -> str:
    bounds = ", ".join(
        f"{n} {mode.replace('_', ' ')}" for mode, n in readiness["prepare_ready_bounds"].items() if n
    )
    return (
        f"readiness: {readiness['quotable_routes']} quotable, {readiness['prepare_ready_routes']} prepare-ready"
        f"{f' ({bounds})' if bounds else ''}, {readiness['session_ready_routes']} session-ready"
    )


def doctor_command(
    timeout: float = typer.Option(5.0, min=0.1, max=60, help="Seconds each dependency may take to answer"),
) -> None:
    """Check this configuration for going live: each dependency reached, one line per check (✓ / ✗ / ⚠ with
    the fix). Exits 1 when a live deployment would hand out something it cannot finish or would label
    wrongly (docs/going-live.md)."""
    from routequote.config_check import load_settings
    from routequote.logging import configure_logging

    settings, problems = load_settings()
    configure_logging("critical")  # the readers' own warnings would repeat what the lines say
    checks = asyncio.run(run_checks(settings, problems, timeout=timeout))
    for check in checks:
        typer.echo(check.line())
    if not problems:
        typer.echo(summary(readiness_counts(settings)))
    failed = sum(c.status == FAIL for c in checks)
    warned = sum(c.status == WARN for c in checks)
    typer.echo(f"{len(checks)} checks: {failed} failed, {warned} warnings")
    raise typer.Exit(1 if failed else 0)
