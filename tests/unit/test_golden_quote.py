"""Golden quotes: a fixed clock, fixed ids and the packaged snapshot pin every hash and base amount.

A change to pricing, quote shape or hashing shows up here as a diff. Regenerate deliberately with
`UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/test_golden_quote.py` and say why in the commit.
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support import independent_hash as ih

from routequote.clock import FixedClock, SequentialIds
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore

GOLDEN = Path(__file__).parent.parent / "golden" / "quote_hashes.json"
CASES = [
    {"from_chain": "solana", "from_token": "SOL", "to_chain": "base", "to_token": "ETH", "amount_usd": 1000},
    {
        "from_chain": "base",
        "from_token": "USDC",
        "to_chain": "robinhood",
        "to_token": "ETH",
        "amount_usd": 50,
    },
    {
        "from_chain": "robinhood",
        "from_token": "ETH",
        "to_chain": "arbitrum",
        "to_token": "ETH",
        "amount_usd": 1,
    },
    {
        "from_chain": "solana",
        "from_token": "USDG",
        "to_chain": "solana",
        "to_token": "SOL",
        "amount_usd": 250.5,
    },
]


def issue_all() -> list[dict[str, Any]]:
    service = RouteQuoteService(
        EmbeddedSnapshot(),
        MemoryQuoteStore(),
        FixedClock(datetime(2026, 11, 22, 0, 0, tzinfo=UTC)),
        SequentialIds(),
        ServiceConfig(),
    )

    async def run() -> list[dict[str, Any]]:
        return [await service.quote_request(case) for case in CASES]

    out = []
    for q in asyncio.run(run()):
        c = q["continuation_v3"]
        out.append(
            {
                "route": q["route"]["route"],
                "quote_id": q["quote_id"],
                "as_of": q["as_of"],
                "quote_fingerprint": c["quote_fingerprint"],
                "direct_route_summary_sha256": c["direct_route_summary_sha256"],
                "quote_payload_sha256": c["quote_payload_sha256"],
                "summary_steps": q["direct_route_summary"]["steps"],
                "offer": q["offer"],
                "independent": [ih.fingerprint(q), ih.summary_sha256(q), ih.payload_sha256(q)],
            }
        )
    return out


def test_golden_quotes() -> None:
    got = issue_all()
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert got == json.loads(GOLDEN.read_text())
    for g in got:
        assert g["independent"] == [
            g["quote_fingerprint"],
            g["direct_route_summary_sha256"],
            g["quote_payload_sha256"],
        ]


def test_cached_encodings_give_the_same_hashes_on_every_reissue() -> None:
    from routequote.core.hashing import typed_canonical_sha256
    from routequote.core.quote import substituted_payload

    service = RouteQuoteService(
        EmbeddedSnapshot(),
        MemoryQuoteStore(),
        FixedClock(datetime(2026, 11, 22, tzinfo=UTC)),
        SequentialIds(),
        ServiceConfig(),
    )

    async def run() -> list[dict[str, Any]]:
        return [await service.quote_request(CASES[i % 2]) for i in range(6)]

    for q in asyncio.run(run()):
        assert q["continuation_v3"]["quote_payload_sha256"] == typed_canonical_sha256(substituted_payload(q))
        assert q["continuation_v3"]["quote_payload_sha256"] == ih.payload_sha256(q)
        assert q["continuation_v3"]["quote_fingerprint"] == ih.fingerprint(q)
