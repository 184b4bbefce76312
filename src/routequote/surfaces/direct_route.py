"""`DirectRoute`: an APIRoute whose endpoint takes the Request and answers a Response itself.

FastAPI still reads the endpoint for the OpenAPI document (summary, response models, request body schema), but a
request goes straight to the endpoint: no dependency solving, no response-model validation or re-serialisation
(the endpoints build their JSON answer with `surfaces.errors.json_response`). For hot routes where those steps
are pure overhead; every endpoint on such a router must be `async def endpoint(request: Request) -> Response`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response


class DirectRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        endpoint: Callable[[Request], Coroutine[Any, Any, Response]] = self.endpoint
        return endpoint
