"""Passwords kept out of messages, log lines and serialisations: `redact` (the package's one redaction, for text
a user typed) and `env_secret` (a password serialised by an environment variable's name, never by value)."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
from typing import Any

HIDDEN = "***"
_NAME_KEY = secrets.token_bytes(16)
"""This process's key for `env_secret`'s variable names."""
PLACEHOLDER = "USER:PASSWORD"
"""The userinfo of the help texts' ``postgresql://USER:PASSWORD@HOST…``: shown as it is."""

_PARAMETER = re.compile(
    r"""(?ix)
    (?P<key>[A-Za-z_]*(?:password|passwd|pwd)\s*=\s*)    # password=, PGPASSWORD=, db_pwd = (a query, a DSN)
    (?P<value>'(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?|[^\s&]*)
    """
)
_QUOTED_KEY = re.compile(r"""(?i)(['"])[A-Za-z_]*(?:password|passwd|pwd)\1\s*:\s*""")
"""A dict's or JSON's password key: `'password': ` (its quoted value is hidden)."""
_SPACED = re.compile(r"""([A-Za-z][\w+.-]*://[^\s/@:]*:)(?!\d*(?:[/?#"'\s]|$))[^@\n]{0,100}@""")
"""scheme://USER:PASSWORD@ where the password holds white space (libpq quotes such a URI in its error)."""
_LIBPQ_PART = re.compile(r'((?:unexpected spaces found in|invalid percent-encoded token:) ")[^"]*"')
"""libpq's errors that quote one part of a URI, which may be its password."""


def redact(text: str) -> str:
    """`text` with every password it holds replaced by ***.

    >>> redact("pgvector:postgresql://me:s3cret@db:5432/x#t")
    'pgvector:postgresql://me:***@db:5432/x#t'
    >>> redact("postgresql://:s3cret@db/x"), redact("postgresql://me:p@ss@db/x")
    ('postgresql://:***@db/x', 'postgresql://me:***@db/x')
    >>> redact("postgresql://db/x?sslmode=require&password=s3cret"), redact("host=db password='a b' user=me")
    ('postgresql://db/x?sslmode=require&password=***', 'host=db password=*** user=me')
    >>> redact('no store at "postgresql://me:a b@db/x"')  # a password with a space
    'no store at "postgresql://me:***@db/x"'
    >>> redact("use pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB")  # the help texts' placeholder
    'use pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB'
    >>> redact('unexpected spaces found in "s3c ret", use percent-encoded spaces (%20) instead')  # libpq's
    'unexpected spaces found in "***", use percent-encoded spaces (%20) instead'
    >>> redact("no table 'docs' in postgresql://me@db/x")  # no password: unchanged
    "no table 'docs' in postgresql://me@db/x"
    """
    if not isinstance(text, str):
        text = str(text)
    text = _LIBPQ_PART.sub(lambda m: f'{m.group(1)}{HIDDEN}"', text)
    text = _SPACED.sub(lambda m: m.group(0) if m.group(0).endswith(f"//{PLACEHOLDER}@") else m.group(1) + HIDDEN + "@",
                       text)
    text = re.sub(r"\S+", _redact_token, text)
    return _redact_parameters(text)


def _redact_token(match: re.Match[str]) -> str:
    """One white-space-free token: the userinfo of a URI (or of a malformed one) hidden up to its last '@'."""
    token = match.group(0)
    at = token.rfind("@")
    if at < 0:
        return token
    head, tail = token[:at], token[at:]
    scheme = head.find("://")
    if scheme >= 0:  # scheme://USER:PASSWORD@HOST: the user stays, the password goes
        start = scheme + 3
        colon = head.find(":", start)
        if head[start:] == PLACEHOLDER:
            return token
        return token if colon < 0 else head[:colon + 1] + HIDDEN + tail
    colon = head.find(":")  # a malformed URI (postgresql:/u:pw@h, u:pw@h): everything after its first ':'
    return token if colon < 0 else head[:colon + 1] + HIDDEN + tail


def _redact_parameters(text: str) -> str:
    return _hide_quoted_values(_PARAMETER.sub(lambda m: m.group("key") + HIDDEN, text))


def _hide_quoted_values(text: str) -> str:
    """`'password': 'value'` (a dict's repr, JSON): the value, up to its closing quote."""
    out, pos = [], 0
    for match in _QUOTED_KEY.finditer(text):
        if match.start() < pos:
            continue
        end = match.end()
        value_quote = text[end:end + 1]
        if value_quote not in ("'", '"'):
            continue
        close = end + 1
        while close < len(text) and text[close] != value_quote:
            close += 2 if text[close] == "\\" else 1
        out += [text[pos:end], value_quote, HIDDEN, value_quote]
        pos = min(close + 1, len(text))
    out.append(text[pos:])
    return "".join(out)


def env_secret(value: str, prefix: str) -> Any:
    """A Haystack `Secret` of an environment variable holding `value`, named `prefix` + a keyed hash (the name
    tells nothing of the value): it serialises by that name, never by value.

    >>> secret = env_secret("pgvector:postgresql://me:pw@db/x", "CFRAG_DOCTEST")
    >>> secret.to_dict()["env_vars"][0].startswith("CFRAG_DOCTEST_"), secret.resolve_value().endswith("@db/x")
    (True, True)
    """
    from haystack.utils import Secret  # noqa: PLC0415

    var = f"{prefix}_" + hmac.new(_NAME_KEY, value.encode(), hashlib.sha256).hexdigest()[:10].upper()
    os.environ[var] = value
    return Secret.from_env_var(var)


class RedactingFilter(logging.Filter):
    """A logging filter that passes every record with its message (and traceback text) redacted."""

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: A003  (logging's name)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001  (a record whose arguments do not format: left to the handler)
            return True
        shown = redact(message)
        if shown != message:
            record.msg, record.args = shown, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


_FILTER = RedactingFilter()


def install_log_redaction(*loggers: str) -> None:
    """Redact every record the root logger's handlers (and the last-resort one) and the named loggers write."""
    handlers = [*logging.getLogger().handlers, *([logging.lastResort] if logging.lastResort else [])]
    for target in [*handlers, *(logging.getLogger(name) for name in loggers)]:
        if _FILTER not in target.filters:
            target.addFilter(_FILTER)


__all__ = ["HIDDEN", "RedactingFilter", "env_secret", "install_log_redaction", "redact"]
