"""The Redis readiness probe: PING and INFO through redis-py."""

from __future__ import annotations

from typing import Any


def redis_probe(url: str, timeout: float = 2.0) -> dict[str, str]:
    """PING the Redis server that ``url`` names; returns its INFO server fields as text.

    Raises OSError when the server cannot be reached and RuntimeError when it answers with an
    error (e.g. NOAUTH: a password is required), naming the reply.
    """
    import redis

    client: Any = redis.Redis.from_url(url, socket_timeout=timeout,
                                       socket_connect_timeout=timeout)
    try:
        if client.ping() is not True:
            raise RuntimeError("PING was not answered with PONG")
        info = client.info("server")
    except redis.exceptions.AuthenticationError as exc:
        raise RuntimeError(f"NOAUTH or WRONGPASS: {exc}") from exc
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        raise OSError(f"{type(exc).__name__}: {exc}") from exc
    except redis.exceptions.RedisError as exc:
        raise RuntimeError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        client.close()
    return {str(key): str(value) for key, value in info.items()}
