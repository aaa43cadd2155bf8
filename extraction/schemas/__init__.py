"""JSON schemas for tool definitions: OpenAI strict-mode rules, the strict variant, reading strict arguments back."""
