"""Bounds on every network store: nothing the package connects to can keep it waiting for ever.

- Postgres (the pgvector store, its graph tables, the advisory lock): every connection string
  (`stores.kinds.pgvector.conninfo`) gets ``connect_timeout`` (`PG_CONNECT_SECONDS`; libpq's default is none)
  and a server-side ``statement_timeout`` (`PG_STATEMENT_SECONDS`) where it sets none.
- Qdrant: every client gets `QDRANT_SECONDS` per request.
- Ray: `ray_refusal` asks an address one gRPC question (`RAY_PROBE_SECONDS`) before `cfrag index` writes anything
  (a port that accepts TCP is not yet a Ray cluster; `ray.init` would retry for minutes).

The environment sets the bounds for slow networks (``CFRAG_PG_CONNECT_SECONDS``, …).
"""

from __future__ import annotations

import os


def _seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if 0 < value <= 86_400 else default


PG_CONNECT_SECONDS = _seconds("CFRAG_PG_CONNECT_SECONDS", 10)
"""How long a Postgres connection may take to be made (libpq's minimum is 2)."""
PG_STATEMENT_SECONDS = _seconds("CFRAG_PG_STATEMENT_SECONDS", 300)
"""How long one Postgres statement may run (a graph read takes milliseconds; a batch write seconds)."""
QDRANT_SECONDS = _seconds("CFRAG_QDRANT_SECONDS", 30)
"""How long one request to a Qdrant server may take."""
RAY_PROBE_SECONDS = _seconds("CFRAG_RAY_PROBE_SECONDS", 5)
"""How long a Ray cluster's address may take to answer as Ray."""


RAY_METHODS = {False: "/ray.rpc.NodeInfoGcsService/GetClusterId", True: "/ray.rpc.RayletDriver/ClusterInfo"}
"""The one question asked of a Ray cluster's GCS (HOST:PORT) and of a Ray Client server (ray://HOST:PORT)."""


def ray_refusal(address: str, timeout: float | None = None) -> str | None:
    """Why the service at `address` (HOST:PORT, or ray://HOST:PORT) is not a Ray cluster; None when it answers as
    one. One gRPC call (an empty request) within `timeout` seconds: a service that does not speak gRPC, or a gRPC
    service that does not know Ray's method, is refused. No Ray import, nothing started."""
    import grpc  # noqa: PLC0415  (Ray's own dependency)

    timeout = RAY_PROBE_SECONDS if timeout is None else timeout
    client = address.startswith("ray://")
    channel = grpc.insecure_channel(address.removeprefix("ray://"))
    try:
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            return f"it does not answer in Ray's protocol (gRPC) within {timeout:g} s"
        try:
            channel.unary_unary(RAY_METHODS[client])(b"", timeout=timeout)
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            if code == grpc.StatusCode.UNIMPLEMENTED:
                return "a gRPC service that is not " + ("a Ray Client server" if client else "a Ray cluster's GCS")
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                return f"it did not answer Ray's question within {timeout:g} s ({code.name})"
        return None
    finally:
        channel.close()


__all__ = ["PG_CONNECT_SECONDS", "PG_STATEMENT_SECONDS", "QDRANT_SECONDS", "RAY_PROBE_SECONDS", "ray_refusal"]
