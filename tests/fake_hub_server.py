"""The part of the Hugging Face Hub's HTTP API that ``cseaug push`` makes ``huggingface_hub``
call, on 127.0.0.1, for tests that point ``HF_ENDPOINT`` at it.

Implemented from the client's requests (``huggingface_hub`` 2.4: ``hf_api.py``,
``_commit_api.py``, ``lfs.py``): repo create, repo info, refs, tree, branch, YAML validation,
preupload (LFS for ``.parquet`` and ``.png`` files, as the Hub's default ``.gitattributes``
has it; each file's ``oid`` where it exists, which the client compares to skip unchanged
files), the LFS batch and its basic PUT transfer (the client speaks Xet instead when the Hub
offers it and ``hf_xet`` is installed: tests set ``HF_HUB_DISABLE_XET=1``), commit (NDJSON;
an LFS file must have been uploaded) and tag. Anything else is a 404, so a call the fake does
not know fails the test. Every request is recorded, with each commit's files and each tag.

A test writes ``with FakeHub(token="hf_test") as hub:`` and sets ``HF_ENDPOINT=hub.url``;
``hub.refuse = {"/commit/": 409}`` answers 409 to every request whose path holds
``/commit/`` (``{"/": 403}``: to every request).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".parquet", ".png")
GITATTRIBUTES = (
    b"*.parquet filter=lfs diff=lfs merge=lfs -text\n*.png filter=lfs diff=lfs merge=lfs -text\n"
)


def git_blob_id(data: bytes) -> str:
    """Git's object id of a blob (what the Hub returns as a regular file's ``oid``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Repo:
    """One dataset repository: commits (oid -> {path: bytes}), branches and tags (-> oid)."""

    private: bool
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def resolve(self, rev: str) -> dict[str, bytes] | None:
        oid = self.branches.get(rev) or self.tags.get(rev) or rev
        return self.commits.get(oid)


@dataclass(frozen=True)
class Commit:
    """A commit the fake received: repository, branch, files added and deleted."""

    repo: str
    branch: str
    oid: str
    added: tuple[str, ...]
    deleted: tuple[str, ...]


