"""Read the rank, host and time that launchers and loggers put in front of a line.

Prefixes stack in any order (`10.0.0.7: [default3]:[rank11]: 2024-05-01 10:02:11,123
[ERROR] ...`), so they are peeled one at a time from the left; the rank comes from the
innermost prefix that names a global one. torchrun's own tag (`[default3]:`, its
`[{role}{local_rank}]:`) holds the *local* rank: it is kept apart (`local_rank`), and a
launcher's number outside it (`3: [default0]:`, srun's task of a per-node torchrun) is a
node, not a rank. Whether a local rank may stand for the global one is decided for the
whole log (analyze/observations.py): only when the log shows a single node.

Linear by construction: every pattern runs anchored on a bounded slice of the line
(`HEAD` characters from the current position), so a 4000-character line of host-like
tokens costs the same as a short one; only the final message is a slice of the input.
Cheap by construction: the peelers are grouped by the characters a prefix can start
with, so a line starting like `Traceback` or `RuntimeError` tries no pattern at all.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

HEAD = 200
"""Characters looked at per peel: prefixes are short, and a longer token is not one."""
MAX_PEELS = 8
_NCCL_WINDOW = 160
_ISO_SCAN_LIMIT = 64


@dataclass(frozen=True)
class Prefix:
    rank: int | None
    host: str | None
    time: datetime | None
    message: str
    local_rank: int | None = None
    """torchrun's `[{role}{local_rank}]:` tag: the global rank only on a single node."""


class _Peeled:
    """What the prefixes said so far: the first host and time, the innermost rank."""

    def __init__(self, year: int) -> None:
        self.year = year
        self.rank: int | None = None
        self.local_rank: int | None = None
        self.host: str | None = None
        self.time: datetime | None = None


_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
_STREAM = r"<std(?:out|err|diag)>:"

