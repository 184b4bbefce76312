export { canonicalJson, canonicalSha256, sha256Hex } from "./canonical.js";
export { assertBundleOk, verifyBundle, NOT_PORTED_CODE, type Intent, type VerifyOptions } from "./verify/bundle.js";
export { BundleRejected, type Finding } from "./verify/common.js";
export { verifySettlementPlan, type SettlementOptions } from "./verify/erc4337.js";
export { baseUnits, toDecimal } from "./client/amounts.js";
export {
  ActionVerificationFailed,
  ApprovalRefused,
  ClientError,
  RateLimited,
  ReapprovalRequired,
  Rejected,
  ResponseInvalid,
  ServerError,
  ServiceUnreachable,
  UpstreamUnavailable,
} from "./client/errors.js";
export {
  RouteQuoteClient,
  SessionHandle,
  SESSION_HEADER,
  approvalFor,
  errorFor,
  newIdempotencyKey,
  newSessionToken,
  type ApprovalV3,
  type Capabilities,
  type ClientOptions,
  type PreparedAction,
  type Quote,
  type QuoteIntentJson,
  type QuoteJson,
  type Session,
  type Status,
  type VerificationContext,
} from "./client/client.js";
export { feeRecipientFindings, isPlaceholder, FEE_RECIPIENT_REFUSAL_CODE } from "./verify/fee_recipient.js";
export { evmSendRequests, solanaTransactionMessage, NotVerified, type EvmSendRequest, type SolanaHandoff } from "./client/handoff.js";
export { DuplicateKey, parseStrictJson, readStrictJson, type StrictJson } from "./client/strict_json.js";
export {
  parseSessionEvent,
  type EventFunds,
  type EventOutcome,
  type EventsHandle,
  type EventsOptions,
  type EventTransaction,
  type SessionEvent,
  type SessionEventJson,
} from "./client/events.js";
export { verifyWebhook, WebhookInvalid } from "./client/webhooks.js";
export type { Deployments } from "./verify/evm.js";
export type { PinnedDeployment } from "./pinned-types.js";
