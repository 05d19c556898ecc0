"""A fleet campaign's proof of origin: the measuring host's Ed25519 signature over its seal.

`SHA256SUMS` (the seal) holds the sha256 of `manifest.json` and `samples.parquet`; it is an
unkeyed checksum, so it detects accidents (a flipped bit, a truncated or swapped file), not a
forger, who can rewrite a file and its checksum alike.  A fleet host therefore signs, with the
private key of its own certificate (`osbench fleet certs`: DIR/<host>/key.pem), the campaign id
and the seal; the client stores the campaign only if the signature holds and the certificate is
the fleet's (its CA, the host role, the host it asked), and keeps the signature beside the seal
as `SIGNATURE.json`:

    {"format": 1, "campaign_id": ..., "signer": "<host>", "certificate": "<PEM>",
     "signature": "<base64 Ed25519 signature of CONTEXT + campaign id + newline + SHA256SUMS>"}

Every load checks it again (store.campaigns.verify_seal): a signed campaign whose seal no longer
matches its signature is refused.  What a signature proves: whoever holds the key of that
certificate signed these exact bytes.  That the certificate is the fleet's is checked when the
campaign is stored (`signer_of(..., ca=...)`) and by `osbench verify --ca`; someone who can write
the folder can replace the certificate and the signature with his own, which only the CA check
exposes.  A campaign measured here, without a fleet, has no signature: "unsigned (local)".
"""
from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

SIGNATURE_FILE = "SIGNATURE.json"
#: the organizational unit (OU) of a measuring host's certificate (fleet/certs.py makes them)
SIGNER_ROLE = "host"
#: domain separation: these bytes start every signed message, so a campaign signature can never
#: be taken for a signature of anything else made with the same key (TLS signs other contexts)
CONTEXT = b"osbench campaign signature v1\n"


class SignatureError(ValueError):
    """A signature that does not hold; store.campaigns turns it into CampaignCorrupted."""


def message(campaign_id: str, seal: bytes) -> bytes:
    return CONTEXT + campaign_id.encode() + b"\n" + seal


def _subject(cert, oid) -> str | None:
    values = cert.subject.get_attributes_for_oid(oid)
    return str(values[0].value) if len(values) == 1 else None


def certificate_identity(cert) -> tuple[str | None, str | None]:
    """(role, name) of a certificate `osbench fleet certs` made: its OU and CN."""
    from cryptography.x509.oid import NameOID

    return _subject(cert, NameOID.ORGANIZATIONAL_UNIT_NAME), _subject(cert, NameOID.COMMON_NAME)


def sign(campaign_id: str, seal: bytes, key_pem: bytes, cert_pem: bytes) -> dict:
    """The signature record of a campaign, made with a host's key and certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ed25519
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    key = load_pem_private_key(key_pem, password=None)
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise SignatureError("a campaign is signed with an Ed25519 key (`osbench fleet certs` makes them); "
                             f"got a {type(key).__name__}")
    cert = x509.load_pem_x509_certificate(cert_pem)
    if cert.public_key().public_bytes_raw() != key.public_key().public_bytes_raw():
        raise SignatureError("the signing key is not the certificate's")
    role, name = certificate_identity(cert)
    return {"format": 1, "campaign_id": campaign_id, "signer": name, "role": role,
            "certificate": cert_pem.decode(), "signature": base64.b64encode(key.sign(message(campaign_id, seal))).decode()}


def signer_of(record, campaign_id: str, seal: bytes, ca_pem: bytes | None = None, host: str | None = None) -> str:
    """The host that signed `seal` of `campaign_id` (the certificate's CN); SignatureError unless
    the record is well formed, the signature holds for these bytes under its certificate, the
    certificate is a host's -- and, given ca_pem, issued by that CA and valid now, and, given
    host, that host's."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import ed25519

    if not isinstance(record, dict) or record.get("format") != 1 or not all(
            isinstance(record.get(k), str) for k in ("campaign_id", "certificate", "signature")):
        raise SignatureError("the signature record is not one osbench writes")
    if record["campaign_id"] != campaign_id:
        raise SignatureError(f"the signature is for campaign {record['campaign_id']!r}, not {campaign_id!r}")
    try:
        cert = x509.load_pem_x509_certificate(record["certificate"].encode())
        raw = base64.b64decode(record["signature"], validate=True)
    except ValueError as e:
        raise SignatureError(f"the signature record is damaged: {e}") from None
    key = cert.public_key()
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise SignatureError("the signing certificate's key is not Ed25519")
    try:
        key.verify(raw, message(campaign_id, seal))
    except InvalidSignature:
        raise SignatureError("signature does not match: the campaign's seal is not what its signer signed") from None
    role, name = certificate_identity(cert)
    if role != SIGNER_ROLE or not name:
        raise SignatureError(f"signed with a {role or 'role-less'} certificate ({name!r}), not a measuring host's")
    if ca_pem is not None:
        ca = x509.load_pem_x509_certificate(ca_pem)
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            raise SignatureError(f"the signing certificate of {name!r} is not issued by the fleet's CA") from None
        now = dt.datetime.now(dt.timezone.utc)
        if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
            raise SignatureError(f"the signing certificate of {name!r} is not valid now "
                                 f"({cert.not_valid_before_utc:%Y-%m-%d} to {cert.not_valid_after_utc:%Y-%m-%d})")
    if host is not None and name != host:
        raise SignatureError(f"signed by host {name!r}, not by {host!r} that was asked")
    return name


def read(folder: Path):
    """The folder's signature record, or None for an unsigned campaign."""
    path = Path(folder) / SIGNATURE_FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise SignatureError(f"{path} is damaged: {e}") from None


def status(folder: Path, campaign_id: str, seal: bytes, ca_pem: bytes | None = None) -> str:
    """"signed by host X" or "unsigned (local)"; SignatureError ("signature does not match", ...)."""
    record = read(folder)
    if record is None:
        return "unsigned (local)"
    return f"signed by host {signer_of(record, campaign_id, seal, ca_pem)}"


def to_text(record: dict) -> str:
    return json.dumps(record, indent=1, sort_keys=True) + "\n"
