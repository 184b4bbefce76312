"""The redaction rules, request-id sanity, stdlib records through the one handler, and OpenTelemetry being
optional (nothing imported when off, a clear start-up error when asked for without the package, spans with the
in-memory exporter when it is installed)."""

from __future__ import annotations

import importlib.util
import json
import logging
import subprocess
import sys
from typing import Any

import httpx
import pytest

from routequote.config import Settings
from routequote.observability import (
    REDACTED,
    TracingUnavailable,
    otel_problem,
    redact_event,
    redact_record,
    redact_text,
    sane_request_id,
    setup_tracing,
)

TOKEN = "Q2hvb3NlIGEgcmFuZG9tIHRva2VuIGZvciB0aGlzIHRlc3Qx"  # 48 base64url characters
HEX_KEY = "0x" + "4f" * 32
ED25519 = "ab" * 64
KEYPAIR = "3" + "x" * 86
MNEMONIC = "abandon ability able about above absent absorb abstract absurd abuse access accident"


@pytest.mark.parametrize(
    "text",
    [
        f"Authorization: Bearer {TOKEN}",
        f"authorization=Basic {TOKEN}",
        f"[(b'x-routequote-session-token', b'{TOKEN}')]",
        f'{{"sessionToken": "{TOKEN}"}}',
        f"session_token={TOKEN}&x=1",
        f'{{"access_token":"{TOKEN}"}}',
        f"idempotency_key: {TOKEN}",
        f'"idempotencyKey": "{TOKEN}"',
        f'{{"login_signature": "{TOKEN}"}}',
        f"cookie: sid={TOKEN}",
        f"sent bearer {TOKEN} upstream",
        f"key {HEX_KEY} in a message",
        f"secret key {ED25519}.",
        f"keypair {KEYPAIR}",
    ],
)
def test_free_text_loses_the_credential(text: str) -> None:
    out = redact_text(text)
    assert REDACTED in out
    for secret in (TOKEN, HEX_KEY[2:], ED25519, KEYPAIR):
        assert secret not in out


def test_free_text_that_is_not_secret_is_kept() -> None:
    for text in (
        "quote solana:SOL->base:USDC issued in 3 ms",
        "from_token=USDC to_token=ETH",
        "session 9b2f0c1e-1c1d-4f3a-9a51-4d2a0f6b7e11 created",
        "Started server process [123]",
    ):
        assert redact_text(text) == text


def test_structured_fields() -> None:
    event = {
        "event": f"login with signature={TOKEN}",
        "session_token": TOKEN,
        "Authorization": f"Bearer {TOKEN}",
        "idempotency_key": "abc-12345678",
        "x_api_key": TOKEN,
        "private_key_hex": "00",
        "note": MNEMONIC,
        "raw": HEX_KEY,
        "headers": {"x-routequote-session-token": TOKEN, "accept": "application/json"},
        "items": [{"accessToken": TOKEN}, "plain"],
        # hashes, ids and transaction signatures stay readable where the field says what they are
        "tx_hash": HEX_KEY,
        "quote_fingerprint": "ab" * 32,
        "session_id": "9b2f0c1e-1c1d-4f3a-9a51-4d2a0f6b7e11",
        "solana_txid": "5" * 88,
        "route": "base:ETH->base:USDC",
        "_record": object(),
    }
    out = redact_event(None, "info", dict(event))
    rendered = json.dumps({k: v for k, v in out.items() if not k.startswith("_")})
    for secret in (TOKEN, MNEMONIC, "abc-12345678"):
        assert secret not in rendered
    assert out["raw"] == REDACTED and out["note"] == REDACTED and out["private_key_hex"] == REDACTED
    assert out["headers"] == {"x-routequote-session-token": REDACTED, "accept": "application/json"}
    assert out["items"] == [{"accessToken": REDACTED}, "plain"]
    assert (
        out["tx_hash"] == HEX_KEY and out["quote_fingerprint"] == "ab" * 32 and out["solana_txid"] == "5" * 88
    )
    assert out["route"] == "base:ETH->base:USDC" and out["_record"] is event["_record"]


def test_stdlib_record_with_arguments_and_traceback() -> None:
    try:
        raise RuntimeError(f"upstream said Authorization: Bearer {TOKEN}")
    except RuntimeError:
        record = logging.getLogger("sdk").makeRecord(
            "sdk",
            logging.ERROR,
            __file__,
            1,
            "call %s failed: %r",
            ("x", {"session_token": TOKEN}),
            sys.exc_info(),
        )
    redact_record(record)
    assert TOKEN not in record.getMessage() and TOKEN not in (record.exc_text or "")
    assert "call x failed" in record.getMessage()


