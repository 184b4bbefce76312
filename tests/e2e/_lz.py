"""LayerZero v2 on anvil for the USDG OFT send: real protocol code from the npm registry, installed at test time.

* `EndpointV2` and `SimpleMessageLib`: the published artifacts of `@layerzerolabs/lz-evm-protocol-v2@3.0.168`.
* The OFT: `OFTAdapter` of `@layerzerolabs/oft-evm@4.0.1` is abstract (no bytecode), so `UsdgOftAdapterLocal`
  below (this file's only Solidity: a constructor) makes it concrete; it is compiled by solc-js against the
  packages' own sources (`@layerzerolabs/oapp-evm@0.4.1`, `lz-evm-protocol-v2`, `lz-evm-messagelib-v2@3.0.168`,
  `@openzeppelin/contracts@5.0.2`), resolved import by import from the `npm pack` tarballs. Nothing is committed.

The service's prepared `send(SendParam, MessagingFee, refund)` then runs through the real OFTCore `_debit`
(the adapter pulls the exact approval), the real EndpointV2 `send` (fee taken, excess refunded) and emits the
real `OFTSent` and `PacketSent`. Delivery on Solana is out of reach offline (simulated in `_solana_sim`).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

from _evm import CACHE, AnvilChain, ToolchainUnavailable, deploy_raw
from _sessions import _COMPILE_JS, SOLC_PKG, compile_standins

LZ_PACKS = {
    "@layerzerolabs/lz-evm-protocol-v2": "layerzerolabs-lz-evm-protocol-v2-3.0.168.tgz",
    "@layerzerolabs/lz-evm-messagelib-v2": "layerzerolabs-lz-evm-messagelib-v2-3.0.168.tgz",
    "@layerzerolabs/oft-evm": "layerzerolabs-oft-evm-4.0.1.tgz",
    "@layerzerolabs/oapp-evm": "layerzerolabs-oapp-evm-0.4.1.tgz",
    "@openzeppelin/contracts": "openzeppelin-contracts-5.0.2.tgz",
}
LZ_SPECS = [
    "@layerzerolabs/lz-evm-protocol-v2@3.0.168",
    "@layerzerolabs/lz-evm-messagelib-v2@3.0.168",
    "@layerzerolabs/oft-evm@4.0.1",
    "@layerzerolabs/oapp-evm@0.4.1",
    "@openzeppelin/contracts@5.0.2",
]
ROOT_SOURCE = "UsdgOftAdapterLocal.sol"
ROOT_TEXT = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.22;
import { OFTAdapter } from "@layerzerolabs/oft-evm/contracts/OFTAdapter.sol";
import { Ownable } from "@openzeppelin/contracts/access/Ownable.sol";
// The concrete OFTAdapter of the local USDG (an ERC-20 already on chain): nothing but the constructor.
contract UsdgOftAdapterLocal is OFTAdapter {
    constructor(address token, address endpoint, address delegate)
        OFTAdapter(token, endpoint, delegate) Ownable(delegate) {}
}
"""
LZ_EID_SOLANA = 30168
NATIVE_FEE_WEI = 30_000_000_000_000  # what the local SimpleMessageLib charges (the service sends its maximum)
SOLANA_PEER = hashlib.sha256(b"routequote local USDG OFT peer on solana").digest()
_IMPORT = re.compile(r'import\s+(?:[^"\']*?from\s+)?["\']([^"\']+)["\']\s*;', re.S)


