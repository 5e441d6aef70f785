"""Hand-written mutants of the advanced API (branches, usage, turns): the reference's and
AdvancedSQLiteSession's. Each models one integrity defect agent code would hit."""

from __future__ import annotations

import json
from typing import Any

import anyio

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
ADVANCED = "agents.extensions.memory.advanced_sqlite_session"


def _copy_turn_n_too(cls: Any) -> None:
    """create_branch_from_turn(N) also copies turn N onto the new branch."""
    original = cls.create_branch_from_turn

    async def create_branch_from_turn(self: Any, turn_number: int,
                                      branch_name: str | None = None) -> str:
        source = await self.get_items()
        name = await original(self, turn_number, branch_name)
        turn, extra = 0, []
        for item in source:
            turn += isinstance(item, dict) and item.get("role") == "user"
            if turn == turn_number:
                extra.append(item)
        await self.add_items(extra)  # the new branch is current now
        return name  # type: ignore[no-any-return]

    cls.create_branch_from_turn = create_branch_from_turn


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.create_branch_from_turn",
    defect="off by one: a branch created from turn N also holds turn N, so the rewound "
    "question is asked twice",
)
def reference_branch_copies_turn_n() -> None:
    _copy_turn_n_too(load_class(REF, "ReferenceSession"))


@handwritten(
    target="advanced-sqlite-file",
    module=ADVANCED,
    qualname="AdvancedSQLiteSession.create_branch_from_turn",
    defect="off by one: a branch created from turn N also holds turn N, so the rewound "
    "question is asked twice",
)
def advanced_branch_copies_turn_n() -> None:
    _copy_turn_n_too(load_class(ADVANCED, "AdvancedSQLiteSession"))


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.delete_branch",
    defect="shared rows deleted: deleting a branch also deletes from main the messages it "
    "was copied from",
)
def reference_delete_branch_takes_main_copies() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.delete_branch

    async def delete_branch(self: Any, branch_id: str, force: bool = False) -> None:
        copied = await self.get_items(branch_id=branch_id)
        await original(self, branch_id, force)
        conn = self._live()
        with conn:
            for item in copied:
                conn.execute("DELETE FROM items WHERE session_id = ? AND body = ?",
                             (self.session_id, json.dumps(item)))

    cls.delete_branch = delete_branch


@handwritten(
    target="advanced-sqlite-file",
    module=ADVANCED,
    qualname="AdvancedSQLiteSession.switch_to_branch",
    defect="unchecked switch: switch_to_branch never checks that the branch exists, so a "
    "mistyped id silently moves the session onto an empty history",
)
def advanced_switch_skips_validation() -> None:
    cls = load_class(ADVANCED, "AdvancedSQLiteSession")

    async def switch_to_branch(self: Any, branch_id: str) -> None:
        self._branch_state = (branch_id, self._branch_state[1])

    cls.switch_to_branch = switch_to_branch


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="late branch snapshot: add_items reads the current branch only after yielding, so "
    "a switch_to_branch started after it redirects the append",
)
def reference_add_follows_later_switch() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        await anyio.sleep(0)
        async with self._adv_lock:
            pass  # let every operation queued before this point run first
        await original(self, items)

    cls.add_items = add_items


@handwritten(
    target="advanced-sqlite-file",
    module=ADVANCED,
    qualname="AdvancedSQLiteSession._insert_structure_metadata",
    defect="late branch snapshot: an append is filed under the branch current when its write "
    "runs, not when add_items was called",
)
def advanced_append_files_under_write_time_branch() -> None:
    cls = load_class(ADVANCED, "AdvancedSQLiteSession")
    original = cls._insert_structure_metadata

    def _insert_structure_metadata(self: Any, conn: Any, items: list[Any],
                                   branch_id: str | None = None) -> None:
        original(self, conn, items, None)

    cls._insert_structure_metadata = _insert_structure_metadata


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_session_usage",
    defect="partial totals: get_session_usage() without a branch sums only the current "
    "branch, so the session's cost leaves out every other branch",
)
def reference_session_usage_current_branch_only() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.get_session_usage

    async def get_session_usage(self: Any, branch_id: str | None = None) -> Any:
        return await original(self, branch_id or self._adv_state[0])

    cls.get_session_usage = get_session_usage