def test_every_stdlib_line_is_json_with_redaction(capfd: pytest.CaptureFixture[str]) -> None:
    from routequote.logging import configure_logging

    configure_logging("info")
    capfd.readouterr()
    logging.getLogger("some.sdk").warning("token header x-routequote-session-token=%s", TOKEN)
    try:
        raise ValueError(HEX_KEY)
    except ValueError:
        logging.getLogger("some.sdk").exception("failed")
    _, err = capfd.readouterr()
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert [line["logger"] for line in lines] == ["some.sdk", "some.sdk"]
    assert TOKEN not in err and HEX_KEY[2:] not in err and "ValueError" in lines[1]["exception"]


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("abc", True),
        ("a" * 128, True),
        ("A.b:c-d_9", True),
        ("", False),
        ("a" * 129, False),
        ("a b", False),
        ("a/b", False),
        ("é", False),
    ],
)
def test_request_id_sanity(value: str, kept: bool) -> None:
    assert (sane_request_id(value) == value) is kept


# ---- OpenTelemetry --------------------------------------------------------------------------------------


def test_tracing_off_imports_nothing_of_the_sdk() -> None:
    # redis-py imports the SDK's metrics on its own when the package is installed: what must stay out is the
    # tracing half this service would set up (its tracer provider and exporters)
    code = (
        "import sys\nfrom routequote.app import create_app\nfrom routequote.config import Settings\n"
        "app = create_app(Settings(rate_limit='off'))\nassert app.state.tracing is None\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk.trace', 'opentelemetry.exporter'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_fastapi_exports_nothing_to_a_global_tracer_provider() -> None:
    """Spans are this service's own: FastAPI's native telemetry would send a global provider the raw query
    string (here a private key's shape, which every log line redacts)."""
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    code = (
        "import asyncio, httpx\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "memory = InMemorySpanExporter()\nprovider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(memory))\ntrace.set_tracer_provider(provider)\n"
        "from routequote.app import create_app\nfrom routequote.config import Settings\n"
        "app = create_app(Settings(rate_limit='off'))\n"
        "async def main():\n"
        "    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url='http://t') as c:\n"
        "        for path in ('/v2/capabilities?note=0x' + 'ab' * 32, '/v2/status', '/livez'):\n"
        "            assert (await c.get(path)).status_code in (200, 400), path\n"
        "    with trace.get_tracer('probe').start_as_current_span('probe'):\n"
        "        pass\n"
        "asyncio.run(main())\n"
        "print(sorted(s.name for s in memory.get_finished_spans()))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "['probe']"  # the provider works; FastAPI gave it nothing


def test_tracing_without_the_package_is_a_clear_start_up_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name.startswith("opentelemetry.sdk") else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    message = "ROUTEQUOTE_OTEL_EXPORTER: tracing needs the opentelemetry-sdk package, which is not installed"
    assert (otel_problem("console") or "").startswith(message)
    with pytest.raises(TracingUnavailable, match="opentelemetry-sdk"):
        setup_tracing("console")
    from routequote.app import create_app

    with pytest.raises(ValueError, match="pip install 'routequote\\[otel\\]'"):
        create_app(Settings(otel_exporter="console"))
    assert otel_problem("") is None and otel_problem("none") is None


async def test_spans_with_the_in_memory_exporter() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from routequote.app import create_app

    app = create_app(Settings(rate_limit="off", otel_exporter="console"))
    memory = InMemorySpanExporter()
    app.state.tracing.provider.add_span_processor(SimpleSpanProcessor(memory))
    parent = "00-" + "1" * 32 + "-" + "2" * 16 + "-01"
    body = {
        "from_chain": "base",
        "from_token": "ETH",
        "to_chain": "arbitrum",
        "to_token": "USDC",
        "amount_usd": 5,
    }
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as http:
            r = await http.post(
                "/v2/quote", json=body, headers={"traceparent": parent, "x-request-id": "trace-me-1"}
            )
            assert r.status_code == 200
    spans = {s.name: s for s in memory.get_finished_spans()}
    server, quote = spans["POST /v2/quote"], spans["routequote.quote"]
    assert server.attributes["http.response.status_code"] == 200
    assert server.attributes["routequote.request_id"] == "trace-me-1"
    assert format(server.context.trace_id, "032x") == "1" * 32  # the caller's trace continues
    assert quote.parent is not None and quote.parent.span_id == server.context.span_id
    assert quote.attributes["routequote.route_class"] == "cctp"
