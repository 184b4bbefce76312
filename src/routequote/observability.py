"""Request ids, log redaction and optional OpenTelemetry traces.

- Request ids: the request stack (`routequote.surfaces.request_stack`, the one ASGI layer) keeps a caller's
  `x-request-id` when it is sane (1..128 characters of `[A-Za-z0-9._:-]`), else makes one (`new_request_id`: a
  random per-process prefix and a counter, no system call per request); binds it for every log line written
  while the request runs (structlog contextvars) and echoes it as `x-request-id` on every answer.
- Redaction: ONE set of rules (`redact_text`, `redact_event`) applied to every log line: as a structlog
  processor, as a stdlib `logging.Filter` on the root handler, and in the stdlib record factory (so even a
  handler someone else attached, or an SDK's own, sees redacted records). What goes: values of credential-like
  fields (session tokens, access tokens, `Authorization`, cookies, login signatures, idempotency keys,
  passwords, keys named like secrets), `Bearer ...` strings, and anything of the secret shapes of
  `routequote.input_rules` (hex private keys, long base58 keypairs, mnemonics).
- Traces: `setup_tracing(settings)` builds an OpenTelemetry tracer provider only when
  ROUTEQUOTE_OTEL_EXPORTER is set; no SDK tracer or exporter is imported otherwise (FastAPI imports the API
  package; its own telemetry is off, see `app.create_app`).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import secrets
import sys
import time
from collections.abc import Iterator, Mapping, MutableMapping
from contextvars import ContextVar
from typing import Any

from starlette.types import Scope

from routequote.input_rules import looks_secret_name, looks_secret_value

REQUEST_ID_HEADER = "x-request-id"
REQUEST_ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,128}")
REDACTED = "<redacted>"
OTEL_EXPORTERS = ("none", "console", "otlp")

request_id_var: ContextVar[str | None] = ContextVar("routequote_request_id", default=None)


def sane_request_id(value: str | None) -> str | None:
    return value if value is not None and REQUEST_ID_RE.fullmatch(value) else None


_request_ids: Iterator[int] = itertools.count(1)
_request_id_prefix = ""


def _new_request_id_prefix() -> None:
    """20 random hex characters per process (a forked worker draws its own); with the 12-hex-digit counter an
    id is 32 hex characters, as a uuid4's hex was."""
    global _request_id_prefix, _request_ids
    _request_id_prefix = secrets.token_hex(10)
    _request_ids = itertools.count(1)


_new_request_id_prefix()
os.register_at_fork(after_in_child=_new_request_id_prefix)


def new_request_id() -> str:
    return f"{_request_id_prefix}{next(_request_ids) & 0xFFFFFFFFFFFF:012x}"


def current_request_id() -> str | None:
    return request_id_var.get()


# ---- redaction -----------------------------------------------------------------------------------------

# field names (lower case, `-` and `_` removed) whose value is never logged
_SECRET_FIELDS = frozenset(
    {
        "authorization",
        "proxyauthorization",
        "cookie",
        "setcookie",
        "xroutequotesessiontoken",
        "sessiontoken",
        "token",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "authtoken",
        "bearertoken",
        "apitoken",
        "apikey",
        "xapikey",
        "idempotencykey",
        "signature",
        "loginsignature",
        "signedmessage",
        "password",
        "passwd",
        "secret",
        "clientsecret",
        "privatekey",
        "secretkey",
        "seed",
        "seedphrase",
        "mnemonic",
        "credentials",
    }
)
# fields whose 64-hex / long base58 values are hashes, ids or transaction signatures by contract
_HASH_SUFFIXES = ("id", "ids", "hash", "hashes", "sha256", "fingerprint", "digest", "txid", "commit")

