"""Signed webhooks for sessions: the URL is checked where it is given and again at every delivery, each
event is signed by the Standard Webhooks scheme with a per-session secret derived from the server key, and
delivery is one bounded attempt at a time from the session store's event log."""
