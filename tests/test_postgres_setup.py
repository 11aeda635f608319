"""docs/postgres.md's setup followed literally: an owner role with CREATEROLE
(DATABASE_OWNER_URL) and a separate login role (DATABASE_URL). Tester report of 2026-12-04,
finding 6: the first page said only "permission denied for table runs"; the login role was
never made a member of razorrecon_app, and no text said so."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from core.db import connect, open_database
from tests.postgres_server import PASSWORD, PostgresServer

pytestmark = pytest.mark.postgres

_names = itertools.count()


@pytest.fixture
def login_role(postgres_server: PostgresServer) -> Iterator[str]:
    """A LOGIN role of its own (the recipe's `recon_web`), not a member of razorrecon_app."""
    name = f"recon_web_{os.getpid()}_{next(_names)}"
    postgres_server.admin(f"CREATE ROLE {name} LOGIN PASSWORD '{PASSWORD}'")
    try:
        yield name
    finally:
        postgres_server.admin(f"DROP ROLE IF EXISTS {name}")


def _as(pg_url: str, role: str) -> str:
    user = pg_url.split("//", 1)[1].split(":", 1)[0]
    return pg_url.replace(f"//{user}:", f"//{role}:", 1)


def test_a_separate_login_role_is_made_a_member_of_the_app_role_by_the_owner(
    pg_url: str, login_role: str
) -> None:
    """With DATABASE_OWNER_URL set (the recipe), opening the database as the login role
    grants it razorrecon_app (as the owner, who created that role) and it can work."""
    url = _as(pg_url, login_role)
    with open_database(url) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
        member = conn.execute(
            "SELECT pg_has_role(current_user, 'razorrecon_app', 'MEMBER')"
        ).fetchone()[0]
        assert member is True


def test_a_login_role_without_the_app_role_is_told_what_to_grant(
    pg_url: str, login_role: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an owner to grant it, the refusal names the role, the grant and who runs it,
    instead of a bare "permission denied for table runs"."""
    from ui.shell import describe_error

    monkeypatch.delenv("DATABASE_OWNER_URL", raising=False)
    url = _as(pg_url, login_role)
    monkeypatch.setenv("DATABASE_URL", url)
    conn = connect(url)
    try:
        with pytest.raises(Exception) as caught:
            conn.execute("SELECT count(*) FROM runs").fetchone()
    finally:
        conn.close()
    kind, text = describe_error(caught.value)
    assert kind == "error"
    assert f"GRANT razorrecon_app TO {login_role};" in text
    assert "DATABASE_OWNER_URL" in text and "docs/postgres.md" in text