# --- patterns, each applied with .match on the bounded head; none has nested quantifiers ---
# torchrun --tee / TailLog: `[{role}{local_rank}]:` (role `default` unless --role is given).
_TORCHRUN = re.compile(r"\[(?:default|worker|trainer)(\d{1,6})\]:\s?")
# TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="[${rank}]:" (torchrun's documented global-rank
# template); never a bare `[0]:` line (torchrun's failure report numbers its entries so).
_TEMPLATE_RANK = re.compile(r"\[(\d{1,6})\]:(?=\s?\S)\s?")
# [rank3]: (PyTorch), [RANK 1] (loggers), [rank: 1] (Lightning's rank_prefixed_message), and a logging
# format's process or logger name before it: [SpawnProcess-2 rank=1], [trainer.rank3]
_RANK_TAG = re.compile(r"\[(?:[A-Za-z][\w-]{0,40}[ .])?(?i:rank)(?:[ _=-]|: )?(\d{1,6})\]:?\s?")
# Open MPI: ORTE (4.x) `[1,3]<stderr>:`; PMIx/PRRTE (5.x) `[jobid,rank]<stream>: `, with
# --output tag-fullname the whole namespace, with tag-detailed `[jobid,rank][host:pid]<stream>: `;
# SageMaker's MPI runs `[1,mpirank:7,algo-1]<stderr>:` (rank, then the host).
_MPI_TAG = re.compile(
    r"\[[\w.@-]{1,80},(?:mpirank:)?(\d{1,6})(?:,[\w.-]{1,64})?\](?:\[([\w.-]{1,64}):\d{1,9}\])?" + _STREAM + r"\s?"
)
_MPI_RANK_ONLY = re.compile(r"\[(\d{1,6})\]" + _STREAM + r"\s?")  # --output rank; horovodrun
_SRUN_LABEL = re.compile(r"(?:P\d{1,4} {1,8})?(\d{1,6}): (?=\S)")  # srun --label: `%*d: `, het jobs `P%u %*d: `
_PG_TAG = re.compile(r"\[PG [^\]]{0,80}Rank (\d{1,6})\]\s?")  # ProcessGroupNCCL messages
# A script's own unbracketed tag, `print(f"rank {rank}: ...")`: `rank 1: step 15 loss nan`, `Rank 0: ...`
_BARE_RANK = re.compile(r"[Rr]ank ?(\d{1,6}): (?=\S)")
# vLLM worker processes (decorate_logs): `(VllmWorker rank=3 pid=..)` (V1 0.8/0.9),
# `(VllmWorker TP1 pid=..)`, `(VllmWorker PP0_TP1 pid=..)`, `(Worker_TP1 pid=..)`,
# `(Worker_DP0_PP1_TP0 pid=..)` (current).
_VLLM_WORKER = re.compile(
    r"\((?:VllmWorker|Worker)(?:[ _]([A-Z]{2,3}\d{1,4}(?:_[A-Z]{2,3}\d{1,4}){0,5}))?(?: rank=(\d{1,5}))?"
    r"(?: pid=\d{1,9})?\)\s?"
)
_VLLM_PART = re.compile(r"([A-Z]{2,3})(\d{1,4})")
_VLLM_OTHER = re.compile(r"\((?:EngineCore(?:_DP\d{1,4})?|APIServer|VllmWorkerProcess)(?: pid=\d{1,9})?\)\s?")
# Ray's worker-log prefix: `(<actor or task name> pid=N, ip=A)`, e.g. `(RayTrainWorker pid=2364,
# ip=10.0.0.3)`, `(WorkerDict pid=..)`, `(pid=N)`, and `(raylet)`.
_RAY_WORKER = re.compile(r"\((?:[A-Za-z_][\w.:-]{0,80} ?pid=\d{1,9}|pid=\d{1,9}|raylet)(?:, ip=([\d.]{7,15}))?\)\s?")
# ANSI colour codes (Ray colours its prefixes) pasted without their escape character: `[2m[36m`.
_ANSI_REMNANT = re.compile(r"(?:\x1b?\[\d{1,3}(?:;\d{1,3}){0,4}m){1,6}")
_STREAM_TAG = re.compile(r"\[(?:stderr|stdout|STDERR|STDOUT)\]:?\s?")  # a launcher's stream tag alone
# A job or node name, then the stream, as launchers that multiplex many nodes print them
# (milabench: `<bench>.<node> [stderr] [rank11]: ...`).
_NAMED_STREAM = re.compile(r"([A-Za-z0-9][\w.-]{0,119}) \[(?:stderr|stdout|STDERR|STDOUT)\]:?\s?")
_POD = re.compile(r"\[pod/([\w.-]{1,120})/[\w.-]{0,80}\]\s?")  # kubectl logs --prefix: `[pod/%s/%s] `
# An operator's tag for the node a stream came from, before the rank's own prefixes: `[node1] [rank1]: ...`,
# `[worker-3] ...`; a name with a digit (a counter's tag, `[epoch3]`, is no node).
_NODE_TAG = re.compile(r"\[([A-Za-z][\w.-]{0,62})\] (?=\S)")
_NOT_NODES = re.compile(r"(?i)(?:step|epoch|iter|batch|ep|it)[\W_]?\d")
_MASKED_HOST = re.compile(r"(<[A-Z][A-Z_]{1,15}(?:-\d{1,9})?>): ")  # a host or address masked at ingest
_LINE_NUMBER = re.compile(r"\d{1,7}(?:\t|\s{1,8}(?=\[))")  # `   2 [rank0]: ...`, `12\t...`
_BRACKET_NUMBER = re.compile(r"\[\d{1,7}\] (?=\S)")  # `[1743] ...`
_LEVEL = re.compile(r"\[(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)\]:?\s?")
# logging's `%(levelname)s` unbracketed, when a bracketed tag follows (`INFO [trainer.rank3] step 40 ...`)
_BARE_LEVEL = re.compile(r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL) {1,8}(?=\[)")
_QUOTE = re.compile(r"[|>] (?=\s{0,40}\S)")  # a log pasted as a quote (indented frames too) or inside a table
# A host or IP address then ': ' (pdsh, DeepSpeed's multi-node runner). One class, one
# bounded repeat: no backtracking over host-like tokens. It must be lower-case and hold a digit
# (`node7`, `10.0.0.7`) so that `Error: ` and `warning: ` are not hosts; `localhost` is the exception.
_HOST = re.compile(r"([A-Za-z0-9][A-Za-z0-9.-]{0,62}): ")
# ... or any such name when torchrun's rank tag follows it (`nodeB: [rank1]: `, a pdsh-style merge of two
# nodes' consoles): a word before a rank tag is no message.
_RANK_TAG_AHEAD = re.compile(r"\[(?:rank|default)\d{1,6}\]:")
# ... or a host name then a space, when a rank's tag follows (`trn-node1 rank1: [rank1]: `, a launcher that
# names the node and the rank in its own words).
_HOST_BEFORE_RANK = re.compile(r"([a-z0-9][a-z0-9.-]{0,62}) (?=\[(?:rank|default)\d{1,6}\]:|[Rr]ank ?\d{1,6}: )")
_NCCL_HOST = re.compile(r"([A-Za-z0-9][\w.-]{0,62}):(\d{1,9}):(\d{1,9}) \[(\d{1,4})\] NCCL ")
_ISO = re.compile(
    r"\[?(\d{4})-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(?: ?(Z|[+-]\d\d:?\d\d))?\]?"
)
# A time of day alone (`03:14:03 `, `10:02:11.482 `), as `ts '%H:%M:%S'` or an awk wrapper prefixes lines:
# skipped, not read as a time, since a report would have to invent its date.
_CLOCK = re.compile(r"\d\d:\d\d:\d\d(?:[.,]\d{1,9})? (?=\S)")
_GLOG = re.compile(r"\[?([IWEF])(\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})(?: {1,8}\d{1,9})? ")
# dmesg -T, and Open MPI's --timestamp-output (ctime in brackets, `<stream>: ` when untagged)
_CTIME = re.compile(
    r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (\w{3}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\](?:" + _STREAM + r")?\s?"
)
_SYSLOG = re.compile(r"(\w{3}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) ([\w.-]{1,64}) (?=[^\s:]{1,64}(?:\[\d{1,9}\])?: )")
# vLLM's logger: `%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] ` with `%m-%d %H:%M:%S`
# (before 0.8 without the opening bracket: `INFO 01-30 11:53:52 model_runner.py:1115] `).
_VLLM_HEADER = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d{1,6})? \[?[^\]\s\[]{1,80}:\d{1,6}\] "
)
# docker compose logs: the container name padded to the longest (`%-*s | `); compose names
# end in the replica number (`vllm-openai-1`, v1 `project_vllm_1`).
_COMPOSE = re.compile(r"([A-Za-z][\w.-]{0,62}[-_]\d{1,4}) {1,64}\| (?=\S)")

