"""Configuration checked at start: one clear line per bad setting, all of them at once, no secret repeated;
create_app refuses with one ValueError listing them."""

from __future__ import annotations

import pytest

from routequote.app import create_app
from routequote.config import Settings
from routequote.config_check import ConfigurationError, load_settings, problems

CASES = [
    ({"market": "bogus"}, "ROUTEQUOTE_MARKET: unknown market 'bogus' (embedded or live)"),
    (
        {"market_fallback": "sometimes"},
        "ROUTEQUOTE_MARKET_FALLBACK: unknown fallback 'sometimes' (none or embedded)",
    ),
    (
        {"market": "live", "live_solana_pools": "no-equals"},
        "ROUTEQUOTE_LIVE_SOLANA_POOLS: every entry must be pool_id=ADDRESS",
    ),
    ({"rpc_url_base": "ftp://rpc.example"}, "ROUTEQUOTE_RPC_URL_BASE: not an http(s) or ws(s) URL"),
    ({"iris_url": "iris.example"}, "ROUTEQUOTE_IRIS_URL: not an http(s) URL"),
    (
        {"quote_store": "disk"},
        "ROUTEQUOTE_QUOTE_STORE: unknown store 'disk' (auto, memory, peers, sqlite or redis)",
    ),
    (
        {"quote_store": "memory", "workers": 2},
        "ROUTEQUOTE_QUOTE_STORE=memory cannot serve ROUTEQUOTE_WORKERS=2: a quote issued by one worker would be "
        "unknown to the others (unset it, or use peers, sqlite or redis)",
    ),
    ({"quote_store": "redis"}, "ROUTEQUOTE_QUOTE_STORE=redis needs ROUTEQUOTE_REDIS_URL"),
    ({"redis_url": "http://cache.example"}, "ROUTEQUOTE_REDIS_URL: not a redis://, rediss:// or unix:// URL"),
    # a database number the clients would read as 0, or send to be refused (issue 38)
    *(
        ({"redis_url": url}, "ROUTEQUOTE_REDIS_URL: the database number must be a whole number, 0 or more")
        for url in (
            "redis://cache.example/-1",
            "redis://cache.example/abc",
            "redis://c/1?db=x",
            "unix:///r?db=-2",
        )
    ),
    (
        {"database_url": "mysql://u:p@db/x"},
        "ROUTEQUOTE_DATABASE_URL: unsupported database backend 'mysql' (expected sqlite or postgresql)",
    ),
    (
        {"database_url": "sqlite+aiosqlite:///:memory:"},
        "ROUTEQUOTE_DATABASE_URL: the SQLite session store needs a file path (use MemorySessionStore for memory)",
    ),
    (
        {"finality_confirmations": "base=ten"},
        "ROUTEQUOTE_FINALITY_CONFIRMATIONS: bad entry 'base=ten' (want chain=N)",
    ),
    (
        {"finality_confirmations": "solana=3"},
        "ROUTEQUOTE_FINALITY_CONFIRMATIONS: bad entry 'solana=3' (want chain=N)",
    ),
    ({"fee_recipient_evm": "0x1234"}, "ROUTEQUOTE_FEE_RECIPIENT_EVM: must be a 0x-prefixed 20-byte address"),
    (
        {"fee_recipient_solana": "0OIl"},
        "ROUTEQUOTE_FEE_RECIPIENT_SOLANA: must be a base58 32-byte public key",
    ),
    ({"port": 0}, "ROUTEQUOTE_PORT: must be 1..65535"),
    ({"port": 65536}, "ROUTEQUOTE_PORT: must be 1..65535"),
    ({"host": " "}, "ROUTEQUOTE_HOST: must not be empty"),
    ({"workers": 0}, "ROUTEQUOTE_WORKERS: must be 1..64"),
    ({"base_url": "quotes.example.org"}, "ROUTEQUOTE_BASE_URL: not an http(s) URL with a host"),
    (
        {"log_level": "loud"},
        "ROUTEQUOTE_LOG_LEVEL: unknown level 'loud' (debug, info, warning, error, critical)",
    ),
    ({"rate_limit": "lots"}, "ROUTEQUOTE_RATE_LIMIT: 'lots' is not a limit like 120/minute (or off)"),
    ({"release_commit": "abc"}, "ROUTEQUOTE_RELEASE_COMMIT: must be 40 lower-case hex characters"),
    ({"watch_scope": "everyone"}, "ROUTEQUOTE_WATCH_SCOPE: unknown scope 'everyone' (leader or shared)"),
    (
        {"watch": True, "watch_interval_seconds": 5, "watch_lease_seconds": 5},
        "ROUTEQUOTE_WATCH_LEASE_SECONDS must be longer than ROUTEQUOTE_WATCH_INTERVAL_SECONDS (the lease is renewed "
        "each tick)",
    ),
    (
        {"otel_exporter": "jaeger"},
        "ROUTEQUOTE_OTEL_EXPORTER: unknown exporter 'jaeger' (none, console or otlp)",
    ),
]


@pytest.mark.parametrize(("overrides", "line"), CASES, ids=[",".join(c[0]) for c in CASES])
def test_each_bad_setting_is_one_clear_line(overrides: dict[str, object], line: str) -> None:
    assert problems(Settings(**overrides)) == [line]  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid configuration") as caught:
        create_app(Settings(**overrides))  # type: ignore[arg-type]
    assert isinstance(caught.value, ConfigurationError) and caught.value.lines == [line]


def test_defaults_are_valid() -> None:
    assert problems(Settings()) == []
    assert (
        problems(
            Settings(
                quote_store="redis",
                redis_url="redis://127.0.0.1:6379/0",
                rate_limit="off",
                database_url="postgresql://u:p@db:5432/rq",
                market="live",
                finality_confirmations="base=1,arbitrum=2",
            )
        )
        == []
    )


def test_all_problems_at_once_and_type_errors_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTEQUOTE_PORT", "eighty")
    monkeypatch.setenv("ROUTEQUOTE_QUOTE_TTL_SECONDS", "600")
    monkeypatch.setenv("ROUTEQUOTE_MARKET", "bogus")
    monkeypatch.setenv("ROUTEQUOTE_DATABASE_URL", "mysql://admin:hunter2-secret@db.internal/x")
    settings, lines = load_settings()
    assert [line.split(":")[0] for line in lines] == [
        "ROUTEQUOTE_PORT",
        "ROUTEQUOTE_QUOTE_TTL_SECONDS",
        "ROUTEQUOTE_MARKET",
        "ROUTEQUOTE_DATABASE_URL",
    ]
    assert settings.port == 8080 and settings.quote_ttl_seconds == 60  # the bad ones fell back to defaults
    assert not any("hunter2" in line or "internal" in line for line in lines)


def test_an_unparsable_database_url_is_not_repeated() -> None:
    [line] = problems(Settings(database_url="postgresql://u:hunter2@[::1"))
    assert line.startswith("ROUTEQUOTE_DATABASE_URL:") and "hunter2" not in line
