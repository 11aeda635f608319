"""Which Host a request may name (DNS rebinding), framework-free.

A web page whose name an attacker rebinds to 127.0.0.1 is same-origin with an app on the
loopback address: the browser sends the attacker's name in the Host header. An app that
trusts the address it listens on (local mode) must therefore also check the name the
browser used. `allowed_names` says which names each sign-in mode accepts (None: any);
`host_allowed` checks one Host header against them. The port is not part of the check:
rebinding needs the attacker's name, whatever the port.
"""

from __future__ import annotations

from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def host_name(header: str | None) -> str | None:
    """The name in a Host header or URL authority (lower case, port and a trailing dot
    dropped, IPv6 without brackets); None when absent or malformed."""
    if not header or not header.strip():
        return None
    try:
        parts = urlsplit("//" + header.strip())
        name = parts.hostname
        _ = parts.port  # a port that is not a number in range is malformed
    except ValueError:
        return None
    if name is None or parts.username is not None or parts.password is not None:
        return None
    if parts.path or parts.query or parts.fragment:
        return None
    return name.lower().rstrip(".") or None


def allowed_names(mode: str, redirect_uri: str | None = None) -> frozenset[str] | None:
    """The Host names a mode accepts; None accepts any.

    - local: the loopback names only (the app trusts the loopback address);
    - oidc: the redirect URI's host (where the sign-in cookie lives) and the loopback
      names (a reverse proxy on the same machine that sends its upstream's Host);
    - demo, conflict, closed: any (a demo visitor is anonymous wherever they come from;
      the other two show nothing but a refusal).
    """
    if mode == "local":
        return LOOPBACK_NAMES
    if mode == "oidc":
        name = host_name(urlsplit(redirect_uri or "").netloc)
        return LOOPBACK_NAMES | {name} if name else LOOPBACK_NAMES
    return None


def host_allowed(header: str | None, names: frozenset[str] | None) -> bool:
    """Whether a request whose Host header is `header` may be answered."""
    if names is None:
        return True
    name = host_name(header)
    return name is not None and name in names


def refusal(header: str | None, mode: str) -> str:
    """One sentence for a refused Host: what was asked, and how to open the app instead."""
    shown = (header or "").strip()[:200] or "(none)"
    label = {"oidc": "sign-in"}.get(mode, mode)
    if mode == "local":
        how = "open it as http://localhost:<port> or http://127.0.0.1:<port>"
    else:
        how = "open it at the address of its redirect_uri ([auth] in .streamlit/secrets.toml)"
    return (
        f"Refused: this app was asked for as host {shown!r}, which it does not answer to "
        f"in {label} mode (a page on another site's name pointing at this machine, DNS "
        f"rebinding, is refused this way); {how}."
    )
