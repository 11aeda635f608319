"""RazorRecon: the reviewer's workbench. `streamlit run app.py`.

On an empty database the first session builds and reconciles the seeded 5,000-payment
benchmark (core.bootstrap); every page then reads the database through core.views.
"""

import streamlit as st

from ui import shell

st.set_page_config(page_title="RazorRecon", page_icon="₹", layout="wide")
page = shell.navigation()
result = shell.cold_start()
shell.sidebar(result)
shell.run(page)
