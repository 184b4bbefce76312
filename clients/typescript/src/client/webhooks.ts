/** Verify a routequote session webhook before acting on it (a receiver's first step), the port of
 * routequote/client/webhooks.py:
 *
 *     const event = verifyWebhook(secret, rawBody, request.headers); // throws WebhookInvalid
 *
 * The secret is the `webhook.secret` of the session's create answer (`whsec_` + base64). The check is the
 * Standard Webhooks one, by the `standardwebhooks` package: HMAC-SHA256 over `id.timestamp.body`, compared in
 * constant time, and a timestamp within five minutes of now (a delivery replayed from long ago is refused).
 * The body must be UTF-8 and strict JSON (a repeated key is refused) holding one session event. Deliveries
 * are at least once: ignore an event `id` you have already handled. Pass the body exactly as received. */
import { Webhook } from "standardwebhooks";
import { ClientError, ResponseInvalid } from "./errors.js";
import { type SessionEvent, parseSessionEvent } from "./events.js";

/** The delivery is not from the service that holds this session's secret, is too old, or is not an event. */
export class WebhookInvalid extends ClientError {
  override name = "WebhookInvalid";
}

const NAMES = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function headerValues(headers: HeaderSource): Record<(typeof NAMES)[number], string> {
  const out: Record<string, string> = {};
  const get =
    headers instanceof Headers
      ? (name: string): unknown => headers.get(name)
      : (name: string): unknown => {
          const found = Object.entries(headers).filter(([k]) => k.toLowerCase() === name);
          if (found.length > 1) throw new WebhookInvalid(`the ${name} header is given twice`);
          return found[0]?.[1];
        };
  for (const name of NAMES) {
    let value = get(name);
    if (Array.isArray(value)) {
      if (value.length !== 1) throw new WebhookInvalid(`the ${name} header is given ${value.length} times`);
      value = value[0];
    }
    if (typeof value !== "string" || value === "") throw new WebhookInvalid(`the ${name} header is missing`);
    out[name] = value;
  }
  return out as Record<(typeof NAMES)[number], string>;
}

/** The event, once its signature and timestamp check out and its body is a strict-JSON session event;
 * otherwise WebhookInvalid. `body` is the request body as received (bytes, or the text they decode to). */
export function verifyWebhook(secret: string, body: string | Uint8Array, headers: HeaderSource): SessionEvent {
  if (typeof secret !== "string" || !secret.startsWith("whsec_")) throw new TypeError("the secret is the session's webhook.secret (`whsec_...`)");
  let text: string;
  try {
    text = typeof body === "string" ? body : new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(body);
  } catch {
    throw new WebhookInvalid("the webhook body is not UTF-8");
  }
  const values = headerValues(headers);
  let webhook: Webhook;
  try {
    webhook = new Webhook(secret);
  } catch {
    throw new TypeError("the webhook secret is not `whsec_` + base64");
  }
  try {
    webhook.verify(text, values, { jsonParse: false });
  } catch (e) {
    throw new WebhookInvalid(`webhook signature check failed: ${e instanceof Error ? e.message : "invalid"}`);
  }
  let event: SessionEvent;
  try {
    event = parseSessionEvent(text, "webhook body");
  } catch (e) {
    if (e instanceof ResponseInvalid) throw new WebhookInvalid(`the webhook body is refused: ${e.problems.join("; ")}`);
    throw e;
  }
  // the delivery's id is the event's (`<session_id>:<sequence>`, the same on every retry)
  if (values["webhook-id"] !== event.id) throw new WebhookInvalid("the webhook-id header is not the event's id");
  return event;
}
