"""One rule per input, on every surface that reads it (issue 22 items 10 and 11), over real HTTP against one
running server (SQLite store), with the official A2A and MCP SDKs as clients.

- Session tokens: exactly 43 base64url characters, and not plainly non-random. A weak or a longer token is
  refused on REST v2 and A2A alike, and nothing is created; a session created over REST is reachable over A2A.
  (MCP and v1 take no session token: they use the v1 wallet login's access token.)
- Wallets that must sign: a PDA, a program, a mint, a token contract, the zero address, a broken EIP-55 checksum
  and the service's own fee recipients are refused as wallets and as `event_signer_public` on v2 prepare and
  session create (REST and A2A), the v1 login and the v1 corridor session (REST and MCP). Addresses are stored
  in their canonical (EIP-55) form, and the caller's own spelling still verifies.
"""

from __future__ import annotations

import base64
import secrets
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from mcp import Client as McpClient
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from tests.support.a2a import Caller, send
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server
from tests.unit.actions.support import (
    EVENT_SIGNER,
    SOLANA_WALLET,
    START,
    approval_for,
    intent_for,
    wallets_for,
)

from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.actions.common import checksum
from routequote.core.assets import ASSETS
from routequote.core.quote import SESSION_HEADER
from routequote.verify import verify_bundle

ONE_STEP = "base:ETH->base:USDC"
SOLANA_ROUTE = "solana:SOL->solana:USDC"
SOLANA_BURN = "solana:USDC->base:USDC"
SETTINGS = Settings()
USDC_BASE = ASSETS["base:USDC"].address or ""
USDC_MINT = ASSETS["solana:USDC"].address or ""
WSOL_MINT = ASSETS["solana:SOL"].wrapped_address or ""
PDA = str(
    Pubkey.find_program_address([b"not-a-wallet"], Pubkey.from_string("11111111111111111111111111111111"))[0]
)


def new_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def _long_token(n: int) -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(n)).rstrip(b"=").decode()[:n]


def _broken_checksum(address: str) -> str:
    """The checksummed address with the case of its first letter flipped: mixed case, wrong checksum."""
    good = checksum(address)
    i = next(i for i, ch in enumerate(good) if i > 1 and ch.isalpha())
    return good[:i] + good[i].swapcase() + good[i + 1 :]


WEAK_TOKENS = {
    "43xA": "A" * 43,
    "period_2": ("Ab" * 22)[:43],
    "period_8": ("q7Zk_3Xw" * 6)[:43],
    "sequence": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq",
    "stride_3": "".join("ADGJMPSVYbehknqtwz0369-"[i % 23] for i in range(43)),
    "44_chars": _long_token(44),
    "128_chars": _long_token(128),
    "42_chars": _long_token(42),
}
BAD_EVM_WALLETS = {
    "zero": "0x" + "00" * 20,
    "precompile": "0x" + "00" * 19 + "01",
    "token_contract": checksum(USDC_BASE),
    "token_contract_lower": USDC_BASE.lower(),
    "broken_checksum": _broken_checksum("0x" + "ab" * 20),
    "fee_recipient": SETTINGS.fee_recipient_evm,
}
BAD_SOLANA_WALLETS = {
    "pda_off_curve": PDA,
    "system_program": "11111111111111111111111111111111",
    "token_program": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
    "usdc_mint": USDC_MINT,
    "wsol_mint": WSOL_MINT,
    "fee_recipient": SETTINGS.fee_recipient_solana,
}


class Served:
    def __init__(self, url: str, db: Path) -> None:
        self.url, self.db = url, db

    def counts(self) -> tuple[int, int, int]:
        """Sessions, events and idempotency records: a refusal changes none of them."""
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as con:
            return tuple(  # type: ignore[return-value]
                con.execute(f"select count(*) from {t}").fetchone()[0]
                for t in ("sessions", "session_events", "session_idempotency")
            )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    port = free_port()
    db = tmp_path_factory.mktemp("input_rules") / "s.sqlite3"
    settings = Settings(
        rate_limit="off",
        login_rate_limit="off",
        port=port,
        database_url=f"sqlite+aiosqlite:///{db}",
        **OBSERVABLE,
    )
    app = create_app(settings, clock=FixedClock(START))
    with running_server(app, port) as url:
        yield Served(url, db)


