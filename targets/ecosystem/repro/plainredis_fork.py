"""Direct reproduction, outside the harness (ARIB-LGFORK-001 / LGCONC-001 on lg-plainredis):
two lines forked from one checkpoint of a thread (time travel) each move channel ``value`` to
the saver's next version; the first line's checkpoint then reads the second line's value.

langgraph-checkpoint-plainredis 0.1.0 keys a channel's blob by (thread, ns, channel, version)
and takes BaseCheckpointSaver's integer get_next_version, so both lines write version 2 of
``value`` under one key. Run in the lg-plainredis environment of `nox -s ecosystem` (needs
redis-server on PATH): `python targets/ecosystem/repro/plainredis_fork.py`. Compare
memory_fork.py: InMemorySaver's own versions carry a random part and keep both lines.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint
from langgraph_checkpoint_plainredis import RedisSaver


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def put(saver: Any, parent: Any, cid: str, value: str, version: Any) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["id"] = cid
    checkpoint["channel_values"] = {"value": value}
    checkpoint["channel_versions"] = {"value": version}
    return saver.put(parent, checkpoint, {"step": 0}, {"value": version})


def main() -> None:
    port, folder = free_port(), tempfile.mkdtemp()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--dir", folder, "--save",
                               "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        saver = RedisSaver(url=f"redis://127.0.0.1:{port}/0")
        start = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        v1 = saver.get_next_version(None, None)
        base = put(saver, start, "1ef00000-0000-6000-8000-000000000000", "base", v1)
        v2 = saver.get_next_version(v1, None)
        main_line = put(saver, base, "1ef00000-0000-6000-8000-000000000001", "main", v2)
        put(saver, base, "1ef00000-0000-6000-8000-000000000002", "fork", v2)  # time travel
        got = saver.get_tuple(main_line).checkpoint["channel_values"]
        print(f"versions {v1} {v2} | main line's checkpoint reads {got} (put: "
              f"{{'value': 'main'}})")
        saver.close()
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
