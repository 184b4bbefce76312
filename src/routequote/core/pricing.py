"""Price a route: exact integer base-unit amounts for every step, on the expected and the minimum path.

The expected path feeds each step the previous step's expected output. The minimum path feeds each
step the previous step's minimum output, prices it on the same market state and then applies the
step's tolerance, so the minimums chain and bound what a fresh execution may deliver. Every division
states its rounding: outputs and minimums round down, fees charged to the caller round up.
"""

from __future__ import annotations

from dataclasses import dataclass

from routequote.core.assets import CHAINS, Token
from routequote.core.clmm import ClmmMathError, swap_exact_input
from routequote.core.market import MarketView
from routequote.core.providers import PROVIDERS
from routequote.core.routes import Action, Provider, Route, Step
from routequote.errors import CapacityBusy, InvalidRequest, UpstreamUnavailable

SERVICE_FEE_BPS = 1
BPS = 10_000


def service_fee(amount_base: int) -> int:
    """The service fee: floor(amount * 1 / 10000) of the fee step's input. Never more, never twice."""
    return amount_base * SERVICE_FEE_BPS // BPS


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _bps_down(amount: int, bps: int) -> int:
    return amount * (BPS - bps) // BPS


@dataclass(frozen=True, slots=True)
class PricedStep:
    step: Step
    expected_input_base: int
    minimum_input_base: int
    expected_output_base: int
    minimum_output_base: int
    service_fee_base: int  # on the expected path, in input-token base units (0 off the fee step)
    service_fee_minimum_path_base: int
    provider_fee_base: int  # venue/bridge fee on the expected path, in input-token base units
    provider_fee_max_base: int  # the most the bounds allow it to reach, input-token base units
    native_fee_wei: int  # extra native fee paid beside the amount (LayerZero), expected
    native_fee_max_wei: int
    ticks_crossed: int
    tolerance_bps: int


@dataclass(frozen=True, slots=True)
class RoutePricing:
    route: Route
    market_version: str
    steps: tuple[PricedStep, ...]

    @property
    def input_base(self) -> int:
        return self.steps[0].expected_input_base

    @property
    def expected_output_base(self) -> int:
        return self.steps[-1].expected_output_base

    @property
    def minimum_output_base(self) -> int:
        return self.steps[-1].minimum_output_base

    @property
    def fee_step(self) -> PricedStep:
        return self.steps[self.route.fee_step_index]


def _swap_out(view: MarketView, step: Step, amount_in: int) -> tuple[int, int, int]:
    pool_id = step.pool_id
    assert pool_id is not None
    pool = view.pools.get(pool_id)
    if pool is None:
        raise UpstreamUnavailable("pool_state_unavailable", f"no state for pool {pool_id}")
    zero_for_one = step.source.key == pool.token0
    try:
        result = swap_exact_input(pool.clmm, zero_for_one, amount_in)
    except ClmmMathError as exc:  # the venue's code would refuse it (e.g. Orca: past the tick arrays held)
        raise InvalidRequest(
            "amount_exceeds_route_liquidity", f"pool {pool_id} cannot quote the amount: {exc}"
        ) from exc
    if result.amount_in < amount_in:
        raise InvalidRequest("amount_exceeds_route_liquidity", f"pool {pool_id} cannot absorb the amount")
    return result.amount_out, result.fee_amount, result.ticks_crossed


