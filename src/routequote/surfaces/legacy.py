"""Legacy v1 translation: the two original corridors (solana SOL -> native ETH on base or arbitrum).

This is the ONE place the v1 shapes are produced. Both the MCP tools `service_status` / `service_quote`
and the v1 REST surface (`/v1/status`, `/v1/quote`) should call these functions over the same
`RouteQuoteService`; nothing here knows about a transport.

- `legacy_quote_request(amount_usd, destination_chain)` -> the v2 QuoteRequest body for the corridor,
  or `InvalidRequest` (reason classes: `unknown_field`, `wrong_type`, `amount_below_minimum`,
  `amount_above_maximum`, `unsupported_corridor`, ...).
- `await legacy_quote(service, body)` -> `{api_version: "v1", corridor, destination_chain, quote}` where
  `quote` is the untouched v2 quote payload (its hashes still verify).
- `legacy_status(service)` -> corridor status and the original-corridor safety gates.

v1 request body, one of two shapes, nothing else in either:
- the MCP `service_quote` arguments: `{"amount_usd": <integer 1..1000>, "destination_chain": "base" | "arbitrum"}`
  (destination optional, default `base`);
- the corridor spelled out, as the public MCP adapter of this API's v1 sends it: `{"from_chain": "solana",
  "from_token": "SOL", "to_chain": "base" | "arbitrum", "to_token": "ETH", "amount_usd": <integer 1..1000>}`
  (all five required).
"""

from __future__ import annotations

from typing import Any, Final

from routequote.core.field_rules import require_object
from routequote.core.intent import MAX_AMOUNT_USD, MIN_AMOUNT_USD, parse_amount_usd
from routequote.core.quote import RELEASE_STATUS, SERVER_FLAGS
from routequote.core.routes import ROUTES
from routequote.errors import InvalidRequest
from routequote.input_rules import name_list
from routequote.service import RouteQuoteService

LEGACY_API_VERSION = "routequote-legacy-v1"
LEGACY_SOURCE = "solana:SOL"
DESTINATION_CHAINS = ("base", "arbitrum")
DEFAULT_DESTINATION: Final = "base"
CORRIDORS = {chain: f"{LEGACY_SOURCE}->{chain}:ETH" for chain in DESTINATION_CHAINS}
LEGACY_FIELDS = ("amount_usd", "destination_chain")
# the corridor spelled out (the public MCP adapter's v1 quote): the v2 quote fields, pinned to the corridors
CORRIDOR_FIELDS = ("from_chain", "from_token", "to_chain", "to_token", "amount_usd")
_CORRIDOR_ONLY = frozenset(CORRIDOR_FIELDS) - {"amount_usd"}


def _corridor_destination(body: dict[str, Any]) -> Any:
    """The destination of a spelled-out corridor body; the source and output token are fixed."""
    missing = [f for f in CORRIDOR_FIELDS if f not in body]
    if missing:
        raise InvalidRequest("missing_field", f"required: {', '.join(missing)}")
    fixed = {"from_chain": "solana", "from_token": "SOL", "to_token": "ETH"}
    for name, want in fixed.items():
        if not isinstance(body[name], str):
            raise InvalidRequest("wrong_type", f"{name} must be a string")
        if body[name] != want:
            raise InvalidRequest(
                "unsupported_corridor",
                f"v1 covers only solana SOL -> ETH on {' or '.join(DESTINATION_CHAINS)}",
            )
    return body["to_chain"]


def legacy_quote_request(body: Any) -> dict[str, Any]:
    """Validate a v1 quote body (either shape) and return the v2 QuoteRequest body of its corridor."""
    body = require_object(body)
    spelled_out = bool(_CORRIDOR_ONLY & set(body))
    allowed = CORRIDOR_FIELDS if spelled_out else LEGACY_FIELDS
    extra = sorted(set(body) - set(allowed))
    if extra:
        raise InvalidRequest("unknown_field", f"properties not allowed: {name_list(extra)}")
    if "amount_usd" not in body:
        raise InvalidRequest("missing_field", "required: amount_usd")
    amount = parse_amount_usd(body["amount_usd"], integer_only=True)
    name = "to_chain" if spelled_out else "destination_chain"
    destination = _corridor_destination(body) if spelled_out else body.get(name, DEFAULT_DESTINATION)
    if not isinstance(destination, str):
        raise InvalidRequest("wrong_type", f"{name} must be a string")
    if destination not in CORRIDORS:
        raise InvalidRequest(
            "unsupported_corridor", f"v1 covers only solana SOL -> ETH on {' or '.join(DESTINATION_CHAINS)}"
        )
    return {
        "from_chain": "solana",
        "from_token": "SOL",
        "to_chain": destination,
        "to_token": "ETH",
        "amount_usd": int(amount),
    }


