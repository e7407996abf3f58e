"""Stand-in for another job's service that already listens on a port (e.g. a leftover TensorBoard / previous run)."""
import socket, sys, time
port = int(sys.argv[1]); secs = float(sys.argv[2]) if len(sys.argv) > 2 else 120
s = socket.socket(); s.bind(("0.0.0.0", port)); s.listen(16)
print(f"holder listening on {port}", flush=True)
time.sleep(secs)
