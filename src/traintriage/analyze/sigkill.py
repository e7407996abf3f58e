"""A SIGKILL only a launcher reports: the signal is what the log shows; the OOM killer is a suspect.

torchrun's `exitcode: -9`, mp.spawn's `terminated with signal SIGKILL`, mpirun's `exited on signal 9`
and DeepSpeed's `return code = -9` say that something sent SIGKILL, not what: the kernel's OOM killer, a
scheduler's limit, or an operator's `kill -9`. With no line of memory pressure beside them (a kernel or
scheduler OOM report, a memory monitor, a supporting memory signature), the class the log names is a
worker killed by a signal, and host RAM exhaustion is the first alternative to check. A shell's `Killed`,
an exit status 137 and a process pool's SIGKILL report stay the OOM killer's, as their entries say.
"""

from __future__ import annotations

from dataclasses import replace

from traintriage.analyze.scoring import Candidate

HOST_OOM = "host-oom-killed"
KILLED_BY_SIGNAL = "worker-killed-by-signal"

LAUNCHER_SIGKILL = frozenset({
    "torchrun-exitcode-minus-9", "torchrun-signal-9", "mp-spawn-terminated-sigkill", "mpirun-exited-signal-9",
    "deepspeed-launcher-return-code-9", "subprocess-died-sigkill",
})


def signal_not_oom(root: Candidate, ranked: list[Candidate]) -> Candidate | None:
    """The killed-by-signal class to report instead of host-oom-killed, when a launcher's SIGKILL is all
    the OOM class has; None to keep the root."""
    if root.entry_id != HOST_OOM or not root.signatures or not root.signatures <= LAUNCHER_SIGKILL:
        return None
    killed = next((c for c in ranked if c.entry_id == KILLED_BY_SIGNAL), None)
    if killed is None:
        return Candidate(entry_id=KILLED_BY_SIGNAL, score=root.score, nature=root.nature, roots=list(root.roots),
                         reason=f"a launcher reported SIGKILL ({', '.join(sorted(root.signatures))}) with no sign of memory pressure")
    lines = sorted({o.order: o for o in killed.roots + root.roots}.values(), key=lambda o: o.sort_key)
    return replace(killed, score=max(killed.score, root.score), roots=lines)
