"""Admin: people and their roles. Every change is audited; nobody is ever deleted."""

import streamlit as st

from core import access
from ui import auth, keys, shell, widgets
from ui.format import ist

shell.require_frame()
st.title("Admin")
shell.need("admin", "Managing users")
st.caption(
    "Roles attach to the verified email people sign in with. Viewer reads; reviewer "
    "assigns, comments, resolves and escalates; approver also approves large write-offs; "
    "admin also imports, reconciles, syncs and manages users. A person who leaves is "
    "deactivated: they can no longer sign in, and the trail keeps their name."
)
users = shell.read(access.list_users)
widgets.records_table(
    [
        {
            "Email": u.email,
            "Role": u.role,
            "Active": "yes" if u.active else "no",
            "Added by": u.added_by,
            "Changed": ist(u.updated_at),
        }
        for u in users
    ],
    keys.ADMIN_USERS,
    "No users yet.",
)


def _change(kind: str, email: str, role: str | None) -> None:
    with shell.guarded(), shell.connection() as conn:
        if kind == "add":
            result = access.add_user(conn, email, str(role), actor=auth.actor())
        elif kind == "grant":
            result = access.grant(conn, email, str(role), actor=auth.actor())
        else:
            result = access.deactivate(conn, email, actor=auth.actor())
        state = "active" if result.active else "deactivated"
        done = "" if result.changed else " (nothing to change)"
        shell.flash("success", f"{result.email}: {result.role}, {state}{done}.")
        st.rerun()


add_col, change_col = st.columns(2)
with add_col, st.container(border=True):
    st.markdown("**Add a person**")
    email = st.text_input("Email (as the identity provider verifies it)", key=keys.ADMIN_EMAIL)
    role = st.selectbox("Role", access.ROLES, index=1, key=keys.ADMIN_ROLE)
    if st.button("Add", key=keys.ADMIN_ADD, type="primary", disabled=not email.strip()):
        _change("add", email, role)
with change_col, st.container(border=True):
    st.markdown("**Change a role, or deactivate**")
    active = [u.email for u in users if u.active]
    pick = st.selectbox("Person", active, index=None, key=keys.ADMIN_PICK)
    new_role = st.selectbox("New role", access.ROLES, index=1, key=keys.ADMIN_GRANT_ROLE)
    left, right = st.columns(2)
    if left.button("Change role", key=keys.ADMIN_GRANT, disabled=pick is None):
        _change("grant", str(pick), new_role)
    if right.button("Deactivate", key=keys.ADMIN_DEACTIVATE, disabled=pick is None):
        _change("deactivate", str(pick), None)
