"""Stand-in for a leftover process from a previous job still bound to the port (e.g. a stale TensorBoard / old master)."""
import socket, sys, time
s = socket.socket(); s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(8)
time.sleep(float(sys.argv[2]))
