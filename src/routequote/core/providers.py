"""One `ProviderSpec` per provider: the facts that quote costs, action bundles, preflight and the address book
read about a venue or bridge. Code that only needs a fact reads it here; code that does something different
per provider (pricing formulas, calldata encoding, decoding) still chooses on the provider itself.

Every string here appears in quotes, bundles or safety receipts: changing one changes their bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from routequote.core.assets import ChainFamily
from routequote.core.routes import Action, Provider

_EVM = frozenset({ChainFamily.EVM})
_SOLANA = frozenset({ChainFamily.SOLANA})
_SWAP_RISK = "pool_price_may_move_before_inclusion_minimum_output_enforced_onchain"
_TICK_ARRAY_RISK = "tick_arrays_chosen_from_the_live_tick_at_prepare_time_a_large_move_fails_the_swap"
_NO_DEADLINE_RISK = "no_onchain_deadline_the_caller_blockhash_bounds_inclusion"


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    provider: Provider
    action: Action
    source_families: frozenset[ChainFamily]
    """Chain families a step of this provider can start on (where the caller's action runs)."""
    fee_kind: str
    """Quote fee component kind of the provider's fee (and of a native messaging fee, where one is paid)."""
    amount_fee_kind: str
    """Quote fee component kind of the fee taken out of the amount (differs from `fee_kind` for the OFT)."""
    gas_actions: tuple[str, ...]
    """Quote network-gas action names on the source chain; `erc20_approve` drops for native or Solana input."""
    action_kind: str
    """The safety receipt's `action.kind`."""
    signed_action_kind: str
    """Preflight's kind of the action the caller signs on the source chain."""
    risks: tuple[str, ...]
    """The safety receipt's provider risks, every step of this provider."""
    eta_source: str | None = None
    """Documentation cited for a bridge's modelled time (quote `eta.sources`)."""
    destination_action: str | None = None
    """A second action the caller signs and pays gas for on the destination chain (the CCTP mint)."""
    solana_destination_risks: tuple[str, ...] = ()
    """Receipt risks added when the step delivers to Solana."""
    solana_source_rent: str | None = None
    """The unpriced Solana account rent a step starting on Solana may pay (`solana_account_rent:<this>`)."""
    evm_contract: str | None = None
    """The `EvmDeployment` field that pins the contract the caller's EVM action targets (its allowlist)."""
    evm_role: str | None = None
    """That contract's role in the address book."""
    bounded_provider_fee: bool = False
    """The action carries the provider's maximum fee (CCTP `maxFee`, with the fast finality threshold)."""
    native_messaging_fee: bool = False
    """The action pays a native messaging fee as value on top of the amount (LayerZero)."""
    fill_deadline: bool = False
    """The action carries a relayer fill deadline (Across)."""
    deadline_enforced_onchain: bool = False
    """The action's deadline is enforced by the contract (Uniswap's multicall deadline)."""
    native_input_as_value: bool = False
    """A native-token input is sent as the protocol call's value (the router wraps it)."""
    pool_fee_tier: bool = False
    """The swap's action names the pool's fee tier (`pool_fee_pips`): a Uniswap v3 pool is keyed by its fee."""


PROVIDERS: dict[Provider, ProviderSpec] = {
    Provider.UNISWAP_V3: ProviderSpec(
        Provider.UNISWAP_V3,
        Action.SWAP,
        _EVM,
        fee_kind="pool_lp_fee",
        amount_fee_kind="pool_lp_fee",
        gas_actions=("erc20_approve", "uniswap_v3_swap"),
        action_kind="evm_uniswap_v3_swap",
        signed_action_kind="uniswap_v3_swap",
        risks=(_SWAP_RISK,),
        evm_contract="swap_router02",
        evm_role="swap_router_02",
        deadline_enforced_onchain=True,
        native_input_as_value=True,
        pool_fee_tier=True,
    ),
    Provider.RAYDIUM_CLMM: ProviderSpec(
        Provider.RAYDIUM_CLMM,
        Action.SWAP,
        _SOLANA,
        fee_kind="pool_lp_fee",
        amount_fee_kind="pool_lp_fee",
        gas_actions=("raydium_clmm_swap",),
        action_kind="solana_raydium_clmm_swap",
        signed_action_kind="solana_swap",
        risks=(
            _SWAP_RISK,
            _TICK_ARRAY_RISK,
            "observation_and_tick_arrays_from_the_servers_read_a_wrong_one_fails_the_swap_never_pays_below_minimum",
            _NO_DEADLINE_RISK,
        ),
        solana_source_rent="caller_output_token_account_if_new",
    ),
    Provider.ORCA_WHIRLPOOL: ProviderSpec(
        Provider.ORCA_WHIRLPOOL,
        Action.SWAP,
        _SOLANA,
        fee_kind="pool_lp_fee",
        amount_fee_kind="pool_lp_fee",
        gas_actions=("orca_whirlpool_swap",),
        action_kind="solana_orca_whirlpool_swap",
        signed_action_kind="solana_swap",
        risks=(_SWAP_RISK, _TICK_ARRAY_RISK, _NO_DEADLINE_RISK),
        solana_source_rent="caller_output_token_account_if_new",
    ),
    Provider.CIRCLE_CCTP: ProviderSpec(
        Provider.CIRCLE_CCTP,
        Action.BRIDGE,
        _EVM | _SOLANA,
        fee_kind="cctp_fast_transfer_fee",
        amount_fee_kind="cctp_fast_transfer_fee",
        gas_actions=("erc20_approve", "cctp_deposit_for_burn"),
        action_kind="cctp_burn",
        signed_action_kind="cctp_burn",
        risks=(
            "attestation_and_destination_mint_are_separate_caller_actions",
            "fast_transfer_fee_bounded_by_max_fee",
        ),
        eta_source="https://developers.circle.com/cctp/required-block-confirmations",
        destination_action="cctp_receive_message",
        solana_destination_risks=("solana_recipient_usdc_token_account_must_exist_before_the_mint",),
        solana_source_rent="cctp_message_sent_event_account",
        evm_contract="token_messenger_v2",
        evm_role="token_messenger_v2",
        bounded_provider_fee=True,
    ),
    Provider.ACROSS: ProviderSpec(
        Provider.ACROSS,
        Action.BRIDGE,
        _EVM,
        fee_kind="across_relayer_and_lp_fee",
        amount_fee_kind="across_relayer_and_lp_fee",
        gas_actions=("erc20_approve", "across_deposit"),
        action_kind="evm_across_deposit",
        signed_action_kind="across_deposit",
        risks=(
            "external_intent_relayer_fill_not_guaranteed",
            "unfilled_deposit_refunds_on_origin_after_fill_deadline",
        ),
        eta_source="https://docs.across.to",
        evm_contract="across_spoke_pool",
        evm_role="spoke_pool",
        fill_deadline=True,
    ),
    Provider.PAXOS_OFT: ProviderSpec(
        Provider.PAXOS_OFT,
        Action.BRIDGE,
        _EVM,
        fee_kind="layerzero_native_messaging_fee",
        amount_fee_kind="oft_amount_fee",
        gas_actions=("erc20_approve", "oft_send"),
        action_kind="evm_layerzero_oft_send",
        signed_action_kind="oft_send",
        risks=(
            "layerzero_delivery_time_not_modelled",
            "oft_enforced_options_of_the_oapp_apply_extra_options_empty",
            "native_fee_above_actual_is_refunded_to_caller",
        ),
        eta_source="https://docs.layerzero.network",
        evm_contract="usdg_oft",
        evm_role="usdg_oft",
        native_messaging_fee=True,
    ),
}


def spec(provider: Provider) -> ProviderSpec:
    return PROVIDERS[provider]
