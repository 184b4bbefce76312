"""schemathesis hooks for the fuzz runs (`SCHEMATHESIS_HOOKS=tests/fuzz/hooks.py schemathesis run ...`).

Random data alone never reaches the deep paths: a random `approval_v3` never binds an issued quote, and a
random session id / token pair never names a session. So, for some POSITIVE cases only (chosen by a hash of
the generated case, so a case and its replay agree), `before_call` fills in real values before the request
goes out, keeping everything else schemathesis generated:

* POST /v2/prepare and POST /v2/session: the intent, `wallets` and `approval_v3` of a quote issued just now
  (a route that needs no event signer; `event_signer_public` is dropped; the session create's
  `idempotency_key` is the approval's). The other generated members stay as they were.
* /v2/session/{session_id}[/op]: the id and token of a session created by this module (a small pool, refilled
  when a cancel ends one), so reads answer 200 and operations run the state machine for real.

schemathesis revalidates a case after this hook edits it, so the positive/negative label stays true.
Negative cases are never touched: their invalid parts must be refused as generated.

The server's URL comes from RQ_FUZZ_BASE_URL (set by tests/fuzz/test_schemathesis.py).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import threading
import zlib
from typing import Any

import httpx
import schemathesis
from schemathesis.generation import GenerationMode

SESSION_HEADER = "X-RouteQuote-Session-Token"
WALLETS = {
    "base": "0x1111111111111111111111111111111111111111",
    "arbitrum": "0x2222222222222222222222222222222222222222",
    "robinhood": "0x3333333333333333333333333333333333333333",
}
# prepare-ready routes that need no event signer: one step (one_shot or session) and two steps (session only)
ONE_STEP = ("base:ETH->base:USDC", "base:USDC->base:ETH")
BIND_ROUTES = (*ONE_STEP, "base:ETH->arbitrum:USDC", "arbitrum:USDC->base:ETH")
POOL_SIZE = 8

_lock = threading.Lock()
_sessions: list[tuple[str, str]] = []
_http: httpx.Client | None = None
STATS = {"bound_prepare": 0, "bound_session_create": 0, "bound_session_ops": 0}


def _client() -> httpx.Client:
    global _http
    if _http is None:
        _http = httpx.Client(base_url=os.environ["RQ_FUZZ_BASE_URL"], timeout=30)
    return _http


def _intent(route: str, amount: int) -> dict[str, Any]:
    (fc, ft), (tc, tt) = (side.split(":") for side in route.split("->"))
    return {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": amount}


def _wallets(route: str) -> dict[str, str]:
    chains = {side.split(":")[0] for side in route.split("->")}
    return {c: WALLETS[c] for c in sorted(chains)}


def _bound(route: str, amount: int, mode: str, key: str) -> dict[str, Any]:
    """intent + wallets + approval_v3 of a quote issued now."""
    r = _client().post("/v2/quote", json=_intent(route, amount))
    r.raise_for_status()
    q = r.json()
    c = q["continuation_v3"]
    approval = {
        "version": c["approval_v3_version"],
        "quote_id": q["quote_id"],
        "quote_fingerprint": c["quote_fingerprint"],
        "selection_status": "selected",
        "selected_mode": mode,
        "maximum_input_base": c["input_base_bounds"]["maximum"],
        "minimum_output_base": c["minimum_output_base"],
        "direct_route_summary_sha256": c["direct_route_summary_sha256"],
        "idempotency_key": key,
    }
    return {**_intent(route, amount), "wallets": _wallets(route), "approval_v3": approval}


def new_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def _new_session() -> tuple[str, str]:
    token, key = new_token(), f"fuzz-{secrets.token_hex(8)}"
    route = BIND_ROUTES[len(_sessions) % len(BIND_ROUTES)]
    body = {"caller_approved": True, **_bound(route, 100, "session", key), "idempotency_key": key}
    r = _client().post("/v2/session", json=body, headers={SESSION_HEADER: token})
    if r.status_code != 201:
        raise RuntimeError(f"fuzz hooks could not create a session: {r.status_code} {r.text[:300]}")
    return r.json()["session_id"], token


def _pick(n: int) -> tuple[str, str]:
    with _lock:
        while len(_sessions) < POOL_SIZE:
            _sessions.append(_new_session())
        return _sessions[n % len(_sessions)]


def _retire(session_id: str) -> None:
    with _lock:
        _sessions[:] = [s for s in _sessions if s[0] != session_id]


def _positive(case: Any) -> bool:
    meta = case.meta
    return meta is not None and meta.generation.mode == GenerationMode.POSITIVE


def _coin(case: Any) -> int:
    return zlib.crc32(repr((case.path_parameters, dict(case.headers or {}), case.query, case.body)).encode())


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if not _positive(case):
        return
    coin = _coin(case)
    path = case.operation.path
    if (
        case.method.upper() == "POST"
        and path in ("/v2/prepare", "/v2/session")
        and isinstance(case.body, dict)
    ):
        if coin % 3 == 0:  # two thirds of the positive bodies are bound to a real quote, a third stay random
            return
        body = dict(case.body)
        routes = BIND_ROUTES if path == "/v2/session" else ONE_STEP
        route = routes[(coin >> 4) % len(routes)]
        amount = 1 + coin % 1000
        if path == "/v2/session":
            key = body.get("idempotency_key")
            key = key if isinstance(key, str) and 8 <= len(key) <= 128 else f"fuzz-{coin:08x}"
            body.update(_bound(route, amount, "session", key), idempotency_key=key)
            STATS["bound_session_create"] += 1
        else:
            approval = body.get("approval_v3")
            key = approval.get("idempotency_key") if isinstance(approval, dict) else None
            key = key if isinstance(key, str) and 8 <= len(key) <= 128 else f"fuzz-{coin:08x}"
            body.update(_bound(route, amount, "one_shot", key))
            STATS["bound_prepare"] += 1
        body.pop("event_signer_public", None)
        case.body = body
    elif path.startswith("/v2/session/{session_id}") and not path.endswith("/events") and coin % 4 != 0:
        # (not the event stream: a live session's stream stays open until the session rests, so a bound case
        # would only wait out the request timeout; tests/integration/test_session_events.py drives it)
        session_id, token = _pick(coin)
        case.path_parameters["session_id"] = session_id
        case.headers[SESSION_HEADER] = token
        STATS["bound_session_ops"] += 1


def _record(case: Any, response: Any) -> None:
    """One JSON line per answer (operation, generation mode, phase, status, reason_class) to RQ_FUZZ_LOG."""
    path = os.environ.get("RQ_FUZZ_LOG")
    if not path:
        return
    reason = None
    if response.status_code >= 400:
        try:
            body = response.json()
            reason = body.get("reason_class") if isinstance(body, dict) else None
        except ValueError:
            reason = "<not json>"
    meta = case.meta
    line = {
        "op": f"{case.method.upper()} {case.operation.path}",
        "status": response.status_code,
        "reason": reason,
        "mode": str(meta.generation.mode) if meta else None,
        "phase": str(meta.phase.name) if meta else None,
        "query": {k: v for k, v in (case.query or {}).items() if isinstance(v, str | int | bool)},
    }
    with _lock, open(path, "a") as out:
        out.write(json.dumps(line) + "\n")


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    _record(case, response)
    if case.operation.path == "/v2/session/{session_id}/cancel" and response.status_code == 200:
        _retire(str(case.path_parameters.get("session_id")))
