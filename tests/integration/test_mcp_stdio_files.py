"""`routequote mcp` over stdio keeps its files in the per-user data directory (issue 39: it wrote `var/` into
whatever directory the agent host started it in). Run with the official MCP client as a host would, from an
empty working directory: the directory stays empty, the session database and the development key are under
$XDG_DATA_HOME/routequote, and a setting given in the environment still wins."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from routequote.user_data import stdio_settings, user_data_dir

QUOTE = {"from_chain": "base", "from_token": "ETH", "to_chain": "base", "to_token": "USDC", "amount_usd": 50}


def test_the_per_user_directory_follows_xdg() -> None:
    assert user_data_dir({"XDG_DATA_HOME": "/data/u", "HOME": "/home/u"}) == Path("/data/u/routequote")
    # a relative XDG_DATA_HOME is invalid under the XDG rule and ignored
    assert user_data_dir({"XDG_DATA_HOME": "rel", "HOME": "/home/u"}) == Path(
        "/home/u/.local/share/routequote"
    )
    assert user_data_dir({"HOME": "/home/u"}) == Path("/home/u/.local/share/routequote")


def test_settings_from_the_environment_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    monkeypatch.setenv("ROUTEQUOTE_DATABASE_URL", "sqlite+aiosqlite:///from-env.db")
    assert stdio_settings(env).database_url == "sqlite+aiosqlite:///from-env.db"
    monkeypatch.delenv("ROUTEQUOTE_DATABASE_URL")
    chosen = stdio_settings(env, database_url="sqlite+aiosqlite:///elsewhere.db", dev_signing_key_path="")
    assert chosen.database_url == "sqlite+aiosqlite:///elsewhere.db" and chosen.dev_signing_key_path == ""
    defaulted = stdio_settings(env, rate_limit="off")
    where = tmp_path / "xdg" / "routequote"
    assert defaulted.database_url == f"sqlite+aiosqlite:///{where}/routequote.sqlite3"
    assert defaulted.dev_signing_key_path == str(where / "routequote-dev-signing-key.pem")
    assert defaulted.rate_limit == "off" and (where.stat().st_mode & 0o777) == 0o700


async def test_stdio_writes_nothing_into_the_hosts_working_directory(tmp_path: Path) -> None:
    exe = shutil.which("routequote", path=str(Path(sys.executable).parent))
    assert exe is not None
    work, xdg = tmp_path / "host-cwd", tmp_path / "xdg"
    work.mkdir()
    for profile in ("spec", "v2"):
        params = StdioServerParameters(
            command=exe,
            args=["mcp", "--profile", profile],
            env={"ROUTEQUOTE_LOG_LEVEL": "warning", "XDG_DATA_HOME": str(xdg)},
            cwd=str(work),
        )
        async with Client(params) as c:
            result = await c.call_tool("service_v2_quote", QUOTE)
            assert result.is_error is False
            manifest = (await c.call_tool("service_manifest", {})).structured_content["manifest"]
            assert manifest["signing_key"]["development_key"] is True
    assert list(work.iterdir()) == []
    kept = sorted(p.name for p in (xdg / "routequote").iterdir())
    assert "routequote.sqlite3" in kept and "routequote-dev-signing-key.pem" in kept, kept
