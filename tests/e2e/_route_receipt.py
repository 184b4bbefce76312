"""The route suite's receipt check: every step's receipt against what the chains measured (`_routes.Run`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from routes_doc import labels

if TYPE_CHECKING:
    from _routes import Run


def check_receipt(run: Run) -> list[dict[str, Any]]:
    """Every step: output >= its minimum, the receipt's amounts = the measured balance changes; the 1 bp service
    fee at exactly one step. Returns the per-step record for the results file."""
    rc = run.receipt()
    steps = rc["steps"]
    session_steps = run.world.api.read(run.sid, run.token)["steps"]
    assert len(steps) == len(run.route.steps) == len(run.outcomes)
    fee_steps = []
    out = []
    for step, got, measured, live in zip(run.route.steps, steps, run.outcomes, session_steps, strict=True):
        actual = got["actual"]
        minimum = int(live.get("minimum_output_base") or got["quoted"]["minimum_output_base"])
        output, inp = int(actual["output_base"]), int(actual["input_base"])
        where = f"{run.route_name} ${run.amount_usd} step {step.index} ({step.provider.value})"
        assert output >= minimum, f"{where}: output {output} < minimum {minimum}"
        assert output == measured.measured_output, (
            f"{where}: receipt output {output} != chain {measured.measured_output}"
        )
        assert inp == measured.measured_input, (
            f"{where}: receipt input {inp} != chain {measured.measured_input}"
        )
        src_ids = [i.lower() if i.startswith("0x") else i for i in actual["source_tx_ids"] or []]
        assert src_ids == measured.source_ids, f"{where}: source ids {src_ids} != {measured.source_ids}"
        dst_ids = [i.lower() if i.startswith("0x") else i for i in actual.get("destination_tx_ids") or []]
        assert dst_ids == measured.destination_ids, (
            f"{where}: destination ids {dst_ids} != {measured.destination_ids}"
        )
        fee = int(actual["service_fee_paid_base"])
        assert fee == measured.measured_fee, (
            f"{where}: receipt fee {fee} != fee recipient's {measured.measured_fee}"
        )
        if fee:
            fee_steps.append(step.index)
            assert fee == inp // 10_000, f"{where}: fee {fee} is not 1 bp of the input {inp}"
            assert step.fee_step, where
        out.append(
            {
                "index": step.index,
                "provider": step.provider.value,
                "executors": measured.executors,
                **labels(step.provider.value, measured.executors),
                "measured": {"input_base": inp, "output_base": output, "service_fee_base": fee},
                "source_tx_ids": measured.source_ids,
                "destination_tx_ids": measured.destination_ids,
            }
        )
    assert fee_steps == [next(s.index for s in run.route.steps if s.fee_step)], (run.route_name, fee_steps)
    route = rc["route"]
    assert route["complete"] is True and route["at_or_above_minimum"] is True
    assert int(route["actual_output_base"]) == run.outcomes[-1].measured_output
    return out
