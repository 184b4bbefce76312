"""A JSON argument of the command line: inline JSON or a path to a JSON file (exit 2 when it is neither)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

console = Console()


def json_arg(value: str | None, name: str) -> Any:
    """A JSON value given inline or as a path to a JSON file."""
    if value is None:
        return None
    text = value
    if not value.lstrip().startswith(("{", "[")):
        try:
            text = Path(value).read_text()
        except OSError as exc:
            console.print(f"[red]{name}[/red]: not inline JSON and not a readable file ({exc.strerror})")
            raise typer.Exit(2) from None
    try:
        return json.loads(text)
    except ValueError:
        console.print(f"[red]{name}[/red]: not valid JSON")
        raise typer.Exit(2) from None
