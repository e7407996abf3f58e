#!/bin/bash
# waitpid.sh PIDFILE SECONDS : wait until the rank wrote its pid file, then SECONDS more, print nothing
for i in $(seq 1 120); do [ -s "$1" ] && break; sleep 0.5; done
sleep "$2"; cat "$1"
