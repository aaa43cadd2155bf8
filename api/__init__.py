"""The HTTP face of toolout: FastAPI routers per resource, one error handler, injectable services.

Start it with `uvicorn --factory api.app:create_app` (settings are read when the app is built, not at import).
"""
