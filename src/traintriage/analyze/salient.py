"""Did the run fail, and which lines say so, with or without a Python traceback.

Pasted snippets often carry no `Traceback (most recent call last):` header: an exception
line, a C++ `terminate called ...` / `what():` pair, a glog fatal or check-failure line,
an error-level framework line that says something failed, an NCCL failure warning, a C
assertion, a fatal signal, a non-zero exit. Each makes the run a failure unless something
later shows it recovered: the run completed, or training made progress after it in the
same source. Lines Python reports as ignored, and Dynamo tracebacks that
`TORCH_LOGS=graph_breaks` prints while the run goes on, are not failures.

All of these lines come from the one Hyperscan pass (match/internal.py): nothing here
reads the log again.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from traintriage.analyze.observations import Observation, traceback_before
from traintriage.match.compiler import Scanner
from traintriage.match.internal import HYDRA_CLOSING, TRIALS_UNFINISHED, Internal
from traintriage.parse.metrics import MetricPoint
from traintriage.parse.prefix import parse_prefix
from traintriage.parse.traceback import TRACEBACK_HEADER

IGNORED_SPAN = 30
"""Lines after `Exception ignored in:` or a graph-break header that belong to its report."""
LOGGED_SPAN = 8
"""Lines after a warning logged with its caught exception: one short traceback, nothing later."""
MAX_SALIENT = 8

# Error-level lines that are not failures: NCCL could not load an optional transport library
# and falls back (to sockets); TensorFlow/XLA register their CUDA plugins twice at every
# start (`Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN
# when one has already been registered`); ONNX Runtime's session could not use an execution
# provider and retries with the fallback ones (`EP Error [ONNXRuntimeError] : ... when using
# [...]`, onnxruntime_inference_collection.py).
_NOT_FAILURES = re.compile(r"NCCL WARN (?:[Ff]ailed to (?:open|load|find)|[Cc]ould not (?:open|load|find)) |"
                           r"Unable to register cu\w{2,8} factory|when one has already been registered|"
                           r"\bEP Error \[ONNXRuntimeError\]")
# The warnings module's `<file>.py:<line>: <Category>: <message>`, from the line's start.
_WARNING_FORMAT = re.compile(r"\S{0,400}\.py:\d{1,6}: [A-Za-z_][\w.]{0,80}: ")
_NONZERO_EXIT = re.compile(r"(?i)(?:exit_?code\s*[:=]\s*-?[1-9]|(?:code|status)[: ]+-?[1-9])")
_EVIDENCE_KINDS = (Internal.traceback, Internal.exception, Internal.fatal_line, Internal.fatal_signal)
_SALIENT_KINDS = (Internal.exception, Internal.fatal_line, Internal.fatal_signal, Internal.error_level,
                  Internal.exit_code)


def _is_warning(text: str) -> bool:
    """A warning whose category is named like an exception (Modal's DeprecationError) is no
    exception report; a paste that lost its newlines may hold the traceback after it."""
    return bool(_WARNING_FORMAT.match(text)) and TRACEBACK_HEADER not in text


def internal_lines(observations: list[Observation], scanner: Scanner, kind: Internal) -> list[Observation]:
    wanted = set(scanner.by_internal(kind))
    return [o for o in observations if wanted.intersection(o.hit.patterns)]


def position(observation: Observation) -> tuple[int, int]:
    return (observation.hit.source, observation.hit.line)


def after_an_anchor(anchors: list[Observation], within: int) -> Callable[[Observation], bool]:
    """Whether an observation comes at most `within` lines after (or on) one of the anchors printed by the
    same process (the same rank tag, or none on both: one report carries one prefix, and another rank's
    traceback printed right after it is that rank's own): a binary search in each source's sorted anchor
    lines, since a log can hold a million of both."""
    lines: dict[tuple[int, int | None], list[int]] = defaultdict(list)
    for anchor in anchors:
        lines[anchor.hit.source, anchor.rank].append(anchor.hit.line)
    for source_lines in lines.values():
        source_lines.sort()

    def follows(observation: Observation) -> bool:
        source_lines = lines.get((observation.hit.source, observation.rank))
        if not source_lines:
            return False
        before = bisect_right(source_lines, observation.hit.line)
        return before > 0 and observation.hit.line - source_lines[before - 1] <= within

    return follows


def reports_at_the_end(observations: list[Observation], scanner: Scanner, last_lines: dict[int, int]) -> set[int]:
    """Sources whose last lines belong to a report of an exception that did not stop the run (an
    `Exception ignored in` at exit, a logged graph break): a traceback cut there is no failure.
    `last_lines`: each source's number of lines."""
    return {a.hit.source for anchors, span in _report_anchors(observations, scanner) for a in anchors
            if last_lines.get(a.hit.source, 0) - a.hit.line <= span}


def excused_orders(observations: list[Observation], scanner: Scanner) -> set[int]:
    """Orders of lines that are not failures: those inside a report of one (an exception Python
    printed as `Exception ignored in`, a Dynamo graph break logged while compilation carries on,
    a library's warning logged with the exception it recovered from), and a healthy run's notices
    that an optional component is absent."""
    excused = {o.order for o in internal_lines(observations, scanner, Internal.benign_notice)}
    excused |= _resource_tracker_reports(observations, internal_lines(observations, scanner, Internal.exception))
    for anchors, span in _report_anchors(observations, scanner):
        if anchors:
            follows = after_an_anchor(anchors, span)
            excused |= {o.order for o in observations if follows(o)}
    return excused


def _resource_tracker_reports(observations: list[Observation], exceptions: list[Observation]) -> set[int]:
    """Orders of the exception lines of tracebacks that began in a resource tracker's main loop
    (multiprocessing's or joblib/loky's `resource_tracker.py ... in main`: a helper process that prints what it
    failed to clean up at the program's exit, `KeyError: '/loky-...'`, and goes on; the program's own outcome is
    elsewhere in the log), and of the headers that open them."""
    reports: set[int] = set()
    headers: set[tuple[int, int]] = set()
    for observation in exceptions:
        traceback = traceback_before(observation)
        if traceback is None or not traceback.frames:
            continue
        outermost = traceback.frames[0]
        if outermost.function != "main" or not outermost.file.endswith("resource_tracker.py"):
            continue
        reports.add(observation.order)
        before = observation.hit.before
        opened = [i for i, text in enumerate(before) if TRACEBACK_HEADER in text]
        if opened:  # `before` ends on the line above this one
            headers.add((observation.hit.source, observation.hit.line - len(before) + opened[-1]))
    return reports | {o.order for o in observations if (o.hit.source, o.hit.line) in headers}


def _report_anchors(observations: list[Observation], scanner: Scanner) -> list[tuple[list[Observation], int]]:
    """The lines that open a report of an exception the run survived, with the lines each kind's report spans."""
    return [(internal_lines(observations, scanner, Internal.exception_ignored)
             + internal_lines(observations, scanner, Internal.graph_break), IGNORED_SPAN),
            (internal_lines(observations, scanner, Internal.exception_logged), LOGGED_SPAN)]


# The process itself died after training finished (a C++ exception nobody caught, a crash at
# teardown): the job still exits with SIGABRT/SIGSEGV, whatever the trainer printed before.
_ABORTED = re.compile(r"terminate called after throwing an instance of|^Fatal Python error: |Segmentation fault")


# A log record's level, on the line just above a traceback's header: the logger printed the exception.
_LOG_RECORD = re.compile(r"(?:^|[\s|\[])(?:ERROR|WARNING|WARN|CRITICAL|EXCEPTION)(?:[\s|\]:]|$)")
# Python's own headers of a traceback that did not end the process: a thread's, an exit handler's.
_SURVIVED = re.compile(r"^(?:Exception in thread |Error in atexit\._run_exitfuncs|Exception ignored in)")
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")


def _above_traceback(before: list[str]) -> str | None:
    """The line above the traceback that ends these context lines; for a chain of tracebacks, above the first
    of them (None when the context holds no header, or nothing above it)."""
    for header in reversed([i for i, text in enumerate(before) if TRACEBACK_HEADER in text]):
        above = next((text for text in reversed(before[:header]) if parse_prefix(text).message.strip()), None)
        if above is None or not any(chained in above for chained in _CHAINED):
            return above
    return None


def _record_above(observation: Observation) -> str | None:
    """The log record just above the line's traceback (a logger printed the exception), if there is one."""
    above = _above_traceback(observation.hit.before)
    return above if above is not None and _LOG_RECORD.search(above[:300]) else None


def logged_with_traceback(observation: Observation) -> bool:
    """The log record above the traceback: a logger printed the exception."""
    return _record_above(observation) is not None


# A record at warning level and none higher on the line itself (`... WARNING worker-2 loader - corrupt image ...:
# OSError('image file is truncated'); substituting sample 80`): the program reported what it worked around.
_WARNING_RECORD = re.compile(r"(?:^|[\s|\[\]])(?:WARNING|WARN)(?:[\s|\]:]|$)|\.py:\d{1,6}: [A-Z]\w{0,40}Warning: ")
"""A logger's warning level, or Python's warnings module (`/path/saving_lib.py:869: UserWarning: ...`)."""
_GRAVER_RECORD = re.compile(r"(?:^|[\s|\[\]])(?:ERROR|CRITICAL|FATAL|EXCEPTION)(?:[\s|\]:]|$)")
_RECORD_REACH = 2048
"""Characters of a line searched for its level: a progress bar's redraws can come before the record glued to it."""


# A record that says the program carries on past the error it reports: it retries, skips, falls back or goes on
# (not a bare "will fall back", nor what happened before: Dynamo's ERROR record that it will fall back to eager, and a
# warning that a step was skipped, can stand right above the crash that followed them).
_RECOVERY = re.compile(r"\b(?:retry(?:ing)?|trying (?:again|next)|will (?:retry|try)|skipping|falling back|continuing|"
                       r"ignoring)\b", re.IGNORECASE)


def announced_recovery(observation: Observation) -> bool:
    """A logger's record, above the line's traceback or on the line itself, says the program handled the
    error and carries on (`failed to read sample 37, trying next one`, `retrying with weights_only=False`), and
    the log goes on after it: an exception that ends the log ended the process, whatever record stood above it."""
    if not any(line.strip() for line in observation.hit.after):
        return False
    record = _record_above(observation)
    if record is not None:
        return _RECOVERY.search(record[:_RECORD_REACH]) is not None
    head = observation.hit.text[:_RECORD_REACH]
    return _LOG_RECORD.search(head[:300]) is not None and _RECOVERY.search(head) is not None


def all_reported_handled(evidence: list[Observation]) -> bool:
    """Every failure line is an exception a logger reported as handled (announced_recovery), or the header of a
    traceback such an exception ends later in the same log: the run went on from all of them."""
    exceptions = [o for o in evidence if TRACEBACK_HEADER not in o.hit.text]
    headers = [o for o in evidence if TRACEBACK_HEADER in o.hit.text]
    return (bool(exceptions) and all(announced_recovery(o) for o in exceptions)
            and all(any(o.hit.source == h.hit.source and o.hit.line > h.hit.line for o in exceptions) for h in headers))


def logged_as_warning(observation: Observation) -> bool:
    """The line is a log record at warning level: a logger reported an error the program handled."""
    head = observation.hit.text[:_RECORD_REACH]
    return _WARNING_RECORD.search(head) is not None and _GRAVER_RECORD.search(head) is None


def _uncaught(observation: Observation, raised: set[int]) -> bool:
    """An exception that ends a traceback Python printed because nothing caught it: the process died there,
    also after it had reported that training finished (in its evaluation, export or final save)."""
    before = observation.hit.before
    return (observation.order in raised and any(TRACEBACK_HEADER in text for text in before)
            and not logged_with_traceback(observation) and not _survived_header(before))


def _survived_header(before: list[str]) -> bool:
    """Python's own header of a traceback that did not end the process, right above this traceback (not above
    another process's traceback further up in the context)."""
    above = _above_traceback(before)
    return above is not None and _SURVIVED.match(parse_prefix(above).message) is not None


def failure_evidence(
    observations: list[Observation], scanner: Scanner, points: list[MetricPoint], excused: set[int],
    completed: list[Observation],
) -> list[Observation]:
    """The lines that show a failure nothing later recovered from, in log order; `completed`: the
    lines that report that training finished (`completion_lines`)."""
    exits = [o for o in internal_lines(observations, scanner, Internal.exit_code) if _NONZERO_EXIT.search(o.hit.text)]
    found = {o.order: o for kind in _EVIDENCE_KINDS for o in internal_lines(observations, scanner, kind)}
    found.update((o.order, o) for o in exits)
    evidence = sorted((o for o in found.values() if o.order not in excused and not _NOT_FAILURES.search(o.hit.text)
                       and not _is_warning(o.hit.text)), key=position)
    if completed:
        first_done = min(completed, key=position)
        unfinished = _never_finished(evidence, completed, exits, first_done)
        raised = {o.order for o in internal_lines(observations, scanner, Internal.exception)}
        evidence = [o for o in evidence if position(o) < position(first_done) or _ABORTED.search(o.hit.text)
                    or o.rank in unfinished or _uncaught(o, raised)]
        evidence = [o for o in evidence if not any(finished_after(o, done) for done in completed)]
    last_progress: dict[int, int] = {}
    for point in points:
        if point.step is not None or point.loss is not None:
            last_progress[point.source] = max(last_progress.get(point.source, 0), point.line)
    return [o for o in evidence if last_progress.get(o.hit.source, 0) <= o.hit.line or _RUN_SUMMARY.search(o.hit.text)
            or bar_repainted_at_exit(o, points)]


_BAR_RATE = re.compile(r"\|[^|]{0,80}\d(?:it|s)/(?:s|it)\b")
"""A progress bar's state: tqdm's `| 39/50 [00:16<00:04,  2.40it/s, loss=2.48]`."""


def bar_repainted_at_exit(observation: Observation, points: list[MetricPoint]) -> bool:
    """The only progress after the line is a progress bar repeating the loss it showed before: tqdm repaints
    a bar still open when the interpreter tears it down, after Python printed the traceback that ended the
    process, so that repaint is no sign that training went on."""
    rank_points = [p for p in points if p.source == observation.hit.source and p.loss is not None
                   and (observation.rank is None or p.rank == observation.rank)]
    before = [p for p in rank_points if p.line < observation.hit.line]
    after = [p for p in rank_points if p.line > observation.hit.line]
    return (len(after) == 1 and bool(before) and _BAR_RATE.search(after[0].text) is not None
            and after[0].loss == sorted(before, key=lambda p: p.line)[-1].loss)  # a line's last bar state


_RUN_SUMMARY = re.compile(TRIALS_UNFINISHED)
"""A failure a run reports in its summary, after every trial: the best trial's metrics may follow it."""


def _never_finished(evidence: list[Observation], completed: list[Observation], exits: list[Observation],
                    first_done: Observation) -> set[int]:
    """After the first report that training finished, only a crash or an uncaught exception counts, or, when a
    launcher then reported a non-zero exit, the error of a rank that never reported finishing (every report names
    its rank)."""
    if any(done.rank is None for done in completed) or not any(position(e) > position(first_done) for e in exits):
        return set()
    return {o.rank for o in evidence if o.rank is not None} - {done.rank for done in completed}


# A line with a completion pattern's words that reports no completion of training: a wrapper's
# reader thread for the training process, a step that finished with errors, a traceback's source line that
# would have printed it. Applied with .search to one line.
_NOT_COMPLETED = re.compile(r"(?i)\berrors?\b|\bfail|non-zero|\bthread\b|\bprint\(|\.(?:info|warning|write|log)\(")


def completion_lines(observations: list[Observation], scanner: Scanner) -> list[Observation]:
    """The lines that report that training finished."""
    return [o for o in internal_lines(observations, scanner, Internal.completion)
            if not _NOT_COMPLETED.search(o.hit.text)]


def finished_after(observation: Observation, done: Observation) -> bool:
    """The same process reported that training finished after this line: what the line reports
    was caught and the run went on to its end."""
    return (done.hit.source == observation.hit.source and done.hit.line > observation.hit.line
            and (done.rank is None or observation.rank is None or done.rank == observation.rank))


# A launcher's own report of a worker's failure: torchrun's ChildFailedError and agent lines, the
# SIGTERMs it sends to the other workers, Slurm's task and step lines.
_LAUNCHER_REPORT = re.compile(r"ChildFailedError|torch\.distributed\.elastic|closing signal SIG|SignalException|"
                              r"Signal \d+ \(SIG[A-Z]+\) received by PID|failed \(exitcode: |"
                              r"msg: \"Process failed with exitcode |"  # the report's row in torch 1.9-1.10
                              r"\b(?:srun|slurmstepd): error: ")


def worker_errors(observations: list[Observation], scanner: Scanner, excused: set[int],
                  wrapper_lines: set[int]) -> list[Observation]:
    """A worker's own exception or fatal lines, besides the launcher's report of its failure
    (`wrapper_lines`: the orders of the lines the wrapper class itself matched)."""
    lines = internal_lines(observations, scanner, Internal.exception) + internal_lines(
        observations, scanner, Internal.fatal_line)
    return [o for o in lines if o.order not in excused and o.order not in wrapper_lines
            and not _LAUNCHER_REPORT.search(o.hit.text)]


def salient_lines(observations: list[Observation], scanner: Scanner, excused: set[int]) -> list[Observation]:
    """For a failure no signature explains: the last exceptions and fatal lines, most telling first."""
    picks: list[Observation] = []
    for kind in _SALIENT_KINDS:
        latest = [o for o in internal_lines(observations, scanner, kind) if o.order not in excused][-4:]
        picks.extend(_hydras_message(o) for o in latest)
    seen: set[tuple[int, int]] = set()
    unique = []
    for observation in picks:
        if position(observation) not in seen:
            seen.add(position(observation))
            unique.append(observation)
    return unique[:MAX_SALIENT]



def _hydras_message(observation: Observation) -> Observation:
    """Hydra prints the error's message, a blank line, then its closing line (`Set the environment
    variable HYDRA_FULL_ERROR=1 ...`): the message is the line to show, also when it is one of
    Hydra's own config errors with no exception class (`Additional config directory '...' not found`)."""
    hit = observation.hit
    if HYDRA_CLOSING not in hit.text:
        return observation
    above = [(back, text, parse_prefix(text).message) for back, text in enumerate(reversed(hit.before), start=1)]
    written = [line for line in above if line[2].strip()]
    # the message may run over several lines (omegaconf adds `full_key: ...`, `object_type=...`): its exception line
    chosen = next((line for line in written[:_HYDRA_MESSAGE_LINES] if _EXCEPTION_LINE.match(line[2])),
                  written[0] if written else None)
    if chosen is None:
        return observation
    back, text, message = chosen
    message_hit = replace(hit, line=hit.line - back, text=text, before=hit.before[:-back],
                          after=hit.before[len(hit.before) - back + 1:] + [hit.text] + hit.after)
    return replace(observation, hit=message_hit, message=message)


_HYDRA_MESSAGE_LINES = 6
_EXCEPTION_LINE = re.compile(r"(?:[A-Za-z_]\w{0,80}\.){0,8}[A-Z]\w{2,80}: ")
"""`omegaconf.errors.MissingMandatoryValue: ...`, `ValueError: ...`: a class name (capitalised), dotted or not."""
