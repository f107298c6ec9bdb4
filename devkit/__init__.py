"""Developer kit: what the browser tests, the screenshot tool and the serving benchmark share.

``browser``: start the app on a free port (and stop it with its workers), launch Debian's
Chromium with the settings this machine needs, wait for Streamlit to be idle. Not part of the
explorer package (nothing in ``explorer/`` imports it).
"""
