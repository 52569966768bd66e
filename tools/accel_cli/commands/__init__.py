"""One module per ``accel`` subcommand."""
