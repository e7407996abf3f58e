#!/bin/bash
# per-rank wrapper: cap the address space of one local rank (like a node with a low ulimit -v)
if [ "${LOCAL_RANK}" = "${LIMIT_RANK:-1}" ]; then ulimit -v "${LIMIT_KB:-2500000}"; fi
exec /work/rrvenv/bin/python "$@"