# Launchers and process pools that name the process that died: Open MPI, Slurm, horovodrun,
# torch.multiprocessing.spawn, vLLM's executors (worker processes named after their rank),
# text-generation-inference's launcher (shards named after their rank).
_FAILED_PROCESS = re.compile(
    r"(?:mpirun noticed that process rank (\d{1,6}) with PID|srun: error: [\w.<>-]{1,64}: task (\d{1,6}): |"
    r"\b[Pp]rocess (\d{1,6}) (?:terminated with (?:signal|exit code|the following error)|exit with status code)|"
    r"\bVllmWorker-(\d{1,5}) died|\bRayWorkerProc rank=\[(\d{1,5})[\],]|\bShard (\d{1,5}) (?:failed to start|crashed)|"
    # Open MPI's report of the rank that called MPI_Abort (on its own error)
    r"\bMPI_ABORT was invoked on rank (\d{1,7}) in communicator|"
    # HPE Cray PALS mpiexec (ALCF Polaris, Aurora): `<host>: rank 5 exited with code 1`; the SIGTERM it
    # sends the other ranks afterwards (`rank 4 died from signal 15`) names no failure.
    r"(?:^|: )rank (\d{1,7}) (?:exited with code [1-9]|died from signal (?!15\b)\d)|"
    # The line under `... exited with non-zero status ... The first process to do so was:`: Open MPI
    # 4.x names it [[jobid,1],rank], PRRTE (Open MPI 5) [prterun-<host>-<pid>@1,rank], horovodrun the rank.
    r"^\s*Process name:\s+(?:\[\[\d{1,10},\d{1,6}\],(\d{1,7})\]|\[[\w.-]{1,120}@\d{1,6},(\d{1,7})\]|(\d{1,7})\s*$))"
)
_RANK_IN_TEXT = re.compile(r"\b[Rr]ank[ :=]?\s?(\d{1,5})\b")
# text-generation-inference's launcher logs through `tracing`: the shard's span field comes
# last (` rank=0`), after a multi-line message on a line of its own.
_SPAN_RANK = re.compile(r"(?:^|\s)rank=(\d{1,5})\s*$")


