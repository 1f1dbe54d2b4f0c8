"""Durable tasks: the record, the service behind tasks/*, the worker and the reconciler."""
