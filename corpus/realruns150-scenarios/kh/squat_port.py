# leftover process from an earlier debugging session still holding the port
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
time.sleep(float(sys.argv[2]))