def _parse_iso(match: re.Match[str]) -> datetime | None:
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7) or "0"
    micro = int((fraction + "000000")[:6])
    try:
        stamp = datetime(year, month, day, hour, minute, second, micro, tzinfo=timezone.utc)
    except ValueError:
        return None
    offset = match.group(8)
    if offset and offset != "Z":
        sign = 1 if offset[0] == "+" else -1
        digits = offset[1:].replace(":", "")
        stamp -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return stamp


def _numbered(year: int, month: int, day: int, hour: int, minute: int, second: int, micro: int = 0) -> datetime | None:
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=timezone.utc)
    except ValueError:
        return None


def _parse_named_month(match: re.Match[str], year: int) -> datetime | None:
    """Groups 1-5 of `match`: month name, day, hour, minute, second."""
    number = _MONTHS.get(match.group(1))
    if number is None:
        return None
    day, hour, minute, second = (int(match.group(i)) for i in range(2, 6))
    return _numbered(year, number, day, hour, minute, second)


# --- what each prefix records; each returns the prefix's length, 0 when it does not apply ---

def _global_rank(pattern: re.Pattern[str]) -> Callable[[str, _Peeled], int]:
    def peel(head: str, found: _Peeled) -> int:
        match = pattern.match(head)
        if not match:
            return 0
        found.rank = int(match.group(1))
        if match.lastindex and match.lastindex >= 2 and match.group(2):
            found.host = found.host or match.group(2)
        return match.end()
    return peel


def _skip(pattern: re.Pattern[str]) -> Callable[[str, _Peeled], int]:
    def peel(head: str, found: _Peeled) -> int:
        match = pattern.match(head)
        return match.end() if match else 0
    return peel


def _host(pattern: re.Pattern[str]) -> Callable[[str, _Peeled], int]:
    def peel(head: str, found: _Peeled) -> int:
        match = pattern.match(head)
        if not match:
            return 0
        found.host = found.host or match.group(1)
        return match.end()
    return peel


def _torchrun(head: str, found: _Peeled) -> int:
    match = _TORCHRUN.match(head)
    if not match:
        return 0
    found.local_rank = int(match.group(1))
    found.rank = None  # a number outside torchrun's tag counts nodes (srun, mpirun per node), not ranks
    return match.end()


def _vllm_worker(head: str, found: _Peeled) -> int:
    """A worker's rank is its TP rank when no other parallel dimension splits the world
    (PP/PCP/DP rank 0 or absent); `rank=N` (vLLM 0.8-0.9) says it outright."""
    match = _VLLM_WORKER.match(head)
    if not match:
        return 0
    if match.group(2):
        found.rank = int(match.group(2))
    elif match.group(1):
        parts = {name: int(number) for name, number in _VLLM_PART.findall(match.group(1))}
        if "TP" in parts and all(parts.get(other, 0) == 0 for other in ("PP", "PCP", "DP")):
            found.rank = parts["TP"]
    return match.end()


def _ray_worker(head: str, found: _Peeled) -> int:
    match = _RAY_WORKER.match(head)
    if not match or match.end() <= 3:  # `()`: not a prefix
        return 0
    if match.group(1):
        found.host = found.host or match.group(1)
    return match.end()


def _glog(head: str, found: _Peeled) -> int:
    match = _GLOG.match(head)
    if not match:
        return 0
    if found.time is None:
        month, day, hour, minute, second = (int(match.group(i)) for i in range(2, 7))
        found.time = _numbered(found.year, month, day, hour, minute, second, int((match.group(7) + "000000")[:6]))
    return match.end()


def _iso(head: str, found: _Peeled) -> int:
    match = _ISO.match(head)
    if not match:
        return 0
    found.time = found.time or _parse_iso(match)
    end = match.end()
    while end < len(head) and head[end] in " -|:":
        end += 1
    return end


def _ctime(head: str, found: _Peeled) -> int:
    match = _CTIME.match(head)
    if not match:
        return 0
    found.time = found.time or _parse_named_month(match, int(match.group(6)))
    return match.end()


