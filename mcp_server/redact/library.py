"""The detector patterns of detect-secrets (Yelp), run in-process on a string.

Only the plugins' ``denylist`` regular expressions are used, matched with ``finditer`` so that each secret's
place in the text is known (the plugins' ``analyze_string`` yields values only, and for GitHub and GitLab just
the prefix). No baseline, settings or file machinery is involved, and nothing here calls a plugin's ``verify``
or ``analyze_line`` — the code paths that send a found secret over the network to check it. The library is
imported on first use, so a process that never scans pays nothing for it.

Per plugin: our kind name, the anchors (lower-case substrings) without which it cannot match, whether the
secret is the pattern's longest group or the whole match, which characters a match is extended over (the
library's Stripe and JWT patterns stop short of the token's end), and an extra check where one is needed.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

from .values import not_placeholder, random_enough


class Plugin(NamedTuple):
    module: str
    name: str
    kind: str | Callable[[str], str]
    anchors: tuple[str, ...]
    group: bool = False  # the secret is the pattern's longest group (else the whole match)
    tail: str = ""  # characters the match is extended over to its right
    check: Callable[[str], bool] | None = None
    after: str = ""  # the secret starts after this text of the match (``AccountKey=``)
    gate: re.Pattern[str] | None = None  # a cheap search that must succeed before the plugin's patterns run
    also: tuple[str, ...] = ()  # ... and one of these anchors must occur too
    patterns: tuple[int, ...] = ()  # which of the plugin's patterns (default: all)


def _slack_kind(value: str) -> str:
    return "slack_webhook" if value.lower().startswith("https://hooks") else "slack_token"


def _jwt_valid(value: str) -> bool:
    from detect_secrets.plugins.jwt import JwtTokenDetector

    return bool(JwtTokenDetector.is_formally_valid(value.rstrip(".")))


ALNUM = "A-Za-z0-9"
IBM = ("ibm_", "ibm-", "ibmcloud", "ibm cloud")
PLUGINS = (
    Plugin("aws", "AWSKeyDetector", "aws_access_key", ("akia", "asia", "abia", "acca", "a3t"), tail="A-Z0-9",
           patterns=(0,)),
    Plugin("aws", "AWSKeyDetector", "aws_secret_key", ("aws",), group=True, patterns=(1,),
           also=("_key", "-key", "accesskey", "secretkey", "token", "pass", "pwd")),
    Plugin("jwt", "JwtTokenDetector", "jwt", ("eyj",), tail=ALNUM + "_.+/=-", check=_jwt_valid),
    Plugin("slack", "SlackDetector", _slack_kind,
           ("xoxa-", "xoxb-", "xoxo-", "xoxp-", "xoxr-", "xoxs-", "hooks.slack.com"), tail=ALNUM + "-"),
    Plugin("stripe", "StripeDetector", "stripe_key", ("k_live_",), tail=ALNUM),
    Plugin("basic_auth", "BasicAuthDetector", "url_password", ("://",), group=True, check=not_placeholder),
    Plugin("github_token", "GitHubTokenDetector", "github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
           tail=ALNUM),
    Plugin("gitlab_token", "GitLabTokenDetector", "gitlab_token",
           ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941", "glcbt-", "glimt-", "glptt-", "glagent-",
            "gloas-")),
    Plugin("openai", "OpenAIDetector", "openai_key", ("t3blbkfj",), tail=ALNUM),
    Plugin("pypi_token", "PypiTokenDetector", "pypi_token", ("pypi-",), tail=ALNUM + "_-"),
    Plugin("sendgrid", "SendGridDetector", "sendgrid_key", ("sg.",), tail=ALNUM + "_-"),
    Plugin("square_oauth", "SquareOAuthDetector", "square_secret", ("sq0csp-",)),
    Plugin("azure_storage_key", "AzureStorageKeyDetector", "azure_storage_key", ("accountkey",), after="="),
    Plugin("mailchimp", "MailchimpDetector", "mailchimp_key", ("-us",), gate=re.compile(r"-us\d")),
    Plugin("npm", "NpmDetector", "npm_token", ("_authtoken",), group=True),
    Plugin("discord", "DiscordBotTokenDetector", "discord_token", ("discord", "bot_token", "bottoken", "bot-token")),
    Plugin("telegram_token", "TelegramBotTokenDetector", "telegram_token",
           ("telegram", "bot_token", "bottoken", "bot-token")),
    Plugin("twilio", "TwilioKeyDetector", "twilio_key", ("twilio",)),
    Plugin("artifactory", "ArtifactoryDetector", "artifactory_token", ("akcp", "artifactory", "jfrog")),
    Plugin("ibm_cloud_iam", "IbmCloudIamDetector", "ibm_cloud_key", IBM + ("cloud_iam", "cloud-iam", "cloudiam"),
           group=True, check=random_enough),
    Plugin("ibm_cos_hmac", "IbmCosHmacDetector", "ibm_cloud_key", IBM + ("cos_hmac", "cos-hmac", "coshmac"),
           group=True, check=random_enough),
    Plugin("softlayer", "SoftlayerDetector", "softlayer_key", ("softlayer",), group=True, check=random_enough),
    Plugin("cloudant", "CloudantDetector", "cloudant_key", ("cloudant",), group=True, check=random_enough),
)
KINDS = ("aws_access_key", "aws_secret_key", "jwt", "slack_token", "slack_webhook", "stripe_key", "url_password",
         "github_token", "gitlab_token", "openai_key", "pypi_token", "sendgrid_key", "square_secret",
         "azure_storage_key", "mailchimp_key", "npm_token", "discord_token", "telegram_token", "twilio_key",
         "artifactory_token", "ibm_cloud_key", "softlayer_key", "cloudant_key")
TRIM = " \t\r\n\"'=:"


@functools.cache
def _denylist(plugin: Plugin) -> tuple[re.Pattern[str], ...]:
    detector = getattr(importlib.import_module(f"detect_secrets.plugins.{plugin.module}"), plugin.name)
    patterns = tuple(detector.denylist)
    return tuple(patterns[i] for i in plugin.patterns) if plugin.patterns else patterns


@functools.cache
def _tail(chars: str) -> re.Pattern[str] | None:
    return re.compile(f"[{chars}]*") if chars else None


def _span(plugin: Plugin, match: re.Match[str], text: str) -> tuple[int, int]:
    """Where the secret of one match is: its longest group, or the whole match less the pattern's boundary
    characters, extended over the plugin's token characters."""
    if plugin.group and match.re.groups:
        best = max(range(1, match.re.groups + 1), key=lambda g: len(match.group(g) or ""))
        if match.group(best):
            return match.span(best)
    start, end = match.span()
    if plugin.after and plugin.after in match.group():
        start += match.group().index(plugin.after) + len(plugin.after)
    while start < end and text[start] in TRIM:
        start += 1
    while end > start and text[end - 1] in TRIM:
        end -= 1
    tail = _tail(plugin.tail)
    if tail is not None:
        end = tail.match(text, end).end()  # type: ignore[union-attr]
        while end > start and text[end - 1] == ".":  # a sentence's full stop after a JWT
            end -= 1
    return start, end


def find(text: str, hits: set[str]) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of every secret the library's patterns find in ``text``, for the plugins whose anchors
    are among ``hits``."""
    for plugin in PLUGINS:
        if hits.isdisjoint(plugin.anchors) or (plugin.also and hits.isdisjoint(plugin.also)):
            continue
        if plugin.gate and not plugin.gate.search(text):
            continue
        for pattern in _denylist(plugin):
            for match in pattern.finditer(text):
                start, end = _span(plugin, match, text)
                value = text[start:end]
                if end <= start or not not_placeholder(value) or (plugin.check and not plugin.check(value)):
                    continue
                kind = plugin.kind if isinstance(plugin.kind, str) else plugin.kind(value)
                yield start, end, kind
