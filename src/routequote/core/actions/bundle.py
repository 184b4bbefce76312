"""The unsigned action bundle and its safety receipt, with every hash that binds them.

`payload_sha256` = sha256 of the canonical JSON (sorted keys, compact, UTF-8) of the whole bundle
without `payload_sha256`. `action_sha256` = the same over `unsigned_action` without `safety_receipt`.
Each raw payload row (one EVM transaction or one Solana instruction) has `raw_sha256` over its canonical
JSON and `data_sha256` over its raw data bytes.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from routequote.core.actions import solana as sol
from routequote.core.actions import solana_swaps as sw
from routequote.core.actions.evm import EvmBuild
from routequote.core.actions.plan import (
    BUNDLE_TTL_SECONDS,
    CCTP_FAST_FINALITY,
    MAX_DEADLINE_WINDOW_SECONDS,
    StepPlan,
)
from routequote.core.actions.solana import SolanaBuild
from routequote.core.assets import CHAINS, Chain
from routequote.core.fee_recipient import is_placeholder
from routequote.core.hashing import CANONICAL_JSON_SPEC, canonical_sha256, sha256_hex
from routequote.core.providers import PROVIDERS
from routequote.core.routes import Action, Route

BUNDLE_VERSION = "routequote-direct-multichain-action-v2"
WORKFLOW_VERSION = "routequote-direct-workflow-v1"
EVM_ACTION_VERSION = "routequote-evm-unsigned-action-v1"
SOLANA_ACTION_VERSION = "routequote-solana-unsigned-action-v1"
RECEIPT_SCHEMA = "https://routequote.dev/schemas/action-safety-receipt-v1"
BUILDER_VERSION = "routequote-actions-1"
PAYLOAD_SHA256_SPEC = f"sha256({CANONICAL_JSON_SPEC}, excluding payload_sha256 itself and the response-only idempotent_replay flag and preflight advice)"
# `preflight` is advice computed per answer from chain reads (routequote.preflight): never part of the action
RESPONSE_ONLY_KEYS = frozenset({"payload_sha256", "idempotent_replay", "preflight"})
ACTION_SHA256_SPEC = f"{CANONICAL_JSON_SPEC}; omit safety_receipt"
SERVER_FLAGS = {"server_signing": False, "server_submission": False}
FEE_FORMULA = "floor(fee_basis_base * bps / 10000)"


def iso_ms(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def unix(t: datetime) -> int:
    return int(t.timestamp())


def payload_sha256(bundle: dict[str, Any]) -> str:
    return canonical_sha256({k: v for k, v in bundle.items() if k not in RESPONSE_ONLY_KEYS})


def action_sha256(unsigned_action: dict[str, Any]) -> str:
    return canonical_sha256({k: v for k, v in unsigned_action.items() if k != "safety_receipt"})


def raw_payload_rows(unsigned_action: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-payload binding rows of the receipt, derived only from the unsigned action."""
    rows: list[dict[str, Any]] = []
    for i, tx in enumerate(unsigned_action.get("transactions") or []):
        data = bytes.fromhex(tx["data"][2:])
        rows.append(
            {
                "index": i,
                "kind": "evm_transaction",
                "chain_id": tx["chainId"],
                "target": tx["to"],
                "selector": "0x" + data[:4].hex() if data else None,
                "native_value_base": tx["value"],
                "raw_sha256": canonical_sha256(tx),
                "data_sha256": sha256_hex(data),
            }
        )
    for i, ix in enumerate(unsigned_action.get("instructions") or []):
        data = base64.b64decode(ix["data"])
        rows.append(
            {
                "index": i,
                "kind": "solana_instruction",
                "program_id": ix["programId"],
                "instruction_type": instruction_type(ix["programId"], data),
                "data_prefix_hex": data[:8].hex(),
                "raw_sha256": canonical_sha256(ix),
                "data_sha256": sha256_hex(data),
            }
        )
    return rows


