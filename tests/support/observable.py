"""Settings under which every route is session-ready: an RPC URL for every chain and the USDG OFT program pinned.

Readiness counts a configured URL (reaching it is `routequote doctor`'s job), so these point at a closed loopback
port: a session can be created, and an observation that reaches a chain answers 503 `rpc_unavailable:<chain>`
(tests that observe put their fakes or local chains in place of the readers, or of these URLs)."""

from __future__ import annotations

CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens on a test machine
PINNED_OFT_PROGRAM = "LzoftProgram1111111111111111111111111111111"  # a valid key; no such program

OBSERVABLE: dict[str, str] = {
    "rpc_url_solana": f"{CLOSED}/solana",
    "rpc_url_base": f"{CLOSED}/base",
    "rpc_url_arbitrum": f"{CLOSED}/arbitrum",
    "rpc_url_robinhood": f"{CLOSED}/robinhood",
    "usdg_oft_solana_program": PINNED_OFT_PROGRAM,
}
# the same, as the environment of a `routequote serve` process
OBSERVABLE_ENV: dict[str, str] = {f"ROUTEQUOTE_{k.upper()}": v for k, v in OBSERVABLE.items()}
