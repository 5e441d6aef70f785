"""ARIB-NET-001, ARIB-PING-001, ARIB-WINDOW-001 and the relay they inject faults with.

Fast tests: the relay against a small TCP server of our own, the judges on hand-made inputs,
every check on the reference (holds, its hand-written mutants are violated) and abstaining
where it must. Slow tests: the same checks on real redis-server and PostgreSQL lanes, with
their Redis and PostgreSQL hand-written mutants.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import anyio
import anyio.abc
import pytest

from arib.checks.openai_agents._netfault import Cut, Direction, cut_proxy, with_query
from arib.checks.openai_agents.drain_001 import Call, judge_drain
from arib.checks.openai_agents.fresh_001 import answer_problem
from arib.checks.openai_agents.net_001 import Fault, Outcome, judge_call
from arib.checks.openai_agents.window_001 import edge_limits, window_problem
from arib.checks.registry import get_check
from arib.execute import RunOptions, run_check
from arib.ground.child import run_one
from arib.ground.model import Finding, Verdict
from arib.ground.services import ServiceManager
from arib.mutants.registry import get_mutant
from arib.targets.base import TargetSpec
from arib.targets.registry import get_target
from tests.checkrun import assert_holds_with_its_trials, assert_mutant_violates, run_small

SMALL: dict[str, dict[str, int]] = {
    "ARIB-NET-001": {"trials": 2, "rounds": 1},
    "ARIB-PING-001": {"trials": 2},
    "ARIB-WINDOW-001": {"trials": 2, "batches": 3, "peer_reads": 3},
    "ARIB-FRESH-001": {"trials": 2},
    "ARIB-DRAIN-001": {"trials": 6},
}


def item(name: str) -> dict[str, str]:
    return {"role": "user", "content": name}


# --- the relay ------------------------------------------------------------------------------


async def _listener() -> tuple[anyio.abc.SocketListener, int]:
    """A listening socket of our own on 127.0.0.1 and its port (the test serves it)."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    return listener, port


def _relay_scenario(cut: Cut | None, requests: list[bytes]) -> tuple[list[bytes], list[bytes],
                                                                       str]:
    """Send ``requests`` one by one through a relay armed with ``cut``; what the server got,
    what the client got back, and how the client's connection ended."""
    received: list[bytes] = []
    replies: list[bytes] = []
    ending = "open"

    async def handle(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                while True:
                    data = await stream.receive()
                    received.append(data)
                    await stream.send(b"ok:" + data)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return

    async def main() -> None:
        nonlocal ending
        listener, port = await _listener()
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, handle)
            async with cut_proxy(f"tcp://127.0.0.1:{port}") as proxy:
                if cut is not None:
                    proxy.arm(cut)
                client = await anyio.connect_tcp("127.0.0.1", proxy.port)
                try:
                    for request in requests:
                        await client.send(request)
                        with anyio.fail_after(5):
                            replies.append(await client.receive())
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    ending = "closed by the relay"
                await client.aclose()
            tg.cancel_scope.cancel()

    anyio.run(main)
    return received, replies, ending


def test_relay_passes_everything_when_not_armed() -> None:
    received, replies, ending = _relay_scenario(None, [b"a", b"b", b"c"])
    assert received == [b"a", b"b", b"c"]
    assert replies == [b"ok:a", b"ok:b", b"ok:c"]
    assert ending == "open"


def test_relay_cut_request_never_reaches_the_server() -> None:
    received, replies, ending = _relay_scenario(Cut(Direction.REQUEST, 1), [b"a", b"b", b"c"])
    assert received == [b"a"]
    assert replies == [b"ok:a"]
    assert ending == "closed by the relay"


def test_relay_cut_reply_loses_the_answer_of_work_done() -> None:
    received, replies, ending = _relay_scenario(Cut(Direction.REPLY, 1), [b"a", b"b", b"c"])
    assert received == [b"a", b"b"]  # the server did the second request
    assert replies == [b"ok:a"]  # its answer never arrived
    assert ending == "closed by the relay"


def test_relay_hold_delivers_late_and_reports_the_moment() -> None:
    fired: list[float] = []

    async def main() -> tuple[float, list[bytes]]:
        received: list[bytes] = []

        async def handle(stream: anyio.abc.SocketStream) -> None:
            async with stream:
                data = await stream.receive()
                received.append(data)
                await stream.send(b"ok")

        listener, port = await _listener()
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, handle)
            async with cut_proxy(f"tcp://127.0.0.1:{port}") as proxy:
                proxy.arm(Cut(Direction.REQUEST, 0, hold_s=0.2),
                          lambda: fired.append(anyio.current_time()))
                client = await anyio.connect_tcp("127.0.0.1", proxy.port)
                started = anyio.current_time()
                await client.send(b"x")
                assert await client.receive() == b"ok"
                took = anyio.current_time() - started
                await client.aclose()
            tg.cancel_scope.cancel()
        return took, received

    took, received = anyio.run(main)
    assert received == [b"x"] and len(fired) == 1
    assert took >= 0.2


