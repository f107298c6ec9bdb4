"""The corpus's imported models, made once per session by TensorFlow in a process of its own."""

from __future__ import annotations

import pytest

from tests.faulty.corpus import make_imports


@pytest.fixture(scope="session")
def faulty_models(tmp_path_factory):
    return make_imports(tmp_path_factory.mktemp("faulty"))
