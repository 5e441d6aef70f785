"""Before/after source tables for every mutation operator (small snippets of our own)."""

from __future__ import annotations

import textwrap

import pytest

from arib.mutants.generate import apply_operator
from arib.mutants.hangs import HANG_PRONE
from arib.mutants.operators import OPERATORS, hang_prone_first


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


CASES: list[tuple[str, str, list[str]]] = [
    # --- drop_lock -------------------------------------------------------------------------
    ("drop_lock", src("""
        def f(self):
            # serialize
            with self._lock:
                x = 1
                y = 2
            return x
        """), [src("""
        def f(self):
            # serialize
            x = 1
            y = 2
            return x
        """)]),
    ("drop_lock", src("""
        async def f(self):
            async with self._connection_guard():
                await g()
        """), [src("""
        async def f(self):
            await g()
        """)]),
    ("drop_lock", src("""
        def f(self):
            with self._lock, other():
                pass
        """), [src("""
        def f(self):
            with other():
                pass
        """)]),
    ("drop_lock", src("""
        def f(self):
            with cls._file_locks_guard: n = 1
            return n
        """), [src("""
        def f(self):
            n = 1
            return n
        """)]),
    ("drop_lock", src("""
        def f(self, p):
            with open(p) as fh, self._locked_connection() as conn:
                pass
        """), []),
    # --- drop_await ------------------------------------------------------------------------
    ("drop_await", src("""
        async def f(x):
            await g(x)
            return await h(x)
        """), [src("""
        async def f(x):
            g(x)
            return await h(x)
        """), src("""
        async def f(x):
            await g(x)
            return h(x)
        """)]),
    ("drop_await", src("""
        async def f(x):
            return (await g(x)).value
        """), [src("""
        async def f(x):
            return (g(x)).value
        """)]),
    # --- drop_commit / drop_rollback -------------------------------------------------------
    ("drop_commit", src("""
        def f(conn):
            conn.execute("DELETE FROM t")
            conn.commit()
        """), [src("""
        def f(conn):
            conn.execute("DELETE FROM t")
        """)]),
    ("drop_commit", src("""
        async def f(conn):
            await wrap(conn.commit())
        """), [src("""
        async def f(conn):
            pass
        """)]),
    ("drop_commit", src("""
        def f(conn):
            ok = conn.commit()
            conn.commit(True)
        """), []),
    ("drop_rollback", src("""
        async def f(conn):
            try:
                await conn.rollback()
            except BaseException:
                raise
        """), [src("""
        async def f(conn):
            try:
                pass
            except BaseException:
                raise
        """)]),
    # --- drop_closed_guard -----------------------------------------------------------------
    ("drop_closed_guard", src("""
        def f(self):
            if self._closed:
                raise RuntimeError("closed")
            self._check_not_closed()
            return 1
        """), [src("""
        def f(self):
            self._check_not_closed()
            return 1
        """), src("""
        def f(self):
            if self._closed:
                raise RuntimeError("closed")
            return 1
        """)]),
    ("drop_closed_guard", src("""
        def f(self):
            if self._closed:
                self.n += 1
            if self._open:
                return
        """), []),
    # --- swap_order / swap_order_method ----------------------------------------------------
    ("swap_order", src('''
        def f(t):
            a = f"SELECT x FROM {t} WHERE s = ? ORDER BY id ASC"
            b = "SELECT x FROM t ORDER BY id DESC LIMIT ?"
            c = "ASC"
        '''), [src('''
        def f(t):
            a = f"SELECT x FROM {t} WHERE s = ? ORDER BY id DESC"
            b = "SELECT x FROM t ORDER BY id DESC LIMIT ?"
            c = "ASC"
        '''), src('''
        def f(t):
            a = f"SELECT x FROM {t} WHERE s = ? ORDER BY id ASC"
            b = "SELECT x FROM t ORDER BY id ASC LIMIT ?"
            c = "ASC"
        ''')]),
    ("swap_order_method", src("""
        q = select(t.c.x).order_by(t.c.created_at.desc(), t.c.id.asc())
        """), [src("""
        q = select(t.c.x).order_by(t.c.created_at.asc(), t.c.id.asc())
        """), src("""
        q = select(t.c.x).order_by(t.c.created_at.desc(), t.c.id.desc())
        """)]),
    # --- widen_session_filter / drop_session_where -----------------------------------------
    ("widen_session_filter", src('''
        q = (
            f"DELETE FROM {t} "
            "WHERE session_id = ? AND id < ?"
        )
        '''), [src('''
        q = (
            f"DELETE FROM {t} "
            "WHERE (1 = 1 OR session_id = ?) AND id < ?"
        )
        ''')]),
    ("widen_session_filter", src('''
        q = "SELECT 1 FROM m WHERE m.id = ? AND m.session_id = ?"
        u = "UPDATE s SET session_id = ? WHERE id = ?"
        '''), [src('''
        q = "SELECT 1 FROM m WHERE m.id = ? AND (1 = 1 OR m.session_id = ?)"
        u = "UPDATE s SET session_id = ? WHERE id = ?"
        ''')]),
    ("drop_session_where", src("""
        q = select(t.c.x).where(t.c.session_id == sid).limit(1)
        """), [src("""
        q = select(t.c.x).limit(1)
        """)]),
    ("drop_session_where", src("""
        q = delete(t).where(t.c.session_id == sid, t.c.id.in_(ids))
        r = delete(t).where(t.c.id == rid)
        """), [src("""
        q = delete(t).where(t.c.id.in_(ids))
        r = delete(t).where(t.c.id == rid)
        """)]),
    # --- insert_conflict -------------------------------------------------------------------
    ("insert_conflict", src('''
        a = f"INSERT INTO {t} (s, d) VALUES (?, ?)"
        b = "INSERT OR IGNORE INTO s (id) VALUES (?)"
        '''), [src('''
        a = f"INSERT OR IGNORE INTO {t} (s, d) VALUES (?, ?)"
        b = "INSERT OR IGNORE INTO s (id) VALUES (?)"
        '''), src('''
        a = f"INSERT OR REPLACE INTO {t} (s, d) VALUES (?, ?)"
        b = "INSERT OR IGNORE INTO s (id) VALUES (?)"
        ''')]),
    # --- drop_if_not_exists ----------------------------------------------------------------
    ("drop_if_not_exists", src('''
        conn.executescript("""
            CREATE TABLE IF NOT EXISTS a (id INTEGER);
            CREATE UNIQUE INDEX  IF NOT EXISTS a_id ON a (id);
            CREATE TABLE b (id INTEGER);
        """)
        q = f"CREATE TABLE IF NOT EXISTS {name} (x)"
        note = "IF NOT EXISTS is not SQL alone"
        '''), [src('''
        conn.executescript("""
            CREATE TABLE a (id INTEGER);
            CREATE UNIQUE INDEX  IF NOT EXISTS a_id ON a (id);
            CREATE TABLE b (id INTEGER);
        """)
        q = f"CREATE TABLE IF NOT EXISTS {name} (x)"
        note = "IF NOT EXISTS is not SQL alone"
        '''), src('''
        conn.executescript("""
            CREATE TABLE IF NOT EXISTS a (id INTEGER);
            CREATE UNIQUE INDEX a_id ON a (id);
            CREATE TABLE b (id INTEGER);
        """)
        q = f"CREATE TABLE IF NOT EXISTS {name} (x)"
        note = "IF NOT EXISTS is not SQL alone"
        '''), src('''
        conn.executescript("""
            CREATE TABLE IF NOT EXISTS a (id INTEGER);
            CREATE UNIQUE INDEX  IF NOT EXISTS a_id ON a (id);
            CREATE TABLE b (id INTEGER);
        """)
        q = f"CREATE TABLE {name} (x)"
        note = "IF NOT EXISTS is not SQL alone"
        ''')]),
    # --- flip_comparison -------------------------------------------------------------------
    ("flip_comparison", src("""
        if len(rows) < window:
            pass
        """), [src("""
        if len(rows) >= window:
            pass
        """)]),
    ("flip_comparison", src("""
        ok = x is None and y == 1 and z not in s
        """), [src("""
        ok = x is not None and y == 1 and z not in s
        """), src("""
        ok = x is None and y != 1 and z not in s
        """), src("""
        ok = x is None and y == 1 and z in s
        """)]),
    ("flip_comparison", src("""
        ok = 0 <= i < n
        """), [src("""
        ok = 0 > i < n
        """), src("""
        ok = 0 <= i >= n
        """)]),
    # --- early_return ----------------------------------------------------------------------
    ("early_return", src('''
        async def add(self, items) -> None:
            """Add items."""
            await self._write(items)
        '''), [src('''
        async def add(self, items) -> None:
            """Add items."""
            return
            await self._write(items)
        ''')]),
    ("early_return", src("""
        async def get(self) -> list[int]:
            return await self._read()
        """), [src("""
        async def get(self) -> list[int]:
            return None
            return await self._read()
        """)]),
    ("early_return", src("""
        async def conn(self) -> AsyncIterator[int]:
            yield 1

        def sync(self) -> int:
            return 1
        """), [src("""
        async def conn(self) -> AsyncIterator[int]:
            return
            yield 1

        def sync(self) -> int:
            return 1
        """)]),
    # --- single_attempt_loop ---------------------------------------------------------------
    ("single_attempt_loop", src("""
        def f():
            while True:
                try:
                    return op()
                except Busy:
                    sleep(0.1)
        """), [src("""
        def f():
            for _single_attempt in range(1):
                try:
                    return op()
                except Busy:
                    sleep(0.1)
        """)]),
    ("single_attempt_loop", src("""
        while busy():
            try:
                op()
            except Busy:
                continue
        """), [src("""
        for _single_attempt in range(1 if busy() else 0):
            try:
                op()
            except Busy:
                continue
        """)]),
    ("single_attempt_loop", src("""
        def f():
            for attempt, delay in enumerate(DELAYS):
                try:
                    return op()
                except Busy:
                    if attempt == 3:
                        raise
        """), [src("""
        def f():
            for attempt, delay in [*enumerate(DELAYS)][:1]:
                try:
                    return op()
                except Busy:
                    if attempt == 3:
                        raise
        """)]),
    ("single_attempt_loop", src("""
        for row in rows:
            try:
                out.append(load(row))
            except ValueError:
                continue
        while True:
            try:
                op()
            except Busy:
                raise
        """), []),
    # --- call_without_retry ----------------------------------------------------------------
    ("call_without_retry", src("""
        async def f(self):
            await wrap(self._run_write_with_retry(_write))
            return await self._run_write_with_retry(self._pop)
        """), [src("""
        async def f(self):
            await wrap(_write())
            return await self._run_write_with_retry(self._pop)
        """), src("""
        async def f(self):
            await wrap(self._run_write_with_retry(_write))
            return await self._pop()
        """)]),
    ("call_without_retry", src("""
        retry_claim = True
        x = self._retry_policy(a, b)
        """), []),
]