@pytest.fixture
async def http(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as c:
        yield c


@pytest.fixture
async def a2a(served: Served) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=30) as h:
        card = await A2ACardResolver(h, served.url).get_agent_card()
        yield ClientFactory(ClientConfig(streaming=False, httpx_client=h)).create(card)


async def _quote(http: httpx.AsyncClient, route: str) -> dict[str, Any]:
    r = await http.post("/v2/quote", json=intent_for(route, 100))
    assert r.status_code == 200, r.text
    q: dict[str, Any] = r.json()
    return q


async def _session_body(http: httpx.AsyncClient, route: str, **over: Any) -> dict[str, Any]:
    key = "k-" + uuid.uuid4().hex[:12]
    body = {
        "caller_approved": True,
        **intent_for(route, 100),
        "wallets": wallets_for(route),
        "approval_v3": approval_for(await _quote(http, route), key=key, selected_mode="session"),
        "idempotency_key": key,
        **over,
    }
    return body


# ---- session tokens -----------------------------------------------------------------------------------


async def _rest_create(http: httpx.AsyncClient, a2a: Client, token: str) -> dict[str, Any]:
    r = await http.post(
        "/v2/session", json=await _session_body(http, ONE_STEP), headers={SESSION_HEADER: token}
    )
    assert r.status_code in (201, 400), r.text
    out: dict[str, Any] = r.json()
    return out


async def _a2a_create(http: httpx.AsyncClient, a2a: Client, token: str) -> dict[str, Any]:
    caller = Caller(a2a, ONE_STEP)
    await caller.quote()
    reply = await send(a2a, caller.create_message(sessionToken=token))
    return reply.get("error", reply)  # type: ignore[no-any-return]


TOKEN_SURFACES: dict[str, Callable[..., Any]] = {"rest_v2": _rest_create, "a2a": _a2a_create}


@pytest.mark.parametrize("surface", list(TOKEN_SURFACES))
@pytest.mark.parametrize("name", list(WEAK_TOKENS))
async def test_a_weak_or_mis_sized_session_token_is_refused_everywhere(
    served: Served, http: httpx.AsyncClient, a2a: Client, surface: str, name: str
) -> None:
    token = WEAK_TOKENS[name]
    before = served.counts()
    answer = await TOKEN_SURFACES[surface](http, a2a, token)
    assert answer["reason_class"] == "session_token_invalid", answer
    assert token not in str(answer)  # never echoed
    assert served.counts() == before  # nothing created


@pytest.mark.parametrize("surface", list(TOKEN_SURFACES))
async def test_a_random_43_character_token_opens_a_session_everywhere(
    served: Served, http: httpx.AsyncClient, a2a: Client, surface: str
) -> None:
    answer = await TOKEN_SURFACES[surface](http, a2a, new_token())
    session = answer.get("session", answer)
    assert session["status"] == "action_ready", answer


async def test_a_session_created_over_rest_is_reachable_over_a2a(
    http: httpx.AsyncClient, a2a: Client
) -> None:
    caller = Caller(a2a, ONE_STEP)
    await caller.quote()
    body = {
        "caller_approved": True,
        **caller.intent,
        "wallets": caller.wallets,
        "approval_v3": caller.approval,
        "idempotency_key": caller.key,
    }
    r = await http.post("/v2/session", json=body, headers={SESSION_HEADER: caller.token})
    assert r.status_code == 201, r.text
    caller.sid = r.json()["session_id"]
    reply = await caller.get()
    assert reply["session"]["session_id"] == caller.sid and reply["session"]["status"] == "action_ready", (
        reply
    )


# ---- wallets that must sign ----------------------------------------------------------------------------


