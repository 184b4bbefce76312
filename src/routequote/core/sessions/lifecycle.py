"""Where a session can come to rest, named once: the table docs/sessions.md reproduces (pure, no I/O).

A session at rest is in one of these outcomes. Two questions are answered for each, apart, as Across answers
`isTerminal` and `finalized` apart:

- `terminal`: no event can follow. A resting outcome that is not terminal (`reapproval_required`) moves only
  when the caller acts (cancel); the service never moves it by itself.
- `final_on_chain`: the chain facts the outcome rests on are final (read at the configured confirmation depth)
  and nothing the outcome implies is still to happen on chain. A cancel is no chain fact; an Across refund is
  still to be paid out in a later settlement bundle.

An event stream ends after an event that reaches any outcome here: terminal, or resting until the caller acts
(a cancel after `reapproval_required` is a new event, replayed by the next stream, which then ends).
"""

from __future__ import annotations

from dataclasses import dataclass

from routequote.core.sessions.machine import Status


@dataclass(frozen=True, slots=True)
class Outcome:
    name: str
    status: Status
    terminal: bool
    final_on_chain: bool
    meaning: str
    lifi: str  # the LI.FI status (and substatus) an integrator knows as the same thing
    across: str  # the Across transfer state (legacy deposit status) that corresponds


COMPLETE = Outcome(
    "complete",
    Status.COMPLETE,
    terminal=True,
    final_on_chain=True,
    meaning="the last step's actual output was verified final on the destination chain, in the caller's wallet",
    lifi="DONE / COMPLETED",
    across="filled (v1 state completed; isTerminal true, finalized true)",
)
CANCELLED = Outcome(
    "cancelled",
    Status.CANCELLED,
    terminal=True,
    final_on_chain=False,
    meaning="the caller stopped the session; the session follows nothing further. A transaction named before "
    "may still land and a bridge message in flight still arrives: `funds` says where the value was last seen",
    lifi="no equivalent (LI.FI has no cancel; the transfer's own status keeps moving)",
    across="no equivalent (an Across deposit cannot be cancelled; it fills or expires)",
)
FAILED = Outcome(
    "failed",
    Status.FAILED,
    terminal=True,
    final_on_chain=True,
    meaning="the bridge can never deliver the message, shown final on chain (no step kind of this build "
    "decides it except the Across expiry, `refund_on_origin`). A reverted transaction is not a failure of the "
    "session: observe refuses it (observation_reverted) and the session stays where it was",
    lifi="FAILED",
    across="no equivalent (an unfilled deposit expires and is refunded: see refund_on_origin)",
)
REFUND_ON_ORIGIN = Outcome(
    "refund_on_origin",
    Status.FAILED,
    terminal=True,
    final_on_chain=False,
    meaning="an Across deposit stayed unfilled past its fill deadline: Across refunds the input on the origin "
    "chain to the depositor in a later settlement bundle (`funds.state` refund_expected)",
    lifi="PENDING / REFUND_IN_PROGRESS until paid out, then DONE / REFUNDED",
    across="expired (terminal; the refund not yet paid), then refunded once a settlement bundle pays it",
)
REAPPROVAL_REQUIRED = Outcome(
    "reapproval_required",
    Status.REAPPROVAL_REQUIRED,
    terminal=False,
    final_on_chain=True,
    meaning="a fresh quote from the verified output fell below the approved bounds: nothing was built, the funds "
    "rest verified in the caller's wallet at `funds`; resume by quoting `quote_from_here` and approving anew "
    "(a new session); only a cancel moves this one",
    lifi="DONE / PARTIAL (the transfer stopped holding another token than asked, in the wallet)",
    across="no equivalent (one Across deposit is one step; a route of several steps stops between them)",
)

OUTCOMES: tuple[Outcome, ...] = (COMPLETE, CANCELLED, FAILED, REFUND_ON_ORIGIN, REAPPROVAL_REQUIRED)
REFUND_EXPECTED = "refund_expected"  # `funds.state` of an Across deposit refunded on origin


def outcome(status: str, funds_state: str | None) -> Outcome | None:
    """The outcome a session in `status` with `funds.state` rests in, or None while it is still moving."""
    if status == Status.FAILED and funds_state == REFUND_EXPECTED:
        return REFUND_ON_ORIGIN
    for entry in OUTCOMES:
        if entry.status == status and entry is not REFUND_ON_ORIGIN:
            return entry
    return None


def outcomes_table() -> str:
    """The table of outcomes as docs/sessions.md shows it (a unit test keeps the two equal)."""
    rows = [
        "| outcome | status | terminal | final on chain | meaning | LI.FI | Across |",
        "|---|---|---|---|---|---|---|",
    ]
    for o in OUTCOMES:
        yes = {True: "yes", False: "no"}
        rows.append(
            f"| `{o.name}` | `{o.status.value}` | {yes[o.terminal]} | {yes[o.final_on_chain]} | {o.meaning} "
            f"| {o.lifi} | {o.across} |"
        )
    return "\n".join(rows)


__all__ = ["OUTCOMES", "Outcome", "outcome", "outcomes_table"]
