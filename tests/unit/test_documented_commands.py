"""Command lines the docs tell a user to paste: run through a real shell, every argument must arrive intact
(an unquoted `->` is a redirection: `--route base:ETH->base:USDC` creates a file named `base:USDC`)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _docstring_command(path: Path) -> str:
    text = path.read_text()
    doc = text.split('"""')[1]
    lines = [ln.strip() for ln in doc.splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("python "))
    command = ""
    for ln in lines[start:]:
        command += ln.removesuffix("\\") + " "
        if not ln.endswith("\\"):
            break
    return command.strip()


@pytest.mark.parametrize("path", [ROOT / "examples" / "quote_to_prepare.py"], ids=lambda p: p.name)
def test_documented_command_survives_the_shell(path: Path, tmp_path: Path) -> None:
    command = _docstring_command(path)
    # the shell parses the line exactly as pasted; printf stands in for the program and prints each argument
    shown = subprocess.run(
        ["bash", "-c", "printf '%s\\n' " + command.split(" ", 2)[2]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert shown.returncode == 0, shown.stderr
    assert list(tmp_path.iterdir()) == [], "the shell created a file: an unquoted > redirected the output"
    assert shown.stdout.split("\n")[:-1] == shlex.split(command)[2:]
    route = shown.stdout.split("\n")[shown.stdout.split("\n").index("--route") + 1]
    assert re.fullmatch(r"[a-z]+:[A-Z]+->[a-z]+:[A-Z]+", route), route
