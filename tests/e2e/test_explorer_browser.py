"""The route explorer at `/` in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright
(issue 12), against a real server on loopback.

Checks: the matrix fills 72 cells from one POST /v2/route-matrix (a fill is 4 requests of a visitor's rate
limit, so reloads never run into it); clicking a cell (or Enter after arrow keys) fetches that route's quote,
whose cost is the cell's and whose amounts are the exact token units of the server's base-unit strings; the
market is called a modelled snapshot with its date, never "healthy"; an invalid amount shows the server's own
error text; the TTL counts down and the quote is marked expired; a 429 is shown and retried after Retry-After;
the page raises no Content-Security-Policy violation and fits a phone.

Screenshots are saved under a temporary artefacts directory (printed; `EXPLORER_TEST_ARTEFACTS=DIR` keeps
them in DIR). `EXPLORER_WRITE_README_SCREENSHOT=1` also rewrites docs/screenshots/explorer.png. (Not ROUTEQUOTE_*
names: tests/conftest.py clears those.)

The browser is the system Chromium (`.ci/run` installs Debian's package when apt is there); without it, or
without the `playwright` package, the browser tests skip and say why.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.server import running_server

from routequote.app import create_app
from routequote.config import Settings
from routequote.surfaces.web import CONTENT_SECURITY_POLICY

REPO = Path(__file__).resolve().parents[2]
README_SCREENSHOT = REPO / "docs" / "screenshots" / "explorer.png"
FILLED = re.compile(r"^72 / 72 routes priced$")
SELECTED = "solana:SOL->robinhood:ETH"
DECIMALS = {"SOL": 9, "ETH": 18, "USDC": 6, "USDG": 6}
TIMEOUT_MS = 60_000  # generous upper bounds for a loaded 2-core machine; nothing here asserts a duration


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.skip(
            "no system Chromium: install Debian's `chromium` package (.ci/run does when apt is available)"
        )
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the `playwright` package (dev extra) is missing"
    )
    executable = _chromium()
    with sync_api.sync_playwright() as pw:
        args = (
            ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
        )  # root: no user namespace
        browser = pw.chromium.launch(executable_path=executable, args=args)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., str]]:
    """serve(**settings) -> base URL of a real server over create_app (rate limits off unless given)."""
    with ExitStack() as stack:

        def start(**overrides: Any) -> str:
            db = tmp_path_factory.mktemp("explorer-db") / "sessions.sqlite3"
            values: dict[str, Any] = {"rate_limit": "off", "database_url": f"sqlite+aiosqlite:///{db}"}
            app = create_app(Settings(**(values | overrides)))
            return stack.enter_context(running_server(app))

        yield start


@pytest.fixture(scope="module")
def base_url(serve: Callable[..., str]) -> str:
    return serve()


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("EXPLORER_TEST_ARTEFACTS")
    path = Path(chosen) if chosen else tmp_path_factory.mktemp("explorer-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    print(f"explorer screenshots: {path}")
    return path


class Page:
    """A browser page that records console errors, CSP violations and the quotes the page received."""

    def __init__(self, browser: Any, url: str, init_script: str = "", **context: Any) -> None:
        fake_clock = context.pop("fake_clock", False)
        self.context = browser.new_context(**context)
        if fake_clock:  # the page's timers and Date run on a clock the test can pause and move (it runs on)
            self.context.clock.install()
        if (
            init_script
        ):  # runs before the page's own scripts (injected by the browser, outside the page's CSP)
            self.context.add_init_script(init_script)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.quotes: dict[str, dict[str, Any]] = {}
        self.api_calls: list[str] = []  # "METHOD /v2/..." of every API request the page made, in order
        self.page.on("console", self._console)
        self.page.on("request", self._request)
        self.page.on("pageerror", lambda error: self.problems.append(f"pageerror: {error}"))
        self.page.on("response", self._response)
        self.page.goto(url + "/")

    def _console(self, message: Any) -> None:
        if message.type == "error" or "Content Security Policy" in message.text:
            self.problems.append(f"console {message.type}: {message.text}")

    def _request(self, request: Any) -> None:
        path = "/" + request.url.split("/", 3)[3]
        if path.startswith("/v2/"):
            self.api_calls.append(f"{request.method} {path}")

    def _response(self, response: Any) -> None:
        if response.url.endswith("/v2/quote") and response.status == 200:
            body = response.json()
            self.quotes[f"{body['intent']['from']}->{body['intent']['to']}"] = body

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[..., Page]]:
    pages: list[Page] = []

    def open_(url: str, **context: Any) -> Page:
        pages.append(Page(browser, url, **context))
        return pages[-1]

    yield open_
    for page in pages:
        page.close()


def units(base: str, symbol: str) -> str:
    """Exact token units, the way the page prints them (grouped integer part, no trailing zeros)."""
    with localcontext(prec=200):  # exact: far more digits than any amount has
        value = Decimal(int(base)).scaleb(-DECIMALS[symbol])
    whole, _, fraction = f"{value:f}".partition(".")
    fraction = fraction.rstrip("0")
    return f"{int(whole):,}" + (f".{fraction}" if fraction else "") + f" {symbol}"


def expect() -> Any:
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect


def wait_filled(page: Any) -> None:
    expect()(page.locator("#progress-text")).to_have_text(FILLED, timeout=TIMEOUT_MS)


# ---- without a browser: what the server sends -----------------------------------------------------------


def test_page_and_assets_are_served_with_a_strict_policy(base_url: str) -> None:
    with httpx.Client(base_url=base_url) as http:
        page = http.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert page.headers["x-content-type-options"] == "nosniff"
        for name, media in (
            ("explorer.js", "text/javascript"),
            ("sse.js", "text/javascript"),
            ("follow.js", "text/javascript"),
            ("explorer.css", "text/css"),
            ("favicon.svg", "image/svg+xml"),
        ):
            asset = http.get(f"/explorer/{name}")
            assert asset.status_code == 200 and asset.headers["content-type"].startswith(media)
            assert asset.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        for missing in (
            "/explorer/index.html",
            "/explorer/..%2Fapp.py",
            "/explorer/",
            "/explorer/explorer.js.map",
        ):
            assert http.get(missing).status_code == 404, missing
    policy = dict(part.strip().split(" ", 1) for part in CONTENT_SECURITY_POLICY.split(";"))
    assert policy["default-src"] == "'none'" and policy["connect-src"] == "'self'"
    assert "unsafe" not in CONTENT_SECURITY_POLICY and "http" not in CONTENT_SECURITY_POLICY
    # nothing from another origin: every src/href of the page is a path on this one
    for ref in re.findall(r'(?:src|href)="([^"]*)"', page.text):
        assert ref.startswith("/explorer/"), ref


# ---- in Chromium ----------------------------------------------------------------------------------------


def test_matrix_fills_and_a_cell_opens_its_exact_quote(
    browser: Any, base_url: str, open_page: Callable[..., Page], artefacts: Path
) -> None:
    view = open_page(base_url, viewport={"width": 1440, "height": 1000})
    page = view.page
    wait_filled(page)
    cells = page.locator("#matrix button[data-route]")
    assert cells.count() == 72
    costs = page.locator("#matrix button[data-route] .cost").all_inner_texts()
    assert len(costs) == 72 and all(re.fullmatch(r"\d+\.\d bps", c) for c in costs), costs
    assert page.locator("#matrix button.diagonal").all_inner_texts() == ["n/a"] * 9
    assert page.locator("#matrix button.failed").count() == 0
    # the whole fill: three reads and one route matrix, not one quote per cell (75 requests of 120 a minute)
    assert sorted(view.api_calls) == sorted(
        ["GET /v2/capabilities", "GET /v2/status", "GET /v2/capabilities/routes", "POST /v2/route-matrix"]
    ), view.api_calls
    assert view.quotes == {}

    # the overview: readiness counts and the reasons for routes that cannot be prepared
    overview = page.locator("#overview")
    expect()(overview).to_contain_text("Prepare-ready")
    with httpx.Client(base_url=base_url) as http:
        caps = http.get("/v2/capabilities").json()
        matrix = http.post("/v2/route-matrix", json={"amount_usd": 1000}).json()
    expect()(overview).to_contain_text(f"{caps['currently_prepare_ready_routes']} / 72 routes now")
    bounds = caps["route_readiness"]["prepare_ready_bounds"]  # where the prepared bounds come from, in words
    expect()(overview).to_contain_text(f"(bounds: {bounds['modelled']} modelled)")
    sessions = caps["sessions"]["session_ready_routes"]
    expect()(overview).to_contain_text(f"{sessions} / 72 routes can finish on this instance")
    if sessions < 72:  # the missing pieces, as the route document names them
        expect()(overview).to_contain_text(f"{72 - sessions} routes cannot run as a session")
        expect()(overview).to_contain_text("no RPC URL for base (ROUTEQUOTE_RPC_URL_BASE)")
    if caps["temporarily_unavailable_routes"]:  # every route may be prepare-ready: then no reasons list
        expect()(overview).to_contain_text(
            f"{len(caps['temporarily_unavailable_routes'])} routes cannot be prepared now"
        )
    # the embedded snapshot is called what it is, with its date: never a green "healthy", never "checked"
    day = matrix["market"]["data_as_of"][:10]
    expect()(page.locator("#market-badge")).to_have_text(re.compile(rf"^modelled snapshot from {day}\b"))
    expect()(page.locator("#market-badge")).to_have_class(re.compile(r"\bmodelled\b"))
    expect()(overview).not_to_contain_text("healthy")
    expect()(overview).not_to_contain_text("checked")
    expect()(overview).to_contain_text("not live")
    tagline = page.locator(".tagline")
    expect()(tagline).not_to_contain_text("Quote-only")
    expect()(tagline).to_contain_text("prepares unsigned actions and runs sessions")

    # a cell's cost is its route-matrix cell's expected cost, in bps
    cell = page.locator(f'#matrix button[data-route="{SELECTED}"]')
    priced = next(c for c in matrix["routes"] if c["route"] == SELECTED)
    expected_bps = f"{priced['expected_total_cost_percent'] * 100:.1f} bps"
    expect()(cell.locator(".cost")).to_have_text(expected_bps)

    with page.expect_response(lambda r: r.url.endswith("/v2/quote")) as opened:
        cell.click()
    quote = opened.value.json()  # opening a cell fetches its quote, which says what the cell said
    assert f"{quote['cost_summary']['expected_total_cost_percent'] * 100:.1f} bps" == expected_bps
    assert quote["offer"]["expected_output_base"] == priced["expected_output_base"]
    cell.click()
    panel = page.locator("#quote")
    expect()(panel.locator("h2")).to_have_text("solana:SOL → robinhood:ETH")
    steps = panel.locator(".path .step")
    assert steps.count() == len(quote["direct_route_summary"]["steps"]) == 4
    assert panel.locator(".path .fee-step").count() == 1
    fee_index = quote["direct_route_summary"]["fee_collection_step_index"]
    expect()(panel.locator(f'.path .step[data-step="{fee_index}"]')).to_have_class(
        re.compile(r"\bfee-step\b")
    )
    for i, step in enumerate(quote["direct_route_summary"]["steps"]):  # exact units from the decimal strings
        box = steps.nth(i)
        expect()(box).to_contain_text(step["provider"])
        expect()(box).to_contain_text(units(step["expected_input_base"], step["from"].split(":")[1]))
        expect()(box).to_contain_text(units(step["expected_output_base"], step["to"].split(":")[1]))
    offer = quote["offer"]
    expect()(panel.locator("#expected-receive")).to_contain_text(units(offer["expected_output_base"], "ETH"))
    expect()(panel.locator("#minimum-receive")).to_contain_text(units(offer["minimum_output_base"], "ETH"))
    # 18 decimals: more digits than a double holds, printed exactly (a float would round them away)
    assert len(offer["expected_output_base"]) > 17
    expect()(panel.locator("#data-source")).to_contain_text(quote["market"]["label"])
    expect()(panel.locator("#data-source")).to_contain_text("embedded snapshot")
    legs = len(quote["cost_summary"]["provider_fee_components"]) + 1  # + the service fee (+ price impact)
    assert panel.locator(".bar .seg").count() in (legs, legs + 1)
    unpriced = [g["chain"] for g in quote["cost_summary"]["network_gas"] if not g["priced"]]
    assert unpriced and panel.locator(".unpriced li", has_text="unpriced").count() >= len(unpriced)
    expect()(panel.locator("#ttl")).to_have_text(re.compile(r"^expires in \d+ s$"))
    # the Raydium first step is built from the embedded snapshot's pool state (labelled in the action)
    expect()(panel.locator(".readiness")).to_contain_text("Prepare: ready")
    # before signing: what any wallet needs along the route, as the route document says
    doc = httpx.get(f"{base_url}/v2/capabilities/routes").json()
    need = next(r for r in doc["routes"] if r["route"] == SELECTED)["before_signing"]
    for chain in need["sign_on"]:
        expect()(panel.locator("#before-signing")).to_contain_text(chain["text"])
    expect()(panel.locator("#before-signing")).to_contain_text("0.00203928 SOL rent")

    # keyboard: arrows move the focus between cells, Enter opens the focused cell's quote
    page.keyboard.press("ArrowRight")
    assert page.evaluate("() => document.activeElement.dataset.route") == "solana:SOL->robinhood:USDG"
    page.keyboard.press("ArrowDown")
    assert page.evaluate("() => document.activeElement.dataset.route") == "solana:USDC->robinhood:USDG"
    page.keyboard.press("Enter")
    expect()(panel.locator("h2")).to_have_text("solana:USDC → robinhood:USDG")
    expect()(panel.locator("#expected-receive")).to_contain_text("USDG")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")
    expect()(panel.locator("h2")).to_have_text("solana:SOL → robinhood:ETH")
    expect()(panel.locator("#expected-receive")).to_contain_text(units(offer["expected_output_base"], "ETH"))
    # its quote was still fresh: shown again without another request
    assert [c for c in view.api_calls if c == "POST /v2/quote"] == ["POST /v2/quote"] * 2
    cell.blur()

    page.screenshot(path=str(artefacts / "explorer-wide.png"), full_page=True)
    if os.environ.get("EXPLORER_WRITE_README_SCREENSHOT") == "1":
        README_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(README_SCREENSHOT), full_page=True)
    assert view.problems == []


def test_readable_on_a_phone(
    browser: Any, base_url: str, open_page: Callable[..., Page], artefacts: Path
) -> None:
    view = open_page(base_url, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = view.page
    wait_filled(page)
    # the page never scrolls sideways: only the matrix does, inside its own box, and says so
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    expect()(page.locator("#scroll-hint")).to_be_visible()
    # scrolled sideways, the corner header stays whole over the sticky row headers
    page.evaluate("() => { document.querySelector('.matrix-scroll').scrollLeft = 240; }")
    corner = page.evaluate(
        """() => { const c = document.querySelector('#matrix th.corner').getBoundingClientRect();
                   const box = document.querySelector('.matrix-scroll').getBoundingClientRect();
                   const th = document.querySelector('#matrix th.corner');
                   return {left: c.left, boxLeft: box.left, fits: th.scrollWidth <= th.clientWidth}; }"""
    )
    assert corner["left"] >= corner["boxLeft"] - 0.5 and corner["fits"], corner
    page.evaluate("() => window.scrollTo(0, 0)")
    page.locator('#matrix button[data-route="base:USDC->arbitrum:ETH"]').tap()
    expect()(page.locator("#quote h2")).to_have_text("base:USDC → arbitrum:ETH")
    # the tapped cell's quote is brought into view (it sits below the matrix on a phone)
    top = page.evaluate("() => document.querySelector('#quote h2').getBoundingClientRect().top")
    assert 0 <= top < 844, top
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(artefacts / "explorer-phone.png"), full_page=True)
    assert view.problems == []


# the route document as a server with routes that cannot be prepared now would answer it (this server prepares
# every route): a layout test of the ⊘ mark, so the page's own answer is edited in the browser, nowhere else
NOT_PREPARABLE = """
const realFetch = window.fetch;
window.fetch = async (...args) => {
  const response = await realFetch(...args);
  if (!String(args[0]).endsWith("/v2/capabilities/routes")) return response;
  const doc = await response.json();
  for (const r of doc.routes.slice(0, 20)) {
    r.prepare_ready = false; r.prepare_unavailable_reason = "test_reason"; r.prepare_unavailable_details = ["why"];
  }
  return new Response(JSON.stringify(doc), { status: 200, headers: { "content-type": "application/json" } });
};
"""


def test_the_no_prepare_mark_never_covers_the_cost(browser: Any, base_url: str, artefacts: Path) -> None:
    view = Page(browser, base_url, init_script=NOT_PREPARABLE, viewport={"width": 1280, "height": 900})
    try:
        page = view.page
        wait_filled(page)
        marks = page.locator("#matrix .mark-noprep")
        assert marks.count() == 20
        overlaps = page.evaluate(
            """() => [...document.querySelectorAll('#matrix .mark-noprep')].filter((m) => {
                 const a = m.getBoundingClientRect();
                 const b = m.closest('button').querySelector('.cost').getBoundingClientRect();
                 return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom; }).length"""
        )
        assert overlaps == 0
        expect()(page.locator("#overview")).to_contain_text("20 routes cannot be prepared now")
        page.screenshot(path=str(artefacts / "explorer-no-prepare-marks.png"))
    finally:
        view.close()


@pytest.mark.parametrize("amount", ["0", "5000", "ten"])
def test_an_invalid_amount_shows_the_servers_error_text(
    browser: Any, base_url: str, open_page: Callable[..., Page], artefacts: Path, amount: str
) -> None:
    with httpx.Client(base_url=base_url) as http:
        body = (
            '{"from_chain":"solana","from_token":"SOL","to_chain":"base","to_token":"ETH","amount_usd":%s}'
            % (amount if amount.isdigit() else f'"{amount}"')
        )
        refused = http.post("/v2/quote", content=body, headers={"content-type": "application/json"})
    assert refused.status_code == 400
    message = refused.json()["message"]
    view = open_page(base_url, viewport={"width": 1280, "height": 900})
    page = view.page
    wait_filled(page)
    before = page.locator("#matrix button[data-route] .cost").all_inner_texts()
    page.fill("#amount", amount)
    page.click("#fill-button")
    error = page.locator("#error")
    expect()(error).to_be_visible()
    expect()(error).to_contain_text(message)
    expect()(page.locator("#progress-text")).to_contain_text("the amount was refused")
    # the matrix of the last accepted amount stays, and one message says so (no second, contradictory banner)
    expect()(page.locator("#progress-text")).to_contain_text("the matrix still shows USD 1000")
    assert page.locator("#matrix button[data-route] .cost").all_inner_texts() == before
    expect()(page.locator("#notice")).to_be_hidden()
    if amount == "5000":
        page.screenshot(path=str(artefacts / "explorer-invalid-amount.png"))
    # a valid amount afterwards fills again and clears the error
    page.fill("#amount", "50")
    page.click("#fill-button")
    wait_filled(page)
    expect()(error).to_be_hidden()


def test_the_countdown_reaches_expired(
    browser: Any, serve: Callable[..., str], open_page: Callable[..., Page], artefacts: Path
) -> None:
    url = serve(quote_ttl_seconds=2)
    view = open_page(url, viewport={"width": 1280, "height": 900}, fake_clock=True)
    page = view.page
    wait_filled(page)
    page.locator('#matrix button[data-route="base:ETH->arbitrum:USDC"]').click()
    # record every text the countdown shows from a fresh quote on
    page.evaluate(
        """() => {
        window.ttlSeen = [];
        new MutationObserver(() => {
          const ttl = document.getElementById("ttl");
          if (ttl && ttl.textContent !== window.ttlSeen.at(-1)) window.ttlSeen.push(ttl.textContent);
        }).observe(document.getElementById("quote"), {subtree: true, childList: true, characterData: true});
      }"""
    )
    # The page's clock stands still from here and moves only when the test moves it: the countdown counts the
    # server's 2 s TTL from the moment the answer arrived, however late a busy machine renders it (on the wall
    # clock a loaded run showed its first count after the quote had already expired)
    page.clock.pause_at(page.evaluate("() => Date.now()") + 1000)
    page.evaluate("() => { window.ttlSeen = []; }")  # from the fresh quote on (the first one's count is over)
    page.click("#fresh-quote")
    ttl = page.locator("#ttl")
    expect()(ttl).to_have_text("expires in 2 s", timeout=TIMEOUT_MS)
    expect()(page.locator("#quote")).not_to_have_class(re.compile(r"\bexpired\b"))
    page.clock.run_for(1000)
    expect()(ttl).to_have_text("expires in 1 s", timeout=TIMEOUT_MS)
    page.clock.run_for(1000)
    expect()(ttl).to_have_text(re.compile(r"^expired"), timeout=TIMEOUT_MS)
    expect()(page.locator("#quote")).to_have_class(re.compile(r"\bexpired\b"))
    seen = page.evaluate("() => window.ttlSeen")
    counting = [t for t in seen if re.fullmatch(r"expires in \d+ s", t)]
    assert counting[:2] == ["expires in 2 s", "expires in 1 s"], seen
    assert seen.index(counting[0]) < seen.index(next(t for t in seen if t.startswith("expired"))), seen
    page.screenshot(path=str(artefacts / "explorer-expired.png"), full_page=True)
    assert view.problems == []


def test_reloads_stay_within_a_visitors_rate_limit(
    browser: Any, serve: Callable[..., str], open_page: Callable[..., Page]
) -> None:
    """A fill used to cost 75 requests: one reload at the default 120 a minute ran into 429s. Now it costs 4,
    so a limit of 8 a minute holds two full loads of the page."""
    url = serve(rate_limit="8/minute")
    for _ in range(2):
        view = open_page(url, viewport={"width": 1280, "height": 900})
        wait_filled(view.page)
        assert view.page.locator("#matrix button.failed").count() == 0
        assert len(view.api_calls) == 4, view.api_calls
        expect()(view.page.locator("#notice")).to_be_hidden()
        assert view.problems == []


def test_a_429_is_shown_and_retried_after_retry_after(
    browser: Any, serve: Callable[..., str], open_page: Callable[..., Page]
) -> None:
    # a fill sends 3 reads and the route matrix: a budget of 2 in 5 s is exceeded however slowly a busy machine
    # sends them
    url = serve(rate_limit="2/5 seconds")
    record_notices = """
        window.noticeSeen = [];
        document.addEventListener("DOMContentLoaded", () => {
          const notice = document.getElementById("notice");
          new MutationObserver(() => { if (!notice.hidden) window.noticeSeen.push(notice.textContent); })
            .observe(notice, {subtree: true, childList: true, characterData: true, attributes: true});
        });
    """
    view = open_page(url, init_script=record_notices, viewport={"width": 1280, "height": 900})
    page = view.page
    wait_filled(page)
    assert page.locator("#matrix button.failed").count() == 0  # every 429 was retried, none became a cell
    seen = page.evaluate("() => window.noticeSeen")
    assert any(
        "Rate limited by the server (limit 2/5 seconds per client exceeded); retrying in" in t for t in seen
    ), seen
    expect()(page.locator("#notice")).to_be_hidden()
    assert [p for p in view.problems if "429" not in p] == []  # the browser logs each 429 as a failed load
