"""The watch bench's Solana node (watch_bench.py's FakeRpc hands it every Solana JSON-RPC call), and the Solana
lines of its summary: calls per new slot at each size, and whether the floor holds.

Each new-block tick finalizes `SLOTS_PER_TICK` slots (a 2 s watch interval at ~400 ms slots), one in
`SKIP_EVERY` skipped (no block). A produced block holds `BLOCK_SIGNATURES` signatures (mainnet blocks hold one
to a few thousand, votes included), plus `LAND_PER_TICK` of the signatures the sessions named (seen in their
status or transaction reads), landed in the newest produced slot: each is a failed transaction (`getTransaction`
answers it with an error, so its session is decided once and the bench's other sessions stay pending).
`getSignatureStatuses` says `finalized` for a landed signature, nothing for the others.
"""

from __future__ import annotations

import secrets
from typing import Any

from solders.signature import Signature

SLOTS_PER_TICK = 5
SKIP_EVERY = 7
BLOCK_SIGNATURES = 1_500
LAND_PER_TICK = 1
PAYER = "11111111111111111111111111111112"


class SolanaFake:
    def __init__(self) -> None:
        self.root = 300_000_000
        self.seen: dict[str, None] = {}  # signatures the sessions named, in the order first read
        self.landed: dict[str, int] = {}
        self.blocks: dict[int, list[str]] = {}
        self.history: list[int] = []  # produced slots finalized per tick

    @staticmethod
    def produced(slot: int) -> bool:
        return slot % SKIP_EVERY != 0

    def advance(self, new_block: bool) -> None:
        """A tick: `SLOTS_PER_TICK` more finalized slots (none when `new_block` is False)."""
        before = self.root
        self.root += SLOTS_PER_TICK if new_block else 0
        slots = [s for s in range(before + 1, self.root + 1) if self.produced(s)]
        self.history.append(len(slots))
        if slots:
            waiting = [s for s in self.seen if s not in self.landed][:LAND_PER_TICK]
            self.landed.update(dict.fromkeys(waiting, slots[-1]))

    def _block(self, slot: int) -> list[str]:
        if slot not in self.blocks:
            self.blocks[slot] = [
                str(Signature.from_bytes(secrets.token_bytes(64))) for _ in range(BLOCK_SIGNATURES)
            ]
        return self.blocks[slot] + [s for s, at in self.landed.items() if at == slot]

    def _transaction(self, signature: str) -> dict[str, Any]:
        message = {"accountKeys": [PAYER], "header": {"numRequiredSignatures": 1}, "instructions": []}
        return {
            "slot": self.landed[signature],
            "blockTime": 1_700_000_000,
            "transaction": {"signatures": [signature], "message": message},
            "meta": {"err": {"InstructionError": [0, {"Custom": 1}]}, "fee": 5000, "preBalances": [10_000],
                     "postBalances": [5_000]},
        }  # fmt: skip

    def answer(self, method: str, params: list[Any]) -> Any:
        if method == "getSlot":
            return self.root
        if method == "getBlocks":
            return [s for s in range(params[0], min(params[1], self.root) + 1) if self.produced(s)]
        if method == "getBlock":
            return {"blockhash": "x", "parentSlot": params[0] - 1, "signatures": self._block(params[0])}
        if method == "getSignatureStatuses":
            self.seen.update(dict.fromkeys(params[0]))
            value = [{"confirmationStatus": "finalized"} if s in self.landed else None for s in params[0]]
            return {"context": {"slot": self.root}, "value": value}
        if method == "getTransaction":
            self.seen.setdefault(params[0])
            return self._transaction(params[0]) if params[0] in self.landed else None
        return None

    def summary(self) -> dict[str, Any]:
        return {"history": list(self.history), "signatures": len(self.seen), "landed": len(self.landed)}


def solana_rows(results: list[dict[str, Any]], blocks: int) -> dict[int, dict[str, Any]]:
    """Per size: the most calls per new produced slot over the new-block ticks (getTransaction apart: one per
    landed signature, once), and the methods of the last such tick."""
    rows: dict[int, dict[str, Any]] = {}
    for result in results:
        produced = result["solana"]["history"][1 : 1 + blocks]
        per_slot, one_off = 0.0, 0
        methods: dict[str, int] = {}
        for sample, slots in zip(result["blocks"], produced, strict=True):
            methods = {m.split(":", 1)[1]: c for m, c in sample["methods"].items() if m.startswith("solana:")}
            one_off = max(one_off, methods.get("getTransaction", 0))
            scan = sum(c for m, c in methods.items() if m != "getTransaction")
            per_slot = max(per_slot, scan / max(slots, 1))
        rows[result["n"]] = {
            "signatures": result["solana"]["signatures"],
            "slots": produced,
            "per_slot": per_slot,
            "one_off": one_off,
            "methods": methods,
        }
    return rows


def print_solana_floor(results: list[dict[str, Any]], blocks: int, floor: int) -> None:
    rows = solana_rows(results, blocks)
    print(
        f"   solana, per new produced slot ({SLOTS_PER_TICK} slots a tick, 1 in {SKIP_EVERY} skipped, "
        f"{BLOCK_SIGNATURES:,} signatures a block, {LAND_PER_TICK} pending signature landing a tick):"
    )
    for n, row in rows.items():
        print(
            f"   {n:>8} sessions, {row['signatures']:>5} signatures: {row['per_slot']:.2f} calls per new slot "
            f"({' '.join(f'{m}={c}' for m, c in sorted(row['methods'].items()))} for {row['slots'][-1]} slots), "
            f"getTransaction {row['one_off']} per tick (one per landed signature)"
        )
    bounded = all(row["per_slot"] <= floor for row in rows.values())
    print(
        f"   floor (Solana: <= {floor} JSON-RPC calls per new slot at every size; getTransaction once per landed "
        f"signature): {'HOLDS' if bounded else 'NOT MET'}"
    )
