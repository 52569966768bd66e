"""The conformance suite as a library (see accelcore.conformance.suite)."""