def _price_step(view: MarketView, step: Step, exp_in: int, min_in: int) -> PricedStep:
    fee_exp = service_fee(exp_in) if step.fee_step else 0
    fee_min = service_fee(min_in) if step.fee_step else 0
    x, m = exp_in - fee_exp, min_in - fee_min
    native = native_max = 0
    crossed = 0
    if step.action is Action.SWAP:
        tol = view.swap_tolerance_bps[step.pool_id or ""]
        out, lp_fee, crossed = _swap_out(view, step, x)
        out_m, lp_fee_m, _ = _swap_out(view, step, m) if m != x else (out, lp_fee, crossed)
        min_out = _bps_down(out_m, tol)
        prov_fee, prov_max = lp_fee, max(lp_fee, lp_fee_m)
    elif step.provider is Provider.CIRCLE_CCTP:
        domain = _cctp_domain(step)
        bps_milli = view.cctp.fast_fee_bps_milli[domain]
        fee = _ceil_div(x * bps_milli, BPS * 1000)
        max_fee = _ceil_div(
            _ceil_div(m * bps_milli, BPS * 1000) * (100 + view.cctp.max_fee_buffer_percent), 100
        )
        out, min_out = x - fee, m - max_fee
        prov_fee, prov_max, tol = fee, max_fee, 0
    elif step.provider is Provider.ACROSS:
        a = view.across
        fee = _ceil_div(x * (a.lp_fee_ppm + a.relayer_capital_fee_ppm), 1_000_000) + a.relayer_gas_fee_base
        fee_m = _ceil_div(m * (a.lp_fee_ppm + a.relayer_capital_fee_ppm), 1_000_000) + a.relayer_gas_fee_base
        out = x - fee
        min_out = _bps_down(m - fee_m, a.output_tolerance_bps)
        prov_fee, prov_max, tol = fee, m - min_out, a.output_tolerance_bps
    elif step.provider is Provider.PAXOS_OFT:
        # USDG has 6 decimals and 6 shared decimals: the OFT moves the amount 1:1 with no dust removal.
        out, min_out = x, m
        prov_fee = prov_max = tol = 0
        native = view.oft.native_fee_wei
        native_max = _ceil_div(native * (100 + view.oft.native_fee_buffer_percent), 100)
    else:  # pragma: no cover - the registry only composes the providers above
        raise AssertionError(step.provider)
    if out <= 0 or min_out <= 0:
        raise InvalidRequest(
            "amount_below_route_minimum", f"step {step.index} ({step.provider}) would deliver nothing"
        )
    return PricedStep(
        step=step,
        expected_input_base=exp_in,
        minimum_input_base=min_in,
        expected_output_base=out,
        minimum_output_base=min(min_out, out),
        service_fee_base=fee_exp,
        service_fee_minimum_path_base=fee_min,
        provider_fee_base=prov_fee,
        provider_fee_max_base=prov_max,
        native_fee_wei=native,
        native_fee_max_wei=native_max,
        ticks_crossed=crossed,
        tolerance_bps=tol,
    )


def _cctp_domain(step: Step) -> int:
    domain = CHAINS[step.source.chain].cctp_domain
    assert domain is not None
    return domain


def route_components(route: Route) -> tuple[str, ...]:
    """Market components a quote of `route` reads: its pools / providers and the USD prices it uses
    (`price:<TOKEN>` for every token on the path, plus ETH where a native LayerZero fee is paid)."""
    comps = [s.pool_id or s.provider.value for s in route.steps]
    tokens = {t for s in route.steps for t in (s.source.token, s.target.token)}
    if any(PROVIDERS[s.provider].native_messaging_fee for s in route.steps):
        tokens.add(Token.ETH)
    comps += [f"price:{t.value}" for t in sorted(tokens)]
    return tuple(comps)


def check_route_available(route: Route, view: MarketView) -> None:
    """Raise when a component the route needs is unavailable in `view`: 503 when its upstream is
    rate-limiting (reason starting `rate_limited`), else 502. The reason names the source and why."""
    for comp in route_components(route):
        reason = view.unavailable.get(comp)
        if reason:
            details = {"unavailable_component": comp}
            if reason.startswith("rate_limited"):
                raise CapacityBusy(
                    "market_source_rate_limited", reason, retry_after_seconds=15, details=details
                )
            raise UpstreamUnavailable(
                "market_source_unavailable", reason, retry_after_seconds=5, details=details
            )


def price_route(route: Route, input_base: int, view: MarketView) -> RoutePricing:
    """Price every step of `route` for `input_base` source-token base units on `view`."""
    if input_base < 1:
        raise InvalidRequest("amount_below_route_minimum", "input rounds to zero base units")
    check_route_available(route, view)
    return RoutePricing(route, view.version, price_steps_from(route, 0, input_base, view))


def price_steps_from(route: Route, start: int, input_base: int, view: MarketView) -> tuple[PricedStep, ...]:
    """Price steps `start..end` of `route` for `input_base` base units of step `start`'s source token.

    A session re-quotes the rest of its route this way with the *verified actual* output of the previous
    step; the fee step (if it is still ahead) charges its 1 bp on that actual amount."""
    if not 0 <= start < len(route.steps):
        raise ValueError(f"step {start} is not in {route.key}")
    if input_base < 1:
        raise InvalidRequest("amount_below_route_minimum", "input rounds to zero base units")
    priced: list[PricedStep] = []
    exp_in = min_in = input_base
    for step in route.steps[start:]:
        ps = _price_step(view, step, exp_in, min_in)
        priced.append(ps)
        exp_in, min_in = ps.expected_output_base, ps.minimum_output_base
    return tuple(priced)
