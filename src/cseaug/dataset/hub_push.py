"""A published version on the Hugging Face Hub: one commit of its files as published, tagged
with the version, so a download verifies (docs/deployment.md, "Sharing versions").
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cseaug.dataset.verify import verify_version
from cseaug.dataset.versions import MANIFEST_FILE, read_manifest
from cseaug.errors import InputError, require
from cseaug.hashing import file_sha256
from cseaug.progress import progress_enabled
from cseaug.secrets import scrub

KEEP = ".gitattributes"
"""The one file of a repository that is not the version's and stays (the Hub's LFS rules)."""


@dataclass(frozen=True)
class PushResult:
    """What :func:`push_version` did: ``commit`` holds the version, tagged ``tag``."""

    repo: str
    tag: str
    commit: str
    files: int
    pushed: bool
    """False: the tag already held these files, nothing was sent."""


def version_files(version_dir: Path, manifest: dict[str, Any]) -> dict[str, Path]:
    """Path in the repository -> file: every file ``manifest`` lists, and the manifest, once
    they verify (else InputError, and nothing is pushed)."""
    verify_version(version_dir).raise_if_wrong()
    listed = [entry["path"] for entry in manifest["files"]]
    return {path: version_dir / path for path in [*listed, MANIFEST_FILE]}


def write_local_dir(version_dir: Path, out: Path) -> int:
    """Copy the files a push would upload into ``out`` (new or empty); returns their number."""
    files = version_files(version_dir, read_manifest(version_dir))
    if out.exists() and any(out.iterdir()):
        raise InputError(f"--local-dir {out} is not empty: give a new or empty directory")
    for path, source in files.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, out / path)  # writable copies, not the version's 0444 modes
    return len(files)


def push_version(
    version_dir: Path, repo: str, *, private: bool = False, revision: str | None = None
) -> PushResult:
    """Upload a version to the dataset repository ``repo`` in one commit on ``revision``
    (default ``main``) tagged with the version name, with ``huggingface_hub``'s token; an
    InputError names the cause and the fix."""
    hub = require("huggingface_hub", "hf", "cseaug push")
    from huggingface_hub import constants
    from huggingface_hub.utils import disable_progress_bars

    if not progress_enabled():  # no upload bars where cseaug draws none either
        disable_progress_bars()
    manifest = read_manifest(version_dir)
    files = version_files(version_dir, manifest)
    tag, name = manifest["version"], manifest["dataset"]
    if constants.HF_HUB_OFFLINE:
        raise InputError("HF_HUB_OFFLINE is set: unset it to push to the Hub; nothing was pushed")
    api = hub.HfApi()
    if api.token is None and hub.get_token() is None:
        raise InputError(
            "no Hugging Face token: set HF_TOKEN or run `hf auth login` with a token that may "
            f"write to {repo}; nothing was pushed"
        )
    with _hub_failures(repo, api.endpoint):
        api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
        if private and not api.repo_info(repo, repo_type="dataset").private:
            raise InputError(
                f"{repo} exists and is public, and --private was given: make it private on the "
                "Hub first, or push without --private; nothing was pushed"
            )
        refs = api.list_repo_refs(repo, repo_type="dataset")
        tagged = {t.name: t.target_commit for t in refs.tags}
        if tag in tagged:
            if _holds(api, repo, tagged[tag], files):
                return PushResult(repo, tag, tagged[tag], len(files), pushed=False)
            raise InputError(
                f"{repo} already has a tag {tag} on other files (another dataset's {tag}?): "
                "push to another --repo, or delete that tag on the Hub; nothing was pushed"
            )
        branch = revision or "main"
        if branch not in {b.name for b in refs.branches}:
            api.create_branch(repo, branch=branch, repo_type="dataset")
        stale = set(api.list_repo_files(repo, repo_type="dataset", revision=branch))
        stale -= {*files, KEEP}
        operations = [hub.CommitOperationAdd(p, str(f)) for p, f in files.items()]
        operations += [hub.CommitOperationDelete(p) for p in sorted(stale)]
        fingerprint = manifest["fingerprints"]["data"]
        commit = api.create_commit(
            repo, operations, commit_message=f"{name} {tag}", repo_type="dataset", revision=branch,
            commit_description=f"cseaug version {name}/{tag}, data fingerprint {fingerprint}",
        )  # fmt: skip
        api.create_tag(repo, tag=tag, revision=commit.oid, repo_type="dataset")
    return PushResult(repo, tag, commit.oid, len(files), pushed=True)


def _holds(api, repo: str, commit: str, files: dict[str, Path]) -> bool:
    """Whether ``commit`` of ``repo`` holds exactly ``files`` (LFS files by sha256, others by
    their git blob id), besides :data:`KEEP`."""
    from huggingface_hub.hf_api import RepoFile
    from huggingface_hub.utils.sha import git_hash

    remote = {
        entry.path: entry
        for entry in api.list_repo_tree(repo, revision=commit, recursive=True, repo_type="dataset")
        if isinstance(entry, RepoFile) and entry.path != KEEP
    }
    return set(remote) == set(files) and all(
        entry.lfs.sha256 == file_sha256(file)
        if (entry := remote[path]).lfs
        else entry.blob_id == git_hash(file.read_bytes())
        for path, file in files.items()
    )


@contextlib.contextmanager
def _hub_failures(repo: str, endpoint: str) -> Iterator[None]:
    """The Hub's refusals and an unreachable Hub as one InputError line naming the fix."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError

    fixes = {
        401: "the Hub does not accept the token: set HF_TOKEN or run `hf auth login` again",
        403: f"the token may not write to {repo}: use a write token of its owner",
        404: f"{repo} was not found: check --repo (owner/name) and that the token's user may "
        "create it",
        409: f"{repo} changed meanwhile or exists as another kind of repository: push again, "
        "or choose another --repo",
    }
    try:
        yield
    except (HfHubHTTPError, httpx2.TransportError, RuntimeError) as raised:
        exc: BaseException | None = raised  # an LFS upload's error comes in a RuntimeError
        while isinstance(exc, RuntimeError):
            exc = exc.__cause__
        if isinstance(exc, HfHubHTTPError):
            status = exc.response.status_code if exc.response is not None else None
            cause = fixes.get(status, f"the Hub answered: {exc.server_message or exc}")
            raise InputError(
                scrub(f"push to {repo} refused ({status}): {cause}; nothing of the version changed")
            ) from exc
        if not isinstance(exc, httpx2.TransportError):
            raise
        raise InputError(
            scrub(
                f"cannot reach the Hub at {endpoint} ({type(exc).__name__}: {exc}): check the "
                "network or HF_ENDPOINT, then push again; nothing of the version changed"
            )
        ) from exc