def instruction_type(program_id: str, data: bytes) -> str:
    if program_id == str(sol.ATA_PROGRAM) and data == bytes([sol.ATA_CREATE_IDEMPOTENT]):
        return "associated_token_account_create_idempotent"
    if data[:1] == bytes([sol.SPL_TRANSFER_CHECKED]) and len(data) == 10:
        return "spl_transfer_checked"
    if (
        program_id == str(sol.CCTP_TOKEN_MESSENGER_MINTER_V2)
        and data[:8] == sol.DEPOSIT_FOR_BURN_DISCRIMINATOR
    ):
        return "cctp_v2_deposit_for_burn"
    if program_id == str(sw.ORCA_WHIRLPOOL_PROGRAM) and data[:8] == sw.SWAP_V2_DISCRIMINATOR:
        return "orca_whirlpool_swap_v2"
    if program_id == str(sw.RAYDIUM_CLMM_PROGRAM) and data[:8] == sw.SWAP_V2_DISCRIMINATOR:
        return "raydium_clmm_swap_v2"
    if program_id == str(sol.SYSTEM_PROGRAM) and data[:4] == (2).to_bytes(4, "little") and len(data) == 12:
        return "system_transfer"
    if data == bytes([sol.SPL_SYNC_NATIVE]):
        return "spl_sync_native"
    if data == bytes([sol.SPL_CLOSE_ACCOUNT]):
        return "spl_close_account"
    return "unknown"


def allowlists(unsigned_action: dict[str, Any]) -> tuple[list[str], list[str]]:
    targets: set[str] = set()
    selectors: set[str] = set()
    for tx in unsigned_action.get("transactions") or []:
        targets.add(tx["to"])
        data = tx["data"][2:]
        selectors.add(f"{tx['to']}:0x{data[:8]}" if data else f"{tx['to']}:native_transfer")
    for ix in unsigned_action.get("instructions") or []:
        targets.add(ix["programId"])
        selectors.add(f"{ix['programId']}:{base64.b64decode(ix['data'])[:8].hex()}")
    return sorted(targets), sorted(selectors)


def workflow(plan: StepPlan, workflow_id: str, summary_steps: list[dict[str, Any]]) -> dict[str, Any]:
    return workflow_document(
        plan.route,
        plan.wallets,
        plan.step.index,
        workflow_id,
        summary_steps,
        actual_input_base=str(plan.input_base),
        minimum_output_base=str(plan.minimum_output_base),
    )


def workflow_document(
    route: Route,
    wallets: Mapping[str, str],
    current_step: int,
    workflow_id: str,
    summary_steps: list[dict[str, Any]],
    *,
    actual_input_base: str | None,
    minimum_output_base: str,
) -> dict[str, Any]:
    """The bundle's `workflow`: every step with its wallets and quoted bounds; the current one with the
    amounts this action carries."""
    steps = []
    for s, summ in zip(route.steps, summary_steps, strict=True):
        current = s.index == current_step
        steps.append(
            {
                "index": s.index,
                "kind": "swap" if s.action is Action.SWAP else "bridge",
                "provider": s.provider.value,
                "from": s.source.key,
                "to": s.target.key,
                "asset": s.source.token.value,
                "route_fee_bps": 1 if s.fee_step else 0,
                "caller_wallet": wallets[s.source.chain.value],
                "recipient_wallet": wallets[s.target.chain.value],
                "quoted_input_base": summ["expected_input_base"],
                "actual_input_base": actual_input_base if current else None,
                "minimum_output_base": minimum_output_base if current else summ["minimum_output_base"],
            }
        )
    return {
        "version": WORKFLOW_VERSION,
        "workflow_id": workflow_id,
        "route": route.key,
        "current_step": current_step,
        "step_count": len(route.steps),
        "wallets": dict(sorted(wallets.items())),
        "steps": steps,
        "future_steps_require_fresh_quote_and_verified_receipt": True,
        **SERVER_FLAGS,
    }


