"""Whether a job reads an output's redacted view: on unless its tenant or the request turns it off, with a reason.

Redaction is the default everywhere. A deployment may exempt a tenant (`Settings.unredacted_tenants`, tenant
to reason), and one request may ask for the secrets with `redact: false` and a `redact_reason`; either way
the reason is logged with the job, so that who showed a model the secrets, and why, can be found later.
"""

from __future__ import annotations

import logging

from extraction.errors import InvalidInput

log = logging.getLogger("toolout.privacy")


def redacting(unredacted_tenants: dict[str, str], tenant: str, redact: bool | None, reason: str | None) -> bool:
    """The choice for one request: the request's own when it makes one, else its tenant's (redact by default)."""
    if redact is False and not (reason and reason.strip()):
        raise InvalidInput("redact: false needs a redact_reason saying why a model may see the secrets")
    if redact is None:
        return tenant not in unredacted_tenants
    return redact


def log_unredacted(job_id: str, tenant: str, handle: str, reason: str) -> None:
    log.warning("job %s (tenant %s) reads output %s with its secrets: %s", job_id, tenant, handle, reason)


def unredacted_reason(unredacted_tenants: dict[str, str], tenant: str, reason: str | None) -> str:
    return reason or unredacted_tenants.get(tenant, "")
