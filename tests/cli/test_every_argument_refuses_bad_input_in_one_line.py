"""Every number and file argument of every subcommand, found by walking the command
line's parser (a new subcommand is covered without a case of its own), refuses what a
generator feeds it — non-UTF-8 bytes, empty files, directories, huge files, deep
nesting, ``nan``, ``inf``, huge and negative numbers, ports out of range — with exactly
one line on stderr, no traceback, a documented exit status, within a bound, and nothing
written to Redis."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.cli.kinds import Number, PathArg
from pipeline.model.files import MAX_BYTES
from tests.cli.walker import Argument, Outcome, arguments, raw_number_options, run

ARGUMENTS = arguments()
NUMBERS = [a for a in ARGUMENTS if isinstance(a.kind, Number)]
PATHS = [a for a in ARGUMENTS if isinstance(a.kind, PathArg)]
#: a documented exit status of a refusal (README): 1 refused, 2 usage, 3 settings and
#: files, 4 unreachable
REFUSED = {1, 2, 3, 4}
#: a few examples of each, the same each run; ``make test-all`` runs more, at random
EXAMPLES = int(os.environ.get("CORAL2_BADINPUT_EXAMPLES", "0")) or None
CHECKS = settings(
    max_examples=EXAMPLES or 3,
    derandomize=EXAMPLES is None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def database(redis_url: str) -> Iterator[redis.Redis]:
    """A database of the session's Redis that nothing else uses: the commands' broker."""
    url = redis_url.rsplit("/", 1)[0] + "/11"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def env(database: redis.Redis, tmp_path: Path) -> dict[str, str]:
    kwargs = database.connection_pool.connection_kwargs
    for name in [n for n in os.environ if n.startswith("CORAL2_PIPELINE_")]:
        os.environ.pop(name)  # the child inherits these: none may point elsewhere
    return {
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": f"redis://{kwargs['host']}:{kwargs['port']}/11",
        "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "walk",
        "CORAL2_PIPELINE_PIPELINE__API_HOST": "http://127.0.0.1:1",  # refused at once
        "HOME": str(tmp_path),
    }


def good_value(action: argparse.Action, tmp_path: Path) -> str:
    """A value ``action`` takes, for the arguments beside the one fed bad input."""
    if action.choices:
        return str(next(iter(action.choices)))
    kind = action.type
    if isinstance(kind, Number):
        return next(v for v in ("1", "10", "0") if _takes(kind, v))
    if isinstance(kind, PathArg) and kind.kind == "dir":
        return str(tmp_path / "out")
    if isinstance(kind, PathArg):
        return str(tmp_path / "absent")
    return "1"


def _takes(kind: Number, text: str) -> bool:
    try:
        kind(text)
    except argparse.ArgumentTypeError:
        return False
    return True


def argv(argument: Argument, value: str, tmp_path: Path) -> list[str]:
    """The command line that gives ``argument`` ``value`` and its needs good values."""
    options: list[str] = []
    positionals: list[str] = []
    if argument.option is None:
        positionals.append(value)
    else:
        options += [argument.option, value]
    for option, action in argument.needs:
        if option is None:
            positionals.append(good_value(action, tmp_path))
        else:
            options += [option, good_value(action, tmp_path)]
    if argument.command == ("deadletters",) and argument.option == "--config":
        return ["--config", value, "deadletters"]
    return [*argument.command, *options, *positionals]


def check(outcome: Outcome, line: list[str], database: redis.Redis, *, accepted: bool) -> None:
    """The outcome every bad input must have (``accepted``: input that may be good may
    also be taken, exit 0)."""
    assert outcome.status is not None, f"{line}: still running after 60 s"
    assert "Traceback" not in outcome.stderr, (line, outcome.stderr)
    allowed = REFUSED | {0} if accepted else REFUSED
    assert outcome.status in allowed, (line, outcome.status, outcome.stderr)
    lines = outcome.stderr.strip().splitlines()
    if outcome.status:
        assert len(lines) == 1, (line, outcome.stderr)
    else:
        assert len(lines) <= 1, (line, outcome.stderr)
    assert database.dbsize() == 0, (line, list(database.scan_iter(count=100))[:5])


def test_no_argument_takes_a_number_another_way() -> None:
    assert raw_number_options() == []


def test_the_walk_finds_the_arguments_of_every_kind() -> None:
    kinds = {(type(a.kind).__name__, a.kind.kind) for a in ARGUMENTS}
    assert {("Number", "port"), ("Number", "seconds"), ("PathArg", "file")} <= kinds
    assert any(a.option == "--config" and a.command == ("deadletters",) for a in ARGUMENTS)


BAD_NUMBER_TEXT = st.one_of(
    st.sampled_from(["nan", "-nan", "inf", "-inf", "1e999", "", " ", "0x10", "٣", "1,5"]),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats().map(repr),
    st.text(max_size=12),
)


@pytest.mark.parametrize("argument", NUMBERS, ids=lambda a: a.name)
@CHECKS
@given(data=st.data())
def test_a_bad_number_is_one_usage_line(
    argument: Argument,
    data: st.DataObject,
    env: dict[str, str],
    database: redis.Redis,
    tmp_path: Path,
) -> None:
    assert isinstance(argument.kind, Number)
    kind = argument.kind
    text = data.draw(BAD_NUMBER_TEXT.filter(lambda t: not _takes(kind, t)), label="value")
    line = argv(argument, text, tmp_path)
    outcome = run(line, env)
    check(outcome, line, database, accepted=False)
    usage = 3 if argument.command == ("status",) else 2  # a Nagios plugin's UNKNOWN
    assert outcome.status == usage, (line, outcome.stderr)
    assert (argument.option or "") in outcome.stderr


#: "Billion laughs": nine lists of nine aliases of the list before.
ALIAS_BOMB = b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + b"".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n".encode()
    for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


#: what is never a good file for any argument
NEVER_GOOD = st.one_of(
    st.just(("missing", b"")),
    st.just(("directory", b"")),
    st.just(("huge", b"")),
    st.just(("fifo", b"")),  # a reader that opens it blocks for ever
    st.just(("device", b"")),
    st.binary(max_size=64).map(lambda b: ("bytes", b"\xff" + b)),  # 0xff is never UTF-8
)
#: what some arguments may take (a password file takes any one line)
MAYBE_GOOD = st.one_of(
    st.just(("bytes", b"")),
    st.sampled_from(
        [
            b"[" * 100_000,
            b'{"a":' * 50_000,
            b"a = " + b"[" * 5_000 + b"]" * 5_000,
            b"- " * 50_000,
            b"nan",
            b"inf",
            b"-1",
            b"1e999",
            b"\x00\x00",
            ALIAS_BOMB,  # 400 bytes of YAML that expand to 387 million values
        ]
    ).map(lambda b: ("bytes", b)),
    st.text(max_size=200).map(lambda t: ("bytes", t.encode())),
)
#: what is never a good directory to write in, or file to write
NOT_WRITABLE = st.sampled_from(["/proc/coral2-walk/x", "/dev/null/x", "a file"])


def a_file(tmp_path: Path, form: str, content: bytes) -> str:
    path = tmp_path / "input"
    if form == "directory":
        path.mkdir(exist_ok=True)
    elif form == "fifo":
        os.mkfifo(path)
    elif form == "device":
        return "/dev/zero"
    elif form == "huge":
        with path.open("wb") as out:
            out.truncate(MAX_BYTES + 1)  # sparse: larger than any file a command reads
    elif form == "bytes":
        path.write_bytes(content)
    return str(path)


@pytest.mark.parametrize("argument", PATHS, ids=lambda a: a.name)
@CHECKS
@given(data=st.data())
def test_a_bad_file_is_one_line(
    argument: Argument,
    data: st.DataObject,
    env: dict[str, str],
    database: redis.Redis,
    tmp_path: Path,
) -> None:
    assert isinstance(argument.kind, PathArg)
    case = Path(tempfile.mkdtemp(dir=tmp_path))  # one per example: they share tmp_path
    if argument.kind.kind in ("dir", "out"):
        where = data.draw(NOT_WRITABLE, label="path")
        if where == "a file":
            (case / "a file").write_text("")
            where = str(case / ("a file" if argument.kind.kind == "dir" else ""))
        accepted = False
    else:
        pick = NEVER_GOOD if argument.service else st.one_of(NEVER_GOOD, MAYBE_GOOD)
        form, content = data.draw(pick, label="file")
        where = a_file(case, form, content)
        accepted = form == "bytes" and not content.startswith(b"\xff")
    line = argv(argument, where, case)
    check(run(line, env), line, database, accepted=accepted)
