"""The pure part of preflight (core/preflight.py): which actions the caller signs along a route, which Solana
token accounts it pays into, the block's `ok`, and the message helpers. Expected values written out by hand."""

from __future__ import annotations

from routequote.core.assets import Chain
from routequote.core.preflight import (
    amount_text,
    block,
    created_token_accounts,
    finding,
    not_checked,
    preflight_lines,
    preflight_summary,
    signed_actions,
    steps_text,
)
from routequote.core.routes import ROUTES


def test_signed_actions_name_every_chain_the_caller_signs_on() -> None:
    got = [(a.step_index, a.chain, a.kind) for a in signed_actions(ROUTES["solana:SOL->base:ETH"])]
    assert got == [
        (0, Chain.SOLANA, "solana_swap"),
        (1, Chain.SOLANA, "cctp_burn"),
        (1, Chain.BASE, "cctp_receive_message"),  # the caller submits the mint
        (2, Chain.BASE, "uniswap_v3_swap"),
    ]
    oft = [(a.step_index, a.chain, a.kind) for a in signed_actions(ROUTES["robinhood:ETH->arbitrum:ETH"])]
    assert (1, Chain.ROBINHOOD, "oft_send") in oft
    assert all(a[1] is not Chain.SOLANA or a[0] != 1 for a in oft)  # the OFT delivery is relayed


def test_created_token_accounts_are_the_solana_targets() -> None:
    got = [(i, a.key) for i, a in created_token_accounts(ROUTES["robinhood:ETH->arbitrum:ETH"])]
    assert got == [(1, "solana:USDG"), (2, "solana:USDC")]
    assert [(i, a.key) for i, a in created_token_accounts(ROUTES["base:USDC->solana:SOL"])][-1] == (
        1,
        "solana:SOL",
    )
    assert created_token_accounts(ROUTES["base:USDC->base:ETH"]) == []
    # a SOL input is wrapped in the wallet's wSOL account before the swap: one account per asset
    got = [(i, a.key) for i, a in created_token_accounts(ROUTES["solana:SOL->base:ETH"])]
    assert got == [(0, "solana:SOL"), (0, "solana:USDC")]
    got = [(i, a.key) for i, a in created_token_accounts(ROUTES["solana:USDC->solana:SOL"])]
    assert got == [(0, "solana:SOL")]


def test_ok_is_false_exactly_when_a_finding_blocks() -> None:
    advice = finding("gas", Chain.BASE, 0, 10, 20, "fine", blocking=False)
    short = finding("gas", Chain.BASE, 1, 10**15, 0, "short", blocking=True, estimate=True)
    assert short["needed"] == "1000000000000000" and short["has"] == "0" and short["chain"] == "base"
    assert block(True, [advice])["ok"] is True
    assert block(True, [advice, short])["ok"] is False
    assert not_checked("why") == {
        "checked": False,
        "ok": None,
        "advice_only": True,
        "reason": "why",
        "findings": [],
    }


def test_message_helpers() -> None:
    assert (
        steps_text([1, 2]) == "steps 2-3"
        and steps_text([0]) == "step 1"
        and steps_text([0, 2]) == "steps 1, 3"
    )
    assert amount_text(10**15, Chain.BASE) == "0.001" and amount_text(0, Chain.BASE) == "0"
    assert amount_text(2_039_280, Chain.SOLANA) == "0.002039"


def test_the_summary_an_agent_reads_before_signing() -> None:
    short = finding(
        "gas",
        Chain.BASE,
        1,
        10**15,
        0,
        "you need about 0.001 ETH on base for steps 2-3; you have 0",
        blocking=True,
        estimate=True,
    )
    unread = finding("unknown", Chain.SOLANA, 0, None, None, "could not read x", blocking=False)
    fine = finding("time_left", Chain.SOLANA, 0, 15, 60, "60 s left", blocking=False)
    blocked = preflight_summary(block(True, [short, unread, fine]))
    assert blocked == {
        "checked": True,
        "ok": False,
        "advice_only": True,
        "blocking": ["you need about 0.001 ETH on base for steps 2-3; you have 0"],
        "unread": ["could not read x"],
        "summary": "preflight: 1 finding(s) would stop this route before it completes: you need about 0.001 ETH "
        "on base for steps 2-3; you have 0 (advice: nothing is refused)",
    }
    assert preflight_summary(block(True, [fine, unread]))["summary"] == (  # type: ignore[index]
        "preflight: nothing that was read blocks this route, but 1 read(s) failed, so it is not confirmed: "
        "could not read x (advice: nothing is refused)"
    )
    assert preflight_summary(block(True, [fine]))["ok"] is True  # type: ignore[index]
    assert preflight_summary(not_checked("no_chain_access: why"))["summary"] == (  # type: ignore[index]
        "preflight not checked: no_chain_access: why"
    )
    assert preflight_summary(None) is None and preflight_lines(None) == []
    lines = preflight_lines(block(True, [short, unread, fine]))
    assert lines[1:] == [
        "  BLOCKS gas (base, step 2): you need about 0.001 ETH on base for steps 2-3; you have 0 "
        "[needed 1000000000000000, has 0] (estimate)",
        "  unread unknown (solana, step 1): could not read x",
        "  ok     time_left (solana, step 1): 60 s left [needed 15, has 60]",
    ]
