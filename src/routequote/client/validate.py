"""Response checks run on every answer before the client hands it out. Each returns a list of problems
(empty = nothing found wrong); the client raises ResponseInvalid / ActionVerificationFailed on any.

Quote hashes are recomputed here from the quote's own fields with routequote.core.hashing under the specs
the quote names (and the client implements): the summary hash, the typed-canonical payload hash and the
fingerprint over a claim rebuilt from the quote itself, not the claim the server sent."""

from __future__ import annotations

from typing import Any

from routequote.core.hashing import canonical_sha256, typed_canonical_sha256
from routequote.core.quote import (
    APPROVAL_VERSION,
    CONTINUATION_VERSION,
    FINGERPRINT_SPEC,
    PAYLOAD_HASH_SPEC,
    SUMMARY_HASH_SPEC,
    fingerprint_claim,
    substituted_payload,
)
from routequote.core.routes import ROUTES

CUSTODY_FLAGS = ("server_signing", "server_submission")


def custody_flag_problems(value: Any, path: str = "$") -> list[str]:
    """Every `server_signing` / `server_submission` anywhere in the tree must be exactly false."""
    out: list[str] = []
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, dict):
            for k, item in v.items():
                if k in CUSTODY_FLAGS and item is not False:
                    out.append(f"{where}.{k} is not false")
                stack.append((f"{where}.{k}", item))
        elif isinstance(v, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(v))
    return sorted(out)


def _int(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, str) and x.isdigit():
        return int(x)
    return None


def chaining_problems(steps: list[dict[str, Any]]) -> list[str]:
    """Summary step i's outputs are step i+1's inputs (expected and minimum), and each minimum <= expected."""
    out: list[str] = []
    for i, s in enumerate(steps):
        if s.get("index") != i:
            out.append(f"summary step {i} has index {s.get('index')}")
        ei, mi = _int(s.get("expected_input_base")), _int(s.get("minimum_input_base"))
        eo, mo = _int(s.get("expected_output_base")), _int(s.get("minimum_output_base"))
        if None in (ei, mi, eo, mo):
            out.append(f"summary step {i} amounts are not decimal strings")
            continue
        assert ei is not None and mi is not None and eo is not None and mo is not None
        if mi > ei or mo > eo:
            out.append(f"summary step {i}: a minimum exceeds its expected amount")
        if i + 1 < len(steps):
            nxt = steps[i + 1]
            if s.get("expected_output_base") != nxt.get("expected_input_base"):
                out.append(
                    f"summary step {i} expected output {eo} is not step {i + 1}'s expected input "
                    f"{nxt.get('expected_input_base')}"
                )
            if s.get("minimum_output_base") != nxt.get("minimum_input_base"):
                out.append(
                    f"summary step {i} minimum output {mo} is not step {i + 1}'s minimum input "
                    f"{nxt.get('minimum_input_base')}"
                )
            if s.get("to") != nxt.get("from"):
                out.append(
                    f"summary step {i} ends at {s.get('to')} but step {i + 1} starts at {nxt.get('from')}"
                )
    return out


