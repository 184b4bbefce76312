"""What the routequote.client tests share (tests/integration/test_client*.py): the routes they drive and the
acceptances their server's actions need. Their server (`url`) is in tests/integration/conftest.py."""

from __future__ import annotations

from typing import Any

ONE_STEP = "base:ETH->base:USDC"
MULTI = "base:ETH->arbitrum:USDC"

# the suite's servers price from the embedded snapshot: their actions' bounds are modelled, which a caller
# accepts explicitly (the refusal without it: test_client_refuses_modelled_bounds_unless_accepted)
EMBEDDED: dict[str, Any] = {"accept_modelled_bounds": True}
MODELLED_OK = ["--accept-modelled-bounds"]  # the same for the CLI and the example

# an operator's own recipients (the placeholders' refusal: test_client_refuses_a_placeholder_fee_recipient)
OPERATOR_FEE_RECIPIENTS = {
    "fee_recipient_evm": "0x" + "fe" * 20,
    "fee_recipient_solana": "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH",
}
