"""Hand-written mutants of our reference checkpointer for the contract checks
(ARIB-CKPT-002..007): each one plausible defect of a checkpointer, in our own code."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class
from arib.mutants.langgraph._defects import namespace_prefix_list, special_kept_first

MODULE = "arib.targets.langgraph.reference"


def _conf(config: Any) -> dict[str, Any]:
    return dict((config or {}).get("configurable", {}))


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver.list",
             defect="list ignores before: every checkpoint comes back, newer ones included")
def lg_reference_list_ignores_before() -> None:
    cls = load_class(MODULE, "ReferenceSaver")
    original = cls.list

    def list_(self: Any, config: Any, *, filter: Any = None,  # noqa: A002
              before: Any = None, limit: Any = None) -> Any:
        return original(self, config, filter=filter, before=None, limit=limit)

    cls.list = list_


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver.put",
             defect="put records the namespace's latest checkpoint as the parent, not the one "
                    "its config names (a fork from an earlier checkpoint gets the wrong parent)")
def lg_reference_parent_is_latest() -> None:
    cls = load_class(MODULE, "ReferenceSaver")
    original = cls.put

    def put(self: Any, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        conf = _conf(config)
        conf.pop("checkpoint_id", None)
        latest = self.get_tuple({"configurable": conf})
        if latest is not None:
            conf["checkpoint_id"] = latest.checkpoint["id"]
        return original(self, {"configurable": conf}, checkpoint, metadata, new_versions)

    cls.put = put


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver.put_writes",
             defect="a special channel (error, interrupt, ...) keeps its first write: a second "
                    "put of it is ignored instead of overwriting")
def lg_reference_special_writes_kept_first() -> None:
    cls = load_class(MODULE, "ReferenceSaver")
    cls.put_writes = special_kept_first(cls.put_writes)


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver._tuple",
             defect="pending writes come back ordered by task id descending, not by "
                    "(task_id, idx)")
def lg_reference_writes_by_task_descending() -> None:
    cls = load_class(MODULE, "ReferenceSaver")
    original = cls._tuple

    def _tuple(self: Any, row: Any) -> Any:
        found = original(self, row)
        writes = sorted(found.pending_writes or [], key=lambda w: w[0], reverse=True)
        return found._replace(pending_writes=writes)

    cls._tuple = _tuple


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver.list",
             defect="a namespace matches by prefix: listing ns 'a' also gives 'a|b' and 'ab'")
def lg_reference_ns_prefix_matches() -> None:
    cls = load_class(MODULE, "ReferenceSaver")
    cls.list = namespace_prefix_list(cls.list)


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver.delete_thread",
             defect="delete_thread removes only the root namespace; the thread's other "
                    "namespaces stay")
def lg_reference_delete_keeps_namespaces() -> None:
    cls = load_class(MODULE, "ReferenceSaver")

    def delete_thread(self: Any, thread_id: str) -> None:
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            for table in ("ref_checkpoints", "ref_writes"):
                self._conn.execute(f"DELETE FROM {table} WHERE thread_id = ? AND ns = ''",
                                   (str(thread_id),))

    cls.delete_thread = delete_thread
