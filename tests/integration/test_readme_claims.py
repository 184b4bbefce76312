"""What the README tells a newcomer holds (issue 39): its Python client example runs as pasted against a real
server on the `make serve` defaults (the verifier refuses the action, and the example says so), and its A2A
section names exactly the skills the served agent card has."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
NUMBERS = {"two": 2, "three": 3, "four": 4}


def _section(title: str) -> str:
    start = README.index(f"\n## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    port = free_port()
    with running_server(create_app(Settings(rate_limit="off", port=port)), port) as base:
        yield base


def test_the_python_client_example_runs_as_pasted(url: str, tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", _section("Python client"), re.S)
    assert len(blocks) == 1
    code = blocks[0]
    assert "http://127.0.0.1:8080" in code  # the `make serve` address, pointed at this test's server
    script = tmp_path / "example.py"
    script.write_text(code.replace("http://127.0.0.1:8080", url))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("base:ETH->base:USDC minimum out: "), out
    # the defaults' development fee recipient: the client refuses the action, and nothing is handed out
    assert "prepared action refused by the verifier" in out and "fee_recipient_not_configured" in out, out
    assert "checked by routequote.verify before it was shown" not in out  # describe_action never ran


def test_the_a2a_section_names_every_skill_of_the_card(url: str) -> None:
    card = httpx.get(url + "/.well-known/agent-card.json").json()
    served = {s["id"] for s in card["skills"]}
    agents = _section("Agents: MCP tools and the A2A agent")
    paragraph = agents[agents.index("skills: `") - 10 :].split("\n\n", 1)[0]
    count = re.search(r"(\w+) skills:", paragraph)
    assert count is not None and NUMBERS[count.group(1).lower()] == len(served), paragraph
    named = {m for m in re.findall(r"`([a-z]+(?:-[a-z]+)+)`", paragraph)}
    assert named == served, (named, served)
