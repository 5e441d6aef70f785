"""Private temporary folders: 0700, one per process and base, removed by their maker only."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from arib.ground import owners, scratch


def test_one_private_folder_per_process_removed_at_cleanup(private_tmp: Path) -> None:
    made = scratch.folder()
    assert made.parent == private_tmp and made.name.startswith(scratch.PREFIX)
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    assert scratch.folder() == made  # made once
    child = scratch.child_folder()
    assert child == made / f"child-{os.getpid()}"
    assert stat.S_IMODE(child.stat().st_mode) == 0o700
    scratch.remove_child(os.getpid())
    assert not child.exists() and made.exists()
    scratch.cleanup()
    assert list(private_tmp.iterdir()) == []


def test_a_forked_child_works_inside_and_leaves_its_parents_folder(private_tmp: Path) -> None:
    made = scratch.folder()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its temporary files go to its own folder in the parent's
        code = 1
        try:
            private = scratch.enter_child()
            handle = tempfile.NamedTemporaryFile(delete=False)
            os.write(write_fd, f"{private}\n{handle.name}\n".encode())
            scratch.cleanup()  # not its folder to remove
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd) as reader:
        private, name = reader.read().split()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert Path(private) == made / f"child-{pid}" and Path(name).parent == Path(private)
    assert made.is_dir() and Path(name).exists()
    scratch.remove_child(pid)
    assert [p.name for p in made.iterdir()] == [owners.RECORD]  # only who owns it


def test_a_folder_records_its_owner_so_that_a_killed_run_is_reaped(private_tmp: Path) -> None:
    made = scratch.folder()
    record = owners.read(made)
    assert record is not None
    assert (record["pid"], record["start"]) == (os.getpid(), owners.start_time(os.getpid()))
    assert owners.leftovers([str(private_tmp)]) == []  # its owner runs: not a leftover


def test_parity_checks_report_folder_goes_with_the_run(private_tmp: Path, tmp_path: Path) -> None:
    from arib.parity.gate import check
    from tests.test_parity_gate import options

    report, folder = check(options(tmp_path))
    assert report["exit_code"] == 0
    assert folder.parent == scratch.folder() and (folder / "report.json").exists()
    scratch.cleanup()  # what the end of `python -m arib parity check` does
    assert not folder.exists() and list(private_tmp.iterdir()) == []
