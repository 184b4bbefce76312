"""Quote and prepare every one of the 72 routes against a running service; print how many prepare.

    python examples/prepare_every_route.py --url http://127.0.0.1:8080

For each route: `POST /v2/quote` ($100), then `POST /v2/prepare` with wallets of the right formats (throwaway
public addresses), a fresh `event_signer_public` where the route burns CCTP on Solana, and the quote's own
`approval_v3` (its first allowed mode). Counts HTTP 200 answers and lists every other answer with its reason. A 429 (the service's per-client rate limit) is
waited out and retried, so the count is about preparation, not pacing.
Nothing is signed or submitted; the addresses below hold nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from typing import Any

import httpx

EVM = "0x1111111111111111111111111111111111111111"
SOLANA = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
EVENT_SIGNER = "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH"


def approval(quote: dict[str, Any]) -> dict[str, Any]:
    c = quote["continuation_v3"]
    return {
        "version": c["approval_v3_version"],
        "quote_id": quote["quote_id"],
        "quote_fingerprint": c["quote_fingerprint"],
        "selection_status": "selected",
        "selected_mode": c["allowed_modes"][0],
        "maximum_input_base": c["input_base_bounds"]["maximum"],
        "minimum_output_base": c["minimum_output_base"],
        "direct_route_summary_sha256": c["direct_route_summary_sha256"],
        "idempotency_key": f"every-route-{quote['quote_id']}",
    }


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
        routes = sorted(r["route"] if isinstance(r, dict) else r for r in caps["routes"])
        statuses: Counter[int] = Counter()
        failures: list[str] = []
        sources: Counter[str] = Counter()
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
                body: dict[str, Any] = {
                    "caller_approved": True,
                    **intent,
                    "wallets": {
                        ch: SOLANA if ch == "solana" else EVM for ch in cont["required_wallet_chains"]
                    },
                    "approval_v3": approval(quote),
                }
                if cont["event_signer_public_required"]:
                    body["event_signer_public"] = EVENT_SIGNER
                r = c.post("/v2/prepare", json=body)
                if not wait_out(r):
                    break
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
    for line in failures:
        print("  " + line)
    return 0 if statuses[200] == len(routes) else 1


if __name__ == "__main__":
    sys.exit(main())
