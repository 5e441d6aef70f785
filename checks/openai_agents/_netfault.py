"""A TCP relay of our own between a backend's client and its server, that cuts connections.

``CutProxy`` listens on 127.0.0.1 (an ephemeral port) and relays every connection it accepts
to one upstream server, byte for byte. Armed with ``arm(Cut(direction, skip))``, it counts the
chunks that cross in ``direction`` on any connection from then on, lets ``skip`` of them
through, and on the next one drops that chunk and closes both ends of its connection:

- ``Direction.REQUEST``: the server never receives the request (a write lost on its way);
- ``Direction.REPLY``: the server has executed the request, and its reply is lost (the
  classic ambiguous failure: the work is done, the client is told the connection died).

Armed with a ``hold_s``, the chunk is held that long and then delivered (a delay in flight,
during which the caller's own timeout may fire: ``on_fire`` tells the check the moment).

That is a real dropped connection at a real boundary: the client library sees its socket
closed by the peer (EOF), exactly as when a server restarts, a load balancer drops an idle
flow, or ``CLIENT KILL`` / ``pg_terminate_backend`` ends the session. ``cut_all()`` closes
every relayed connection at once (a restart seen from the client); ``down()`` also closes each
new connection as soon as it is accepted (a server that does not answer) until ``up()``. The
server itself keeps running, so a client that reconnects finds the store as it was left.

A chunk is what one ``receive()`` returns: a request-reply protocol (RESP, the PostgreSQL
wire protocol) sends each request as one write and waits for its reply, so the k-th chunk
is the k-th request or reply whenever the client waits (pipelined commands, e.g. MULTI ..
EXEC, travel as one chunk).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.abc
from anyio.from_thread import BlockingPortal, start_blocking_portal

from arib.targets.base import Handle

if TYPE_CHECKING:
    from arib.checks.base import TrialContext

HOST = "127.0.0.1"
CHUNK = 1 << 16


class Direction(enum.Enum):
    """Which way the cut chunk was travelling."""

    REQUEST = "request"
    REPLY = "reply"


@dataclass(frozen=True)
class Cut:
    """At the chunk after ``skip`` chunks in ``direction``: drop it and close its connection,
    or, with ``hold_s`` > 0, hold it that long (a delay in flight) and then deliver it."""

    direction: Direction
    skip: int
    hold_s: float = 0.0

    def describe(self) -> str:
        """The cut in words, e.g. 'cut the connection at the reply chunk #2 after arming'."""
        what = f"{self.direction.value} chunk #{self.skip + 1} after arming"
        if self.hold_s:
            return f"hold the {what} for {self.hold_s}s in flight"
        return f"cut the connection at the {what}"


@dataclass
class _Link:
    """One relayed connection: the client's stream and the upstream stream."""

    number: int
    client: anyio.abc.ByteStream
    upstream: anyio.abc.ByteStream
    cancel: anyio.CancelScope = field(default_factory=anyio.CancelScope)


