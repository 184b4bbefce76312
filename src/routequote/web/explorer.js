// Route explorer. Reads /v2/capabilities and /v2/status once, then fills the route matrix with one
// POST /v2/route-matrix (every route priced at the amount, one request of the visitor's rate limit); opening
// a cell fetches that route's quote (POST /v2/quote). Token amounts are shown exactly: base-unit decimal
// strings are divided by 10^decimals with BigInt, never through floating point.
"use strict";

const HEAT_BPS = [5, 10, 20, 50, 100, 200]; // bucket edges of the heat colours (see the legend)
const MAX_TRIES = 5; // per request, counting retries after a 429

const state = {
  caps: null,
  status: null,
  endpoints: [], // "chain:TOKEN", in the server's order
  decimals: new Map(), // endpoint -> decimals
  prepareWhy: new Map(), // route -> reason it cannot be prepared now
  sessionWhy: new Map(), // route -> reason it cannot run as a session
  beforeSigning: new Map(), // route -> what any wallet needs along it (the route document's before_signing)
  shownAmount: null, // the amount the matrix shows (the last accepted fill)
  prepareBlocked: [], // {route, reason, details} from the route document
  sessionBlocked: [], // {route, reason}
  results: new Map(), // route -> its route-matrix cell ({route, priced, ...} or the error a quote would answer)
  quotes: new Map(), // route -> {ok, status, data, receivedAt}: quotes fetched for the quote panel
  market: null, // the route matrix's market block: where the numbers came from
  amountText: "",
  fill: 0, // generation of the current fill; a new fill or an error abandons the old one
  pausedUntil: 0, // after a 429: no request before this time (ms)
  pauseMessage: "",
  selected: null,
};

// ---- small helpers -------------------------------------------------------------------------------

function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

