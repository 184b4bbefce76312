"""What a wallet would be asked to sign, decoded: targets, functions and amounts in token units.

Works on a bundle that already passed the verifier (the client hands out no other); it explains, it does
not check. EVM calldata is decoded with the same ABI table the builder and the verifier use."""

from __future__ import annotations

from typing import Any

from routequote.client.units import token_amount
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, decode_call
from routequote.core.assets import ASSETS, CHAINS, Chain
from routequote.core.bounds import BASIS_LIVE, bounds_sentence, receipt_bounds
from routequote.core.preflight import preflight_lines

_SOLANA_PROGRAMS = {
    "11111111111111111111111111111111": "System Program",
    "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA": "SPL Token",
    "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb": "SPL Token-2022",
    "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL": "Associated Token Account",
    "ComputeBudget111111111111111111111111111111": "Compute Budget",
    "CCTPV2vPZJS2u2BBsUoscuikbYjnpFmbFsvVuJdgUMQe": "CCTP v2 TokenMessengerMinter",
    "CCTPV2Sm4AdWt5296sk4P66VBZ7bEhcARwFaaS9YPbeC": "CCTP v2 MessageTransmitter",
    "CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK": "Raydium CLMM",
    "whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc": "Orca Whirlpool",
    "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr": "Memo",
}


def _evm_labels(chain: Chain) -> tuple[dict[str, str], dict[str, str]]:
    """(address -> contract label, token address -> endpoint) on one EVM chain."""
    dep = DEFAULT_DEPLOYMENTS.get(chain)
    labels: dict[str, str] = {}
    tokens: dict[str, str] = {}
    for a in ASSETS.values():
        if a.chain is chain:
            addr = a.address or a.wrapped_address
            if addr:
                tokens[addr.lower()] = a.key
                labels[addr.lower()] = f"{'W' + a.token.value if a.is_native else a.token.value} token"
    if dep is not None:
        for name, addr in (
            ("Uniswap SwapRouter02", dep.swap_router02),
            ("CCTP TokenMessengerV2", dep.token_messenger_v2),
            ("Across SpokePool", dep.across_spoke_pool),
            ("USDG OFT", dep.usdg_oft),
            ("CCTP MessageTransmitterV2", dep.message_transmitter_v2),
        ):
            if addr:
                labels[addr.lower()] = name
    return labels, tokens


def _addr(x: Any) -> str:
    if isinstance(x, bytes):
        x = "0x" + x[-20:].hex()
    return str(x)


def _call_lines(call: Any, chain: Chain, to: str, indent: str) -> list[str]:
    labels, tokens = _evm_labels(chain)

    def tok(addr: Any, amount: int) -> str:
        endpoint = tokens.get(_addr(addr).lower())
        return token_amount(amount, endpoint) if endpoint else f"{amount} base units of {_addr(addr)}"

    def who(addr: Any) -> str:
        a = _addr(addr)
        return f"{labels[a.lower()]} {a}" if a.lower() in labels else a

    n, a = call.name, call.args
    if n == "approve":
        return [f"{indent}approve({who(a[0])}, {tok(to, a[1])})  exact allowance"]
    if n == "transfer":
        return [f"{indent}transfer({who(a[0])}, {tok(to, a[1])})"]
    if n == "multicall":
        out = [f"{indent}multicall(deadline {a[0]}) with {len(a[1])} call(s):"]
        for inner in a[1]:
            sub = decode_call(inner)
            out += _call_lines(sub, chain, to, indent + "  ") if sub else [f"{indent}  (empty call)"]
        return out
    if n == "exactInputSingle":
        p = a[0]
        return [
            f"{indent}exactInputSingle: swap {tok(p[0], p[4])} for at least {tok(p[1], p[5])}",
            f"{indent}  pool fee {p[2]} pips, recipient {who(p[3])}",
        ]
    if n == "unwrapWETH9":
        return [f"{indent}unwrapWETH9: at least {token_amount(a[0], f'{chain.value}:ETH')} to {who(a[1])}"]
    if n == "depositForBurn":
        return [
            f"{indent}depositForBurn: burn {tok(a[3], a[0])} to CCTP domain {a[1]}, mint recipient "
            f"0x{a[2][-20:].hex()}",
            f"{indent}  max fee {tok(a[3], a[5])}, min finality {a[6]}",
        ]
    if n == "deposit":
        return [
            f"{indent}Across deposit: {tok(a[2], a[4])} in, {a[5]} base units out on chain id {a[6]} to "
            f"{_addr(a[1])}",
            f"{indent}  fill deadline {a[9]}",
        ]
    if n == "send":
        p = a[0]
        return [
            f"{indent}OFT send: {tok(to, p[2])} (at least {tok(to, p[3])} delivered) to endpoint id {p[0]}, "
            f"recipient 0x{p[1].hex()}",
            f"{indent}  LayerZero native fee {a[1][0]} wei",
        ]
    if n == "receiveMessage":
        return [
            f"{indent}receiveMessage: CCTP message of {len(a[0])} bytes with its attestation (mints on arrival)"
        ]
    return [f"{indent}{n}{tuple(a)}"]


