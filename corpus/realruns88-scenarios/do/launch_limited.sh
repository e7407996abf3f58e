#!/bin/bash
# per-rank launcher wrapper: applies the memory cap from the site's job template to the rank listed in MEMCAP_RANKS
if [[ ",${MEMCAP_RANKS}," == *",${RANK},"* ]]; then ulimit -v "${MEMCAP_KB}"; fi
exec /work/rr88/do/venv-extra/bin/python "$@"