def unsigned_action(plan: StepPlan, build: EvmBuild | SolanaBuild) -> dict[str, Any]:
    step = plan.step
    src = step.source
    spec = PROVIDERS[step.provider]
    head: dict[str, Any] = {
        "source": src.key,
        "destination": step.target.key,
        "chain": src.chain.value,
        "provider": step.provider.value,
        "step_index": step.index,
        "sender": plan.caller,
        "recipient": plan.recipient,
        "inputAmount": str(plan.input_base),
        "routeFeeBps": 1 if step.fee_step else 0,
        "routeFee": str(plan.fee_base),
        "feeRecipient": plan.fee_recipient if plan.fee_base else None,
        "netInputAmount": str(plan.net_input_base),
        "expectedOutput": str(plan.expected_output_base),
        "minimumOutput": str(plan.minimum_output_base),
        "maxProviderFee": str(plan.max_provider_fee_base) if spec.bounded_provider_fee else None,
        "minFinalityThreshold": CCTP_FAST_FINALITY if spec.bounded_provider_fee else None,
        "nativeMessagingFee": str(plan.native_fee_wei) if spec.native_messaging_fee else None,
        "deadline": plan.deadline_unix,
        "fillDeadline": plan.fill_deadline_unix if spec.fill_deadline else None,
        "kinds": list(build.kinds),
        "aggregatorApiUsed": False,
        "signed": False,
        "submitted": False,
    }
    if plan.pool_tick_current is not None:  # Solana swaps: the tick their tick arrays were chosen from
        head["poolTickCurrent"] = plan.pool_tick_current
        snapshot = plan.pool_state_source == sw.POOL_STATE_SNAPSHOT
        head["pool_state_source"] = "snapshot" if snapshot else "live"
        if snapshot:
            head["pool_state_note"] = sw.SNAPSHOT_SWAP_NOTE
    if plan.raydium_live is not None:  # Raydium swaps: accounts taken from the same read of the pool
        live = plan.raydium_live
        pool = sw.RAYDIUM_POOLS[plan.step.pool_id or ""].pool
        from_snapshot = plan.pool_state_source == sw.POOL_STATE_SNAPSHOT
        key = "poolAccountsFromSnapshotState" if from_snapshot else "poolAccountsFromLiveChainState"
        head[key] = {
            "source": "embedded_snapshot_modelled_state_not_live"
            if from_snapshot
            else "server_live_read_of_the_pinned_pool_account_at_prepare_time_not_independently_pinned",
            "pool": pool,
            "observationState": live.observation,
            "tickArrayBitmapExtension": live.bitmap_extension,
            "tickArrayStartIndexes": list(live.tick_array_starts),
            "tickArrays": [sw.raydium_tick_array_address(pool, s) for s in live.tick_array_starts],
            "note": "observation = the pool account's observation_key; tick arrays = chosen as the Raydium SDK "
            "chooses them for this swap's direction and size; a wrong one makes the swap fail, the minimum output "
            "still holds",
        }
    if isinstance(build, EvmBuild):
        head.update(
            version=EVM_ACTION_VERSION,
            family="evm",
            chainId=CHAINS[src.chain].chain_id,
            transactions=build.transactions,
            requiredSigners=[plan.caller],
            submission="sequential_in_order_each_after_the_previous_is_confirmed",
        )
    else:
        head.update(
            version=SOLANA_ACTION_VERSION,
            family="solana",
            chainId="mainnet-beta",
            feePayer=plan.caller,
            recentBlockhash=None,
            instructions=build.instructions,
            requiredSigners=build.required_signers,
            feeRecipientTokenAccount=build.fee_recipient_token_account,
            submission="one_transaction_all_instructions_in_order_caller_adds_fresh_blockhash",
        )
    return head


