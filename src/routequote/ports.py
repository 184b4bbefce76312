"""The seams between the service and the outside world. Each has a real adapter and a fake beside it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import orjson

from routequote.core.chain import (
    CctpMessage,
    EvmLog,
    EvmTransaction,
    ObservationUnavailable,
    SolanaInstruction,
    SolanaTokenBalance,
    SolanaTransaction,
)
from routequote.core.intent import QuoteIntent
from routequote.core.market import MarketView
from routequote.core.quote import QuoteBody
from routequote.core.quote_issue import IssueTemplate
from routequote.core.routes import Route
from routequote.core.sessions.reads import Facts, Read


@dataclass(frozen=True, slots=True)
class SourceHealth:
    """Health of one upstream market source (a pool, a bridge fee API, a price feed)."""

    name: str
    ok: bool
    reason: str | None = None
    checked_at: str | None = None
    components: tuple[str, ...] = field(default_factory=tuple)  # pool ids / provider names it feeds


class MarketData(Protocol):
    """Where quote assembly gets its market. `view()` raises UpstreamUnavailable / CapacityBusy."""

    @property
    def label(self) -> str: ...

    async def view(self) -> MarketView: ...

    def health(self) -> list[SourceHealth]: ...


class Clock(Protocol):
    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...


class IdFactory(Protocol):
    def new_id(self) -> str: ...


class IssuedQuote:
    """A quote as issued: its exact JSON, and the priced body it was assembled from. Read-only by convention
    (a plain slotted class: this is made for every quote, and a frozen dataclass costs three times as much).

    `payload` is that JSON read back, on first use: a quote that is only answered is never decoded."""

    __slots__ = (
        "_payload",
        "body",
        "expires_at_monotonic",
        "intent",
        "json",
        "quote_id",
        "route",
        "template",
        "ttl_seconds",
        "values",
    )

    def __init__(
        self,
        quote_id: str,
        json: bytes,  # the QuoteResponse exactly as answered
        ttl_seconds: int,
        intent: QuoteIntent,
        route: Route,
        body: QuoteBody,
        expires_at_monotonic: float,  # in this process's monotonic clock
        template: IssueTemplate | None = None,  # the compiled issue it was filled from, if any
        values: tuple[bytes, ...] = (),  # then: the JSON of its per-quote values (quote_issue.PER_QUOTE)
    ) -> None:
        self.quote_id = quote_id
        self.template = template
        self.values = values
        self.json = json
        self.ttl_seconds = ttl_seconds
        self.intent = intent
        self.route = route
        self.body = body
        self.expires_at_monotonic = expires_at_monotonic
        self._payload: dict[str, Any] | None = None

    @property
    def payload(self) -> dict[str, Any]:
        if self._payload is None:
            self._payload = orjson.loads(self.json)
        return self._payload

    @classmethod
    def loaded(
        cls,
        payload: dict[str, Any],
        json: bytes,
        intent: QuoteIntent,
        route: Route,
        body: QuoteBody,
        expires_at_monotonic: float,
    ) -> IssuedQuote:
        """A quote read back from a store, whose payload is already decoded."""
        issued = cls(
            payload["quote_id"], json, payload["ttl_seconds"], intent, route, body, expires_at_monotonic
        )
        issued._payload = payload
        return issued


class QuoteStore(Protocol):
    """Issued quotes, kept until their TTL ends so prepare (and later sessions) bind to exactly what
    was issued. A quote that is not found (expired, evicted, restarted) fails closed."""

    scope: str  # how far a record is visible, published in capabilities' continuation_v3.cache_scope

    async def put(self, issued: IssuedQuote) -> None: ...

    async def get(self, quote_id: str, now_monotonic: float) -> IssuedQuote | None: ...

    def retained(self) -> int | None: ...  # records held, where the store can tell cheaply


class IdempotencyStore(Protocol):
    """Answers already given, by idempotency key: a replay gets the same answer, a different request
    under the same key is refused."""

    async def get(self, key: str, now_monotonic: float) -> tuple[str, dict[str, Any]] | None: ...

    async def put(
        self,
        key: str,
        request_sha256: str,
        response: dict[str, Any],
        ttl_seconds: float,
        now_monotonic: float,
    ) -> None: ...

    def retained(self) -> int | None: ...


# ---- sessions ----------------------------------------------------------------------------------------


class StoreUnavailable(Exception):
    """The session database cannot be reached or answered with an error (REST 503, nothing changed)."""


class IdempotencyConflict(Exception):
    """An idempotency key already holds an answer to a different request (REST 409, nothing changed)."""


class TransactionAlreadyUsed(Exception):
    """A transaction id already advanced a step (of this or another session): one transaction, one step
    (REST 409, nothing changed)."""


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One session as stored. `state` is the whole JSON document of the session (steps, current action,
    evidence, funds); `version` increases by one with every committed transition (optimistic concurrency).
    Only `token_sha256` (hex SHA-256 of the caller's capability token) is ever stored, never the token."""

    session_id: str
    token_sha256: str
    version: int
    status: str
    route: str
    created_at: datetime
    updated_at: datetime
    state: dict[str, Any]


