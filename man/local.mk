# man/: filled in by the man work
