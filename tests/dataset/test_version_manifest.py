"""manifest.json: what the build records, fingerprints, validation."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from cseaug.config import RunConfig
from cseaug.dataset.counts import RowCounts
from cseaug.dataset.manifest import (
    CONTRACT_VERSION,
    build_manifest,
    code_version,
    describe_input,
    validate_manifest,
)
from cseaug.errors import InputError


def test_records_inputs_prompts_model_usage_and_code(manifest, tmp_path: Path) -> None:
    assert manifest["contract"] == CONTRACT_VERSION == "1"
    assert manifest["inputs"]["corpus"] == {"name": "corpus", "files": {"corpus.txt": "cd" * 32}}
    assert manifest["prompts"] == [{"name": "sts_positive", "sha256": "ab" * 32}]
    assert manifest["example_set"]["examples"] == {"positive": [["a", "b"]]}
    assert manifest["model"] == {"backend": "openai-compatible", "model": "tiny"}
    assert manifest["token_usage"]["completion_tokens"] == 9
    assert manifest["code"]["package"] == "cseaug" and "version" in manifest["code"]
    assert manifest["config"]["llm"]["api_key_env"] == "OPENAI_API_KEY"


def test_build_fingerprint_follows_config_and_inputs(run_config: RunConfig) -> None:
    corpus = {"name": "wiki", "files": {"a.txt": "11"}}
    first = build_manifest(run_config, inputs={"corpus": corpus})
    again = build_manifest(run_config, inputs={"corpus": corpus})
    assert first["fingerprints"] == again["fingerprints"]
    assert first["inputs"]["corpus"] == corpus
    changed_input = build_manifest(
        run_config, inputs={"corpus": {**corpus, "files": {"a.txt": "22"}}}
    )
    assert changed_input["fingerprints"]["config"] == first["fingerprints"]["config"]
    assert changed_input["fingerprints"]["build"] != first["fingerprints"]["build"]
    other_config = run_config.model_copy(deep=True)
    other_config.sample.size = 7
    assert (
        build_manifest(other_config, inputs={"corpus": corpus})["fingerprints"]["config"]
        != first["fingerprints"]["config"]
    )


def test_an_input_without_its_files_sha256_is_refused() -> None:
    with pytest.raises(InputError, match="does not identify its content"):
        describe_input({"hf_dataset": "x/y", "fingerprint": "abc"})


def test_validation_names_every_problem(manifest) -> None:
    complete = {**manifest, "dataset": "d", "version": "v0001", "files": []}
    complete["fingerprints"] = {**manifest["fingerprints"], "data": "x"}
    complete["counts"] = RowCounts().as_dict()
    validate_manifest(complete)
    broken = {k: v for k, v in complete.items() if k not in ("code", "counts")}
    broken["timings"] = "fast"
    with pytest.raises(InputError) as err:
        validate_manifest(broken)
    assert (
        "missing 'code'" in str(err.value)
        and "missing 'counts'" in str(err.value)
        and "'timings' is str" in str(err.value)
    )
    leaky = copy.deepcopy(complete)
    leaky["config"]["llm"]["api_key"] = "sk-live"
    with pytest.raises(InputError, match="secret"):
        validate_manifest(leaky)


def test_bad_prompt_records_are_refused(run_config: RunConfig) -> None:
    with pytest.raises(InputError, match="'name' and 'sha256'"):
        build_manifest(run_config, prompts=[{"name": "x"}])


def test_code_version_in_a_checkout() -> None:
    info = code_version()
    if info["git_commit"] is not None:
        assert len(info["git_commit"]) == 40 and isinstance(info["git_dirty"], bool)
