"""Fixtures for the infra tests.

The S3 fixtures are imported here because pytest only honours `pytest_plugins` in the root
conftest; once `tests.fixtures.s3` is listed there, this import can go.
"""

from tests.fixtures.s3 import s3_bucket, s3_endpoint_url, s3_options, s3_store  # noqa: F401
from tests.fixtures.offline_model import offline_model  # noqa: E402,F401  (same reason: not yet in the root pytest_plugins)
