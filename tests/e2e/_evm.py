"""Local EVM helpers for e2e tests: anvil from npm, Uniswap v3 from the npm bytecode, plain JSON-RPC.

Everything is fetched at test time into ``tests/e2e/.npm-cache/`` (gitignored):

* anvil: ``npm install --no-save --prefix <cache>/anvil @foundry-rs/anvil-linux-amd64@1.7.1``
* artifacts: ``npm pack`` of @uniswap/v3-core@1.0.1, @uniswap/v3-periphery@1.4.4,
  @uniswap/swap-router-contracts@1.3.1, @uniswap/v2-periphery@1.1.0-beta.0 (WETH9),
  @openzeppelin/contracts@3.4.2-solc-0.7 (18-decimals ERC20PresetMinterPauser) and
  @across-protocol/contracts@5.0.27 (6-decimals MintableERC20), unpacked into the cache.

Transactions use anvil's unlocked default accounts (``eth_sendTransaction``), so no key handling.
"""

from __future__ import annotations

import json
import platform
import shutil
import socket
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from math import isqrt
from pathlib import Path
from typing import Any

import httpx
from eth_abi import decode, encode
from eth_account import Account
from eth_utils import function_signature_to_4byte_selector, to_checksum_address

from routequote.core.actions.evm import arg_types

CACHE = Path(__file__).resolve().parent / ".npm-cache"
ANVIL_PKG = "@foundry-rs/anvil-linux-amd64@1.7.1"
PACKS = {
    "uniswap-v3-core-1.0.1.tgz": "@uniswap/v3-core@1.0.1",
    "uniswap-v3-periphery-1.4.4.tgz": "@uniswap/v3-periphery@1.4.4",
    "uniswap-swap-router-contracts-1.3.1.tgz": "@uniswap/swap-router-contracts@1.3.1",
    "uniswap-v2-periphery-1.1.0-beta.0.tgz": "@uniswap/v2-periphery@1.1.0-beta.0",
    "openzeppelin-contracts-3.4.2-solc-0.7.tgz": "@openzeppelin/contracts@3.4.2-solc-0.7",
    "across-protocol-contracts-5.0.27.tgz": "@across-protocol/contracts@5.0.27",
}
ARTIFACTS = {
    "UniswapV3Factory": (
        "uniswap-v3-core-1.0.1.tgz",
        "package/artifacts/contracts/UniswapV3Factory.sol/UniswapV3Factory.json",
    ),
    "UniswapV3Pool": (
        "uniswap-v3-core-1.0.1.tgz",
        "package/artifacts/contracts/UniswapV3Pool.sol/UniswapV3Pool.json",
    ),
    "NonfungiblePositionManager": (
        "uniswap-v3-periphery-1.4.4.tgz",
        "package/artifacts/contracts/NonfungiblePositionManager.sol/NonfungiblePositionManager.json",
    ),
    "SwapRouter02": (
        "uniswap-swap-router-contracts-1.3.1.tgz",
        "package/artifacts/contracts/SwapRouter02.sol/SwapRouter02.json",
    ),
    "QuoterV2": (
        "uniswap-swap-router-contracts-1.3.1.tgz",
        "package/artifacts/contracts/lens/QuoterV2.sol/QuoterV2.json",
    ),
    "WETH9": ("uniswap-v2-periphery-1.1.0-beta.0.tgz", "package/build/WETH9.json"),
    "ERC20PresetMinterPauser": (
        "openzeppelin-contracts-3.4.2-solc-0.7.tgz",
        "package/build/contracts/ERC20PresetMinterPauser.json",
    ),
    "MintableERC20": (
        "across-protocol-contracts-5.0.27.tgz",
        "package/dist/evm/artifacts/MockERC20.sol/MintableERC20.json",
    ),
}
ZERO_ADDRESS = "0x" + "00" * 20
MAX_UINT256 = (1 << 256) - 1


class ToolchainUnavailable(RuntimeError):
    """Raised with a human-readable reason when anvil / artifacts cannot be provided."""


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise ToolchainUnavailable(f"{' '.join(cmd[:3])} failed (offline?): {proc.stderr.strip()[-300:]}")


