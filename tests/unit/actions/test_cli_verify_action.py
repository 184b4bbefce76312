"""`routequote verify-action`: the offline verify-before-sign command, and the verification context helper."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path

from tests.unit.actions.support import FEE_RECIPIENTS, Prepared, make_env, prepare_route
from typer.testing import CliRunner

from routequote.cli import app
from routequote.verify import check_verification_context, verification_context

runner = CliRunner()


def _files(tmp_path: Path, p: Prepared) -> dict[str, str]:
    out = {}
    for name, value in (
        ("bundle", p.bundle),
        ("intent", p.intent),
        ("wallets", p.wallets),
        ("approval", p.approval),
        ("quote", p.quote),
    ):
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(value))
        out[name] = str(f)
    return out


def _args(f: dict[str, str], p: Prepared) -> list[str]:
    return [
        "verify-action",
        f["bundle"],
        "--intent",
        f["intent"],
        "--wallets",
        f["wallets"],
        "--approval",
        f["approval"],
        "--quote",
        f["quote"],
        "--fee-recipient-evm",
        FEE_RECIPIENTS["evm"],
        "--now",
        str(p.now_unix),
        "--json",
        # these bundles pay the development placeholder (the refusal: test_verify_action_refuses_...)
        "--accept-unconfigured-fee-recipient",
        # and their bounds are modelled from the embedded snapshot (test_verify_action_refuses_modelled_...)
        "--accept-modelled-bounds",
    ]


def test_verify_action_refuses_a_placeholder_fee_recipient_unless_accepted(tmp_path: Path) -> None:
    p = asyncio.run(prepare_route(make_env(), "base:USDC->arbitrum:USDC", 100))
    assert p.bundle["fee_recipient_configured"] is False
    f = _files(tmp_path, p)
    args = _args(f, p)
    refused = runner.invoke(app, [a for a in args if a != "--accept-unconfigured-fee-recipient"])
    assert refused.exit_code == 1, refused.output
    out = json.loads(refused.output)
    errors = [x["code"] for x in out["findings"] if x["severity"] == "error"]
    assert out["ok"] is False and errors == ["fee_recipient_not_configured"]
    # a server claiming `configured` while the receipt names the placeholder is refused as well
    lying = copy.deepcopy(p.bundle)
    lying["fee_recipient_configured"] = True
    Path(f["bundle"]).write_text(json.dumps(lying))
    refused = runner.invoke(app, [a for a in args if a != "--accept-unconfigured-fee-recipient"])
    codes = {x["code"] for x in json.loads(refused.output)["findings"]}
    assert refused.exit_code == 1 and "fee_recipient_not_configured" in codes
    Path(f["bundle"]).write_text(json.dumps(p.bundle))
    accepted = runner.invoke(app, args)
    assert accepted.exit_code == 0 and json.loads(accepted.output)["ok"] is True


def test_verify_action_accepts_honest_and_rejects_tampered(tmp_path: Path) -> None:
    p = asyncio.run(prepare_route(make_env(), "base:USDC->arbitrum:USDC", 100))
    f = _files(tmp_path, p)
    ok = runner.invoke(app, _args(f, p))
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["ok"] is True
    tampered = copy.deepcopy(p.bundle)
    tampered["unsigned_action"]["transactions"][-1]["to"] = "0x9999999999999999999999999999999999999999"
    Path(f["bundle"]).write_text(json.dumps(tampered))
    bad = runner.invoke(app, _args(f, p))
    assert bad.exit_code == 1
    codes = {x["code"] for x in json.loads(bad.output)["findings"]}
    assert "payload_sha256_mismatch" in codes and "target_not_allowed" in codes


def test_verify_action_with_verification_context(tmp_path: Path) -> None:
    p = asyncio.run(prepare_route(make_env(), "base:ETH->base:USDC", 100))
    ctx = verification_context(
        intent=p.intent,
        wallets=p.wallets,
        event_signer_public=None,
        approval_v3=p.approval,
        direct_route_summary=p.quote["direct_route_summary"],
    )
    assert ctx["version"] == "routequote-one-shot-verification-context-v1"
    assert check_verification_context(ctx) == []
    (tmp_path / "ctx.json").write_text(json.dumps(ctx))
    (tmp_path / "bundle.json").write_text(json.dumps(p.bundle))
    args = [
        "verify-action",
        str(tmp_path / "bundle.json"),
        "--context",
        str(tmp_path / "ctx.json"),
        "--now",
        str(p.now_unix),
        "--accept-unconfigured-fee-recipient",
        "--accept-modelled-bounds",
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    broken = {**ctx, "wallets": {"base": "0x4444444444444444444444444444444444444444"}}
    assert check_verification_context(broken) == ["verification_context_sha256_mismatch"]
    (tmp_path / "ctx.json").write_text(json.dumps(broken))
    assert runner.invoke(app, args).exit_code == 1
    other = {**ctx, "direct_route_summary": {**ctx["direct_route_summary"], "route": "x"}}
    assert "direct_route_summary_sha256_mismatch" in check_verification_context(other)


def test_verify_action_names_an_error_answer_with_its_reason(tmp_path: Path) -> None:
    p = asyncio.run(prepare_route(make_env(), "base:ETH->base:USDC", 100))
    f = _files(tmp_path, p)
    answer = {
        "error": "reapproval_required",
        "reason_class": "approval_v3_fingerprint_mismatch",
        "message": "the approval's quote_fingerprint differs from the issued quote",
        "action_created": False,
    }
    Path(f["bundle"]).write_text(json.dumps(answer))
    res = runner.invoke(app, _args(f, p))
    assert res.exit_code == 1
    findings = json.loads(res.output)["findings"]
    assert [x["code"] for x in findings] == ["error_answer_not_a_bundle"]  # not hash mismatches
    assert "reapproval_required, reason_class approval_v3_fingerprint_mismatch" in findings[0]["message"]
    assert "quote_fingerprint differs" in findings[0]["message"]
    # an agent channel's error object is named the same way
    Path(f["bundle"]).write_text(
        json.dumps({"error": {"code": "safety_boundary_failed", "message": "withheld"}})
    )
    text = runner.invoke(app, [a for a in _args(f, p) if a != "--json"])
    assert text.exit_code == 1 and "FAIL error_answer_not_a_bundle" in text.output
    assert "safety_boundary_failed: withheld" in text.output and "payload_sha256" not in text.output


def test_verify_action_checks_the_pinned_fee_recipients_syntax(tmp_path: Path) -> None:
    p = asyncio.run(prepare_route(make_env(), "base:ETH->base:USDC", 100))
    args = _args(_files(tmp_path, p), p)
    for option, bad in (
        ("--fee-recipient-evm", "0x1234"),
        ("--fee-recipient-evm", "DevFeeRecipientP1aceho1der11111111111111111"),
        ("--fee-recipient-solana", "0x00000000000000000000000000000000dEAdfeE1"),
        ("--fee-recipient-solana", "not-base58-0OIl"),
    ):
        pinned = [a for a in args if a not in ("--fee-recipient-evm", FEE_RECIPIENTS["evm"])] + [option, bad]
        res = runner.invoke(app, pinned)
        assert res.exit_code == 2, (option, bad, res.output)
        assert f"{option}: not a" in res.output
    ok = runner.invoke(app, [*args, "--fee-recipient-solana", FEE_RECIPIENTS["solana"]])
    assert ok.exit_code == 0, ok.output
