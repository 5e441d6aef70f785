"""The "Use it from your own tests" page's example (harness/api/README.md) runs and passes, as
printed."""

from __future__ import annotations

from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "harness" / "api" / "README.md"
BEGIN, END = "<!-- api-example:begin -->", "<!-- api-example:end -->"


def example() -> str:
    """The Python block between the page's api-example markers."""
    block = README.read_text().split(BEGIN, 1)[1].split(END, 1)[0]
    return block.split("```python\n", 1)[1].rsplit("```", 1)[0]


def test_readme_example_runs(capsys: pytest.CaptureFixture[str]):
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(example(), str(README), "exec"), namespace)
    report = namespace["report"]
    out = capsys.readouterr().out
    assert out.startswith("arib validate readme_example.my_store: passed: 2 held of 2 checks")
    assert [f.verdict.value for f in report] == ["held", "held"]  # type: ignore[attr-defined]


def test_readme_example_store_fails_when_made_racy():
    """The example can fail: the same store with an await between read and write loses items."""
    namespace: dict[str, object] = {"__name__": "readme_example"}
    source = example().replace(
        "    async def add_items(self, items):\n",
        "    async def add_items(self, items):\n"
        "        before = await self.get_items()\n"
        "        import asyncio; await asyncio.sleep(0)\n"
        "        await self.clear_session()\n"
        "        items = before + items\n")
    source = source.split("report = validate(")[0]
    exec(compile(source, str(README), "exec"), namespace)
    from arib.api import validate

    report = validate(namespace["my_store"], checks=["ARIB-CONC-001"],  # type: ignore[arg-type]
                      params={"ARIB-CONC-001": {"writers": 4, "appends": 5}})
    assert report["ARIB-CONC-001"].verdict.value == "violated", report
