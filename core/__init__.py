"""RazorRecon's domain: reconciliation of Razorpay payments, settlements and bank credits.

Nothing in this package imports streamlit; the web layer (app.py, pages/) calls into it.
"""

__version__ = "0.1.0"
