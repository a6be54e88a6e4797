"""Credential files: the one rule every reader of a path an agent named goes through.

    refuse_credential(path, "dataset")     # InputError when ``path`` is (or links to) a credential file
    allowed = Rules().allows; walk_files(folder, lambda p: keep(p) and allowed(p))   # folders, without them

A credential file is a login or key store that is never data: the Codex / Claude / OpenCode logins
(``auth.json``, ``.credentials.json``), the Hugging Face token (``~/.cache/huggingface/token``, ``HF_HOME``'s,
``stored_tokens``), ``~/.aws``, ``~/.ssh``, ``~/.gnupg``, ``.env`` and ``.env.*``, ``.netrc``, ``.git-credentials``,
``.npmrc``, ``.pypirc``, ``.pgpass``, gh's ``hosts.yml``, Docker's ``config.json``, ``~/.kube/config``, gcloud's
folder, ``/etc/shadow`` and its kin, a process's ``/proc/<pid>/`` files (environment, memory) and the tunepack
home's approval folder (quotes and the budget). The path is checked as given and after resolving links, so a
link to ``auth.json`` — or a folder link to ``~/.ssh`` — is refused too.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import settings
from .errors import InputError

# file names that are credentials wherever they are
NAMES = {
    ".env": "an environment file", ".netrc": "a .netrc login file", "_netrc": "a .netrc login file",
    ".git-credentials": "git's stored credentials", ".npmrc": "npm's login file", ".pypirc": "PyPI's login file",
    ".pgpass": "PostgreSQL's password file", "auth.json": "a coding agent's login (Codex, OpenCode, Pi)",
    ".credentials.json": "Claude Code's login", "credentials.json": "a credentials file",
    "application_default_credentials.json": "Google Cloud credentials", "credentials": "a credentials file",
    "stored_tokens": "Hugging Face's stored tokens",
    **{key: "an SSH private key" for key in ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk",
                                              "id_ed25519_sk")},
}
# folders and files under the home folder
HOME_FOLDERS = {".ssh": "the SSH folder", ".gnupg": "the GnuPG folder", ".aws": "the AWS credentials folder",
                ".config/gcloud": "Google Cloud's credentials folder", ".azure": "Azure's credentials folder"}
HOME_FILES = {".cache/huggingface/token": "the Hugging Face token", ".huggingface/token": "the Hugging Face token",
              ".docker/config.json": "Docker's login file", ".kube/config": "the Kubernetes login file",
              ".config/gh/hosts.yml": "the GitHub CLI's login file"}
# where the name rules' files usually are: checked by inode too, so a hard link under another name is refused
KNOWN_FILES = (".codex/auth.json", ".claude/.credentials.json", ".local/share/opencode/auth.json",
               ".pi/agent/auth.json", ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass", ".aws/credentials",
               ".ssh/id_rsa", ".ssh/id_ecdsa", ".ssh/id_ed25519", ".env")
SYSTEM_FILES = {"/etc/shadow": "the password hashes", "/etc/shadow-": "the password hashes",
                "/etc/gshadow": "the group password hashes", "/etc/gshadow-": "the group password hashes"}
PROCESS_PREFIXES = ("self", "thread-self")
FIX = ("point at the dataset, config or folder you mean. tunepack finds the Hugging Face login itself (`hf auth "
       "login` or HF_TOKEN) and never needs a token file; a folder that holds a credential file is read without it.")


def _forms(path: str | os.PathLike) -> list[Path]:
    """The path as given (absolute, '..' folded) and with every link resolved."""
    given = Path(os.path.abspath(Path(path).expanduser()))
    try:
        real = given.resolve()
    except (OSError, RuntimeError):  # a link loop: the given form still decides
        real = given
    return list(dict.fromkeys([given, real]))


def _folded(path: Path) -> Path:
    """Compared case-folded: on a case-insensitive disk (macOS, Windows) ~/.SSH is ~/.ssh."""
    return Path(str(path).lower())


def _both(paths: dict[Path, str]) -> dict[Path, str]:
    """Each rule path as written and with its links resolved (a home that is a link matches either way)."""
    return {_folded(form): label for path, label in paths.items() for form in _forms(path)}


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def _exact_files() -> dict[Path, str]:
    from huggingface_hub import constants

    home = Path.home()
    files = {home / rel: label for rel, label in HOME_FILES.items()}
    files.update({Path(p): label for p, label in SYSTEM_FILES.items()})
    files[settings.hf_home() / "token"] = files[Path(constants.HF_TOKEN_PATH)] = "the Hugging Face token"
    return files


class Rules:
    """The rule's folders, files and inodes, worked out once (a folder walk checks thousands of paths with one)."""

    def __init__(self) -> None:
        home = Path.home()
        folders = {home / rel: label for rel, label in HOME_FOLDERS.items()}
        folders[settings.home_root() / "approval"] = "tunepack's approval folder (quotes and budget)"
        files = _exact_files()
        self.folders, self.files = _both(folders), _both(files)
        known = [*files, *(home / rel for rel in KNOWN_FILES)]
        self.inodes = {ino: "a hard link to a credential file" for p in known if (ino := _inode(p)) is not None}

    def _kind(self, form: Path) -> str | None:
        folded = _folded(form)
        name = folded.name
        if name in NAMES:
            return NAMES[name]
        if name.startswith(".env."):
            return NAMES[".env"]
        if folded in self.files:
            return self.files[folded]
        parts = folded.parts
        if len(parts) > 2 and parts[:2] == ("/", "proc") and (parts[2].isdigit() or parts[2] in PROCESS_PREFIXES):
            return "a process's environment or memory (/proc)"
        return next((label for folder, label in self.folders.items()
                     if folded == folder or folder in folded.parents), None)

    def kind(self, path: str | os.PathLike) -> str | None:
        """What credential ``path`` is (e.g. "the SSH folder"), or None when it is not one."""
        forms = _forms(path)
        found = next((kind for form in forms if (kind := self._kind(form))), None)
        if found is None and self.inodes and (ino := _inode(forms[-1])) is not None:
            found = self.inodes.get(ino)
        return found

    def allows(self, path: str | os.PathLike) -> bool:
        return self.kind(path) is None


def credential_kind(path: str | os.PathLike) -> str | None:
    return Rules().kind(path)


def is_credential(path: str | os.PathLike) -> bool:
    return credential_kind(path) is not None


def refuse_credential(path: str | os.PathLike, what: str = "path") -> Path:
    """``path`` unchanged, or InputError when it is (or leads to) a credential file or folder."""
    kind = credential_kind(path)
    if kind is None:
        return Path(path)
    forms = _forms(path)
    link = f" (a link to {forms[-1]})" if len(forms) > 1 and forms[-1] != Path(path) else ""
    raise InputError(f"The {what} '{path}'{link} is a credential file ({kind}); tunepack does not read credential "
                     "files.", FIX)
