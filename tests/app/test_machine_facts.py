"""The page asks the machine's facts (devices, cores, TF build) of the server's default worker, the one
serve.py starts before the first visitor: asking a worker of other flags would start a second TensorFlow
on the first page view (about 8 s on a fresh server with EXPLORER_DEFAULT_ENV set)."""

from __future__ import annotations

from explorer.model.flags import Config
from explorer.ui import cached


def test_the_machine_config_is_the_servers_default_configuration(monkeypatch):
    monkeypatch.setenv("EXPLORER_DEFAULT_ENV", "TF_ENABLE_ONEDNN_OPTS=1")
    assert cached.machine_config().process_key() == Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"}).process_key()
    monkeypatch.setenv("EXPLORER_DEFAULT_ENV", "TF_ENABLE_ONEDNN_OPTS=7")  # unreadable: the page names it
    assert cached.machine_config().process_key() == Config.make("cpu").process_key()
    monkeypatch.delenv("EXPLORER_DEFAULT_ENV")
    assert cached.machine_config().process_key() == Config().process_key()