@pytest.mark.parametrize(("operator", "before", "expected"), CASES)
def test_operator_table(operator: str, before: str, expected: list[str]) -> None:
    after = apply_operator(before, operator)
    assert after == expected
    for text in after:
        compile(text, "<after>", "exec")


def test_every_operator_has_cases_and_a_one_line_change() -> None:
    covered = {case[0] for case in CASES}
    assert covered == set(OPERATORS)
    for op in OPERATORS.values():
        assert "->" in op.change, op.name
        assert op.defect and op.defect[0].islower(), op.name


def test_docstrings_and_signatures_are_not_mutated() -> None:
    before = src('''
        async def f(self, limit: int | None = None) -> None:
            """SELECT x FROM t WHERE session_id = ? ORDER BY id ASC"""
            return None
        ''')
    assert apply_operator(before, "swap_order") == []
    assert apply_operator(before, "widen_session_filter") == []
    assert apply_operator(before, "flip_comparison") == []


def test_hang_prone_operators_are_scheduled_first_and_the_rest_keep_their_order() -> None:
    names = ["flip_comparison", None, "drop_commit", "early_return", "drop_rollback",
             "drop_lock", "drop_commit"]
    ordered = hang_prone_first(list(enumerate(names)), lambda item: item[1])
    assert [i for i, _ in ordered] == [2, 4, 6, 0, 1, 3, 5]
    assert {n for n, op in OPERATORS.items() if op.may_hang} == {"drop_commit",
                                                                  "drop_rollback"}
    assert HANG_PRONE <= set(OPERATORS)  # every name in the light table is an operator
