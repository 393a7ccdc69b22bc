"""The canary credentials of the secrets tests: account credential values that match no secret pattern (only
the literal values the redactor reads from the environment catch them), a pattern secret, and a catalog whose
accounts hold them. The `canaries` fixture (conftest.py) puts them in the environment."""

from __future__ import annotations

CANARY_IN_USE = "canary-in-use-7f3a9c1e5b2d"
CANARY_OTHER = "canary-other-account-0c4e8a"
CANARY_PROVIDER = "canary-provider-key-99d1f0"
# Built at runtime so no file holds a secret-shaped literal for a scanner (or `awp run`'s lint) to flag.
PATTERN_SECRET = "sk-ant-" + "api03-" + "Q" * 24
SECRETS = (CANARY_IN_USE, CANARY_OTHER, CANARY_PROVIDER, PATTERN_SECRET)
ENV = {"AWP_TEST_CANARY_IN_USE": CANARY_IN_USE, "AWP_TEST_CANARY_OTHER": CANARY_OTHER,
       "AWP_TEST_PROVIDER_KEY": CANARY_PROVIDER}

# `in-use` is the account a packet names; `other` is in the catalog only: a fallback, an agent or a verifier
# may still print its credential.
PROVIDERS = """\
providers:
  sim-keyed:
    kind: simulated
    credential_env: AWP_TEST_PROVIDER_KEY
    models: ["sim-keyed"]
accounts:
  in-use:
    provider: sim-keyed
    credential_env: AWP_TEST_CANARY_IN_USE
  other:
    provider: sim-keyed
    credential_env: AWP_TEST_CANARY_OTHER
"""
