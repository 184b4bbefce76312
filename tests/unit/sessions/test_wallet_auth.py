"""The v1 wallet login: sign-message only, single-use expiring challenges, SHA-256-only tokens, rate limits.

Every wallet signature here is made by the test with a solders Keypair (the wallet), never by the service."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from solders.keypair import Keypair

from routequote.auth import AccessTokenInvalid, WalletAuth, access_token_sha256
from routequote.clock import FixedClock, SequentialIds
from routequote.core.auth import NO_TRANSACTION_SENTENCE, TERMS_VERSION, login_message, signature_valid
from routequote.errors import InvalidRequest, RateLimited
from routequote.ratelimit import RateLimiter
from routequote.storage.sessions_memory import MemorySessionStore

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def make(limit: str = "off") -> tuple[WalletAuth, FixedClock, MemorySessionStore]:
    clock = FixedClock(T0)
    store = MemorySessionStore()
    auth = WalletAuth(
        store,
        clock,
        SequentialIds(),
        "https://routes.example.test",
        RateLimiter(limit),
        challenge_ttl_seconds=300,
        token_ttl_seconds=3600,
    )
    return auth, clock, store


def sign(wallet: Keypair, message: str) -> str:
    return str(wallet.sign_message(message.encode("utf-8")))


def finish_body(challenge: dict, wallet: Keypair, signature: str | None = None, **over: str) -> dict:  # type: ignore[type-arg]
    body = {
        "challenge_id": challenge["challenge_id"],
        "source_wallet": str(wallet.pubkey()),
        "signature": signature or sign(wallet, challenge["message"]),
        "terms_version": challenge["terms_version"],
    }
    return {**body, **over}


async def refused(auth: WalletAuth, body: dict, reason: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidRequest) as info:
        await auth.finish(body, "10.0.0.1")
    assert info.value.reason_class == reason, info.value
    assert body["signature"] not in str(info.value.body())  # a login signature is never echoed


async def test_message_names_everything_and_a_signed_login_grants_a_wallet_bound_token() -> None:
    auth, _clock, store = make()
    wallet = Keypair()
    ch = await auth.start({"source_wallet": str(wallet.pubkey())}, "10.0.0.1")
    msg = ch["message"]
    assert msg.startswith(
        "routes.example.test wants you to sign in with your Solana account:\n" + str(wallet.pubkey())
    )
    for part in (
        f"Challenge ID: {ch['challenge_id']}",
        "Nonce: ",
        "Issued At: 2026-11-20T12:00:00Z",
        "Expiration Time: 2026-11-20T12:05:00Z",
        f"Terms Version: {TERMS_VERSION}",
        NO_TRANSACTION_SENTENCE,
    ):
        assert part in msg, part
    assert ch["can_authorize_transaction"] is False and ch["sign_message_only"] is True
    nonce = msg.split("Nonce: ")[1].split("\n")[0]
    assert len(nonce) >= 32
    second = await auth.start({"source_wallet": str(wallet.pubkey())}, "10.0.0.1")
    assert second["message"].split("Nonce: ")[1].split("\n")[0] != nonce  # a fresh nonce each time

    grant = await auth.finish(finish_body(ch, wallet), "10.0.0.1")
    token = grant["access_token"]
    assert grant["token_type"] == "Bearer" and grant["source_wallet"] == str(wallet.pubkey())
    assert 20 <= len(token) <= 512
    assert await auth.wallet_for(token) == str(wallet.pubkey())
    # only the SHA-256 of the token is stored
    assert token not in repr(store._grants) and access_token_sha256(token) in store._grants


async def test_hostile_logins_are_refused_and_change_nothing() -> None:
    auth, clock, store = make()
    wallet, other = Keypair(), Keypair()
    ch = await auth.start({"source_wallet": str(wallet.pubkey())}, "10.0.0.1")
    # a signature of the message by another wallet
    await refused(auth, finish_body(ch, wallet, signature=sign(other, ch["message"])), "signature_invalid")
    # the wallet's signature of another message (a rebuilt one with another nonce)
    forged = ch["message"].replace("Nonce: ", "Nonce: x")
    await refused(auth, finish_body(ch, wallet, signature=sign(wallet, forged)), "signature_invalid")
    # the challenge issued to `wallet`, finished as `other` (with other's valid signature of the same text)
    await refused(auth, finish_body(ch, other), "challenge_wallet_mismatch")
    # other terms
    await refused(
        auth, finish_body(ch, wallet, terms_version="routequote-terms-v0"), "terms_version_mismatch"
    )
    assert not store._grants and store._challenges[ch["challenge_id"]].used_at is None  # nothing advanced
    # the genuine finish still works once ...
    token = (await auth.finish(finish_body(ch, wallet), "10.0.0.1"))["access_token"]
    # ... and a replay of the very same valid body is refused
    await refused(auth, finish_body(ch, wallet), "challenge_already_used")
    assert len(store._grants) == 1
    # an expired challenge
    late = await auth.start({"source_wallet": str(wallet.pubkey())}, "10.0.0.1")
    clock.advance(301)
    await refused(auth, finish_body(late, wallet), "challenge_expired")
    assert store._challenges[late["challenge_id"]].used_at is None and len(store._grants) == 1
    # an unknown challenge
    await refused(
        auth,
        finish_body({**late, "challenge_id": "00000000-0000-4000-8000-0000000000ff"}, wallet),
        "challenge_not_found",
    )
    # tokens expire
    clock.advance(3600)
    with pytest.raises(AccessTokenInvalid) as info:
        await auth.wallet_for(token)
    assert info.value.reason_class == "access_token_expired"
    for bad in (None, "", "x" * 30, token + "A", "rqv1_" + "A" * 43):
        with pytest.raises(AccessTokenInvalid):
            await auth.wallet_for(bad)


async def test_signature_check_is_over_the_exact_bytes() -> None:
    wallet = Keypair()
    msg = login_message(
        domain="d.test",
        wallet=str(wallet.pubkey()),
        challenge_id="c",
        nonce="n",
        issued_at=T0,
        expires_at=T0,
        terms_version="t",
    )
    good = sign(wallet, msg)
    assert signature_valid(wallet=str(wallet.pubkey()), message=msg, signature=good)
    assert not signature_valid(wallet=str(wallet.pubkey()), message=msg + " ", signature=good)
    assert not signature_valid(wallet=str(Keypair().pubkey()), message=msg, signature=good)
    for junk in ("", "0" * 88, "1" * 64, good[:-1], good + "1", "I" * 88):
        assert not signature_valid(wallet=str(wallet.pubkey()), message=msg, signature=junk)


async def test_login_attempts_are_rate_limited_per_wallet_and_per_client() -> None:
    auth, _clock, _store = make("3/minute")
    wallet = Keypair()
    for _ in range(3):
        await auth.start({"source_wallet": str(wallet.pubkey())}, f"10.0.0.{_}")
    with pytest.raises(RateLimited):  # the fourth for this wallet, from yet another client
        await auth.start({"source_wallet": str(wallet.pubkey())}, "10.0.0.99")
    for _ in range(2):  # this client already spent one of its three above (10.0.0.1); two more fit
        await auth.start({"source_wallet": str(Keypair().pubkey())}, "10.0.0.1")
    with pytest.raises(RateLimited):  # the client's budget, with a fresh wallet
        await auth.start({"source_wallet": str(Keypair().pubkey())}, "10.0.0.1")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({}, "missing_field"),
        ({"source_wallet": "0x" + "ab" * 20}, "invalid_source_wallet"),
        ({"source_wallet": "1" * 32, "extra": 1}, "unknown_field"),
        ([], "body_not_object"),
    ],
)
async def test_start_refuses_malformed_bodies(body: object, reason: str) -> None:
    auth, _clock, _store = make()
    with pytest.raises(InvalidRequest) as info:
        await auth.start(body, "10.0.0.1")
    assert info.value.reason_class == reason
