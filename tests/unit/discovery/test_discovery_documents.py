"""Discovery documents built from configuration and code: no subjective words, scope taken from the
route registry / address book / snapshot, development key said to be one, keys from configuration."""

from __future__ import annotations

import base64
import os
import re
import stat
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from routequote.clock import FixedClock, SequentialIds
from routequote.config import Settings
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS
from routequote.core.assets import ASSETS, Chain
from routequote.core.hashing import canonical_json
from routequote.core.manifest import key_id_for, verify_documents
from routequote.core.routes import ROUTES, Provider
from routequote.discovery import Discovery, SigningKeyError, load_signing_key
from routequote.discovery.address_book import contracts
from routequote.discovery.keys import private_key_pem
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore

FORBIDDEN = {
    "safe",
    "secure",
    "audited",
    "audit_passed",
    "verdict",
    "risk_score",
    "trust_score",
    "safety_rating",
}
START = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


def _discovery(tmp_path, **overrides: Any) -> tuple[Discovery, FixedClock]:
    settings = Settings(
        **{"rate_limit": "off", "dev_signing_key_path": str(tmp_path / "dev.pem"), **overrides}
    )
    clock = FixedClock(START)
    service = RouteQuoteService(
        EmbeddedSnapshot(), MemoryQuoteStore(), clock, SequentialIds(), ServiceConfig()
    )
    return Discovery(
        settings=settings, service=service, clock=clock, signing_key=load_signing_key(settings)
    ), clock


def _words(tree: Any) -> set[str]:
    """Every key and string value, split into lower-case words (and whole snake_case keys)."""
    out: set[str] = set()
    if isinstance(tree, dict):
        for k, v in tree.items():
            out.add(k.lower())
            out |= set(re.split(r"[^a-z0-9]+", k.lower()))
            out |= _words(v)
    elif isinstance(tree, list):
        for v in tree:
            out |= _words(v)
    elif isinstance(tree, str):
        low = tree.lower()
        out |= set(re.split(r"[^a-z0-9_]+", low)) | set(re.split(r"[^a-z0-9]+", low))
    return out


async def test_no_subjective_words_in_any_document(tmp_path) -> None:
    d, _ = _discovery(tmp_path)
    trees = {
        "safety": await d.safety_document(),
        "manifest": await d.signed_manifest(),
        "evaluation": d.evaluation_workflow(),
        "index": d.api_index(),
        "evidence": await d.evidence(),
        "economics": await d.route_economics(),
        "pages": [d.terms(), d.privacy(), d.security(), d.security_txt(), await d.pricing(), d.llms_txt()],
    }
    for name, tree in trees.items():
        found = _words(tree) & FORBIDDEN
        assert not found, (name, found)
    # the walker does see keys and values
    assert _words({"a_key": {"x": ["a secure value"]}}) & FORBIDDEN == {"secure"}


