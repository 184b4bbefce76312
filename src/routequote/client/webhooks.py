"""Verify a routequote session webhook before acting on it (a receiver's first step).

    from routequote.client import verify_webhook
    event = verify_webhook(secret, request_body_bytes, request_headers)   # raises WebhookInvalid

The secret is the `webhook.secret` of the session's create answer. The check is the Standard Webhooks one
(the `standardwebhooks` package): the HMAC-SHA256 signature over `id.timestamp.body`, and a timestamp within
five minutes of now (a replayed delivery from long ago is refused). The body must be strict JSON (no
duplicate keys, no NaN). Deliveries are at least once: use the event's `id` to ignore one you have seen.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from routequote.client.errors import ClientError
from routequote.client.plans import no_duplicate_keys, no_json_constant


class WebhookInvalid(ClientError):
    """The delivery is not from the service that holds this session's secret, or is too old. Drop it."""


def verify_webhook(secret: str, body: bytes | str, headers: Mapping[str, str]) -> dict[str, Any]:
    """The event, once its signature and timestamp check out; otherwise WebhookInvalid."""
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    try:
        Webhook(secret).verify(text, dict(headers), json_parse=False)
    except (WebhookVerificationError, ValueError) as exc:
        raise WebhookInvalid(f"webhook signature check failed: {exc}") from None
    try:
        event = json.loads(text, object_pairs_hook=no_duplicate_keys, parse_constant=no_json_constant)
    except ValueError as exc:  # a duplicate key or a non-JSON constant: read strictly, as every answer is
        raise WebhookInvalid(f"the webhook body is not strict JSON: {str(exc)[:80]}") from None
    if not isinstance(event, dict):
        raise WebhookInvalid("the webhook body is not a JSON object")
    return event
