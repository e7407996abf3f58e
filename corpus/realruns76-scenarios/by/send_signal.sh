# usage: by_sig.sh SIGNAL DELAY CMD... : runs CMD in the background, sends SIGNAL to its launcher after DELAY seconds
sig=$1; d=$2; shift 2
"$@" &
pid=$!
sleep $d
kill -$sig $pid
wait $pid
