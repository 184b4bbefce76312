"""TokenMessengerMinterV2 program state the Solana mint needs: the fee recipient's USDC token account.

`receive_message` passes `fee_recipient_token_account`, which the program constrains to the associated token
account of `token_messenger.fee_recipient` for the local mint (circlefin/solana-cctp-contracts `programs/v2`,
`handle_receive_finalized_message.rs`: `associated_token::authority = token_messenger.fee_recipient`). The
`TokenMessenger` account lives at the PDA `["token_messenger"]` of TokenMessengerMinterV2; its Anchor layout
(`token_messenger_v2/state.rs`): 8-byte discriminator `sha256("account:TokenMessenger")[:8]`, denylister,
owner, pending_owner (32 bytes each), message_body_version u32, authority_bump u8, fee_recipient (32 bytes),
min_fee_controller (32 bytes), min_fee u32.
"""

from __future__ import annotations

import hashlib

from solders.pubkey import Pubkey

from routequote.core.actions import solana as sol
from routequote.core.actions.common import ActionUnavailable, associated_token_address
from routequote.core.assets import ASSETS

TOKEN_MESSENGER_DISCRIMINATOR = hashlib.sha256(b"account:TokenMessenger").digest()[:8]
FEE_RECIPIENT_OFFSET = 8 + 32 * 3 + 4 + 1
TOKEN_MESSENGER_LEN = FEE_RECIPIENT_OFFSET + 32 + 32 + 4


def token_messenger_address() -> str:
    """The TokenMessengerMinterV2 state account (PDA `["token_messenger"]`)."""
    return str(Pubkey.find_program_address([b"token_messenger"], sol.CCTP_TOKEN_MESSENGER_MINTER_V2)[0])


def fee_recipient(data: bytes) -> str:
    """The `fee_recipient` of a TokenMessenger account's data; ActionUnavailable if it is not one."""
    if len(data) < TOKEN_MESSENGER_LEN or data[:8] != TOKEN_MESSENGER_DISCRIMINATOR:
        raise ActionUnavailable(
            "cctp_token_messenger_state_unreadable",
            "the account is not a TokenMessengerMinterV2 TokenMessenger",
        )
    raw = data[FEE_RECIPIENT_OFFSET : FEE_RECIPIENT_OFFSET + 32]
    if raw == bytes(32):
        raise ActionUnavailable(
            "cctp_token_messenger_state_unreadable", "the TokenMessenger has no fee recipient"
        )
    return str(Pubkey.from_bytes(raw))


def fee_recipient_token_account(data: bytes) -> str:
    """The fee recipient's USDC associated token account, as `receive_message` must name it."""
    return str(associated_token_address(fee_recipient(data), ASSETS["solana:USDC"]))
