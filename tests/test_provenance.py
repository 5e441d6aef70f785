"""arib.ground.provenance: a run records the version of every package it measures, the
distributions installed lanes name among them."""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

import pytest

from arib.ground import provenance
from arib.ground.family import PluginLanes
from arib.targets.base import Claims, TargetSpec


def _lane(name: str, distribution: str) -> TargetSpec:
    async def build(ctx: object) -> object:
        raise AssertionError("never built")

    return TargetSpec(name=name, backend="X", module="x", claims=Claims(has_close=False),
                      build=build, description="", distribution=distribution)


def test_a_plugin_lane_s_distribution_is_recorded_with_its_version(
        monkeypatch: pytest.MonkeyPatch) -> None:
    lanes = PluginLanes((_lane("third", "pytest"), _lane("absent", "no-such-dist-for-arib"),
                         _lane("own", "")), ())
    monkeypatch.setattr(provenance, "plugin_lanes", lambda family: lanes)
    packages = provenance.environment()["packages"]
    assert packages["pytest"] == metadata.version("pytest")
    assert packages["no-such-dist-for-arib"] is None  # named, and said to be absent
    assert "" not in packages


def test_the_lock_hash_is_of_the_lock_the_environment_names(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    lock = tmp_path / "lg-lmdb.txt"
    lock.write_text("lmdb==1.4.1\n")
    monkeypatch.setenv("ARIB_LOCK", str(lock))
    assert provenance.lock_hash("0.24.0") == hashlib.sha256(lock.read_bytes()).hexdigest()
    monkeypatch.delenv("ARIB_LOCK")
    assert provenance.lock_hash("no-such-version") == "unlocked"
