"""The servers `cfrag serve` runs: Hayhooks' REST and MCP apps, narrowed to the served pipelines and guarded.

    python -m haystack_cfrag.serving.app rest --pipelines-dir DIR [--host H] [--port P] [--cors-origin O …]
    python -m haystack_cfrag.serving.app mcp --pipelines-dir DIR [--host H] [--port P]
    (either with --allow-deploy, which needs CFRAG_API_KEY)

The pipeline set is fixed at start-up (Hayhooks' immutable registry: no deploy or undeploy route or MCP tool,
so no request can make the server run code; `--allow-deploy` keeps them, behind the token). `/draw` and the
file upload are removed, tracing and monitoring off, CORS only for `--cors-origin`. `middleware.Guard` checks
hosts, the token and bodies; error bodies are JSON; log lines are cut and redacted. The store and models open
before Hayhooks starts (`open_service`): a failure is one line and exit code 1."""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from haystack_cfrag.common.errors import error_line
from haystack_cfrag.common.redaction import install_log_redaction, redact
from haystack_cfrag.serving.middleware import LOOPBACK_HOSTS, BodyCheck, Guard
from haystack_cfrag.serving.requests import (
    RequestError,
    check_fields,
    check_openai_fields,
    check_pipeline_inputs,
)

API_KEY_ENV = "CFRAG_API_KEY"
DROPPED_ROUTES = ("/draw/{pipeline_name}", "/v1/files", "/files")
MAX_LOGGED_CHARS = 500


def configure_hayhooks(pipelines_dir: Path, *, host: str, allow_deploy: bool, cors_origins: list[str]) -> None:
    """Hayhooks' settings for a `cfrag serve` process (before any app is built)."""
    from hayhooks.settings import settings  # noqa: PLC0415

    settings.pipelines_dir = str(pipelines_dir)
    settings.host = host
    settings.durable_mode = not allow_deploy  # the fixed pipeline set: no deploy routes or tools
    settings.cors_allow_origins = list(cors_origins)
    settings.cors_allow_methods = ["GET", "POST", "OPTIONS"]
    settings.cors_allow_headers = ["authorization", "content-type"]
    settings.tracing_enabled = False
    settings.tracing_include_haystack_spans = False  # nothing reads Hayhooks' trace buffer here
    settings.monitoring_enabled = False
    settings.chainlit_enabled = False
    settings.show_tracebacks = False


def rest_app(pipelines_dir: Path, *, host: str, allow_deploy: bool, cors_origins: list[str],
             api_key: str | None) -> Guard:
    """Hayhooks' REST app (run routes, OpenAI routes, status, docs), narrowed and guarded."""
    from fastapi.exceptions import RequestValidationError  # noqa: PLC0415
    from hayhooks.server.app import create_app  # noqa: PLC0415

    configure_hayhooks(pipelines_dir, host=host, allow_deploy=allow_deploy, cors_origins=cors_origins)
    app = create_app()  # with the fixed set: loads and sets up every pipeline now
    drop_routes(app.router, DROPPED_ROUTES)
    app.openapi_schema = None
    app.add_exception_handler(RequestValidationError, json_safe_validation_error)

    def body_check(path: str) -> BodyCheck | None:
        registry = app.state.pipeline_registry
        if path in OPENAI_ROUTES:
            method = OPENAI_ROUTES[path]
            return lambda body: check_openai_fields(body) or check_openai_model(registry, body, method)
        name, sep, rest = path.strip("/").partition("/")
        if not sep or rest != "run":
            return None
        return pipeline_body_check(registry.get(name), registry.get_metadata(name))

    return Guard(app, api_key=api_key, allowed_hosts=allowed_hosts(host), body_check=body_check)


