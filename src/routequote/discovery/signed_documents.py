"""The signed trust documents: the safety document (scope, known limitations, market evidence, claims
and verifier rules) and the Ed25519-signed release manifest that binds it by SHA-256."""

from __future__ import annotations

import platform
from datetime import timedelta
from typing import Any

from routequote import __version__
from routequote.core.assets import ASSETS, CHAINS
from routequote.core.hashing import CANONICAL_JSON_SPEC, canonical_json, canonical_sha256
from routequote.core.intent import MAX_AMOUNT_USD, MIN_AMOUNT_USD
from routequote.core.manifest import (
    MANIFEST_PATH,
    MANIFEST_SCHEMA,
    PUBLIC_KEY_PATH,
    SAFETY_PATH,
    SAFETY_SCHEMA,
    iso_seconds,
    parse_time,
    sign_manifest,
)
from routequote.core.market import MarketView
from routequote.core.quote import RELEASE_STATUS, SERVER_FLAGS
from routequote.core.routes import ROUTES
from routequote.discovery.instance import ECONOMICS_PATH, SERVICE_NAME, V2_OPENAPI_PATH, InstanceFacts
from routequote.market.mode import market_execution_mode
from routequote.storage.quotes import MAX_RECORDS


class SignedDocuments(InstanceFacts):
    """The safety document and the signed manifest, cached per market version (re-signed when half the
    manifest's validity has passed or the evidence changed)."""

    # ---- safety document ---------------------------------------------------------------------------

    def _scope(self, view: MarketView) -> dict[str, Any]:
        listed = [
            {
                "provider": c.provider.value,
                "chain": c.chain.value,
                "role": c.role,
                "address": c.address,
                "address_basis": c.basis,
                **({"note": c.note} if c.note else {}),
            }
            for c in self.contracts
        ]
        pools = [
            {
                "provider": p.clmm.venue,
                "chain": pid.split(":", 1)[0],
                "role": "pool",
                "pool_id": pid,
                "address": p.address,
                "address_basis": "market_snapshot" if p.address else "not_pinned",
                "fee_pips": p.clmm.fee_pips,
            }
            for pid, p in sorted(view.pools.items())
        ]
        tokens = [
            {
                "endpoint": a.key,
                "chain": a.chain.value,
                "token": a.token.value,
                "decimals": a.decimals,
                "native": a.is_native,
                "address": a.address,
                "wrapped_address": a.wrapped_address,
                "token_program": a.token_program,
            }
            for a in ASSETS.values()
        ]
        return {
            "chains": [
                {
                    "chain": c.chain.value,
                    "family": c.family.value,
                    "chain_id": c.chain_id,
                    "cctp_domain": c.cctp_domain,
                }
                for c in CHAINS.values()
            ],
            "asset_endpoints": tokens,
            "directed_conversion_routes": len(ROUTES),
            "route_steps": sum(len(r.steps) for r in ROUTES.values()),
            "providers": sorted({s.provider.value for r in ROUTES.values() for s in r.steps}),
            "third_party_contracts_and_programs": listed,
            "pools": pools,
            "service_deployed_contracts": [],
            "service_deployed_contracts_note": (
                "this build deploys no contracts of its own; actions call the third-party contracts and programs "
                "listed here directly from the caller's wallet"
            ),
        }

    def _limitations(self, view: MarketView) -> list[dict[str, str]]:
        out: list[dict[str, str]] = []
        unset = [k for k, ok in self.fee_recipients_configured().items() if not ok]
        if unset:
            out.append(
                {
                    "id": "fee_recipient_not_configured",
                    "text": f"the {' and '.join(unset)} service fee recipient is a development placeholder: "
                    "a signed action would send the fee nowhere; actions say fee_recipient_configured: false",
                }
            )
        if not view.live:
            out.append(
                {
                    "id": "market_data_modelled",
                    "text": f"quotes are priced from the embedded market snapshot of {view.as_of}, not live data",
                }
            )
            out.append(
                {
                    "id": "action_bounds_modelled",
                    "text": "the bounds of prepared actions (minimum output, CCTP maxFee, Across output, LayerZero "
                    f"native fee, Solana tick arrays) are modelled from the snapshot of {view.as_of} where their "
                    "receipt says bounds.basis modelled; verifiers refuse those unless the caller accepts them",
                }
            )
        modelled = sorted(
            pid for pid, p in view.pools.items() if p.state_source == "embedded_snapshot" and p.accounts
        )
        if modelled:
            out.append(
                {
                    "id": "solana_swaps_from_modelled_pool_state",
                    "text": "Solana swaps on "
                    + ", ".join(modelled)
                    + " are built from the embedded snapshot's modelled pool state: their tick arrays may not "
                    "match mainnet, so the swap may fail; it never pays below its minimum output",
                }
            )
        unpinned = sorted(pid for pid, p in view.pools.items() if not p.address)
        if unpinned:
            out.append(
                {
                    "id": "pool_accounts_not_pinned",
                    "text": "no pool account pinned for: " + ", ".join(unpinned),
                }
            )
        third = sorted(
            {
                f"{c.provider.value}:{c.chain.value}:{c.role}"
                for c in self.contracts
                if c.basis == "third_party"
            }
        )
        if third:
            out.append(
                {
                    "id": "addresses_from_third_party_sources",
                    "text": "addresses taken from third-party sources; check on chain: " + ", ".join(third),
                }
            )
        missing = sorted(
            f"{c.provider.value}:{c.chain.value}:{c.role}" for c in self.contracts if c.address is None
        )
        if missing:
            out.append({"id": "programs_not_pinned", "text": "no address pinned for: " + ", ".join(missing)})
        oft = self.service.config.solana_arrivals.get("oft") or {}
        if oft.get("pin_error"):
            out.append({"id": "usdg_oft_solana_program_disagreement", "text": oft["pin_error"]})
        elif not oft.get("verifiable"):
            out.append(
                {
                    "id": "usdg_oft_solana_program_not_pinned",
                    "text": "the USDG OFT program on Solana is not pinned by this build: a session's USDG arrival "
                    "on Solana (LayerZero lz_receive) cannot be verified and is never accepted until the "
                    "operator sets ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM",
                }
            )
        if view.oft.delivery_seconds is None:
            out.append(
                {
                    "id": "eta_incomplete_for_oft_routes",
                    "text": "routes with a LayerZero OFT step carry no complete time estimate",
                }
            )
        else:
            out.append(
                {
                    "id": "eta_modelled_for_oft_routes",
                    "text": f"the LayerZero OFT delivery time of routes with an OFT step is modelled "
                    f"({view.oft.delivery_seconds} s), not measured",
                }
            )
        ready = len(self.service.config.prepare_ready_routes)
        if ready < len(ROUTES):
            out.append(
                {
                    "id": "prepare_not_available_on_all_routes",
                    "text": f"unsigned action preparation is available on {ready} of {len(ROUTES)} routes",
                }
            )
        blocked = self.service.config.session_unavailable_reasons
        if (
            blocked
        ):  # a session is opened only where it can be carried to complete (RPC URLs, lookups, OFT pin)
            out.append(
                {
                    "id": "sessions_not_available_on_all_routes",
                    "text": f"a session can be carried to complete on {len(ROUTES) - len(blocked)} of {len(ROUTES)} "
                    "routes on this instance; capabilities route_readiness names what the others lack (an RPC "
                    "URL per chain, a bridge lookup, the USDG OFT program)",
                }
            )
        out.append(
            {
                "id": "network_gas_unpriced",
                "text": "network gas is reported in units per chain and is not priced into quotes",
            }
        )
        out.append(
            {
                "id": "non_atomic_routes",
                "text": "multi-step routes are sequential and non-atomic; a later step can fail after an earlier one",
            }
        )
        out.append(
            {
                "id": "external_intent_protocol",
                "text": "Robinhood ingress uses Across, where provider-internal liquidity sourcing may occur",
            }
        )
        if self.key.development:
            out.append(
                {
                    "id": "development_signing_key",
                    "text": "the manifest is signed with a development key generated by this instance",
                }
            )
        return out

    def _market_evidence(self, view: MarketView) -> dict[str, Any]:
        doc = getattr(self.service.market, "document", None)
        return {
            "source": view.source,
            "live": view.live,
            "data_as_of": None if view.live else view.as_of,
            "version": None if view.live else view.version,
            "document_sha256": canonical_sha256(doc) if isinstance(doc, dict) and not view.live else None,
            "notes": list(view.notes),
        }

    def _safety_for(self, view: MarketView) -> dict[str, Any]:
        route_table = [
            {"route": r.key, "providers": list(r.provider_path), "fee_step_index": r.fee_step_index}
            for r in ROUTES.values()
        ]
        return {
            "schema": SAFETY_SCHEMA,
            "bundle_version": 1,
            "service": SERVICE_NAME,
            "release": {
                "service_version": __version__,
                "release_commit": self.commit,
                "release_commit_source": self.commit_source,
                "release_status": RELEASE_STATUS,
            },
            "claims": {
                "scope": self._scope(view),
                # live or modelled: where the bounds of every prepared action come from (core/bounds.py)
                "action_bounds": market_execution_mode(self.service.market, view),
                # where the USDG OFT program arrivals on Solana are verified against came from (oft_pin.py)
                "usdg_oft_solana_program": (self.service.config.solana_arrivals.get("oft") or {}).get("pin"),
                "fee_policy": {
                    **self.fee_policy(),
                    "fee_recipients": self.fee_recipients(),
                    "fee_recipients_configured": self.fee_recipients_configured(),
                },
                "amount_policy": {
                    "minimum_usd": MIN_AMOUNT_USD,
                    "maximum_usd": MAX_AMOUNT_USD,
                    "enforced_at": "quote request validation (400 outside the range)",
                    "unit": "USD notional at the reference price; no funds move when quoting",
                },
                "noncustody_policy": {
                    **SERVER_FLAGS,
                    "holds_caller_funds": False,
                    "receives_caller_private_keys": False,
                    "caller_signs_and_submits": True,
                    "quote_only_operations_move_no_funds": True,
                    "automatic_selection": False,
                    "automatic_prepare": False,
                    "only_verified_actual_output_advances_a_workflow": True,
                },
            },
            "evidence": {
                "market_snapshot": self._market_evidence(view),
                "build": {
                    "service_version": __version__,
                    "release_commit": self.commit,
                    "source_sha256": self.source_sha256,
                    "source_sha256_spec": "sha256 over sorted (relative path, sha256 of file) of the package's .py and .json files",
                    "python": platform.python_version(),
                },
                "route_registry": {
                    "route_count": len(ROUTES),
                    "sha256": canonical_sha256(route_table),
                    "sha256_spec": "sha256 of "
                    + CANONICAL_JSON_SPEC
                    + " of [{route, providers, fee_step_index}]",
                },
                "signing_key": self.signing_key_facts(),
                "public_urls": {
                    "manifest": self.url(MANIFEST_PATH),
                    "public_key": self.url(PUBLIC_KEY_PATH),
                    "route_economics": self.url(ECONOMICS_PATH),
                    "openapi_v2": self.url(V2_OPENAPI_PATH),
                },
            },
            "known_limitations": self._limitations(view),
            "operational_disclosures": {
                "issued_quotes_kept_in_memory_seconds": self.settings.quote_ttl_seconds,
                "issued_quote_store_max_records": MAX_RECORDS,
                "rate_limit_per_client": self.settings.rate_limit,
                "rate_limit_store": "redis" if self.settings.redis_url else "process_memory",
            },
            "verifier_rules": [
                "manifest bytes equal " + CANONICAL_JSON_SPEC + " of the parsed manifest",
                "signature: Ed25519 over the canonical manifest without its signature member; value base64url, no padding",
                "signature.key_id equals 'routequote-' + first 16 hex of sha256(raw 32-byte public key)",
                "the public key equals the operator's pinned key when one is pinned",
                "sha256 of the canonical safety document equals manifest.safety_bundle.sha256",
                "issued_at <= now + 300 s, valid_until > now, and the age is within the verifier's limit",
                "execution.server_signing and execution.server_submission are false; fee_policy exact_bps is 1",
            ],
        }

    async def safety_document(self) -> dict[str, Any]:
        view = await self.view()
        if self._safety is None or self._safety[0] != view.version:
            self._safety = (view.version, self._safety_for(view))
        return self._safety[1]

    # ---- manifest ------------------------------------------------------------------------------------

    async def signed_manifest(self) -> dict[str, Any]:
        """The signed manifest dict (re-signed when half its validity has passed or the evidence changed)."""
        safety = await self.safety_document()
        safety_sha = canonical_sha256(safety)
        now = self.clock.now()
        cached = self._manifest
        if cached is not None and cached["safety_bundle"]["sha256"] == safety_sha:
            issued = parse_time(cached["issued_at"])
            if now < issued + timedelta(seconds=self.settings.manifest_valid_seconds / 2) and now >= issued:
                return cached
        view = await self.view()
        issued_at = now.replace(microsecond=0)
        payload = {
            "schema": MANIFEST_SCHEMA,
            "service": SERVICE_NAME,
            "service_version": __version__,
            "base_url": self.base_url,
            "endpoints": self._endpoints_by_surface(),
            "execution": {
                **SERVER_FLAGS,
                "fee_policy": self.fee_policy(),
                "release_status": RELEASE_STATUS,
            },
            "limits": self.limits(),
            "release_commit": self.commit,
            "issued_at": iso_seconds(issued_at),
            "valid_until": iso_seconds(issued_at + timedelta(seconds=self.settings.manifest_valid_seconds)),
            "market": {
                "source": view.source,
                "live": view.live,
                "data_as_of": None if view.live else view.as_of,
            },
            "signing_key": self.signing_key_facts(),
            "safety_bundle": {
                "schema": SAFETY_SCHEMA,
                "url": self.url(SAFETY_PATH),
                "sha256": safety_sha,
                "canonicalization": CANONICAL_JSON_SPEC,
            },
            "verification": {
                "command": f"routequote verify-manifest {self.base_url}",
                "public_key_url": self.url(PUBLIC_KEY_PATH),
                "key_id": self.key.key_id,
            },
        }
        self._manifest = sign_manifest(payload, self.key.private, public_key_url=self.url(PUBLIC_KEY_PATH))
        return self._manifest

    async def manifest_bytes(self) -> bytes:
        return canonical_json(await self.signed_manifest())

    async def safety_bytes(self) -> bytes:
        return canonical_json(await self.safety_document())
