"""fleet.certs.make_certs called from Python (not only `osbench fleet certs --days`) refuses a validity the
certificate's date cannot hold (N13: 1e9 days raised OverflowError from datetime) in one line, writing nothing."""
import datetime as dt

import pytest

from osbench_analysis.errors import OsbenchError
from osbench_analysis.fleet import certs as fleet_certs


@pytest.mark.parametrize("days", [10**9, 36_501, 0, -5, True, 2.5, "30"])
def test_make_certs_refuses_days_out_of_range_in_one_line_and_writes_nothing(tmp_path, days):
    out = tmp_path / "tls"
    with pytest.raises(OsbenchError, match=r"days must be a whole number from 1 to 36500") as got:
        fleet_certs.make_certs(["h1"], out, "127.0.0.1", days=days)
    assert "\n" not in str(got.value)
    assert not out.exists()


def test_the_longest_validity_allowed_is_written(tmp_path):
    from cryptography import x509

    made = fleet_certs.make_certs(["h1"], tmp_path / "tls", "127.0.0.1", days=36_500)
    cert = x509.load_pem_x509_certificate(made.files("h1").cert.read_bytes())
    lasts = cert.not_valid_after_utc - dt.datetime.now(dt.timezone.utc)
    assert abs(lasts - dt.timedelta(days=36_500)) < dt.timedelta(minutes=10)
