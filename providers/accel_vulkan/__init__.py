"""Vulkan provider (placeholder until the provider issue)."""
