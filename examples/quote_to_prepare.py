"""Quote -> compare two amounts -> approve -> prepare -> verify, and print what a wallet would be asked to sign.

    python examples/quote_to_prepare.py --url http://127.0.0.1:8080 \
        --route 'base:ETH->base:USDC' --amounts 100 1000 --wallet base=0xYourPublicAddress

Against `make serve` (development fee placeholders, the embedded market snapshot) add
--accept-unconfigured-fee-recipient and --accept-modelled-bounds: otherwise the client refuses the action because
its fee would go nowhere and its bounds are modelled, not live market data. Nothing here signs or submits. The client validates every answer (custody flags, amounts chaining, quote
hashes recomputed) and runs routequote.verify on the prepared action before returning it.
"""

from __future__ import annotations

import argparse
import time
from decimal import Decimal

from routequote.client import (
    ClientError,
    RouteQuoteClient,
    approval_for,
    describe_action,
    describe_preflight,
    token_amount,
)
from routequote.verify import verify_bundle


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8080")
    p.add_argument("--route", default="base:ETH->base:USDC")
    p.add_argument("--amounts", nargs=2, default=["100", "1000"], help="two USD notionals to compare")
    p.add_argument(
        "--wallet", action="append", default=[], help="chain=public address (once per required chain)"
    )
    p.add_argument(
        "--tighten-bps", type=int, default=5, help="raise the quote's minimum output by this many bps"
    )
    p.add_argument(
        "--accept-unconfigured-fee-recipient",
        action="store_true",
        help="accept a fee going to the server's development placeholder (local tests only)",
    )
    p.add_argument(
        "--accept-modelled-bounds",
        action="store_true",
        help="accept bounds modelled from the embedded snapshot, not live market data (local tests only)",
    )
    args = p.parse_args(argv)
    source, target = args.route.split("->")
    wallets = dict(w.split("=", 1) for w in args.wallet)

    with RouteQuoteClient(
        args.url,
        accept_unconfigured_fee_recipient=args.accept_unconfigured_fee_recipient,
        accept_modelled_bounds=args.accept_modelled_bounds,
    ) as rq:
        try:
            # 1. quote the route at two amounts and compare what each returns per dollar
            quotes = [rq.quote(source, target, Decimal(a)) for a in args.amounts]
            for a, q in zip(args.amounts, quotes, strict=True):
                print(
                    f"${a}: spend {token_amount(q.input_base, source)}, receive "
                    f"{token_amount(q.expected_output_base, target)} (min {token_amount(q.minimum_output_base, target)}), "
                    f"expected cost {q.raw['cost_summary']['expected_total_cost_percent']}%"
                )
            small, large = quotes
            # receive per input unit, compared exactly as a cross-multiplication of integers
            better = (
                "larger"
                if large.expected_output_base * small.input_base
                > small.expected_output_base * large.input_base
                else "smaller"
            )
            print(f"the {better} amount gets the better rate")
            chosen = small
            # 2. approve the chosen quote with our own, stricter minimum (weaker bounds are refused locally)
            minimum = chosen.minimum_output_base * (10_000 + args.tighten_bps) // 10_000
            minimum = min(minimum, chosen.expected_output_base)
            mode = chosen.continuation_v3.allowed_modes[0]
            approval = approval_for(chosen, mode, minimum_output_base=minimum)
            print(f"approved {chosen.raw['quote_id']} ({mode}) with minimum {token_amount(minimum, target)}")
            if not wallets:
                print("no --wallet given: stopping before prepare")
                return 0
            # 3. prepare: the client verifies the bundle before handing it over
            action = rq.prepare(chosen, wallets, approval=approval)
        except ClientError as exc:
            print(f"refused: {exc}")
            return 1
    # 4. verify again, explicitly, the way a wallet-side agent would just before signing
    findings = verify_bundle(
        action.raw,
        intent=chosen.request_intent(),
        wallets=wallets,
        approval_v3=approval,
        direct_route_summary=chosen.raw["direct_route_summary"],
        now_unix=int(time.time()),
        accept_modelled_bounds=args.accept_modelled_bounds,
    )
    errors = [f for f in findings if f.severity == "error"]
    print(f"verify_bundle: {len(errors)} error(s), {len(findings) - len(errors)} warning(s)")
    if errors:
        return 1
    # 5. what the wallet would be asked to sign
    print("your wallet would be asked to sign:")
    for line in describe_action(action):
        print("  " + line)
    # 6. what each chain of the route will need from your wallet (advice from chain reads; refuses nothing)
    for line in describe_preflight(action):
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