@handwritten(
    target="advanced-sqlite-file",
    module=ADVANCED,
    qualname="AdvancedSQLiteSession.delete_branch",
    defect="orphaned usage: delete_branch leaves the branch's turn usage behind, so the "
    "session totals still count a deleted branch",
)
def advanced_delete_branch_leaves_usage() -> None:
    cls = load_class(ADVANCED, "AdvancedSQLiteSession")
    original = cls.delete_branch

    async def delete_branch(self: Any, branch_id: str, force: bool = False) -> None:
        with self._locked_connection() as conn:
            rows = conn.execute("SELECT * FROM turn_usage WHERE session_id = ? AND branch_id = ?",
                                (self.session_id, branch_id)).fetchall()
        await original(self, branch_id, force)
        with self._locked_connection() as conn:
            conn.executemany(f"INSERT INTO turn_usage VALUES ({', '.join('?' * 11)})", rows)
            conn.commit()

    cls.delete_branch = delete_branch


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.find_turns_by_content",
    defect="case-sensitive search: find_turns_by_content misses a turn that differs from the "
    "term only in the case of ASCII letters",
)
def reference_search_case_sensitive() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.find_turns_by_content

    async def find_turns_by_content(self: Any, search_term: str,
                                    branch_id: str | None = None) -> Any:
        found = await original(self, search_term, branch_id)
        return [t for t in found if search_term in json.dumps(t["full_content"],
                                                              ensure_ascii=False)
                or search_term in str(t["full_content"])]

    cls.find_turns_by_content = find_turns_by_content


@handwritten(
    target="advanced-sqlite-file",
    module=ADVANCED,
    qualname="AdvancedSQLiteSession.get_conversation_turns",
    defect="untruncated preview: get_conversation_turns returns a long message whole as its "
    "preview",
)
def advanced_turn_preview_untruncated() -> None:
    cls = load_class(ADVANCED, "AdvancedSQLiteSession")
    original = cls.get_conversation_turns

    async def get_conversation_turns(self: Any, branch_id: str | None = None) -> Any:
        turns = await original(self, branch_id)
        return [{**t, "content": t["full_content"] if isinstance(t["full_content"], str)
                 else t["content"]} for t in turns]

    cls.get_conversation_turns = get_conversation_turns


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.list_branches",
    defect="branches known by their items: a branch with no items yet is not listed and "
    "cannot be switched to or deleted, though create_branch_from_turn returned its id",
)
def reference_empty_branch_unknown() -> None:
    cls = load_class(REF, "ReferenceSession")
    listing, switch, delete = cls.list_branches, cls.switch_to_branch, cls.delete_branch

    async def known(self: Any, branch_id: str) -> bool:
        return any(b["branch_id"] == branch_id and b["message_count"]
                   for b in await listing(self))

    async def list_branches(self: Any) -> Any:
        return [b for b in await listing(self) if b["message_count"]]

    async def switch_to_branch(self: Any, branch_id: str) -> None:
        if not await known(self, branch_id):
            raise ValueError(f"Branch {branch_id!r} does not exist")
        await switch(self, branch_id)

    async def delete_branch(self: Any, branch_id: str, force: bool = False) -> None:
        if branch_id != "main" and not await known(self, branch_id):
            raise ValueError(f"Branch {branch_id!r} does not exist")
        await delete(self, branch_id, force)

    cls.list_branches = list_branches
    cls.switch_to_branch = switch_to_branch
    cls.delete_branch = delete_branch


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_tool_usage",
    defect="uncounted tools: get_tool_usage leaves out image generation and local shell "
    "calls",
)
def reference_tool_usage_skips_image_and_shell() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.get_tool_usage

    async def get_tool_usage(self: Any, branch_id: str | None = None) -> Any:
        return [row for row in await original(self, branch_id)
                if row[0] not in ("image_generation_call", "local_shell_call")]

    cls.get_tool_usage = get_tool_usage


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.store_run_usage",
    defect="swallowed failure: store_run_usage logs an error and returns normally, so a "
    "run's usage is lost without the caller knowing",
)
def reference_store_usage_swallows_errors() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.store_run_usage

    async def store_run_usage(self: Any, result: Any) -> None:
        try:
            await original(self, result)
        except Exception:  # noqa: BLE001 - the defect: the failure is swallowed
            return

    cls.store_run_usage = store_run_usage
