"""What the extension's Python tests share: a connection with the extension loaded, and waiting
for a condition with a deadline."""
import sqlite3
import time


def connect(path, extension, timeout=10, check_same_thread=True):
    """A connection to `path` in autocommit mode (the test writes BEGIN and COMMIT itself) with
    the extension loaded."""
    con = sqlite3.connect(path, isolation_level=None, timeout=timeout,
                          check_same_thread=check_same_thread)
    con.enable_load_extension(True)
    con.load_extension(extension)
    con.enable_load_extension(False)
    return con


def scalar(con, sql, params=()):
    return con.execute(sql, params).fetchone()[0]


def wait_until(what, condition, timeout=60.0):
    """Checks `condition` every 20 ms until it holds; fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def expect_error(con, sql, params, words):
    """Runs `sql`, which must fail with an SQL error whose text holds every one of `words`."""
    try:
        con.execute(sql, params)
    except sqlite3.Error as e:
        for word in words:
            assert word in str(e), f"{sql!r}: error {str(e)!r} does not say {word!r}"
        return str(e)
    raise AssertionError(f"{sql!r} with {params!r} succeeded; expected an error about {words}")
