"""Tools and prompts: the registry, the decorator, the ToolContext and running one leg."""
