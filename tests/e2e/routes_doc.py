"""Render `docs/routes.md` from the whole-route suite's results (`tests/recordings/routes/route_results.json`).

`make routes-doc` runs the suite with RQ_UPDATE_ROUTES=1 (which writes the results) and then this file;
`tests/unit/test_routes_doc.py` checks that the committed page equals what this renders from the committed
results. Never edit docs/routes.md by hand.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "recordings" / "routes" / "route_results.json"
PAGE = ROOT / "docs" / "routes.md"
SUMMARY = ROOT / "src" / "routequote" / "data" / "route_proof.json"  # what /v2/capabilities shows

REAL = "real protocol bytecode"
STAND_IN = "stand-in"
LITESVM_SIM = "LiteSVM + simulated program"
SOLANA_VM = (
    "the run's one LiteSVM (SPL Token, Token-2022, ATA and System instructions executed; balances read from its "
    "accounts)"
)
IRIS = "Iris played by the test: the emitted message, its fee from the test's own schedule"


def _swap(venue: str, sdk: str) -> str:
    return (
        f"{LITESVM_SIM}: {SOLANA_VM}; {venue} swap_v2 simulated: output from {sdk} math on the priced pool state, "
        "the instruction's amount and minimum enforced (below it the transaction fails); the instruction is "
        "SDK-equal (tests/integration/test_solana_swap_sdk_equality.py)"
    )


# Every executor of the route harness (`_routes.py`), by the id it records for the step side it ran:
# (step kind, side, how it ran and where a simulated number comes from). The table's labels are derived from
# these ids only; tests/unit/test_routes_doc.py holds every committed label to them.
EXECUTORS: dict[str, tuple[str, str, str]] = {
    "evm_uniswap_v3": (
        "uniswap_v3",
        "source",
        f"{REAL}: Uniswap v3 SwapRouter02 + pool (npm @uniswap/v3-core, swap-router-contracts)",
    ),
    "evm_across_deposit": (
        "across_intent_bridge",
        "source",
        f"{REAL}: Across SpokePool deposit (npm @across-protocol/contracts)",
    ),
    "evm_across_fill": (
        "across_intent_bridge",
        "destination",
        f"{REAL}: SpokePool fillRelay, the test as the relayer",
    ),
    "evm_cctp_burn_standin": (
        "circle_cctp",
        "source",
        f"{STAND_IN}: TokenMessengerV2 stand-in (solc at test time)",
    ),
    "evm_cctp_mint_standin": (
        "circle_cctp",
        "destination",
        f"{STAND_IN}: MessageTransmitterV2 stand-in receiveMessage. {IRIS}",
    ),
    "solana_cctp_burn_simulated": (
        "circle_cctp",
        "source",
        f"{LITESVM_SIM}: {SOLANA_VM}; deposit_for_burn simulated from its instruction data (the amount burned from "
        "the named token account, the MessageSent account written)",
    ),
    "solana_cctp_mint_simulated": (
        "circle_cctp",
        "destination",
        f"{LITESVM_SIM}: {SOLANA_VM}; the prepared receive_message, signed by the caller, simulated: only Iris's "
        "attested message, once per nonce, minting what that message says; accounts SDK-equal "
        f"(tests/integration/test_cctp_solana_sdk_equality.py). {IRIS}",
    ),
    "evm_oft_send": (
        "paxos_usdg_layerzero_oft",
        "source",
        f"{REAL}: LayerZero EndpointV2 + SimpleMessageLib (npm), OFTAdapter compiled from npm sources",
    ),
    "solana_oft_delivery_simulated": (
        "paxos_usdg_layerzero_oft",
        "destination",
        f"{LITESVM_SIM}: {SOLANA_VM}; lz_receive simulated for the PacketSent emitted on anvil (GUID, amount, "
        "recipient decoded by the test), found through a fake LayerZero Scan",
    ),
    "solana_raydium_simulated": (
        "raydium_clmm",
        "source",
        _swap("raydium_clmm", "@raydium-io/raydium-sdk-v2"),
    ),
    "solana_orca_simulated": (
        "orca_whirlpool",
        "source",
        _swap("orca_whirlpool", "@orca-so/whirlpools-core"),
    ),
}


def labels(provider: str, executors: dict[str, str]) -> dict[str, str]:
    """The proof labels of one step, from the executors that ran its sides (each must be one of that kind's)."""
    out = {}
    for side, executor in executors.items():
        kind, where, text = EXECUTORS[executor]
        assert (kind, where) == (provider, side), f"{executor} cannot run the {side} of {provider}"
        out[side] = text
    return out


LEGEND = """\
How a step side ran in the suite:

- **real protocol bytecode**: the protocol's own contracts from the npm registry, executed on anvil.
- **stand-in**: a test contract with the protocol's real function and event signatures and message layout
  (`tests/e2e/standins/`), because no registry ships the protocol's bytecode (Circle CCTP v2).
- **LiteSVM + simulated program**: one LiteSVM per route run holds the wallet's, the configured fee
  recipient's and Circle's token accounts for all of the run's Solana transactions; the SPL instructions
  execute in it and every Solana amount held against a receipt is read from its accounts. The program no
  package ships is simulated from its instruction's own data: a swap pays the venue SDK's output on the priced
  pool state and fails below the instruction's minimum; a CCTP mint or OFT delivery mints what the source
  chain's message says (decoded by the test). The `getTransaction` answer is read off the VM for the real
  observer.
- **SDK-equal**: where no binary can be had offline, the instruction equals the venue's own SDK output over
  generated cases (named per step kind).
- **not run**: with the reason.

Solana arrivals are bound to their bridge message: arrivals the bridge did not make (a plain transfer, another
session's mint, the same mint twice, a mint to another recipient, another GUID's delivery, a failed transaction;
on EVM an ERC-20 transfer in place of an Across fill or a CCTP mint) are refused with the session unchanged
(`tests/e2e/test_routes_hostile.py`). An EVM step paying less than the caller's approved route minimum needs
answers 409 `reapproval_required` with `funds` and `quote_from_here`; on Solana the least Circle can mint
(amount - maxFee) completes, and the caller's verifier refuses a burn whose maxFee could breach a stronger
approval (`tests/e2e/test_routes_below_minimum.py`). Circle's fee comes from the test's own schedule; runs with
another fee than quoted deliver what the attested message says (`test_routes.py`). The USDG OFT program on Solana is not
pinned by this build: the suite configures a labelled placeholder program id for its simulated `lz_receive`.
"""


def _steps_text(steps: list[dict[str, Any]]) -> str:
    parts = []
    for s in steps:
        sides = " → ".join(s[side].split(":")[0] for side in ("source", "destination") if side in s)
        parts.append(f"{s['index']}. `{s['provider']}` ({sides})")
    return "<br>".join(parts)


BRIDGES = ("across_intent_bridge", "circle_cctp", "paxos_usdg_layerzero_oft")
NOT_RUN_ENV = "RQ_ROUTES_NOT_RUN_REASON"


def check_evidence(doc: dict[str, Any]) -> None:
    """Every complete run carries its evidence and every label is the one its executor has: the commit, per step
    the executors that ran each side (a bridge has two), the labels they give, the amounts measured and the
    transaction ids. Raises AssertionError naming the first run that does not."""
    assert doc.get("commit"), "the results name no commit"
    for group in ("runs", "live_runs"):
        for key, run in doc.get(group, {}).items():
            if group == "live_runs":
                assert run["status"] == "complete", f"{key}: the live-market run is {run['status']}"
            if run["status"] != "complete":
                continue
            for s in run["steps"]:
                where = f"{group} {key} step {s['index']}"
                sides = {"source", "destination"} if s["provider"] in BRIDGES else {"source"}
                assert set(s.get("executors", {})) == sides, f"{where}: executors {s.get('executors')}"
                want = labels(s["provider"], s["executors"])
                got = {side: s.get(side) for side in ("source", "destination") if side in s}
                assert got == want, f"{where}: the label is not its executor's"
                m = s.get("measured", {})
                assert all(
                    isinstance(m.get(k), int) for k in ("input_base", "output_base", "service_fee_base")
                ), where
                assert s.get("source_tx_ids"), f"{where}: no source transaction"
                assert s["provider"] not in BRIDGES or s.get("destination_tx_ids"), f"{where}: no delivery"


def render(doc: dict[str, Any], declared_not_run: str | None = None) -> str:
    runs: dict[str, dict[str, Any]] = doc["runs"]
    live_runs: dict[str, dict[str, Any]] = doc.get("live_runs", {})
    amounts = doc["amounts_usd"]
    routes: dict[str, dict[int, dict[str, Any]]] = {}
    for key, run in runs.items():
        name, amount = key.rsplit(" $", 1)
        live = live_runs.get(key)
        routes.setdefault(name, {})[int(amount)] = (
            {**live, "embedded_reason": run.get("reason")}
            if run["status"] != "complete" and live is not None
            else run
        )
    complete = [n for n, by in routes.items() if all(by[a]["status"] == "complete" for a in amounts)]
    on_live = [n for n in complete if any("market" in by[a] for a in amounts for by in [routes[n]])]
    kinds: dict[tuple[str, str, str], dict[str, str]] = {}
    for by in routes.values():
        for run in by.values():
            if run["status"] == "complete":
                for s in run["steps"]:
                    kinds.setdefault((s["provider"], s["source"], s.get("destination", "-")), s)
    ran = {k[0] for k in kinds}
    for by in routes.values():
        for s in by[amounts[0]]["steps"]:
            if s["provider"] not in ran:
                kinds.setdefault(
                    (s["provider"], "not run", "-"),
                    {
                        "source": "not run: no session can carry it yet (its simulator is checked against the observer in `tests/e2e/test_solana_swap_simulator.py`)"
                    },
                )
    lines = [
        "# Route proof table",
        "",
        "<!-- generated by tests/e2e/routes_doc.py from tests/recordings/routes/route_results.json: do not edit;"
        " regenerate with `make routes-doc` -->",
        "",
        f"Every route is run by `tests/e2e/test_routes.py` at {' and '.join(f'${a:,}' for a in amounts)}: a "
        "session created over REST, each prepared action checked by the caller's verifier, signed by a test "
        "wallet and executed, observed by the service's own observers until `complete`, with each step's "
        "amounts held against the chain. The results (`tests/recordings/routes/route_results.json`) carry, per "
        "route and amount, the executors that ran each step, the amounts measured and the transaction ids; "
        f"measured at commit `{doc.get('commit', 'unknown')}`.",
        "",
        *(
            [
                f"**This build did not run the chain suite**: {declared_not_run} (declared in `{NOT_RUN_ENV}`).",
                "",
            ]
            if declared_not_run
            else []
        ),
        f"**{len(complete)} of {len(routes)} routes complete at every amount** "
        + (
            f"({len(complete) - len(on_live)} on the embedded snapshot, the default market, and {len(on_live)} only on "
            "a live market read from recorded upstream answers). "
            if on_live
            else "on the embedded snapshot (the default market). "
        )
        + (
            f"The {len(live_runs) // len(amounts)} routes through a Raydium or Orca swap also complete on a live "
            "market read from recorded upstream answers. "
            if live_runs
            else ""
        )
        + f"{len(routes) - len(complete)} are not run (reason per route below).",
        "",
        LEGEND,
        "## Step kinds",
        "",
        "| step kind | source side | destination side |",
        "|---|---|---|",
    ]
    for (provider, _source, _destination), s in sorted(kinds.items()):
        lines.append(f"| `{provider}` | {s['source']} | {s.get('destination', '-')} |")
    lines += ["", "## Routes", "", "| route | " + " | ".join(f"${a:,}" for a in amounts) + " | steps |"]
    lines.append("|---|" + "---|" * len(amounts) + "---|")
    for name, by in routes.items():
        cells = []
        for a in amounts:
            run = by[a]
            if run["status"] != "complete":
                cells.append(f"not run: {run.get('reason', '')}")
            elif "market" in run:
                cells.append(f"complete on a {run['market']} market")
            else:
                cells.append("complete")
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {_steps_text(by[amounts[0]]['steps'])} |")
    return "\n".join(lines) + "\n"


def summary(doc: dict[str, Any]) -> dict[str, Any]:
    """The short form served in `/v2/capabilities` (`sessions.route_proof`): counts and how each step kind ran."""
    amounts = doc["amounts_usd"]
    names = sorted({k.rsplit(" $", 1)[0] for k in doc["runs"]})

    def run_of(name: str, a: int) -> dict[str, Any]:
        run: dict[str, Any] = doc["runs"][f"{name} ${a}"]
        live = doc.get("live_runs", {}).get(f"{name} ${a}")
        return live if run["status"] != "complete" and live is not None else run

    done = [n for n in names if all(run_of(n, a)["status"] == "complete" for a in amounts)]
    live = [n for n in done if any("market" in run_of(n, a) for a in amounts)]
    kinds: dict[tuple[str, str, str], dict[str, str]] = {}
    for n in done:
        for a in amounts:
            for s in run_of(n, a)["steps"]:
                row = {
                    "provider": s["provider"],
                    "source": s["source"],
                    "destination": s.get("destination", ""),
                }
                kinds.setdefault((row["provider"], row["source"], row["destination"]), row)
    return {
        "document": "docs/routes.md",
        "suite": "tests/e2e/test_routes.py",
        "amounts_usd": amounts,
        "routes": len(names),
        "routes_complete_at_every_amount": len(done),
        "of_which_on_a_live_market_from_recorded_upstreams": len(live),
        "step_kinds": [kinds[k] for k in sorted(kinds)],
        "labels": "real protocol bytecode = the protocol's contracts from a package registry executed on a local "
        "chain; stand-in = a test contract with the protocol's signatures and message layout; LiteSVM + simulated "
        "program = SPL instructions executed in one LiteSVM per route run, the unavailable program's effect applied "
        "by the test from the instruction's data, the venue SDK's math or the source chain's message (never an "
        "execution of that program)",
    }


def main() -> int:
    doc = json.loads(RESULTS.read_text())
    check_evidence(doc)
    PAGE.write_text(render(doc, os.environ.get(NOT_RUN_ENV, "").strip() or None))
    SUMMARY.write_text(json.dumps(summary(doc), indent=1, sort_keys=True) + "\n")
    print(f"wrote {PAGE.relative_to(ROOT)} and {SUMMARY.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
