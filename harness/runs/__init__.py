"""Runs: bench, results, baselines, comparison, shards."""