def bounds_line(bundle: Any) -> str:
    """Where the action's bounds came from, in words, before anyone signs."""
    bounds = receipt_bounds(bundle)
    if bounds is None:
        return "bounds: none priced from a market (a CCTP mint of the attested amount)"
    if bounds.get("basis") == BASIS_LIVE:
        return f"bounds: {bounds_sentence(bounds)}"
    return f"WARNING: {bounds_sentence(bounds)}; accepted as modelled: sign it only on a test or local chain"


def describe_action(action: Any) -> list[str]:
    """Lines describing every transaction or instruction of a prepared action, in signing order."""
    bundle = getattr(action, "raw", None) or action
    ua = bundle["unsigned_action"]
    src, dst = ua["source"], ua["destination"]
    lines = [
        f"step {bundle['step_index']} of {bundle['route']}: {ua['provider']} {src} -> {dst}, "
        f"expires {bundle['expires_at']}"
    ]
    lines.append(
        f"spend {token_amount(ua['inputAmount'], src)}"
        + (
            f" (service fee {token_amount(ua['routeFee'], src)} to {ua.get('feeRecipient')})"
            if int(ua.get("routeFee") or 0)
            else ""
        )
    )
    if ua.get("expectedOutput") is not None:
        lines.append(
            f"receive about {token_amount(ua['expectedOutput'], dst)}, at least "
            f"{token_amount(ua['minimumOutput'], dst)}, to {ua.get('recipient')}"
        )
    lines.append(bounds_line(bundle))
    if ua.get("family") == "evm":
        chain = Chain(ua["chain"])
        labels, _ = _evm_labels(chain)
        native = f"{chain.value}:ETH"
        for i, tx in enumerate(ua["transactions"]):
            to = tx["to"]
            fee_to = str(ua.get("feeRecipient") or "").lower()
            label = "service fee recipient" if to.lower() == fee_to else labels.get(to.lower(), "contract")
            lines.append(
                f"tx {i + 1}/{len(ua['transactions'])} on {chain.value} (chain id {CHAINS[chain].chain_id}) "
                f"from {tx['from']}"
            )
            lines.append(f"  to {label} {to}, value {token_amount(int(tx['value']), native)}")
            data = bytes.fromhex(tx["data"][2:]) if tx.get("data", "0x") != "0x" else b""
            call = decode_call(data)
            lines += _call_lines(call, chain, to, "  ") if call else ["  (plain value transfer)"]
    else:
        ixs = ua.get("instructions", [])
        lines.append(f"one Solana transaction, fee payer {ua.get('feePayer')}, {len(ixs)} instruction(s):")
        for i, ix in enumerate(ixs):
            prog = ix["programId"]
            signers = sorted({k["pubkey"] for k in ix.get("keys", []) if k.get("isSigner")})
            lines.append(
                f"  {i + 1}. {_SOLANA_PROGRAMS.get(prog, 'program')} {prog}: {len(ix.get('keys', []))} "
                f"accounts; signers {', '.join(signers) or 'none'}"
            )
    lines.append(
        f"payload_sha256 {bundle['payload_sha256']} (checked by routequote.verify before it was shown)"
    )
    return lines


def describe_preflight(answer: Any) -> list[str]:
    """Lines of the `preflight` block of a prepared action or session answer (a model or its raw JSON): what each
    chain of the route will need from the caller, to read before signing. Advice: the server refuses nothing."""
    preflight = getattr(answer, "preflight", None)
    if preflight is None and isinstance(answer, dict):
        preflight = answer.get("preflight", answer if "advice_only" in answer else None)
    return preflight_lines(preflight)


def describe_quote(quote: Any) -> list[dict[str, str]]:
    """Per step: provider, endpoints and amounts in token units (exact, from the summary's base units)."""
    raw = getattr(quote, "raw", None) or quote
    out = []
    for s in raw["direct_route_summary"]["steps"]:
        out.append(
            {
                "index": str(s["index"]),
                "provider": s["provider"],
                "from": s["from"],
                "to": s["to"],
                "expected_input": token_amount(s["expected_input_base"], s["from"]),
                "expected_output": token_amount(s["expected_output_base"], s["to"]),
                "minimum_output": token_amount(s["minimum_output_base"], s["to"]),
                "fee": f"{s['service_fee_bps']} bp" if s["service_fee_bps"] else "",
            }
        )
    return out
