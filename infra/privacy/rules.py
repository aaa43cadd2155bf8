"""The credential formats toolout redacts, as RE2 patterns (no look-around: one multi-pattern scan runs them).

Drawn from the rule sets that scanners maintain for these formats (gitleaks' and detect-secrets' plugins),
narrowed to the shapes the providers issue: a fixed prefix and alphabet wherever the provider has one, so
that ordinary identifiers, hashes and UUIDs in logs and data do not match. A rule whose pattern has a
group redacts only the group (the value after `password=`, the password in a URL); otherwise the whole
match. Values stop at quotes, backslashes and whitespace, so a replacement inside a JSON string or a CSV
field leaves the document well formed. Rules run in order: the specific formats first, so a JWT in an
`Authorization:` header is counted as a JWT, and a value already redacted (it starts with `[`) is left.
"""

from __future__ import annotations

from dataclasses import dataclass

RULESET = "toolout-secrets 1"
"""Names the rule set a redacted view was made with (kept in the output's record)."""

_VALUE = r"""([^\s"'\\\[<>&,;][^\s"'\\<>&,;]{3,})"""
_TOKEN = r"""([^\s"'\\\[<>&,;][^\s"'\\<>&,;]{7,})"""
"""A credential after `Authorization:`: at least 8 characters, so the scheme word alone (`Bearer` before a
token already redacted) is never taken for it."""
"""A key-value pair's value: not empty, not a value already redacted, ending where a quoted string,
a query string or a CSV field does."""


PEM_BEGIN = r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
"""A private key's first line: the key runs to its END line, which may be many lines (or blocks) later."""


@dataclass(frozen=True)
class Rule:
    """One credential format: what finds it and, when the secret spans lines, what it covers (`span`)."""

    kind: str
    pattern: str
    span: str | None = None


RULES: tuple[Rule, ...] = (
    Rule(
        "pem_private_key",
        PEM_BEGIN,
        span=PEM_BEGIN + r"(?s:.*?)(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)",
    ),
    Rule("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    Rule("aws_secret_key", r"(?i)aws.{0,24}?secret.{0,24}?[\"'=:\s]{1,4}([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|\z)"),
    Rule("gcp_api_key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    Rule("gcp_oauth_token", r"\bya29\.[0-9A-Za-z_\-]{30,}"),
    Rule("azure_storage_key", r"(?i)(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,88}={0,2})"),
    Rule("azure_client_secret", r"\b[a-zA-Z0-9_~.]{3}[0-9]Q~[a-zA-Z0-9_~.\-]{31,34}"),
    Rule("github_token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{82}\b"),
    Rule("gitlab_token", r"\bgl(?:pat|dt|rt|ptt|cbt)-[A-Za-z0-9_\-]{20,}"),
    Rule("slack_token", r"\bxox[abposr]-[0-9A-Za-z\-]{10,}"),
    Rule("slack_webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}"),
    Rule("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    Rule("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,99}\b"),
    Rule("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b"),
    Rule("twilio_key", r"\bSK[0-9a-f]{32}\b"),
    Rule(
        "openai_key",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}|\bsk-proj-[A-Za-z0-9_\-]{40,}",
    ),
    Rule("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    Rule("basic_auth_url", r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,15}://[^\s:/@\"'<>\[]{1,64}:([^\s/@\"'<>\\\[]{1,128})@"),
    Rule(
        "authorization",
        r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest)\s+)?" + _TOKEN,
    ),
    Rule(
        "password", r"(?i)\b(?:password|passwd|pwd|passphrase|client_secret|secret_key)[\"']?\s*[:=]\s*[\"']?" + _VALUE
    ),
)
