"""The A2A agent card: its skills (quote, prepare, session lifecycle), interface and version."""

from __future__ import annotations

from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill

from routequote.core.assets import ENDPOINT_KEYS
from routequote.core.routes import ROUTES
from routequote.surfaces.a2a_operation import MEDIA

CARD_VERSION = "1.7.0"
PROTOCOL_VERSION = "1.0"
A2A_PATH = "/a2a"
CARD_PATH = "/.well-known/agent-card.json"
CARD_ALIAS_PATH = "/.well-known/agent.json"
# the card changes only with a deploy: caches may keep it five minutes, then revalidate against its ETag (304)
CARD_CACHE_CONTROL = "public, max-age=300"


# ---- the card ------------------------------------------------------------------------------------------

_QUOTE_EXAMPLE = '{"fromChain":"solana","fromToken":"SOL","toChain":"base","toToken":"USDC","amountUsd":1000}'


def quote_skill() -> AgentSkill:
    return AgentSkill(
        id="quote-cross-chain-route",
        name="Quote a cross-chain route",
        description=(
            f"One fresh, fee-inclusive, non-binding quote between the nine asset endpoints ({len(ROUTES)} directed "
            "routes, USD 1 through 1,000). Send one data part with fromChain, fromToken, toChain, toToken, "
            'amountUsd (operation omitted or "quote"), optionally detail. Endpoints (chain:token, the only '
            f"valid pairs): {', '.join(ENDPOINT_KEYS)}; source and destination differ (an identity route is "
            'refused). Returns {decision}, a decision view of about 1 KB, or with detail "full" {quote, '
            "guidance}, the complete quote whose hashes verify: an unranked_candidate that expires; never select "
            "it automatically. Read-only: does not inspect balances and never prepares, signs or submits. Exact "
            "amounts are decimal strings."
        ),
        tags=["quote", "cross-chain", "bridge", "swap", "read-only", "non-custodial"],
        examples=[
            _QUOTE_EXAMPLE,
            '{"operation":"quote","fromChain":"base","fromToken":"ETH","toChain":"arbitrum",'
            '"toToken":"USDC","amountUsd":50}',
        ],
        input_modes=[MEDIA],
        output_modes=[MEDIA],
    )


def prepare_skill() -> AgentSkill:
    return AgentSkill(
        id="prepare-first-unsigned-action",
        name="Prepare the first unsigned action (one-shot)",
        description=(
            "Explicit one-shot prepare (POST /v2/prepare) of a single-step route the caller approved: operation "
            '"prepare", callerApproved true, fromChain, fromToken, toChain, toToken, amountUsd, wallets (chain -> '
            "public address), eventSignerPublic (Solana CCTP burns only), approvalV3 with selected_mode one_shot "
            "and the hash-bound verificationContext. Multi-step quotes reject one-shot. The context is checked "
            "before anything is prepared; the returned action is verified against your bounds and comes with a "
            "caller-wallet handoff carrying its own SHA-256. An action whose bounds are modelled from the "
            "embedded snapshot (safety_receipt.bounds.basis modelled) is withheld unless acceptModelledBounds is "
            "true. Nothing is signed or submitted, and the agent never chains actions."
        ),
        tags=["prepare", "unsigned-action", "one-shot", "non-custodial", "caller-approved"],
        examples=[
            '{"operation":"prepare","callerApproved":true,"fromChain":"base","fromToken":"USDC","toChain":'
            '"arbitrum","toToken":"USDC","amountUsd":100,"wallets":{"base":"0x...","arbitrum":"0x..."},'
            '"approvalV3":{"version":"routequote-quote-bound-approval-v3","selected_mode":"one_shot",...},'
            '"verificationContext":{"version":"routequote-one-shot-verification-context-v1",...,'
            '"verification_context_sha256":"..."}}'
        ],
        input_modes=[MEDIA],
        output_modes=[MEDIA],
    )


def session_skill() -> AgentSkill:
    return AgentSkill(
        id="session-lifecycle",
        name="Quote-bound, receipt-driven session lifecycle",
        description=(
            "Carry an approved quote through every step of its route (POST /v2/session and its reads and "
            "operations). One data part per message, one operation per message; the agent never chains. "
            "operation session_create: callerApproved true, fromChain, fromToken, toChain, toToken, amountUsd, "
            "wallets, eventSignerPublic (Solana CCTP burns only), approvalV3 with selected_mode session and "
            "idempotency_key equal to idempotencyKey, idempotencyKey, sessionToken (32 random bytes you generate, "
            "base64url, exactly 43 characters; never returned, never logged), the hash-bound session "
            "verificationContext and optionally webhook {url} (as on POST /v2/session: each event is POSTed there "
            "signed, and the signing secret is returned once, as session.webhook.secret). session_get (sessionToken, sessionId, view session|workflow|receipt|"
            "next_action), observe_source (idempotencyKey, transactionHashes: 1..8 hashes or signatures you "
            "submitted; used for every observe, source or destination: the service reads the chain itself), "
            "refresh_action and session_cancel (idempotencyKey): each with sessionToken, sessionId and the same "
            "verificationContext, checked before any call and against the session's route and wallets. Returns "
            "{session, guidance} plus, when the session holds an action, action_verification (routequote.verify) "
            "and a caller_wallet_handoff carrying its own SHA-256. A next step priced below your approval is "
            "reapproval_required with where the funds are (funds) and the intent to quote from there. An action "
            "with modelled bounds is withheld unless the call says acceptModelledBounds true."
        ),
        tags=[
            "session",
            "receipt-driven",
            "unsigned-action",
            "non-custodial",
            "caller-approved",
            "multi-step",
        ],
        examples=[
            '{"operation":"session_create","callerApproved":true,"fromChain":"base","fromToken":"ETH","toChain":'
            '"arbitrum","toToken":"USDC","amountUsd":100,"wallets":{"base":"0x...","arbitrum":"0x..."},'
            '"idempotencyKey":"k-0001abcd","sessionToken":"<43 base64url characters>","approvalV3":{"version":'
            '"routequote-quote-bound-approval-v3","selected_mode":"session","idempotency_key":"k-0001abcd",...},'
            '"verificationContext":{"version":"routequote-session-verification-context-v1",...}}',
            '{"operation":"observe_source","sessionToken":"<43 base64url characters>","sessionId":"<uuid>",'
            '"idempotencyKey":"obs-0001","transactionHashes":["0x..."],"verificationContext":{...}}',
        ],
        input_modes=[MEDIA],
        output_modes=[MEDIA],
    )


def agent_card(base_url: str, skills: list[AgentSkill]) -> AgentCard:
    return AgentCard(
        name="routequote",
        description=(
            "Non-custodial route quotes for agents moving value across solana, base, arbitrum and robinhood "
            "(SOL, ETH, USDC, USDG). Quotes are unranked candidates; the agent never auto-selects, never "
            "signs and never submits."
        ),
        version=CARD_VERSION,
        supported_interfaces=[
            AgentInterface(
                url=f"{base_url}{A2A_PATH}", protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION
            )
        ],
        provider=AgentProvider(organization="routequote (self-hosted)", url=base_url),
        documentation_url=f"{base_url}/v2/openapi.json",
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=[MEDIA],
        default_output_modes=[MEDIA],
        skills=skills,
    )
