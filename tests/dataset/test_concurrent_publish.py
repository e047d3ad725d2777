"""Two (or more) builds publishing the same dataset at once get distinct, intact versions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from cseaug.dataset import versions
from cseaug.dataset.reader import read_rows

BUILD = textwrap.dedent(
    """
    import json, sys, time
    from cseaug.config import RunConfig
    from cseaug.dataset.manifest import build_manifest
    from cseaug.dataset.schema import rows_table, row_id
    from cseaug.dataset.staging import publish_version

    root, tag, start_file = sys.argv[1], sys.argv[2], sys.argv[3]
    cfg = RunConfig.model_validate({"name": "demo", "method": "osscse", "corpus": {"path": "c.txt"}})
    manifest = build_manifest(cfg, extra={"tag": tag})

    def rows():
        while not __import__("os").path.exists(start_file):  # start every build together
            time.sleep(0.01)
        for b in range(20):
            time.sleep(0.02)  # slow writers, so that the staging phases overlap
            yield rows_table(
                {"id": row_id(tag, f"{b}-{i}"), "sentence": f"{tag} sentence {b}-{i}", "split": "other"}
                for i in range(50)
            )

    published = publish_version(rows(), [], root=root, name="demo", manifest=manifest, rows_per_file=300)
    print(json.dumps({"tag": tag, "version": published.version}))
    """
)


def test_concurrent_builds_get_distinct_intact_versions(tmp_path: Path) -> None:
    start = tmp_path / "go"
    env = {**os.environ, "CSEAUG_PROGRESS": "0"}
    tags = ["alpha", "beta", "gamma"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BUILD, str(tmp_path), tag, str(start)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for tag in tags
    ]
    start.touch()
    results = [json.loads(p.communicate(timeout=180)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    by_version = {r["version"]: r["tag"] for r in results}
    assert sorted(by_version) == ["v0001", "v0002", "v0003"]
    assert versions.list_versions(tmp_path, "demo") == ["v0001", "v0002", "v0003"]
    for version, tag in by_version.items():
        version_dir = tmp_path / "datasets" / "demo" / version
        sentences = read_rows(version_dir, ["sentence"]).column("sentence").to_pylist()
        assert len(sentences) == 1000 and all(s.startswith(f"{tag} ") for s in sentences)
        manifest = versions.read_manifest(version_dir)
        assert manifest["version"] == version and manifest["extra"]["tag"] == tag
    dataset = tmp_path / "datasets" / "demo"
    assert not [p for p in dataset.iterdir() if p.name.startswith(".staging-")]
    assert (dataset / "latest").read_text().strip() in by_version
