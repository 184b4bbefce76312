"""`routequote verify-action`: check an unsigned action bundle before signing it (offline).

What it says, and when: an error answer handed in place of a bundle is named as one, with its reason (not as
hash mismatches); a pinned fee recipient must be an address of its chain; a bundle whose bounds are modelled
from the embedded snapshot is refused unless `--accept-modelled-bounds`, and then the OK line says it was
accepted as modelled instead of "safe to hand to your wallet".
"""

from __future__ import annotations

import json
import time
from typing import Any

import typer

from routequote.core.bounds import ACCEPTED_CODE, BASIS_LIVE, bounds_sentence, receipt_bounds
from routequote.core.field_rules import EVM_ADDRESS_RE, SOLANA_ADDRESS_RE

MAX_ERROR_TEXT = 300


def error_answer(bundle: Any) -> str | None:
    """The reason an error answer (a REST ErrorResponse, or an agent error) was handed in place of a bundle."""
    if not isinstance(bundle, dict) or "unsigned_action" in bundle:
        return None
    error = bundle.get("error")
    if isinstance(error, dict):  # an agent-channel error object
        bundle, error = error, error.get("code") or error.get("error")
    if not isinstance(error, str):
        return None
    parts = [str(error)]
    reason = bundle.get("reason_class")
    if isinstance(reason, str) and reason != error:
        parts.append(f"reason_class {reason}")
    message = bundle.get("message")
    text = ", ".join(parts) + (f": {message}" if isinstance(message, str) else "")
    return text[:MAX_ERROR_TEXT]


def valid_solana_address(value: str) -> bool:
    if not SOLANA_ADDRESS_RE.fullmatch(value):
        return False
    from solders.pubkey import Pubkey

    try:
        return len(bytes(Pubkey.from_string(value))) == 32
    except ValueError:
        return False


def pinned_recipients(evm: str | None, solana: str | None) -> dict[str, str] | None:
    """The caller's pinned fee recipients, each checked for its chain's address syntax (exit 2 otherwise)."""
    if evm is not None and not EVM_ADDRESS_RE.fullmatch(evm):
        typer.echo("--fee-recipient-evm: not an EVM address (0x and 40 hex digits)", err=True)
        raise typer.Exit(2)
    if solana is not None and not valid_solana_address(solana):
        typer.echo("--fee-recipient-solana: not a Solana address (base58 of 32 bytes)", err=True)
        raise typer.Exit(2)
    if not evm and not solana:
        return None
    return {k: v for k, v in (("evm", evm), ("solana", solana)) if v}


def ok_line(bundle: dict[str, Any], findings: list[dict[str, str]]) -> str:
    """The one line printed when nothing refused the bundle: it says where the bounds came from."""
    head = f"OK {bundle.get('route')} step {bundle.get('step_index')}: payload_sha256 {bundle.get('payload_sha256')}"
    bounds = receipt_bounds(bundle)
    if any(f["code"] == ACCEPTED_CODE for f in findings):
        return (
            f"{head}; ACCEPTED AS MODELLED (--accept-modelled-bounds): {bounds_sentence(bounds or {})}. Its bounds were not priced "
            "from the live market: sign it only on a test or local chain"
        )
    if bounds is not None and bounds.get("basis") == BASIS_LIVE:
        return f"{head}; {bounds_sentence(bounds)}; safe to hand to your wallet for signing"
    return f"{head}; no market-priced bounds (the attested amount); safe to hand to your wallet for signing"


def run(
    bundle: Any,
    *,
    verify: dict[str, Any],
    problems: list[str],
    accept_unconfigured_fee_recipient: bool,
    accept_modelled_bounds: bool,
    json_out: bool,
) -> None:
    """Verify `bundle` with the keyword arguments `verify` (of `verify_bundle`), print and exit 1 on an error."""
    from routequote.fee_recipient_check import fee_recipient_findings
    from routequote.verify import verify_bundle

    answer = error_answer(bundle)
    if answer is not None:
        findings = [
            {
                "code": "error_answer_not_a_bundle",
                "message": f"this is an error answer from the server, not an action bundle: {answer}",
                "severity": "error",
            }
        ]
    else:
        findings = [
            f.as_dict()
            for f in verify_bundle(
                bundle,
                now_unix=verify.pop("now_unix", None) or int(time.time()),
                accept_modelled_bounds=accept_modelled_bounds,
                **verify,
            )
        ]
        findings += fee_recipient_findings(bundle, accept_unconfigured=accept_unconfigured_fee_recipient)
    findings += [{"code": p, "message": "verification context check", "severity": "error"} for p in problems]
    errors = [f for f in findings if f["severity"] == "error"]
    if json_out:
        typer.echo(json.dumps({"ok": not errors, "findings": findings}, indent=2))
    else:
        for f in findings:
            tag = "FAIL" if f["severity"] == "error" else "WARN"
            typer.echo(f"{tag} {f['code']}: {f['message']}", err=f["severity"] == "error")
        if not errors and isinstance(bundle, dict):
            typer.echo(ok_line(bundle, findings))
    if errors:
        raise typer.Exit(1)