def test_relay_down_refuses_and_up_serves_again() -> None:
    async def main() -> list[str]:
        events: list[str] = []

        async def handle(stream: anyio.abc.SocketStream) -> None:
            async with stream:
                await stream.send(b"hello")

        listener, port = await _listener()
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, handle)
            async with cut_proxy(f"tcp://127.0.0.1:{port}") as proxy:
                proxy.down()
                client = await anyio.connect_tcp("127.0.0.1", proxy.port)
                try:
                    with anyio.fail_after(5):
                        await client.receive()
                    events.append("answered while down")
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    events.append("refused while down")
                proxy.up()
                client = await anyio.connect_tcp("127.0.0.1", proxy.port)
                with anyio.fail_after(5):
                    events.append((await client.receive()).decode())
                await client.aclose()
            tg.cancel_scope.cancel()
        return events

    assert anyio.run(main) == ["refused while down", "hello"]


def test_relay_urls_keep_credentials_path_and_query() -> None:
    async def main() -> tuple[str, int]:
        listener, port = await _listener()
        async with cut_proxy(f"postgresql+asyncpg://bench@127.0.0.1:{port}/db") as proxy:
            url = proxy.url(f"postgresql+asyncpg://bench@127.0.0.1:{port}/db?x=1")
            mine = proxy.port
        await listener.aclose()
        return url, mine

    url, port = anyio.run(main)
    assert url == f"postgresql+asyncpg://bench@127.0.0.1:{port}/db?x=1"
    assert with_query("redis://h:1/0", max_connections="1") == "redis://h:1/0?max_connections=1"
    assert with_query("redis://h:1/0?a=b", c="d") == "redis://h:1/0?a=b&c=d"


def test_relay_refuses_a_url_without_a_port() -> None:
    async def main() -> None:
        async with cut_proxy("redis://localhost/0"):
            pass

    with pytest.raises(ValueError, match="host and a port"):
        anyio.run(main)


# --- judges ----------------------------------------------------------------------------------

def mode(problem: tuple[str, str] | None) -> str | None:
    return None if problem is None else problem[0]


H = [item(f"h{n}") for n in range(4)]
B = [item("b0"), item("b1")]


def test_net_add_outcomes() -> None:
    ok, raised = Outcome(), Outcome(error=ConnectionError("cut"))
    assert judge_call("add", B, H, H + B, ok) is None
    assert judge_call("add", B, H, H, raised) is None
    assert judge_call("add", B, H, H + B, raised) is None
    assert mode(judge_call("add", B, H, H, ok)) == "acknowledged_lost"
    assert mode(judge_call("add", B, H, H + B[:1], raised)) == "torn_or_twice"
    assert mode(judge_call("add", B, H, H + B + B, raised)) == "torn_or_twice"
    assert mode(judge_call("add", B, H, H, Outcome(hung=True))) == "hung"


def test_net_pop_outcomes() -> None:
    assert judge_call("pop", None, H, H[:-1], Outcome(value=H[-1])) is None
    assert judge_call("pop", None, H, H, Outcome(cancelled=True)) is None
    assert judge_call("pop", None, H, H[:-1], Outcome(cancelled=True)) is None
    assert judge_call("pop", None, [], [], Outcome(value=None)) is None
    two_gone = judge_call("pop", None, H, H[:-2], Outcome(value=H[-2]))
    assert two_gone is not None and two_gone[0] == "pop_mismatch"
    lost = judge_call("pop", None, H, H[:-2], Outcome(error=ConnectionError("cut")))
    assert lost is not None and lost[0] == "pop_removed_other"


def test_net_clear_and_read_outcomes() -> None:
    assert judge_call("clear", None, H, [], Outcome()) is None
    assert judge_call("clear", None, H, H, Outcome(error=OSError())) is None
    assert mode(judge_call("clear", None, H, H, Outcome())) == "clear_partial"
    assert judge_call("read", 2, H, H, Outcome(value=H[-2:])) is None
    assert judge_call("read", None, H, H, Outcome(value=H)) is None
    assert mode(judge_call("read", 2, H, H, Outcome(value=H[:2]))) == "wrong_window"
    assert mode(judge_call("read", 2, H, H[:-1], Outcome(value=H[-2:]))) == "read_changed"