def mcp_app(pipelines_dir: Path, *, host: str, allow_deploy: bool, api_key: str | None) -> Guard:
    """Hayhooks' MCP app (Streamable HTTP at /mcp, SSE at /sse): the pipelines as tools, checked like REST."""
    import mcp.types as types  # noqa: PLC0415
    from hayhooks.server.pipelines.loader import load_pipeline_registry  # noqa: PLC0415
    from hayhooks.server.pipelines.registry import registry as live_registry  # noqa: PLC0415
    from hayhooks.server.utils.deploy_utils import deploy_pipelines  # noqa: PLC0415
    from hayhooks.server.utils.mcp_utils import create_mcp_server, create_starlette_app  # noqa: PLC0415

    configure_hayhooks(pipelines_dir, host=host, allow_deploy=allow_deploy, cors_origins=[])
    if allow_deploy:
        deploy_pipelines()
        registry: Any = live_registry
    else:
        registry = load_pipeline_registry(pipelines_dir)
    json_safe_results(registry)
    server = create_mcp_server(registry=registry)
    server.request_handlers[types.CallToolRequest] = checked_tool_calls(
        registry, server.request_handlers[types.CallToolRequest])
    app = create_starlette_app(server)
    quiet_sse_route(app.router)
    return Guard(app, api_key=api_key, allowed_hosts=allowed_hosts(host))


def checked_tool_calls(registry: Any, call_tool: Any) -> Any:
    """MCP's tool-call handler, narrowed: a CF-RAG pipeline answered by its wrapper, a YAML pipeline's arguments
    checked as its REST body is; a refusal or failure is the tool's one-line error."""
    import anyio  # noqa: PLC0415
    import mcp.types as types  # noqa: PLC0415
    from fastapi import HTTPException  # noqa: PLC0415

    from haystack_cfrag.serving.wrapper import CFRAGPipelineWrapper  # noqa: PLC0415

    async def checked_call_tool(request: types.CallToolRequest) -> types.ServerResult:
        name = request.params.name
        wrapper, arguments = registry.get(name), request.params.arguments or {}
        try:
            if isinstance(wrapper, CFRAGPipelineWrapper):
                text = json.dumps(await anyio.to_thread.run_sync(wrapper.answer_body, arguments))
                content = [types.TextContent(type="text", text=text)]
                return types.ServerResult(types.CallToolResult(content=content))
            check = pipeline_body_check(wrapper, registry.get_metadata(name))
            if check is not None:
                check(arguments)
        except (ValueError, HTTPException) as exc:  # RequestError; HTTPException: the wrapper's 422 or 503
            text = types.TextContent(type="text", text=str(getattr(exc, "detail", exc)))
            return types.ServerResult(types.CallToolResult(content=[text], isError=True))
        return await call_tool(request)

    return checked_call_tool


class _AlreadySent:
    """The response of an endpoint that has sent its own (an SSE stream): sends nothing more."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        return None


def quiet_sse_route(router: Any) -> None:
    """Make MCP's `/sse` endpoint return a response when its client leaves (Hayhooks' returns None)."""
    from starlette.routing import Route  # noqa: PLC0415

    for i, route in enumerate(router.routes):
        if isinstance(route, Route) and route.path == "/sse":
            endpoint = route.endpoint

            async def handle_sse(request: Any, endpoint: Any = endpoint) -> _AlreadySent:
                await endpoint(request)
                return _AlreadySent()

            router.routes[i] = Route("/sse", endpoint=handle_sse, methods=sorted(route.methods or ["GET"]))


def drop_routes(router: Any, paths: tuple[str, ...]) -> None:
    """Remove the routes of these paths from a router and the routers it includes (FastAPI ≥ 0.16x keeps
    included routers as one entry each, with `original_router`)."""
    kept = []
    for route in router.routes:
        if getattr(route, "path", None) in paths:
            continue
        if hasattr(route, "original_router"):
            drop_routes(route.original_router, paths)
        kept.append(route)
    if len(kept) != len(router.routes):
        router.routes[:] = kept
        if hasattr(router, "_mark_routes_changed"):
            router._mark_routes_changed()


def pipeline_body_check(wrapper: Any, metadata: Any) -> BodyCheck | None:
    """The check of a pipeline's request body: CF-RAG's fields, or a YAML pipeline's declared inputs."""
    from hayhooks.server.utils.yaml_pipeline_wrapper import YAMLPipelineWrapper  # noqa: PLC0415

    from haystack_cfrag.serving.wrapper import CFRAGPipelineWrapper  # noqa: PLC0415

    if isinstance(wrapper, CFRAGPipelineWrapper):  # its run_api checks the values (once); here: the names
        return lambda body: check_fields(body, wrapper.request_table)
    model = (metadata or {}).get("request_model")
    if isinstance(wrapper, YAMLPipelineWrapper) and model is not None:
        inputs = tuple(model.model_fields)
        return lambda body: check_pipeline_inputs(body, inputs)
    return None  # a pipeline deployed by someone else (--allow-deploy): Hayhooks' model checks it