def _packs() -> Path:
    packs = CACHE / "packs"
    packs.mkdir(parents=True, exist_ok=True)
    missing = [
        spec for spec, tgz in zip(LZ_SPECS, LZ_PACKS.values(), strict=True) if not (packs / tgz).exists()
    ]
    if missing:
        npm = shutil.which("npm")
        if npm is None:
            raise ToolchainUnavailable("npm not found: cannot fetch the LayerZero packages")
        proc = subprocess.run(
            [npm, "pack", "--cache", str(CACHE / "npm"), *missing],
            cwd=packs,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            raise ToolchainUnavailable(f"npm pack failed (offline?): {proc.stderr.strip()[-300:]}")
    return packs


def _member(packs: Path, package: str, rest: str) -> str:
    with tarfile.open(packs / LZ_PACKS[package]) as tf:
        f = tf.extractfile(f"package/{rest}")
        if f is None:
            raise ToolchainUnavailable(f"{rest} missing from {package}")
        return f.read().decode()


def _split(unit: str) -> tuple[str, str]:
    for package in LZ_PACKS:
        if unit.startswith(package + "/"):
            return package, unit[len(package) + 1 :]
    raise ToolchainUnavailable(f"import outside the pinned packages: {unit}")


def _sources(packs: Path) -> dict[str, dict[str, str]]:
    """The root source and every file it imports, transitively, under their import names."""
    sources: dict[str, dict[str, str]] = {ROOT_SOURCE: {"content": ROOT_TEXT}}
    todo = [ROOT_SOURCE]
    while todo:
        unit = todo.pop()
        for imp in _IMPORT.findall(sources[unit]["content"]):
            name = (
                posixpath.normpath(posixpath.join(posixpath.dirname(unit), imp))
                if imp.startswith(".")
                else imp
            )
            if name not in sources:
                package, rest = _split(name)
                sources[name] = {"content": _member(packs, package, rest)}
                todo.append(name)
    return sources


def _artifact(packs: Path, package: str, rest: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_member(packs, package, rest))
    return data


def compile_oft_adapter() -> dict[str, Any]:
    """{"abi", "bytecode"} of `UsdgOftAdapterLocal`, compiled once and cached in the npm cache."""
    packs = _packs()
    sources = _sources(packs)
    digest = hashlib.sha256(json.dumps([SOLC_PKG, sources], sort_keys=True).encode()).hexdigest()[:16]
    out_file = CACHE / "standins" / f"oft-adapter-{digest}.json"
    if out_file.exists():
        cached: dict[str, Any] = json.loads(out_file.read_text())
        return cached
    compile_standins()  # installs solc-js into the cache when missing
    node = shutil.which("node")
    if node is None:
        raise ToolchainUnavailable("node not found: cannot run solc-js")
    standard = {
        "language": "Solidity",
        "sources": sources,
        "settings": {
            "optimizer": {"enabled": True, "runs": 200},
            "evmVersion": "cancun",
            "outputSelection": {ROOT_SOURCE: {"UsdgOftAdapterLocal": ["abi", "evm.bytecode.object"]}},
        },
    }
    proc = subprocess.run(
        [node, "-e", _COMPILE_JS, str(CACHE / "solc" / "node_modules" / "solc")],
        input=json.dumps(standard),
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0:
        raise ToolchainUnavailable(f"solc-js failed: {proc.stderr.strip()[-500:]}")
    result = json.loads(proc.stdout)
    errors = [e for e in result.get("errors", []) if e.get("severity") == "error"]
    if errors:
        raise AssertionError(
            "the OFT adapter does not compile:\n" + "\n".join(e["formattedMessage"] for e in errors)
        )
    c = result["contracts"][ROOT_SOURCE]["UsdgOftAdapterLocal"]
    out = {"abi": c["abi"], "bytecode": "0x" + c["evm"]["bytecode"]["object"]}
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(json.dumps(out))
    return out


def deploy_layerzero(chain: AnvilChain, local_eid: int) -> dict[str, str]:
    """EndpointV2 + SimpleMessageLib (the default send library towards Solana, charging NATIVE_FEE_WEI) and the
    USDG OFT adapter over the chain's 6-decimals token, peered with a Solana OApp. Returns the addresses."""
    packs = _packs()
    adapter_art = compile_oft_adapter()
    endpoint_art = _artifact(
        packs, "@layerzerolabs/lz-evm-protocol-v2", "artifacts/contracts/EndpointV2.sol/EndpointV2.json"
    )
    lib_art = _artifact(
        packs,
        "@layerzerolabs/lz-evm-protocol-v2",
        "artifacts/contracts/messagelib/SimpleMessageLib.sol/SimpleMessageLib.json",
    )
    me = chain.deployer
    endpoint = deploy_raw(chain, endpoint_art, ["uint32", "address"], local_eid, me)
    lib = deploy_raw(chain, lib_art, ["address", "address"], endpoint, me)
    chain.transact(endpoint, "registerLibrary(address)", lib)
    chain.transact(endpoint, "setDefaultSendLibrary(uint32,address)", LZ_EID_SOLANA, lib)
    chain.transact(lib, "setMessagingFee(uint256,uint256)", NATIVE_FEE_WEI, 0)
    adapter = deploy_raw(
        chain, adapter_art, ["address", "address", "address"], chain.addresses["token6"], endpoint, me
    )
    chain.transact(adapter, "setPeer(uint32,bytes32)", LZ_EID_SOLANA, SOLANA_PEER)
    return {"lz_endpoint": endpoint, "lz_lib": lib, "usdg_oft": adapter}
