"""A quote as the agent surfaces answer it: the decision view by default, the full quote on request.

One home for the choice every agent surface makes (MCP /mcp/v2 and stdio, A2A, the text block of /mcp, the
caller-side MCP); the view itself is `core.quote_view.decision_view`.
"""

from __future__ import annotations

from typing import Any

from routequote.core.quote_view import DETAIL_DECISION, DETAIL_FULL, DETAILS, decision_view
from routequote.errors import InvalidRequest
from routequote.surfaces import guidance as g

# where the complete quote is, per surface (the decision view names it, so an agent never guesses)
FULL_BY_ARGUMENT = 'detail "full"'
FULL_IN_STRUCTURED_CONTENT = "structuredContent.quote"  # the same JSON as POST /v2/quote
FULL_IN_STRUCTURED_CONTENT_V1 = "structuredContent.quote"  # the same JSON as POST /v1/quote


def quote_detail(value: Any) -> str:
    """The requested view: absent means the decision view."""
    if value is None:
        return DETAIL_DECISION
    if value not in DETAILS:
        raise InvalidRequest("invalid_detail", f"detail must be one of {', '.join(DETAILS)}")
    return str(value)


def decision_result(quote: dict[str, Any], *, full: str = FULL_BY_ARGUMENT) -> dict[str, Any]:
    return {"decision": {**decision_view(quote), "full": full}}


def quote_result(quote: dict[str, Any], detail: str) -> dict[str, Any]:
    """`{decision}` (about 1 KB) or `{quote, guidance}` (the REST quote, unchanged, with its guidance)."""
    if detail == DETAIL_FULL:
        return {"quote": quote, "guidance": g.quote_guidance(quote)}
    return decision_result(quote)
