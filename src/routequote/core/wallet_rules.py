"""The one rule for a wallet that must sign (pure): it is a key that can sign, and it does not burn funds.

Used for every wallet a caller names and for `event_signer_public`: v2 prepare and session create (REST, MCP,
A2A all reach them), the v1 wallet login and the v1 corridor session. An address is refused when:

- Solana: it is not base58 of 32 bytes; it is off the Ed25519 curve (a PDA: no key exists for it); it is a
  program, sysvar, mint or pinned pool account of the address registry (the system and token programs, the
  USDC / USDG / wSOL mints, the CCTP, Orca and Raydium programs ...);
- EVM: it is not `0x` + 40 hex; it is mixed case with a broken EIP-55 checksum (all lower or all upper case
  carry no checksum and are accepted); it is zero or a precompile / reserved low address; it is a token or
  protocol contract of the registry (the deployments in use, the assets, the ERC-4337 EntryPoint ...);
- either: it is one of the service's own fee recipients.

An accepted address is returned in its one canonical form: EVM addresses EIP-55 checksummed, Solana as given
(base58 has one spelling per key).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from solders.pubkey import Pubkey

from routequote.core.actions import solana as sol
from routequote.core.actions import solana_swaps as sw
from routequote.core.actions.common import checksum
from routequote.core.actions.erc4337 import ENTRY_POINT_V07, SIMPLE_ACCOUNT_FACTORY_V07
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, EvmDeployment
from routequote.core.assets import ASSETS, CHAINS, TOKEN_2022_PROGRAM, Chain, ChainFamily
from routequote.core.field_rules import EVM_ADDRESS_RE, SOLANA_ADDRESS_RE
from routequote.errors import InvalidRequest

# Native programs and sysvars: none is a wallet (several are on the curve, so the curve check alone misses them).
SOLANA_NATIVE_ACCOUNTS = (
    "11111111111111111111111111111111",
    "ComputeBudget111111111111111111111111111111",
    "AddressLookupTab1e1111111111111111111111111",
    "BPFLoader2111111111111111111111111111111111",
    "BPFLoaderUpgradeab1e11111111111111111111111",
    "Config1111111111111111111111111111111111111",
    "NativeLoader1111111111111111111111111111111",
    "Stake11111111111111111111111111111111111111",
    "Vote111111111111111111111111111111111111111",
    "Sysvar1111111111111111111111111111111111111",
    "SysvarC1ock11111111111111111111111111111111",
    "SysvarRent111111111111111111111111111111111",
    "SysvarRecentB1ockHashes11111111111111111111",
    "SysvarS1otHashes111111111111111111111111111",
    "SysvarStakeHistory1111111111111111111111111",
    "SysvarEpochSchedu1e111111111111111111111111",
    "Sysvar1nstructions1111111111111111111111111",
)
RESERVED_EVM_BELOW = (
    0x10000  # zero, the precompiles and the other reserved low addresses: no key hashes there
)


@dataclass(frozen=True, slots=True)
class KnownAddresses:
    """The registry addresses no wallet may be (EVM lower case), and the service's fee recipients."""

    evm: frozenset[str]
    solana: frozenset[str]
    fee_recipients_evm: frozenset[str]
    fee_recipients_solana: frozenset[str]


def _solana_registry() -> set[str]:
    out = set(SOLANA_NATIVE_ACCOUNTS)
    programs = (
        sol.ATA_PROGRAM,
        sol.SYSTEM_PROGRAM,
        sol.CCTP_MESSAGE_TRANSMITTER_V2,
        sol.CCTP_TOKEN_MESSENGER_MINTER_V2,
        sw.ORCA_WHIRLPOOL_PROGRAM,
        sw.RAYDIUM_CLMM_PROGRAM,
        sw.MEMO_PROGRAM,
        sw.SPL_TOKEN,
    )
    out |= {str(p) for p in programs} | {TOKEN_2022_PROGRAM}
    for pool in sw.ORCA_POOLS.values():
        out |= {pool.whirlpool, pool.vault_a, pool.vault_b, pool.oracle}
    for rp in sw.RAYDIUM_POOLS.values():
        out |= {rp.pool, rp.amm_config, rp.vault_0, rp.vault_1, rp.bitmap_extension}
    return out


