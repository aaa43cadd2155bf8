"""Redaction is on unless the tenant is exempt or the request turns it off, and then only with a reason."""

from __future__ import annotations

import pytest

from extraction.errors import InvalidInput
from infra.privacy.policy import redacting


def test_redaction_is_on_by_default_and_off_for_an_exempt_tenant() -> None:
    assert redacting({}, "acme", None, None)
    assert not redacting({"ops": "incident forensics"}, "ops", None, None)
    assert redacting({"ops": "incident forensics"}, "ops", True, None)


def test_a_request_turns_it_off_only_with_a_reason() -> None:
    with pytest.raises(InvalidInput, match="redact_reason"):
        redacting({}, "acme", False, None)
    with pytest.raises(InvalidInput, match="redact_reason"):
        redacting({}, "acme", False, "   ")
    assert not redacting({}, "acme", False, "the user asked to rotate these keys")
