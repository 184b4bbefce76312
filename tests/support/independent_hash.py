"""An independent re-implementation of the quote hashing rules, written from the documented specs in the
quote itself (continuation_v3.*_spec), so tests do not grade our code with our code."""

from __future__ import annotations

import copy
import hashlib
import json
import struct
from typing import Any


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def typed(value: Any) -> bytes:
    if value is None:
        return b"n"
    if value is True:
        return b"t"
    if value is False:
        return b"f"
    if isinstance(value, (int, float)):
        if isinstance(value, int):
            assert abs(value) <= 2**53 - 1, "unsubstituted big integer"
        return b"d" + struct.pack(">d", float(value)).hex().encode()
    if isinstance(value, str):
        b = value.encode("utf-8")
        return f"s{len(b)}:".encode() + b
    if isinstance(value, list):
        return f"a{len(value)}:[".encode() + b"".join(typed(v) for v in value) + b"]"
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-8"))
        body = b"".join(typed(k) + typed(value[k]) for k in keys)
        return f"o{len(keys)}:{{".encode() + body + b"}"
    raise TypeError(type(value))


def payload_sha256(quote: dict[str, Any]) -> str:
    q = copy.deepcopy(quote)
    q.pop("continuation_v3")
    steps = q["direct_route_summary"]["steps"]
    q["intent"]["estimated_input_base"] = steps[0]["expected_input_base"]
    q["route"]["input_base"] = steps[0]["expected_input_base"]
    q["route"]["expected_output_base"] = steps[-1]["expected_output_base"]
    q["route"]["minimum_output_base"] = steps[-1]["minimum_output_base"]
    for raw, s in zip(q["route"]["steps"], steps, strict=True):
        raw["expected_input_base"] = s["expected_input_base"]
        raw["floor_input_base"] = s["minimum_input_base"]
        raw["expected_output_base"] = s["expected_output_base"]
        raw["minimum_output_base"] = s["minimum_output_base"]
    return hashlib.sha256(typed(q)).hexdigest()


def summary_sha256(quote: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(quote["direct_route_summary"])).hexdigest()


def fingerprint(quote: dict[str, Any]) -> str:
    c = quote["continuation_v3"]
    claim = {
        "version": c["version"],
        "quote_id": quote["quote_id"],
        "issued_at": c["issued_at"],
        "expires_at": c["expires_at"],
        "ttl_seconds": str(quote["ttl_seconds"]),
        "intent": {
            "from": quote["intent"]["from"],
            "to": quote["intent"]["to"],
            "amount_usd_decimal": c["amount_usd_decimal"],
            "estimated_input_base": str(quote["intent"]["estimated_input_base"]),
        },
        "direct_route_summary_sha256": summary_sha256(quote),
        "quote_payload_sha256": payload_sha256(quote),
        "quote_payload_sha256_spec": c["quote_payload_sha256_spec"],
        "input_base_bounds": c["input_base_bounds"],
        "minimum_output_base": c["minimum_output_base"],
        "required_wallet_chains": c["required_wallet_chains"],
        "event_signer_public_required": c["event_signer_public_required"],
        "step_count": str(c["step_count"]),
        "allowed_modes": c["allowed_modes"],
        "server_signing": False,
        "server_submission": False,
    }
    return hashlib.sha256(canonical(claim)).hexdigest()
