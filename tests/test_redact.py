"""The one rule that secrets never leave the operator's log (I-44), on its own: what counts as a secret, every form a
library may quote it in, credential shapes that were never registered, and the log filter."""

from __future__ import annotations

import logging
import uuid
from urllib.parse import quote

import pytest
from mcp_pd._redact import (
    REDACTED,
    RedactingFilter,
    public_url,
    redact,
    register_env,
    register_headers,
    register_url,
)


def _token() -> str:
    return f"tok-{uuid.uuid4().hex}"  # unique per test: the registry is the process's


@pytest.mark.req("PDX-SECRET-01")
def test_a_registered_header_value_is_taken_out_in_every_form_a_library_quotes_it() -> None:
    token = _token()
    register_headers({"Authorization": f"Bearer {token} ", "X-Api-Key": f"{token}-key\n", "Accept": "text/plain"})
    for text in (
        f"Illegal header value b'Bearer {token} '",  # h11, the trailing blank included
        f"upstream said: {token}",  # the token alone (a word of the value)
        f"{token}-key\\n",  # repr-escaped
        quote(f"{token}-key\n"),  # URL-encoded
    ):
        assert token not in redact(text) and REDACTED in redact(text), text
    assert redact("Accept: text/plain") == "Accept: text/plain"  # descriptive headers are no secrets
    assert redact("Bearer tokens are checked") == "Bearer tokens are checked"  # prose stays readable


@pytest.mark.req("PDX-SECRET-01")
def test_environment_values_are_secrets_by_their_names() -> None:
    key, plain = _token(), f"production-{uuid.uuid4().hex[:6]}"
    register_env({"GITHUB_PERSONAL_ACCESS_TOKEN": key, "APP_MODE": plain, "DB": f"postgres://u:{key}x@db/x"})
    assert key not in redact(f"failed with {key}")
    assert redact(f"mode {plain}") == f"mode {plain}"  # not named like a credential
    assert f"{key}x" not in redact(f"connecting to {key}x")  # the password of a URL value


@pytest.mark.req("PDX-SECRET-03")
def test_url_credentials_by_registration_and_by_shape() -> None:
    password = _token()
    register_url(f"https://operator:{password}@models.example/v1?api_key=k-{password}&v=2")
    assert password not in redact(f"auth failed for {password}")
    # Never registered: still taken out by their shape.
    unregistered = "https://someone:hunter2-unseen@h.example:8443/v1/embeddings?token=abc123def&x=1"
    shown = redact(f"GET {unregistered} failed")
    assert "hunter2-unseen" not in shown and "abc123def" not in shown and "someone" not in shown
    assert "h.example:8443/v1/embeddings" in shown and "x=1" in shown
    assert public_url(unregistered) == f"https://h.example:8443/v1/embeddings?token={REDACTED}&x=1"
    assert redact("Authorization: Basic dXNlcjpwYXNzd29yZA==") == f"Authorization: Basic {REDACTED}"


@pytest.mark.req("PDX-SECRET-02")
def test_the_log_filter_writes_every_record_through_the_rule(caplog: pytest.LogCaptureFixture) -> None:
    token = _token()
    register_headers({"Authorization": f"Bearer {token}"})
    logger = logging.getLogger("mcp_pd.test_redact")
    caplog.handler.addFilter(RedactingFilter())
    try:
        logger.warning("upstream %r failed: %s", "x", f"Illegal header value b'Bearer {token}'")
        try:
            raise ValueError(f"bad value {token}")
        except ValueError:
            logger.exception("with a traceback")
    finally:
        caplog.handler.filters.clear()
    assert token not in caplog.text and "Illegal header value" in caplog.text and "ValueError" in caplog.text
