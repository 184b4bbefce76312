"""Discovery and trust documents: signed manifest, safety document, API index, llms.txt, evaluation
workflow, terms/privacy/security/pricing pages and route economics, all built from configuration and
code. See `Discovery`."""

from routequote.discovery.discovery import Discovery
from routequote.discovery.keys import SigningKey, SigningKeyError, load_signing_key

__all__ = ["Discovery", "SigningKey", "SigningKeyError", "load_signing_key"]
