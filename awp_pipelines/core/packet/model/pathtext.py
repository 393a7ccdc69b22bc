"""`PathText`: a path as written in a packet, refused early when no OS call could take it.

Shared by every on-disk model (manifest, prompt, catalog); it lives in the verifier package because that
package depends on nothing but the stdlib, pydantic and yaml, and its contracts need it too.
"""

from __future__ import annotations

import os
from typing import Annotated

from pydantic import AfterValidator

# Linux's limits: longer names make every os call raise OSError (ENAMETOOLONG) far from where they were
# written. A name may still get a suffix (`NAME.md`, `NAME.prompt.md`): leave room for it.
NAME_MAX = 255 - 16
PATH_MAX = 4096 - 256


def check_path_text(value: str) -> str:
    """No NUL, valid text, within the OS's length limits. Containment (no `..` out) is checked where used."""
    if "\0" in value:
        raise ValueError("path contains a NUL character")
    try:
        encoded = os.fsencode(value)
    except UnicodeEncodeError:
        raise ValueError("path is not valid text (a lone surrogate escape)") from None
    if len(encoded) >= PATH_MAX:
        raise ValueError(f"path is longer than {PATH_MAX} bytes")
    longest = max(value.split("/"), key=lambda part: len(os.fsencode(part)))
    if len(os.fsencode(longest)) > NAME_MAX:
        raise ValueError(f"a path component is longer than {NAME_MAX} bytes: {longest[:40]!r}…")
    return value


PathText = Annotated[str, AfterValidator(check_path_text)]
