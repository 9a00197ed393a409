"""An error about a Redis or Sentinel URL names the URL with its password as ``***``: a
log line or a terminal never shows the secret."""

from __future__ import annotations

import pytest

from pipeline.errors import ConfigError
from pipeline.store.connection import connect, shown_url

SECRET = "s3cret-Pa55"


@pytest.mark.parametrize(
    "url",
    [
        f"sentinel://user:{SECRET}@host1:26379,host2:x/mymaster",
        f"sentinel://:{SECRET}@host1:26379",
        f"sentinel://user:{SECRET}@host1:26379/mymaster?db=zero",
        f"bogus://user:{SECRET}@host:6379/0",
    ],
)
def test_a_bad_url_is_refused_without_its_password(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        connect(url)
    assert SECRET not in str(caught.value)
    assert "***" in str(caught.value)


def test_shown_url_keeps_the_user_and_the_hosts() -> None:
    shown = shown_url(f"redis://workers:{SECRET}@redis1:6379/0;redis://w:{SECRET}@redis2/0")
    assert shown == "redis://workers:***@redis1:6379/0;redis://w:***@redis2/0"