@dataclass
class CutProxy:
    """A relay to ``upstream_host:upstream_port`` that cuts a connection when armed.

    It runs on its own event loop in its own thread (``portal``), like a network element:
    a client that blocks its caller's loop (a synchronous probe) is still served. The
    control methods are called from the check's thread; ``on_fire`` runs in the relay's
    thread, so it must only hand work over (e.g. ``loop.call_soon_threadsafe``).
    """

    upstream_host: str
    upstream_port: int
    portal: BlockingPortal
    port: int = 0
    connections: int = 0
    fired: list[str] = field(default_factory=list)
    refusing: bool = False
    _armed: Cut | None = None
    _on_fire: Callable[[], None] | None = None
    _seen: int = 0
    _links: dict[int, _Link] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    # -- control (the check's thread) ---------------------------------------------------

    def arm(self, cut: Cut, on_fire: Callable[[], None] | None = None) -> None:
        """Apply ``cut`` from now on (replacing an earlier arming that has not fired);
        ``on_fire()`` is called the moment it fires, before the chunk is dropped or held."""
        with self._guard:
            self._armed, self._on_fire, self._seen = cut, on_fire, 0

    def disarm(self) -> bool:
        """Stop counting; True when the armed cut had not fired yet."""
        with self._guard:
            pending, self._armed = self._armed is not None, None
        return pending

    @property
    def seen(self) -> int:
        """Chunks counted in the armed direction since the last ``arm()``."""
        return self._seen

    def cut_all(self) -> int:
        """Close every relayed connection now; the number closed."""
        return self.portal.call(self._cut_all)

    def down(self) -> int:
        """The server stops answering: cut every connection and close each new one at once."""
        self.refusing = True
        return self.cut_all()

    def up(self) -> None:
        """The server answers again: relay new connections."""
        self.refusing = False

    def url(self, url: str) -> str:
        """``url`` with its host and port replaced by this relay's (query and path kept)."""
        parts = urlsplit(url)
        userinfo, _, _ = parts.netloc.rpartition("@")
        netloc = f"{userinfo}@{HOST}:{self.port}" if userinfo else f"{HOST}:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    # -- relaying (the relay's thread) --------------------------------------------------

    def _due(self, direction: Direction) -> Cut | None:
        """The armed cut if this chunk is the one it names (then it is disarmed)."""
        with self._guard:
            cut = self._armed
            if cut is None or cut.direction is not direction:
                return None
            if self._seen < cut.skip:
                self._seen += 1
                return None
            self._armed, on_fire = None, self._on_fire
        if on_fire is not None:
            on_fire()
        return cut

    async def _cut_all(self) -> int:
        links = list(self._links.values())
        for link in links:
            await self._close(link)
        return len(links)

    async def _close(self, link: _Link) -> None:
        self._links.pop(link.number, None)
        link.cancel.cancel()
        for stream in (link.client, link.upstream):
            with contextlib.suppress(Exception):
                await stream.aclose()

    async def _pump(self, link: _Link, source: anyio.abc.ByteStream,
                    sink: anyio.abc.ByteStream, direction: Direction) -> None:
        try:
            while True:
                chunk = await source.receive(CHUNK)
                cut = self._due(direction)
                if cut is not None and not cut.hold_s:
                    self.fired.append(f"connection {link.number}: dropped a {direction.value} "
                                      f"of {len(chunk)} bytes and closed the connection")
                    break
                if cut is not None:
                    self.fired.append(f"connection {link.number}: held a {direction.value} of "
                                      f"{len(chunk)} bytes for {cut.hold_s}s")
                    await anyio.sleep(cut.hold_s)
                await sink.send(chunk)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError,
                OSError):
            pass
        await self._close(link)

    async def _serve(self, client: anyio.abc.SocketStream) -> None:
        self.connections += 1
        number = self.connections
        if self.refusing:
            await client.aclose()
            return
        try:
            upstream = await anyio.connect_tcp(self.upstream_host, self.upstream_port)
        except OSError:
            await client.aclose()
            return
        link = _Link(number, client, upstream)
        self._links[number] = link
        with link.cancel:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._pump, link, client, upstream, Direction.REQUEST)
                tg.start_soon(self._pump, link, upstream, client, Direction.REPLY)
        await self._close(link)


@contextlib.asynccontextmanager
async def cut_proxy(url: str) -> AsyncIterator[CutProxy]:
    """A running ``CutProxy`` to the server of ``url``; every connection is closed on exit."""
    parts = urlsplit(url)
    if not parts.hostname or not parts.port:
        raise ValueError(f"cut_proxy needs a URL with a host and a port, got {url!r}; "
                         f"pass the service URL from BuildContext.services")
    with start_blocking_portal(backend="asyncio") as portal:
        proxy = CutProxy(parts.hostname, parts.port, portal)
        listener = portal.call(functools.partial(anyio.create_tcp_listener, local_host=HOST,
                                                 local_port=0))
        proxy.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        serving = portal.start_task_soon(listener.serve, proxy._serve)
        try:
            yield proxy
        finally:
            proxy.disarm()
            serving.cancel()
            proxy.cut_all()
            portal.call(listener.aclose)


def with_query(url: str, **params: str) -> str:
    """``url`` with query parameters added (e.g. ``max_connections=1`` for a redis-py pool)."""
    parts = urlsplit(url)
    extra = "&".join(f"{k}={v}" for k, v in params.items())
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit(parts._replace(query=query))


@contextlib.asynccontextmanager
async def relayed(ctx: TrialContext, **query: str) -> AsyncIterator[Relayed | None]:
    """A fresh instance of the trial's store that reaches its server through a ``CutProxy``
    (URL query parameters ``query`` added), or None on a lane without a server."""
    service = ctx.target.service
    url = ctx.build.services.get(service) if service else None
    if service is None or url is None:
        yield None
        return
    async with cut_proxy(url) as proxy:
        routed = with_query(proxy.url(url), **query) if query else proxy.url(url)
        handle = await ctx.open_with(services={**ctx.build.services, service: routed})
        yield Relayed(handle, proxy)


@dataclass(frozen=True)
class Relayed:
    """An instance reached through a relay, and the relay."""

    handle: Handle
    proxy: CutProxy