def safety_receipt(
    plan: StepPlan,
    build: EvmBuild | SolanaBuild,
    action: dict[str, Any],
    *,
    quote_expiry_unix: int | None,
    bundle_expires_at: str,
    unpriced_costs: list[str],
    bounds: dict[str, Any],
) -> dict[str, Any]:
    step = plan.step
    spec = PROVIDERS[step.provider]
    src, dst = step.source, step.target
    targets, selectors = allowlists(action)
    is_evm = isinstance(build, EvmBuild)
    native_values = [int(tx["value"]) for tx in action.get("transactions") or []]
    approval = build.approval if isinstance(build, EvmBuild) else None
    return {
        "schema": RECEIPT_SCHEMA,
        "schema_version": 1,
        "generation": "decoded_built_action_only",
        "network": {
            "source_chain": src.chain.value,
            "source_chain_id": CHAINS[src.chain].chain_id if is_evm else "mainnet-beta",
            "destination_chain": dst.chain.value,
        },
        "action": {
            "kind": spec.action_kind,
            "provider": step.provider.value,
            "builder_version": BUILDER_VERSION,
            "step_index": step.index,
        },
        "parties": {"caller": plan.caller, "fee_payer": plan.caller},
        "spend": {
            "token": {"symbol": src.token.value, "address_or_mint": build.spend_token},
            "exact_amount_base": str(plan.input_base),
            "maximum_amount_base": str(plan.input_base),
        },
        "approval": approval
        or {
            "required": False,
            "token": None,
            "target": None,
            "exact_allowance_base": "0",
            "transaction_index": None,
        },
        "target_or_program_allowlist": targets,
        "selector_or_instruction_allowlist": selectors,
        "native_value_cap": {
            "maximum_base": str(max(native_values, default=0)) if is_evm else "0",
            "unit": "wei" if is_evm else "lamports",
            "per_transaction_base": [str(v) for v in native_values],
        },
        "service_fee": {
            "basis": {"kind": "exact_input_base", "amount_base": str(plan.input_base)},
            "bps": 1 if step.fee_step else 0,
            "collected_on_this_step": step.fee_step,
            "fee_collection_step_index": plan.route.fee_step_index,
            "formula": FEE_FORMULA,
            "exact_amount_base": str(plan.fee_base),
            "token": src.key,
            "amount_known_before_execution": True,
            "recipient": plan.fee_recipient if plan.fee_base else None,
            "recipient_token_account": build.fee_recipient_token_account
            if isinstance(build, SolanaBuild)
            else None,
        },
        "receive": {
            "token": dst.key,
            "expected_amount_base": str(plan.expected_output_base),
            "minimum_amount_base": str(plan.minimum_output_base),
        },
        # where the enforced numbers came from (core/bounds.py): a modelled basis is refused by verifiers
        "bounds": bounds,
        "destination": build.destination,
        "timing": {
            "prepared_at_unix": plan.prepared_at_unix,
            "action_deadline_unix": plan.deadline_unix,
            "deadline_enforced_onchain": spec.deadline_enforced_onchain,
            "maximum_deadline_window_seconds": MAX_DEADLINE_WINDOW_SECONDS,
            "across_fill_deadline_unix": plan.fill_deadline_unix if spec.fill_deadline else None,
            "quote_expiry_unix": quote_expiry_unix,
            "recent_blockhash": None,
            "bundle_expires_at": bundle_expires_at,
        },
        "payload_binding": {
            "canonicalization": ACTION_SHA256_SPEC,
            "action_sha256": action_sha256(action),
            "raw_payloads": raw_payload_rows(action),
        },
        "custody": {**SERVER_FLAGS, "signed": False, "submitted": False},
        "risks": {
            "unpriced": sorted(unpriced_costs),
            "provider": list(spec.risks)
            + (list(spec.solana_destination_risks) if dst.chain is Chain.SOLANA else [])
            + (
                [
                    "pool_state_from_the_embedded_snapshot_modelled_tick_arrays_may_fail_on_mainnet_never_below_minimum"
                ]
                if plan.pool_state_source == sw.POOL_STATE_SNAPSHOT
                else []
            ),
            "caller_verification_required": True,
        },
    }


