"""A database outage under `awp run` prints one line as it begins and one as it ends (outage.py): the retry
warnings of dagster-postgres and Dagster's line for each log call the database did not take are kept back."""

from __future__ import annotations

import logging
import sys

import pytest

from awp_pipelines.core.engine import outage
from awp_pipelines.core.engine.outage import LOG_WRITE_FAILED, RETRY_WARNING, quiet_outages


def test_an_outage_is_one_line_when_it_begins_and_one_when_it_ends(capsys: pytest.CaptureFixture[str],
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    said: list[str] = []
    with quiet_outages(said.append):
        for _ in range(5):  # what dagster_postgres logs on each retry of each connection
            logging.warning("%s: %s", RETRY_WARNING, "(psycopg2.OperationalError) connection refused\nmore")
            sys.stderr.write(f"{LOG_WRITE_FAILED}: (psycopg2.OperationalError) server closed the connection\n")
        outage.answered()
        outage.answered()
        logging.warning("%s: %s", RETRY_WARNING, "connection refused")  # a second outage: its own two lines
        outage.answered()
        sys.stderr.write("an ordinary line\n")
    assert said == ["awp run: the instance's database is not answering ((psycopg2.OperationalError) connection "
                    "refused); retrying, this line is said once per outage",
                    "awp run: the instance's database answers again",
                    "awp run: the instance's database is not answering (connection refused); retrying, this line is "
                    "said once per outage",
                    "awp run: the instance's database answers again"]
    err = capsys.readouterr().err
    assert LOG_WRITE_FAILED not in err and "an ordinary line" in err
    assert not [r for r in caplog.records if r.getMessage().startswith(RETRY_WARNING)]
    logging.warning("%s: after", RETRY_WARNING)  # outside `awp run`: Dagster's own words again
    assert [r.getMessage() for r in caplog.records] == [f"{RETRY_WARNING}: after"]
