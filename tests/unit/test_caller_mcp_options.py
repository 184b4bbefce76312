"""`routequote mcp --remote`: the command line's accept options reach the one client every caller-side tool
uses (so the verifier sees them), and both are off unless given."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from routequote import caller_mcp
from routequote.caller_mcp import RemoteOptions, remote_client
from routequote.cli import app


def _options_of(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[str, RemoteOptions]:
    seen: list[tuple[str, RemoteOptions]] = []
    monkeypatch.setattr(caller_mcp, "serve_remote", lambda url, options: seen.append((url, options)))
    result = CliRunner().invoke(app, ["mcp", *args])
    assert result.exit_code == 0, result.output
    (got,) = seen
    return got


def test_the_accept_options_are_off_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    url, options = _options_of(["--remote", "https://quotes.example.org"], monkeypatch)
    assert url == "https://quotes.example.org"
    assert options == RemoteOptions(accept_modelled_bounds=False, accept_unconfigured_fee_recipient=False)
    _, both = _options_of(
        [
            "--remote",
            "https://quotes.example.org",
            "--accept-modelled-bounds",
            "--accept-unconfigured-fee-recipient",
        ],
        monkeypatch,
    )
    assert both == RemoteOptions(accept_modelled_bounds=True, accept_unconfigured_fee_recipient=True)


@pytest.mark.parametrize("modelled", [False, True])
@pytest.mark.parametrize("placeholder", [False, True])
def test_the_client_carries_them_to_its_verifier(modelled: bool, placeholder: bool) -> None:
    client: Any = remote_client("https://quotes.example.org", RemoteOptions(modelled, placeholder))
    assert (client.accept_modelled_bounds, client.accept_unconfigured_fee_recipient) == (
        modelled,
        placeholder,
    )
