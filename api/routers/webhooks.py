"""Webhooks: the tenant's signing secret, so a receiver can check `X-Toolout-Signature`."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import SettingsDep, Tenant
from api.errors import error_responses
from api.routers import API_PREFIX
from api.schemas import WebhookSecret
from infra.webhooks.delivery import SIGNATURE_HEADER, WebhooksNotConfigured, tenant_secret

router = APIRouter(prefix=f"{API_PREFIX}/webhooks", tags=["webhooks"])


@router.get("/secret", response_model=WebhookSecret, responses=error_responses(422))
def get_secret(settings: SettingsDep, tenant: Tenant) -> WebhookSecret:
    """Your tenant's secret (derived from the deployment's; other tenants' differ)."""
    if settings.webhook_secret is None:
        raise WebhooksNotConfigured("this deployment sends no webhooks (TOOLOUT_WEBHOOK_SECRET is not set)")
    scheme = 'hex HMAC-SHA256(secret, "<t>.<raw body>"), sent as "t=<unix seconds>,v1=<hex>"'
    return WebhookSecret(secret=tenant_secret(settings.webhook_secret, tenant), header=SIGNATURE_HEADER, scheme=scheme)
