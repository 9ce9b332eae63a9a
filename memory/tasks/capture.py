"""Capture tasks: run a durable capture job, sweep due or stuck jobs (issue: capture)."""
