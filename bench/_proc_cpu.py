"""What /proc says of a server's processes and of the machine (Linux): CPU seconds and preemptions of a process
tree, and the cores' idle share (bench/http_bench.py)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    out, todo = [pid], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def cpu_and_preemptions(pid: int) -> tuple[float, int]:
    """CPU seconds (user + system) and involuntary context switches so far, every process of the server (from
    /proc/<pid>/stat and /proc/<pid>/status): one walk of the process tree for both."""
    ticks = preempted = 0
    for p in tree(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            status = Path(f"/proc/{p}/status").read_text()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
            preempted += int(status.split("nonvoluntary_ctxt_switches:", 1)[1].split()[0])
    return ticks / os.sysconf("SC_CLK_TCK"), preempted


def idle_and_total_ticks() -> tuple[int, int]:
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[3] + fields[4], sum(fields)  # idle + iowait, everything
