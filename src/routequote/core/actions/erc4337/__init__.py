"""The destination settlement of the v1 corridor: one unsigned ERC-4337 user operation (EntryPoint v0.7).

Pure: no I/O, no clock, no keys. Everything the chain knows (the account address, whether it is deployed,
the EntryPoint nonce, the USDC permit nonce) is read by the caller and handed in.

Design
------
The CCTP mint lands USDC in the destination wallet, an EOA (`wallet`) that may hold no ETH. The settlement
is ONE `PackedUserOperation` sent by the wallet's smart account, a `SimpleAccount` of
`@account-abstraction/contracts` 0.7.0 whose owner is the wallet (`sender` = the account; when it is not
deployed yet, `initCode = factory ‖ createAccount(wallet, salt)` and `sender` is the counterfactual address
`factory.getAddress(wallet, salt)`, read by the caller). Its callData is
`SimpleAccount.executeBatch(dest[4], value[4] = 0, func[4])`:

1. `USDC.permit(wallet, account, amount, deadline, v, r, s)` - EIP-2612, signed by the wallet (the plan
   carries the EIP-712 typed data; `attach_permit_signature` puts v, r, s into the callData);
2. `USDC.transferFrom(wallet, account, amount)` - exactly the amount, nothing more can move;
3. `USDC.approve(router, amount)` from the account - an exact allowance, consumed by the swap;
4. `SwapRouter02.multicall(deadline, [exactInputSingle(USDC, WETH, fee, ADDRESS_THIS, amount, minimum, 0),
   unwrapWETH9(minimum, wallet)])` - the ETH lands in the wallet, never in the account.

No service fee is taken here (the corridor's fee is on the Solana swap). `paymasterAndData` is empty, so
the account pays the gas from its EntryPoint deposit or ETH balance: at most `maxGasCostWei` =
maxFeePerGas x (verificationGasLimit + callGasLimit + preVerificationGas); it must hold that much before
the operation is submitted (a zero-fee operation is possible when a bundler sponsors it).

Signing order (the service never signs): the wallet signs the permit typed data; the caller (or any
agent, with this pure module) calls `attach_permit_signature`, which yields the final callData and the
`userOpHash` (v0.7: `keccak256(abi.encode(keccak256(abi.encode(sender, nonce, keccak(initCode),
keccak(callData), accountGasLimits, preVerificationGas, gasFees, keccak(paymasterAndData))), entryPoint,
chainId))`); the wallet then signs the userOpHash as an EIP-191 personal message (SimpleAccount v0.7
recovers `toEthSignedMessageHash(userOpHash)`), and a bundler submits `handleOps`.

Bounds the plan states (`bounds`): exact USDC in, minimum ETH out and its recipient (the wallet), the
permit deadline (= the swap deadline, at most `MAX_PERMIT_WINDOW_SECONDS` after preparation), the targets
allowlist (USDC and the router only, every value 0), the pool fee, and the gas cap. The user operation's
validity is bounded by that deadline: after it, the permit and the swap revert. `routequote.verify.
verify_settlement_plan` re-derives the callData byte for byte from the caller's own values;
`routequote.core.sessions.evidence_4337.verify_userop_settlement` holds the mined `handleOps` to the plan.

Pinned addresses: EntryPoint v0.7 `0x0000000071727De22E5E9d8BAf0edAc6f37da032` (chains.md §7);
SimpleAccountFactory v0.7 `0x91E60e0613810449d098b0b5Ec8b51A0FE8c8985` (eth-infinitism deployment, two
independent third-party catalogs agree); USDC's EIP-712 domain `{name: "USD Coin", version: "2"}` on Base
and Arbitrum (chains.md §2, confirm with `name()` / `version()` when online).
"""

from __future__ import annotations

from routequote.core.actions.erc4337.abi import (
    ARG_TYPES,
    ENTRY_POINT_V07,
    PACKED_USER_OP,
    SELECTORS,
    SIGNATURES,
    SIMPLE_ACCOUNT_FACTORY_V07,
    call,
    decode_args,
    handle_ops_call_data,
    init_code,
    pack_uint128_pair,
    unpack_uint128_pair,
)
from routequote.core.actions.erc4337.chain_reads import (
    account_address_call,
    decode_address,
    decode_uint,
    entry_point_nonce_call,
    permit_nonce_call,
)
from routequote.core.actions.erc4337.permit import (
    EIP712_DOMAIN_TYPE,
    NO_PERMIT_SIGNATURE,
    PERMIT_TYPE,
    SECP256K1_HALF_N,
    USDC_PERMIT_DOMAIN,
    permit_digest,
    permit_typed_data,
    split_signature,
)
from routequote.core.actions.erc4337.plan import (
    DEFAULT_GAS,
    GAS_BOUNDS,
    MAX_GAS_COST_WEI,
    MAX_PERMIT_WINDOW_SECONDS,
    MIN_PERMIT_WINDOW_SECONDS,
    PLAN_KIND,
    PLAN_VERSION,
    UNISWAP_FEE_TIERS,
    GasSettings,
    SettlementRequest,
    build_settlement_plan,
    check_gas,
)
from routequote.core.actions.erc4337.plan_view import (
    PlanView,
    attach_permit_signature,
    packed_user_operation,
    rpc_user_operation,
)
from routequote.core.actions.erc4337.user_operation import SettlementCalls, settlement_calls, user_op_hash

__all__ = [
    "ARG_TYPES",
    "DEFAULT_GAS",
    "EIP712_DOMAIN_TYPE",
    "ENTRY_POINT_V07",
    "GAS_BOUNDS",
    "GasSettings",
    "MAX_GAS_COST_WEI",
    "MAX_PERMIT_WINDOW_SECONDS",
    "MIN_PERMIT_WINDOW_SECONDS",
    "NO_PERMIT_SIGNATURE",
    "PACKED_USER_OP",
    "PERMIT_TYPE",
    "PLAN_KIND",
    "PLAN_VERSION",
    "PlanView",
    "SECP256K1_HALF_N",
    "SELECTORS",
    "SIGNATURES",
    "SIMPLE_ACCOUNT_FACTORY_V07",
    "SettlementCalls",
    "SettlementRequest",
    "UNISWAP_FEE_TIERS",
    "USDC_PERMIT_DOMAIN",
    "account_address_call",
    "attach_permit_signature",
    "build_settlement_plan",
    "call",
    "check_gas",
    "decode_address",
    "decode_args",
    "decode_uint",
    "entry_point_nonce_call",
    "handle_ops_call_data",
    "init_code",
    "pack_uint128_pair",
    "packed_user_operation",
    "permit_digest",
    "permit_nonce_call",
    "permit_typed_data",
    "rpc_user_operation",
    "settlement_calls",
    "split_signature",
    "unpack_uint128_pair",
    "user_op_hash",
]
