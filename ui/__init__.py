"""Streamlit-only helpers: session-state keys, the shell (cold start, sidebar, error
boundary) and shared widgets, formatting and charts. `core` never imports this package.

app.py drives navigation with `st.navigation`; the `pages/` folder holds its page scripts.
Streamlit would otherwise treat a `pages/` folder as a v1 multipage app and run a page
script without app.py (no cold start, no error boundary) until `st.navigation` is first
called in the process, so the flag is cleared as soon as any page or app.py imports `ui`.
"""

from streamlit.runtime.pages_manager import PagesManager

PagesManager.uses_pages_directory = False
