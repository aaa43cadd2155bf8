"""The agent toolkit, client side: define tools, validate and run their calls, compose them."""
