"""Helpers for the whole-session e2e tests (tests/e2e/test_sessions_anvil.py).

* `compile_standins()`: the CCTP v2 stand-ins in `standins/` compiled with solc-js from npm (installed into
  `tests/e2e/.npm-cache/solc`, compiled JSON cached under `tests/e2e/.npm-cache/standins/`; never committed).
* `deploy_cctp_pair()`: a stand-in MessageTransmitterV2 + TokenMessengerV2 on two anvil chains, linked.
* `FakeIris`: Circle Iris `GET /v2/messages/{sourceDomain}?transactionHash=` on loopback, answering in the
  documented format with the message the burn emitted, attested by the test (nonce, finality and fee filled).
* `SessionApi`: a small REST client for /v2/quote and /v2/session.
* `fill_relay()`: the test as the Across relayer (`fillRelay(V3RelayData, repaymentChainId, repaymentAddress)`).
* run as a script (`python tests/e2e/_sessions.py CONFIG.json`): one more server process over the same
  session database (the concurrency test), built from the same settings and deployment overrides.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
from tests.support.json_safety import assert_javascript_safe

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _evm import CACHE, MAX_UINT256, AnvilChain, ToolchainUnavailable, calldata  # noqa: E402
from eth_abi import decode, encode  # noqa: E402
from eth_utils import keccak, to_checksum_address  # noqa: E402
from tests.support.loopback import json_server  # noqa: E402

SOLC_PKG = "solc@0.8.26"
STANDINS = Path(__file__).resolve().parent / "standins"
SESSION_HEADER = "X-RouteQuote-Session-Token"
CCTP_DOMAINS = {8453: 6, 42161: 3}
FUNDS_DEPOSITED = (
    "0x"
    + keccak(
        text="FundsDeposited(bytes32,bytes32,uint256,uint256,uint256,uint256,uint32,uint32,uint32,bytes32,bytes32,bytes32,bytes)"
    ).hex()
)
MESSAGE_SENT = "0x" + keccak(text="MessageSent(bytes)").hex()
FILL_RELAY = (
    "fillRelay((bytes32,bytes32,bytes32,bytes32,bytes32,uint256,uint256,uint256,uint256,uint32,uint32,bytes),"
    "uint256,bytes32)"
)

# ---- solc-js and the stand-ins ---------------------------------------------------------------------------------

_COMPILE_JS = """
const solc = require(process.argv[1]);
const input = require('fs').readFileSync(0, 'utf8');
process.stdout.write(solc.compile(input));
"""


def compile_standins(cache: Path = CACHE) -> dict[str, dict[str, Any]]:
    """{contract name: {"abi", "bytecode"}} for every contract in `standins/*.sol`, compiled by solc-js 0.8.26."""
    sources = {p.name: {"content": p.read_text()} for p in sorted(STANDINS.glob("*.sol"))}
    digest = hashlib.sha256(json.dumps([SOLC_PKG, sources], sort_keys=True).encode()).hexdigest()[:16]
    out_file = cache / "standins" / f"standins-{digest}.json"
    if out_file.exists():
        cached: dict[str, dict[str, Any]] = json.loads(out_file.read_text())
        return cached
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        raise ToolchainUnavailable("node/npm not found on PATH: cannot install solc-js")
    prefix = cache / "solc"
    module = prefix / "node_modules" / "solc"
    if not (module / "soljson.js").exists():
        prefix.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [
                npm,
                "install",
                "--no-save",
                "--no-audit",
                "--no-fund",
                "--cache",
                str(cache / "npm"),
                "--prefix",
                str(prefix),
                SOLC_PKG,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0 or not (module / "soljson.js").exists():
            raise ToolchainUnavailable(
                f"npm install {SOLC_PKG} failed (offline?): {proc.stderr.strip()[-300:]}"
            )
    standard = {
        "language": "Solidity",
        "sources": sources,
        "settings": {
            "optimizer": {"enabled": True, "runs": 200},
            "viaIR": True,
            "evmVersion": "cancun",
            "outputSelection": {"*": {"*": ["abi", "evm.bytecode.object"]}},
        },
    }
    proc = subprocess.run(
        [node, "-e", _COMPILE_JS, str(module)],
        input=json.dumps(standard),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise ToolchainUnavailable(f"solc-js failed: {proc.stderr.strip()[-500:]}")
    result = json.loads(proc.stdout)
    errors = [e for e in result.get("errors", []) if e.get("severity") == "error"]
    if errors:
        raise AssertionError("stand-ins do not compile:\n" + "\n".join(e["formattedMessage"] for e in errors))
    contracts = {
        name: {"abi": c["abi"], "bytecode": "0x" + c["evm"]["bytecode"]["object"]}
        for per_file in result["contracts"].values()
        for name, c in per_file.items()
    }
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(json.dumps(contracts))
    return contracts


def _deploy(chain: AnvilChain, artifact: dict[str, Any], types: list[str], *args: Any) -> str:
    receipt = chain.send(None, artifact["bytecode"] + (encode(types, list(args)).hex() if types else ""))
    return str(to_checksum_address(receipt["contractAddress"]))


def b32(address: str) -> bytes:
    return bytes.fromhex(address[2:].lower()).rjust(32, b"\x00")


def deploy_cctp_pair(standins: dict[str, dict[str, Any]], src: AnvilChain, dst: AnvilChain) -> None:
    """Stand-in CCTP v2 on `src` and `dst` (addresses in `chain.addresses["cctp_transmitter"]` and
    `["cctp_messenger"]`), each messenger knowing the other as its remote, the source USDC (token6) linked
    to the destination USDC (token6), which the destination messenger may mint and the source one burn."""
    for chain in (src, dst):
        a = chain.addresses
        a["cctp_transmitter"] = _deploy(
            chain, standins["MessageTransmitterV2StandIn"], ["uint32"], CCTP_DOMAINS[chain.chain_id]
        )
        a["cctp_messenger"] = _deploy(
            chain, standins["TokenMessengerV2StandIn"], ["address"], a["cctp_transmitter"]
        )
    for here, there in ((src, dst), (dst, src)):
        here.transact(
            here.addresses["cctp_messenger"],
            "addRemoteTokenMessenger(uint32,bytes32)",
            CCTP_DOMAINS[there.chain_id],
            b32(there.addresses["cctp_messenger"]),
        )
        here.transact(
            here.addresses["cctp_messenger"],
            "linkTokenPair(address,uint32,bytes32)",
            here.addresses["token6"],
            CCTP_DOMAINS[there.chain_id],
            b32(there.addresses["token6"]),
        )
        here.transact(here.addresses["token6"], "addMinter(address)", here.addresses["cctp_messenger"])
        here.transact(here.addresses["token6"], "addBurner(address)", here.addresses["cctp_messenger"])


def emitted_message(receipt: dict[str, Any]) -> bytes:
    """The one `MessageSent(bytes)` message a burn receipt carries."""
    found = [lg for lg in receipt["logs"] if lg["topics"] and lg["topics"][0] == MESSAGE_SENT]
    assert len(found) == 1, receipt["logs"]
    (message,) = decode(["bytes"], bytes.fromhex(found[0]["data"][2:]))
    return bytes(message)


def attest(
    message: bytes,
    *,
    nonce: bytes,
    fee_executed: int,
    finality_executed: int = 1000,
    expiration_block: int = 0,
) -> bytes:
    """What Iris returns for a burn: the emitted message with nonce, finalityThresholdExecuted, feeExecuted and
    expirationBlock filled in (offsets of MessageV2 / BurnMessageV2)."""
    m = bytearray(message)
    m[12:44] = nonce
    m[144:148] = finality_executed.to_bytes(4, "big")
    body = 148
    m[body + 164 : body + 196] = fee_executed.to_bytes(32, "big")
    m[body + 196 : body + 228] = expiration_block.to_bytes(32, "big")
    return bytes(m)


# ---- Circle Iris, played by the test ---------------------------------------------------------------------------


def iris_item(message: bytes, attestation: bytes | None, status: str = "complete") -> dict[str, Any]:
    """One entry of Iris's `/v2/messages` answer in its documented shape (chains.md §3)."""

    def u32(at: int) -> str:
        return str(int.from_bytes(message[at : at + 4], "big"))

    def h(a: int, b: int) -> str:
        return "0x" + message[a:b].hex()

    body = 148
    return {
        "message": "0x" + message.hex(),
        "eventNonce": h(12, 44),
        "attestation": "0x" + attestation.hex() if attestation is not None else "PENDING",
        "cctpVersion": 2,
        "status": status,
        "delayReason": None,
        "decodedMessage": {
            "sourceDomain": u32(4),
            "destinationDomain": u32(8),
            "nonce": h(12, 44),
            "sender": h(44, 76),
            "recipient": h(76, 108),
            "destinationCaller": h(108, 140),
            "minFinalityThreshold": u32(140),
            "finalityThresholdExecuted": u32(144),
            "messageBody": h(body, len(message)),
            "decodedMessageBody": {
                "burnToken": "0x" + message[body + 16 : body + 36].hex(),
                "mintRecipient": "0x" + message[body + 48 : body + 68].hex(),
                "amount": str(int.from_bytes(message[body + 68 : body + 100], "big")),
                "messageSender": "0x" + message[body + 112 : body + 132].hex(),
                "maxFee": str(int.from_bytes(message[body + 132 : body + 164], "big")),
                "feeExecuted": str(int.from_bytes(message[body + 164 : body + 196], "big")),
                "expirationBlock": str(int.from_bytes(message[body + 196 : body + 228], "big")),
                "hookData": "0x" + message[body + 228 :].hex() if len(message) > body + 228 else None,
            },
        },
    }


