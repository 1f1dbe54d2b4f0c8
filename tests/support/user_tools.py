"""A newcomer's tools module as the README has them write it: `my_tools.py` importing a helper
module beside it (`helpers.py`), for the tests of where tool code may live."""

from __future__ import annotations

MY_TOOLS = '''
from helpers import shout

from mcp_tasks_aws import ToolSet

tools = ToolSet(name="mine")


@tools.tool
def greet(name: str) -> str:
    """Say hello.

    Args:
        name: Who to greet.
    """
    return shout(f"hello, {name}")
'''
HELPERS = 'def shout(text: str) -> str:\n    return text.upper() + "!"\n'
