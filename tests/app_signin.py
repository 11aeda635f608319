"""Signing in to the app under AppTest, as Streamlit's OIDC sign-in leaves a session: an
`[auth]` section in secrets and the provider's verified email in `st.user`."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

AUTH_SECRETS = {
    "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
    "cookie_secret": "test-cookie-secret-0123456789abcdef",
    "client_id": "razorrecon",
    "client_secret": "secret",
    "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",
}


def signed_in(
    email: str = "admin@example.com", *, verified: bool = True, timeout: int = 60
) -> AppTest:
    """The app with `email` signed in through OIDC (not run yet)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.secrets["auth"] = AUTH_SECRETS
    at.user = {"is_logged_in": True, "email": email, "email_verified": verified}
    return at