async def legacy_quote(service: RouteQuoteService, body: Any) -> dict[str, Any]:
    request = legacy_quote_request(body)
    quote = await service.quote_request(request)
    destination = request["to_chain"]
    return {
        "api_version": LEGACY_API_VERSION,
        "status": RELEASE_STATUS,
        "corridor": CORRIDORS[destination],
        "destination_chain": destination,
        "quote_id": quote["quote_id"],  # what POST /v1/session takes; also inside `quote`
        "current_interface": "/v2/quote",
        "quote": quote,
        **SERVER_FLAGS,
    }


def legacy_status(service: RouteQuoteService) -> dict[str, Any]:
    """Status of the two original corridors and their safety gates (read from the v2 service)."""
    v2 = service.status()
    unavailable = {u["route"]: u for u in v2["route_health"]["temporarily_unavailable_routes"]}
    corridors = []
    for chain, key in CORRIDORS.items():
        route = ROUTES[key]
        gap = unavailable.get(key)
        corridors.append(
            {
                "corridor": key,
                "destination_chain": chain,
                "providers": list(route.provider_path),
                "step_count": len(route.steps),
                "non_atomic": route.non_atomic,
                "required_wallet_chains": list(route.required_wallet_chains),
                "event_signer_public_required": route.event_signer_required,
                "quotable": not (gap and gap["reason"] == "market_source_unavailable"),
                "prepare_ready": gap is None,
                "unavailable_reason": gap["reason"] if gap else None,
            }
        )
    return {
        "api_version": LEGACY_API_VERSION,
        "status": RELEASE_STATUS,
        "time": v2["time"],
        "scope": "original_corridors_only",
        "current_interface": "/v2",
        "corridors": corridors,
        "market": v2["market"],
        "safety_gates": {
            **v2["safety_boundaries"],
            "legacy_amount_usd_integer_only": True,
            "legacy_amount_usd_range": [MIN_AMOUNT_USD, MAX_AMOUNT_USD],
            "legacy_destinations": list(DESTINATION_CHAINS),
            "legacy_output_native_eth_only": True,
        },
        **SERVER_FLAGS,
    }


# ---- v1 wallet login and corridor sessions (REST /v1/auth/*, /v1/session*; MCP session tools) -------------

V1_SESSION_OPERATIONS = (
    "start_wallet_auth",
    "finish_wallet_auth",
    "create_session",
    "read_session",
    "prepare_source_action",
    "verify_source_receipt",
    "prepare_cctp_action",
    "observe_cctp",
    "prepare_destination_action",
    "observe_destination",
)


async def v1_session_operation(
    state: Any,
    operation: str,
    args: dict[str, Any],
    *,
    token: Any = None,
    session_id: Any = None,
    client: str = "unknown",
) -> tuple[int, dict[str, Any]]:
    """One v1 operation over the app's session engine and wallet login: (HTTP-style status, body).

    `args` is the operation's body (for read_session: `{"view": ...}`); the access token and session id are
    passed apart (REST: the Authorization header and the path; MCP: the tool arguments)."""
    from routequote.auth import wallet_auth_for

    auth = wallet_auth_for(state)
    sessions = state.sessions
    if operation == "start_wallet_auth":
        return 200, await auth.start(args, client)
    if operation == "finish_wallet_auth":
        return 200, await auth.finish(args, client)
    wallet = await auth.wallet_for(token)
    if operation == "create_session":
        answer = await sessions.v1_create(wallet, args)
        return answer.status_code, answer.body
    if operation == "read_session":
        return 200, await sessions.v1_read(wallet, session_id, args.get("view"))
    run = {
        "prepare_source_action": sessions.v1_prepare_source,
        "verify_source_receipt": sessions.v1_verify_source,
        "prepare_cctp_action": sessions.v1_prepare_cctp,
        "observe_cctp": sessions.v1_observe_cctp,
        "prepare_destination_action": sessions.v1_prepare_destination,
        "observe_destination": sessions.v1_observe_destination,
    }.get(operation)
    if run is None:
        raise InvalidRequest("unknown_operation", "no such v1 operation")
    answer = await run(wallet, session_id, args)
    return answer.status_code, answer.body
