#!/usr/bin/env python3
"""Runs a command while holding the lock a training run takes on its
directory (flock on the directory itself), as a second run into it would
meet: hold_lock.py DIR COMMAND... exits with the command's status."""
import fcntl
import os
import subprocess
import sys

directory, command = sys.argv[1], sys.argv[2:]
os.makedirs(directory, exist_ok=True)
fd = os.open(directory, os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
sys.exit(subprocess.call(command))
