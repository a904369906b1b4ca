# agent/: filled in by the agent work