def _wallet_body(route: str, chain: str, address: str) -> dict[str, Any]:
    return {
        "caller_approved": True,
        **intent_for(route, 100),
        "wallets": {**wallets_for(route), chain: address},
    }


async def _v2_prepare(http: httpx.AsyncClient, a2a: Client, route: str, chain: str, address: str) -> Any:
    return (await http.post("/v2/prepare", json=_wallet_body(route, chain, address))).json()


async def _v2_session(http: httpx.AsyncClient, a2a: Client, route: str, chain: str, address: str) -> Any:
    body = await _session_body(http, route, wallets={**wallets_for(route), chain: address})
    return (await http.post("/v2/session", json=body, headers={SESSION_HEADER: new_token()})).json()


async def _a2a_session(http: httpx.AsyncClient, a2a: Client, route: str, chain: str, address: str) -> Any:
    caller = Caller(a2a, route)
    caller.wallets = {**caller.wallets, chain: address}
    await caller.quote()
    reply = await send(a2a, caller.create_message())
    return reply.get("error", reply)


V2_SURFACES = {"rest_v2_prepare": _v2_prepare, "rest_v2_session": _v2_session, "a2a_session": _a2a_session}


@pytest.mark.parametrize("surface", list(V2_SURFACES))
@pytest.mark.parametrize("name", list(BAD_EVM_WALLETS))
async def test_an_evm_wallet_that_cannot_sign_is_refused_on_v2(
    served: Served, http: httpx.AsyncClient, a2a: Client, surface: str, name: str
) -> None:
    before = served.counts()
    err = await V2_SURFACES[surface](http, a2a, ONE_STEP, "base", BAD_EVM_WALLETS[name])
    assert err["reason_class"] == "invalid_wallet_address", err
    assert served.counts() == before


@pytest.mark.parametrize("surface", list(V2_SURFACES))
@pytest.mark.parametrize("name", list(BAD_SOLANA_WALLETS))
async def test_a_solana_wallet_that_cannot_sign_is_refused_on_v2(
    served: Served, http: httpx.AsyncClient, a2a: Client, surface: str, name: str
) -> None:
    before = served.counts()
    err = await V2_SURFACES[surface](http, a2a, SOLANA_ROUTE, "solana", BAD_SOLANA_WALLETS[name])
    assert err["reason_class"] == "invalid_wallet_address", err
    assert served.counts() == before


@pytest.mark.parametrize("name", list(BAD_SOLANA_WALLETS))
@pytest.mark.parametrize("surface", ["rest_v2_prepare", "rest_v2_session"])
async def test_an_event_signer_that_cannot_sign_is_refused(
    served: Served, http: httpx.AsyncClient, surface: str, name: str
) -> None:
    signer = BAD_SOLANA_WALLETS[name]
    if surface == "rest_v2_prepare":
        body = {**_wallet_body(SOLANA_BURN, "solana", SOLANA_WALLET), "event_signer_public": signer}
        err = (await http.post("/v2/prepare", json=body)).json()
    else:
        body = await _session_body(http, SOLANA_BURN, event_signer_public=signer)
        err = (await http.post("/v2/session", json=body, headers={SESSION_HEADER: new_token()})).json()
    assert err["reason_class"] == "invalid_event_signer_public", err


async def _v1_login(http: httpx.AsyncClient, wallet: Keypair) -> str:
    ch = (await http.post("/v1/auth/challenge", json={"source_wallet": str(wallet.pubkey())})).json()
    body = {
        "challenge_id": ch["challenge_id"],
        "source_wallet": str(wallet.pubkey()),
        "signature": str(wallet.sign_message(ch["message"].encode())),
        "terms_version": ch["terms_version"],
    }
    r = await http.post("/v1/auth/verify", json=body)
    assert r.status_code == 200, r.text
    token: str = r.json()["access_token"]
    return token


