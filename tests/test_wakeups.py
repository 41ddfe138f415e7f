"""The worker's and the bots' wait for a wake-up, with many files open."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator

import pytest

from pbmserv import wakeups

#: a descriptor number select(2) cannot take
HIGH = 1500


@pytest.fixture
def high_pipe() -> Iterator[tuple[int, int]]:
    """A pipe whose reading end is descriptor HIGH (the soft limit raised to allow it,
    as a server with many connections open has it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= HIGH:
        pytest.skip(f"the open-files limit ({hard}) is below {HIGH}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, HIGH + 1), hard))
    read, write = os.pipe()
    os.dup2(read, HIGH)
    os.close(read)
    try:
        yield HIGH, write
    finally:
        os.close(HIGH)
        os.close(write)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_wake_up_on_a_high_descriptor_is_seen(high_pipe: tuple[int, int]) -> None:
    """The loops wait with poll(2): a wake-up pipe numbered above 1023 (the server has
    many connections open) is read, where select(2) raised and ended the worker."""
    read, write = high_pipe
    os.write(write, b"!")
    assert wakeups.readable([read], 30.0) == {read}
    os.read(read, 1)
    assert wakeups.readable([read], 0.0) == set()
