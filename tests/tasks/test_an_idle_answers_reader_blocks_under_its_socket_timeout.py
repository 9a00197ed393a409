"""The answers reader's blocking read waits for less than the store's socket timeout: on an
idle machine it returns empty, with no Redis error and nothing in the log, where a read
as long as the timeout ended every few seconds as "Redis unavailable"."""

from __future__ import annotations

import logging
import time

import pytest
from celery import Celery

from pipeline.store.connection import SOCKET_TIMEOUT_S
from pipeline.tasks.answers import BLOCK_MS, AnswerReader


def test_the_block_is_well_under_the_socket_timeout() -> None:
    assert BLOCK_MS / 1000 <= SOCKET_TIMEOUT_S / 2


def test_an_idle_read_returns_empty_and_logs_nothing(
    app: Celery, caplog: pytest.LogCaptureFixture
) -> None:
    reader = AnswerReader(app, "lifecycle@idle")
    reader.store.answers.await_(["n1"], time.time())  # awaited: the read blocks on its stream
    with caplog.at_level(logging.WARNING):
        assert reader.step() == 0  # the real block, on a real Redis
    assert caplog.records == []
