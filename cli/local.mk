# cli/: filled in by the cli work
