#!/bin/bash
# Per-rank launcher wrapper (torchrun --no-python): applies the site's per-rank resource limits
# from RANK_LIMITS_<local_rank> (e.g. RANK_LIMITS_1="-v 2500000"), then execs the trainer.
lim_var="RANK_LIMITS_${LOCAL_RANK}"
if [ -n "${!lim_var}" ]; then
    ulimit ${!lim_var}
fi
exec /work/rrvenv/bin/python "$@"
