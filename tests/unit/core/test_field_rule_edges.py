"""The edges of each shared field rule of core/field_rules.py, pinned with values written out here (never computed
by the rule), and the check that no other file of src/ restates one of these rules in another spelling."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter
from solders.signature import Signature

from routequote.core import field_rules as fr
from routequote.core.auth import signature_valid
from routequote.surfaces import mcp_inputs, mcp_v2

SRC = Path(__file__).resolve().parents[3] / "src" / "routequote"
HOME = SRC / "core" / "field_rules.py"

LOWER = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
UPPER = "0F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"  # no 0, O, I, l


# ---- UUIDs -------------------------------------------------------------------------------------------


def test_the_v2_uuid_is_lower_case_the_v1_shape_takes_either_case() -> None:
    assert fr.UUID_RE.fullmatch(LOWER) and not fr.UUID_RE.fullmatch(UPPER)
    assert fr.V1_UUID_RE.fullmatch(LOWER) and fr.V1_UUID_RE.fullmatch(UPPER)
    assert fr.V1_UUID_RE.fullmatch("0F1E2D3C-4b5a-4968-8776-a5b4c3d2e1f0")  # mixed, as RFC 4122 reads it
    for bad in (LOWER[:-1], LOWER + "0", LOWER.replace("-", ""), "{" + LOWER + "}", LOWER.replace("f", "g")):
        assert not fr.UUID_RE.fullmatch(bad) and not fr.V1_UUID_RE.fullmatch(bad), bad


def test_the_issued_ids_are_version_4_lower_case() -> None:
    assert fr.ISSUED_UUID4_RE.fullmatch(LOWER)
    assert not fr.ISSUED_UUID4_RE.fullmatch(UPPER)
    assert not fr.ISSUED_UUID4_RE.fullmatch("0f1e2d3c-4b5a-1968-8776-a5b4c3d2e1f0")  # version 1
    assert not fr.ISSUED_UUID4_RE.fullmatch("0f1e2d3c-4b5a-4968-c776-a5b4c3d2e1f0")  # variant c: not RFC 4122
    assert all(fr.ISSUED_UUID4_RE.fullmatch(str(uuid.uuid4())) for _ in range(50))


def test_the_tool_shapes_take_the_named_uuid_rules() -> None:
    v1 = TypeAdapter(mcp_inputs.V1Uuid).json_schema()
    v2 = TypeAdapter(mcp_v2.SessionId).json_schema()
    assert v1["pattern"] == "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    assert v2["pattern"] == "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
    assert v1["format"] == v2["format"] == "uuid"


# ---- idempotency keys ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("a" * 8, True),
        ("a" * 7, False),
        ("a" * 128, True),
        ("a" * 129, False),
        ("AZaz09._:-", True),
        ("abcdefg/", False),
        ("abcd efgh", False),
        ("abcdefgh\n", False),
        ("abcdefgé", False),
        ("abcdefg+", False),
    ],
)
def test_the_idempotency_key_edges(key: str, ok: bool) -> None:
    assert fr.is_idempotency_key(key) is ok
    adapter = TypeAdapter(mcp_inputs.IdempotencyKey)  # the v1 and v2 tools' shape: the same rule
    assert (adapter.validate_python(key) == key) if ok else _refused(adapter, key)


def test_the_tool_idempotency_key_carries_the_pattern() -> None:
    schema = TypeAdapter(mcp_inputs.IdempotencyKey).json_schema()
    assert schema == {
        "type": "string",
        "minLength": 8,
        "maxLength": 128,
        "pattern": "^[A-Za-z0-9._:-]{8,128}$",
    }
    assert schema == fr.IDEMPOTENCY_KEY_SCHEMA


def _refused(adapter: TypeAdapter[str], value: str) -> bool:
    try:
        adapter.validate_python(value)
    except ValueError:
        return True
    return False


# ---- Solana signatures ---------------------------------------------------------------------------------


def test_a_signature_is_64_to_88_base58_characters() -> None:
    zero = "1" * 64  # 64 zero bytes
    top = "67rpwLCuS5DGA8KGZXKsVQ7dnPb9goRLoKfgGbLfQg9WoLUgNY77E2jT11fem3coV9nAkguBACzrU1iyZM4B8roQ"  # 2**512 - 1
    assert len(top) == 88 and str(Signature(b"\xff" * 64)) == top and str(Signature(bytes(64))) == zero
    assert fr.SOLANA_SIGNATURE_RE.fullmatch(zero) and fr.SOLANA_SIGNATURE_RE.fullmatch(top)
    assert not fr.SOLANA_SIGNATURE_RE.fullmatch("1" * 63)
    assert not fr.SOLANA_SIGNATURE_RE.fullmatch(top + "1")
    for ch in "0OIl+/":
        assert not fr.SOLANA_SIGNATURE_RE.fullmatch(ch + top[1:]), ch
    assert re.fullmatch(fr.TRANSACTION_ID_PATTERN, top) and not re.fullmatch(
        fr.TRANSACTION_ID_PATTERN, top + "1"
    )


@given(st.binary(min_size=64, max_size=64))
def test_every_64_byte_signature_is_within_the_rule(raw: bytes) -> None:
    text = str(Signature(raw))
    assert 64 <= len(text) <= 88 and set(text) <= set(B58)
    assert fr.SOLANA_SIGNATURE_RE.fullmatch(text)


def test_the_v1_signature_shape_is_the_spec_table_width() -> None:
    assert fr.is_v1_signature_shape("1" * 64) and fr.is_v1_signature_shape("1" * 128)
    assert not fr.is_v1_signature_shape("1" * 63) and not fr.is_v1_signature_shape("1" * 129)
    assert not fr.is_v1_signature_shape(None) and not fr.is_v1_signature_shape(b"1" * 64)
    assert TypeAdapter(mcp_inputs.Signature).json_schema() == {
        "type": "string",
        "minLength": 64,
        "maxLength": 128,
    }
    # what the v1 shape admits beyond 88 characters is no signature: refused by the rule, never verified
    assert not signature_valid(wallet="11111111111111111111111111111111", message="m", signature="2" * 100)


def test_the_v1_wallet_shape_is_the_spec_table_width() -> None:
    assert TypeAdapter(mcp_inputs.SourceWallet).json_schema() == {
        "type": "string",
        "minLength": 32,
        "maxLength": 64,
    }
    assert re.fullmatch(fr.SOLANA_ADDRESS_PATTERN, "1" * 32) and not re.fullmatch(
        fr.SOLANA_ADDRESS_PATTERN, "1" * 45
    )


# ---- one home ------------------------------------------------------------------------------------------

# Each rule in any spelling: a UUID's 8-hex group, a base58 run with a length, the idempotency key's or a
# signature's bounds written as numbers.
RESTATED = {
    "uuid": re.compile(r"\{8\}-"),
    "base58 run with a length": re.compile(r"1-9A-HJ-NP-Za-km-z\]\{\d"),
    "idempotency key bounds": re.compile(r"\{8,128\}|(min_length|minLength\"?:?)\s*=?\s*8\b.{0,40}\b128\b"),
    "signature bounds": re.compile(r"\b64\b.{0,30}\b(88|128)\b"),
}
# rules of other things that share a spelling: the log redaction's and the secret detector's long base58 runs
# (a 64-byte secret key is 87..88 characters: they look for 80..90), and hex key shapes (64 or 128 hex digits)
OTHER_RULES = re.compile(r"\{80,90\}|\{64,90\}|0-9a-fA-F\]\{64\}\|\[0-9a-fA-F\]\{128\}|\[0-9a-fA-F\]\{128\}")


def restatements(text: str) -> list[str]:
    """The rules `text` spells, outside comments."""
    return [
        name
        for line in (raw.split("#", 1)[0] for raw in text.splitlines())
        if not OTHER_RULES.search(line)
        for name, rule in RESTATED.items()
        if rule.search(line)
    ]


def test_the_restatement_check_sees_each_rule_in_its_home() -> None:
    assert set(restatements(HOME.read_text())) >= {"uuid", "signature bounds", "idempotency key bounds"}
    planted = (
        "_KEY = Field(min_length=8, max_length=128)\n"
        "ok = 64 <= len(s) <= 128\n"
        'SIG = r"^[1-9A-HJ-NP-Za-km-z]+$"  # a comment: 64..88\n'
        'ID = "[0-9A-F]{8}-[0-9A-F]{4}"\n'
        'B58 = "[1-9A-HJ-NP-Za-km-z]{32,44}"\n'
    )
    assert restatements(planted) == [
        "idempotency key bounds",
        "signature bounds",
        "uuid",
        "base58 run with a length",
    ]


def test_no_other_file_restates_a_field_rule() -> None:
    found = {
        str(p.relative_to(SRC)): hits
        for p in sorted(SRC.rglob("*.py"))
        if p != HOME and (hits := restatements(p.read_text()))
    }
    assert found == {}
