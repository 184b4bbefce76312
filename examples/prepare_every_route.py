"""Quote, prepare and open a session for every one of the 72 routes against a running service; print the counts.

    python examples/prepare_every_route.py --url http://127.0.0.1:8080

For each route: `POST /v2/quote` ($100), then `POST /v2/prepare` with wallets of the right formats (throwaway
public addresses) and a fresh `event_signer_public` where the route burns CCTP on Solana: with a `one_shot`
`approval_v3` where the quote allows one, otherwise without an approval (a multi-step route's step 0 as a legacy
advisory action; its session approval belongs to `/v2/session`). Then, from a fresh quote, `POST /v2/session`
with a `session` approval and a random 43-character token (a service opens a session only for a route it can
carry to complete: on the defaults, with no RPC URL, every create answers 400 `route_not_session_ready` naming
what is missing). Counts the answers and lists every other answer with its reason. A 429 (the service's per-client rate limit) is
waited out and retried, so the count is about preparation, not pacing.
Nothing is signed or submitted; the addresses below hold nothing.
"""

from __future__ import annotations

import argparse
import base64
import secrets
import sys
import time
from collections import Counter
from typing import Any

import httpx

EVM = "0x1111111111111111111111111111111111111111"
SOLANA = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
EVENT_SIGNER = "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH"


def approval(quote: dict[str, Any], mode: str) -> dict[str, Any]:
    c = quote["continuation_v3"]
    return {
        "version": c["approval_v3_version"],
        "quote_id": quote["quote_id"],
        "quote_fingerprint": c["quote_fingerprint"],
        "selection_status": "selected",
        "selected_mode": mode,
        "maximum_input_base": c["input_base_bounds"]["maximum"],
        "minimum_output_base": c["minimum_output_base"],
        "direct_route_summary_sha256": c["direct_route_summary_sha256"],
        "idempotency_key": f"every-route-{quote['quote_id']}",
    }


def request_body(intent: dict[str, Any], quote: dict[str, Any]) -> dict[str, Any]:
    cont = quote["continuation_v3"]
    body: dict[str, Any] = {
        "caller_approved": True,
        **intent,
        "wallets": {ch: SOLANA if ch == "solana" else EVM for ch in cont["required_wallet_chains"]},
    }
    if cont["event_signer_public_required"]:
        body["event_signer_public"] = EVENT_SIGNER
    return body


def open_session(c: httpx.Client, intent: dict[str, Any]) -> int:
    """`POST /v2/session` from a fresh quote with a session approval; the answer's status (429s waited out)."""
    while True:
        q = c.post("/v2/quote", json=intent)
        if wait_out(q):
            continue
        if q.status_code != 200:
            return q.status_code
        quote = q.json()
        body = request_body(intent, quote)
        body["approval_v3"] = approval(quote, "session")
        body["idempotency_key"] = body["approval_v3"]["idempotency_key"]
        token = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
        r = c.post("/v2/session", json=body, headers={"X-RouteQuote-Session-Token": token})
        if not wait_out(r):
            return r.status_code


def wait_out(r: httpx.Response) -> bool:
    """True (after sleeping) when the service's per-client rate limit refused the request."""
    if r.status_code != 429:
        return False
    time.sleep(int(r.json().get("retry_after_seconds", 5)) + 1)
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8080")
    p.add_argument("--amount-usd", type=int, default=100)
    args = p.parse_args(argv)
    with httpx.Client(base_url=args.url, timeout=30) as c:
        caps = c.get("/v2/capabilities").json()
        details = c.get(caps["links"]["routes"]).json()  # per-route detail lives in the linked document
        routes = sorted(r["route"] for r in details["routes"])
        statuses: Counter[int] = Counter()
        failures: list[str] = []
        sources: Counter[str] = Counter()
        sessions: Counter[int] = Counter()
        for key in routes:
            src, dst = key.split("->")
            fc, ft = src.split(":")
            tc, tt = dst.split(":")
            intent = {
                "from_chain": fc,
                "from_token": ft,
                "to_chain": tc,
                "to_token": tt,
                "amount_usd": args.amount_usd,
            }
            while True:  # a rate-limited prepare is redone from a fresh quote (the old one may have expired)
                q = c.post("/v2/quote", json=intent)
                if wait_out(q):
                    continue
                if q.status_code != 200:
                    break
                quote = q.json()
                cont = quote["continuation_v3"]
                body = request_body(intent, quote)
                if "one_shot" in cont["allowed_modes"]:
                    body["approval_v3"] = approval(quote, "one_shot")
                r = c.post("/v2/prepare", json=body)
                if not wait_out(r):
                    break
            sessions[open_session(c, intent)] += 1
            if q.status_code != 200:
                statuses[q.status_code] += 1
                failures.append(f"{key}: quote {q.status_code} {q.text[:160]}")
                continue
            statuses[r.status_code] += 1
            if r.status_code == 200:
                sources[str(r.json()["unsigned_action"].get("pool_state_source", "-"))] += 1
            else:
                failures.append(
                    f"{key}: prepare {r.status_code} {r.json().get('reason_class')}: {r.text[:200]}"
                )
    print(f"routes: {len(routes)}")
    print(f"POST /v2/prepare answers: {dict(sorted(statuses.items()))}")
    print(f"prepared (200): {statuses[200]} / {len(routes)}")
    print(f"Solana swap pool_state_source among prepared: {dict(sources)}")
    print(f"capabilities currently_prepare_ready_routes: {caps.get('currently_prepare_ready_routes')}")
    print(f"POST /v2/session answers: {dict(sorted(sessions.items()))}")
    print(f"sessions opened (201): {sessions[201]} / {len(routes)}")
    print(
        f"capabilities sessions.session_ready_routes: {caps.get('sessions', {}).get('session_ready_routes')}"
    )
    for line in failures:
        print("  " + line)
    return 0 if statuses[200] == len(routes) and sessions[201] == len(routes) else 1


if __name__ == "__main__":
    sys.exit(main())
