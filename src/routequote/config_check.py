"""Configuration checked at start: every bad setting found at once, one clear line each, never its value when
that value may hold a secret (URLs with passwords, keys).

`load_settings()` reads the environment (pydantic's own type and range errors become lines too) and
`problems(settings)` checks what types cannot: names of markets and stores, URL schemes, addresses, lists.
`load_settings()` also asks Redis, when one is configured, whether it has the database the URL selects.
`routequote serve` prints the lines and exits 2; `create_app` raises one `ConfigurationError` listing them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from routequote.config import Settings
from routequote.surfaces.forwarded import trusted_proxies

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
MAX_WORKERS = 64


class ConfigurationError(ValueError):
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("invalid configuration:\n" + "\n".join(f"  - {line}" for line in lines))


def _env(name: str) -> str:
    return f"ROUTEQUOTE_{name.upper()}"


def load_settings(**overrides: Any) -> tuple[Settings, list[str]]:
    """Settings from the environment, and the problems found. A setting of the wrong type or out of range is a
    problem line, and is replaced by its default so that the other settings are still checked."""
    try:
        settings = Settings(**overrides)
        lines: list[str] = []
    except ValidationError as exc:
        lines, bad = [], set()
        for err in exc.errors(include_url=False, include_input=False):
            field = str(err["loc"][0]) if err.get("loc") else "?"
            bad.add(field)
            lines.append(f"{_env(field)}: {err['msg']}")
        defaults = {f: Settings.model_fields[f].default for f in bad if f in Settings.model_fields}
        settings = Settings(**{**overrides, **defaults})
    found = lines + problems(settings)
    if settings.redis_url and not any(line.startswith("ROUTEQUOTE_REDIS_URL") for line in found):
        found += redis_database_problems(settings.redis_url)
    return settings, found


def _url(value: str, schemes: tuple[str, ...]) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in schemes and bool(parts.netloc or parts.scheme == "unix")


def problems(settings: Settings) -> list[str]:  # noqa: C901 - one flat list of rules reads best
    out: list[str] = []
    s = settings
    if s.market not in ("embedded", "live"):
        out.append(f"ROUTEQUOTE_MARKET: unknown market {s.market[:20]!r} (embedded or live)")
    if s.market_fallback not in ("none", "embedded"):
        out.append(
            f"ROUTEQUOTE_MARKET_FALLBACK: unknown fallback {s.market_fallback[:20]!r} (none or embedded)"
        )
    if s.market == "live":
        for item in filter(None, (x.strip() for x in s.live_solana_pools.split(","))):
            pool_id, sep, address = item.partition("=")
            if not sep or not pool_id.strip() or not address.strip():
                out.append("ROUTEQUOTE_LIVE_SOLANA_POOLS: every entry must be pool_id=ADDRESS")
                break
    for name in ("rpc_url_solana", "rpc_url_base", "rpc_url_arbitrum", "rpc_url_robinhood"):
        value = getattr(s, name)
        if value and not _url(value, ("http", "https", "ws", "wss")):
            out.append(f"{_env(name)}: not an http(s) or ws(s) URL")
    try:
        trusted_proxies(s.trusted_proxies)
    except ValueError as exc:
        out.append(str(exc))
    for name in ("iris_url", "across_url", "hermes_url", "layerzero_scan_url"):
        value = getattr(s, name)
        if value and not _url(value, ("http", "https")):
            out.append(f"{_env(name)}: not an http(s) URL")
    if s.watch_scope not in ("leader", "shared"):
        out.append(f"ROUTEQUOTE_WATCH_SCOPE: unknown scope {s.watch_scope[:20]!r} (leader or shared)")
    if s.watch and s.watch_lease_seconds <= s.watch_interval_seconds:
        out.append(
            "ROUTEQUOTE_WATCH_LEASE_SECONDS must be longer than ROUTEQUOTE_WATCH_INTERVAL_SECONDS (the lease is "
            "renewed each tick)"
        )
    if s.quote_store not in ("auto", "memory", "peers", "sqlite", "redis"):
        out.append(
            f"ROUTEQUOTE_QUOTE_STORE: unknown store {s.quote_store[:20]!r} (auto, memory, peers, sqlite or redis)"
        )
    if s.quote_store == "memory" and s.workers > 1:
        out.append(
            f"ROUTEQUOTE_QUOTE_STORE=memory cannot serve ROUTEQUOTE_WORKERS={s.workers}: a quote issued by one "
            "worker would be unknown to the others (unset it, or use peers, sqlite or redis)"
        )
    if s.quote_store == "redis" and not s.redis_url:
        out.append("ROUTEQUOTE_QUOTE_STORE=redis needs ROUTEQUOTE_REDIS_URL")
    if s.redis_url and not _url(s.redis_url, ("redis", "rediss", "unix")):
        out.append("ROUTEQUOTE_REDIS_URL: not a redis://, rediss:// or unix:// URL")
    elif s.redis_url and redis_database(s.redis_url) is None:
        out.append("ROUTEQUOTE_REDIS_URL: the database number must be a whole number, 0 or more")
    out.extend(_database(s.database_url))
    try:
        s.confirmations()
    except ValueError as exc:
        out.append(str(exc))
    out.extend(_recipients(s))
    if not 1 <= s.port <= 65535:
        out.append("ROUTEQUOTE_PORT: must be 1..65535")
    if not s.host.strip():
        out.append("ROUTEQUOTE_HOST: must not be empty")
    if not 1 <= s.workers <= MAX_WORKERS:
        out.append(f"ROUTEQUOTE_WORKERS: must be 1..{MAX_WORKERS}")
    if s.base_url and not _url(s.base_url, ("http", "https")):
        out.append("ROUTEQUOTE_BASE_URL: not an http(s) URL with a host")
    if s.log_level.lower() not in LOG_LEVELS:
        out.append(f"ROUTEQUOTE_LOG_LEVEL: unknown level {s.log_level[:20]!r} ({', '.join(LOG_LEVELS)})")
    out.extend(_rate_limit(s.rate_limit))
    if s.release_commit and not (
        len(s.release_commit) == 40 and all(c in "0123456789abcdef" for c in s.release_commit)
    ):
        out.append("ROUTEQUOTE_RELEASE_COMMIT: must be 40 lower-case hex characters")
    from routequote.observability import otel_problem

    otel = otel_problem(s.otel_exporter)
    if otel:
        out.append(otel)
    return out


def redis_database(url: str) -> int | None:
    """The database number a Redis URL selects (its path, or `?db=`); None when either is not a whole number 0 or
    more (redis-py would quietly use database 0 for a path such as `/abc`)."""
    from urllib.parse import parse_qs, unquote

    parts = urlsplit(url)
    given = [] if parts.scheme == "unix" else [unquote(parts.path).strip("/")]
    given += parse_qs(parts.query).get("db", [])
    db = 0
    for value in given:
        if value == "" and given[0] is value:
            continue  # no path: database 0, or the query's
        if not value.isascii() or not value.isdigit():
            return None
        db = int(value)
    return db


REDIS_CHECK_TIMEOUT_SECONDS = 2.0  # how long the start-up check waits for Redis (then it does not judge)


def redis_database_problems(url: str, timeout_seconds: float | None = None) -> list[str]:
    """At start (`routequote serve`): a database number this Redis refuses is a configuration error, known by
    asking the server. A Redis that cannot be asked now (unreachable, other credentials, no answer within
    `timeout_seconds`, by default REDIS_CHECK_TIMEOUT_SECONDS) is not judged here: /readyz says why it cannot
    serve."""
    if timeout_seconds is None:
        timeout_seconds = REDIS_CHECK_TIMEOUT_SECONDS
    from redis import ConnectionPool, Redis, RedisError

    from routequote.storage.store_faults import fault_of

    db = redis_database(url)
    if not db:
        return []
    options = {"socket_timeout": timeout_seconds, "socket_connect_timeout": timeout_seconds}
    try:
        with Redis.from_url(url, **options) as client:  # its connection SELECTs the database first
            client.ping()
        return []
    except RedisError as exc:
        if fault_of(exc) != "database_refused":
            return []
    count = None
    pool = ConnectionPool.from_url(url, **options)
    pool.connection_kwargs["db"] = 0
    try:
        with Redis(connection_pool=pool) as client:
            count = int(client.config_get("databases").get("databases", 0)) or None
    except (RedisError, ValueError):  # CONFIG may be refused (managed Redis): the refusal alone is enough
        pass
    finally:
        pool.disconnect()
    has = f": this Redis has {count} (0..{count - 1})" if count else ""
    return [f"ROUTEQUOTE_REDIS_URL: Redis refuses database {db}{has}"]


def _database(url: str) -> list[str]:
    from routequote.storage.sessions_sql_connections import normalise_url

    try:
        normalise_url(url)
    except ValueError as exc:  # its message never repeats the URL (it may hold a password)
        return [f"ROUTEQUOTE_DATABASE_URL: {exc}"]
    return []


def _recipients(s: Settings) -> list[str]:
    from routequote.core.assets import Chain
    from routequote.prepare import valid_address

    out = []
    if not valid_address(Chain.BASE, s.fee_recipient_evm):
        out.append("ROUTEQUOTE_FEE_RECIPIENT_EVM: must be a 0x-prefixed 20-byte address")
    if not valid_address(Chain.SOLANA, s.fee_recipient_solana):
        out.append("ROUTEQUOTE_FEE_RECIPIENT_SOLANA: must be a base58 32-byte public key")
    if s.usdg_oft_solana_program and not valid_address(Chain.SOLANA, s.usdg_oft_solana_program):
        out.append("ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM: must be a base58 32-byte public key")
    return out


def _rate_limit(spec: str) -> list[str]:
    if spec.strip().lower() in ("off", "none", "0", ""):
        return []
    from limits import parse

    try:
        parse(spec)
    except ValueError:
        return [f"ROUTEQUOTE_RATE_LIMIT: {spec[:40]!r} is not a limit like 120/minute (or off)"]
    return []
