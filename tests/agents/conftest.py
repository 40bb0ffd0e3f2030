"""Fixtures shared by the capacity controller tests."""

from __future__ import annotations

import logging

import pytest


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The controller's log lines, one per group and run."""
    caplog.set_level(logging.INFO, logger="capacity-controller")
    return caplog
