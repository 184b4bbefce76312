"""Discovery and trust over real HTTP: the served manifest verifies with the served key; a byte flipped
in the manifest, the safety document or the key, or an expired manifest, makes `routequote
verify-manifest` exit non-zero with a message naming the cause; every indexed path answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from tests.support.server import free_port, running_server
from typer.testing import CliRunner

from routequote.app import create_app
from routequote.cli import app as cli
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.hashing import canonical_json
from routequote.core.manifest import MANIFEST_PATH, PUBLIC_KEY_PATH, SAFETY_PATH, key_id_for, load_public_key
from routequote.discovery.verify import verify_remote

runner = CliRunner()


def _serve(tmp: Path, **settings: Any) -> Any:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    clock = settings.pop("clock", None)
    app = create_app(
        Settings(
            rate_limit="off",
            base_url=base,
            dev_signing_key_path=str(tmp / "dev-key.pem"),
            **settings,
        ),
        clock=clock,
    )
    return running_server(app, port)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _serve(tmp_path_factory.mktemp("site")) as url:
        yield url


@pytest.fixture(scope="module")
def tamper(site: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A proxy in front of `site` that flips one byte of the document named in `mode['flip']`."""
    mode: dict[str, str] = {"flip": ""}

    async def relay(request: Request) -> Response:
        async with httpx.AsyncClient() as client:
            upstream = await client.get(site + request.url.path)
        body = bytearray(upstream.content)
        if mode["flip"] == request.url.path:
            marker = {
                MANIFEST_PATH: b'"service":"routequote',
                SAFETY_PATH: b'"exact_bps":1',
                PUBLIC_KEY_PATH: b"MCowBQYDK2VwAyEA",
            }[request.url.path]
            i = bytes(body).index(marker) + len(marker) - 1
            if request.url.path == PUBLIC_KEY_PATH:
                i += 10  # a byte of the key material itself
                # another valid base64 letter (a bit flip may leave the alphabet: then the PEM would not even parse)
                body[i] = ord("A") if body[i] != ord("A") else ord("B")
            else:
                body[i] ^= 0x01
        return Response(
            bytes(body), status_code=upstream.status_code, media_type=upstream.headers["content-type"]
        )

    proxy = Starlette(routes=[Route(p, relay) for p in (MANIFEST_PATH, SAFETY_PATH, PUBLIC_KEY_PATH)])
    with running_server(proxy) as url:
        yield url, mode


def test_served_manifest_is_canonical_and_verifies_with_the_served_key(site: str) -> None:
    with httpx.Client() as client:
        raw = client.get(site + MANIFEST_PATH)
        assert raw.status_code == 200 and raw.headers["content-type"].startswith("application/json")
        manifest = json.loads(raw.content)
        assert (
            raw.content
            == json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        )
        safety_raw = client.get(site + SAFETY_PATH).content
        assert safety_raw == canonical_json(json.loads(safety_raw))
        pem = client.get(site + PUBLIC_KEY_PATH).text
        assert key_id_for(load_public_key(pem)) == manifest["signature"]["key_id"]
        report = verify_remote(site, client=client, now=datetime.now(UTC), max_age_seconds=3600)
    assert report.ok, [str(f) for f in report.failures]
    assert manifest["signature"]["public_key_url"] == site + PUBLIC_KEY_PATH
    assert manifest["safety_bundle"]["url"] == site + SAFETY_PATH
    assert manifest["signing_key"]["development_key"] is True
    # the endpoints listed in the signed manifest are the mounted ones
    rest = {e["path"] for e in manifest["endpoints"]["rest_v2"]}
    assert {"/v2/capabilities", "/v2/status", "/v2/quote", "/v2/openapi.json"} <= rest
    assert {e["path"] for e in manifest["endpoints"]["rest_v1_legacy"]} >= {
        "/v1/status",
        "/v1/quote",
        "/openapi.json",
    }