def ensure_toolchain(cache: Path = CACHE) -> tuple[Path, Path]:
    """Return (anvil binary, artifacts dir), installing them into ``cache`` if needed."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise ToolchainUnavailable(
            f"no npm anvil build wired up for {platform.system()}/{platform.machine()} (only linux-amd64)"
        )
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        raise ToolchainUnavailable("node/npm not found on PATH: cannot install anvil from npm")
    cache.mkdir(parents=True, exist_ok=True)
    anvil = cache / "anvil" / "node_modules" / "@foundry-rs" / "anvil-linux-amd64" / "bin" / "anvil"
    if not anvil.exists():
        (cache / "anvil").mkdir(exist_ok=True)
        _run(
            [
                npm,
                "install",
                "--no-save",
                "--no-audit",
                "--no-fund",
                "--cache",
                str(cache / "npm"),
                "--prefix",
                str(cache / "anvil"),
                ANVIL_PKG,
            ],
            cache,
        )
        if not anvil.exists():
            raise ToolchainUnavailable(f"{ANVIL_PKG} installed but has no bin/anvil")
    anvil.chmod(0o755)
    art_dir = cache / "artifacts"
    if not all((art_dir / f"{name}.json").exists() for name in ARTIFACTS):
        packs = cache / "packs"
        packs.mkdir(exist_ok=True)
        missing = [spec for tgz, spec in PACKS.items() if not (packs / tgz).exists()]
        if missing:
            _run([npm, "pack", "--cache", str(cache / "npm"), *missing], packs)
        art_dir.mkdir(exist_ok=True)
        for name, (tgz, member) in ARTIFACTS.items():
            with tarfile.open(packs / tgz) as tf:
                f = tf.extractfile(member)
                if f is None:
                    raise ToolchainUnavailable(f"{member} missing from {tgz}")
                data = json.loads(f.read())
            bytecode = data.get("bytecode")
            if isinstance(bytecode, dict):
                bytecode = bytecode.get("object")
            if not bytecode:
                bytecode = data.get("evm", {}).get("bytecode", {}).get("object", "")
            out = {"abi": data["abi"], "bytecode": bytecode if bytecode.startswith("0x") else "0x" + bytecode}
            (art_dir / f"{name}.json").write_text(json.dumps(out))
    return anvil, art_dir


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class RpcError(RuntimeError):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error


class Rpc:
    """Minimal JSON-RPC client (httpx)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._client = httpx.Client(timeout=60)
        self._id = 0

    def call(self, method: str, *params: Any) -> Any:
        self._id += 1
        resp = self._client.post(
            self.url, json={"jsonrpc": "2.0", "id": self._id, "method": method, "params": list(params)}
        )
        resp.raise_for_status()
        body = resp.json()
        if "error" in body:
            raise RpcError(body["error"])
        return body["result"]

    def close(self) -> None:
        self._client.close()


def selector(signature: str) -> bytes:
    return function_signature_to_4byte_selector(signature)


def calldata(signature: str, *args: Any) -> str:
    """ABI-encode a call: ``calldata("transfer(address,uint256)", to, amount)``."""
    types = arg_types(signature)
    return "0x" + (selector(signature) + encode(types, list(args))).hex()


@dataclass
class AnvilChain:
    """A running anvil node with Uniswap v3 deployed. ``addresses`` keys: weth, token6, token18,
    factory, npm, router02, quoter_v2; ``deployer`` is anvil's unlocked account 0."""

    chain_id: int
    url: str
    rpc: Rpc
    process: subprocess.Popen[bytes]
    artifacts: Path
    accounts: list[str]
    addresses: dict[str, str] = field(default_factory=dict)

    @property
    def deployer(self) -> str:
        return self.accounts[0]

    def abi(self, name: str) -> list[dict[str, Any]]:
        abi: list[dict[str, Any]] = json.loads((self.artifacts / f"{name}.json").read_text())["abi"]
        return abi

    def send(
        self, to: str | None, data: str, sender: str | None = None, value: int = 0, gas: int = 15_000_000
    ) -> dict[str, Any]:
        tx: dict[str, Any] = {
            "from": sender or self.deployer,
            "data": data,
            "gas": hex(gas),
            "value": hex(value),
        }
        if to is not None:
            tx["to"] = to
        tx_hash = self.rpc.call("eth_sendTransaction", tx)
        receipt: dict[str, Any] | None = None
        for _ in range(200):
            receipt = self.rpc.call("eth_getTransactionReceipt", tx_hash)
            if receipt is not None:
                break
            time.sleep(0.01)
        if receipt is None or int(receipt["status"], 16) != 1:
            raise RuntimeError(f"transaction failed: {tx_hash} {receipt}")
        return receipt

    def transact(
        self, to: str, signature: str, *args: Any, sender: str | None = None, gas: int = 15_000_000
    ) -> dict[str, Any]:
        return self.send(to, calldata(signature, *args), sender=sender, gas=gas)

    def call(
        self, to: str, signature: str, out_types: list[str], *args: Any, gas: int = 30_000_000
    ) -> tuple[Any, ...]:
        raw = self.rpc.call(
            "eth_call", {"to": to, "data": calldata(signature, *args), "gas": hex(gas)}, "latest"
        )
        return tuple(decode(out_types, bytes.fromhex(raw[2:])))

    def deploy(self, name: str, ctor_types: list[str] | None = None, *args: Any) -> str:
        bytecode: str = json.loads((self.artifacts / f"{name}.json").read_text())["bytecode"]
        data = bytecode + (encode(ctor_types, list(args)).hex() if ctor_types else "")
        receipt = self.send(None, data)
        return to_checksum_address(receipt["contractAddress"])

    def snapshot(self) -> str:
        snap: str = self.rpc.call("evm_snapshot")
        return snap

    def revert(self, snap: str) -> None:
        assert self.rpc.call("evm_revert", snap) is True

    def stop(self) -> None:
        self.rpc.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


