"""arib.ground.schedule.strategies: deterministic per seed, PCT's change points, the
enumeration's count on a toy, and replay following its record."""

from __future__ import annotations

import itertools
import math

import pytest

from arib.ground.schedule.record import Decision, Schedule, ScheduleError
from arib.ground.schedule.strategies import (
    PCT,
    STRATEGIES,
    DfsExplorer,
    RandomWalk,
    Replay,
    make,
)


def picks(strategy_name: str, seed: int, steps: int = 40) -> list[int]:
    strategy = make(strategy_name, seed)
    for actor in range(4):
        strategy.spawned(actor)
    return [strategy.choose([0, 1, 2, 3], step) for step in range(1, steps + 1)]


@pytest.mark.parametrize("name", ["random", "pct"])
def test_the_same_seed_gives_the_same_decisions(name: str) -> None:
    assert picks(name, 11) == picks(name, 11)
    assert any(picks(name, seed) != picks(name, 11) for seed in range(12, 20))


def test_random_walk_picks_every_ready_actor() -> None:
    assert set(picks("random", 3, 200)) == {0, 1, 2, 3}


def test_pct_runs_the_highest_priority_and_changes_it_at_its_change_points() -> None:
    pct = PCT(5, {"d": 3, "k": 20})
    assert len(pct.change) == 2 and all(1 <= step <= 20 for step in pct.change)
    for actor in range(3):
        pct.spawned(actor)
    order = sorted(range(3), key=lambda a: -pct.priority[a])
    taken = [pct.choose([0, 1, 2], step) for step in range(1, 21)]
    first, second = sorted(pct.change)
    # before the first change point the top actor runs; it drops there, the next runs
    assert set(taken[:first]) == {order[0]}
    assert taken[first] == order[1]
    assert pct.priority[order[0]] == 3 - pct.change[first] and pct.priority[order[0]] < 3
    if second < len(taken):  # the actor of the second change point drops below the rest
        assert taken[second] != taken[second - 1]


def test_pct_with_depth_one_never_preempts() -> None:
    pct = PCT(1, {"d": 1, "k": 10})
    for actor in range(2):
        pct.spawned(actor)
    assert len(set(pct.choose([0, 1], s) for s in range(1, 11))) == 1


def test_unknown_strategy_and_bad_parameters_are_refused() -> None:
    with pytest.raises(ScheduleError, match="unknown schedule strategy 'lifo'"):
        make("lifo", 1)
    with pytest.raises(ScheduleError, match="d in 1..16"):
        make("pct", 1, {"d": 0})
    with pytest.raises(ScheduleError, match="'random' parameter x"):
        make("random", 1, {"x": 1})
    assert set(STRATEGIES) == {"random", "fifo", "pct", "dfs"}


def toy_tree(prefix_choose: object, lengths: tuple[int, ...]) -> tuple[list[Decision],
                                                                       list[tuple[int, ...]]]:
    """Run a toy of actors with ``lengths`` steps each under a strategy: each decision
    releases one step of a chosen actor; an actor is ready while it has steps left."""
    left = list(lengths)
    decisions: list[Decision] = []
    readies: list[tuple[int, ...]] = []
    step = 0
    while any(left):
        step += 1
        ready = tuple(a for a, n in enumerate(left) if n)
        pick = prefix_choose.choose(ready, step)  # type: ignore[attr-defined]
        decisions.append(Decision((pick,)))
        readies.append(ready)
        left[pick] -= 1
    return decisions, readies


@pytest.mark.parametrize("lengths", [(2, 2), (3, 1), (2, 2, 1)])
def test_enumeration_visits_every_interleaving_once_then_stops(
        lengths: tuple[int, ...]) -> None:
    explorer = DfsExplorer()
    seen: list[tuple[int, ...]] = []
    while not explorer.exhausted:
        decisions, readies = toy_tree(explorer.strategy(0), lengths)
        seen.append(tuple(d.actor for d in decisions))
        explorer.done(decisions, readies)
    expected = math.factorial(sum(lengths)) // math.prod(math.factorial(n) for n in lengths)
    assert len(seen) == len(set(seen)) == expected == explorer.explored
    # the i-th trial explores the i-th schedule in depth-first (lexicographic) order
    assert seen == sorted(seen)
    assert set(seen) == set(itertools.permutations(
        [a for a, n in enumerate(lengths) for _ in range(n)]))


def test_replay_follows_its_record_and_counts_where_it_could_not() -> None:
    recorded = Schedule("random", 9, {}, tuple(Decision((a,)) for a in (2, 0, 1, 1)))
    replay = Replay(recorded)
    assert [replay.choose([0, 1, 2], s) for s in range(1, 5)] == [2, 0, 1, 1]
    assert replay.diverged == 0
    assert replay.wanted(5) is None
    # the recorded actor is not ready: the recorded strategy decides, counted
    replay.choose([1], 2)
    assert replay.diverged == 1
    # past the record the recorded strategy (same seed) goes on
    assert isinstance(replay.fallback, RandomWalk)
