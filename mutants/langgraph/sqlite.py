"""Hand-written mutants of langgraph-checkpoint-sqlite's savers (our own code, installed over
the saver's methods in a child process; nothing is written into site-packages)."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class

MODULE = "langgraph.checkpoint.sqlite"


@handwritten(target="lg-sqlite-file", module=MODULE, qualname="SqliteSaver.get_tuple",
             defect="the latest checkpoint is the oldest: a thread's get_tuple without an "
                    "id gives its first checkpoint")
def lg_sqlite_latest_is_oldest() -> None:
    cls = load_class(MODULE, "SqliteSaver")
    original = cls.get_tuple

    def get_tuple(self: Any, config: Any) -> Any:
        conf = config.get("configurable", {})
        if conf.get("checkpoint_id"):
            return original(self, config)
        oldest = None
        for item in self.list(config):
            oldest = item
        return None if oldest is None else original(self, oldest.config)

    cls.get_tuple = get_tuple
