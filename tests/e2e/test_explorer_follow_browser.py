"""The route explorer's "Follow a session" panel in a real browser (headless Chromium driven by Playwright, as
tests/e2e/test_explorer_browser.py): the page reads GET /v2/session/{id}/events with fetch, the token only in
the session header, and parses the stream with its own small parser (`web/sse.js`).

- The parser, in the browser, on crafted streams cut at every byte (a CR and its LF in two chunks, a UTF-8
  character split in two), multi-line data, comments, ids without data, CR-only line ends.
- The follower, in the browser, on a fake fetch: a stream dropped mid-event, a network error and a 429 are
  resumed with Last-Event-ID after the server's `retry:` and the Retry-After; an overlapping replay shows nothing
  twice; a gap is refused; it stops at the resting event.
- Live, on local chains (the anvil world of test_sessions_anvil.py, the test as Circle): the page follows a CCTP
  session from its create event to `complete` over one connection while the test drives it with observe. It
  first meets a real 429 (the client's open streams at the cap) and retries after Retry-After. Its rows equal
  the stored log, the token is in no URL the page requested nor in its storage or console, and a wrong token
  shows the server's not-found error.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest
from _sessions import new_token
from tests.e2e.test_explorer_browser import (  # noqa: F401 - the browser, a plain server, as fixtures
    TIMEOUT_MS,
    Page,
    artefacts,
    base_url,
    browser,
    expect,
    serve,
)
from tests.e2e.test_session_events_anvil import streamed
from tests.e2e.test_sessions_anvil import (  # noqa: F401 - the chain world, as fixtures
    CCTP_ROUTE,
    World,
    advance,
    burn_and_attest,
    hashes,
    submit,
    wallet,
    world,
)

from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER

# ---- the parser, in the browser --------------------------------------------------------------------------

PARSE = """(streams) => streams.map((chunks) => {
  const out = [];
  const parser = RouteQuoteSSE.createParser({
    onMessage: (m) => out.push(["message", m.id, m.event, m.data]),
    onComment: (text) => out.push(["comment", text]),
    onRetry: (ms) => out.push(["retry", ms]),
  });
  for (const chunk of chunks) parser.feed(typeof chunk === "string" ? chunk : new Uint8Array(chunk));
  parser.end();
  return out;
})"""

STREAM = (
    'id: s:1\r\nretry: 2000\r\ndata: {"a":\r\ndata: "\xe9\u20ac"}\r\n\r\n'  # two data lines, CRLF, é and €
    ": heartbeat\r\n\r\n"
    "id: s:2\ndata: two\n\n"
).encode()
STREAM_MESSAGES = [
    ["retry", 2000],
    ["message", "s:1", "message", '{"a":\n"\xe9\u20ac"}'],
    ["comment", "heartbeat"],
    ["message", "s:2", "message", "two"],
]

EDGES = (
    "\ufeffdata:x\n\n"  # a BOM at the start; no space after the colon
    "data:  two spaces\ndata\n\n"  # only one space is dropped; a field without a colon is an empty value
    "id: quiet\n\n"  # an id without data sets the last event id and dispatches nothing
    "event: custom\nfoo: ignored\nretry: 20x\ndata: after\n\n"  # unknown field and a non-numeric retry ignored
    "id: bad\0id\ndata: nul\n\n"  # an id with NUL is ignored
    ":no space\ndata: a\rdata: b\r\r"  # a comment without its space; CR-only line ends
    "data: never dispatched\n"  # the stream ends before the empty line: not a message
)
EDGE_MESSAGES = [
    ["message", "", "message", "x"],
    ["message", "", "message", " two spaces\n"],
    ["message", "quiet", "custom", "after"],
    ["message", "quiet", "message", "nul"],
    ["comment", "no space"],
    ["message", "quiet", "message", "a\nb"],
]


def test_the_parser_reads_a_stream_cut_anywhere(browser: Any, base_url: str) -> None:  # noqa: F811
    view = Page(browser, base_url)
    try:
        every_byte = [[b] for b in STREAM]
        cr_lf_apart = [STREAM[: STREAM.index(b"\r\n") + 1], STREAM[STREAM.index(b"\r\n") + 1 :]]
        euro = STREAM.index("\u20ac".encode())
        char_apart = [STREAM[: euro + 1], STREAM[euro + 1 :]]
        cuts = [[list(STREAM)], every_byte, [list(c) for c in cr_lf_apart], [list(c) for c in char_apart]]
        assert view.page.evaluate(PARSE, cuts) == [STREAM_MESSAGES] * 4
        edges = EDGES.encode()
        assert view.page.evaluate(PARSE, [[EDGES], [[b] for b in edges], list(EDGES)]) == [EDGE_MESSAGES] * 3
        assert view.problems == []
    finally:
        view.close()


# ---- the follower, in the browser, on a fake fetch --------------------------------------------------------

FOLLOW = """async (script) => {
  const encoder = new TextEncoder();
  const event = (seq, outcome = null) => JSON.stringify({ id: `S:${seq}`, session_id: "S", sequence: seq,
    type: `t${seq}`, status: outcome || "awaiting_destination", previous_status: null, step_index: 0,
    next_operation: "observe", transactions: [], funds: null, outcome, terminal: outcome !== null,
    final_on_chain: null, at: "2026-11-28T00:00:00Z" });
  const text = (chunk) => chunk.replace(/E\\((\\d+)(?:,(\\w+))?\\)/g, (_, s, o) => event(Number(s), o || null));
  const stream = (chunks, drop) => {  // one chunk per read; `drop`: the connection breaks after the last
    let i = 0;
    return new ReadableStream({ pull(controller) {
      if (i < chunks.length) controller.enqueue(encoder.encode(text(chunks[i++])));
      else if (drop) controller.error(new TypeError("network error"));
      else controller.close();
    } });
  };
  const calls = [], sleeps = [], seen = [], states = [];
  const stop = new AbortController();
  const fetch = async (url, init) => {
    calls.push({ url, headers: init.headers });
    const step = script[calls.length - 1];
    if (step.kind === "offline") throw new TypeError("Failed to fetch");
    if (step.kind === "stop") {  // a stream that brings nothing more, and the user presses Stop
      setTimeout(() => stop.abort(new DOMException("stopped", "AbortError")), 50);
      return new Response(new ReadableStream({ pull: () => new Promise(() => {}) }),
        { status: 200, headers: { "content-type": "text/event-stream" } });
    }
    if (step.kind === "status") return new Response(step.body, { status: step.status, headers: step.headers });
    return new Response(stream(step.chunks, step.kind === "drop"),
      { status: 200, headers: { "content-type": "text/event-stream; charset=utf-8" } });
  };
  let ended;
  try {
    ended = await RouteQuoteFollow.follow({ sessionId: "S", token: "secret-token", signal: stop.signal,
      onEvent: (e) => seen.push(e.sequence), onState: (s) => states.push(s.kind), fetch,
      sleep: async (ms) => { sleeps.push(ms); } });
  } catch (error) {
    ended = error.kind ? `${error.kind}: ${error.message}` : `${error.name}: ${error.message}`;
  }
  return { ended, seen, sleeps, states, calls: calls.map((c) => [c.url, c.headers["Last-Event-ID"] || null,
    c.headers["X-RouteQuote-Session-Token"]]) };
}"""

URL = "/v2/session/S/events"


def test_the_follower_resumes_after_drops_and_429_and_stops_at_rest(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
) -> None:
    script = [
        {
            "kind": "drop",
            "chunks": ["retry: 1500\nid: S:1\ndata: E(1)\n\n", "id: S:2\nda"],
        },  # dropped mid-event
        {"kind": "offline"},
        {
            "kind": "status",
            "status": 429,
            "headers": {"retry-after": "3", "content-type": "application/json"},
            "body": '{"error":"event_streams_limit_reached","message":"close one first"}',
        },
        {  # a replay overlapping what was shown, a heartbeat, the resting event, and one more that is not shown
            "kind": "stream",
            "chunks": [
                "id: S:1\ndata: E(1)\n\n: heartbeat\n\nid: S:2\nda",
                "ta: E(2)\n\nid: S:3\ndata: E(3,complete)\n\n",
            ]
            + ["id: S:4\ndata: E(4)\n\n"],
        },
    ]
    view = Page(browser, base_url)
    try:
        result = view.page.evaluate(FOLLOW, script)
        assert result["ended"] == "rest"
        assert result["seen"] == [1, 2, 3]
        assert result["calls"] == [
            [URL, None, "secret-token"],
            [URL, "S:1", "secret-token"],
            [URL, "S:1", "secret-token"],
            [URL, "S:1", "secret-token"],
        ]
        assert result["sleeps"] == [1500, 1500, 3000]  # the server's retry:, twice, then the Retry-After
        assert "rate_limited" in result["states"] and "heartbeat" in result["states"]

        held = view.page.evaluate(FOLLOW, [{"kind": "status", "status": 204, "headers": {}, "body": None}])
        assert (held["ended"], held["seen"]) == ("held", [])
        gap = view.page.evaluate(
            FOLLOW, [{"kind": "stream", "chunks": ["id: S:1\ndata: E(1)\n\nid: S:3\ndata: E(3)\n\n"]}]
        )
        assert (gap["ended"], gap["seen"]) == ("invalid: a gap in the event log: 3 after 1", [1])
        missing = view.page.evaluate(
            FOLLOW,
            [
                {
                    "kind": "status",
                    "status": 404,
                    "headers": {"content-type": "application/json"},
                    "body": '{"error":"not_found","reason_class":"session_not_found","message":"no such session"}',
                }
            ],
        )
        assert missing["ended"] == "http: HTTP 404 not_found (session_not_found): no such session"
        # a server that keeps ending the stream early, with no new event: it gives up after 5 reconnects
        early = view.page.evaluate(FOLLOW, [{"kind": "stream", "chunks": [": heartbeat\n\n"]}] * 6)
        assert early["ended"].startswith("unreachable: gave up after 5 reconnects without a new event")
        assert len(early["calls"]) == 6 and early["sleeps"] == [2000] * 5
        stopped = view.page.evaluate(FOLLOW, [{"kind": "stop"}])
        assert (stopped["ended"], stopped["sleeps"]) == ("AbortError: stopped", [])
        assert view.problems == []
    finally:
        view.close()


# ---- live, on local chains ----------------------------------------------------------------------------------


class Recorder:
    """Every request the page makes (URL, headers), every event-stream status and every console line."""

    def __init__(self, page: Any, events_path: str) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.stream_statuses: list[int] = []
        self.console: list[str] = []
        page.on("request", lambda r: self.requests.append((r.url, dict(r.headers))))
        page.on("console", lambda m: self.console.append(m.text))
        page.on("response", lambda r: self._response(r, events_path))

    def _response(self, response: Any, events_path: str) -> None:
        if urlsplit(response.url).path == events_path:
            self.stream_statuses.append(response.status)


def hold_streams(url: str, sid: str, token: str, count: int) -> list[socket.socket]:
    """`count` open event streams of this client (the server holds a slot for each until it closes)."""
    address = urlsplit(url)
    held = []
    for _ in range(count):
        conn = socket.create_connection((address.hostname, address.port), timeout=60)
        conn.sendall(
            f"GET /v2/session/{sid}/events HTTP/1.1\r\nHost: {address.netloc}\r\n{SESSION_HEADER}: {token}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += conn.recv(4096)
        assert head.startswith(b"HTTP/1.1 200"), head[:200]
        held.append(conn)
    return held


def describe(answer: httpx.Response) -> str:
    """How the page words an error answer: status, error code, reason class, the server's own message."""
    body = answer.json()
    return f"HTTP {answer.status_code} {body['error']} ({body['reason_class']}): {body['message']}"