def assemble_bundle(
    plan: StepPlan,
    build: EvmBuild | SolanaBuild,
    *,
    workflow_id: str,
    action_id: str,
    prepared_at: datetime,
    quote_binding: dict[str, Any],
    summary_steps: list[dict[str, Any]],
    quote_expiry_unix: int | None,
    bounds: dict[str, Any],
) -> dict[str, Any]:
    """The complete bundle with receipt and payload hash. `prepared_at` is the caller-handed time;
    `bounds` is where its numbers came from (`core.bounds.bounds_block`)."""
    from datetime import timedelta

    expires = prepared_at + timedelta(seconds=BUNDLE_TTL_SECONDS)
    action = unsigned_action(plan, build)
    chain = plan.step.source.chain
    spec = PROVIDERS[plan.step.provider]
    unpriced = [f"network_gas:{chain.value}"]
    if chain is Chain.SOLANA:
        unpriced.append("solana_priority_fee")
        unpriced.append(f"solana_account_rent:{spec.solana_source_rent}")
        if plan.fee_base:
            unpriced.append("solana_account_rent:fee_recipient_token_account_if_new")
    if spec.destination_action:
        unpriced.append(f"network_gas:{plan.step.target.chain.value}:{spec.destination_action}")
    action["safety_receipt"] = safety_receipt(
        plan,
        build,
        action,
        quote_expiry_unix=quote_expiry_unix,
        bundle_expires_at=iso_ms(expires),
        unpriced_costs=unpriced,
        bounds=bounds,
    )
    return seal_bundle(
        workflow_id=workflow_id,
        action_id=action_id,
        step_index=plan.step.index,
        route_key=plan.route.key,
        prepared_at=prepared_at,
        expires=expires,
        deadline_unix=plan.deadline_unix,
        quote_binding=quote_binding,
        workflow=workflow(plan, workflow_id, summary_steps),
        action=action,
        fee_recipient_configured=not is_placeholder(plan.fee_recipient),
    )


def seal_bundle(
    *,
    workflow_id: str,
    action_id: str,
    step_index: int,
    route_key: str,
    prepared_at: datetime,
    expires: datetime,
    deadline_unix: int,
    quote_binding: dict[str, Any],
    workflow: dict[str, Any],
    action: dict[str, Any],
    fee_recipient_configured: bool | None = None,
) -> dict[str, Any]:
    """The bundle around an unsigned action (its receipt already inside), sealed with its payload hash: the
    one ending of every bundle builder (a route step, a CCTP destination mint). `fee_recipient_configured`
    is given for every step that names a fee recipient (a destination mint pays no fee and names none)."""
    bundle: dict[str, Any] = {
        "version": BUNDLE_VERSION,
        "status": "pass",
        "workflow_id": workflow_id,
        "action_id": action_id,
        "step_index": step_index,
        "route": route_key,
        "prepared_at": iso_ms(prepared_at),
        "expires_at": iso_ms(expires),
        "expires_in_seconds": BUNDLE_TTL_SECONDS,
        "deadline_unix": deadline_unix,
        "quote_binding": quote_binding,
        "workflow": workflow,
        "unsigned_action": action,
        # false while the operator left the development placeholder in place: the fee would go nowhere
        **(
            {} if fee_recipient_configured is None else {"fee_recipient_configured": fee_recipient_configured}
        ),
        "payload_sha256_spec": PAYLOAD_SHA256_SPEC,
        **SERVER_FLAGS,
        "signed": False,
        "submitted": False,
    }
    bundle["payload_sha256"] = payload_sha256(bundle)
    return bundle
