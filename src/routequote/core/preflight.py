"""Preflight: what a route will need from the caller on each chain before they sign (pure part).

Advice only: a preflight never refuses, and it sits outside every hashed payload and safety receipt. The edge
(`routequote.preflight`) reads balances, fees and accounts through the chain ports and hands them here.

Gas: the first action is estimated (`eth_estimateGas` of its first transaction); every later step the caller
signs uses the per-action-kind budget below times the chain's current fee, and says it is an estimate.
Solana: each token account the route creates costs `SOLANA_TOKEN_ACCOUNT_RENT_LAMPORTS` (a 165-byte SPL account);
the first action's fee is the node's `getFeeForMessage` of its message, and every later Solana action takes
`SOLANA_ACTION_FEE_BUDGET_LAMPORTS` (base fee plus a modest priority fee: an estimate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from routequote.core.assets import ASSETS, Asset, Chain
from routequote.core.providers import PROVIDERS
from routequote.core.routes import Route

SOLANA_TOKEN_ACCOUNT_RENT_LAMPORTS = 2_039_280
SOLANA_ACTION_FEE_BUDGET_LAMPORTS = 100_000
# gas units per EVM action kind the caller signs (documented budgets for steps after the first: an estimate)
EVM_GAS_BUDGET = {
    "erc20_approve": 60_000,
    "uniswap_v3_swap": 250_000,
    "cctp_burn": 200_000,
    "cctp_receive_message": 250_000,
    "across_deposit": 200_000,
    "oft_send": 300_000,
}
# seconds a caller typically needs to review and sign the first transaction of an action, then each further one
FIRST_SIGNATURE_SECONDS = 15
FURTHER_TRANSACTION_SECONDS = 5

CODE_INPUT_BALANCE = "input_balance"
CODE_INPUT_ALLOWANCE = "input_allowance"
CODE_GAS = "gas"
CODE_SOLANA_RENT = "solana_rent_and_fees"
CODE_TIME = "time_left"
CODE_UNKNOWN = "unknown"

NATIVE_SYMBOL = {Chain.BASE: "ETH", Chain.ARBITRUM: "ETH", Chain.ROBINHOOD: "ETH", Chain.SOLANA: "SOL"}


@dataclass(frozen=True)
class SignedAction:
    """One action the caller signs: the step it belongs to, the chain it runs on and its kind."""

    step_index: int
    chain: Chain
    kind: str


def signed_actions(route: Route) -> list[SignedAction]:
    """Every action the caller signs along the route: each step on its source chain, plus the CCTP mint on the
    destination (`receiveMessage`, which the caller submits). Across fills and OFT deliveries are relayed."""
    out: list[SignedAction] = []
    for step in route.steps:
        chain = step.source.chain
        spec = PROVIDERS[step.provider]
        out.append(SignedAction(step.index, chain, spec.signed_action_kind))
        if spec.destination_action:
            out.append(SignedAction(step.index, step.target.chain, spec.destination_action))
    return out


def created_token_accounts(route: Route) -> list[tuple[int, Asset]]:
    """(step index, asset) of each Solana token account a step of the route creates if missing (once per asset,
    at its first step): the wrapped-SOL account a SOL input is wrapped in, the caller's output account of a
    Solana swap (USDC, USDG or wrapped SOL) and the CCTP or OFT recipient account on Solana."""
    out: list[tuple[int, Asset]] = []
    sol = ASSETS["solana:SOL"]
    for step in route.steps:
        wanted = []
        if step.source.chain is Chain.SOLANA and step.source.is_native:
            wanted.append(sol)  # wrapped before the swap
        if step.target.chain is Chain.SOLANA:
            wanted.append(sol if step.target.is_native else step.target)  # a SOL output passes through wSOL
        out += [(step.index, a) for a in wanted if all(a.key != seen.key for _, seen in out)]
    return out


def finding(
    code: str,
    chain: Chain | None,
    step_index: int | None,
    needed: int | None,
    has: int | None,
    message: str,
    *,
    blocking: bool,
    estimate: bool = False,
) -> dict[str, Any]:
    return {
        "code": code,
        "chain": chain.value if chain else None,
        "step_index": step_index,
        "needed": None if needed is None else str(needed),
        "has": None if has is None else str(has),
        "blocking": blocking,
        "estimate": estimate,
        "message": message,
    }


def amount_text(amount: int, chain: Chain) -> str:
    """A native amount for a message: whole units with up to 6 decimals (text only, never priced)."""
    decimals = 9 if chain is Chain.SOLANA else 18
    whole, frac = divmod(amount, 10**decimals)
    digits = str(frac).rjust(decimals, "0")[:6].rstrip("0")
    return f"{whole}.{digits}" if digits else str(whole)


def steps_text(indices: list[int]) -> str:
    shown = sorted({i + 1 for i in indices})
    if len(shown) == 1:
        return f"step {shown[0]}"
    if shown == list(range(shown[0], shown[-1] + 1)):
        return f"steps {shown[0]}-{shown[-1]}"
    return "steps " + ", ".join(str(s) for s in shown)


def block(checked: bool, findings: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """The `preflight` member: ok is false when any finding blocks (advice: nothing is refused)."""
    return {
        "checked": checked,
        "ok": not any(f["blocking"] for f in findings),
        "advice_only": True,
        "findings": findings,
        **extra,
    }


def not_checked(reason: str) -> dict[str, Any]:
    return {"checked": False, "ok": None, "advice_only": True, "reason": reason, "findings": []}


def preflight_summary(preflight: Any) -> dict[str, Any] | None:
    """What an agent or a person should read before signing: `ok`, the messages of the blocking findings, what
    could not be read, and one sentence (guidance of the A2A and MCP v2 answers). None without a block."""
    if not isinstance(preflight, dict):
        return None
    if not preflight.get("checked"):
        reason = str(preflight.get("reason") or "")
        return {
            "checked": False,
            "ok": None,
            "advice_only": True,
            "blocking": [],
            "unread": [],
            "summary": f"preflight not checked: {reason}",
        }
    findings = [f for f in preflight.get("findings") or [] if isinstance(f, dict)]
    blocking = [str(f.get("message")) for f in findings if f.get("blocking")]
    unread = [str(f.get("message")) for f in findings if f.get("code") == CODE_UNKNOWN]
    if blocking:
        summary = (
            f"preflight: {len(blocking)} finding(s) would stop this route before it completes: "
            + "; ".join(blocking)
        )
    elif unread:
        summary = (
            f"preflight: nothing that was read blocks this route, but {len(unread)} read(s) failed, so it is not "
            "confirmed: " + "; ".join(unread)
        )
    else:
        summary = "preflight ok: the wallets cover this route's input, gas, rent and time"
    return {
        "checked": True,
        "ok": not blocking,
        "advice_only": True,
        "blocking": blocking,
        "unread": unread,
        "summary": summary + " (advice: nothing is refused)",
    }


def preflight_lines(preflight: Any) -> list[str]:
    """The block as lines for a terminal: a headline, then one line per finding (BLOCKS / ok / unread)."""
    summary = preflight_summary(preflight)
    if summary is None:
        return []
    lines = [summary["summary"]]
    for f in preflight.get("findings") or []:
        mark = "BLOCKS" if f.get("blocking") else ("unread" if f.get("code") == CODE_UNKNOWN else "ok")
        where = (
            f"{f.get('chain')}, step {int(f['step_index']) + 1}" if f.get("step_index") is not None else ""
        )
        amounts = f" [needed {f['needed']}, has {f['has']}]" if f.get("needed") is not None else ""
        estimate = " (estimate)" if f.get("estimate") else ""
        lines.append(f"  {mark:6} {f.get('code')} ({where}): {f.get('message')}{amounts}{estimate}")
    return lines


def before_signing(route: Route) -> dict[str, Any]:
    """What any wallet will need along the route, before its own balances are known (the route document and the
    explorer): the chains the caller signs on, with the steps, and the Solana token accounts the route creates
    (each costs its rent if it does not exist yet). A wallet's own balances are what `preflight` checks."""
    per_chain: dict[Chain, list[SignedAction]] = {}
    for signed in signed_actions(route):
        per_chain.setdefault(signed.chain, []).append(signed)
    accounts = created_token_accounts(route)
    return {
        "sign_on": [
            {
                "chain": chain.value,
                "native": NATIVE_SYMBOL[chain],
                "steps": sorted({a.step_index + 1 for a in acts}),
                "actions": [a.kind for a in acts],
                "text": f"you sign {len(acts)} action(s) on {chain.value} ({steps_text([a.step_index for a in acts])}): "
                f"hold {NATIVE_SYMBOL[chain]} on {chain.value} for their fees"
                + (" and the rent of the token accounts below" if chain is Chain.SOLANA and accounts else ""),
            }
            for chain, acts in per_chain.items()
        ],
        "solana_token_accounts": [
            {
                "step": i + 1,
                "token": "wSOL" if asset.is_native else asset.token.value,
                "rent_lamports_if_missing": SOLANA_TOKEN_ACCOUNT_RENT_LAMPORTS,
            }
            for i, asset in accounts
        ],
        "checked_per_wallet_by": "the preflight block of POST /v2/prepare and of every session answer with an action",
    }