def known_addresses(
    deployments: Mapping[Chain, EvmDeployment] | None = None,
    fee_recipients: Mapping[ChainFamily, str] | None = None,
) -> KnownAddresses:
    """The registry (the pinned deployments, or the ones this instance uses) and the fee recipients."""
    evm: set[str] = {ENTRY_POINT_V07, SIMPLE_ACCOUNT_FACTORY_V07}
    for dep in (deployments or DEFAULT_DEPLOYMENTS).values():
        evm |= set(dep.tokens.values())
        contracts = (dep.swap_router02, dep.token_messenger_v2, dep.across_spoke_pool, dep.usdg_oft)
        evm |= {a for a in (*contracts, dep.message_transmitter_v2) if a}
    solana = _solana_registry()
    for asset in ASSETS.values():
        family = CHAINS[asset.chain].family
        for address in (asset.address, asset.wrapped_address):
            if address:
                (evm if family is ChainFamily.EVM else solana).add(address)
    fees = fee_recipients or {}
    return KnownAddresses(
        evm=frozenset(a.lower() for a in evm),
        solana=frozenset(solana),
        fee_recipients_evm=frozenset(a.lower() for a in _present(fees.get(ChainFamily.EVM))),
        fee_recipients_solana=frozenset(_present(fees.get(ChainFamily.SOLANA))),
    )


def _present(value: str | None) -> Iterable[str]:
    return (value,) if value else ()


def evm_checksum_ok(address: str) -> bool:
    """All lower or all upper case hex carries no checksum; mixed case must be exactly EIP-55."""
    digits = address[2:]
    if digits == digits.lower() or digits == digits.upper():
        return True
    return checksum(address) == address


def signing_wallet_problem(
    family: ChainFamily, address: object, known: KnownAddresses
) -> tuple[str, str] | None:
    """(rule, message) when `address` cannot be a signing wallet of `family`, else None. Messages never
    repeat the address."""
    if family is ChainFamily.EVM:
        if not isinstance(address, str) or not EVM_ADDRESS_RE.fullmatch(address):
            return "syntax", "must be a public 0x-prefixed 20-byte address"
        if not evm_checksum_ok(address):
            return (
                "checksum",
                "is mixed case but not its EIP-55 checksum (send it checksummed, or all lower case)",
            )
        if int(address, 16) < RESERVED_EVM_BELOW:
            return (
                "reserved",
                "is the zero address or a reserved / precompile address: nothing can sign for it",
            )
        if address.lower() in known.evm:
            return "contract", "is a token or protocol contract, not a wallet: funds sent there are lost"
        if address.lower() in known.fee_recipients_evm:
            return "fee_recipient", "is this service's fee recipient, not your wallet"
        return None
    if not isinstance(address, str) or not SOLANA_ADDRESS_RE.fullmatch(address):
        return "syntax", "must be a base58 32-byte public key (32..44 characters)"
    try:
        key = Pubkey.from_string(address)
    except ValueError:
        return "syntax", "must be a base58 32-byte public key (32..44 characters)"
    if len(bytes(key)) != 32 or str(key) != address:
        return "syntax", "must be a base58 32-byte public key (32..44 characters)"
    if address in known.solana:
        return "program_or_mint", "is a program, sysvar, mint or pool account, not a wallet"
    if address in known.fee_recipients_solana:
        return "fee_recipient", "is this service's fee recipient, not your wallet"
    if not key.is_on_curve():
        return "off_curve", "is off the Ed25519 curve (a program-derived address): no key can sign for it"
    return None


def canonical_address(family: ChainFamily, address: str) -> str:
    return checksum(address) if family is ChainFamily.EVM else address


def check_signing_wallet(
    family: ChainFamily, address: object, known: KnownAddresses, *, reason: str, field: str
) -> str:
    """The canonical form of `address`, or 400 `reason` naming `field` and the broken rule (in details)."""
    problem = signing_wallet_problem(family, address, known)
    if problem is not None:
        rule, message = problem
        raise InvalidRequest(reason, f"{field} {message}", details={"wallet_rule": rule})
    assert isinstance(address, str)
    return canonical_address(family, address)
