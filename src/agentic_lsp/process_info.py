"""Facts about other processes that tell whether a recorded owner still lives."""

from __future__ import annotations

from pathlib import Path


def process_start(pid: int) -> str | None:
    """The kernel's start time of a process (tells a reused pid apart); None off Linux or when
    the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]
