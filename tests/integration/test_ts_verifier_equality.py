"""The TypeScript verifier (clients/typescript/src/verify) gives the Python verifier's verdict and findings on
every entry of the shared vectors (tests/support/ts_vectors.py): the first action of every route and a later
step of each kind of session step, at two amounts, the CCTP mints on EVM and on Solana
(ts_vectors_mint.py) and the ERC-4337 settlement plan (ts_vectors_4337.py), with tampered variants of each,
re-hashed and not."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.support.ts_package import built_package, run
from tests.support.ts_vectors import corpus

# the kinds the TypeScript verifier checks (keep in step with clients/typescript/src/verify)
PORTED = {
    "evm:uniswap_v3",
    "evm:across_intent_bridge",
    "evm:circle_cctp",
    "evm:paxos_usdg_layerzero_oft->solana",
    "evm:circle_cctp->solana",
    "solana:circle_cctp->evm",
    "solana:orca_whirlpool",
    "solana:raydium_clmm",
    "cctp_receive:evm",
    "cctp_receive:solana",
    "erc4337_settlement",
}
NOT_PORTED_CODE = "verifier_kind_not_ported"

pytestmark = pytest.mark.node


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    built_package()
    entries = asyncio.run(corpus())
    path: Path = tmp_path_factory.mktemp("ts_vectors") / "corpus.json"
    path.write_text(json.dumps(entries))
    done = run([str(shutil.which("node")), "scripts/verify-corpus.mjs", str(path)], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return entries, json.loads(done.stdout)


def test_typescript_verifier_agrees_with_python_on_ported_kinds(
    verdicts: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    entries, ts = verdicts
    ported = [e for e in entries if e["kind"] in PORTED]
    assert {e["kind"] for e in ported} == PORTED
    # the corpus exercises refusals as well as acceptances on every ported kind
    for kind in PORTED:
        ok = [e for e in ported if e["kind"] == kind and not any(s == "error" for _, s in e["python"])]
        refused = [e for e in ported if e["kind"] == kind and any(s == "error" for _, s in e["python"])]
        assert ok and refused, kind
    # ... and a later step (a session's next action, checked against the verified actual input) of each
    later = {e["kind"] for e in ported if "#" in e["id"]}
    assert later == PORTED, PORTED - later
    differ = [(e["id"], e["python"], ts[e["id"]]) for e in ported if ts[e["id"]] != e["python"]]
    assert not differ, f"{len(differ)} of {len(ported)} differ, e.g. {differ[:3]}"


def test_every_kind_in_the_corpus_is_ported(
    verdicts: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    """Every action kind the service prepares is checked by the port: none is left to `verifier_kind_not_ported`
    (which stays the answer for a kind a future service version adds before the port does)."""
    entries, ts = verdicts
    assert {e["kind"] for e in entries} == PORTED
    refused = [e["id"] for e in entries if NOT_PORTED_CODE in [c for c, _ in ts[e["id"]]]]
    assert not refused, refused[:5]


# the entries that are not tampered: as prepared or built; a mint (which has no market bounds) checked with
# modelled bounds refused; a settlement plan checked with the caller's clock a little before it was built
UNTAMPERED = ("as_prepared", "as_built", "caller_early")


def test_every_tampered_entry_is_refused(verdicts: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    """Agreement alone would pass two verifiers that both miss a tamper: every tampered variant is refused (an
    error finding) by both. A stated fee recipient on a Solana mint that pays no fee was accepted before the
    mint check refused it as the EVM one does (`receive_spends`)."""
    entries, ts = verdicts

    def refused(findings: list[list[str]]) -> bool:
        return any(severity == "error" for _, severity in findings)

    def untampered(e: dict[str, Any]) -> bool:
        variant = e["id"].rsplit(":", 1)[-1]
        no_bounds = variant == "modelled_bounds_not_accepted" and e["kind"].startswith("cctp_receive:")
        return variant in UNTAMPERED or no_bounds

    tampered = [e for e in entries if not untampered(e)]
    assert len(tampered) > len(entries) * 0.9
    passed = [e["id"] for e in tampered if not refused(e["python"]) or not refused(ts[e["id"]])]
    assert not passed, f"{len(passed)} tampered entries pass a verifier, e.g. {passed[:5]}"