@dataclass
class FakeIris:
    """`GET /v2/messages/{domain}?transactionHash=0x..` -> 200 {"messages": [...]} for what the test published,
    404 otherwise (Iris's answer before it has indexed a burn). Records every request path."""

    messages: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    url: str = ""

    def publish(self, domain: int, tx_hash: str, items: list[dict[str, Any]]) -> None:
        self.messages[(domain, tx_hash.lower())] = items

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        self.requests.append(path)
        u = urlparse(path)
        parts = u.path.strip("/").split("/")
        tx = (parse_qs(u.query).get("transactionHash") or [""])[0].lower()
        items = None
        if method == "GET" and len(parts) == 3 and parts[:2] == ["v2", "messages"] and parts[2].isdigit():
            items = self.messages.get((int(parts[2]), tx))
        if items is None:
            return 404, {"error": "Message hash not found"}
        return 200, {"messages": items}

    @contextmanager
    def running(self) -> Iterator[FakeIris]:
        with json_server(self.answer) as self.url:
            yield self


# ---- Across, the relayer played by the test ----------------------------------------------------------------------


def deposit_relay_data(receipt: dict[str, Any], spoke: str, origin_chain_id: int) -> tuple[Any, ...]:
    """The V3RelayData of the one `FundsDeposited` the deposit transaction emitted."""
    logs = [
        lg
        for lg in receipt["logs"]
        if lg["topics"][0] == FUNDS_DEPOSITED and lg["address"].lower() == spoke.lower()
    ]
    assert len(logs) == 1, receipt["logs"]
    lg = logs[0]
    t_in, t_out, amt_in, amt_out, _qts, fill_deadline, excl_deadline, recipient, excl_relayer, message = (
        decode(
            [
                "bytes32",
                "bytes32",
                "uint256",
                "uint256",
                "uint32",
                "uint32",
                "uint32",
                "bytes32",
                "bytes32",
                "bytes",
            ],
            bytes.fromhex(lg["data"][2:]),
        )
    )
    depositor = bytes.fromhex(lg["topics"][3][2:])
    deposit_id = int(lg["topics"][2], 16)
    return (
        depositor,
        recipient,
        excl_relayer,
        t_in,
        t_out,
        amt_in,
        amt_out,
        origin_chain_id,
        deposit_id,
        fill_deadline,
        excl_deadline,
        message,
    )


