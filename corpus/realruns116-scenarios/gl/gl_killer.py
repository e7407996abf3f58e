"""Send a signal from outside to one rank (or to its DataLoader worker) once it reaches a step."""
import argparse, json, os, signal, sys, time, subprocess
p = argparse.ArgumentParser()
p.add_argument('--progress-dir', required=True)
p.add_argument('--rank', type=int, required=True)
p.add_argument('--at-step', type=int, required=True)
p.add_argument('--sig', default='KILL')
p.add_argument('--child', action='store_true', help='signal the DataLoader worker instead')
p.add_argument('--deadline', type=float, default=150)
p.add_argument('--prlimit-as-mb', type=int, default=0, help='instead of a signal: cap the address space at current VmSize + N MB (prlimit)')
a = p.parse_args()
t0 = time.time()
path = f'{a.progress_dir}/rank{a.rank}.json'
while time.time() - t0 < a.deadline:
    try:
        d = json.load(open(path))
    except Exception:
        time.sleep(0.1); continue
    if d['step'] >= a.at_step:
        pid = d['pid']
        if a.child:
            kids = subprocess.run(['pgrep', '-P', str(pid)], capture_output=True, text=True).stdout.split()
            pid = int(kids[0])
        if a.prlimit_as_mb:
            vm = int([l for l in open(f'/proc/{pid}/status') if l.startswith('VmSize')][0].split()[1])
            cap = (vm + a.prlimit_as_mb * 1024) * 1024
            subprocess.run(['prlimit', '--pid', str(pid), f'--as={cap}:{cap}'], check=True)
            break
        os.kill(pid, getattr(signal, 'SIG' + a.sig))
        sys.stderr.write(f'killer: sent SIG{a.sig} to pid {pid}\n') if os.environ.get('KILLER_VERBOSE') else None
        break
    time.sleep(0.05)
