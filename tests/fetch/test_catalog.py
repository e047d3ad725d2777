"""The catalogue: it covers every data path the shipped configs name, and resolves URLs."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest
import yaml

from cseaug.errors import ConfigError
from cseaug.fetch.catalog import CATALOG, Entry, select, source_urls

REPO = Path(__file__).resolve().parents[2]
SHIPPED_CONFIGS = [
    *sorted(REPO.glob("configs/*.yaml")),
    REPO / "configs/vaegpt/train.yaml",
    *sorted(REPO.glob("configs/train/*.yaml")),
]
EVAL_FOLDERS = {
    **{f"STS1{y}": f"senteval_sts/STS1{y}-en-test" for y in range(2, 7)},
    "STS-B": "senteval_sts/STSBenchmark",
    "SICK-R": "sick/semeval2014_splits_noheader",
}
"""Where the trainer reads each evaluation set under ``evaluation.data_dir``."""


def data_paths(node) -> set[str]:
    """Every string under ``data/`` anywhere in a parsed config (corpus.path, patterns.path,
    data.sick, data.mrpc, ...), without the ``data/`` prefix; for a training config with
    ``evaluation.data_dir: data``, the folders of its test sets and of its dev set."""
    if isinstance(node, dict) and node.get("objective"):
        evaluation = node.get("evaluation", {})
        if evaluation.get("data_dir") != "data":
            return set()
        sets = {*evaluation.get("sets", EVAL_FOLDERS), evaluation.get("dev", "STS-B")}
        return {EVAL_FOLDERS[name] for name in sets if name}
    if isinstance(node, dict):
        return set().union(*(data_paths(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(data_paths(value) for value in node))
    if isinstance(node, str) and node.startswith("data/"):
        return {node.removeprefix("data/").rstrip("/")}
    return set()


@pytest.fixture(scope="module")
def referenced() -> dict[str, set[str]]:
    """config (repo-relative) -> the data paths it names."""
    return {
        config.relative_to(REPO).as_posix(): data_paths(
            yaml.safe_load(config.read_text(encoding="utf-8"))
        )
        for config in SHIPPED_CONFIGS
    }


def provides(entry: Entry, path: str) -> bool:
    """Whether ``entry`` supplies ``path`` (relative to the data directory): one of its files,
    or a directory that holds some of them."""
    wanted = PurePosixPath(path)
    return any(wanted in (PurePosixPath(t), *PurePosixPath(t).parents) for t in entry.targets)


def test_the_walker_finds_the_keys_the_configs_use(referenced):
    assert referenced["configs/wiki-sts.yaml"] == {"wiki1m_for_simcse.txt", "sts12_train"}
    assert referenced["configs/vaegpt/train.yaml"] == {
        "sick/SICK.txt",
        "mrpc/msr_paraphrase_train.txt",
        "mrpc/msr_paraphrase_test.txt",
    }
    assert referenced["configs/demo.yaml"] == set()


def test_every_data_path_of_every_shipped_config_is_in_the_catalogue(referenced):
    missing = {
        (config, path)
        for config, paths in referenced.items()
        for path in paths
        if not any(provides(entry, path) for entry in CATALOG)
    }
    assert not missing


def test_each_entry_lists_exactly_the_configs_that_read_it(referenced):
    for entry in CATALOG:
        readers = {c for c, paths in referenced.items() if any(provides(entry, p) for p in paths)}
        assert set(entry.configs) == readers, entry.name


def test_every_entry_is_described_with_licence_and_a_checksum_policy():
    for entry in CATALOG:
        assert entry.description and entry.licence and entry.terms and entry.urls, entry.name
        assert [bool(entry.target), entry.is_archive, entry.is_folder].count(True) == 1
        for sha in [entry.sha256, *(m.sha256 for m in entry.members + entry.files)]:
            assert sha is None or (len(sha) == 64 and int(sha, 16) >= 0), entry.name
    unchecked = {entry.name for entry in CATALOG if entry.sha256 is None and not entry.is_folder}
    assert unchecked == {"wiki1m", "nli"}  # SimCSE publishes no checksum: trust on first use


@pytest.mark.shared_data
def test_known_checksums_match_the_shared_copies_of_the_same_files(shared_data):
    """SICK, MRPC, the STS12 train files and the evaluation sets are byte-identical to
    ../shared/data's copies."""
    sums = dict(
        reversed(line.split()) for line in (shared_data / "SHA256SUMS").read_text().splitlines()
    )
    for entry in CATALOG:
        for target, sha in [(m.target, m.sha256) for m in entry.members + entry.files] or [
            (entry.target, entry.sha256)
        ]:
            if sha is not None:
                assert sums[f"./{target}"] == sha, target


def test_select_keeps_catalogue_order_and_suggests_a_close_name():
    assert [e.name for e in select(["mrpc-test", "wiki1m", "wiki1m"])] == ["wiki1m", "mrpc-test"]
    assert len(select([])) == len(CATALOG)
    with pytest.raises(
        ConfigError, match=r"no dataset 'sts12-trian' .*did you mean 'sts12-train'\?"
    ):
        select(["sts12-trian"])


def test_hub_urls_follow_hf_endpoint_and_a_mirror_replaces_every_url():
    (wiki,) = select(["wiki1m"])
    default = "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/"
    assert source_urls(wiki, environ={}) == [default + "wiki1m_for_simcse.txt"]
    assert source_urls(wiki, environ={"HF_ENDPOINT": "http://hf.local:8080/"}) == [
        "http://hf.local:8080/datasets/princeton-nlp/datasets-for-simcse/resolve/main/"
        "wiki1m_for_simcse.txt"
    ]
    (sts,) = select(["sts12-train"])
    assert len(source_urls(sts, environ={})) == 2
    assert source_urls(sts, mirror="file:///mnt/copy/") == ["file:///mnt/copy/sts2012-train.tgz"]


def test_hf_hub_offline_leaves_the_hub_urls_out():
    (wiki,) = select(["wiki1m"])
    (sick,) = select(["sick"])
    assert source_urls(wiki, environ={"HF_HUB_OFFLINE": "1"}) == []
    assert source_urls(sick, environ={"HF_HUB_OFFLINE": "1"}) == source_urls(sick, environ={})
    assert source_urls(wiki, mirror="http://m", environ={"HF_HUB_OFFLINE": "1"}) == [
        "http://m/wiki1m_for_simcse.txt"
    ]
