"""The input of an action builder: one route step with its exact amounts, parties and times."""

from __future__ import annotations

from dataclasses import dataclass

from routequote.core.actions.solana_swaps import RaydiumLiveAccounts
from routequote.core.routes import Route, Step

BUNDLE_TTL_SECONDS = 180
ONCHAIN_DEADLINE_SECONDS = 240
MAX_DEADLINE_WINDOW_SECONDS = 300  # a verifier refuses any deadline later than now + this
ACROSS_FILL_DEADLINE_SECONDS = 900  # unfilled Across deposits refund on origin after this
MAX_ACROSS_FILL_DEADLINE_SECONDS = 3600
CCTP_FAST_FINALITY = 1000


@dataclass(frozen=True, slots=True)
class StepPlan:
    """Everything a builder needs for one step, all decided before building.

    `input_base` is what the caller's wallet spends on this step (fee included); `fee_base` is the 1 bp
    service fee, floor(input_base / 10000) on the fee step and 0 elsewhere; the venue/bridge receives
    `input_base - fee_base`. `minimum_output_base` is the least the step may deliver (the caller's
    stricter approval bound already applied). `max_provider_fee_base` bounds the CCTP fee (maxFee);
    `native_fee_wei` is the LayerZero messaging fee sent as value (refunded above the actual fee).
    """

    route: Route
    step: Step
    input_base: int
    fee_base: int
    minimum_output_base: int
    expected_output_base: int
    max_provider_fee_base: int
    native_fee_wei: int
    wallets: dict[str, str]
    fee_recipient: str
    event_signer_public: str | None
    prepared_at_unix: int
    deadline_unix: int
    fill_deadline_unix: int
    pool_fee_pips: int | None
    pool_tick_current: int | None = None  # Solana swaps: the pool's current tick (tick arrays follow it)
    # Raydium swaps: observation / bitmap extension / tick arrays from the same read of the pinned pool
    raydium_live: RaydiumLiveAccounts | None = None
    # Solana swaps: where that read came from ("live_chain_read" | "embedded_snapshot")
    pool_state_source: str | None = None

    @property
    def net_input_base(self) -> int:
        return self.input_base - self.fee_base

    @property
    def caller(self) -> str:
        return self.wallets[self.step.source.chain.value]

    @property
    def recipient(self) -> str:
        return self.wallets[self.step.target.chain.value]
