"""Whether a route can be carried to complete on this instance, from its configuration.

Three levels per route: quotable (the market can price it), prepare-ready (its first action can be built, and
where that action's bounds come from: `live`, `modelled` or `live_or_modelled` when a live source may fall back
to the embedded snapshot), and session-ready (every step can be built *and* observed: an RPC URL for every
chain the route touches, Circle Iris for a CCTP attestation, LayerZero Scan and the pinned USDG OFT program
for an OFT delivery to Solana). An Across fill needs no lookup of its own: it is found in the destination
chain's logs. A reachable URL is not checked here (`routequote doctor` does); a configured one counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from routequote.core.assets import Chain
from routequote.core.bounds import BASIS_LIVE
from routequote.core.pricing import route_components
from routequote.core.routes import ROUTES, Provider, Route, Step
from routequote.market.mode import market_execution_mode

BOUNDS_LIVE = "live"
BOUNDS_MODELLED = "modelled"
BOUNDS_LIVE_OR_MODELLED = "live_or_modelled"  # live, but a failing source is priced from the snapshot
BOUNDS_NOTES = {
    BOUNDS_LIVE: "every bound is computed from live market data, or the route is not prepared",
    BOUNDS_MODELLED: "bounds are computed from the embedded (modelled, not live) market snapshot",
    BOUNDS_LIVE_OR_MODELLED: "bounds are live while every source answers; a failing source is priced from the "
    "embedded snapshot (ROUTEQUOTE_MARKET_FALLBACK=embedded) and those bounds are modelled",
}
SESSION_READY_MEANING = (
    "a session can be carried to complete on this instance: every step can be built, every chain the route "
    "touches has an RPC URL, every bridge lookup it needs is configured, and the USDG OFT program is pinned "
    "for an OFT route"
)


def rpc_setting(chain: Chain) -> str:
    return f"ROUTEQUOTE_RPC_URL_{chain.value.upper()}"


@dataclass(frozen=True)
class Observation:
    """What this instance is configured to observe with (from Settings; `from_settings`)."""

    rpc_chains: frozenset[Chain] = frozenset()
    iris: bool = True
    layerzero_scan: bool = True
    oft_program: str | None = None
    # why the OFT program is not pinned (oft_pin.OftPin.reason), and where a pin came from
    oft_reason: str | None = None
    oft_source: str | None = None

    @classmethod
    def from_settings(cls, settings: Any) -> Observation:
        urls = {
            Chain.SOLANA: settings.rpc_url_solana,
            Chain.BASE: settings.rpc_url_base,
            Chain.ARBITRUM: settings.rpc_url_arbitrum,
            Chain.ROBINHOOD: settings.rpc_url_robinhood,
        }
        return cls(
            rpc_chains=frozenset(c for c, u in urls.items() if u),
            iris=bool(settings.iris_url),
            layerzero_scan=bool(settings.layerzero_scan_url),
            oft_program=settings.usdg_oft_solana_program or None,
        )

    def report(self) -> dict[str, Any]:
        """Observation readiness per chain, the bridge lookups and the OFT pin (for /readyz and /v2/status)."""
        return {
            "chains": {
                c.value: {"rpc_url_configured": c in self.rpc_chains, "setting": rpc_setting(c)}
                for c in Chain
            },
            "circle_iris_configured": self.iris,
            "layerzero_scan_configured": self.layerzero_scan,
            "usdg_oft_solana_program": {
                "pinned": self.oft_program is not None,
                "program": self.oft_program,
                "source": self.oft_source or ("setting" if self.oft_program else "not_pinned"),
                "reason": self.oft_reason,
                "setting": "ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM",
            },
            "reachability_checked": False,  # configured is reported; `routequote doctor` reaches each one
        }


def route_chains(route: Route) -> list[Chain]:
    """Every chain the route touches, in the order it reaches them."""
    out: list[Chain] = []
    for step in route.steps:
        for chain in (step.source.chain, step.target.chain):
            if chain not in out:
                out.append(chain)
    return out


def observation_gaps(route: Route, obs: Observation) -> list[str]:
    """Why a session of `route` could not be observed to the end here: one line per missing piece."""
    gaps = [
        f"no RPC URL for {c.value} ({rpc_setting(c)})" for c in route_chains(route) if c not in obs.rpc_chains
    ]
    providers = {s.provider for s in route.steps}
    if Provider.CIRCLE_CCTP in providers and not obs.iris:
        gaps.append("no Circle Iris URL for CCTP attestations (ROUTEQUOTE_IRIS_URL)")
    if Provider.PAXOS_OFT in providers:
        if not obs.layerzero_scan:
            gaps.append("no LayerZero Scan URL to find the OFT delivery (ROUTEQUOTE_LAYERZERO_SCAN_URL)")
        if obs.oft_program is None:
            gaps.append(
                "USDG OFT program on Solana not pinned: an OFT arrival cannot be verified "
                + (f"({obs.oft_reason})" if obs.oft_reason else "(ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM)")
            )
    return gaps


def session_gaps(step_reason: Callable[[Step], str | None], obs: Observation | None) -> dict[str, list[str]]:
    """Route key -> each missing piece for a session: the first step this build cannot build (`step_reason`),
    then what observation lacks (`obs` None: readers wired by hand, not judged)."""
    out: dict[str, list[str]] = {}
    for key, route in ROUTES.items():
        gaps: list[str] = []
        for step in route.steps:
            reason = step_reason(step)
            if reason:
                gaps.append(
                    f"step {step.index} ({step.provider.value} on {step.source.chain.value}): {reason}"
                )
                break
        if obs is not None:
            gaps += observation_gaps(route, obs)
        if gaps:
            out[key] = gaps
    return out


def bounds_mode(market: Any) -> str:
    """Where prepared bounds come from, read off the instance's execution mode (one home:
    `market.mode.market_execution_mode`): `live`, `live_or_modelled` with the embedded fallback, else modelled."""
    mode = market_execution_mode(market)
    if mode["bounds"] != BASIS_LIVE:
        return BOUNDS_MODELLED
    return BOUNDS_LIVE_OR_MODELLED if mode["fallback_to_snapshot"] else BOUNDS_LIVE


def route_bounds(route: Route, mode: str, static_unavailable: Mapping[str, str]) -> str:
    """A route's bounds under `mode`: with the fallback, a component that has no live source at all (no RPC
    URL for its chain) is always priced from the snapshot, so that route's bounds are modelled."""
    if mode == BOUNDS_LIVE_OR_MODELLED and any(c in static_unavailable for c in route_components(route)):
        return BOUNDS_MODELLED
    return mode


def bounds_by_route(market: Any) -> dict[str, str]:
    mode = bounds_mode(market)
    static = getattr(market, "static_unavailable", None) or {}
    if mode != BOUNDS_MODELLED:
        ensure = getattr(market, "ensure_sources", None)
        if callable(ensure):  # the live market learns which sources are unconfigured when it builds them
            ensure()
        static = getattr(market, "static_unavailable", None) or {}
    return {key: route_bounds(route, mode, static) for key, route in ROUTES.items()}


def count_by(values: Iterable[str]) -> dict[str, int]:
    out = {BOUNDS_LIVE: 0, BOUNDS_MODELLED: 0, BOUNDS_LIVE_OR_MODELLED: 0}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out
