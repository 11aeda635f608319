"""RazorRecon: the reviewer's workbench. `streamlit run app.py`.

On an empty database the first session builds and reconciles the seeded 5,000-payment
benchmark (core.bootstrap), unless RAZORRECON_FIRST_START=empty (the default on
PostgreSQL: the database stays empty and the Overview says how to import); nobody sees a
page before ui.auth knows who they are and their role; every page then reads the database
through core.views.
"""

import streamlit as st

from ui import auth, shell

shell.begin_run()  # a v1 run (the first after a restart, `streamlit run app.py`) reruns
st.set_page_config(page_title="RazorRecon", page_icon="₹", layout="wide")
result = shell.cold_start()
session = None
with shell.guarded():  # a first sign-in may write (RAZORRECON_ADMINS): a busy database
    session = auth.gate()  # sign-in (OIDC), demo persona, or the local single user
if session is None:
    shell.navigation(signed_in=False)  # no page list, and no page runs, before sign-in
    st.stop()
page = shell.navigation()
shell.sidebar(result, session)
shell.run(page)
