"""Durable tasks: the record and its rules, the service behind tasks/*, running legs (`legs`,
the worker) and settling lost ones (`reconcile`, the reconciler)."""