def rows_of(page: Any) -> list[dict[str, str]]:
    return list(
        page.evaluate(
            """() => [...document.querySelectorAll('#follow-events tbody tr')].map((tr) => Object.fromEntries(
                 [...tr.cells].map((td) => [td.className, td.textContent])))"""
        )
    )


def shown_preflight(page: Any, preflight: dict[str, Any]) -> None:
    """The page's "Before you sign the current action" list is the session's preflight: its verdict and one line
    per finding (code, chain, whether it blocks; the message and amounts of the ones that do not move between
    two reads: everything but the seconds left)."""
    box = page.locator("#follow-preflight")
    expect()(box).to_be_visible(timeout=TIMEOUT_MS)
    expect()(box).to_have_attribute("data-ok", str(preflight["ok"]).lower(), timeout=TIMEOUT_MS)
    items = page.locator("#follow-preflight-findings li")
    expect()(items).to_have_count(len(preflight["findings"]), timeout=TIMEOUT_MS)
    for i, f in enumerate(preflight["findings"]):
        item = items.nth(i)
        expect()(item).to_have_attribute("data-code", f["code"], timeout=TIMEOUT_MS)
        expect()(item).to_have_attribute("data-chain", f["chain"])
        expect()(item).to_have_attribute("data-blocking", str(f["blocking"]).lower())
        if f["code"] != "time_left":
            expect()(item).to_contain_text(
                f"{f['code']} ({f['chain']}, step {f['step_index'] + 1}): {f['message']}"
            )
            expect()(item).to_contain_text(f"[needed {f['needed']}, has {f['has']}]")