def test_cli_verifies_a_good_instance_and_a_pinned_key(site: str, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["verify-manifest", site, "--max-age", "3600"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("OK ")
    # this instance signs with its own development key: the OK line says so, never a bare OK
    assert "development key: generated by the instance, not an operator's release key" in result.output
    pinned = tmp_path / "pinned.pub"
    pinned.write_bytes(httpx.get(site + PUBLIC_KEY_PATH).content)
    result = runner.invoke(cli, ["verify-manifest", site, "--public-key", str(pinned), "--json"])
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)["facts"]
    assert facts["public_key_source"] == "pinned" and facts["development_key"] is True


def test_cli_fails_on_a_key_it_was_not_pinned_to(site: str, tmp_path: Path) -> None:
    out = tmp_path / "other.pem"
    assert runner.invoke(cli, ["keys", "generate", "--out", str(out)]).exit_code == 0
    other_id = next(
        line
        for line in runner.invoke(cli, ["keys", "generate", "--out", str(out), "--force"]).output.splitlines()
        if line.startswith("key_id:")
    ).split()[1]
    result = runner.invoke(cli, ["verify-manifest", site, "--key-id", other_id])
    assert result.exit_code == 1
    assert "public_key_mismatch" in result.output


@pytest.mark.parametrize(
    ("path", "cause"),
    [
        (MANIFEST_PATH, "signature_invalid"),
        (SAFETY_PATH, "safety_pin_mismatch"),
        (PUBLIC_KEY_PATH, "key_id_mismatch"),
    ],
)
def test_one_flipped_byte_fails_verification_naming_the_cause(
    tamper: tuple[str, dict[str, str]], path: str, cause: str
) -> None:
    url, mode = tamper
    mode["flip"] = ""
    clean = runner.invoke(cli, ["verify-manifest", url, "--allow-other-origin"])
    assert clean.exit_code == 0, clean.output
    mode["flip"] = path
    try:
        result = runner.invoke(cli, ["verify-manifest", url, "--allow-other-origin"])
    finally:
        mode["flip"] = ""
    assert result.exit_code == 1, result.output
    assert f"FAIL {cause}:" in result.output, result.output


def test_documents_relayed_from_another_origin_are_refused_by_default(
    tamper: tuple[str, dict[str, str]],
) -> None:
    url, mode = tamper
    mode["flip"] = ""
    result = runner.invoke(cli, ["verify-manifest", url])
    assert result.exit_code == 1
    assert "FAIL origin_mismatch:" in result.output


def test_an_expired_manifest_fails(tmp_path: Path) -> None:
    past = FixedClock(datetime.now(UTC).replace(microsecond=0) - timedelta(days=3))
    with _serve(tmp_path, clock=past, manifest_valid_seconds=86400) as url:
        result = runner.invoke(cli, ["verify-manifest", url])
        assert result.exit_code == 1
        assert "FAIL manifest_expired:" in result.output
        assert "FAIL signature" not in result.output  # the signature itself is fine


def test_an_unreachable_instance_fails_with_fetch_failed() -> None:
    result = runner.invoke(cli, ["verify-manifest", f"http://127.0.0.1:{free_port()}", "--timeout", "2"])
    assert result.exit_code == 1
    assert "FAIL fetch_failed:" in result.output


def test_every_indexed_path_answers(site: str) -> None:
    with httpx.Client(base_url=site, timeout=60) as client:
        index = client.get("/.well-known/api-index.json").json()
        paths = {e["path"] for e in index["endpoints"]}
        for doc in (
            MANIFEST_PATH,
            PUBLIC_KEY_PATH,
            SAFETY_PATH,
            "/.well-known/api-index.json",
            "/llms.txt",
            "/.well-known/routequote-evaluation-workflow.json",
            "/v2/route-economics.json",
            "/evidence",
            "/terms",
            "/privacy",
            "/security",
            "/.well-known/security.txt",
            "/pricing",
            "/v2/openapi.json",
            "/openapi.json",
        ):
            assert doc in paths, doc
        llms = client.get("/llms.txt").text
        for e in index["endpoints"]:
            assert f"]({e['url']})" in llms, e["path"]
            if e["path"].startswith("/mcp") or "{" in e["path"]:
                continue  # GET /mcp would hold an idle stream; templated paths need ids
            if "GET" in e["methods"]:
                r = client.get(e["path"])
                assert r.status_code == 200, (e["path"], r.status_code)
                if "media_type" in e:
                    assert r.headers["content-type"].startswith(e["media_type"]), e["path"]
            elif "POST" in e["methods"]:
                r = client.post(e["path"], json={})
                assert 400 <= r.status_code < 500 or r.status_code == 200, (e["path"], r.status_code)


def test_pages_are_generated_from_configuration(site: str) -> None:
    with httpx.Client(base_url=site) as client:
        sec = client.get("/.well-known/security.txt").text
        assert sec.startswith(f"Contact: {site}/security\nExpires: ")
        expires = datetime.fromisoformat(sec.split("\n")[1].split(": ")[1].replace("Z", "+00:00"))
        assert expires > datetime.now(UTC)
        assert "1 basis point" in client.get("/pricing").text
        assert "60 s" in client.get("/privacy").text  # the configured quote TTL
        assert "routequote verify-manifest " + site in client.get("/security").text
        workflow = client.get("/.well-known/routequote-evaluation-workflow.json").json()
        assert [s["id"] for s in workflow["steps"]] == [
            "read_capabilities",
            "read_status",
            "quote_at_intended_amount",
            "compare_with_another_provider",
            "stop_unless_caller_approves",
        ]
        for step in workflow["steps"]:
            if "request" in step:
                req = step["request"]
                r = client.request(req["method"], req["url"], json=req.get("body"))
                assert r.status_code == 200, step["id"]
        evidence = client.get("/evidence").json()
        assert evidence["evidence"]["market_snapshot"]["data_as_of"] == "2026-11-20T00:00:00Z"