def fund_relayer(chain: AnvilChain, relayer: str, amount: int) -> None:
    a = chain.addresses
    chain.transact(a["token6"], "mint(address,uint256)", relayer, amount)
    chain.transact(a["token6"], "approve(address,uint256)", a["local_spoke"], MAX_UINT256, sender=relayer)


def fill_relay(
    chain: AnvilChain, relayer: str, relay_data: tuple[Any, ...], repayment_chain_id: int
) -> dict[str, Any]:
    """The relayer's `fillRelay` on the destination SpokePool (Across 5.0.27 ABI)."""
    data = calldata(FILL_RELAY, relay_data, repayment_chain_id, b32(relayer))
    return chain.send(chain.addresses["local_spoke"], data, sender=relayer)


# ---- the REST client ---------------------------------------------------------------------------------------------


def new_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def new_key(prefix: str = "k") -> str:
    return f"{prefix}-{secrets.token_hex(8)}"


def intent(route: str, amount_usd: int) -> dict[str, Any]:
    src, dst = route.split("->")
    fc, ft = src.split(":")
    tc, tt = dst.split(":")
    return {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": amount_usd}


def approval(quote: dict[str, Any], key: str) -> dict[str, Any]:
    c = quote["continuation_v3"]
    return {
        "version": c["approval_v3_version"],
        "quote_id": quote["quote_id"],
        "quote_fingerprint": c["quote_fingerprint"],
        "selection_status": "selected",
        "selected_mode": "session",
        "maximum_input_base": c["input_base_bounds"]["maximum"],
        "minimum_output_base": c["minimum_output_base"],
        "direct_route_summary_sha256": c["direct_route_summary_sha256"],
        "idempotency_key": key,
    }


class SessionApi:
    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=60)

    def quote(self, route: str, amount_usd: int = 100) -> dict[str, Any]:
        r = self.http.post("/v2/quote", json=intent(route, amount_usd))
        assert r.status_code == 200, r.text
        assert_javascript_safe(r.json())
        return dict(r.json())

    def create(
        self, route: str, wallets: dict[str, str], amount_usd: int = 100
    ) -> tuple[dict[str, Any], str]:
        """A fresh quote, approved in session mode, and the session created for it: (session, token)."""
        token, key = new_token(), new_key("create")
        q = self.quote(route, amount_usd)
        body = {
            "caller_approved": True,
            **intent(route, amount_usd),
            "wallets": wallets,
            "approval_v3": approval(q, key),
            "idempotency_key": key,
        }
        r = self.http.post("/v2/session", json=body, headers={SESSION_HEADER: token})
        assert r.status_code == 201, r.text
        assert_javascript_safe(r.json())
        return dict(r.json()), token

    def read(self, sid: str, token: str, view: str = "session") -> dict[str, Any]:
        r = self.http.get(f"/v2/session/{sid}", params={"view": view}, headers={SESSION_HEADER: token})
        assert r.status_code == 200, r.text
        assert_javascript_safe(r.json())
        return dict(r.json())

    def op(self, sid: str, op: str, token: str, body: dict[str, Any]) -> httpx.Response:
        r = self.http.post(f"/v2/session/{sid}/{op}", json=body, headers={SESSION_HEADER: token})
        assert_javascript_safe(r.json())  # every answer of the whole-route tests, refusals included
        return r

    def observe(
        self, sid: str, token: str, hashes: list[str] | None = None, key: str | None = None
    ) -> httpx.Response:
        body: dict[str, Any] = {"idempotency_key": key or new_key("observe")}
        if hashes is not None:
            body["transaction_hashes"] = hashes
        return self.op(sid, "observe", token, body)

    def close(self) -> None:
        self.http.close()