@pytest.fixture
def live_page(browser: Any, world: World) -> Iterator[Page]:  # noqa: F811
    view = Page(browser, world.api.url, viewport={"width": 1280, "height": 1000})
    yield view
    view.close()


@pytest.mark.chain
@pytest.mark.parametrize("world", ["sqlite"], indirect=True)  # the page, not the store, is under test here
def test_the_page_follows_a_cctp_session_live_to_complete(
    world: World,  # noqa: F811
    live_page: Page,
    artefacts: Path,  # noqa: F811
) -> None:
    w, page = world, live_page.page
    who, key = wallet(w)
    s, token = w.api.create(CCTP_ROUTE, {"arbitrum": who, "base": who})
    sid = s["session_id"]
    events_path = f"/v2/session/{sid}/events"
    seen = Recorder(page, events_path)
    page.reload()  # every request of the page, its own load included, is recorded
    rows = page.locator("#follow-events tbody tr")

    # the client already has as many open streams as it may: the page is refused, says so, and retries
    held = hold_streams(w.api.url, sid, token, Settings().event_stream_max_per_client)
    page.fill("#follow-session", sid)
    page.fill("#follow-token", token)
    page.click("#follow-button")
    error = page.locator("#follow-error")
    refused = httpx.get(f"{w.api.url}{events_path}", headers={SESSION_HEADER: token}, timeout=60)
    assert refused.status_code == 429 and refused.headers["retry-after"] == "5"
    expect()(error).to_contain_text(describe(refused), timeout=TIMEOUT_MS)
    expect()(error).to_contain_text("retrying in 5 s")  # the Retry-After the server sent
    for conn in held:
        conn.close()
    expect()(rows).to_have_count(1, timeout=TIMEOUT_MS)  # the create event, once a slot is free
    expect()(error).to_be_hidden()
    expect()(page.locator("#follow-button")).to_have_text("Stop")
    expect()(page.locator("#follow-status")).to_have_attribute("data-status", s["status"])
    # the session's preflight for the action to sign, read with the token in the header (chain reads: the
    # anvil chains; the wallet holds ETH and the stable on each, so nothing blocks)
    shown_preflight(page, s["preflight"])

    # the test drives the session (observe); the page, following all along, shows each event as it is stored
    s, _ = burn_and_attest(w, key, s, sid, token)  # in flight, pending at Circle, attested: 3 events
    expect()(rows).to_have_count(4, timeout=TIMEOUT_MS)
    expect()(page.locator("#follow-status")).to_have_attribute("data-status", "action_ready")
    shown_preflight(page, s["preflight"])  # the mint's, on base: its gas, no input
    s = advance(w, sid, token, s, hashes(submit(w.base, key, s)), "action_ready", "submit_current_action")
    expect()(rows).to_have_count(5, timeout=TIMEOUT_MS)
    advance(w, sid, token, s, hashes(submit(w.base, key, s)), "complete", "none")
    expect()(page.locator("#follow-state")).to_have_text(
        "The session rests: following ended.", timeout=TIMEOUT_MS
    )
    status = page.locator("#follow-status")
    expect()(status).to_have_attribute("data-outcome", "complete")
    expect()(status).to_contain_text("complete (terminal, final on chain)")
    expect()(page.locator("#follow-preflight-summary")).to_have_text("No action to sign now.")
    expect()(page.locator("#follow-preflight-findings li")).to_have_count(0)
    expect()(page.locator("#follow-button")).to_have_text("Follow")
    page.locator("#follow").screenshot(path=str(artefacts / "explorer-follow.png"))

    stored = streamed(w, sid, token)  # the log as the store replays it
    assert [e["type"] for e in stored][-1] == "step_verified_final" and len(stored) == 6
    shown = rows_of(page)
    assert [(r["seq"], r["type"], r["status"], r["step-index"]) for r in shown] == [
        (str(e["sequence"]), e["type"], e["status"], str(e["step_index"])) for e in stored
    ]
    for row, event in zip(shown, stored, strict=True):
        funds = event["funds"]
        assert f"{funds['token']} on {funds['chain']}: " in row["funds"]
        amount = funds["amount_base"]
        assert (f"{amount} base units" if amount is not None else "amount not known yet") in row["funds"]
        assert f"held by {funds['owner']}" in row["funds"] and row["at"] == event["at"]
    # live: every event came over one connection, opened when the log held only the create event
    assert seen.stream_statuses.count(200) == 1 and seen.stream_statuses[0] == 429

    # the token: in the header of the stream requests, in no URL, not stored, not logged
    stream_requests = [h for u, h in seen.requests if urlsplit(u).path == events_path]
    assert stream_requests and all(h.get(SESSION_HEADER.lower()) == token for h in stream_requests)
    assert seen.requests and all(token not in u and quote(token) not in u for u, _ in seen.requests)
    assert page.url == w.api.url + "/"
    assert page.evaluate("() => localStorage.length + sessionStorage.length") == 0
    assert live_page.context.cookies() == []
    assert all(token not in line for line in seen.console)

    # a wrong token: the server's not-found error, shown plainly, and nothing followed
    wrong = new_token()
    missing = httpx.get(f"{w.api.url}{events_path}", headers={SESSION_HEADER: wrong}, timeout=60)
    assert missing.status_code == 404 and missing.json()["reason_class"] == "session_not_found"
    page.fill("#follow-token", wrong)
    page.click("#follow-button")
    expect()(error).to_have_text(f"Could not follow the session: {describe(missing)}", timeout=TIMEOUT_MS)
    expect()(page.locator("#follow-state")).to_have_text("Not following.")
    expect()(rows).to_have_count(0)
    expect()(page.locator("#follow-button")).to_have_text("Follow")
    assert [p for p in live_page.problems if "404" not in p and "429" not in p] == []