def test_net_fault_descriptions_name_the_point() -> None:
    assert "reply chunk #3" in Fault("cut-reply", skip=2).describe()
    assert "ms after it began" in Fault("cancel", delay_s=0.001).describe()


def test_window_edges_and_judge() -> None:
    assert edge_limits(6, 3) == [None, -5, -1, 0, 1, 2, 4, 5, 6, 7, 13]
    assert window_problem(None, H, H, None, set()) is None
    assert window_problem(None, H, H[1:], None, set()) is not None
    foreign = {'{"content":"peer","role":"user"}'}
    assert window_problem(2, H, H[-2:], None, foreign) is None
    assert window_problem(0, H, [], None, foreign) is None
    assert window_problem(9, H, H, None, foreign) is None
    for negative in ([], H):
        assert window_problem(-1, H, negative, None, foreign) is None
    assert window_problem(-1, H, None, ValueError("LIMIT must not be negative"), foreign) is None
    assert window_problem(-1, H, H[-1:], None, foreign) is not None
    assert window_problem(0, H, H, None, foreign) is not None
    assert window_problem(2, H, H[:2], None, foreign) is not None
    assert window_problem(2, H, None, RuntimeError("x"), foreign) is not None
    assert "another session" in (window_problem(2, H, [H[-1], item("peer")], None, foreign)
                                 or "")


def _call(name: str, kind: str, invoked: int, ended: int, batch: list[Any] | None = None,
          value: Any = None, error: BaseException | None = None) -> Call:
    return Call(name, kind, batch or [], invoked, ended, value, error)


def test_drain_judge() -> None:
    marker = item("marker")
    add = _call("add #0", "add", 0, 3, [item("a")])
    pop = _call("pop #1", "pop", 1, 4, value=H[-1])
    late = _call("late add", "add", 9, 10, [item("late")], error=RuntimeError("closed"))
    calls = [add, pop, late]
    kept = [*H[:-1], item("a"), marker]
    assert judge_drain(H, calls, 5, 8, marker, kept) is None
    # an in-flight call that failed was not drained
    failed = _call("add #0", "add", 0, 6, [item("a")], error=ConnectionError("pulled"))
    verdict = judge_drain(H, [failed, pop, late], 5, 8, marker, [*H[:-1], marker])
    assert verdict is not None and verdict[0] == "not_drained"
    # a late call that returned was accepted after close
    accepted = _call("late add", "add", 9, 10, [item("late")])
    verdict = judge_drain(H, [add, pop, accepted], 5, 8, marker, [*kept[:-1], item("late"),
                                                                   marker])
    assert verdict is not None and verdict[0] == "accepted_after_close"
    # a batch landing after the marker
    during = _call("during-close add", "add", 6, 9, [item("d")])
    verdict = judge_drain(H, [add, pop, during], 5, 8, marker,
                          [*H[:-1], item("a"), marker, item("d")])
    assert verdict is not None and verdict[0] == "landed_after_close"
    # an effect nobody accounts for (a pop that raised but removed an item)
    raised_pop = _call("during-close pop", "pop", 6, 9, error=RuntimeError("closed"))
    verdict = judge_drain(H, [add, raised_pop], 5, 8, marker, kept)
    assert verdict is not None and verdict[0] == "effects_do_not_add_up"


def test_fresh_answers() -> None:
    assert answer_problem("pop_item()", None) is None
    assert answer_problem("clear_session()", None) is None
    assert answer_problem("get_items()", []) is None
    assert answer_problem("get_items(limit=2)", []) is None
    assert answer_problem("get_items()", None) is not None
    assert answer_problem("pop_item()", {"role": "user"}) is not None


# --- on the reference --------------------------------------------------------------------------


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_holds_on_the_reference(check_id: str) -> None:
    assert_holds_with_its_trials(check_id, SMALL[check_id])


@pytest.mark.parametrize(("check_id", "mutant", "mode"), [
    ("ARIB-PING-001", "reference_ping_always_true", "ping_#1_while_down"),
    ("ARIB-PING-001", "reference_ping_raises_when_down", "ping_#1_while_down"),
    ("ARIB-PING-001", "reference_ping_after_close_answers", "ping_after_close()"),
    ("ARIB-NET-001", "reference_add_after_cancel_lands_later", "landed_after_return"),
    ("ARIB-WINDOW-001", "reference_limit_reads_every_session", "foreign"),
    ("ARIB-WINDOW-001", "reference_limit_zero_means_no_limit", "wrong_window"),
    ("ARIB-FRESH-001", "reference_pop_on_new_store_raises", "raised"),
])
def test_hand_written_mutant_is_violated(check_id: str, mutant: str, mode: str) -> None:
    assert_mutant_violates(check_id, SMALL[check_id], mutant, mode)