def start_anvil(anvil: Path, artifacts: Path, chain_id: int) -> AnvilChain:
    port = free_port()
    proc = subprocess.Popen(
        [
            str(anvil),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--chain-id",
            str(chain_id),
            "--silent",
            "--gas-limit",
            "100000000",
            "--code-size-limit",
            "50000",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    rpc = Rpc(url)
    deadline = time.monotonic() + 15
    while True:
        try:
            if int(rpc.call("eth_chainId"), 16) == chain_id:
                break
        except (httpx.HTTPError, RpcError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            err = proc.stderr.read().decode()[-300:] if proc.stderr else ""
            raise ToolchainUnavailable(f"anvil did not start on port {port}: {err}")
        time.sleep(0.02)
    accounts = rpc.call("eth_accounts")
    return AnvilChain(chain_id, url, rpc, proc, artifacts, [to_checksum_address(a) for a in accounts])


def deploy_uniswap(chain: AnvilChain, mint_amount: int = 10**40) -> None:
    """Deploy WETH9, a 6- and an 18-decimals token, UniswapV3Factory, NonfungiblePositionManager,
    SwapRouter02 and QuoterV2; mint ``mint_amount`` of both tokens to the deployer and approve NPM
    and SwapRouter02."""
    me = chain.deployer
    a = chain.addresses
    a["weth"] = chain.deploy("WETH9")
    a["token6"] = chain.deploy("MintableERC20", ["string", "string", "uint8"], "USD Coin (test)", "USDC", 6)
    chain.transact(a["token6"], "addMinter(address)", me)
    a["token18"] = chain.deploy(
        "ERC20PresetMinterPauser", ["string", "string"], "Wrapped Ether (test)", "TETH"
    )
    a["factory"] = chain.deploy("UniswapV3Factory")
    a["npm"] = chain.deploy(
        "NonfungiblePositionManager", ["address", "address", "address"], a["factory"], a["weth"], ZERO_ADDRESS
    )
    a["router02"] = chain.deploy(
        "SwapRouter02",
        ["address", "address", "address", "address"],
        ZERO_ADDRESS,
        a["factory"],
        a["npm"],
        a["weth"],
    )
    a["quoter_v2"] = chain.deploy("QuoterV2", ["address", "address"], a["factory"], a["weth"])
    for tok in (a["token6"], a["token18"]):
        chain.transact(tok, "mint(address,uint256)", me, mint_amount)
        for spender in (a["npm"], a["router02"]):
            chain.transact(tok, "approve(address,uint256)", spender, MAX_UINT256)


def sorted_tokens(chain: AnvilChain) -> tuple[str, str]:
    t6, t18 = chain.addresses["token6"], chain.addresses["token18"]
    return (t6, t18) if int(t6, 16) < int(t18, 16) else (t18, t6)


def balance_of(chain: AnvilChain, token: str, owner: str) -> int:
    (bal,) = chain.call(token, "balanceOf(address)", ["uint256"], owner)
    return int(bal)


# ---- shared by the prepare / observe / session e2e tests -------------------------------------------------------

FEE = 500  # the local WETH/USDC pool's fee tier (0.05 %)
ETH_PRICE_USDC = 3120_550000  # USDC base units per 1e18 wei, as in the embedded snapshot


def across_artifact(name: str, folder: str | None = None) -> dict[str, Any]:
    """An artifact (abi, bytecode) from the Across contracts npm pack in the cache."""
    with tarfile.open(CACHE / "packs" / "across-protocol-contracts-5.0.27.tgz") as tf:
        f = tf.extractfile(f"package/dist/evm/artifacts/{folder or name}.sol/{name}.json")
        assert f is not None
        data: dict[str, Any] = json.loads(f.read())
    return data


def deploy_raw(chain: AnvilChain, artifact: dict[str, Any], types: list[str], *args: Any) -> str:
    code = artifact["bytecode"] if artifact["bytecode"].startswith("0x") else "0x" + artifact["bytecode"]
    receipt = chain.send(None, code + (encode(types, list(args)).hex() if types else ""))
    return str(to_checksum_address(receipt["contractAddress"]))


def deploy_all(chain: AnvilChain) -> dict[str, Any]:
    """Pool WETH/USDC (0.05 %) at the snapshot price with deep full-range liquidity, an Across SpokePool and
    a mock CCTP v2 messenger, deployed once per session node."""
    a = chain.addresses
    me = chain.deployer
    if "local_spoke" in a and chain.rpc.call("eth_getCode", a["mock_cctp"], "latest") not in ("0x", "0x0"):
        return a  # already deployed on this node (and not reverted away by another module's snapshot)
    weth, usdc = a["weth"], a["token6"]
    chain.send(weth, calldata("deposit()"), value=2000 * 10**18)
    chain.transact(weth, "approve(address,uint256)", a["npm"], MAX_UINT256)
    t0, t1 = sorted((weth, usdc), key=lambda x: int(x, 16))
    # price = token1 base units per token0 base unit
    num, den = (ETH_PRICE_USDC, 10**18) if t0 == weth else (10**18, ETH_PRICE_USDC)
    sqrt_price = isqrt(num * (1 << 192) // den)
    chain.transact(
        a["npm"],
        "createAndInitializePoolIfNecessary(address,address,uint24,uint160)",
        t0,
        t1,
        FEE,
        sqrt_price,
    )
    amt_weth, amt_usdc = 1000 * 10**18, 1000 * ETH_PRICE_USDC
    amounts = (amt_weth, amt_usdc) if t0 == weth else (amt_usdc, amt_weth)
    chain.transact(
        a["npm"],
        "mint((address,address,uint24,int24,int24,uint256,uint256,uint256,uint256,address,uint256))",
        (t0, t1, FEE, -887270, 887270, amounts[0], amounts[1], 0, 0, me, 2**40),
    )
    spoke_art = across_artifact("Arbitrum_SpokePool")
    impl = deploy_raw(
        chain,
        spoke_art,
        ["address", "uint32", "uint32", "address", "address", "uint32", "uint256", "address"],
        weth,
        3600,
        21600,
        ZERO_ADDRESS,
        ZERO_ADDRESS,
        0,
        0,
        ZERO_ADDRESS,
    )
    init = calldata("initialize(uint32,address,address,address)", 0, me, me, me)
    a["local_spoke"] = deploy_raw(
        chain, across_artifact("ERC1967Proxy"), ["address", "bytes"], impl, bytes.fromhex(init[2:])
    )
    minter = deploy_raw(chain, across_artifact("MockCCTPMinter", "MockCCTP"), [])
    a["mock_cctp"] = deploy_raw(
        chain, across_artifact("MockCCTPMessengerV2", "MockCCTP"), ["address", "address"], minter, me
    )
    return a


def sign_and_send(
    chain: AnvilChain,
    key: str,
    txs: list[dict[str, Any]],
    *,
    gas: int | None = None,
    raws: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The wallet side: fill nonce and fees, sign each prepared transaction, send, wait for its receipt. Without
    `gas` the gas is estimated and each transaction must succeed; with `gas` nothing is estimated, so a
    transaction that reverts is still mined (its receipt, status 0, is returned). `raws` collects each signed
    transaction as sent (a wallet that re-broadcasts after a reorg sends these same bytes again)."""
    receipts = []
    for tx in txs:
        sender = tx["from"]
        full = {
            "to": tx["to"],
            "value": int(tx["value"]),
            "data": tx["data"],
            "chainId": tx["chainId"],
            "type": 2,
            "nonce": int(chain.rpc.call("eth_getTransactionCount", sender, "pending"), 16),
            "maxPriorityFeePerGas": 10**6,
        }
        base_fee = int(chain.rpc.call("eth_getBlockByNumber", "latest", False)["baseFeePerGas"], 16)
        full["maxFeePerGas"] = 2 * base_fee + 10**6
        if gas is None:
            est = {"from": sender, "to": tx["to"], "value": hex(int(tx["value"])), "data": tx["data"]}
            full["gas"] = int(chain.rpc.call("eth_estimateGas", est), 16) * 12 // 10
        else:
            full["gas"] = gas
        raw = Account.sign_transaction(full, key).raw_transaction
        if raws is not None:
            raws.append("0x" + raw.hex())
        h = chain.rpc.call("eth_sendRawTransaction", "0x" + raw.hex())
        receipt = None
        for _ in range(500):
            receipt = chain.rpc.call("eth_getTransactionReceipt", h)
            if receipt is not None:
                break
            time.sleep(0.01)
        assert receipt is not None, f"{h} not mined"
        if gas is None:
            assert int(receipt["status"], 16) == 1, receipt
        receipts.append(receipt)
    return receipts
