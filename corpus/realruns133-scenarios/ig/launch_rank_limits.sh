#!/bin/bash
# per-rank launcher wrapper: node-local rank 1 runs under the site's per-process file-size limit
if [ "$LOCAL_RANK" = "1" ]; then ulimit -f 48; fi   # 48 KiB blocks of 1024
exec /work/rrvenv/bin/python "$@"
