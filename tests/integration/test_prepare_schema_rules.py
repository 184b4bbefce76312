"""The served prepare and session-create schemas state the same endpoint-pair rules as QuoteRequest: for every
(from, to) pair of chains and tokens, a body is schema-valid exactly when the quote schema accepts the pair
(no identity route, each token valid on its chain), so a schema-valid prepare body is never refused for it."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import jsonschema

from routequote.core.quote import APPROVAL_VERSION
from routequote.core.routes import ROUTES

CHAINS = ("solana", "base", "arbitrum", "robinhood")
TOKENS = ("SOL", "ETH", "USDC", "USDG")


def _schema(document: dict[str, Any], path: str) -> dict[str, Any]:
    body = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return {**body, "components": document.get("components", {})}


def test_prepare_and_session_schemas_carry_the_quote_pair_rules(http: httpx.Client) -> None:
    document = http.get("/v2/openapi.json").json()
    quote = jsonschema.Draft202012Validator({**document["components"]["schemas"]["QuoteRequest"]})
    prepare = jsonschema.Draft202012Validator(_schema(document, "/v2/prepare"))
    session = jsonschema.Draft202012Validator(_schema(document, "/v2/session"))
    accepted = 0
    for fc, ft, tc, tt in itertools.product(CHAINS, TOKENS, CHAINS, TOKENS):
        intent = {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": 5}
        route = ROUTES.get(f"{fc}:{ft}->{tc}:{tt}")
        body: dict[str, Any] = {"caller_approved": True, **intent, "wallets": _wallets(route)}
        if route is not None and route.event_signer_required:
            body["event_signer_public"] = SIGNER
        ok = quote.is_valid(intent)
        accepted += ok
        assert prepare.is_valid(body) is ok, intent
        assert (
            session.is_valid({**body, "approval_v3": _approval(), "idempotency_key": "k-12345678"}) is ok
        ), intent
    assert accepted == 72  # the 9 x 9 endpoints less the 9 identity routes
    identity = {
        "caller_approved": True,
        "from_chain": "base",
        "from_token": "USDC",
        "to_chain": "base",
        "to_token": "USDC",
        "amount_usd": 5,
        "wallets": {"base": "0x" + "11" * 20},
    }
    assert not prepare.is_valid(identity)
    r = http.post("/v2/prepare", json=identity)
    assert r.status_code == 400  # what the schema now says, the server does


def test_prepare_schema_states_the_per_route_wallet_and_signer_rules(http: httpx.Client) -> None:
    document = http.get("/v2/openapi.json").json()
    prepare = jsonschema.Draft202012Validator(_schema(document, "/v2/prepare"))
    for key, route in ROUTES.items():
        fc, ft = route.source.key.split(":")
        tc, tt = route.target.key.split(":")
        body: dict[str, Any] = {
            "caller_approved": True,
            "from_chain": fc,
            "from_token": ft,
            "to_chain": tc,
            "to_token": tt,
            "amount_usd": 5,
            "wallets": _wallets(route),
        }
        if route.event_signer_required:
            assert not prepare.is_valid(body), key  # the signer is required
            body["event_signer_public"] = SIGNER
        else:
            assert not prepare.is_valid({**body, "event_signer_public": SIGNER}), key  # and refused elsewhere
        assert prepare.is_valid(body), key
        extra = (
            next(c for c in CHAINS if c not in route.required_wallet_chains)
            if len(route.required_wallet_chains) < 4
            else None
        )
        if extra is not None:
            assert not prepare.is_valid(
                {**body, "wallets": {**body["wallets"], **_wallets(None, [extra])}}
            ), key
        missing = dict(list(body["wallets"].items())[1:])
        assert not prepare.is_valid({**body, "wallets": missing}), key
        wrong_format = {c: ("0x" + "11" * 20 if c == "solana" else SIGNER) for c in body["wallets"]}
        assert not prepare.is_valid({**body, "wallets": wrong_format}), key


SIGNER = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"


def _wallets(route: Any, chains: list[str] | None = None) -> dict[str, str]:
    names = chains if chains is not None else (list(route.required_wallet_chains) if route else ["base"])
    return {
        c: "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T" if c == "solana" else "0x" + "11" * 20
        for c in names
    }


def _approval() -> dict[str, str]:
    return {
        "version": APPROVAL_VERSION,
        "quote_id": "q",
        "quote_fingerprint": "a" * 64,
        "direct_route_summary_sha256": "b" * 64,
        "selection_status": "selected",
        "selected_mode": "session",
        "maximum_input_base": "1",
        "minimum_output_base": "1",
        "idempotency_key": "k-12345678",
    }