# ---- one more server process over the same database -------------------------------------------------------------


def deployment_overrides(deployments: dict[Any, Any]) -> dict[str, dict[str, Any]]:
    """JSON form of `{Chain: EvmDeployment}` overrides (what differs from the defaults)."""
    from dataclasses import asdict

    from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS

    out = {}
    for chain, dep in deployments.items():
        base = asdict(DEFAULT_DEPLOYMENTS[chain])
        out[chain.value] = {
            k: v for k, v in asdict(dep).items() if k not in ("chain", "chain_id") and v != base[k]
        }
    return out


def start_replica(tmp: Path, settings: dict[str, Any], deployments: dict[Any, Any]) -> Any:
    """`python tests/e2e/_sessions.py CONFIG` on a free port: the same app, another OS process, started and
    answering. Returns its `tests.support.server_process.ServerProcess` (url, process, log; kill() is SIGKILL)."""
    from tests.support.server import free_port
    from tests.support.server_process import ServerProcess

    port = free_port()
    config = tmp / f"server-{port}.json"
    config.write_text(
        json.dumps({"settings": {**settings, "port": port}, "deployments": deployment_overrides(deployments)})
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "src")])}
    log = tmp / f"server-{port}.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), str(config)],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    server = ServerProcess(f"http://127.0.0.1:{port}", proc, log)
    deadline = time.monotonic() + 120  # bounds a hang only: a loaded machine starts it late
    while True:
        try:
            if httpx.get(f"{server.url}/v2/status", timeout=1).status_code < 500:
                return server
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise RuntimeError(f"server process did not start: {server.log_tail(800)}")
        time.sleep(0.1)


@contextmanager
def server_process(tmp: Path, settings: dict[str, Any], deployments: dict[Any, Any]) -> Iterator[str]:
    """`start_replica`, stopped on exit. Yields its URL."""
    server = start_replica(tmp, settings, deployments)
    try:
        yield server.url
    finally:
        server.stop()


def _serve(config_path: str) -> None:
    import uvicorn

    from routequote.app import create_app
    from routequote.config import Settings
    from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS
    from routequote.core.assets import Chain

    config = json.loads(Path(config_path).read_text())
    settings = Settings(**config["settings"])
    deployments = {
        Chain(c): DEFAULT_DEPLOYMENTS[Chain(c)].with_overrides(**o) for c, o in config["deployments"].items()
    }
    app = create_app(settings, deployments=deployments)
    uvicorn.run(app, host="127.0.0.1", port=settings.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    _serve(sys.argv[1])