def test_net_blind_pop_retry_is_seen_on_the_reference() -> None:
    # The interrupted pop must be cancelled after it removed the newest item: most trials.
    finding = run_small("ARIB-NET-001", {"trials": 4}, "reference_pop_takes_two_on_retry")
    assert finding.verdict is Verdict.VIOLATED
    assert "pop_removed_other" in finding.modes


def test_abstains_where_there_is_no_ping() -> None:
    finding = run_small("ARIB-PING-001", SMALL["ARIB-PING-001"], lane=get_target("sqlite-file"))
    assert finding.verdict is Verdict.NOT_APPLICABLE
    assert "ping" in (finding.reason or "")


def test_drain_sees_a_close_that_does_not_wait() -> None:
    finding = run_small("ARIB-DRAIN-001", {"trials": 8}, "reference_close_does_not_wait")
    assert finding.verdict is Verdict.VIOLATED
    assert "not_drained" in finding.modes


def test_drain_abstains_without_close() -> None:
    finding = run_small("ARIB-DRAIN-001", SMALL["ARIB-DRAIN-001"],
                        lane=get_target("sqlalchemy-sqlite-file"))
    assert finding.verdict is Verdict.NOT_APPLICABLE


def test_every_check_names_existing_mutants_and_selectors() -> None:
    for check_id in SMALL:
        check = get_check(check_id)
        assert check.generated, check_id
        for name in check.mutants:
            assert get_mutant(name).description


# --- on real servers -----------------------------------------------------------------------------

HAVE = {name: ServiceManager(environ={}).availability(name) is None
        for name in ("redis", "postgres")}


@pytest.fixture(scope="module")
def services() -> Iterator[Mapping[str, str]]:
    with ServiceManager(environ={}) as manager:
        for name, present in HAVE.items():
            if present:
                manager.start(name)
        yield dict(manager.services)


def run_on(lane: TargetSpec, check_id: str, services: Mapping[str, str],
           mutant: str | None = None) -> Finding:
    check = get_check(check_id)
    opts = RunOptions(params=check.resolve_params(SMALL[check_id]), services=dict(services))
    spec = get_mutant(mutant) if mutant else None
    outcome = run_one(lambda: run_check(check, lane, opts, spec), 300)
    assert outcome.value is not None, outcome.detail
    return outcome.value  # type: ignore[no-any-return]


def _on(lane: str, *rest: str) -> Any:
    """A test case on ``lane``, skipped when its server is not installed."""
    service = "postgres" if "postgres" in lane else "redis"
    return pytest.param(lane, *rest, marks=pytest.mark.skipif(
        not HAVE[service], reason=f"{service} server not installed"))


@pytest.mark.slow
@pytest.mark.parametrize("lane", [_on("redis-from-url"), _on("redis-injected-client"),
                                  _on("sqlalchemy-postgres")])
@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_server_lane(lane: str, check_id: str, services: Mapping[str, str]) -> None:
    finding = run_on(get_target(lane), check_id, services)
    abstains = {("ARIB-PING-001", "sqlalchemy-postgres"), ("ARIB-DRAIN-001", "sqlalchemy-postgres"),
                ("ARIB-DRAIN-001", "redis-injected-client")}
    if (check_id, lane) in abstains:
        assert finding.verdict is Verdict.NOT_APPLICABLE, finding.reason
        return
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)


@pytest.mark.slow
@pytest.mark.parametrize(("lane", "check_id", "mutant", "mode"), [
    _on("redis-from-url", "ARIB-NET-001", "redis_add_reports_success_on_connection_error",
        "acknowledged_lost"),
    _on("redis-from-url", "ARIB-NET-001", "redis_pop_retries_blindly", "pop_mismatch"),
    _on("redis-from-url", "ARIB-PING-001", "redis_ping_cached_answer", "ping_#1_while_down"),
    _on("sqlalchemy-postgres", "ARIB-WINDOW-001", "postgres_limit_before_session_filter",
        "wrong_window"),
    _on("sqlalchemy-postgres", "ARIB-NET-001", "postgres_add_swallows_connection_error",
        "acknowledged_lost"),
    _on("sqlalchemy-postgres", "ARIB-FRESH-001", "postgres_pop_before_tables_exist", "raised"),
    _on("redis-from-url", "ARIB-DRAIN-001", "redis_close_pulls_the_client", "not_drained"),
])
def test_server_lane_mutant(lane: str, check_id: str, mutant: str, mode: str,
                            services: Mapping[str, str]) -> None:
    finding = run_on(get_target(lane), check_id, services, mutant)
    assert finding.verdict is Verdict.VIOLATED, (finding.samples, finding.reason)
    assert mode in finding.modes, finding.modes