/** Replace a node's children; nested arrays are flattened and null / undefined / false skipped. */
function setChildren(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const symbolOf = (endpoint) => endpoint.split(":")[1];
const chainOf = (endpoint) => endpoint.split(":")[0];
const routeKey = (from, to) => `${from}->${to}`;

/** Exact token units from a base-unit decimal string: "319904091568617077", 18 -> "0.319904091568617077". */
function formatUnits(base, decimals) {
  const text = String(base);
  if (!/^\d+$/.test(text) || !Number.isInteger(decimals)) return "?";
  const digits = BigInt(text).toString().padStart(decimals + 1, "0");
  const whole = digits.slice(0, digits.length - decimals).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : whole;
}

/** "1.234 ETH" for a base-unit string of an endpoint ("base:ETH"). */
function amount(base, endpoint) {
  return `${formatUnits(base, state.decimals.get(endpoint))} ${symbolOf(endpoint)}`;
}

const usd = (value) => (typeof value === "number" ? `≈ $${value.toFixed(2)}` : "");

function duration(seconds) {
  if (typeof seconds !== "number") return "no ETA";
  if (seconds < 120) return `${seconds} s`;
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

function costBps(percent) {
  return typeof percent === "number" ? percent * 100 : null;
}

/** "modelled snapshot from 2026-11-20 (7 days old)": a market that is not live never looks like a live one. */
function marketText(market, serverTime) {
  if (market.live) return "live market data";
  const day = String(market.data_as_of || "").slice(0, 10);
  const age = Math.floor((Date.parse(serverTime) - Date.parse(market.data_as_of)) / 86400000);
  const old = Number.isFinite(age) && age >= 1 ? ` (${age} day${age === 1 ? "" : "s"} old)` : "";
  const what = market.source === "embedded_snapshot" ? "modelled snapshot" : `${market.source}: modelled data`;
  return `${what} from ${day}${old}`;
}

function heat(bps) {
  const bucket = HEAT_BPS.findIndex((edge) => bps < edge);
  return `heat-${bucket === -1 ? HEAT_BPS.length : bucket}`;
}

// ---- HTTP: one place for JSON calls, 429 handling included -----------------------------------------

async function call(method, path, body) {
  for (let attempt = 1; ; attempt += 1) {
    while (Date.now() < state.pausedUntil) await sleep(Math.min(500, state.pausedUntil - Date.now()));
    let response;
    try {
      const init = body === undefined ? { method } : { method, body, headers: { "content-type": "application/json" } };
      response = await fetch(path, init);
    } catch (error) {
      return { ok: false, status: 0, data: { message: `network error: ${error.message}` } };
    }
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = { message: `HTTP ${response.status} (no JSON body)` };
    }
    if (response.status === 429 && attempt < MAX_TRIES) {
      const wait = Math.max(1, parseInt(response.headers.get("retry-after") || "5", 10) || 5);
      state.pausedUntil = Math.max(state.pausedUntil, Date.now() + wait * 1000);
      state.pauseMessage = (data && data.message) || "rate limit exceeded";
      tick();
      continue;
    }
    return { ok: response.ok, status: response.status, data, receivedAt: Date.now() };
  }
}

/** The amount as JSON. A number-shaped amount goes as the number typed (the server judges it, exactly as
 * written); anything else goes as a string, and the server says why it is refused. */
function amountJson(amountText) {
  const jsonNumber = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(amountText);
  return jsonNumber ? amountText : JSON.stringify(amountText);
}

/** The JSON body of a quote request. */
function quoteBody(from, to, amountText) {
  return JSON.stringify({
    from_chain: chainOf(from), from_token: symbolOf(from), to_chain: chainOf(to), to_token: symbolOf(to),
    amount_usd: "__AMOUNT__",
  }).replace('"__AMOUNT__"', amountJson(amountText));
}

const requestQuote = (from, to) => call("POST", "/v2/quote", quoteBody(from, to, state.amountText));

/** Every route priced at the amount, in one request (same amount rule as a quote). */
const requestMatrix = (amountText) => call("POST", "/v2/route-matrix", `{"amount_usd":${amountJson(amountText)}}`);

// ---- overview: capabilities, status, prepare and session readiness ---------------------------------

function groupByReason(entries) {
  const groups = new Map();
  for (const entry of entries) {
    const why = (entry.details && entry.details[0]) || entry.reason || "unknown reason";
    if (!groups.has(why)) groups.set(why, []);
    groups.get(why).push(entry.route);
  }
  return groups;
}

function reasonList(title, entries) {
  if (!entries.length) return null;
  const items = [...groupByReason(entries)].map(([why, routes]) =>
    h("li", {}, h("p", { class: "why", text: why }), h("p", { class: "routes", text: routes.join(", ") })));
  return h("details", { class: "reasons" }, h("summary", { text: title }), h("ul", {}, items));
}

// "(bounds: 72 modelled)": where the prepared bounds come from, by count
function boundsText(readiness) {
  const counts = Object.entries((readiness && readiness.prepare_ready_bounds) || {}).filter(([, n]) => n);
  return counts.length ? ` (bounds: ${counts.map(([mode, n]) => `${n} ${mode.replaceAll("_", " ")}`).join(", ")})` : "";
}

function renderOverview() {
  const { caps, status } = state;
  const total = caps.directed_conversion_routes;
  const market = status.market || {};
  const health = status.route_health || {};
  const prepareBlocked = state.prepareBlocked;
  const sessions = caps.sessions || {};
  const sessionBlocked = state.sessionBlocked;
  const fact = (term, ...value) => [h("dt", { text: term }), h("dd", {}, ...value)];
  const priced = state.market; // the matrix's market block (null until the first fill)
  const modelled = priced && !priced.live;
  // a snapshot is not checked: its time is the data's, and it is modelled
  const sources = (market.sources || []).map((s) =>
    h("li", { class: s.ok ? "ok" : "bad" }, s.name === "embedded_snapshot"
      ? `${s.name}: ${marketText({ live: false, source: s.name, data_as_of: s.checked_at }, status.time)}`
      : `${s.name}: ${s.ok ? "ok" : "failing"}${s.reason ? ` (${s.reason})` : ""}${s.checked_at ? `, checked ${s.checked_at}` : ""}`));
  const badge = !priced ? h("span", { class: "badge", text: `${market.source || "?"} · …` })
    : h("span", { id: "market-badge", class: `badge ${modelled ? "modelled" : market.healthy ? "ok" : "bad"}`,
      text: modelled ? marketText(priced, status.time) : `live · ${market.healthy ? "healthy" : "unhealthy"}` });
  const overview = document.getElementById("overview");
  setChildren(overview,
    h("dl", { class: "facts" },
      fact("Service", `${caps.status} · API ${caps.version}`),
      fact("Signing", caps.server_signing === false && caps.server_submission === false
        ? "never signs, never submits" : "UNEXPECTED: server flags not false"),
      fact("Market", badge, modelled ? " not live: every number here is an estimate on modelled data" : null,
        h("ul", { class: "sources" }, sources)),
      fact("Quotable", `${health.quotable_routes ?? "?"} / ${total} routes`),
      fact("Prepare-ready", `${caps.currently_prepare_ready_routes} / ${total} routes now${boundsText(caps.route_readiness)}`),
      fact("Session-ready", `${sessions.session_ready_routes ?? 0} / ${total} routes can finish on this instance`),
      fact("Amounts", `USD ${caps.amount_usd.minimum}–${caps.amount_usd.maximum}; service fee ${caps.service_fee.bps} bp;` +
        ` quotes live ${caps.action_lifetime.quote_ttl_seconds} s`),
    ),
    reasonList(`${prepareBlocked.length} routes cannot be prepared now: why`, prepareBlocked),
    reasonList(`${sessionBlocked.length} routes cannot run as a session: why`, sessionBlocked),
  );
}

// ---- the matrix ----------------------------------------------------------------------------------

const cellOf = (route) => document.querySelector(`#matrix button[data-route="${CSS.escape(route)}"]`);

function buildMatrix() {
  const table = document.getElementById("matrix");
  const heading = (endpoint, scope) => h("th", { scope },
    h("span", { class: "chain", text: chainOf(endpoint) }), h("span", { class: "token", text: symbolOf(endpoint) }));
  const head = h("thead", {}, h("tr", {}, h("th", { scope: "col", class: "corner", text: "from \\ to" }),
    state.endpoints.map((to) => heading(to, "col"))));
  const rows = state.endpoints.map((from, r) => h("tr", {}, heading(from, "row"),
    state.endpoints.map((to, c) => {
      const same = from === to;
      const route = routeKey(from, to);
      return h("td", {}, h("button", {
        type: "button", class: same ? "cell diagonal" : "cell", "data-route": same ? null : route,
        "data-r": r, "data-c": c, tabindex: r === 0 && c === 1 ? "0" : "-1",
        "aria-disabled": same ? "true" : null, "aria-label": same ? `${from} to itself: not a route` : null,
      }, same ? h("span", { class: "cost", text: "n/a" }) : []));
    })));
  table.append(head, h("tbody", {}, rows));
  const scroller = table.closest(".matrix-scroll");
  const hint = () => { document.getElementById("scroll-hint").hidden = scroller.scrollWidth <= scroller.clientWidth + 1; };
  hint();
  window.addEventListener("resize", hint);
  table.addEventListener("click", (event) => {
    const cell = event.target.closest("button.cell");
    if (!cell || !cell.dataset.route) return;
    select(cell.dataset.route, cell);
    // stacked layout (a phone): the quote is below the matrix, out of sight; bring it into view
    const panel = document.getElementById("quote");
    if (panel.getBoundingClientRect().top >= window.innerHeight) panel.scrollIntoView({ block: "start" });
  });
  table.addEventListener("keydown", onMatrixKey);
}

function onMatrixKey(event) {
  const cell = event.target.closest("button.cell");
  if (!cell) return;
  const n = state.endpoints.length;
  let r = Number(cell.dataset.r);
  let c = Number(cell.dataset.c);
  const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  if (moves[event.key]) {
    r = Math.min(n - 1, Math.max(0, r + moves[event.key][0]));
    c = Math.min(n - 1, Math.max(0, c + moves[event.key][1]));
  } else if (event.key === "Home") c = 0;
  else if (event.key === "End") c = n - 1;
  else return;
  event.preventDefault();
  focusCell(document.querySelector(`#matrix button[data-r="${r}"][data-c="${c}"]`));
}

function focusCell(cell) {
  for (const other of document.querySelectorAll("#matrix button.cell[tabindex='0']")) other.tabIndex = -1;
  cell.tabIndex = 0;
  cell.focus();
}

function paintCell(route) {
  const cell = cellOf(route);
  const result = state.results.get(route);
  cell.className = "cell";
  if (state.prepareWhy.has(route)) cell.classList.add("no-prepare");
  if (route === state.selected) cell.classList.add("selected");
  const label = route.replace("->", " to ");
  if (!result) {
    setChildren(cell, h("span", { class: "pending", text: "…" }));
    cell.setAttribute("aria-label", `${label}: not quoted yet`);
    return;
  }
  if (!result.priced) {
    cell.classList.add("failed");
    const message = result.message || result.reason_class || result.error || "not priced";
    setChildren(cell, h("span", { class: "cost", text: "—" }), h("span", { class: "eta", text: "no price" }));
    cell.title = message;
    cell.setAttribute("aria-label", `${label}: no price now (${message})`);
    return;
  }
  const bps = costBps(result.expected_total_cost_percent);
  const eta = duration(result.estimated_time_seconds);
  cell.classList.add(bps === null ? "failed" : heat(bps));
  const costText = bps === null ? "? bps" : `${bps.toFixed(1)} bps`;
  // the ⊘ mark sits in the ETA line, in the flow: it can never cover the cost ("…bps")
  const mark = state.prepareWhy.has(route) ? [" ", h("span", { class: "mark-noprep", "aria-hidden": "true", text: "⊘" })] : [];
  setChildren(cell, h("span", { class: "cost", text: costText }), h("span", { class: "eta" }, eta, ...mark));
  cell.title = `${label}: ${costText}, ${eta}`;
  cell.setAttribute("aria-label", `${label}: expected cost ${costText}, ETA ${eta}` +
    (state.prepareWhy.has(route) ? ", cannot be prepared now" : ""));
}

function progress(done, failed, note) {
  document.getElementById("progress").value = done;
  const total = state.caps.directed_conversion_routes;
  const text = note || `${done} / ${total} routes priced${failed ? ` (${failed} without a price now)` : ""}`;
  document.getElementById("progress-text").textContent = text;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = !message;
}

function refused(result) {
  showError(`The server refused amount ${JSON.stringify(state.amountText)}: ` +
    `${(result.data && result.data.message) || "invalid request"}` +
    `${result.data && result.data.reason_class ? ` (${result.data.reason_class})` : ""}`);
  const kept = state.shownAmount === null ? "nothing is quoted yet" : `the matrix still shows USD ${state.shownAmount}`;
  progress(state.results.size, 0, `Not filled: the amount was refused; ${kept}.`);
}

async function fill() {
  const generation = ++state.fill;
  progress(state.results.size, 0, `pricing every route at USD ${state.amountText}…`);
  const answer = await requestMatrix(state.amountText);
  if (generation !== state.fill) return;
  if (answer.status === 400) { // the amount is refused: the matrix the user is looking at stays, one message
    refused(answer);
    return;
  }
  if (!answer.ok) {
    const data = answer.data || {};
    showError(`Could not price the routes (HTTP ${answer.status}): ${data.message || data.reason_class || ""}`);
    progress(state.results.size, 0, "Not filled: the server could not price the routes now.");
    return;
  }
  state.shownAmount = state.amountText;
  state.market = answer.data.market;
  state.results.clear();
  state.quotes.clear();
  state.selected = null;
  const panel = document.getElementById("quote");
  delete panel.dataset.expiresAt;
  panel.classList.remove("expired");
  setChildren(panel, h("h2", { id: "quote-title", text: "Quote" }),
    h("p", { class: "muted", text: "Select a cell of the matrix to fetch its quote." }));
  showError("");
  for (const cell of answer.data.routes) state.results.set(cell.route, cell);
  for (const route of state.results.keys()) paintCell(route);
  renderOverview();
  progress(answer.data.priced_routes, answer.data.unpriced_routes);
}

// ---- the quote panel -----------------------------------------------------------------------------

function select(route, cell) {
  const previous = state.selected;
  state.selected = route;
  if (previous && previous !== route) paintCell(previous);
  paintCell(route);
  if (cell) focusCell(cell);
  const kept = state.quotes.get(route);
  const live = kept && kept.ok && Date.now() < kept.receivedAt +
    (Date.parse(kept.data.expires_at) - Date.parse(kept.data.as_of));
  if (live) renderQuote();
  else refreshSelected(); // a matrix cell is not a quote: opening it asks for one
}

async function refreshSelected() {
  const route = state.selected;
  const [from, to] = route.split("->");
  const ttl = document.getElementById("ttl");
  if (ttl) ttl.textContent = "fetching a fresh quote…";
  else if (!state.quotes.has(route)) {
    setChildren(document.getElementById("quote"), h("h2", { id: "quote-title", text: route.replace("->", " → ") }),
      h("p", { class: "muted", text: "Fetching this route's quote…" }));
  }
  const result = await requestQuote(from, to);
  if (result.status === 400) {
    showError(`The server refused amount ${JSON.stringify(state.amountText)}: ` +
      `${(result.data && result.data.message) || "invalid request"}`);
    return;
  }
  state.quotes.set(route, result);
  if (state.selected === route) renderQuote();
}

function readiness(route, quote) {
  const prepare = state.prepareWhy.get(route);
  const session = state.sessionWhy.get(route);
  const modes = quote && quote.continuation_v3 ? quote.continuation_v3.allowed_modes.join(", ") : "?";
  const line = (label, why, yes) => h("li", { class: why ? "bad" : "ok" },
    h("strong", { text: `${label}: ` }), why ? `not available: ${why}` : yes);
  return h("ul", { class: "readiness" },
    line("Prepare", prepare, `ready (allowed modes: ${modes})`),
    line("Session", session, "ready"));
}

// what any wallet needs along the route; the caller's own balances are the preflight of a prepared action
function beforeSigning(route) {
  const need = state.beforeSigning.get(route);
  if (!need) return [];
  const items = need.sign_on.map((c) => h("li", { text: c.text }));
  for (const a of need.solana_token_accounts) {
    items.push(h("li", { text: `step ${a.step} creates your Solana ${a.token} token account if it does not exist: ` +
      `${formatUnits(String(a.rent_lamports_if_missing), 9)} SOL rent` }));
  }
  return [
    h("h3", { text: "Before you sign" }),
    h("ul", { class: "before-signing", id: "before-signing" }, ...items),
    h("p", { class: "muted", text: `Your own balances, gas, rent and time are checked by ${need.checked_per_wallet_by} (advice: it refuses nothing).` }),
  ];
}

function stepPath(quote) {
  const summary = quote.direct_route_summary;
  const perStep = (quote.eta && quote.eta.per_step_seconds) || [];
  const fee = quote.cost_summary.service_fee || {};
  const boxes = summary.steps.map((step, i) => {
    const isFee = step.index === summary.fee_collection_step_index;
    const chains = chainOf(step.from) === chainOf(step.to) ? chainOf(step.from) : `${chainOf(step.from)} → ${chainOf(step.to)}`;
    return [
      i ? h("li", { class: "arrow", "aria-hidden": "true", text: "→" }) : null,
      h("li", { class: isFee ? "step fee-step" : "step", "data-step": step.index },
        h("p", { class: "step-head" }, h("span", { class: "step-no", text: `${step.index + 1}` }),
          ` ${step.action} · `, h("strong", { text: step.provider })),
        h("p", { class: "step-chain", text: chains }),
        h("p", {}, h("span", { class: "k", text: "in " }), amount(step.expected_input_base, step.from)),
        h("p", {}, h("span", { class: "k", text: "out " }), amount(step.expected_output_base, step.to)),
        h("p", { class: "muted" }, h("span", { class: "k", text: "min " }), amount(step.minimum_output_base, step.to)),
        h("p", { class: "muted", text: typeof perStep[i] === "number" ? `~${duration(perStep[i])}` : "time not modelled" }),
        isFee ? h("p", { class: "fee-badge", text: `fee step · ${fee.bps} bp = ${amount(fee.amount_base, fee.token)}` }) : null),
    ];
  });
  return h("ol", { class: "path", "aria-label": "Step path, left to right" }, boxes);
}

function feeBar(quote) {
  const cost = quote.cost_summary;
  const parts = cost.provider_fee_components.map((c) => ({
    label: `${c.provider} ${c.kind.replaceAll("_", " ")}`, usd: c.expected_usd,
    text: `${amount(c.amount_base, c.token)} (max ${amount(c.maximum_amount_base, c.token)})`,
  }));
  const fee = cost.service_fee;
  parts.push({ label: `routequote service fee (${fee.bps} bp)`, usd: fee.estimated_usd, text: amount(fee.amount_base, fee.token), service: true });
  const listed = parts.reduce((sum, p) => sum + p.usd, 0);
  const rest = cost.expected_total_cost_usd - listed;
  if (rest > 0.000001) parts.push({ label: "price impact and rounding", usd: rest, text: "not a fee" });
  const total = parts.reduce((sum, p) => sum + p.usd, 0) || 1;
  const bar = h("div", { class: "bar", role: "img", "aria-label": "Fee components as shares of the expected cost" });
  const legend = h("ol", { class: "bar-legend" });
  parts.forEach((p, i) => {
    const segment = h("span", { class: `seg seg-${i % 6}${p.service ? " seg-service" : ""}` });
    segment.style.width = `${(100 * p.usd) / total}%`; // CSSOM, allowed by the page's CSP
    bar.append(segment);
    legend.append(h("li", {}, h("span", { class: `swatch seg-${i % 6}` }), h("strong", { text: p.label }), `: ${p.text} ${usd(p.usd)}`));
  });
  return [h("p", {}, `Expected cost ${usd(cost.expected_total_cost_usd)} (${(cost.expected_total_cost_percent * 100).toFixed(1)} bps),` +
    ` at most ${usd(cost.maximum_total_cost_usd)} (${(cost.maximum_total_cost_percent * 100).toFixed(1)} bps).`), bar, legend];
}

function unpriced(quote) {
  const cost = quote.cost_summary;
  const gas = (cost.network_gas || []).filter((g) => g.priced === false).map((g) =>
    h("li", {}, h("strong", { text: g.chain }), `: ${g.estimated_units.toLocaleString("en-US")} ${g.unit.replaceAll("_", " ")}`,
      ` (${g.actions.join(", ")}) — `, h("em", { text: "unpriced" })));
  const others = (cost.unpriced_costs || []).filter((c) => !c.startsWith("network_gas:")).map((c) =>
    h("li", {}, h("strong", { text: c.replaceAll("_", " ") }), " — ", h("em", { text: "unpriced" })));
  if (!gas.length && !others.length) return h("p", { text: "Every cost is priced." });
  return h("ul", { class: "unpriced" }, gas, others);
}

function sourceLabel(quote) {
  const market = quote.market || {};
  const kind = market.live ? "live" : "embedded snapshot";
  return h("p", { class: `source ${market.live ? "live" : "snapshot"}`, id: "data-source" },
    h("span", { class: "badge", text: `${kind}${market.data_as_of ? ` · ${market.data_as_of}` : ""}` }), " ",
    market.label || "no data-source label in this quote");
}

function renderQuote() {
  const panel = document.getElementById("quote");
  const route = state.selected;
  const result = state.quotes.get(route);
  const title = h("h2", { id: "quote-title", text: route.replace("->", " → ") });
  panel.classList.remove("expired");
  panel.dataset.route = route;
  if (!result) {
    setChildren(panel, title, h("p", { class: "muted", text: "Not quoted yet." }), readiness(route, null));
    return;
  }
  if (!result.ok) {
    const data = result.data || {};
    setChildren(panel, title, h("p", { class: "error", text: `No quote (HTTP ${result.status}): ${data.message || data.reason_class || ""}` }),
      h("button", { type: "button", onclick: refreshSelected, text: "Try again" }), readiness(route, null));
    return;
  }
  const quote = result.data;
  const offer = quote.offer;
  const ttlMs = Date.parse(quote.expires_at) - Date.parse(quote.as_of); // server's own TTL; local clock only counts
  panel.dataset.expiresAt = String(result.receivedAt + ttlMs);
  const to = quote.intent.to;
  setChildren(panel,
    title,
    sourceLabel(quote),
    h("p", { class: "ttl-line" }, h("span", { id: "ttl", class: "ttl" }), " ",
      h("button", { type: "button", id: "fresh-quote", onclick: refreshSelected, text: "Fresh quote" })),
    h("p", { class: "muted", text: `quote ${quote.quote_id} · ${quote.selection_status.replaceAll("_", " ")} — compare; never auto-select` }),
    h("h3", { text: "Steps" }),
    stepPath(quote),
    h("h3", { text: "Receive" }),
    h("dl", { class: "receive" },
      h("dt", { text: "Expected" }), h("dd", { id: "expected-receive" }, amount(offer.expected_output_base, to), ` ${usd(offer.expected_receive_usd)}`),
      h("dt", { text: "Minimum" }), h("dd", { id: "minimum-receive" }, amount(offer.minimum_output_base, to), ` ${usd(offer.estimated_min_receive_usd)}`),
      h("dt", { text: "ETA" }), h("dd", { text: quote.eta && !quote.eta.complete_route_estimate && quote.eta.note
        ? `none: ${quote.eta.note}` : duration(offer.estimated_time_seconds) })),
    h("h3", { text: "Fees" }),
    ...feeBar(quote),
    h("h3", { text: "Not priced" }),
    unpriced(quote),
    quote.cost_summary.warning ? h("p", { class: "warning", text: quote.cost_summary.warning }) : null,
    h("h3", { text: "Readiness" }),
    readiness(route, quote),
    ...beforeSigning(route),
  );
  tick();
}

// ---- one ticker: TTL countdown and the rate-limit notice ---------------------------------------------

function tick() {
  const now = Date.now();
  const notice = document.getElementById("notice");
  const paused = now < state.pausedUntil;
  notice.hidden = !paused;
  if (paused) {
    notice.textContent = `Rate limited by the server (${state.pauseMessage}); retrying in ${Math.ceil((state.pausedUntil - now) / 1000)} s.`;
  }
  const panel = document.getElementById("quote");
  const ttl = document.getElementById("ttl");
  if (!ttl || !panel.dataset.expiresAt) return;
  const left = Math.ceil((Number(panel.dataset.expiresAt) - now) / 1000);
  const text = left > 0 ? `expires in ${left} s` : "expired — fetch a fresh quote before using it";
  if (ttl.textContent !== text) ttl.textContent = text;
  panel.classList.toggle("expired", left <= 0);
}

// ---- start ---------------------------------------------------------------------------------------

async function start() {
  setInterval(tick, 250);
  // per-route detail (why a route cannot be prepared or run as a session) is capabilities' linked document
  const [caps, status, details] = await Promise.all([
    call("GET", "/v2/capabilities"), call("GET", "/v2/status"), call("GET", "/v2/capabilities/routes")]);
  if (!caps.ok || !status.ok || !details.ok) {
    const failed = [caps, status, details].find((r) => !r.ok);
    showError(`Could not read the service (HTTP ${failed.status}): ${(failed.data && failed.data.message) || ""}`);
    return;
  }
  state.caps = caps.data;
  state.status = status.data;
  state.endpoints = caps.data.asset_endpoints.map((e) => `${e.chain}:${e.token}`);
  for (const detail of caps.data.asset_details) state.decimals.set(detail.endpoint, detail.decimals);
  const routes = details.data.routes;
  state.prepareBlocked = routes.filter((r) => !r.prepare_ready).map((r) =>
    ({ route: r.route, reason: r.prepare_unavailable_reason, details: r.prepare_unavailable_details }));
  state.sessionBlocked = routes.filter((r) => !r.session_ready).map((r) =>
    ({ route: r.route, reason: r.session_unavailable_reason }));
  for (const [route, why] of groupByRoute(state.prepareBlocked)) state.prepareWhy.set(route, why);
  for (const [route, why] of groupByRoute(state.sessionBlocked)) state.sessionWhy.set(route, why);
  for (const r of routes) if (r.before_signing) state.beforeSigning.set(r.route, r.before_signing);
  document.getElementById("progress").max = caps.data.directed_conversion_routes;
  renderOverview();
  buildMatrix();
  const form = document.getElementById("amount-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    state.amountText = document.getElementById("amount").value.trim();
    fill();
  });
  state.amountText = document.getElementById("amount").value.trim();
  fill();
}

function groupByRoute(entries) {
  return entries.map((e) => [e.route, (e.details && e.details[0]) || e.reason || "unavailable"]);
}

document.addEventListener("DOMContentLoaded", start);