@dataclass(frozen=True, slots=True)
class IdempotentAnswer:
    request_sha256: str
    response: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One committed transition: an entry of the session's durable event log, written in the transaction that
    commits the change (`core.sessions.event_log` renders it; the stream and webhooks read it).

    The trailing fields say where the session is after the change; events stored before they existed read back
    with the defaults."""

    session_id: str
    seq: int  # the per-session sequence: equals the session version the transition produced (1, 2, 3, ...)
    from_status: str | None
    event: str
    to_status: str
    at: datetime
    step_index: int | None = None  # the document's current step after the change
    next_operation: str | None = None  # what the caller does next (`NEXT_OPERATION` of the new status)
    transactions: tuple[dict[str, Any], ...] = ()  # chain evidence this change recorded
    funds: dict[str, Any] | None = None  # where the caller's value sits now (from the verified state)


# the names of the watch leases in the session store (`storage/watch_store.py`, `sessions/watch.py`)
WATCH_LEADER = "watcher"  # scope `leader`: the one process that watches every session
WATCH_SESSION_PREFIX = "session:"  # scope `shared`: one lease per session, `session:<id>`


class SessionStore(Protocol):
    """Sessions and their idempotency records, in one database. Every write is one transaction.

    Idempotency scopes: `create:<token_sha256>` for session creation, `session:<session_id>` for the
    operations on one session. A key is unique within its scope."""

    scope: str  # e.g. "sqlite" / "postgresql", published in status

    async def start(self) -> None: ...  # run migrations / open the pool (idempotent)

    async def aclose(self) -> None: ...

    async def ping(self) -> None: ...  # raises StoreUnavailable

    async def create(
        self,
        record: SessionRecord,
        event: SessionEvent,
        idempotency_scope: str,
        idempotency_key: str,
        request_sha256: str,
        response: dict[str, Any],
    ) -> IdempotentAnswer | None:
        """Insert the session, its first event and the idempotency record atomically. When the key already
        exists in the scope, insert nothing and return the stored answer (the caller compares hashes)."""
        ...

    async def get(self, session_id: str) -> SessionRecord | None: ...

    async def transition(
        self,
        session_id: str,
        expected_version: int,
        status: str,
        state: dict[str, Any],
        event: SessionEvent,
        idempotency: tuple[str, str, str, dict[str, Any]] | None = None,
        claims: tuple[tuple[str, int], ...] = (),
    ) -> bool:
        """Commit a new status/state iff the stored version is still `expected_version` (then version+1),
        with its event and, when given, the idempotency record (scope, key, request_sha256, response).
        Returns False, changing nothing, when another transition won the race.

        `claims` are the (transaction id, step index) pairs this transition proves advanced a step; a
        transaction id is unique across every session (a unique key in the store): when one is already
        claimed, nothing is written and `TransactionAlreadyUsed` is raised."""
        ...

    async def idempotent(self, scope: str, key: str) -> IdempotentAnswer | None: ...

    async def events(self, session_id: str) -> list[SessionEvent]: ...

    async def events_after(self, session_id: str, after: int, limit: int) -> list[SessionEvent]:
        """The session's events with a sequence above `after`, in order, at most `limit` (the stream's page)."""
        ...

    async def versions(self, session_ids: list[str]) -> dict[str, int]:
        """The current version of each of these sessions that exists (one read for all open event streams)."""
        ...

    async def count_by_status(self) -> dict[str, int]: ...


# ---- chain observation -------------------------------------------------------------------------------


class EvmChainReader(Protocol):
    """Reads mined EVM transactions and logs (chain data types: `routequote.core.chain`)."""

    async def transaction(self, chain: str, tx_hash: str) -> EvmTransaction | None:
        """None when the chain does not know the hash (or it is still pending)."""
        ...

    async def logs(
        self, chain: str, address: str, topics: list[str | None], from_block: int, to_block: int | None = None
    ) -> list[EvmLog]: ...

    async def block_number(self, chain: str) -> int: ...


@runtime_checkable
class EvmBatchReader(Protocol):
    """An EvmChainReader that also answers many reads on one chain at once (the watcher's batched gatherer)."""

    async def batch_read(self, chain: str, reads: Sequence[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        """`TxByHash` / `LatestBlock` / `LogsSince` reads of `chain` in as few upstream requests as the node
        allows: the answers, and the reads that failed on their own (an invalid hash, an error or garbage for
        that one call). A failure of the whole request raises ObservationUnavailable."""
        ...


@dataclass(frozen=True, slots=True)
class BlockHead:
    """A chain's latest block: its number, hash and parent hash (the watcher notices a replaced block)."""

    number: int
    hash: str
    parent_hash: str


@dataclass(frozen=True, slots=True)
class BlockScan:
    """What new blocks hold for the watcher: per block, its hash and the hashes of its transactions (from
    `eth_getBlockReceipts`), and the logs of every watched contract and topic (one `eth_getLogs`)."""

    receipts: dict[int, tuple[str, frozenset[str]]]
    logs: tuple[EvmLog, ...]


@runtime_checkable
class EvmBlockScanner(Protocol):
    """An EVM reader that the watcher can follow block by block (a bounded number of calls per new block)."""

    async def head(self, chain: str) -> BlockHead: ...

    async def scan(
        self,
        chain: str,
        blocks: Sequence[int],
        logs_range: tuple[int, int] | None,
        addresses: Sequence[str],
        topic0s: Sequence[str] | None,
    ) -> BlockScan:
        """One request: `eth_getBlockReceipts` of each of `blocks`, and (when `logs_range` is set) one
        `eth_getLogs` over it for `addresses` and any of `topic0s` (None: any topic). Any failure or garbage
        raises ObservationUnavailable: nothing of a scan is used unless all of it is."""
        ...


@dataclass(frozen=True, slots=True)
class SolanaAccount:
    """What `getAccountInfo` says of an account besides its data: its owner program, whether it is an
    executable program itself, and its lamports."""

    owner: str
    executable: bool
    lamports: int


class SolanaAccountInfoReader(Protocol):
    async def account_info(self, address: str) -> SolanaAccount | None:
        """The account's owner, executable flag and lamports (`getAccountInfo`), None when there is none."""
        ...


@dataclass(frozen=True, slots=True)
class SolanaTokenAccount:
    """An SPL token account as `getAccountInfo` holds it: the token program that owns it, and the mint, owner
    and amount (base units) its first 72 bytes encode."""

    program: str
    mint: str
    owner: str
    amount: int


class SolanaPreflightReader(SolanaAccountInfoReader, Protocol):
    """What a preflight reads on Solana: accounts, token accounts, and the fee of a message."""

    async def token_account(self, address: str) -> SolanaTokenAccount | None:
        """The SPL token account at `address` (`getAccountInfo`), None when there is no account there."""
        ...

    async def fee_for_message(self, build: Callable[[str], str]) -> int | None:
        """The fee in lamports of the message `build(recent_blockhash)` (base64) makes, from `getLatestBlockhash`
        then `getFeeForMessage`; None when the node will not price it."""
        ...


class SolanaChainReader(Protocol):
    async def transaction(self, signature: str) -> SolanaTransaction | None:
        """None when the signature is unknown or not yet finalized."""
        ...

    async def account_data(self, address: str) -> bytes | None:
        """A finalized account's data (`getAccountInfo`, base64), or None when there is no such account."""
        ...


@runtime_checkable
class SolanaBatchReader(Protocol):
    """A SolanaChainReader that also reads many transactions at once (the watcher's batched gatherer)."""

    async def batch_transactions(self, reads: Sequence[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        """`SolanaTx` reads in as few upstream requests as the node allows (see `EvmBatchReader.batch_read`)."""
        ...


@runtime_checkable
class SolanaStatusReader(Protocol):
    """A Solana reader that answers many signatures' statuses at once (`getSignatureStatuses`)."""

    async def signature_statuses(self, signatures: Sequence[str]) -> dict[str, str | None]:
        """Each signature's confirmation status (`processed`, `confirmed`, `finalized`), None when the node
        knows none; every 256 signatures one call, all in one request. A failure raises ObservationUnavailable."""
        ...


class SolanaScanTooLarge(ObservationUnavailable):
    """A Solana block scan's answer passed the reader's response size limit: the scan is not used, and the
    watcher reads the pending signatures' statuses instead (sessions/solana_scan.py)."""


@runtime_checkable
class SolanaBlockScanner(Protocol):
    """A Solana reader the watcher can follow slot by slot over FINALIZED blocks (a bounded number of calls per
    new slot, whatever the number of pending signatures). Any failure or garbage raises ObservationUnavailable."""

    async def finalized_slot(self) -> int:
        """The latest finalized slot (`getSlot`, commitment finalized)."""
        ...

    async def finalized_blocks(self, start_slot: int) -> list[int]:
        """The produced (not skipped) finalized slots from `start_slot` on, ascending (`getBlocks`)."""
        ...

    async def block_signatures(self, slots: Sequence[int]) -> dict[int, frozenset[str]]:
        """Every transaction signature of each finalized block (`getBlock` with transactionDetails
        `signatures`), all in one request. A block past the size limit raises SolanaScanTooLarge."""
        ...


class LayerZeroDelivery(Protocol):
    """What LayerZero Scan says of one message: a lead to the delivery, never evidence of it."""

    @property
    def status(self) -> str: ...

    @property
    def destination_tx(self) -> str | None: ...


class LayerZeroReader(Protocol):
    async def delivery_for(self, tx_hash: str, guid: str) -> LayerZeroDelivery | None:
        """The message of `guid` sent by `tx_hash`, or None until it is indexed."""
        ...


class AttestationReader(Protocol):
    async def messages(self, source_domain: int, tx_hash: str) -> list[CctpMessage]: ...


class EvmStateReader(Protocol):
    """Contract state at the latest block (`eth_call`, `eth_getCode`, the block time): what the v1 corridor's
    ERC-4337 settlement is built from. `configured(chain)` is False where no RPC URL is set."""

    def configured(self, chain: str) -> bool: ...

    async def call(self, chain: str, to: str, data: str) -> bytes: ...

    async def code(self, chain: str, address: str) -> bytes: ...

    async def timestamp(self, chain: str) -> int: ...


__all__ = [
    "BlockHead",
    "BlockScan",
    "EvmBlockScanner",
    "SolanaStatusReader",
    "SolanaBlockScanner",
    "SolanaScanTooLarge",
    "AttestationReader",
    "CctpMessage",
    "Clock",
    "EvmBatchReader",
    "EvmChainReader",
    "EvmLog",
    "EvmStateReader",
    "EvmTransaction",
    "IdFactory",
    "LayerZeroDelivery",
    "LayerZeroReader",
    "IdempotencyConflict",
    "IdempotencyStore",
    "IdempotentAnswer",
    "IssuedQuote",
    "MarketData",
    "ObservationUnavailable",
    "QuoteStore",
    "SessionEvent",
    "SessionRecord",
    "SessionStore",
    "SolanaBatchReader",
    "SolanaChainReader",
    "SolanaInstruction",
    "SolanaPreflightReader",
    "SolanaTokenAccount",
    "SolanaTokenBalance",
    "SolanaTransaction",
    "SourceHealth",
    "StoreUnavailable",
    "TransactionAlreadyUsed",
]
