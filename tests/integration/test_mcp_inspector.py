"""An independent MCP host: MCP Inspector's CLI (npm `@modelcontextprotocol/inspector`, TypeScript SDK)
lists our tools and calls `service_v2_quote` over Streamable HTTP.

The package is installed at test time with npm into a cache directory under the system temp dir (never
into the repo). 0.15.0 is the newest release that runs on Node 20 (later ones need Node >= 22.7.5).
The test skips when node/npm are missing or the install fails (offline).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server
from tests.support.spec_schema import QUOTE_RESPONSE, validate

from routequote.app import create_app
from routequote.config import Settings

pytestmark = pytest.mark.node
INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"
# RQ_INSPECTOR_CACHE: another install directory (parallel runs must not share a half-written one)
CACHE = Path(
    os.environ.get("RQ_INSPECTOR_CACHE") or Path(tempfile.gettempdir()) / "routequote-mcp-inspector-0.15.0"
)


@pytest.fixture(scope="module")
def inspector() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm not found on PATH")
    exe = CACHE / "node_modules" / ".bin" / "mcp-inspector"
    if not exe.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
                str(CACHE),
                INSPECTOR,
            ],
            capture_output=True,
            text=True,
            timeout=240,
        )
        if done.returncode != 0 or not exe.exists():
            pytest.skip(f"could not install {INSPECTOR}: {done.stderr[-300:]}")
    return exe


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    port = free_port()
    app = create_app(Settings(port=port, rate_limit="off", **OBSERVABLE))
    with running_server(app, port) as url:
        yield url + "/mcp"


def run(inspector: Path, url: str, *args: str) -> dict:  # type: ignore[type-arg]
    done = subprocess.run(
        [str(inspector), "--cli", url, "--transport", "http", *args],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr[-1000:]
    return json.loads(done.stdout)


def test_inspector_lists_tools_and_calls_quote(inspector: Path, mcp_url: str) -> None:
    listed = run(inspector, mcp_url, "--method", "tools/list")["tools"]
    names = {t["name"] for t in listed}
    assert names == {
        "service_status",
        "service_manifest",
        "service_v2_capabilities",
        "service_v2_quote",
        "service_quote",
        "service_start_wallet_auth",
        "service_finish_wallet_auth",
        "service_create_session",
        "service_read_session",
        "service_prepare_source_action",
        "service_verify_source_receipt",
        "service_prepare_cctp_action",
        "service_observe_cctp",
        "service_prepare_destination_action",
        "service_observe_destination",
    }
    assert len(listed) == 15 and all(t["inputSchema"]["additionalProperties"] is False for t in listed)
    quote_tool = next(t for t in listed if t["name"] == "service_v2_quote")
    assert quote_tool["inputSchema"]["additionalProperties"] is False
    assert (
        quote_tool["annotations"]["readOnlyHint"] is True
        and quote_tool["annotations"]["idempotentHint"] is False
    )

    args = ["from_chain=solana", "from_token=SOL", "to_chain=base", "to_token=USDC", "amount_usd=100"]
    result = run(
        inspector,
        mcp_url,
        "--method",
        "tools/call",
        "--tool-name",
        "service_v2_quote",
        *[x for a in args for x in ("--tool-arg", a)],
    )
    assert result.get("isError") in (None, False)
    structured = result["structuredContent"]
    # /mcp's text block is the decision view of the quote in structuredContent (about 1 KB, docs/api.md)
    assert json.loads(result["content"][0]["text"])["decision"]["quote_id"] == structured["quote"]["quote_id"]
    validate(structured["quote"], QUOTE_RESPONSE)
    assert structured["quote"]["intent"]["amount_usd"] == 100  # sent as a JSON number per the schema
    assert structured["guidance"]["automatic_selection_forbidden"] is True

    bad = run(
        inspector,
        mcp_url,
        "--method",
        "tools/call",
        "--tool-name",
        "service_v2_quote",
        "--tool-arg",
        "from_chain=solana",
        "--tool-arg",
        "amount_usd=100",
    )
    assert bad["isError"] is True and bad["structuredContent"]["error"]["code"] == "request_rejected"


def test_inspector_drives_the_v2_profile(inspector: Path, mcp_url: str) -> None:
    # this Inspector posts to the origin's /mcp unless the path ends with /mcp: the profile's /v2/mcp alias
    v2 = mcp_url.removesuffix("/mcp") + "/v2/mcp"
    listed = run(inspector, v2, "--method", "tools/list")["tools"]
    names = {t["name"] for t in listed}
    assert {"service_v2_prepare", "service_v2_session_create", "service_v2_session_observe"} <= names
    assert len(listed) == 10 and all(t["inputSchema"]["additionalProperties"] is False for t in listed)
    args = [
        "from_chain=base",
        "from_token=ETH",
        "to_chain=arbitrum",
        "to_token=ETH",
        "amount_usd=1000",
        "detail=full",
    ]
    result = run(
        inspector,
        v2,
        "--method",
        "tools/call",
        "--tool-name",
        "service_v2_quote",
        *[x for a in args for x in ("--tool-arg", a)],
    )
    quote = result["structuredContent"]["quote"]
    validate(quote, QUOTE_RESPONSE)
    # wei amounts above 2**53 arrive as exact decimal strings a JavaScript host reads unchanged
    assert (
        isinstance(quote["route"]["expected_output_base"], str)
        and int(quote["route"]["expected_output_base"]) > 2**53
    )
    # the spec-fixed integer passed through JavaScript's JSON.parse: rounded to the nearest double (this
    # Inspector prints it back); its decimal twin arrived exact and equals the summary's input
    exact = quote["estimated_input_base_decimal"]
    assert (
        exact
        == quote["route"]["input_base"]
        == quote["direct_route_summary"]["steps"][0]["expected_input_base"]
    )
    rounded = quote["intent"]["estimated_input_base"]
    assert float(rounded) == float(exact) and rounded != int(exact) and int(exact) > 2**53
    bad = run(
        inspector,
        v2,
        "--method",
        "tools/call",
        "--tool-name",
        "service_v2_session_get",
        "--tool-arg",
        "session_id=00000000-0000-4000-8000-000000000000",
    )
    assert bad["isError"] is True and bad["structuredContent"]["error"]["reason_class"] == "invalid_arguments"