def _syslog(head: str, found: _Peeled) -> int:
    if head[:3] not in _MONTHS:
        return 0
    match = _SYSLOG.match(head)
    if not match:
        return 0
    found.time = found.time or _parse_named_month(match, found.year)
    found.host = found.host or match.group(6)
    return match.end()


def _compose(head: str, found: _Peeled) -> int:
    if " | " not in head[:130]:  # the literal first: every line starting with a letter gets here
        return 0
    match = _COMPOSE.match(head)
    if not match:
        return 0
    found.host = found.host or match.group(1)
    return match.end()


def _vllm_header(head: str, found: _Peeled) -> int:
    match = _VLLM_HEADER.match(head)
    if not match:
        return 0
    if found.time is None:
        found.time = _numbered(found.year, *(int(match.group(i)) for i in range(1, 6)))
    return match.end()


def _node_tag(head: str, found: _Peeled) -> int:
    match = _NODE_TAG.match(head)
    if not match or not any(c.isdigit() for c in match.group(1)) or _NOT_NODES.match(match.group(1)):
        return 0
    found.host = found.host or match.group(1)
    return match.end()


def _bare_host(head: str, found: _Peeled) -> int:
    if found.host is not None or ": " not in head[:65]:  # the literal first: most lines have none
        return 0
    match = _HOST.match(head)
    if not match or found.host is not None:
        return 0
    name = match.group(1)
    named_host = name == "localhost" or (not any(c.isupper() for c in name) and any(c.isdigit() for c in name))
    if not named_host and not _RANK_TAG_AHEAD.match(head, match.end()):
        return 0
    found.host = name
    return match.end()


def _host_before_rank(head: str, found: _Peeled) -> int:
    if found.host is not None:
        return 0
    match = _HOST_BEFORE_RANK.match(head)
    name = match.group(1) if match else ""
    named_host = any(c.isdigit() for c in name) and any(c.isalpha() or c == "." for c in name)
    if not (name == "localhost" or named_host):  # a number alone (`2024 rank 1: `) is no host
        return 0
    found.host = name
    return len(name) + 1


_DIGITS = string.digits
_LOWER = string.ascii_lowercase
# (characters a prefix can start with, peeler), in the order they are tried: the innermost
# rank tags before launcher tags, host and time fallbacks last.
_PEELERS: tuple[tuple[str, Callable[[str, _Peeled], int]], ...] = (
    ("[", _torchrun),
    ("[", _global_rank(_RANK_TAG)),
    ("[", _global_rank(_MPI_TAG)),
    ("[", _global_rank(_MPI_RANK_ONLY)),
    ("[", _global_rank(_TEMPLATE_RANK)),
    (_DIGITS + "P", _global_rank(_SRUN_LABEL)),
    ("[", _global_rank(_PG_TAG)),
    ("Rr", _global_rank(_BARE_RANK)),
    ("(", _vllm_worker),
    ("(", _skip(_VLLM_OTHER)),
    ("(", _ray_worker),
    ("[\x1b", _skip(_ANSI_REMNANT)),
    ("[", _host(_POD)),
    ("[", _node_tag),
    ("[", _skip(_STREAM_TAG)),
    (string.ascii_letters + _DIGITS, _host(_NAMED_STREAM)),
    ("<", _host(_MASKED_HOST)),
    (_DIGITS, _skip(_LINE_NUMBER)),
    ("[", _skip(_BRACKET_NUMBER)),
    ("[", _skip(_LEVEL)),
    ("DIWECF", _skip(_BARE_LEVEL)),
    ("|>", _skip(_QUOTE)),
    ("[IWEF", _glog),
    ("[" + _DIGITS, _iso),
    (_DIGITS, _skip(_CLOCK)),
    ("[", _ctime),
    ("JFMASOND", _syslog),
    ("DIWEC", _vllm_header),
    (_LOWER + _DIGITS, _bare_host),
    (_LOWER + _DIGITS, _host_before_rank),
    (string.ascii_letters, _compose),
)


def _by_first_character() -> dict[str, tuple[Callable[[str, _Peeled], int], ...]]:
    table: dict[str, list[Callable[[str, _Peeled], int]]] = {}
    for characters, peeler in _PEELERS:
        for character in characters:
            table.setdefault(character, []).append(peeler)
    return {character: tuple(peelers) for character, peelers in table.items()}


_BY_FIRST = _by_first_character()


