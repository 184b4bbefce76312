"""The session document, typed: parsed from the stored JSON at the store boundary, serialised back exactly.

`version` names the stored shape (`routequote-session-v1`). The top level is typed and frozen; a change makes
a new document (`evolve`, `with_step`). The nested entries are typed too (`entries`: each step's record with
its bridge evidence, the action entries, the funds), parsed here and written back with their keys in their
stored order, and so are the reapproval and cancel records. What is not typed (the intent, the approval, the
binding, the quote and its summary steps, the current action's bundle) stays JSON objects, never written in
place.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from routequote.core.sessions.entries import ActionEntry, Cancelled, Funds, Reapproval, StepEntry, Stored

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
    actions: tuple[ActionEntry, ...]
    steps: tuple[StepEntry, ...]
    funds: Funds
    reapproval: Reapproval | None
    cancelled: Cancelled | None
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
        values["summary_steps"] = tuple(raw["summary_steps"])
        values["actions"] = tuple(ActionEntry.parse(a) for a in raw["actions"])
        values["steps"] = tuple(StepEntry.parse(s) for s in raw["steps"])
        values["funds"] = Funds.parse(raw["funds"])
        if values["reapproval"] is not None:
            values["reapproval"] = Reapproval.parse(values["reapproval"])
        if values["cancelled"] is not None:
            values["cancelled"] = Cancelled.parse(values["cancelled"])
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
            out[name] = _json(value)
        out.update(self.extra)
        return out

    # ---- reading ------------------------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return str(self.binding["session_id"])

    @property
    def is_v1(self) -> bool:
        return self.mode == MODE_V1

    def step(self, k: int) -> StepEntry:
        """Step k's entry (frozen: change it with `set` and put it back with `with_step`)."""
        return self.steps[k]

    def action(self) -> JsonObject:
        """The current action (the operation's status guarantees one; a document without it is corrupt)."""
        if self.current_action is None:
            raise ValueError("the session has no current action")
        return self.current_action

    def wallet(self, chain: str) -> str:
        return self.wallets[chain]

    # ---- changing (a new document each time) -------------------------------------------------------------

    def evolve(self, **changes: Any) -> SessionDocument:
        return replace(self, **_typed(changes))

    def with_step(self, k: int, entry: StepEntry, **changes: Any) -> SessionDocument:
        steps = list(self.steps)
        steps[k] = entry
        return replace(self, steps=tuple(steps), **_typed(changes))

    def with_action(self, entry: ActionEntry, **changes: Any) -> SessionDocument:
        return replace(self, actions=(*self.actions, entry), **_typed(changes))

    def last_action_refreshed(self) -> SessionDocument:
        """The newest action entry marked as a refresh of an expired one."""
        *older, last = self.actions
        return replace(self, actions=(*older, last.set(refreshed=True)))


_TYPED: dict[str, type[Stored]] = {"funds": Funds, "reapproval": Reapproval, "cancelled": Cancelled}


def _typed(changes: dict[str, Any]) -> dict[str, Any]:
    """The changes, refused where a typed entry is handed as a JSON object (a defect, not a request's fault)."""
    for name, kind in _TYPED.items():
        value = changes.get(name)
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"SessionDocument.{name} is a {kind.__name__}")
    return changes


def _json(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    if isinstance(value, Stored):
        return value.to_json()
    return value


_STORED = tuple(f.name for f in fields(SessionDocument) if f.name not in ("absent", "extra"))
