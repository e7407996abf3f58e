#!/usr/bin/env python3
"""Line prefixer imitating cluster log wrappers (reads stdin, writes stdout, line-buffered).
modes:
  host NAME        -> 'NAME: line'            (pdsh / deepspeed multi-node)
  k8s              -> RFC3339Nano timestamp    (kubectl logs --timestamps)
  compose SVC      -> 'SVC  | line'            (docker compose logs)
  journald HOST ID PID -> 'Mon DD HH:MM:SS HOST ID[PID]: line'
  ts               -> 'Mon DD HH:MM:SS line'   (moreutils ts)
  isots            -> '2026-12-06 07:40:01,123 line'
"""
import sys, datetime, os
mode = sys.argv[1]
args = sys.argv[2:]
def pre():
    now = datetime.datetime.now(datetime.timezone.utc)
    if mode == "host":
        return args[0] + ": "
    if mode == "k8s":
        return now.strftime("%Y-%m-%dT%H:%M:%S.") + "%09d" % (now.microsecond * 1000 + int.from_bytes(os.urandom(1), "big")) + "Z "
    if mode == "compose":
        return "%-12s| " % args[0]
    if mode == "journald":
        return now.strftime("%b %d %H:%M:%S ") + "%s %s[%s]: " % (args[0], args[1], args[2])
    if mode == "ts":
        return now.strftime("%b %d %H:%M:%S ")
    if mode == "isots":
        return now.strftime("%Y-%m-%d %H:%M:%S,") + "%03d " % (now.microsecond // 1000)
    raise SystemExit("bad mode")
for line in iter(sys.stdin.buffer.readline, b""):
    sys.stdout.buffer.write(pre().encode() + line)
    sys.stdout.buffer.flush()