async def test_safety_scope_comes_from_the_code(tmp_path) -> None:
    d, _ = _discovery(tmp_path)
    safety = await d.safety_document()
    scope = safety["claims"]["scope"]
    assert scope["directed_conversion_routes"] == len(ROUTES) == 72
    assert {a["endpoint"] for a in scope["asset_endpoints"]} == set(ASSETS)
    assert {a["address"] for a in scope["asset_endpoints"]} == {a.address for a in ASSETS.values()}
    providers = {s.provider.value for r in ROUTES.values() for s in r.steps}
    assert set(scope["providers"]) == providers
    entries = scope["third_party_contracts_and_programs"]
    listed = {(c["provider"], c["chain"]) for c in entries}
    for r in ROUTES.values():
        for s in r.steps:  # every chain a caller's action runs on, for every provider
            if s.action.value == "bridge" or s.source.chain.value != "solana":
                assert (s.provider.value, s.source.chain.value) in listed, s
    # the addresses the EVM action builders put into unsigned actions are the ones claimed
    for c in entries:
        if c["address_basis"] == "pinned_in_action_builder" and c["chain"] != "solana":
            dep = DEFAULT_DEPLOYMENTS[Chain(c["chain"])]
            assert dep.contract(Provider(c["provider"])) == c["address"], c
        if c["address"] is None:
            assert c["address_basis"] == "not_pinned" and c.get("note"), c
    rh_swap = next(c for c in entries if (c["provider"], c["chain"]) == ("uniswap_v3", "robinhood"))
    # the builder pins SwapRouter02 on Robinhood (Factory-derived pool checked in test_robinhood_uniswap)
    assert rh_swap["address"] == "0xCaf681a66D020601342297493863E78C959E5cb2"
    assert rh_swap["address_basis"] == "pinned_in_action_builder"
    pool_ids = {p["pool_id"] for p in scope["pools"]}
    assert {s.pool_id for r in ROUTES.values() for s in r.steps if s.pool_id} <= pool_ids
    bases = ("pinned_in_action_builder", "issuer_docs", "third_party", "not_pinned")
    assert all(c["address_basis"] in bases for c in entries)
    # every third-party-sourced or unpinned address is disclosed as a known limitation
    limits = {x["id"]: x["text"] for x in safety["known_limitations"]}
    for c in contracts():
        name = f"{c.provider.value}:{c.chain.value}:{c.role}"
        if c.basis == "third_party":
            assert name in limits["addresses_from_third_party_sources"]
        if c.address is None:
            assert name in limits["programs_not_pinned"]
    fee = safety["claims"]["fee_policy"]
    assert (fee["exact_bps"], fee["minimum_bps"], fee["maximum_bps"], fee["fee_maximum_stable_base"]) == (
        1,
        1,
        1,
        None,
    )
    assert safety["claims"]["noncustody_policy"]["server_signing"] is False
    snap = safety["evidence"]["market_snapshot"]
    assert (
        snap["source"] == "embedded_snapshot"
        and snap["live"] is False
        and snap["data_as_of"] == "2026-11-20T00:00:00Z"
    )
    assert len(safety["evidence"]["build"]["source_sha256"]) == 64


async def test_development_key_is_generated_outside_the_repo_and_said_to_be_one(tmp_path) -> None:
    d, clock = _discovery(tmp_path)
    key_file = tmp_path / "dev.pem"
    assert key_file.exists() and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert d.key.development and d.key.source == "development_file"
    manifest = await d.signed_manifest()
    assert manifest["signing_key"]["development_key"] is True
    assert manifest["signature"]["key_id"] == d.key.key_id
    safety = await d.safety_document()
    assert any(x["id"] == "development_signing_key" for x in safety["known_limitations"])
    assert "development key" in d.security().lower()
    # second start reuses the same development key
    again, _ = _discovery(tmp_path)
    assert again.key.key_id == d.key.key_id
    # and the manifest verifies with it at the instance's clock
    report = verify_documents(
        manifest_raw=canonical_json(manifest),
        public_key_pem_text=d.public_key_pem(),
        safety_raw=canonical_json(safety),
        now=clock.now(),
    )
    assert report.ok, report.failures


async def test_memory_only_development_key(tmp_path) -> None:
    settings = Settings(dev_signing_key_path="")
    key = load_signing_key(settings)
    assert key.source == "development_memory" and key.development


@pytest.mark.parametrize("form", ["pem", "b64", "b64url"])
def test_operator_key_from_environment(form: str, monkeypatch) -> None:
    private = Ed25519PrivateKey.generate()
    raw = private.private_bytes_raw()
    text = {
        "pem": private_key_pem(private).decode(),
        "b64": base64.b64encode(raw).decode(),
        "b64url": base64.urlsafe_b64encode(raw).decode().rstrip("="),
    }[form]
    monkeypatch.setenv("ROUTEQUOTE_SIGNING_KEY", text)
    key = load_signing_key(Settings())
    assert key.source == "environment" and not key.development
    assert key.key_id == key_id_for(private.public_key())


