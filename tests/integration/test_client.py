"""routequote.client against a real server over loopback HTTP: typed, validated answers; tampered answers
(one amount in a quote, one calldata byte in a bundle) refused; sessions driven with a hidden token; the
precise exceptions. The `routequote session` commands: test_client_cli.py (the server `url`:
tests/integration/conftest.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from tests.support.client_cases import EMBEDDED, MULTI, ONE_STEP
from tests.support.server import free_port, running_server
from tests.unit.actions.support import rehash, wallets_for

from routequote.app import create_app
from routequote.client import (
    ActionVerificationFailed,
    ApprovalRefused,
    AsyncRouteQuoteClient,
    RateLimited,
    ReapprovalRequired,
    Rejected,
    ResponseInvalid,
    RouteQuoteClient,
    SessionToken,
    UpstreamUnavailable,
    approval_for,
    describe_action,
    describe_preflight,
)
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER

Edit = Callable[[dict[str, Any]], None]


def ends(route: str) -> tuple[str, str]:
    src, dst = route.split("->")
    return src, dst


class Tamper(httpx.BaseTransport):
    """Forwards to the real server and edits the JSON answer of one path on the way back; records requests."""

    def __init__(self, path: str, edit: Edit) -> None:
        self.inner = httpx.HTTPTransport()
        self.path, self.edit = path, edit
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        resp = self.inner.handle_request(request)
        if request.url.path != self.path:
            return resp
        resp.read()
        body = json.loads(resp.content)
        self.edit(body)
        headers = {
            k: v for k, v in resp.headers.items() if k.lower() not in ("content-length", "content-encoding")
        }
        return httpx.Response(resp.status_code, headers=headers, content=json.dumps(body).encode())


class AsyncTamper(httpx.AsyncBaseTransport):
    def __init__(self, path: str, edit: Edit) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.path, self.edit = path, edit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        resp = await self.inner.handle_async_request(request)
        if request.url.path != self.path:
            return resp
        await resp.aread()
        body = json.loads(resp.content)
        self.edit(body)
        headers = {
            k: v for k, v in resp.headers.items() if k.lower() not in ("content-length", "content-encoding")
        }
        return httpx.Response(resp.status_code, headers=headers, content=json.dumps(body).encode())


# ---- quote, capabilities, status -----------------------------------------------------------------------


def test_typed_and_validated_answers(url: str) -> None:
    with RouteQuoteClient(url, **EMBEDDED) as rq:
        caps = rq.capabilities()
        assert caps.directed_conversion_routes == 72 and caps.server_signing is False
        assert rq.status().status == "capped_public_agent_release"
        q = rq.quote(*ends(MULTI), 100)
    assert q.route_key == MULTI and str(q.quote_id) == q.raw["quote_id"]
    steps = q.direct_route_summary.steps
    assert steps[0].expected_output_base == steps[1].expected_input_base
    assert q.input_base == int(q.raw["direct_route_summary"]["steps"][0]["expected_input_base"])
    assert q.continuation_v3.quote_fingerprint == q.raw["continuation_v3"]["quote_fingerprint"]


def _summary_step(i: int, field: str, delta: int) -> Edit:
    def edit(q: dict[str, Any]) -> None:
        s = q["direct_route_summary"]["steps"]
        s[i][field] = str(int(s[i][field]) + delta)

    return edit


def _chained_output(q: dict[str, Any]) -> None:  # keeps chaining intact: only the hashes can catch it
    s = q["direct_route_summary"]["steps"]
    s[0]["expected_output_base"] = s[1]["expected_input_base"] = str(int(s[0]["expected_output_base"]) + 1)
    for i, key in ((0, "expected_output_base"), (1, "expected_input_base")):
        q["route"]["steps"][i][key] = str(int(q["route"]["steps"][i][key]) + 1)


TAMPERED_QUOTES: dict[str, tuple[Edit, str]] = {
    "summary minimum output raised": (_summary_step(1, "minimum_output_base", 1), "minimum"),
    "chained amount with raw copy": (_chained_output, "sha256"),
    "raw step amount only": (
        lambda q: q["route"]["steps"][1].__setitem__("minimum_output_base", "1"),
        "route.steps[1]",
    ),
    "offer float": (
        lambda q: q["offer"].__setitem__("expected_receive_amount", 150.0),
        "quote_payload_sha256",
    ),
    "fingerprint": (
        lambda q: q["continuation_v3"].__setitem__("quote_fingerprint", "0" * 64),
        "quote_fingerprint",
    ),
    "custody flag deep": (lambda q: q["risk"].__setitem__("server_submission", True), "server_submission"),
    "custody flag null": (lambda q: q["route"].__setitem__("server_signing", None), "server_signing"),
    "schema": (lambda q: q.pop("intent"), "intent"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED_QUOTES))
def test_quote_tampered_in_transit_is_refused(url: str, case: str) -> None:
    edit, words = TAMPERED_QUOTES[case]
    with (
        RouteQuoteClient(url, **EMBEDDED, transport=Tamper("/v2/quote", edit)) as rq,
        pytest.raises(ResponseInvalid) as err,
    ):
        rq.quote(*ends(MULTI), 100)
    assert words in str(err.value)


def test_quote_for_another_intent_is_refused(url: str) -> None:
    def swap(q: dict[str, Any]) -> None:
        q["intent"]["amount_usd"] = 101

    with (
        RouteQuoteClient(url, **EMBEDDED, transport=Tamper("/v2/quote", swap)) as rq,
        pytest.raises(ResponseInvalid) as err,
    ):
        rq.quote(*ends(ONE_STEP), 100)
    assert "amount_usd" in str(err.value)


# ---- approval and prepare ------------------------------------------------------------------------------


def test_approval_only_stricter(url: str) -> None:
    with RouteQuoteClient(url, **EMBEDDED) as rq:
        q = rq.quote(*ends(ONE_STEP), 50)
    a = approval_for(
        q, "one_shot", minimum_output_base=q.minimum_output_base + 5, idempotency_key="mine-00000001"
    )
    assert (
        a["minimum_output_base"] == str(q.minimum_output_base + 5) and a["idempotency_key"] == "mine-00000001"
    )
    with pytest.raises(ApprovalRefused, match="minimum_output_weaker_than_quote"):
        approval_for(q, "one_shot", minimum_output_base=q.minimum_output_base - 1)
    with pytest.raises(ApprovalRefused, match="maximum_input_weaker_than_quote"):
        approval_for(q, "one_shot", maximum_input_base=q.input_base + 1)
    with pytest.raises(ApprovalRefused, match="maximum_input_below_exact_input"):
        approval_for(q, "one_shot", maximum_input_base=q.input_base - 1)
    with RouteQuoteClient(url, **EMBEDDED) as rq:
        multi = rq.quote(*ends(MULTI), 50)
    with pytest.raises(ApprovalRefused, match="mode_not_allowed"):
        approval_for(multi, "one_shot")


def test_prepare_verified_and_described(url: str) -> None:
    with RouteQuoteClient(url, **EMBEDDED) as rq:
        q = rq.quote(*ends(ONE_STEP), 100)
        stricter = q.minimum_output_base + 1
        action = rq.prepare(
            q, wallets_for(ONE_STEP), approval=approval_for(q, "one_shot", minimum_output_base=stricter)
        )
    ua = action.unsigned_action
    assert action.step_index == 0 and int(ua["minimumOutput"]) >= stricter
    assert action.quote_binding is not None and action.quote_binding.quote_id == q.raw["quote_id"]
    text = "\n".join(describe_action(action))
    assert "Uniswap SwapRouter02" in text and "exactInputSingle" in text
    assert f"at least {int(ua['minimumOutput']) // 10**6}." in text and " ETH" in text and " USDC" in text
    # the preflight the server sent, in words before signing (its reads here fail: the RPC URLs lead nowhere)
    lines = describe_preflight(action)
    codes = [f["code"] for f in action.preflight["findings"]]  # type: ignore[index]
    assert lines[0].startswith("preflight: nothing that was read blocks this route") and len(
        lines
    ) == 1 + len(codes)
    assert describe_preflight(action.raw) == lines


def test_client_refuses_a_placeholder_fee_recipient(base_url: str) -> None:
    """`base_url` serves the embedded defaults: the fee would go to the development placeholder."""
    with RouteQuoteClient(base_url, **EMBEDDED) as rq:
        q = rq.quote(*ends(ONE_STEP), 100)
        with pytest.raises(ActionVerificationFailed) as exc:
            rq.prepare(q, wallets_for(ONE_STEP), approval=approval_for(q, "one_shot"))
        assert [f.code for f in exc.value.findings if f.severity == "error"] == [
            "fee_recipient_not_configured"
        ]
    with RouteQuoteClient(base_url, **EMBEDDED, accept_unconfigured_fee_recipient=True) as rq:
        q = rq.quote(*ends(ONE_STEP), 100)
        action = rq.prepare(q, wallets_for(ONE_STEP), approval=approval_for(q, "one_shot"))
        assert action.raw["fee_recipient_configured"] is False


def test_client_refuses_modelled_bounds_unless_accepted(url: str) -> None:
    """`url` prices from the embedded snapshot: every action's bounds are modelled, and the client refuses them
    by default; accepted, the action keeps the warning and describe_action says it in words."""
    with RouteQuoteClient(url) as rq:
        q = rq.quote(*ends(ONE_STEP), 100)
        with pytest.raises(ActionVerificationFailed) as exc:
            rq.prepare(q, wallets_for(ONE_STEP), approval=approval_for(q, "one_shot"))
        errors = [f for f in exc.value.findings if f.severity == "error"]
        assert [f.code for f in errors] == ["bounds_modelled_not_live"]
        assert "not live market data" in errors[0].message
        with pytest.raises(ActionVerificationFailed):
            rq.create_session(q, wallets_for(ONE_STEP), approval=approval_for(q, "session"))
    with RouteQuoteClient(url, **EMBEDDED) as rq:
        q = rq.quote(*ends(ONE_STEP), 100)
        action = rq.prepare(q, wallets_for(ONE_STEP), approval=approval_for(q, "one_shot"))
    assert "bounds_modelled_accepted" in [w.code for w in action.warnings]
    bounds = action.unsigned_action["safety_receipt"]["bounds"]
    assert bounds["basis"] == "modelled" and bounds["market_source"] == "embedded_snapshot"
    said = [line for line in describe_action(action) if "bounds" in line]
    assert said == [
        f"WARNING: bounds are modelled from the embedded snapshot of {bounds['snapshot_as_of']}, not live market "
        f"data ({', '.join(bounds['modelled_parts'])}); accepted as modelled: sign it only on a test or local chain"
    ]


def test_actions_say_whether_the_fee_recipient_is_configured(url: str) -> None:
    with RouteQuoteClient(url, **EMBEDDED) as rq:
        q = rq.quote(*ends(ONE_STEP), 100)
        action = rq.prepare(q, wallets_for(ONE_STEP), approval=approval_for(q, "one_shot"))
    assert action.raw["fee_recipient_configured"] is True
    assert action.unsigned_action["safety_receipt"]["service_fee"]["recipient"].lower() == "0x" + "fe" * 20


def _flip_calldata_byte(b: dict[str, Any]) -> None:
    tx = b["unsigned_action"]["transactions"][-1]
    data = bytearray.fromhex(tx["data"][2:])
    data[-40] ^= 0x01  # inside the last word of the swap's arguments
    tx["data"] = "0x" + data.hex()


@pytest.mark.parametrize("rehashed", [False, True], ids=["raw", "rehashed"])
def test_bundle_with_one_calldata_byte_changed_is_refused(url: str, rehashed: bool) -> None:
    def edit(b: dict[str, Any]) -> None:
        _flip_calldata_byte(b)
        if rehashed:  # a hostile server that makes every hash consistent again: decoding still catches it
            rehash(b)

    with RouteQuoteClient(url, **EMBEDDED, transport=Tamper("/v2/prepare", edit)) as rq:
        q = rq.quote(*ends(ONE_STEP), 100)
        with pytest.raises(ActionVerificationFailed) as err:
            rq.prepare(q, wallets_for(ONE_STEP))
    codes = {f.code for f in err.value.findings if f.severity == "error"}
    assert codes
    if not rehashed:
        assert "payload_sha256_mismatch" in codes


def test_bundle_custody_flag_is_refused(url: str) -> None:
    with RouteQuoteClient(
        url, **EMBEDDED, transport=Tamper("/v2/prepare", lambda b: b.update(server_signing=True))
    ) as rq:
        q = rq.quote(*ends(ONE_STEP), 100)
        with pytest.raises(ActionVerificationFailed):
            rq.prepare(q, wallets_for(ONE_STEP))


def test_async_client_and_its_tamper_refusal(url: str) -> None:
    async def run() -> None:
        async with AsyncRouteQuoteClient(url, **EMBEDDED) as rq:
            caps, q = await asyncio.gather(rq.capabilities(), rq.quote(*ends(ONE_STEP), 100))
            assert caps.unsigned_route_plans_ready == 72
            action = await rq.prepare(q, wallets_for(ONE_STEP))
            assert action.route == ONE_STEP
            s = await rq.create_session(q, wallets_for(ONE_STEP), approval=approval_for(q, "session"))
            assert (await rq.read_session(s.handle)).status == "action_ready"
        async with AsyncRouteQuoteClient(
            url, **EMBEDDED, transport=AsyncTamper("/v2/prepare", _flip_calldata_byte)
        ) as rq:
            q = await rq.quote(*ends(ONE_STEP), 100)
            with pytest.raises(ActionVerificationFailed):
                await rq.prepare(q, wallets_for(ONE_STEP))

    asyncio.run(run())


# ---- sessions ------------------------------------------------------------------------------------------


def test_session_lifecycle_token_never_shown(url: str) -> None:
    transport = Tamper("/none", lambda b: None)
    with RouteQuoteClient(url, **EMBEDDED, transport=transport) as rq:
        q = rq.quote(*ends(MULTI), 100)
        s = rq.create_session(q, wallets_for(MULTI))
        handle = s.handle
        token = handle.token.reveal()
        assert len(token) == 43 and s.status == "action_ready" and s.current_action is not None
        assert s.current_action.step_index == 0 and s.funds.amount_base == str(q.input_base)
        again = rq.read_session(handle)
        assert again.session_version == s.session_version
        assert rq.next_action(handle).action_id == s.current_action.action_id  # type: ignore[union-attr]
        receipt = rq.session_view(handle, "receipt")
        assert receipt.view == "receipt" and receipt.model_extra["receipt"]["route"]["complete"] is False
        with pytest.raises(UpstreamUnavailable) as err:  # this server's chain RPC does not answer
            rq.observe(handle, ["0x" + "11" * 32])
        assert err.value.reason_class == "rpc_transport_error:base" and err.value.status_code == 503
        with pytest.raises(Rejected) as refused:
            rq.refresh(handle)
        assert refused.value.reason_class == "operation_not_allowed_in_status"
        done = rq.cancel(handle)
        assert done.status == "cancelled" and done.current_action is None
    assert all(r.headers.get(SESSION_HEADER) in (None, token) for r in transport.sent)
    # create, read, next_action, receipt view, observe, refresh, cancel carry it; the quote does not
    assert [r.headers.get(SESSION_HEADER) == token for r in transport.sent] == [False] + [True] * 7
    shown = " ".join(
        [
            repr(handle),
            str(handle),
            repr(handle.token),
            str(handle.token),
            repr(s),
            repr(rq),
            str(err.value),
            repr(err.value),
            str(refused.value),
            repr(done),
            done.model_dump_json(),
        ]
    )
    assert token not in shown


def test_session_wrong_token_and_reapproval(url: str) -> None:
    with RouteQuoteClient(url, **EMBEDDED) as rq:
        q = rq.quote(*ends(ONE_STEP), 100)
        s = rq.create_session(q, wallets_for(ONE_STEP))
        stranger = type(s.handle)(s.session_id, SessionToken.generate(), s.handle.context)
        with pytest.raises(Rejected) as err:
            rq.read_session(stranger)
        assert err.value.status_code == 404 and err.value.reason_class == "session_not_found"
        bad = approval_for(q, "session")
        bad["quote_fingerprint"] = "0" * 64
        with pytest.raises(ReapprovalRequired) as re_err:
            rq.create_session(q, wallets_for(ONE_STEP), approval=bad)
    assert (
        re_err.value.reason == "approval_v3_fingerprint_mismatch"
        and re_err.value.body["action_created"] is False
    )


def test_session_action_tampered_is_refused(url: str) -> None:
    def edit(body: dict[str, Any]) -> None:
        _flip_calldata_byte(body["current_action"])

    kept: list[Any] = []
    with RouteQuoteClient(url, **EMBEDDED, transport=Tamper("/v2/session", edit)) as rq:
        q = rq.quote(*ends(ONE_STEP), 100)
        with pytest.raises(ActionVerificationFailed):
            rq.create_session(q, wallets_for(ONE_STEP), on_created=kept.append)
        # the session the server opened was handed over before its action was refused: it can be cancelled
        assert len(kept) == 1
        assert rq.cancel(kept[0]).status == "cancelled"


def test_rate_limited_with_retry_after() -> None:
    port = free_port()
    app = create_app(Settings(rate_limit="2/minute", port=port))
    with running_server(app, port) as base, RouteQuoteClient(base, **EMBEDDED) as rq:
        rq.capabilities()
        rq.capabilities()
        with pytest.raises(RateLimited) as err:
            rq.capabilities()
    assert err.value.retry_after is not None and 1 <= err.value.retry_after <= 60
    assert err.value.reason_class == "rate_limit_exceeded"


def test_error_mapping_without_a_server() -> None:
    answers = {
        "/v2/capabilities": httpx.Response(
            502,
            json={
                "error": "route_provider_temporarily_unavailable",
                "reason_class": "market_source_down",
                "message": "x",
            },
        ),
        "/v2/status": httpx.Response(
            503,
            json={
                "error": "provider_capacity_busy",
                "reason_class": "busy",
                "message": "y",
                "retry_after_seconds": 2,
            },
        ),
        "/v2/quote": httpx.Response(200, content=b'{"a": 1, "a": 2}'),
    }
    mock = httpx.MockTransport(lambda r: answers[r.url.path])
    with RouteQuoteClient("http://test.invalid", transport=mock) as rq:
        with pytest.raises(UpstreamUnavailable) as up:
            rq.capabilities()
        assert up.value.reason_class == "market_source_down" and up.value.retry_after is None
        with pytest.raises(UpstreamUnavailable) as busy:
            rq.status()
        assert busy.value.retry_after == 2
        with pytest.raises(ResponseInvalid, match="duplicate key"):
            rq.quote("base:ETH", "base:USDC", 10)
