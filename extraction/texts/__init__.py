"""Every text the model sees or returns: prompts, tool definitions, the nonce wrapper and its parser, results."""
