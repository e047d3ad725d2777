"""Published versions are immutable in fact and verified on every read (issue 9 items 1-3).

The attacks of the issue, as a careless user or an attacker makes them: an export written
over a version's data file or manifest, every other command that writes a chosen path
aimed into a version, a row rewritten or a byte flipped after publishing, a symlinked
staging entry pointing out of the root, stray folders named like versions.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cseaug.api import open_version
from cseaug.cli import main
from cseaug.dataset import versions
from cseaug.dataset.reader import iter_batches
from cseaug.dataset.staging import PublishedVersion, publish_version
from cseaug.errors import InputError
from cseaug.pipeline.run import BuildRun
from tests.reliability.attack_tools import REPO, run_cseaug

pytestmark = pytest.mark.reliability

DATA_FILE = "data/train-00000-of-00001.parquet"


def snapshot(version_dir: Path) -> dict[str, bytes]:
    """Every file of a version and its bytes."""
    return {
        p.relative_to(version_dir).as_posix(): p.read_bytes()
        for p in sorted(version_dir.rglob("*"))
        if p.is_file()
    }


def diagnostics(staging: Path) -> None:
    (staging / "diagnostics").mkdir()
    (staging / "diagnostics" / "summary.json").write_text('{"rows": 30}\n', encoding="utf-8")


@pytest.fixture
def published(tmp_path: Path, manifest, rows_factory) -> PublishedVersion:
    """``demo/v0001`` under ``tmp_path/storage``: 30 rows, (empty) rejects, a diagnostics file."""
    return publish_version(
        [rows_factory(20, 10)], [], root=tmp_path / "storage", name="demo",
        manifest=manifest, heldout_fraction=0.0, before_publish=diagnostics,
    )  # fmt: skip


def cseaug(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``cseaug ARGS`` through the CLI's entry point in this process: (exit status, stdout,
    stderr). ``main`` installs log scrubbing for the process: undone afterwards."""
    argv, factory = sys.argv, logging.getLogRecordFactory()
    sys.argv = ["cseaug", *args]
    try:
        with pytest.raises(SystemExit) as exited:
            main()
    finally:
        sys.argv = argv
        logging.setLogRecordFactory(factory)
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert "Traceback" not in err
    return lines[0]


# -- 9.1: no command writes into a published version ---------------------------------------


