# exec a command with SIGINT restored to default (as in a foreground terminal job; non-interactive shells ignore SIGINT for background jobs)
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setpgrp()
os.execvp(sys.argv[1], sys.argv[1:])
