# systemd/: filled in by the systemd work
