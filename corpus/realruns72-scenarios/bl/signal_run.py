"""Launch a command, then deliver a signal to it after a delay (what a user's Ctrl-C or a scheduler does).
usage: signal_run.py SIGNAME DELAY -- cmd...   (child output goes to our stdout/stderr)"""
import subprocess, sys, time, signal
sig = getattr(signal, sys.argv[1]); delay = float(sys.argv[2]); cmd = sys.argv[4:]
p = subprocess.Popen(cmd, start_new_session=False)
time.sleep(delay)
p.send_signal(sig)
try:
    rc = p.wait(timeout=90)
except subprocess.TimeoutExpired:
    p.kill(); rc = p.wait()
sys.exit(rc)