def test_operator_key_from_file_and_bad_keys(tmp_path) -> None:
    private = Ed25519PrivateKey.generate()
    path = tmp_path / "op.pem"
    path.write_bytes(private_key_pem(private))
    key = load_signing_key(Settings(signing_key_path=str(path)))
    assert key.source == "file" and key.key_id == key_id_for(private.public_key())
    with pytest.raises(SigningKeyError, match="ROUTEQUOTE_SIGNING_KEY_PATH"):
        load_signing_key(Settings(signing_key_path=str(tmp_path / "missing.pem")))
    with pytest.raises(SigningKeyError, match="ROUTEQUOTE_SIGNING_KEY"):
        load_signing_key(Settings(signing_key="c2hvcnQ="))
    assert not os.path.exists(tmp_path / "dev.pem")


async def test_manifest_is_resigned_when_half_its_validity_has_passed(tmp_path) -> None:
    d, clock = _discovery(tmp_path, manifest_valid_seconds=3600)
    first = await d.signed_manifest()
    assert first["issued_at"] == "2026-11-22T12:00:00Z" and first["valid_until"] == "2026-11-22T13:00:00Z"
    clock.advance(1000)
    assert await d.signed_manifest() is first
    clock.advance(1000)
    second = await d.signed_manifest()
    assert second["issued_at"] == "2026-11-22T12:33:20Z"
    assert second["safety_bundle"] == first["safety_bundle"]


async def test_fee_and_limits_follow_settings(tmp_path) -> None:
    d, _ = _discovery(
        tmp_path, quote_ttl_seconds=30, rate_limit="10/minute", security_contact="mailto:sec@example.org"
    )
    manifest = await d.signed_manifest()
    assert manifest["limits"]["quote_ttl_seconds"] == 30
    assert manifest["limits"]["rate_limit_per_client"] == "10/minute"
    assert (
        manifest["execution"]["server_signing"] is False
        and manifest["execution"]["server_submission"] is False
    )
    assert "30 s" in d.privacy() and "10/minute" in d.terms()
    assert d.security_txt().startswith("Contact: mailto:sec@example.org\nExpires: 2027-05-21T12:00:00Z\n")


async def test_route_economics_is_cached_per_market_version_and_throttled(tmp_path, monkeypatch) -> None:
    import dataclasses

    import routequote.discovery.discovery as mod

    d, clock = _discovery(tmp_path)
    base = EmbeddedSnapshot().current()
    versions = iter(f"v{i}" for i in range(100))

    class MovingMarket:
        label = "moving"

        async def view(self):
            return dataclasses.replace(base, version=next(versions))

        def health(self):
            return []

    calls: list[str] = []
    monkeypatch.setattr(
        mod, "route_economics", lambda view: calls.append(view.version) or {"v": view.version}
    )
    d.service.market = MovingMarket()
    assert (await d.route_economics()) == {"v": "v0"}
    clock.advance(30)
    assert (await d.route_economics()) == {"v": "v0"}  # version moved, but computed less than 60 s ago
    clock.advance(31)
    assert (await d.route_economics()) == {"v": "v2"}
    assert calls == ["v0", "v2"]


async def test_the_verifier_reports_whether_the_key_is_a_development_one(tmp_path) -> None:
    dev, clock = _discovery(tmp_path)
    private = Ed25519PrivateKey.generate()
    path = tmp_path / "op.pem"
    path.write_bytes(private_key_pem(private))
    operator, _ = _discovery(tmp_path, signing_key_path=str(path))
    for d, development in ((dev, True), (operator, False)):
        report = verify_documents(
            manifest_raw=canonical_json(await d.signed_manifest()),
            public_key_pem_text=d.public_key_pem(),
            safety_raw=canonical_json(await d.safety_document()),
            now=clock.now(),
        )
        assert report.ok and report.facts["development_key"] is development


async def test_capabilities_and_the_safety_document_say_the_bounds_are_modelled(tmp_path) -> None:
    d, _ = _discovery(tmp_path)
    safety = await d.safety_document()
    mode = safety["claims"]["action_bounds"]
    assert mode["bounds"] == "modelled" and mode["market"] == "embedded_snapshot"
    assert (
        mode["snapshot_as_of"] == "2026-11-20T00:00:00Z"
        and mode["refusal_code"] == "bounds_modelled_not_live"
    )
    assert "not live market data" in mode["statement"]
    assert any(x["id"] == "action_bounds_modelled" for x in safety["known_limitations"])
    assert d.service.capabilities()["action_bounds"] == mode
