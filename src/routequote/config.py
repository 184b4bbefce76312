"""Settings: every knob is a ROUTEQUOTE_* environment variable (read once, in create_app / the CLI)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from routequote.core.fee_recipient import DEV_FEE_RECIPIENT_EVM, DEV_FEE_RECIPIENT_SOLANA


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ROUTEQUOTE_", extra="ignore")

    host: str = Field("127.0.0.1", description="Interface `routequote serve` binds to")
    port: int = Field(8080, description="Port `routequote serve` listens on")
    workers: int = Field(1, description="uvicorn worker processes")
    base_url: str = Field(
        "", description="Public base URL used in links (default: derived from host and port)"
    )
    trusted_proxies: str = Field(
        "",
        description="Reverse proxies (IPs or CIDR networks, comma-separated) whose X-Forwarded-For / "
        "X-Forwarded-Proto name the client; empty (default): none, the client is the TCP peer",
    )
    allowed_hosts: str = Field(
        "", description="Comma-separated Host header values the MCP endpoint accepts (besides localhost)"
    )
    market: str = Field("embedded", description="Market source: `embedded` (default) or `live`")
    snapshot_path: str = Field(
        "", description="Alternative embedded snapshot file (default: the packaged one)"
    )
    rpc_url_solana: str = Field(
        "", description="Solana JSON-RPC URL (live market: Raydium / Orca pool accounts)"
    )
    rpc_url_base: str = Field(
        "", description="Base JSON-RPC URL (live market: Uniswap v3 pool, Chainlink feeds)"
    )
    rpc_url_arbitrum: str = Field("", description="Arbitrum One JSON-RPC URL (live market: Uniswap v3 pool)")
    rpc_url_robinhood: str = Field(
        "",
        description="Robinhood Chain JSON-RPC URL (live market: Uniswap v3 pool, USDG OFT fee, USDG/USD feed)",
    )
    iris_url: str = Field(
        "https://iris-api.circle.com", description="Circle Iris API base (CCTP fast-transfer fees)"
    )
    layerzero_scan_url: str = Field(
        "https://scan.layerzero-api.com",
        description="LayerZero Scan API base (finds the Solana delivery of a session's USDG OFT send; a lead, "
        "verified on chain)",
    )
    usdg_oft_solana_program: str = Field(
        "",
        description="The USDG OFT program on Solana whose lz_receive delivers USDG from Robinhood; not pinned by "
        "this build: unset, an OFT arrival on Solana cannot be verified and is never accepted",
    )
    usdg_oft_pin_interval_seconds: float = Field(
        600.0,
        ge=1,
        le=86400,
        description="How often a live market with Robinhood and Solana RPC URLs re-derives the USDG OFT program "
        "from chain state (peers(30168) on the Robinhood OFT, then the Solana owner of that store)",
    )
    across_url: str = Field("https://app.across.to/api", description="Across API base (suggested-fees)")
    hermes_url: str = Field("https://hermes.pyth.network", description="Pyth Hermes base (SOL/USD price)")
    live_solana_pools: str = Field(
        "",
        description="Solana pool accounts for the live market: `pool_id=ADDRESS,...` (e.g. "
        "`solana:raydium_clmm:SOL-USDC=...`); unset pools read the pinned mainnet accounts of the snapshot",
    )
    market_fallback: str = Field(
        "none",
        description="`none` (default): a failing live source makes its routes unavailable; `embedded`: "
        "price that component from the embedded snapshot, and label the quote as such",
    )
    market_timeout_seconds: float = Field(
        1.5, gt=0, le=1.5, description="Per-source upstream timeout (live market)"
    )
    market_cache_ttl_seconds: float = Field(2.0, ge=0, le=60, description="How long a live reading is reused")
    market_failure_threshold: int = Field(
        3, ge=1, description="Consecutive failures that open a source's breaker"
    )
    market_cooldown_seconds: float = Field(
        15.0, ge=0, description="How long an open breaker blocks upstream calls"
    )
    quote_ttl_seconds: int = Field(60, ge=1, le=60, description="Quote time to live")
    rate_limit: str = Field("120/minute", description="Per-client limit on the quote operations, or `off`")
    redis_url: str = Field("", description="Redis URL for shared rate limits (default: in-process)")
    quote_store: str = Field(
        "auto",
        description="Issued quotes and prepare idempotency records: `auto` (default: `memory` with one worker, "
        "`peers` with more), `memory` (per process; one worker only), `peers` (each worker keeps its own quotes "
        "in memory and asks the issuing worker over a private local socket), `sqlite` (a file every worker on "
        "this machine shares) or `redis` (shared by all workers and instances; needs ROUTEQUOTE_REDIS_URL)",
    )
    quote_store_path: str = Field(
        "",
        description="The `sqlite` quote store's file (default: beside an SQLite session database, else "
        "var/routequote-quotes.sqlite3)",
    )
    database_url: str = Field(
        "sqlite+aiosqlite:///var/routequote.sqlite3",
        description="Session database: an SQLite file (default, embedded; the directory is created) or "
        "`postgresql://...` shared by several replicas (drivers aiosqlite / asyncpg; migrations run at start)",
    )
    database_pool_size: int = Field(
        20,
        ge=1,
        le=200,
        description="Session database connections kept open per process (as many again may open under bursts); "
        "size it to the concurrent session requests a process serves, so connections are not opened per request",
    )
    session_retention_days: float = Field(
        7.0,
        gt=0,
        le=3650,
        description="Days after its last change that a finished session (or one that never had funds in flight) "
        "is deleted, its receipt archived; expired login challenges and access tokens go at once",
    )
    receipt_retention_days: float = Field(
        365.0, ge=0, le=36500, description="Days an archived session receipt is kept (0: forever)"
    )
    retention_interval_seconds: float = Field(
        60.0, ge=1, le=86400, description="How often the background purge runs (bounded batches)"
    )
    max_open_sessions_per_client: int = Field(
        100, ge=0, description="Unfinished sessions one client may hold at once (0: no cap); past it, 429"
    )
    event_stream_max_per_client: int = Field(
        8,
        ge=1,
        le=10_000,
        description="Open event streams (GET /v2/session/{id}/events and MCP task listens) per client; past it, 429",
    )
    event_stream_heartbeat_seconds: float = Field(
        15.0, gt=0, le=300, description="A heartbeat comment on an idle event stream this often"
    )
    event_stream_poll_seconds: float = Field(
        1.0,
        gt=0,
        le=60,
        description="How often a process reads, in one query, the versions of the sessions its event streams follow "
        "(commits in the process wake them at once; other workers' and replicas' are seen at the next read)",
    )
    event_stream_send_timeout_seconds: float = Field(
        10.0, gt=0, le=300, description="A stream whose client reads nothing for this long is dropped"
    )
    finality_confirmations: str = Field(
        "base=10,arbitrum=10,robinhood=10",
        description="Confirmations an EVM transaction needs before a session treats it as final: `chain=N,...`",
    )
    upstream_max_bytes: int = Field(
        8 * 1024 * 1024,
        ge=65536,
        le=256 * 1024 * 1024,
        description="Largest answer read from a chain RPC or Circle Iris when observing, in bytes; reading "
        "stops past it and the observation is unavailable (market sources use the same 8 MiB bound)",
    )
    across_fill_search_blocks: int = Field(
        20_000, ge=1, description="How many recent destination blocks a session searches for an Across fill"
    )
    watch: bool = Field(
        True,
        description="Follow every session waiting on the chain (awaiting_source_receipt, awaiting_destination) "
        "and advance it by the observe rules without another call; 0 turns the watcher off (observe still works)",
    )
    watch_interval_seconds: float = Field(
        2.0,
        ge=0.05,
        le=3600,
        description="Pause between two watcher ticks (each tick looks at every watched session)",
    )
    watch_lease_seconds: float = Field(
        15.0,
        ge=0.5,
        le=3600,
        description="Lifetime of the watcher's lease in the session database, renewed each tick: with several workers "
        "or replicas one holds it at a time, and another takes over within this and one tick after the holder dies",
    )
    watch_scope: str = Field(
        "leader",
        description="`leader` (default): one process (worker or replica) watches every session; `shared`: each "
        "replica leases at most ROUTEQUOTE_WATCH_BATCH sessions per tick, so several share the watch (one per session)",
    )
    watch_batch: int = Field(
        2000,
        ge=1,
        le=1_000_000,
        description="Most sessions one process looks at per tick (oldest change first)",
    )
    watch_max_backoff_seconds: float = Field(
        60.0,
        ge=1,
        le=3600,
        description="Longest wait before the watcher retries a session or chain whose read failed",
    )
    watch_bridge_lookup_seconds: float = Field(
        10.0,
        ge=1,
        le=3600,
        description="How long the watcher keeps one pending message's Circle Iris or LayerZero Scan answer: at "
        "most one lookup per pending message per this many seconds (observe always looks up now)",
    )
    max_header_bytes: int = Field(
        16_384, ge=1024, description="Request line plus headers, in bytes, before answering 431 (then close)"
    )
    max_header_count: int = Field(
        100, ge=8, description="Request header fields before answering 431 (then close)"
    )
    header_timeout_seconds: float = Field(
        10.0,
        gt=0,
        le=300,
        description="Time for a request's headers to arrive (idle or trickling sockets close)",
    )
    body_timeout_seconds: float = Field(
        30.0, gt=0, le=600, description="Time for a request body to arrive (408)"
    )
    keep_alive_timeout_seconds: int = Field(
        5, ge=1, le=300, description="Idle keep-alive connection lifetime"
    )
    login_rate_limit: str = Field(
        "20/minute", description="v1 wallet-login attempts per wallet and per client, or `off`"
    )
    login_challenge_ttl_seconds: int = Field(
        300, ge=30, le=3600, description="Lifetime of a v1 login challenge"
    )
    access_token_ttl_seconds: int = Field(3600, ge=60, le=86400, description="Lifetime of a v1 access token")
    max_inflight_quotes: int = Field(256, ge=1, description="Quotes computed at once before answering 503")
    log_level: str = Field("info", description="Log level")
    graceful_shutdown_seconds: int = Field(  # whole seconds, as uvicorn takes them
        20,
        ge=0,
        le=600,
        description="On SIGTERM, how long in-flight requests may take to finish before exit",
    )
    otel_exporter: str = Field(
        "",
        description="OpenTelemetry traces: empty/`none` (default, nothing imported), `console` (stderr) or "
        "`otlp` (OTEL_EXPORTER_OTLP_* variables); needs the `otel` extra",
    )
    otel_service_name: str = Field("routequote", description="service.name of the exported spans")
    # Development placeholders: operators MUST set their own recipients (see docs/prepare.md).
    fee_recipient_evm: str = Field(
        DEV_FEE_RECIPIENT_EVM,
        description="EVM address receiving the 1 bp service fee (default: a development placeholder; set it)",
    )
    fee_recipient_solana: str = Field(
        DEV_FEE_RECIPIENT_SOLANA,
        description="Solana wallet receiving the 1 bp service fee (default: a development placeholder; set it)",
    )
    webhook_allow_hosts: str = Field(
        "",
        description="Comma-separated hosts a session webhook may reach over http or at a non-public address "
        "(loopback, private, link-local); every other webhook URL must be https to a public address",
    )
    webhook_interval_seconds: float = Field(
        1.0, gt=0, le=60, description="How often the webhook deliverer looks for events to send"
    )
    signing_key_path: str = Field(
        "", description="Ed25519 manifest signing key (PEM); dev key generated if unset"
    )
    signing_key: str = Field(
        "",
        description="Ed25519 manifest signing key in the environment: PKCS#8 PEM or base64 of the 32-byte seed",
    )
    dev_signing_key_path: str = Field(
        "var/routequote-dev-signing-key.pem",
        description="Where a generated development signing key is kept (empty: memory only, new key each start)",
    )
    manifest_valid_seconds: int = Field(
        86400, ge=60, le=30 * 86400, description="Validity window of a manifest"
    )
    security_contact: str = Field(
        "", description="RFC 9116 Contact URI for vulnerability reports (default: the /security page)"
    )
    release_commit: str = Field("", description="Release commit (40 hex); read from git when unset")

    def confirmations(self) -> dict[str, int]:
        """`finality_confirmations` parsed; a malformed entry is a configuration error at start."""
        out: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in self.finality_confirmations.split(","))):
            chain, sep, value = part.partition("=")
            if (
                not sep
                or not value.strip().isdigit()
                or chain.strip() not in ("base", "arbitrum", "robinhood")
            ):
                raise ValueError(f"ROUTEQUOTE_FINALITY_CONFIRMATIONS: bad entry {part[:40]!r} (want chain=N)")
            out[chain.strip()] = max(1, int(value))
        return out

    def resolved_quote_store(self) -> str:
        """`auto` made concrete: one worker keeps quotes in memory; several ask each other (`peers`), which is
        plain memory with one worker."""
        if self.quote_store in ("auto", "peers"):
            return "memory" if self.workers <= 1 else "peers"
        return self.quote_store

    def resolved_quote_store_path(self) -> str:
        if self.quote_store_path:
            return self.quote_store_path
        prefix = "sqlite+aiosqlite:///"
        if self.database_url.startswith(prefix) and ":memory:" not in self.database_url:
            return self.database_url[len(prefix) :].split("?", 1)[0] + "-quotes"
        return "var/routequote-quotes.sqlite3"

    def resolved_base_url(self) -> str:
        return self.base_url.rstrip("/") or f"http://{self.host}:{self.port}"
