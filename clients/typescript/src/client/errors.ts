/** The client's errors, the service's error tree (port of routequote/client/errors.py). None carries a
 * session token: only what the server answered (which never echoes one) and what the client found. */
import type { components } from "../generated/v2.js";
import type { Finding } from "../verify/common.js";

export type ErrorBody = components["schemas"]["ErrorResponse"];

export class ClientError extends Error {
  override name = "ClientError";
}

/** The server's answer broke the contract (shape, custody flags, amounts). Never use it. */
export class ResponseInvalid extends ClientError {
  override name = "ResponseInvalid";
  constructor(
    readonly what: string,
    readonly problems: string[],
  ) {
    super(`${what} refused: ${problems.slice(0, 8).join("; ")}`);
  }
}

/** A prepared action failed the caller-side verifier; it is never handed out. */
export class ActionVerificationFailed extends ClientError {
  override name = "ActionVerificationFailed";
  constructor(readonly findings: Finding[]) {
    super(
      "prepared action refused by the verifier: " +
        findings
          .filter((f) => f.severity === "error")
          .map((f) => `${f.code}: ${f.message}`)
          .join("; "),
    );
  }
}

/** approvalFor was asked for bounds weaker than the quote's, or unusable ones; nothing was sent. */
export class ApprovalRefused extends ClientError {
  override name = "ApprovalRefused";
  constructor(
    readonly reasonClass: string,
    message: string,
  ) {
    super(`${reasonClass}: ${message}`);
  }
}

/** An error answer of the service (an ErrorResponse body). */
export class ServerError extends ClientError {
  override name = "ServerError";
  readonly error: string;
  readonly reasonClass: string | null;
  readonly detail: string;
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    const reason = typeof body.reason_class === "string" ? body.reason_class : null;
    const message = typeof body["message"] === "string" ? body["message"] : "";
    super(`${status} ${body.error} (${String(reason)}): ${message}`);
    this.error = body.error;
    this.reasonClass = reason;
    this.detail = message;
  }
}

/** The service refused the request (400, 404, 409): `reasonClass` names the rule that fired. */
export class Rejected extends ServerError {
  override name = "Rejected";
}

/** 409 reapproval_required: the approval no longer binds. `funds` says where a session's funds are parked and
 * `quoteFromHere` is the intent to quote from there. Nothing was built. */
export class ReapprovalRequired extends Rejected {
  override name = "ReapprovalRequired";
  readonly reason: string;
  readonly funds: Record<string, unknown> | null;
  readonly quoteFromHere: Record<string, unknown> | null;
  constructor(status: number, body: ErrorBody) {
    super(status, body);
    const reason = body["reason"] ?? body.reason_class;
    this.reason = typeof reason === "string" ? reason : "";
    this.funds = isRecord(body["funds"]) ? body["funds"] : null;
    this.quoteFromHere = isRecord(body["quote_from_here"]) ? body["quote_from_here"] : null;
  }
}

/** 429: wait `retryAfter` seconds (from Retry-After, else the body) before trying again. */
export class RateLimited extends ServerError {
  override name = "RateLimited";
  constructor(
    status: number,
    body: ErrorBody,
    readonly retryAfter: number | null,
  ) {
    super(status, body);
  }
}

/** 502/503/504 (or another 5xx): a market source, chain RPC, database or capacity is unavailable now. */
export class UpstreamUnavailable extends ServerError {
  override name = "UpstreamUnavailable";
  constructor(
    status: number,
    body: ErrorBody,
    readonly retryAfter: number | null,
  ) {
    super(status, body);
  }
}

/** The service could not be reached: nothing is known about the request's effect. */
export class ServiceUnreachable extends ClientError {
  override name = "ServiceUnreachable";
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}
