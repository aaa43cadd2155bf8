"""One router per resource; each stays thin and leaves storage rules to `infra` and `api.lifecycle`."""

API_PREFIX = "/v1"
"""Part of every route's own path (not an include-time prefix), so `scope["route"].path` is the full template."""
