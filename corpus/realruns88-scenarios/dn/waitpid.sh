# usage: waitpid FILE -> echoes pid once file exists (max 60s)
waitpid() { for i in $(seq 600); do [ -s "$1" ] && { cat "$1"; return; }; sleep 0.1; done; }
