"""OpenCL provider (placeholder until the provider issue)."""