_NAME = (
    r"x-routequote-session-token|session[_-]?token|access[_-]?token|refresh[_-]?token|id[_-]?token|"
    r"auth[_-]?token|api[_-]?key|x-api-key|idempotency[_-]?key|login[_-]?signature|signature|password|passwd|"
    r"client[_-]?secret|secret|private[_-]?key|secret[_-]?key|mnemonic|seed[_-]?phrase|cookie|"
    r"proxy-authorization|authorization"
)
# `name: value`, `name=value`, `"name": "value"`, `(b'name', b'value')`; an auth scheme word is kept
_FIELD_IN_TEXT = re.compile(
    r"(?i)(?<![A-Za-z0-9])(" + _NAME + r")(['\"]?\s*[:=,]\s*(?:(?-i:b)?['\"])?)"
    r"((?:bearer|basic|token|digest)\s+)?(?!<redacted>)[^\s'\",;&)}\]]+"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+(?!<redacted>)[A-Za-z0-9._~+/=-]{8,}")
_HEX_SECRET_IN_TEXT = re.compile(
    r"(?<![0-9A-Za-z])(?:0[xX])?(?:[0-9a-fA-F]{128}|[0-9a-fA-F]{64})(?![0-9A-Za-z])"
)
_BASE58_SECRET_IN_TEXT = re.compile(
    r"(?<![1-9A-HJ-NP-Za-km-z])[1-9A-HJ-NP-Za-km-z]{80,90}(?![1-9A-HJ-NP-Za-km-z])"
)
_HEX_VALUE = re.compile(r"(?:0[xX])?[0-9a-fA-F]{64}")
_B58_VALUE = re.compile(r"[1-9A-HJ-NP-Za-km-z]{64,90}")


def _norm(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def secret_field(name: object) -> bool:
    """A field whose value is never logged (by its name)."""
    if not isinstance(name, str):
        return False
    n = _norm(name)
    return (
        n in _SECRET_FIELDS
        or n.endswith(("sessiontoken", "accesstoken", "idempotencykey"))
        or (looks_secret_name(name) and not n.endswith(_HASH_SUFFIXES))
    )


def _hash_field(name: object) -> bool:
    return isinstance(name, str) and _norm(name).endswith(_HASH_SUFFIXES)


def redact_text(text: str) -> str:
    """Free text (a message, an exception, a repr): credential fields, bearer strings, secret shapes."""
    if len(text) < 8:
        return text
    out = _FIELD_IN_TEXT.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3) or ''}{REDACTED}", text)
    out = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", out)
    out = _HEX_SECRET_IN_TEXT.sub(REDACTED, out)
    return _BASE58_SECRET_IN_TEXT.sub(REDACTED, out)


def redact_value(value: Any, field: object = None, depth: int = 0) -> Any:
    """One value of a structured log line, knowing the field it sits in."""
    if field is not None and secret_field(field):
        return REDACTED
    if isinstance(value, str):
        if _hash_field(field) and (_HEX_VALUE.fullmatch(value) or _B58_VALUE.fullmatch(value)):
            return value  # a hash, an id or a transaction signature, by the field's contract
        if looks_secret_value(value):
            return REDACTED
        return redact_text(value)
    if depth > 8:
        return REDACTED if isinstance(value, Mapping | list | tuple) else value
    if isinstance(value, Mapping):
        return {k: redact_value(v, k, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, field, depth + 1) for v in value]
    if isinstance(value, bytes):
        return redact_value(value.decode("utf-8", "replace"), field, depth + 1)
    return value


class _Redacted(dict[str, Any]):
    """A structlog event dict that has been through `redact_event` (the stdlib path does not redo it)."""


def redact_event(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """The structlog processor: every key and value of a log line."""
    if isinstance(event_dict, _Redacted):
        return event_dict
    out: dict[str, Any] = _Redacted()
    for key, value in event_dict.items():
        if key.startswith("_"):  # structlog's own (the stdlib record, the logger): never rendered
            out[key] = value
        elif key == "event" and isinstance(value, str):
            out[key] = redact_text(value)
        else:
            out[key] = redact_value(value, key)
    return out


def redact_record(record: logging.LogRecord) -> None:
    """A stdlib record, in place: its message (with the arguments merged in) and its traceback text."""
    if getattr(record, "_routequote_redacted", False):
        return
    record._routequote_redacted = True
    if isinstance(record.msg, dict):  # a structlog line, already redacted by its processors
        record.msg = redact_event(None, "", record.msg)
        return
    try:
        message = record.getMessage()
    except Exception:  # a broken format string: keep only the format, redacted
        message, record.args = str(record.msg), None
    red = redact_text(message)
    if red != message or record.args:
        record.msg, record.args = red, None
    if record.exc_info and not record.exc_text:
        record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
    elif record.exc_text:
        record.exc_text = redact_text(record.exc_text)


class RedactionFilter(logging.Filter):
    """On the root handler: every stdlib line (SDKs, uvicorn, drivers) passes the same rules."""

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record)
        return True


_previous_factory: Any = None


