"""The ``accel`` command-line tool."""
