"""Turning AWS event shapes into transport requests (no boto3)."""
