#!/bin/sh
# run the training entrypoint as the unprivileged service account (uid 65534), as in the job container
exec setpriv --reuid=65534 --regid=65534 --clear-groups /work/rrvenv/bin/python "$@"
