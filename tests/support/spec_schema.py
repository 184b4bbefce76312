"""The spec's response schemas, written from the spec text (not from our own models), for validation."""

from __future__ import annotations

from typing import Any

import jsonschema

CHAINS = ["solana", "base", "arbitrum", "robinhood"]
TOKENS = ["SOL", "ETH", "USDC", "USDG"]
FALSE = {"type": "boolean", "const": False}

ASSET_ENDPOINT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["chain", "token"],
    "properties": {"chain": {"enum": CHAINS}, "token": {"enum": TOKENS}},
}

QUOTE_RESPONSE: dict[str, Any] = {
    "type": "object",
    "required": [
        "quote_id",
        "status",
        "as_of",
        "ttl_seconds",
        "intent",
        "offer",
        "route",
        "risk",
        "execution",
    ],
    "properties": {
        "quote_id": {"type": "string", "format": "uuid"},
        "status": {"const": "capped_public_agent_release"},
        "as_of": {"type": "string", "format": "date-time"},
        "ttl_seconds": {"type": "integer", "minimum": 1},
        "intent": {
            "type": "object",
            "additionalProperties": False,
            "required": ["from", "to", "amount_usd", "estimated_input_base"],
            "properties": {
                "from": {"type": "string"},
                "to": {"type": "string"},
                "amount_usd": {"type": "number", "minimum": 1, "maximum": 1000},
                "estimated_input_base": {"type": "integer", "minimum": 1},
            },
        },
        "offer": {
            "type": "object",
            "required": [
                "expected_receive_amount",
                "estimated_min_receive_amount",
                "output_symbol",
                "expected_receive_usd",
                "estimated_min_receive_usd",
                "service_fee_bps",
                "fee_collection_steps",
            ],
            "properties": {
                "expected_receive_amount": {"type": "number", "exclusiveMinimum": 0},
                "estimated_min_receive_amount": {"type": "number", "exclusiveMinimum": 0},
                "output_symbol": {"enum": TOKENS},
                "expected_receive_usd": {"type": "number", "exclusiveMinimum": 0},
                "estimated_min_receive_usd": {"type": "number", "exclusiveMinimum": 0},
                "service_fee_bps": {"type": "integer", "minimum": 0},
                "fee_collection_steps": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                "estimated_time_seconds": {"type": ["integer", "null"], "minimum": 0},
            },
        },
        "route": {
            "type": "object",
            "required": ["route", "steps", "quote_latency_ms"],
            "properties": {
                "route": {"type": "string", "minLength": 1},
                "steps": {"type": "array", "minItems": 1, "items": {"type": "object"}},
                "quote_latency_ms": {"type": "integer", "minimum": 0},
                "server_signing": FALSE,
                "server_submission": FALSE,
            },
        },
        "risk": {
            "type": "object",
            "required": ["non_atomic"],
            "properties": {
                "non_atomic": {"type": "boolean"},
                "fresh_quote_required_each_step": {"const": True},
                "server_signing": FALSE,
                "server_submission": FALSE,
            },
        },
        "execution": {
            "type": "object",
            "properties": {
                "supported": {"const": True},
                "first_unsigned_action_supported": {"type": "boolean"},
                "future_actions_require_verified_receipts": {"const": True},
            },
        },
    },
}

CAPABILITIES_RESPONSE: dict[str, Any] = {
    "type": "object",
    "required": [
        "status",
        "public_api_enabled",
        "chains",
        "asset_endpoints",
        "directed_conversion_routes",
        "unsigned_route_plans_ready",
        "server_signing",
        "server_submission",
    ],
    "properties": {
        "status": {"const": "capped_public_agent_release"},
        "public_api_enabled": {"const": True},
        "chains": {
            "type": "array",
            "items": {"enum": CHAINS},
            "minItems": 4,
            "maxItems": 4,
            "uniqueItems": True,
        },
        "asset_endpoints": {
            "type": "array",
            "items": ASSET_ENDPOINT,
            "minItems": 9,
            "maxItems": 9,
            "uniqueItems": True,
        },
        "directed_conversion_routes": {"const": 72},
        "unsigned_route_plans_ready": {"const": 72},
        "server_signing": FALSE,
        "server_submission": FALSE,
    },
}

STATUS_RESPONSE: dict[str, Any] = {
    "type": "object",
    "required": ["status", "server_signing", "server_submission"],
    "properties": {
        "status": {"const": "capped_public_agent_release"},
        "server_signing": FALSE,
        "server_submission": FALSE,
    },
}

ERROR_RESPONSE: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {"type": "string", "minLength": 1},
        "retry_after_seconds": {"type": "integer", "minimum": 0, "maximum": 3600},
        "reason_class": {"type": "string", "minLength": 1},
    },
}

_FORMATS = jsonschema.FormatChecker()


def validate(instance: Any, schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(schema, format_checker=_FORMATS).validate(instance)


def walk_server_flags(tree: Any, path: str = "$") -> list[str]:
    """Every server_signing / server_submission key anywhere in the tree that is not exactly false."""
    bad: list[str] = []
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key in ("server_signing", "server_submission") and value is not False:
                bad.append(f"{path}.{key}")
            bad += walk_server_flags(value, f"{path}.{key}")
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            bad += walk_server_flags(value, f"{path}[{i}]")
    return bad