def _peel_one(head: str, found: _Peeled) -> int:
    """Length of the prefix at the start of `head` (0: none), recording what it names."""
    for peeler in _BY_FIRST.get(head[:1], ()):
        length = peeler(head, found)
        if length:
            return length
    return 0


def _skip_space(line: str, position: int) -> int:
    """The first non-blank position from `position`, looking at most HEAD characters ahead."""
    limit = min(len(line), position + HEAD)
    while position < limit and line[position].isspace():
        position += 1
    return position


# A tqdm bar whose carriage return was lost (a pasted or `tee`d log), and glued to it the next
# line, which starts with torchrun's tag: `... 837/888 [9:42:50<34:08, 40.17s/it][rank7]:[E ...`.
_GLUED_TAG = re.compile(r"(?:it/s|s/it|it)\](?=\[(?:rank|default)\d{1,6}\]:)")


def parse_prefix(line: str, default_year: int = 1970) -> Prefix:
    """Peel known prefixes off `line`: the first host and time, the innermost rank. A line that
    redraws itself (a progress bar's carriage returns, then a log line) is read as a terminal shows
    it: from its last carriage return that is followed by text."""
    if "\r" in line:
        line = _shown(line)
    prefix = _parse_prefix(line, default_year)
    if prefix.rank is None and prefix.local_rank is None and "]:" in prefix.message:
        glued = _GLUED_TAG.search(prefix.message)
        if glued:
            inner = _parse_prefix(prefix.message[glued.end() :], default_year)
            return Prefix(rank=inner.rank, host=prefix.host or inner.host, time=prefix.time or inner.time,
                          message=inner.message, local_rank=inner.local_rank)
    return prefix


def _shown(line: str) -> str:
    for segment in reversed(line.split("\r")):
        if segment.strip():
            return segment
    return line


def _parse_prefix(line: str, default_year: int) -> Prefix:
    found = _Peeled(default_year)
    position = _skip_space(line, 0)
    for _ in range(MAX_PEELS):
        if position >= len(line) or line[position] not in _BY_FIRST:
            break
        length = _peel_one(line[position : position + HEAD], found)
        if length == 0:
            break
        position = _skip_space(line, position + length)
    rest = line[position:]
    if found.host is None and " NCCL " in rest[:_NCCL_WINDOW]:
        nccl = _NCCL_HOST.search(rest[:_NCCL_WINDOW])
        if nccl:
            found.host = nccl.group(1)
    if found.time is None and "-" in rest[:_ISO_SCAN_LIMIT + 40]:
        iso = _ISO.search(rest[: _ISO_SCAN_LIMIT + 40])
        if iso and iso.start() < _ISO_SCAN_LIMIT:
            found.time = _parse_iso(iso)
    return Prefix(rank=found.rank, host=found.host, time=found.time, message=rest.strip(), local_rank=found.local_rank)


def failed_process_rank(text: str) -> int | None:
    """The rank of a process a launcher reports dead (`mpirun noticed that process rank 1 with PID ...`).
    Not DeepSpeed's `[..., '--local_rank=N', ...] exits with return code`: its launcher prints the
    command of the last worker it started, whichever worker failed (launch.py sigkill_handler)."""
    match = _FAILED_PROCESS.search(text[: 2 * HEAD])
    return int(next(g for g in match.groups() if g is not None)) if match else None


def rank_in_text(text: str) -> int | None:
    """A rank named inside the message itself (`[Rank 3] Watchdog caught ...`)."""
    match = _RANK_IN_TEXT.search(text[:HEAD])
    return int(match.group(1)) if match else None


_JSON_RANK = re.compile(r'"(?:rank|global_rank|RANK)":\s?"?(\d{1,6})"?\s?[,}]')


def json_record_rank(message: str) -> int | None:
    """The rank field of a structured logger's JSON record (`{"level": "ERROR", ..., "rank": 1, ...}`)."""
    if not message.startswith("{"):
        return None
    match = _JSON_RANK.search(message)
    return int(match.group(1)) if match else None


def span_rank(text: str) -> int | None:
    """The `rank=N` span field a `tracing` logger puts at the end of an event (TGI's shard manager)."""
    if "rank=" not in text[-24:]:
        return None
    match = _SPAN_RANK.search(text[-24:])
    return int(match.group(1)) if match else None
