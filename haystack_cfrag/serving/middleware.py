"""The ASGI guard around the served apps: host check, bearer token, body limit, strict JSON, request checks.

`Guard` wraps Hayhooks' REST and MCP apps. Per request, in order: each decided header sent once (else 400); an
allowed `Host` (else 400: no DNS rebinding); with `CFRAG_API_KEY`, the bearer token compared in constant time
(else 401; CORS preflights pass); a POST body of at most `max_body` bytes (else 413), strict JSON handed to the
route's check (else 422). It ends OpenAI streams with `data: [DONE]`, turns a `/run` 500 into a 503, and lets
a stream a client left finish for at most `DISCONNECT_GRACE_S`."""

from __future__ import annotations

import asyncio
import hmac
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from haystack_cfrag.serving.requests import RequestError, load_json

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
BodyCheck = Callable[[Any], Any]

MAX_BODY_BYTES = 1 << 20
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
SSE_DONE_PATHS = ("/v1/chat/completions", "/chat/completions")
STREAM_PATHS = (*SSE_DONE_PATHS, "/v1/responses", "/responses")
SINGLE_HEADERS = {"host": "Host", "authorization": "Authorization", "content-type": "Content-Type"}
DISCONNECT_GRACE_S = 5.0


class Guard:
    """Pure ASGI middleware; see the module doc for what it checks, in which order."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        api_key: str | None = None,
        allowed_hosts: tuple[str, ...] | None = None,
        body_check: Callable[[str], BodyCheck | None] = lambda path: None,
        max_body: int = MAX_BODY_BYTES,
    ) -> None:
        """
        :param app: the app guarded.
        :param api_key: the bearer token every request must carry; None: no token.
        :param allowed_hosts: host names the `Host` header may name (any port); None: any.
        :param body_check: the check of a route's parsed JSON body, by path (None: only strict JSON).
        :param max_body: the largest request body, in bytes.
        """
        self.app = app
        self.api_key = api_key.encode() if api_key else None
        self.allowed_hosts = allowed_hosts
        self.body_check = body_check
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request (see the module doc), then pass it on."""
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        pairs = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", [])]
        headers = dict(pairs)
        refusal = _repeated_header(pairs) or self._refusal(scope, headers)
        if refusal is not None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            else:
                await _json(send, *refusal)
            return
        if scope["type"] == "http" and scope["method"] == "POST":
            body = await _read_body(receive, self.max_body)
            if body is None:
                await _json(send, 413, f"The request body is larger than {self.max_body} bytes.")
                return
            problem = self._check_body(scope["path"], headers.get("content-type", ""), body)
            if problem is not None:
                await _json(send, 422, problem)
                return
            receive = _replay(body, receive)
        finished = None
        if scope["type"] == "http" and scope["path"] in STREAM_PATHS:
            finished = asyncio.Event()
            receive = _disconnect_after(finished, receive)
        await self.app(scope, receive, _closing(scope["path"], send, finished))

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str, dict[str, str]] | None:
        if self.allowed_hosts is not None and _host_name(headers.get("host", "")) not in self.allowed_hosts:
            return 400, f"Host '{headers.get('host', '')[:100]}' is not served here.", {}
        preflight = scope.get("method") == "OPTIONS" and "access-control-request-method" in headers
        if self.api_key is not None and not preflight:
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), self.api_key):
                return 401, "Missing or wrong bearer token (Authorization: Bearer $CFRAG_API_KEY).", {
                    "www-authenticate": "Bearer"}
        return None

    def _check_body(self, path: str, content_type: str, body: bytes) -> str | None:
        kind = content_type.split(";")[0].strip().lower()
        if not body or (kind and kind != "application/json" and not kind.endswith("+json")):
            return None  # no body, or not JSON: the route refuses it against its model
        check = self.body_check(path)
        try:
            data = load_json(body)
            if check is not None:
                check(data)
        except RequestError as exc:
            return str(exc)
        return None


def _repeated_header(pairs: list[tuple[str, str]]) -> tuple[int, str, dict[str, str]] | None:
    """A 400 when a header of `SINGLE_HEADERS` comes more than once (the one parsing of each)."""
    names = [name for name, _ in pairs if name in SINGLE_HEADERS]
    for name in SINGLE_HEADERS:
        if names.count(name) > 1:
            return 400, f"The request has {names.count(name)} {SINGLE_HEADERS[name]} headers; send one.", {}
    return None


_HOST = re.compile(r"\[(?P<v6>[0-9A-Fa-f:.]+)\](?::[0-9]{1,5})?|(?P<name>[^:\[\]]*)(?::[0-9]{1,5})?")


def _host_name(host: str) -> str:
    """The name part of a Host header: "127.0.0.1:1416" → "127.0.0.1", "[::1]:80" → "::1" (anything but ":port"
    after it: no name)."""
    match = _HOST.fullmatch(host)
    if match is None:
        return ""
    return match.group("v6") if match.group("v6") is not None else match.group("name")


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None when it is longer than `limit` bytes."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # a disconnect

    return replay


def _disconnect_after(finished: asyncio.Event, receive: Receive) -> Receive:
    """`receive` that holds a client's disconnect until the (already computed) response is finished, at most
    DISCONNECT_GRACE_S, so no stream generator is abandoned half-way."""

    async def held() -> Message:
        message = await receive()
        if message["type"] == "http.disconnect" and not finished.is_set():
            try:
                await asyncio.wait_for(finished.wait(), DISCONNECT_GRACE_S)
            except TimeoutError:
                pass
        return message

    return held


def _closing(path: str, send: Send, finished: asyncio.Event | None = None) -> Send:
    """`send` that ends chat SSE streams with `data: [DONE]`, maps a pipeline route's 500 to 503, and sets
    `finished` after the last body message."""
    is_run = path.endswith("/run")
    done_stream = False

    async def wrapped(message: Message) -> None:
        nonlocal done_stream
        if message["type"] == "http.response.start":
            if is_run and message["status"] == 500:
                message = {**message, "status": 503}
            content_type = dict(message.get("headers", [])).get(b"content-type", b"")
            done_stream = path in SSE_DONE_PATHS and content_type.startswith(b"text/event-stream")
        elif message["type"] == "http.response.body" and done_stream and not message.get("more_body", False):
            await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": True})
            done_stream = False
        await send(message)
        if finished is not None and message["type"] == "http.response.body" and not message.get("more_body", False):
            finished.set()

    return wrapped


async def _json(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})
