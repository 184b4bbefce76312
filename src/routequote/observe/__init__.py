"""Chain observers: read what a caller's transactions actually did (EVM JSON-RPC, Solana JSON-RPC, Circle Iris).

Adapters only: they turn wire answers into the `routequote.ports` dataclasses and every failure into
`ObservationUnavailable` (REST 503, nothing changed). What the answers *mean* for a session step is decided
by the pure `routequote.core.sessions.evidence`.
"""

from routequote.observe.evm import JsonRpcEvmReader
from routequote.observe.iris import IrisAttestationReader
from routequote.observe.solana import JsonRpcSolanaReader

__all__ = ["IrisAttestationReader", "JsonRpcEvmReader", "JsonRpcSolanaReader"]
