"""`python -m idem.explore.sandbox REQUEST FD`: the sandbox's child process (`child.child_main`)."""
import sys

from .child import child_main

child_main(sys.argv[1], int(sys.argv[2]))