def install_record_factory() -> None:
    """Redact in the record factory too, so that no handler (pytest's, an SDK's) ever sees a raw record."""
    global _previous_factory
    if _previous_factory is not None:
        return
    _previous_factory = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = _previous_factory(*args, **kwargs)
        redact_record(record)
        return record

    logging.setLogRecordFactory(factory)


# ---- request ids (and the request span) ----------------------------------------------------------------


# ---- OpenTelemetry (optional) ----------------------------------------------------------------------------


# the method the client asked with, where the app is handed another (HEAD is served as GET)
ASKED_METHOD = "routequote.asked_method"


class Tracing:
    """A tracer provider of this app's own (not the process-global one), with its exporter."""

    def __init__(self, provider: Any, tracer: Any) -> None:
        self.provider = provider
        self.tracer = tracer

    @contextlib.contextmanager
    def server_span(self, scope: Scope, request_id: str, status: list[int]) -> Iterator[None]:
        from opentelemetry import propagate
        from opentelemetry.trace import SpanKind, Status, StatusCode

        carrier = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in scope.get("headers", ())
            if k in (b"traceparent", b"tracestate")
        }
        method = scope.get(ASKED_METHOD) or scope.get("method", "GET")  # HEAD, though the app sees GET
        with self.tracer.start_as_current_span(
            f"{method}",
            context=propagate.extract(carrier),
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "routequote.request_id": request_id},
        ) as span:
            try:
                yield
            finally:
                route: Any = scope.get("route")
                template = getattr(route, "path", None) or (
                    scope["path"] if scope.get("endpoint") else "unmatched"
                )
                span.update_name(f"{method} {template}")
                span.set_attribute("http.route", template)
                span.set_attribute("http.response.status_code", status[0])
                if status[0] >= 500:
                    span.set_status(Status(StatusCode.ERROR))

    @contextlib.contextmanager
    def span(self, name: str, **attributes: Any) -> Iterator[Any]:
        with self.tracer.start_as_current_span(name, attributes=attributes) as span:
            yield span

    def record_span(self, name: str, seconds: float, attributes: dict[str, Any]) -> None:
        """A child of the current span for work that just ended and took `seconds`."""
        end = time.time_ns()
        span = self.tracer.start_span(name, start_time=end - int(seconds * 1e9), attributes=attributes)
        span.end(end_time=end)

    def shutdown(self) -> None:
        self.provider.shutdown()


class TracingUnavailable(ValueError):
    pass


def otel_problem(exporter: str) -> str | None:
    """Why ROUTEQUOTE_OTEL_EXPORTER cannot be honoured here (None when it can, or when it is off)."""
    value = exporter.strip().lower()
    if value in ("", "none", "off"):
        return None
    if value not in OTEL_EXPORTERS:
        return f"ROUTEQUOTE_OTEL_EXPORTER: unknown exporter {exporter[:20]!r} (none, console or otlp)"
    import importlib.util

    def missing(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is None
        except ModuleNotFoundError:
            return True

    if missing("opentelemetry.sdk"):
        return (
            "ROUTEQUOTE_OTEL_EXPORTER: tracing needs the opentelemetry-sdk package, which is not installed "
            "(pip install 'routequote[otel]'), or unset the setting"
        )
    if value == "otlp" and missing("opentelemetry.exporter.otlp.proto.http"):
        return (
            "ROUTEQUOTE_OTEL_EXPORTER=otlp needs the opentelemetry-exporter-otlp-proto-http package "
            "(pip install 'routequote[otel]')"
        )
    return None


def setup_tracing(exporter: str, service_name: str = "routequote", version: str = "") -> Tracing | None:
    """The app's tracing, or None when ROUTEQUOTE_OTEL_EXPORTER is off (then nothing is imported)."""
    value = exporter.strip().lower()
    if value in ("", "none", "off"):
        return None
    problem = otel_problem(exporter)
    if problem:
        raise TracingUnavailable(problem)
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    span_exporter: Any
    if value == "console":
        span_exporter = ConsoleSpanExporter(out=sys.stderr)  # never stdout: `routequote mcp` speaks there
    else:  # otlp: endpoint, headers and protocol from the standard OTEL_EXPORTER_OTLP_* variables
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        span_exporter = OTLPSpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name, "service.version": version})
    )
    provider.add_span_processor(BatchSpanProcessor(span_exporter))
    return Tracing(provider, provider.get_tracer("routequote", version))