class FakeHub:
    """The fake Hub in a background thread; ``url`` is its ``HF_ENDPOINT``."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.refuse: dict[str, int] = {}
        self.repos: dict[str, Repo] = {}
        self.lfs: dict[str, bytes] = {}
        self._issued: set[str] = set()
        self.requests: list[tuple[str, str]] = []
        self.commits: list[Commit] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def files(self, repo: str, rev: str) -> dict[str, bytes]:
        """The files of ``repo`` at a branch, tag or commit."""
        return dict(self.repos[repo].resolve(rev) or {})

    def _commit(self, repo: Repo, files: dict[str, bytes]) -> str:
        oid = hashlib.sha1(
            json.dumps(sorted((p, git_blob_id(b)) for p, b in files.items())).encode()
        )
        oid.update(str(len(self.commits) + len(repo.commits)).encode())  # a new commit, new id
        repo.commits[oid.hexdigest()] = files
        return oid.hexdigest()

    # -- the API ----------------------------------------------------------------------------
    def handle(self, method: str, path: str, body: bytes, auth: str | None) -> tuple[int, Any]:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if method == "PUT" and parts[0] == "lfs-upload":  # a presigned URL: no token
            if parts[1] not in self._issued or hashlib.sha256(body).hexdigest() != parts[1]:
                return 403, {"error": "not an upload URL this server issued, or other bytes"}
            with self._lock:
                self.lfs[parts[1]] = body
            return 200, {}
        if auth != f"Bearer {self.token}":
            return 401, {"error": "Invalid credentials in Authorization header"}
        for fragment, status in self.refuse.items():
            if fragment in path:
                return status, {"error": f"refused with {status} by the test"}
        with self._lock:
            if method == "POST" and parts == ["api", "repos", "create"]:
                return self._create(json.loads(body))
            if method == "POST" and parts == ["api", "validate-yaml"]:
                return 200, {}
            if parts[0] == "datasets" and len(parts) >= 3 and parts[2].endswith(".git"):
                return self._lfs_batch("/".join([parts[1], parts[2][:-4]]), json.loads(body))
            if parts[:2] != ["api", "datasets"] or len(parts) < 4:
                return 404, {"error": f"not implemented: {method} {path}"}
            name, rest = f"{parts[2]}/{parts[3]}", parts[4:]
            repo = self.repos.get(name)
            if repo is None:
                return 404, {"error": "Repository not found"}
            return self._repo_call(method, name, repo, rest, body)

    def _create(self, payload: dict[str, Any]) -> tuple[int, Any]:
        name = (
            f"{payload['organization']}/{payload['name']}"
            if payload.get("organization")
            else payload["name"]
        )
        if payload.get("type") != "dataset":
            return 400, {"error": "only dataset repositories here"}
        if name in self.repos:  # with its url, which the client reads under exist_ok
            return 409, {"error": "You already created this dataset repo", "url": self._url(name)}
        repo = Repo(private=payload.get("visibility") == "private")
        repo.branches["main"] = self._commit(repo, {".gitattributes": GITATTRIBUTES})
        self.repos[name] = repo
        return 200, {"url": self._url(name), "name": name}

    def _url(self, name: str) -> str:
        return f"{self.url}/datasets/{name}"

    def _lfs_batch(self, name: str, payload: dict[str, Any]) -> tuple[int, Any]:
        objects = []
        for obj in payload["objects"]:
            entry = {"oid": obj["oid"], "size": obj["size"]}
            if obj["oid"] not in self.lfs:  # already stored: no action, the client skips it
                self._issued.add(obj["oid"])
                entry["actions"] = {"upload": {"href": f"{self.url}/lfs-upload/{obj['oid']}"}}
            objects.append(entry)
        return 200, {"transfer": "basic", "objects": objects}

    def _repo_call(
        self, method: str, name: str, repo: Repo, rest: list[str], body: bytes
    ) -> tuple[int, Any]:
        if method == "GET" and not rest:
            head = repo.branches["main"]
            return 200, {"id": name, "private": repo.private, "sha": head}
        if method == "GET" and rest == ["refs"]:

            def refs(d: dict[str, str], kind: str) -> list[dict[str, str]]:
                return [
                    {"name": k, "ref": f"refs/{kind}/{k}", "targetCommit": v} for k, v in d.items()
                ]

            return 200, {
                "branches": refs(repo.branches, "heads"),
                "converts": [],
                "tags": refs(repo.tags, "tags"),
            }
        if method == "GET" and rest[0] == "tree":
            files = repo.resolve(rest[1])
            if files is None:
                return 404, {"error": "Invalid rev id"}
            return 200, [_tree_entry(path, data) for path, data in sorted(files.items())]
        if method == "POST" and rest[0] == "branch":
            if rest[1] in repo.branches:
                return 409, {"error": "Reference already exists"}
            repo.branches[rest[1]] = repo.branches["main"]
            return 200, {}
        if method == "POST" and rest[0] == "preupload":
            files = repo.resolve(rest[1]) or {}
            answer = []
            for item in json.loads(body)["files"]:
                lfs = item["path"].endswith(LFS_SUFFIXES)
                entry = {
                    "path": item["path"],
                    "uploadMode": "lfs" if lfs else "regular",
                    "shouldIgnore": False,
                }
                if item["path"] in files:
                    data = files[item["path"]]
                    entry["oid"] = hashlib.sha256(data).hexdigest() if lfs else git_blob_id(data)
                answer.append(entry)
            return 200, {"files": answer}
        if method == "POST" and rest[0] == "commit":
            return self._receive_commit(name, repo, rest[1], body)
        if method == "POST" and rest[0] == "tag":
            tag = json.loads(body)["tag"]
            if tag in repo.tags:
                return 409, {"error": "Tag already exists"}
            oid = repo.branches.get(rest[1], rest[1])
            if oid not in repo.commits:
                return 404, {"error": "Invalid rev id"}
            repo.tags[tag] = oid
            return 200, {}
        return 404, {"error": f"not implemented: {method} {'/'.join(rest)}"}

    def _receive_commit(self, name: str, repo: Repo, branch: str, body: bytes) -> tuple[int, Any]:
        if branch not in repo.branches:
            return 404, {"error": "Invalid rev id"}
        files = dict(repo.commits[repo.branches[branch]])
        added, deleted = [], []
        for line in body.decode().splitlines():
            item = json.loads(line)
            value = item["value"]
            if item["key"] == "file":
                files[value["path"]] = base64.b64decode(value["content"])
                added.append(value["path"])
            elif item["key"] == "lfsFile":
                if value["oid"] not in self.lfs:
                    return 422, {"error": f"LFS object {value['oid']} was never uploaded"}
                files[value["path"]] = self.lfs[value["oid"]]
                added.append(value["path"])
            elif item["key"] == "deletedFile":
                files.pop(value["path"])
                deleted.append(value["path"])
            elif item["key"] != "header":
                return 400, {"error": f"unknown commit line {item['key']}"}
        oid = self._commit(repo, files)
        repo.branches[branch] = oid
        self.commits.append(Commit(name, branch, oid, tuple(added), tuple(deleted)))
        return 200, {"commitUrl": f"{self.url}/datasets/{name}/commit/{oid}", "commitOid": oid}


def _tree_entry(path: str, data: bytes) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": "file",
        "path": path,
        "size": len(data),
        "oid": git_blob_id(data),
    }
    if path.endswith(LFS_SUFFIXES):
        entry["lfs"] = {
            "oid": hashlib.sha256(data).hexdigest(),
            "size": len(data),
            "pointerSize": 130,
        }
    return entry


def _handler_for(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            body = self._body()
            path = urlsplit(self.path).path
            hub.requests.append((self.command, path))
            status, answer = hub.handle(self.command, path, body, self.headers.get("Authorization"))
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0], 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)

        do_GET = do_POST = do_PUT = _serve

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler
