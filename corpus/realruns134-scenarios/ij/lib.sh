TR=/work/rrvenv/bin/torchrun
PY=/work/rrvenv/bin/python
cd /work/rr134/ij
# run_case ID STYLE CMD0 CMD1 : runs, logs to ID.log, records the exact command
run_case() {
  local id=$1 style=$2 c0=$3 c1=$4
  printf 'scenarios/run2n.sh %s %s.log %q %q\n' "$style" "$id" "$c0" "$c1" > cmds/$id.cmd
  timeout 180 scenarios/run2n.sh "$style" "$id.log" "$c0" "$c1"
  echo "== $id rc=$? lines=$(wc -l < $id.log)"
}
static() { echo "--nnodes 2 --node-rank $1 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port $2"; }
c10d() { echo "--nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:$1 --rdzv-id $2 --rdzv-conf timeout=60"; }
