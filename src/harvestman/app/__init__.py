"""What a user runs: the command line, the live display, status and export, the demo."""
