"""Both OpenAPI documents (v2 at /v2/openapi.json, legacy v1 at /openapi.json) validate, each lists only
its own paths, and every documented operation answers."""

from __future__ import annotations

import secrets
from typing import Any

import httpx
import pytest
from jsonschema import ValidationError
from openapi_spec_validator import validate
from tests.support.openapi_component import validate_component
from tests.unit.actions.support import approval_for, intent_for, wallets_for

EXAMPLES: dict[tuple[str, str], Any] = {
    ("post", "/v2/quote"): {
        "from_chain": "solana",
        "from_token": "SOL",
        "to_chain": "base",
        "to_token": "USDC",
        "amount_usd": 250,
    },
    ("post", "/v2/route-matrix"): {"amount_usd": 250},
    ("post", "/v1/quote"): {"amount_usd": 250, "destination_chain": "arbitrum"},
}


@pytest.mark.parametrize(("url", "prefix"), [("/v2/openapi.json", "/v2/"), ("/openapi.json", "/v1/")])
def test_openapi_document_validates_and_lists_only_its_paths(
    http: httpx.Client, url: str, prefix: str
) -> None:
    r = http.get(url)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    doc = r.json()
    validate(doc)
    assert doc["paths"] and all(p.startswith(prefix) for p in doc["paths"]), list(doc["paths"])
    assert not any(p.startswith("/.well-known") for p in doc["paths"])


@pytest.mark.parametrize("url", ["/v2/openapi.json", "/openapi.json"])
def test_every_documented_operation_answers(http: httpx.Client, url: str) -> None:
    doc = http.get(url).json()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if "{" in path:
                continue  # templated (session ids); exercised by their own suites
            if method == "get":
                r = http.get(path)
                assert r.status_code == 200, (path, r.status_code)
            elif method == "post":
                example = EXAMPLES.get((method, path))
                if example is not None:
                    r = http.post(path, json=example)
                    assert r.status_code == 200, (path, r.text)
                r = http.post(path, json={"not_a_field": True})
                if op.get("security"):  # v1 session calls: the bearer token is checked first
                    assert r.status_code == 401 and "401" in op["responses"], (path, r.status_code)
                    assert r.headers["www-authenticate"].startswith("Bearer"), path
                    continue
                assert r.status_code == 400, (path, r.status_code)
                assert "400" in op["responses"], path


def test_v1_document_describes_the_legacy_request(http: httpx.Client) -> None:
    doc = http.get("/openapi.json").json()
    req = doc["components"]["schemas"]["LegacyQuoteRequest"]
    assert req["additionalProperties"] is False
    assert req["properties"]["amount_usd"]["type"] == "integer"
    assert (req["properties"]["amount_usd"]["minimum"], req["properties"]["amount_usd"]["maximum"]) == (
        1,
        1000,
    )
    assert set(req["properties"]["destination_chain"]["enum"]) == {"base", "arbitrum"}
    assert doc["x-current-interface"] == "/v2/openapi.json"
    ops = {op["operationId"] for p in doc["paths"].values() for op in p.values()}
    assert ops == {
        "getLegacyStatus",
        "quoteLegacyCorridor",
        "startWalletAuth",
        "finishWalletAuth",
        "createLegacySession",
        "readLegacySession",
        "prepareLegacySourceAction",
        "verifyLegacySourceReceipt",
        "prepareLegacyCctpAction",
        "observeLegacyCctp",
        "prepareLegacyDestinationAction",
        "observeLegacyDestination",
    }
    assert doc["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    for name in ("WalletAuthStartRequest", "WalletAuthFinishRequest", "V1SessionCreateRequest"):
        assert doc["components"]["schemas"][name]["additionalProperties"] is False, name


def test_schemathesis_loads_the_v1_document(base_url: str) -> None:
    import schemathesis

    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    assert len(list(schema.get_all_operations())) == 12


def test_prepare_answers_carry_the_documented_preflight(http: httpx.Client) -> None:
    """`preflight` is typed in the served document (response-only: required on a prepare answer, optional on a
    session answer, and no member of the hashed bundle); a real answer validates against it."""
    doc = http.get("/v2/openapi.json").json()
    schemas = doc["components"]["schemas"]
    assert "preflight" in schemas["PrepareResponse"]["required"]
    assert "preflight" in schemas["SessionResponse"]["properties"]
    assert "preflight" not in schemas["PreparedBundle"].get("properties", {})
    ok = doc["paths"]["/v2/prepare"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/PrepareResponse"}
    created = doc["paths"]["/v2/session"]["post"]["responses"]["201"]["content"]["application/json"]["schema"]
    assert created == {"$ref": "#/components/schemas/SessionResponse"}
    route = "base:USDC->base:ETH"
    quote = http.post("/v2/quote", json=intent_for(route, 100)).json()
    body = {
        "caller_approved": True,
        **intent_for(route, 100),
        "wallets": wallets_for(route),
        "approval_v3": approval_for(quote, key=f"oa-{secrets.token_hex(6)}"),
    }
    answer = http.post("/v2/prepare", json=body)
    assert answer.status_code == 200, answer.text
    validate_component(doc, "PrepareResponse", answer.json())
    bad = {**answer.json(), "preflight": {**answer.json()["preflight"], "ok": "yes"}}
    with pytest.raises(ValidationError):
        validate_component(doc, "PrepareResponse", bad)
