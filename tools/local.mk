# tools/: filled in by the tools work
