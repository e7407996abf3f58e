"""Stale process from a previous experiment still holding a port (e.g. an old coordinator)."""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(8); time.sleep(float(sys.argv[2]))
