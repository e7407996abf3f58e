import json, os
os.chdir("/work/rr129/hv")
TR = "/work/rrvenv/bin/torchrun"
def two(port, args, exa="", exb="", launch=TR, env=""):
    a = f"{env}timeout 120 {launch} --nnodes 2 --node-rank 0 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} {exa+' ' if exa else ''}scenarios/twonode.py {args} 2>&1 | awk '{{print \"node-a: \" $0; fflush()}}' >> LOG & " \
        f"{env}timeout 120 {launch} --nnodes 2 --node-rank 1 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} {exb+' ' if exb else ''}scenarios/twonode.py {args} 2>&1 | awk '{{print \"node-b: \" $0; fflush()}}' >> LOG & wait"
    return a
def sp(port, args):
    return (f"timeout 120 /work/rrvenv/bin/python scenarios/spawn_node.py 0 {port} -- {args} 2>&1 | awk '{{print \"node-a: \" $0; fflush()}}' >> LOG & "
            f"timeout 120 /work/rrvenv/bin/python scenarios/spawn_node.py 1 {port} -- {args} 2>&1 | awk '{{print \"node-b: \" $0; fflush()}}' >> LOG & wait")
MERGE = "Both simulated nodes' consoles (prefixed node-a:/node-b: by awk) were appended to one file as they printed, so the lines are merged in time order. "
C = []
def add(id, cmd, labels, ir, ev, diff, files="twonode.py", fw=("pytorch",), file=None, merge=True):
    C.append(dict(id=id, file=file or f"{id}.log", source=f"realrun: {cmd.replace('LOG', id + '.log')}  [scenarios/{files}, torch 2.13.0+cpu, gloo]",
                  labels=labels, initiating_rank=ir, frameworks=list(fw), evidence=(MERGE if ("awk" in cmd and merge) else "") + ev, difficulty=diff))
exec(open("scenarios/cases_meta.py").read())
with open("cases.jsonl", "w") as f:
    for c in C:
        if os.path.exists(c["file"]): f.write(json.dumps(c) + "\n")
        else: print("missing", c["file"])
print(len(C))