OPENAI_ROUTES = {"/v1/chat/completions": "run_chat_completion", "/chat/completions": "run_chat_completion",
                 "/v1/responses": "run_response", "/responses": "run_response"}
"""The OpenAI routes, with the wrapper method that answers each (a YAML pipeline has neither)."""


def check_openai_model(registry: Any, body: Any, method: str) -> None:
    """RequestError (422) when a chat or responses body's `model` names a pipeline that cannot answer there (an
    unknown model is left to Hayhooks' 404)."""
    model = body.get("model") if isinstance(body, dict) else None
    wrapper = registry.get(model) if isinstance(model, str) else None
    if wrapper is None:
        return
    def answers(pipeline: Any) -> bool:
        return bool(getattr(pipeline, f"_is_{method}_implemented", False)
                    or getattr(pipeline, f"_is_{method}_async_implemented", False))

    if not answers(wrapper):
        able = [n for n in registry.get_names() if answers(registry.get(n))]
        raise RequestError(f"'model': '{model[:100]}' answers at /{model[:100]}/run only, not here "
                           f"(models served here: {', '.join(able) or 'none'}).")


def json_safe(value: Any) -> Any:
    """A pipeline's output as plain JSON values: Haystack objects by `to_dict`, non-finite floats as None.

    >>> json_safe({"n": float("nan"), "items": (1, "a")})
    {'n': None, 'items': [1, 'a']}
    """
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_safe(v) for v in value]
    if callable(getattr(value, "to_dict", None)):
        return json_safe(value.to_dict())
    return str(value)


def json_safe_results(registry: Any) -> None:
    """Make each YAML pipeline's results plain JSON for MCP (Hayhooks' MCP `json.dumps` them as they are:
    a ChatMessage or Document in the outputs was "not JSON serializable")."""
    from hayhooks.server.utils.yaml_pipeline_wrapper import YAMLPipelineWrapper  # noqa: PLC0415

    for name in registry.get_names():
        wrapper = registry.get(name)
        if not (isinstance(wrapper, YAMLPipelineWrapper) and callable(getattr(wrapper, "run_api_async", None))):
            continue
        run = wrapper.run_api_async

        @functools.wraps(run)
        async def safe_run(*args: Any, _run: Any = run, **kwargs: Any) -> Any:
            return json_safe(await _run(*args, **kwargs))

        wrapper.run_api_async = safe_run


def allowed_hosts(host: str) -> tuple[str, ...] | None:
    """The Host names accepted: the loopback names when listening on loopback, else any (None)."""
    return LOOPBACK_HOSTS if host in LOOPBACK_HOSTS else None


