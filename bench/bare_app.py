"""A bare FastAPI hello app: the floor `GET /livez` is compared with in bench/http_bench.py (same uvicorn)."""

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

app = FastAPI()


@app.get("/")
async def hello(_: Request) -> Response:
    return Response(b'{"status":"ok"}', media_type="application/json")
