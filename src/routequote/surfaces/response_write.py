"""A response's head and body in one write: one system call per answer, not two.

uvicorn's response cycle writes the status line and headers when the app starts its answer, then the body when
the app sends it: two writes, and on a TCP socket two system calls, which for a small answer cost about as much
as the rest of uvicorn's own work for it. `OneWrite` is the cycle's transport: it holds the head of an answer of
known, non-empty length and hands it to the transport together with the body's first write.

What goes at once, as before: the interim `100 Continue` (a client may wait for it before sending its body), and
the head of a streamed answer (chunked, such as an event stream, whose first event may be long in coming) or of
an empty one. uvicorn writes the body of every answer of known length but the one to HEAD, so the protocol
installs this for every other method; closing (an app that failed after starting its answer) writes a head still
held first.
"""

from __future__ import annotations

import asyncio
from typing import Any

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def _has_body_to_come(head: bytes) -> bool:
    """A head that declares a length (uvicorn writes header names in lower case), and not a length of 0."""
    return b"\r\ncontent-length: " in head and b"\r\ncontent-length: 0\r\n" not in head


class OneWrite:
    __slots__ = ("_head", "_started", "transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self._head: bytes | None = None
        self._started = False  # the head was written or is held

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self.transport.writelines((head, data))
        elif self._started or data == CONTINUE:
            self.transport.write(data)
        else:
            self._started = True
            if _has_body_to_come(data):
                self._head = data
            else:
                self.transport.write(data)

    def close(self) -> None:
        head, self._head = self._head, None
        if head is not None:
            self.transport.write(head)
        self.transport.close()

    def __getattr__(self, name: str) -> Any:  # is_closing, get_extra_info, ...: the transport's own
        return getattr(self.transport, name)
