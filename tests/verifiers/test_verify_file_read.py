"""The file clauses read what the agent left as untrusted input: a FIFO, a device, a socket or a file over the
cap is an unmet item naming the path and why, answered at once (never a blocked or endless read)."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from verify_helpers import Workspace

from awp_pipelines.core.verifiers.file_read import MAX_READ_BYTES, Refused, read_regular

CLAUSES = {
    "contains": lambda path: {"contains": [{"path": path, "text": "x"}]},
    "matches": lambda path: {"matches": [{"path": path, "pattern": "x"}]},
    "json": lambda path: {"json": [{"path": path}]},
    "yaml": lambda path: {"yaml": [{"path": path}]},
    "doc": lambda path: {"doc": [{"path": path}]},
}


@pytest.mark.parametrize("clause", sorted(CLAUSES))
def test_a_fifo_named_in_a_file_clause_is_refused_at_once(ws: Workspace, clause: str) -> None:
    os.mkfifo(ws.repos["app"] / "pipe")  # no writer: a plain open() would block forever
    started = time.monotonic()
    item = ws.item(CLAUSES[clause]("pipe"))
    assert time.monotonic() - started < 5
    assert not item.passed and item.fault is None
    assert any(f"not a regular file (a FIFO): {ws.repos['app'] / 'pipe'}" in d for d in item.details), item.details


def test_a_link_inside_the_tree_to_a_fifo_inside_is_refused_too(ws: Workspace) -> None:
    os.mkfifo(ws.repos["app"] / "pipe")
    (ws.repos["app"] / "notes.md").symlink_to("pipe")
    item = ws.item(CLAUSES["contains"]("notes.md"))
    assert not item.passed and "not a regular file (a FIFO)" in item.details[0]


def test_a_link_to_dev_zero_is_refused_by_the_path_check(ws: Workspace) -> None:
    (ws.repos["app"] / "zero.json").symlink_to("/dev/zero")
    item = ws.item(CLAUSES["json"]("zero.json"))
    assert not item.passed and "escapes repo 'app' through a symlink (resolves to /dev/zero)" in item.details[0]


def test_a_socket_is_refused(ws: Workspace) -> None:
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(ws.repos["app"] / "sock"))
        item = ws.item(CLAUSES["matches"]("sock"))
    finally:
        listener.close()
    assert not item.passed and "not a regular file (a socket)" in item.details[0]


def test_a_file_over_the_cap_is_refused_with_its_size(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_regular, "__defaults__", (64,))
    ws.write("big.txt", "x" * 65)
    ws.write("small.txt", "x" * 64)
    big, small = ws.item(CLAUSES["contains"]("big.txt")), ws.item(CLAUSES["contains"]("small.txt"))
    assert not big.passed and "file too large (65 bytes, over the 64-byte cap)" in big.details[0]
    assert small.passed


def test_source_absent_names_a_file_it_could_not_check(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_regular, "__defaults__", (64,))
    ws.write("src/big.py", "x = 1\n" * 20)
    item = ws.item({"source_absent": [{"path": "src", "patterns": ["forbidden"]}]})
    assert not item.passed and any("not checked: file too large" in d for d in item.details), item.details


def test_the_cap_is_ten_mebibytes_and_a_regular_file_reads_whole(tmp_path: Path) -> None:
    assert MAX_READ_BYTES == 10 * 1024 * 1024
    file = tmp_path / "f"
    file.write_bytes(b"abc" * 1000)
    assert read_regular(file) == b"abc" * 1000
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing")
    with pytest.raises(Refused, match="a directory"):
        read_regular(tmp_path)