async def _v1_create(http: httpx.AsyncClient, surface: str, destination: str) -> dict[str, Any]:
    wallet = Keypair()
    token = await _v1_login(http, wallet)
    quote = (await http.post("/v1/quote", json={"amount_usd": 100, "destination_chain": "base"})).json()
    args = {
        "quote_id": quote["quote"]["quote_id"],
        "idempotency_key": "v1-" + uuid.uuid4().hex[:12],
        "source_wallet": str(wallet.pubkey()),
        "destination_wallet": destination,
    }
    if surface == "rest_v1":
        r = await http.post("/v1/session", json=args, headers={"Authorization": f"Bearer {token}"})
        out: dict[str, Any] = r.json()
        return out
    async with McpClient(str(http.base_url) + "/mcp") as mcp:
        result = await mcp.call_tool("service_create_session", {"access_token": token, **args})
    content: dict[str, Any] = result.structured_content or {}
    return content.get("error", content)


@pytest.mark.parametrize("surface", ["rest_v1", "mcp"])
@pytest.mark.parametrize("name", list(BAD_EVM_WALLETS))
async def test_a_v1_destination_wallet_that_cannot_sign_is_refused(
    served: Served, http: httpx.AsyncClient, surface: str, name: str
) -> None:
    before = served.counts()
    err = await _v1_create(http, surface, BAD_EVM_WALLETS[name])
    assert err["reason_class"] == "invalid_destination_wallet", err
    assert served.counts() == before


@pytest.mark.parametrize("surface", ["rest_v1", "mcp"])
@pytest.mark.parametrize("name", list(BAD_SOLANA_WALLETS))
async def test_a_v1_login_wallet_that_cannot_sign_is_refused(
    http: httpx.AsyncClient, surface: str, name: str
) -> None:
    wallet = BAD_SOLANA_WALLETS[name]
    if surface == "rest_v1":
        err = (await http.post("/v1/auth/challenge", json={"source_wallet": wallet})).json()
    else:
        async with McpClient(str(http.base_url) + "/mcp") as mcp:
            result = await mcp.call_tool("service_start_wallet_auth", {"source_wallet": wallet})
        err = (result.structured_content or {})["error"]
    assert err["reason_class"] == "invalid_source_wallet", err


async def test_addresses_are_stored_checksummed_and_the_callers_spelling_still_verifies(
    http: httpx.AsyncClient,
) -> None:
    lower = "0x" + "ab" * 20
    body = await _session_body(http, ONE_STEP, wallets={"base": lower})
    token = new_token()
    r = await http.post("/v2/session", json=body, headers={SESSION_HEADER: token})
    assert r.status_code == 201, r.text
    session = r.json()
    workflow = (
        await http.get(
            f"/v2/session/{session['session_id']}",
            params={"view": "workflow"},
            headers={SESSION_HEADER: token},
        )
    ).json()
    assert workflow["wallets"] == {"base": checksum(lower)} != {"base": lower}
    findings = verify_bundle(
        session["current_action"],
        intent=intent_for(ONE_STEP, 100),
        wallets={"base": lower},
        now_unix=int(START.timestamp()),
        accept_modelled_bounds=True,  # the embedded market
        approval_v3=body["approval_v3"],
    )
    assert [f for f in findings if f.severity == "error"] == []


def test_the_event_signer_fixture_is_a_signing_key() -> None:
    """The good keys the suite uses pass the rule (so the refusals above are about the bad keys)."""
    from routequote.core.assets import ChainFamily
    from routequote.core.wallet_rules import known_addresses, signing_wallet_problem

    known = known_addresses()
    for key in (SOLANA_WALLET, EVENT_SIGNER, str(Keypair().pubkey())):
        assert signing_wallet_problem(ChainFamily.SOLANA, key, known) is None
    assert signing_wallet_problem(ChainFamily.EVM, "0x" + "ab" * 20, known) is None
    assert signing_wallet_problem(ChainFamily.EVM, checksum("0x" + "ab" * 20), known) is None
    assert (
        signing_wallet_problem(ChainFamily.EVM, ("0x" + "ab" * 20).upper().replace("0X", "0x"), known) is None
    )
