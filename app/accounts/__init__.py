"""Accounts: users and passwords (``users``), API tokens (``tokens``), server-side sessions, sign-in limits,
CSRF and the FastAPI dependencies that check them (``auth``).
May use: the core and ``app.deps``. Used by the faces and by the demo.
"""
