"""The A2A session-lifecycle tests' shared parts (tests/integration/test_a2a_sessions*.py): the served app and its
SQLite rows, and the caller's own checks of a returned action. Their fixtures are in tests/integration/conftest.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from routequote.clock import FixedClock
from routequote.surfaces.a2a_agent import verify_handoff
from routequote.verify import verify_bundle
from tests.support.a2a import Caller

ONE_STEP = "base:ETH->base:USDC"
MULTI = "base:ETH->arbitrum:USDC"
OTHER_EVM = "0x4444444444444444444444444444444444444444"


class Served:
    def __init__(self, url: str, app: Any, clock: FixedClock, db: Path) -> None:
        self.url, self.app, self.clock, self.db = url, app, clock, db

    def rows(self) -> tuple[list[tuple[Any, ...]], int, int]:
        """Every session (id, version, status), and the event and idempotency record counts."""
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as con:
            sessions = sorted(con.execute("select session_id, version, status from sessions").fetchall())
            events = con.execute("select count(*) from session_events").fetchone()[0]
            keys = con.execute("select count(*) from session_idempotency").fetchone()[0]
        return sessions, events, keys


def check_action(
    reply: dict[str, Any], caller: Caller, now: int, field: str = "current_action"
) -> dict[str, Any]:
    """The caller's own checks: the verifier on the bundle, the handoff's hash and binding."""
    bundle = reply["session"][field]
    findings = verify_bundle(
        bundle,
        intent=caller.intent,
        wallets=caller.wallets,
        now_unix=now,
        approval_v3=caller.approval,
        direct_route_summary=caller.q["direct_route_summary"],
        accept_modelled_bounds=True,  # the embedded market
    )
    assert [f for f in findings if f.severity == "error"] == []
    assert reply["action_verification"]["verified"] is True
    # the bounds are modelled and accepted as such: the handoff and the verification say so in words
    assert reply["action_verification"]["bounds"]["accepted_as_modelled"] is True
    assert reply["caller_wallet_handoff"]["bounds"]["modelled_not_live"] is True
    assert reply["action_verification"]["verifier"] == "routequote.verify.verify_bundle"
    handoff = reply["caller_wallet_handoff"]
    assert verify_handoff(handoff, bundle) == []
    assert handoff["bundle_payload_sha256"] == bundle["payload_sha256"]
    assert handoff["automatic_invocation_forbidden"] is True and handoff["adapter_chains_actions"] is False
    assert "handoff_sha256_mismatch" in verify_handoff({**handoff, "step_index": 7}, bundle)
    g = reply["guidance"]
    assert g["adapter_chains_actions"] is False and g["transaction_signed"] is False
    assert g["transaction_submitted"] is False and g["action_available"] is True
    # the session's preflight, summarised next to the handoff (advice: it never withholds the action)
    unread = [f["message"] for f in reply["session"]["preflight"]["findings"] if f["code"] == "unknown"]
    assert g["preflight"]["unread"] == unread and g["preflight"]["advice_only"] is True
    assert caller.token not in str(reply)
    return handoff


def now(s: Served) -> int:
    return int(s.clock.now().timestamp())
