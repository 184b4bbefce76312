"""The session document, typed: parsed from the stored JSON at the store boundary, serialised back exactly.

`version` names the stored shape (`routequote-session-v1`). The top level is typed and frozen; a change makes
a new document (`evolve`, `with_step`). The nested entries (each step's record, the actions, the evidence,
the funds) stay JSON objects because their keys are the stored contract and appear as a step progresses;
they are copied before they are changed (`step`), never written in place.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields, replace
from typing import Any

SESSION_VERSION = "routequote-session-v1"
MODE_V2, MODE_V1 = "v2_session", "v1_corridor"  # one engine; a v1 corridor builds each action on request

JsonObject = dict[str, Any]
# keys a document stored by an earlier release may lack (read as None, and written back only once set)
OPTIONAL_KEYS = frozenset({"mode", "event_signer_public", "reapproval", "cancelled"})


@dataclass(frozen=True)
class SessionDocument:
    version: str
    mode: str | None  # None only in documents stored before modes existed (read as v2)
    route: str
    intent: JsonObject
    wallets: dict[str, str]
    event_signer_public: str | None
    approval: JsonObject
    binding: JsonObject
    quote: JsonObject
    summary_steps: tuple[JsonObject, ...]
    current_step: int
    phase: str  # source | destination | done
    current_action: JsonObject | None
    actions: tuple[JsonObject, ...]
    steps: tuple[JsonObject, ...]
    funds: JsonObject
    reapproval: JsonObject | None
    cancelled: JsonObject | None
    created_at: str
    # what the typed fields do not name is kept as it was, so a stored document never loses a key
    absent: frozenset[str] = field(default=frozenset(), compare=False)
    extra: JsonObject = field(default_factory=dict, compare=False)

    @classmethod
    def parse(cls, raw: Any) -> SessionDocument:
        """The stored JSON document, checked for its version and top-level shape (ValueError otherwise)."""
        if not isinstance(raw, dict) or raw.get("version") != SESSION_VERSION:
            raise ValueError("not a routequote-session-v1 document")
        names = _STORED
        missing = set(names) - set(raw) - OPTIONAL_KEYS
        if missing:
            raise ValueError(f"session document: missing {sorted(missing)}")
        if not isinstance(raw["current_step"], int) or not isinstance(raw["steps"], list):
            raise ValueError("session document: current_step must be an integer and steps a list")
        values: dict[str, Any] = {n: raw.get(n) for n in names}
        for n in ("summary_steps", "actions", "steps"):
            values[n] = tuple(raw[n])
        absent = frozenset(n for n in OPTIONAL_KEYS if n not in raw)
        extra = {k: v for k, v in raw.items() if k not in names}
        return cls(**values, absent=absent, extra=extra)

    def to_json(self) -> JsonObject:
        """The stored shape, keys in their stored order (a key an older document lacked stays absent until set)."""
        out: JsonObject = {}
        for name in _STORED:
            value = getattr(self, name)
            if value is None and name in self.absent:
                continue
            out[name] = list(value) if isinstance(value, tuple) else value
        out.update(self.extra)
        return out

    # ---- reading ------------------------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return str(self.binding["session_id"])

    @property
    def is_v1(self) -> bool:
        return self.mode == MODE_V1

    def step(self, k: int) -> JsonObject:
        """A copy of step k's entry, to change and put back with `with_step`."""
        return copy.deepcopy(self.steps[k])

    def action(self) -> JsonObject:
        """The current action (the operation's status guarantees one; a document without it is corrupt)."""
        if self.current_action is None:
            raise ValueError("the session has no current action")
        return self.current_action

    def wallet(self, chain: str) -> str:
        return self.wallets[chain]

    # ---- changing (a new document each time) -------------------------------------------------------------

    def evolve(self, **changes: Any) -> SessionDocument:
        return replace(self, **changes)

    def with_step(self, k: int, entry: JsonObject, **changes: Any) -> SessionDocument:
        steps = list(self.steps)
        steps[k] = entry
        return replace(self, steps=tuple(steps), **changes)

    def with_action(self, entry: JsonObject, **changes: Any) -> SessionDocument:
        return replace(self, actions=(*self.actions, entry), **changes)

    def last_action_refreshed(self) -> SessionDocument:
        """The newest action entry marked as a refresh of an expired one."""
        *older, last = self.actions
        return replace(self, actions=(*older, {**last, "refreshed": True}))


_STORED = tuple(f.name for f in fields(SessionDocument) if f.name not in ("absent", "extra"))