class _Shown:
    """A logged value shown as this text (its repr, redacted)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


class _Shortened:
    """A logged value cut to MAX_LOGGED_CHARS characters (what the log shows as its repr)."""

    def __init__(self, text: str) -> None:
        self.text = f"{text[:MAX_LOGGED_CHARS]}… ({len(text)} characters)"

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def shorten_log_record(record: dict[str, Any]) -> None:
    """Loguru patcher: messages, bound values and exception messages redacted and cut to MAX_LOGGED_CHARS."""
    for key, value in list(record["extra"].items()):
        if isinstance(value, (str, dict, list, tuple)):
            text = repr(value)
            shown = redact(text)
            if len(shown) > MAX_LOGGED_CHARS:
                record["extra"][key] = _Shortened(shown)
            elif shown != text:
                record["extra"][key] = _Shown(shown)
    record["message"] = redact(record["message"])
    if len(record["message"]) > MAX_LOGGED_CHARS:
        record["message"] = _Shortened(record["message"]).text
    exception = record.get("exception")
    if exception is not None and exception.value is not None and redact(str(exception.value)) != str(exception.value):
        shown = RuntimeError(f"{exception.type.__name__}: {redact(str(exception.value))}")
        record["exception"] = type(exception)(RuntimeError, shown, None)  # its frames may hold it too: left out


async def json_safe_validation_error(_request: Any, exc: Any) -> Any:
    """FastAPI's 422 without the refused input (which may be NaN, huge, or hostile text): type, field, message."""
    from fastapi.responses import JSONResponse  # noqa: PLC0415

    detail = [{"type": str(e.get("type", "")),
               "loc": [x if isinstance(x, (int, str)) else str(x) for x in e.get("loc", ())],
               "msg": str(e.get("msg", ""))} for e in exc.errors()]
    return JSONResponse(status_code=422, content={"detail": detail})


def main(argv: list[str] | None = None) -> int:
    """Run the REST or the MCP server (see the module doc)."""
    parser = argparse.ArgumentParser(prog="python -m haystack_cfrag.serving.app")
    parser.add_argument("server", choices=["rest", "mcp"])
    parser.add_argument("--pipelines-dir", type=Path, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cors-origin", action="append", default=[])
    parser.add_argument("--allow-deploy", action="store_true")
    args = parser.parse_args(argv)
    api_key = os.environ.get(API_KEY_ENV) or None
    if args.allow_deploy and not api_key:
        print(f"--allow-deploy needs {API_KEY_ENV}: deploying runs code sent over HTTP.", file=sys.stderr)
        return 2

    from hayhooks.server.logger import log  # noqa: PLC0415  (loguru's logger, which Hayhooks logs to)

    log.configure(patcher=shorten_log_record)
    install_log_redaction("haystack_cfrag", "haystack")
    failed = open_service()
    if failed is not None:
        print(f"Error: {failed}", file=sys.stderr)
        return 1

    import uvicorn  # noqa: PLC0415
    from hayhooks.server.logger import intercept_stdlib_logging  # noqa: PLC0415
    from hayhooks.settings import settings  # noqa: PLC0415

    if args.server == "rest":
        app = rest_app(args.pipelines_dir, host=args.host, allow_deploy=args.allow_deploy,
                       cors_origins=args.cors_origin, api_key=api_key)
    else:
        app = mcp_app(args.pipelines_dir, host=args.host, allow_deploy=args.allow_deploy, api_key=api_key)
    intercept_stdlib_logging(settings.intercepted_loggers,
                             access_log_excluded_path_prefixes=settings.access_log_excluded_path_prefixes)
    uvicorn.run(app, host=args.host, port=args.port, log_config=None,
                timeout_graceful_shutdown=settings.graceful_shutdown_timeout)
    return 0


def open_service() -> str | None:
    """Open the store, the graph and the models before Hayhooks loads a wrapper; the one line `cfrag ask` prints
    when that fails, else None (`CFRAG_DEBUG` raises it instead)."""
    from haystack_cfrag.serving.service import get_service  # noqa: PLC0415

    try:
        get_service()
    except Exception as exc:  # noqa: BLE001  (said in one line, as `cfrag ask` says it)
        if os.environ.get("CFRAG_DEBUG"):
            raise
        return error_line(exc)
    return None


if __name__ == "__main__":
    sys.exit(main())
