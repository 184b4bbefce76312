"""A Solana swap that is a later step of a route (after a bridge) is built from the embedded snapshot exactly as
a first step is (the session engine calls `solana_pool_tick(route, step)` then `build_step`), labelled
`pool_state_source: snapshot`, and the bundle verifies as that session step."""

from __future__ import annotations

import pytest
from tests.unit.actions.support import EVENT_SIGNER, FEE_RECIPIENTS, make_env, wallets_for

from routequote.core.intent import parse_quote_request
from routequote.core.routes import ROUTES, Provider
from routequote.verify import verify_bundle

LATER_SWAPS = sorted(
    (key, s.index)
    for key, r in ROUTES.items()
    for s in r.steps
    if s.index > 0 and s.provider in (Provider.ORCA_WHIRLPOOL, Provider.RAYDIUM_CLMM)
)


def test_there_are_later_solana_swap_steps() -> None:
    assert len(LATER_SWAPS) >= 20


@pytest.mark.parametrize(("route_key", "index"), LATER_SWAPS)
async def test_later_solana_swap_step_builds_from_the_snapshot_and_verifies(
    route_key: str, index: int
) -> None:
    env = make_env()
    route = ROUTES[route_key]
    src, dst = route_key.split("->")
    intent = {
        "from_chain": src.split(":")[0],
        "from_token": src.split(":")[1],
        "to_chain": dst.split(":")[0],
        "to_token": dst.split(":")[1],
        "amount_usd": 250,
    }
    issued = await env.service.quote(parse_quote_request(intent))
    ps = issued.body.pricing.steps[index]
    step = route.steps[index]
    wallets = wallets_for(route_key)
    signer = EVENT_SIGNER if route.event_signer_required else None
    pool_tick, read = await env.prepare.solana_pool_tick(route, step)
    bundle = env.prepare.build_step(
        route,
        ps,
        minimum_output_base=ps.minimum_output_base,
        wallets=wallets,
        signer=signer,
        pool_fee_pips=None,
        pool_tick=pool_tick,
        raydium_live=read,
        binding=env.prepare.quote_binding(issued.payload, None),
        summary_steps=issued.payload["direct_route_summary"]["steps"],
        workflow_id="wf-later",
        quote_expiry_unix=None,
        market=issued.payload["market"],
    )
    action = bundle["unsigned_action"]
    assert action["step_index"] == index and action["pool_state_source"] == "snapshot"
    bounds = action["safety_receipt"]["bounds"]
    assert bounds["basis"] == "modelled" and f"solana_tick_arrays:{step.pool_id}" in bounds["modelled_parts"]
    errors = [
        f
        for f in verify_bundle(
            bundle,
            intent=intent,
            wallets=wallets,
            now_unix=int(env.clock.now().timestamp()),
            direct_route_summary=issued.payload["direct_route_summary"],
            fee_recipients=FEE_RECIPIENTS,
            event_signer_public=signer,
            session_actual_input_base=ps.expected_input_base,
            accept_modelled_bounds=True,  # the embedded market
        )
        if f.severity == "error"
    ]
    assert errors == [], errors
