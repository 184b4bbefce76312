"""A Solana JSON-RPC endpoint over a LiteSVM: account reads answered from the VM's real account state.

`getAccountInfo` (base64, with `dataSlice`) reads `svm.get_account`; `getLatestBlockhash` is the VM's blockhash;
`getFeeForMessage` prices a message at the VM's measured fee per signature (`fee_per_signature`: a real transfer
executed in the VM, the payer's lamports before and after) and answers `null` for a blockhash the VM does not
hold, as a node does; `getSignatureStatuses` is `finalized` for a signature in the VM's transaction history
(`svm.get_transaction`: the VM executes at once, so what it holds is final) and null otherwise. A batch (a JSON
array) is answered call by call. Any other method is -32601.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction
from solders.transaction_metadata import FailedTransactionMetadata


def fee_per_signature(svm: LiteSVM) -> int:
    """What the VM charges per signature: a one-signature transfer executed in it, the payer's lamports before
    and after, less what it sent."""
    payer, to = Keypair(), Keypair().pubkey()
    svm.airdrop(payer.pubkey(), 10**9)
    sent = svm.minimum_balance_for_rent_exemption(0)
    before = svm.get_balance(payer.pubkey()) or 0
    tx = Transaction(
        [payer],
        Message(
            [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=to, lamports=sent))],
            payer.pubkey(),
        ),
        svm.latest_blockhash(),
    )
    result = svm.send_transaction(tx)
    assert hasattr(result, "signature"), result
    return before - sent - (svm.get_balance(payer.pubkey()) or 0)


@dataclass
class LiteSvmRpc:
    svm: LiteSVM
    per_signature: int = 0
    calls: list[tuple[str, Any]] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.per_signature = fee_per_signature(self.svm)

    def answer(self, method: str, params: list[Any]) -> dict[str, Any]:
        context = {"slot": 1}
        if method == "getAccountInfo":
            config = params[1] if len(params) > 1 else {}
            acct = self.svm.get_account(Pubkey.from_string(params[0]))
            if acct is None or (acct.lamports == 0 and not bytes(acct.data)):
                return {"result": {"context": context, "value": None}}
            data = bytes(acct.data)
            piece = config.get("dataSlice")
            if piece:
                data = data[piece["offset"] : piece["offset"] + piece["length"]]
            value = {
                "data": [base64.b64encode(data).decode(), "base64"],
                "executable": acct.executable,
                "lamports": acct.lamports,
                "owner": str(acct.owner),
                "rentEpoch": 0,
                "space": len(bytes(acct.data)),
            }
            return {"result": {"context": context, "value": value}}
        if method == "getLatestBlockhash":
            value = {"blockhash": str(self.svm.latest_blockhash()), "lastValidBlockHeight": 1000}
            return {"result": {"context": context, "value": value}}
        if method == "getFeeForMessage":
            message = Message.from_bytes(base64.b64decode(params[0]))
            if message.recent_blockhash != self.svm.latest_blockhash():
                return {"result": {"context": context, "value": None}}
            fee = self.per_signature * message.header.num_required_signatures
            return {"result": {"context": context, "value": fee}}
        if method == "getSignatureStatuses":
            statuses = [self._status(sig) for sig in params[0]]
            return {"result": {"context": context, "value": statuses}}
        return {"error": {"code": -32601, "message": "Method not found"}}

    def _status(self, signature: str) -> dict[str, Any] | None:
        try:
            found = self.svm.get_transaction(Signature.from_string(signature))
        except ValueError:
            return None
        if found is None:
            return None
        failed = isinstance(found, FailedTransactionMetadata)
        err = {"InstructionError": [0, str(found.err)]} if failed else None
        return {"slot": 1, "confirmations": None, "err": err, "confirmationStatus": "finalized"}

    def reply(self, req: Any) -> Any:
        """One JSON-RPC request's answer, or a batch's (a list, answered in order)."""
        if isinstance(req, list):
            return [self.reply(r) for r in req]
        with self.lock:
            method, params = req.get("method"), req.get("params") or []
            self.calls.append((method, params))
            return {"jsonrpc": "2.0", "id": req.get("id"), **self.answer(method, params)}

    @contextmanager
    def running(self) -> Iterator[LiteSvmRpc]:
        rpc = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                out = rpc.reply(req)
                raw = json.dumps(out).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
