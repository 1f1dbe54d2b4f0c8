"""The template fixtures of test_template.py (the transformed stack for each parameter set),
shared with the other template checks in this folder."""

from infra.test_template import default_stack, stack, template, transformed  # noqa: F401