def quote_problems(q: dict[str, Any], asked: dict[str, Any] | None = None) -> list[str]:
    """Everything wrong with a quote JSON (assumed to have passed the Quote model)."""
    out = custody_flag_problems(q)
    summary = q["direct_route_summary"]
    steps: list[dict[str, Any]] = summary["steps"]
    cont = q["continuation_v3"]
    route = ROUTES.get(q["route"]["route"])
    if route is None:
        return [*out, f"unknown route {q['route']['route']}"]
    if asked is not None:
        want_from = f"{asked['from_chain']}:{asked['from_token']}"
        want_to = f"{asked['to_chain']}:{asked['to_token']}"
        if (q["intent"]["from"], q["intent"]["to"]) != (want_from, want_to):
            out.append(
                f"quote is for {q['intent']['from']}->{q['intent']['to']}, asked {want_from}->{want_to}"
            )
        if q["intent"]["amount_usd"] != asked["amount_usd"]:
            out.append(
                f"quote amount_usd {q['intent']['amount_usd']} differs from the asked {asked['amount_usd']}"
            )
    if route.key != f"{q['intent']['from']}->{q['intent']['to']}" or summary["route"] != route.key:
        out.append("route, intent and summary name different routes")
    # --- the route's shape: providers and endpoints step by step
    if len(steps) != len(route.steps) or summary["step_count"] != len(route.steps):
        out.append(f"summary has {len(steps)} steps; route {route.key} has {len(route.steps)}")
    else:
        for s, rs in zip(steps, route.steps, strict=True):
            if (s["provider"], s["from"], s["to"]) != (rs.provider.value, rs.source.key, rs.target.key):
                out.append(
                    f"summary step {rs.index} is not {rs.provider.value} {rs.source.key}->{rs.target.key}"
                )
            want_fee = 1 if rs.fee_step else 0
            if s["service_fee_bps"] != want_fee:
                out.append(
                    f"summary step {rs.index} service_fee_bps {s['service_fee_bps']} (expected {want_fee})"
                )
    out += chaining_problems(steps)
    if out:
        return out
    first, last = steps[0], steps[-1]
    # --- raw amounts (outside the payload hash, which substitutes the summary's strings) equal the summary
    raw_steps = q["route"]["steps"]
    pairs = [
        ("intent.estimated_input_base", q["intent"]["estimated_input_base"], first["expected_input_base"]),
        (
            "estimated_input_base_decimal",
            q.get("estimated_input_base_decimal"),
            first["expected_input_base"],
        ),
        ("route.input_base", q["route"].get("input_base"), first["expected_input_base"]),
        ("route.expected_output_base", q["route"].get("expected_output_base"), last["expected_output_base"]),
        ("route.minimum_output_base", q["route"].get("minimum_output_base"), last["minimum_output_base"]),
        ("offer.expected_output_base", q["offer"].get("expected_output_base"), last["expected_output_base"]),
        ("offer.minimum_output_base", q["offer"].get("minimum_output_base"), last["minimum_output_base"]),
        (
            "continuation_v3.input_base_bounds.minimum",
            cont["input_base_bounds"].get("minimum"),
            first["expected_input_base"],
        ),
        (
            "continuation_v3.input_base_bounds.maximum",
            cont["input_base_bounds"].get("maximum"),
            first["expected_input_base"],
        ),
        ("continuation_v3.minimum_output_base", cont["minimum_output_base"], last["minimum_output_base"]),
    ]
    if len(raw_steps) != len(steps):
        out.append("route.steps and direct_route_summary.steps differ in length")
    else:
        for raw, s in zip(raw_steps, steps, strict=True):
            i = s["index"]
            pairs += [
                (
                    f"route.steps[{i}].expected_input_base",
                    raw.get("expected_input_base"),
                    s["expected_input_base"],
                ),
                (f"route.steps[{i}].floor_input_base", raw.get("floor_input_base"), s["minimum_input_base"]),
                (
                    f"route.steps[{i}].expected_output_base",
                    raw.get("expected_output_base"),
                    s["expected_output_base"],
                ),
                (
                    f"route.steps[{i}].minimum_output_base",
                    raw.get("minimum_output_base"),
                    s["minimum_output_base"],
                ),
            ]
    for name, got, want in pairs:
        if _int(got) is None or _int(got) != int(want):
            out.append(f"{name} = {got!r} differs from the summary's {want}")
        elif name != "intent.estimated_input_base" and not isinstance(got, str):
            # the spec fixes only intent.estimated_input_base as an integer; the rest are exact decimal strings
            out.append(f"{name} = {got!r} is not a decimal string")
    fee = q.get("cost_summary", {}).get("service_fee", {})
    fee_step = summary.get("fee_collection_step_index")
    if isinstance(fee_step, int) and 0 <= fee_step < len(steps):
        want_fee_base = int(steps[fee_step]["expected_input_base"]) // 10_000
        if _int(fee.get("amount_base")) != want_fee_base:
            out.append(
                f"cost_summary.service_fee.amount_base {fee.get('amount_base')!r} is not "
                f"floor(step {fee_step} input / 10000) = {want_fee_base}"
            )
    # --- the continuation: identity, route facts, specs
    expect = {
        "version": CONTINUATION_VERSION,
        "approval_v3_version": APPROVAL_VERSION,
        "quote_id": q["quote_id"],
        "expires_at": q.get("expires_at"),
        "ttl_seconds": q["ttl_seconds"],
        "step_count": len(route.steps),
        "required_wallet_chains": list(route.required_wallet_chains),
        "event_signer_public_required": route.event_signer_required,
        "allowed_modes": ["session"] if route.non_atomic else ["one_shot", "session"],
        "direct_route_summary_sha256_spec": SUMMARY_HASH_SPEC,
        "quote_payload_sha256_spec": PAYLOAD_HASH_SPEC,
        "quote_fingerprint_spec": FINGERPRINT_SPEC,
    }
    for k, want in expect.items():
        if cont.get(k) != want:
            out.append(f"continuation_v3.{k} = {cont.get(k)!r}, expected {want!r}")
    if out:
        return out
    # --- hashes, recomputed
    summary_sha = canonical_sha256(summary)
    if cont["direct_route_summary_sha256"] != summary_sha:
        out.append("direct_route_summary_sha256 does not match the summary")
    try:
        payload_sha = typed_canonical_sha256(substituted_payload(q))
    except (ValueError, TypeError) as exc:
        return [*out, f"quote payload cannot be encoded: {exc}"]
    if cont["quote_payload_sha256"] != payload_sha:
        out.append("quote_payload_sha256 does not match the quote payload")
    rebuilt = {**cont, "direct_route_summary_sha256": summary_sha, "quote_payload_sha256": payload_sha}
    claim = fingerprint_claim(q, rebuilt)
    if cont["quote_fingerprint_claim"] != claim:
        out.append("quote_fingerprint_claim differs from the claim rebuilt from the quote")
    if cont["quote_fingerprint"] != canonical_sha256(claim):
        out.append("quote_fingerprint does not match the rebuilt claim")
    return out
