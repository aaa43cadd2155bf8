"""toolout's client side and entry points: the `toolout` CLI, the SDK client, the demo."""
