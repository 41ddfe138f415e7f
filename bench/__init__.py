"""Benchmarks: scripts run by hand or by make bench (see docs/benchmarks.md)."""
