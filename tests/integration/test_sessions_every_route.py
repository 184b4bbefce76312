"""On the defaults (embedded snapshot, SQLite) over real HTTP, `POST /v2/session` answers 201 for every one of
the 72 routes, Solana swap first steps included (built from the snapshot's pool state, labelled so), and every
first action verifies."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server
from tests.unit.actions.support import EVENT_SIGNER, START, approval_for, intent_for, wallets_for

from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER
from routequote.core.routes import ROUTES
from routequote.verify import verify_bundle


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    db: Path = tmp_path_factory.mktemp("every") / "s.sqlite3"
    app = create_app(
        Settings(rate_limit="off", port=port, database_url=f"sqlite+aiosqlite:///{db}", **OBSERVABLE),
        clock=FixedClock(START),
    )
    with running_server(app, port) as url:
        yield url


def test_every_route_opens_a_session_with_a_verifiable_first_action(base: str) -> None:
    created, snapshot_swaps = 0, 0
    with httpx.Client(base_url=base, timeout=30) as http:
        for key in sorted(ROUTES):
            q = http.post("/v2/quote", json=intent_for(key, 100))
            assert q.status_code == 200, q.text
            quote = q.json()
            idem = f"every-{secrets.token_hex(6)}"
            body = {
                "caller_approved": True,
                **intent_for(key, 100),
                "wallets": wallets_for(key),
                "approval_v3": approval_for(quote, key=idem, selected_mode="session"),
                "idempotency_key": idem,
            }
            signer = EVENT_SIGNER if ROUTES[key].event_signer_required else None
            if signer:
                body["event_signer_public"] = signer
            token = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
            r = http.post("/v2/session", json=body, headers={SESSION_HEADER: token})
            assert r.status_code == 201, (key, r.text)
            bundle = r.json()["current_action"]
            findings = verify_bundle(
                bundle,
                intent=intent_for(key, 100),
                wallets=wallets_for(key),
                approval_v3=body["approval_v3"],
                direct_route_summary=quote["direct_route_summary"],
                now_unix=int(START.timestamp()),
                accept_modelled_bounds=True,  # the embedded market
                event_signer_public=signer,
            )
            assert not [f for f in findings if f.severity == "error"], (key, findings)
            created += 1
            snapshot_swaps += bundle["unsigned_action"].get("pool_state_source") == "snapshot"
        caps = http.get("/v2/capabilities").json()
    assert created == 72 and snapshot_swaps == 18
    assert caps["currently_prepare_ready_routes"] == 72
    assert caps["sessions"]["session_ready_routes"] == 72 and caps["sessions"]["unavailable_route_count"] == 0
