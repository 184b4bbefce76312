"""The session engine (REST /v2/session…, A2A, MCP, v1): see `engine.SessionService`.

engine.py    create / read / observe / refresh / cancel (observe = gather, decide, commit)
v1.py        the v1 corridor, a thin mode over the same engine
base.py      loading, idempotent replays, the one commit (store boundary)
gather.py    phase 1: chain facts through the ports
advance.py   the next action: re-quote from the verified output, build, or park for reapproval
inputs.py    request rules of the session operations
The decisions, the state document and the views are pure, in `routequote.core.sessions`.
"""

from routequote.core.pricing import PricedStep
from routequote.core.sessions.views import VIEWS
from routequote.sessions.base import SessionAnswer
from routequote.sessions.engine import SessionService
from routequote.sessions.gather import SessionConfig
from routequote.sessions.inputs import token_sha256, v1_wallet_binding

__all__ = [
    "VIEWS",
    "PricedStep",
    "SessionAnswer",
    "SessionConfig",
    "SessionService",
    "token_sha256",
    "v1_wallet_binding",
]
