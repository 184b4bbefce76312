"""Validate an answer against a component of a served OpenAPI 3.1 document (its schemas are JSON Schema 2020-12)."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator


def validate_component(document: dict[str, Any], name: str, instance: Any) -> None:
    """Raise jsonschema.ValidationError when `instance` is not a `#/components/schemas/<name>`."""
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    Draft202012Validator(schema).validate(instance)