@pytest.mark.parametrize(
    ("target", "fmt"), [(DATA_FILE, "sentence-transformers"), ("manifest.json", "jsonl")]
)
def test_export_over_a_published_file_fails_in_one_line_and_leaves_the_version_intact(
    tmp_path: Path, published: PublishedVersion, target: str, fmt: str
) -> None:
    """Proves 9.1 (the issue's two reproductions, in a fresh process as a user types them):
    `cseaug export demo/v0001 --out <version>/<data file | manifest.json>` exits 2 with one
    line naming the published version; every byte of the version is unchanged, and
    `versions`, `show` and `verify` still work. Before, the data file was replaced by the
    export (show still reported the old rows) and a JSONL manifest made show and versions
    crash with JSONDecodeError."""
    root = str(tmp_path / "storage")
    before = snapshot(published.path)
    env = {**os.environ, "CSEAUG_PROGRESS": "0"}
    args = ["export", "demo/v0001", "--format", fmt, "--out", str(published.path / target)]
    done = run_cseaug([*args, "--root", root], env, cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    line = one_line_error(done.stderr)
    assert "is inside the published version" in line and str(published.path) in line
    assert snapshot(published.path) == before
    for command in (["versions"], ["show", "demo"], ["verify", "demo/v0001"]):
        again = run_cseaug([*command, "--root", root], env, cwd=tmp_path, timeout=120)
        assert again.returncode == 0, again.stdout + again.stderr


def commands_writing_a_chosen_path(version: Path, tmp: Path) -> dict[str, list[str]]:
    """Every command with an output option, aimed into ``version`` (the rest of each command
    line is valid enough to reach the check)."""
    root = ["--root", str(version.parent.parent.parent)]
    sentences = tmp / "sentences.txt"
    sentences.write_text("A cat sat on the mat.\n", encoding="utf-8")
    return {
        "export": ["export", "demo", "--format", "simcse", "--out", str(version / "x.csv"), *root],
        "export into <root>/datasets": [
            "export", "demo", "--format", "simcse", "--out", str(version.parent / "latest.csv"),
            *root,
        ],
        "diagnose": ["diagnose", "demo", "--out", str(version / "diagnostics"), *root],
        "report": ["report", "demo", "--out", str(version / "diagnostics" / "report.html"), *root],
        "compare": ["compare", "--version", "demo", "--out", str(version / "figure7"), *root],
        "probe-splits": ["probe-splits", "--data-dir", str(tmp), "--out", str(version / "p")],
        "train-encoder": [
            "train-encoder", "--version", "demo", "--config",
            str(REPO / "configs" / "train" / "ngcse.yaml"), "--out", str(version / "model"), *root,
        ],
        "negate": ["negate", str(sentences), "--output", str(version / "negated.parquet")],
        "negate --rejects": [
            "negate", str(sentences), "--output", str(tmp / "n.parquet"),
            "--rejects", str(version / DATA_FILE),
        ],
        "backtranslate": ["backtranslate", str(sentences), "--output", str(version / "b.jsonl")],
        "mer": ["mer", str(sentences), "--output", str(version / "mer.parquet")],
        "synonyms": [
            "synonyms", "--generator", str(tmp), "--input", str(sentences),
            "--output", str(version / "synonyms.jsonl"),
        ],
        "train-vaegpt": ["train-vaegpt", "--set", f"output_dir={version / 'generator'}"],
        "score": ["score", str(sentences), "--json", str(version / "score.json")],
        "data fetch": ["data", "fetch", "sick", "--dir", str(version / "data")],
    }  # fmt: skip


COMMANDS = (
    "export", "export into <root>/datasets", "diagnose", "report", "compare", "probe-splits",
    "train-encoder", "negate", "negate --rejects", "backtranslate", "mer", "synonyms",
    "train-vaegpt", "score", "data fetch",
)  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_no_command_writes_into_a_published_version(
    tmp_path: Path, published: PublishedVersion, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Proves 9.1 for every command that writes a path the user chose: aimed at a published
    version (or at <root>/datasets beside it), it exits 2 with one line before any work,
    and the version keeps every byte and gains no file."""
    before = snapshot(published.path)
    commands = commands_writing_a_chosen_path(published.path, tmp_path)
    assert set(commands) == set(COMMANDS)
    args = commands[command]
    status, _, err = cseaug(capsys, *args)
    assert status == 2, err
    line = one_line_error(err)
    assert "published version" in line or "only the publisher writes" in line
    assert snapshot(published.path) == before


def test_a_symlink_into_a_version_is_refused_too(
    tmp_path: Path, published: PublishedVersion, capsys: pytest.CaptureFixture[str]
) -> None:
    """Proves 9.1 through a symlink: an --out whose folder links into the version is refused."""
    link = tmp_path / "innocent"
    link.symlink_to(published.path / "data")
    before = snapshot(published.path)
    status, _, err = cseaug(
        capsys, "export", "demo", "--format", "sentence-transformers",
        "--out", str(link / "train-00000-of-00001.parquet"), "--root", str(tmp_path / "storage"),
    )  # fmt: skip
    assert status == 2 and "is inside the published version" in one_line_error(err)
    assert snapshot(published.path) == before


def test_an_output_root_inside_a_published_version_is_refused(
    run_config, published: PublishedVersion
) -> None:
    """Proves 9.1 for a build: output.root inside a published version fails before any run
    store or cache is created there."""
    inside = published.path / "storage"
    cfg = run_config.model_copy(
        update={"output": run_config.output.model_copy(update={"root": str(inside)})}
    )
    with pytest.raises(InputError, match=r"output.root .* is inside the published version"):
        BuildRun(cfg)
    assert not inside.exists()


# -- 9.2: tampering is detected before data is handed on ----------------------------------


def rewrite_one_row(path: Path) -> None:
    table = pq.read_table(path)
    sentences = table.column("sentence").to_pylist()
    sentences[3] = "A row rewritten after publishing."
    index = table.schema.get_field_index("sentence")
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    pq.write_table(table.set_column(index, table.schema.field(index), [sentences]), path)


def flip_one_byte(path: Path, position: float = 0.5) -> None:
    data = bytearray(path.read_bytes())
    data[int(len(data) * position)] ^= 0x01
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    path.write_bytes(bytes(data))


TAMPERING: dict[str, Callable[[Path], None]] = {
    "rewrite one row": rewrite_one_row,
    "flip one byte": flip_one_byte,
    "flip a byte of the footer": lambda path: flip_one_byte(path, 0.995),
}


@pytest.mark.parametrize("tamper", list(TAMPERING))
def test_a_tampered_data_file_fails_export_show_verify_and_the_trainer_naming_it(
    tmp_path: Path, published: PublishedVersion, capsys: pytest.CaptureFixture[str], tamper: str
) -> None:
    """Proves 9.2: after one row is rewritten (the file stays valid Parquet) or one byte flipped
    (in the data, or in the footer Parquet reads first), the export, `show`, `verify`,
    `diagnose`, the trainer's reader and the diagnostics' reader each fail with a message
    naming the changed file, and the export and diagnose write nothing. Before, `show`
    printed the recorded sha256 and `export` wrote the tampered rows with exit 0."""
    from cseaug.trainer.config import load_train_config
    from cseaug.trainer.data import load_training_data

    data_file = published.path / DATA_FILE
    TAMPERING[tamper](data_file)
    root = ["--root", str(tmp_path / "storage")]
    out = tmp_path / "exports" / "train.jsonl"
    for args in (
        ["export", "demo", "--format", "jsonl", "--out", str(out)],
        ["show", "demo"],
        ["verify", "demo/v0001"],
        ["diagnose", "demo", "--out", str(tmp_path / "diagnostics")],
    ):
        status, _, err = cseaug(capsys, *args, *root)
        assert status == 2, (args, err)
        assert DATA_FILE in one_line_error(err).replace(str(published.path) + "/", ""), args
    assert not out.exists() and not (tmp_path / "diagnostics").exists()
    cfg = load_train_config(REPO / "configs" / "train" / "ngcse.yaml", [])
    with pytest.raises(InputError, match=f"{data_file}.*changed after publishing"):
        load_training_data(published.path, cfg)
    with pytest.raises(InputError, match=str(data_file)):
        list(iter_batches(published.path, ["sentence"]))


def test_verify_checks_every_published_file_and_finds_unlisted_ones(
    tmp_path: Path, published: PublishedVersion, capsys: pytest.CaptureFixture[str]
) -> None:
    """Proves 9.2's `cseaug verify`: the manifest lists every file but itself (data, rejects,
    card, diagnostics); an intact version passes; a changed card, a file added to
    diagnostics/ and a data file added to data/ are each named; the readers refuse rows
    from a data file the manifest does not list."""
    listed = {entry["path"] for entry in published.manifest["files"]}
    assert listed == set(snapshot(published.path)) - {"manifest.json"}
    assert {DATA_FILE, "rejects.parquet", "README.md", "diagnostics/summary.json"} <= listed
    root = ["--root", str(tmp_path / "storage")]
    status, out, err = cseaug(capsys, "verify", "demo/v0001", *root)
    assert status == 0 and f"{len(listed)} files match" in out, err

    flip_one_byte(published.path / "README.md")
    os.chmod(published.path / "diagnostics", stat.S_IRWXU)
    (published.path / "diagnostics" / "extra.txt").write_text("added\n", encoding="utf-8")
    status, _, err = cseaug(capsys, "verify", str(published.path), *root)
    line = one_line_error(err)
    assert status == 2
    assert "changed: README.md" in line and "not listed: diagnostics/extra.txt" in line

    os.chmod(published.path / "data", stat.S_IRWXU)
    extra = published.path / "data" / "train-00001-of-00001.parquet"
    extra.write_bytes((published.path / DATA_FILE).read_bytes())
    with pytest.raises(InputError, match=f"{extra} is not listed"):
        list(iter_batches(published.path))


def test_exports_beside_the_version_are_recorded_and_verified(
    tmp_path: Path, published: PublishedVersion, capsys: pytest.CaptureFixture[str]
) -> None:
    """Proves 9.2 for exports: an export written to the version's export folder
    (`<root>/exports/<name>/<version>/`, where the configured exports go) is recorded with its
    sha256 in `exports.json` there, and `verify` checks it (and names it when it changed);
    an export written anywhere else is the user's file and is not recorded."""
    root = ["--root", str(tmp_path / "storage")]
    for args in (
        ["--format", "simcse"],
        ["--format", "sentence-transformers", "--layout", "hybrid"],
    ):
        status, _, err = cseaug(capsys, "export", "demo", *args, *root)
        assert status == 0, err
    elsewhere = tmp_path / "mine.jsonl"
    assert (
        cseaug(capsys, "export", "demo", "--format", "jsonl", "--out", str(elsewhere), *root)[0]
        == 0
    )
    folder = tmp_path / "storage" / "exports" / "demo" / "v0001"
    record = json.loads((folder / "exports.json").read_text(encoding="utf-8"))
    assert sorted(record["files"]) == [
        "sentence-transformers-hybrid-train/aigen.parquet",
        "sentence-transformers-hybrid-train/other.parquet",
        "simcse-train.csv",
    ]
    status, out, _ = cseaug(capsys, "verify", "demo", *root)
    # the version's files and the exports are counted apart (issue 22: "12 files match its
    # manifest", which listed 6)
    assert (
        status == 0
        and (
            f"{len(published.manifest['files'])} files match the sha256 of its manifest; "
            "3 exports match their record (exports.json)"
        )
        in out
    )

    (folder / "simcse-train.csv").write_text("sent0\nswapped\n", encoding="utf-8")
    (folder / "sentence-transformers-hybrid-train" / "other.parquet").unlink()
    status, _, err = cseaug(capsys, "verify", "demo", *root)
    line = one_line_error(err)
    assert status == 2 and "changed: exports/demo/v0001/simcse-train.csv" in line
    assert "missing: exports/demo/v0001/sentence-transformers-hybrid-train/other.parquet" in line


# -- 9.3: the storage root is not trusted further than it should be ------------------------


def test_cleaning_never_follows_a_symlink_out_of_the_root(
    tmp_path: Path, manifest, rows_factory
) -> None:
    """Proves 9.3: a `.staging-x` symlink to a folder outside the root, and a
    `.staging-y.lock` symlink to a path outside it, are removed as links by the next
    publish; the folder outside keeps its mode and its file, and no file is created where
    the lock link pointed. Before, the cleanup chmodded the outside folder to 0700."""
    root = tmp_path / "storage"
    publish_version([rows_factory(2, 2)], [], root=root, name="demo", manifest=manifest)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me\n", encoding="utf-8")
    os.chmod(outside, 0o755)
    dataset = versions.dataset_dir(root, "demo")
    (dataset / ".staging-x").symlink_to(outside)
    (dataset / ".staging-y").mkdir()  # a crashed build's staging, with a lock that is a link
    (dataset / ".staging-y.lock").symlink_to(outside / "created-by-lock")

    published = publish_version([rows_factory(3, 3)], [], root=root, name="demo", manifest=manifest)
    assert published.version == "v0002"
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755
    assert (outside / "precious.txt").read_text(encoding="utf-8") == "keep me\n"
    assert not (outside / "created-by-lock").exists()
    assert not [p for p in dataset.iterdir() if p.name.startswith(".staging-")]


def test_versions_warns_about_what_is_not_a_version_and_lists_the_rest(
    tmp_path: Path, published: PublishedVersion, capsys: pytest.CaptureFixture[str]
) -> None:
    """Proves 9.3: a stray `v0003` folder without a manifest, a `v0004` whose manifest is
    not JSON and a `v0005` file make `cseaug versions` print one warning each on stderr and
    still list v0001 (exit 0); `show` of the broken one is a one-line error. Before, the
    whole listing failed."""
    dataset = published.path.parent
    (dataset / "v0003").mkdir()
    (dataset / "v0004").mkdir()
    (dataset / "v0004" / "manifest.json").write_text("{not json", encoding="utf-8")
    (dataset / "v0005").write_text("", encoding="utf-8")
    root = ["--root", str(tmp_path / "storage")]
    status, out, err = cseaug(capsys, "versions", *root)
    assert status == 0, err
    assert [line.split("\t")[:2] for line in out.splitlines()[1:]] == [["demo", "v0001 (latest)"]]
    warnings = err.splitlines()
    assert len(warnings) == 3 and all(line.startswith("warning:") for line in warnings)
    for stray, why in (("v0003", "not a published version"), ("v0004", "is damaged")):
        assert any(f"{dataset / stray}" in line and why in line for line in warnings), err
    assert any(f"{dataset / 'v0005'} is not a published version" in line for line in warnings)
    status, _, err = cseaug(capsys, "show", "demo/v0004", *root)
    assert status == 2 and "is damaged: not a JSON manifest" in one_line_error(err)


# -- 11.6: `cseaug versions` piped -----------------------------------------------------------


def test_versions_prints_untruncated_tab_separated_lines_when_piped(
    tmp_path: Path,
    manifest,
    rows_factory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Proves 11.6: piped (stdout not a terminal) and on a narrow terminal width,
    `cseaug versions` prints a header and one tab-separated line per version with every
    value whole (a rich table cut the long name and the fingerprint)."""
    root = tmp_path / "storage"
    name = "a-dataset-with-a-rather-long-name-for-a-narrow-terminal-window"
    published = publish_version([rows_factory(2, 2)], [], root=root, name=name, manifest=manifest)
    monkeypatch.setenv("COLUMNS", "40")
    status, out, _ = cseaug(capsys, "versions", "--root", str(root))
    assert status == 0
    header, line = out.splitlines()
    assert header.split("\t") == [
        "name", "version", "created (UTC)", "rows", "aigen", "rejects", "method", "fingerprint",
    ]  # fmt: skip
    fields = line.split("\t")
    assert fields[0] == name and fields[1] == "v0001 (latest)" and fields[3] == "4"
    assert fields[7] == published.manifest["fingerprints"]["build"][:12]
    assert json.loads((published.path / "manifest.json").read_text())["dataset"] == name


# -- 21.7: no command writes through a link -------------------------------------------------


@pytest.mark.slow
def test_diagnose_and_export_replace_hard_links_in_their_output_and_never_write_through(
    tmp_path: Path, published: PublishedVersion, capsys: pytest.CaptureFixture[str]
) -> None:
    """Proves 21.7: `diagnose --out DIR` and `export --out FILE`, where DIR's files and FILE
    are hard links to files of a published version, write new files renamed into place: the
    links are replaced, the version keeps every byte and still verifies. Before, diagnose
    opened summary.json and savefig the PNGs in place, rewriting the version's files."""
    before = snapshot(published.path)
    out = tmp_path / "diagnose-out"
    out.mkdir()
    linked = {
        "summary.json": "diagnostics/summary.json",
        "mer.png": "README.md",
        "cs.png": "rejects.parquet",
    }
    for name, target in linked.items():
        os.link(published.path / target, out / name)
    exported = tmp_path / "train.jsonl"
    os.link(published.path / DATA_FILE, exported)
    root = ["--root", str(tmp_path / "storage")]
    status, _, err = cseaug(
        capsys,
        "diagnose",
        "demo",
        "--out",
        str(out),
        "--set",
        "cs_sample=2",
        "--set",
        "embedding_cache=false",
        *root,
    )
    assert status == 0, err
    status, _, err = cseaug(capsys, "export", "demo", "--format", "jsonl", "--out", str(exported), *root)  # fmt: skip
    assert status == 0, err
    assert snapshot(published.path) == before
    assert cseaug(capsys, "verify", "demo", *root)[0] == 0
    for name in linked:
        assert (out / name).stat().st_nlink == 1 and (out / name).stat().st_size > 0
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["rows"] == 30
    assert exported.stat().st_nlink == 1 and exported.read_text(encoding="utf-8").count("\n") == 30


# -- 21.8: a reader checks the manifest itself before it trusts it ---------------------------


def edit_manifest(version_dir: Path, change: Callable[[dict], None]) -> None:
    """Apply ``change`` to the parsed manifest of ``version_dir`` and write it back."""
    path = version_dir / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    change(manifest)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def drop_the_file_hashes(version_dir: Path) -> None:
    edit_manifest(version_dir, lambda manifest: manifest.pop("files"))


def record_the_edited_sha256(version_dir: Path) -> None:
    from cseaug.hashing import file_sha256

    def change(manifest: dict) -> None:
        for entry in manifest["files"]:
            if entry["path"] == DATA_FILE:
                entry["sha256"] = file_sha256(version_dir / DATA_FILE)

    edit_manifest(version_dir, change)


MANIFEST_EDITS: dict[str, tuple[Callable[[Path], None], str]] = {
    "files key deleted": (drop_the_file_hashes, "does not list its files with their sha256"),
    "sha256 edited with the row": (record_the_edited_sha256, "data fingerprint"),
}


@pytest.mark.parametrize("edit", list(MANIFEST_EDITS))
def test_every_reader_refuses_a_manifest_edited_to_hide_a_changed_row(
    tmp_path: Path, published: PublishedVersion, capsys: pytest.CaptureFixture[str], edit: str
) -> None:
    """Proves 21.8: a row rewritten and the manifest edited to match (its `files` key
    deleted, or the file's sha256 replaced by the new one) is refused by `export`,
    `diagnose`, `show`, `verify`, the trainer's reader and the rows reader, each in one line
    naming the version, and nothing is written; `cseaug.open_version` refuses to open it. Before, without `files` the export and the
    trainer read the tampered row with exit 0 (the training record naming the original data
    fingerprint), and an edited sha256 passed everything."""
    from cseaug.trainer.config import load_train_config
    from cseaug.trainer.data import load_training_data

    rewrite_one_row(published.path / DATA_FILE)
    change, message = MANIFEST_EDITS[edit]
    change(published.path)
    root = ["--root", str(tmp_path / "storage")]
    out = tmp_path / "exports" / "train.jsonl"
    for args in (
        ["export", "demo", "--format", "jsonl", "--out", str(out)],
        ["diagnose", "demo", "--out", str(tmp_path / "diagnostics")],
        ["show", "demo"],
        ["verify", "demo/v0001"],
    ):
        status, _, err = cseaug(capsys, *args, *root)
        line = one_line_error(err)
        assert status == 2 and message in line and str(published.path) in line, (args, line)
    assert not out.exists() and not (tmp_path / "diagnostics").exists()
    cfg = load_train_config(REPO / "configs" / "train" / "ngcse.yaml", [])
    with pytest.raises(InputError, match=message):
        load_training_data(published.path, cfg)
    with pytest.raises(InputError, match=message):
        list(iter_batches(published.path, ["sentence"]))
    with pytest.raises(InputError, match=message):
        open_version("demo", root=tmp_path / "storage")


# -- 22: `show` and `verify` piped ----------------------------------------------------------


def test_show_and_verify_print_whole_lines_when_piped(
    tmp_path: Path,
    published: PublishedVersion,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Proves issue 22's `show` item: piped (stdout not a terminal), on a 40-column terminal,
    `show` keeps the version's path, each file's row and the fingerprints on one line each,
    and `verify`'s line is whole. Before, rich wrapped them at the console width (80 when
    piped, COLUMNS when set)."""
    monkeypatch.setenv("COLUMNS", "40")
    root = ["--root", str(tmp_path / "storage")]
    status, out, _ = cseaug(capsys, "show", "demo", *root)
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == f"demo/v0001  {published.path}"
    for entry in published.manifest["files"]:
        assert any(entry["path"] in line and entry["sha256"][:16] in line for line in lines)
    assert any(line.strip().startswith("fingerprints") and "data" in line for line in lines)
    status, out, _ = cseaug(capsys, "verify", "demo", *root)
    assert status == 0 and out.startswith(f"ok: {published.path}: ") and out.count("\n") == 1
