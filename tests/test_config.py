"""Config loading, overrides, validation messages, fingerprints, redaction."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cseaug.config import (
    RunConfig,
    apply_overrides,
    config_fingerprint,
    load_config,
    parse_override,
    redacted,
)
from cseaug.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
SHIPPED = sorted((REPO / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_config_validates(path: Path) -> None:
    cfg = load_config(path)
    assert cfg.name == path.stem or cfg.name in path.stem


def test_shipped_configs_cover_the_paper_settings() -> None:
    names = {p.stem for p in SHIPPED}
    assert {"wiki-sts", "wiki-nli", "nli-sts", "nli-nli", "wiki-ski", "nli-ski", "demo"} <= names


def test_override_parses_yaml_values() -> None:
    assert parse_override("sample.size=500") == (["sample", "size"], 500)
    assert parse_override("output.exports=[simcse, ngcse]") == (
        ["output", "exports"],
        ["simcse", "ngcse"],
    )
    assert parse_override("llm.base_url=http://h:1/v1") == (["llm", "base_url"], "http://h:1/v1")


def test_override_creates_missing_sections() -> None:
    data = apply_overrides({"name": "x"}, ["llm.model=m", "llm.backend=openai"])
    assert data["llm"] == {"model": "m", "backend": "openai"}


@pytest.mark.parametrize("bad", ["sample.size", "=3", "name.sub=1"])
def test_bad_override_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError):
        apply_overrides({"name": "x"}, [bad])


def test_load_applies_overrides(tmp_path: Path) -> None:
    cfg = load_config(REPO / "configs" / "wiki-sts.yaml", ["sample.size=500", "llm.concurrency=8"])
    assert cfg.sample.size == 500 and cfg.llm is not None and cfg.llm.concurrency == 8


def test_unknown_key_names_its_path(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    data = yaml.safe_load((REPO / "configs" / "wiki-sts.yaml").read_text())
    data["sample"]["sise"] = 3
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"sample\.sise"):
        load_config(path)


def test_method_needs_its_sections() -> None:
    with pytest.raises(ValueError, match="patterns"):
        RunConfig.model_validate(
            {
                "name": "x",
                "method": "sts",
                "corpus": {"path": "c.txt"},
                "llm": {"backend": "openai", "model": "m"},
            }
        )
    with pytest.raises(ValueError, match="llm"):
        RunConfig.model_validate({"name": "x", "method": "ski", "corpus": {"path": "c.txt"}})


def test_nli_examples_for_sts_method_are_refused() -> None:
    with pytest.raises(ValueError, match="NLI"):
        RunConfig.model_validate(
            {
                "name": "x",
                "method": "sts",
                "corpus": {"path": "c.txt"},
                "patterns": {"source": "nli_csv", "path": "n.csv"},
                "llm": {"backend": "openai", "model": "m"},
            }
        )


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_fingerprint_ignores_execution_but_not_data_settings() -> None:
    base = load_config(REPO / "configs" / "wiki-sts.yaml")
    same = load_config(
        REPO / "configs" / "wiki-sts.yaml", ["execution.shard_size=1000", "output.root=/tmp/x"]
    )
    other = load_config(REPO / "configs" / "wiki-sts.yaml", ["sample.seed=7"])
    assert config_fingerprint(base) == config_fingerprint(same)
    assert config_fingerprint(base) != config_fingerprint(other)


def test_fingerprint_ignores_the_vllm_engine_schedule_but_not_the_engine_arguments() -> None:
    path = REPO / "configs" / "wiki-ski.yaml"
    base = config_fingerprint(load_config(path))
    scheduled = load_config(
        path,
        [
            "llm.vllm.max_num_seqs=64",
            "llm.vllm.requests_per_call=100",
            "llm.vllm.max_model_len=900",
        ],
    )
    assert config_fingerprint(scheduled) == base
    quantized = load_config(path, ["llm.engine_kwargs.quantization=fp8"])
    assert config_fingerprint(quantized) != base


def test_batch_sizes_are_numbers_or_auto() -> None:
    path = REPO / "configs" / "wiki-osscse.yaml"
    assert (
        load_config(path, ["backtranslation.batch_size=auto"]).backtranslation.batch_size == "auto"
    )
    with pytest.raises(ConfigError, match=r"backtranslation\.batch_size"):
        load_config(path, ["backtranslation.batch_size=0"])
    with pytest.raises(ConfigError, match=r"llm\.batch_size"):
        load_config(REPO / "configs" / "demo.yaml", ["llm.batch_size=many"])


def test_the_api_key_is_never_part_of_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    # the backends read the key from the variable (tests/llm/test_openai_backend.py)
    monkeypatch.setenv("CSEAUG_TEST_KEY", "sk-secret")
    cfg = load_config(REPO / "configs" / "wiki-sts.yaml", ["llm.api_key_env=CSEAUG_TEST_KEY"])
    assert cfg.llm is not None and cfg.llm.api_key_env == "CSEAUG_TEST_KEY"
    assert "sk-secret" not in str(cfg.model_dump())


def test_redaction_masks_secret_looking_keys() -> None:
    out = redacted(
        {
            "a": {
                "api_key": "sk",
                "token": "t",
                "api_key_env": "X",
                "max_tokens": 5,
                "n": [{"password": "p"}],
            }
        }
    )
    assert out == {
        "a": {
            "api_key": "***",
            "token": "***",
            "api_key_env": "X",
            "max_tokens": 5,
            "n": [{"password": "***"}],
        }
    }


def test_fingerprint_follows_the_row_filters_and_cs_columns_not_the_reports() -> None:
    path = REPO / "configs" / "wiki-sts.yaml"
    base = config_fingerprint(load_config(path))
    assert config_fingerprint(load_config(path, ["diagnostics.mer_bins=10"])) == base
    # the CS sample and the encoder decide the cs_<view> columns of the rows
    assert config_fingerprint(load_config(path, ["diagnostics.cs_sample=10"])) != base
    assert config_fingerprint(load_config(path, ["diagnostics.pooling=cls"])) != base
    assert config_fingerprint(load_config(path, ["diagnostics.pattern_filter=mer"])) != base
    filtered = ["diagnostics.remove_contaminated=true", "diagnostics.eval_data_dir=/x"]
    assert config_fingerprint(load_config(path, filtered)) != base


def test_credentials_in_base_url_are_refused_in_one_line() -> None:
    """``llm.base_url=http://user:secret@host/v1`` would be stored in plan.json, the manifest
    and Prefect's database: it fails at load time, saying where the key belongs."""
    url = "llm.base_url=http://user:hunter2-secret@127.0.0.1:8000/v1"
    with pytest.raises(ConfigError) as caught:
        load_config(REPO / "configs" / "wiki-sts.yaml", [url])
    message = str(caught.value)
    assert "\n" not in message
    assert "llm.base_url" in message and "environment variable" in message
    assert "hunter2" not in message
    # nor in the chained pydantic error, which a traceback or Prefect's log would show
    assert "hunter2" not in str(caught.value.__cause__)


def test_api_key_env_must_name_a_variable_not_hold_the_key() -> None:
    with pytest.raises(ConfigError, match=r"llm\.api_key_env: must be the name") as caught:
        load_config(REPO / "configs" / "wiki-sts.yaml", ["llm.api_key_env=sk-proj-abc123"])
    assert "sk-proj-abc123" not in str(caught.value) + str(caught.value.__cause__)


def test_several_problems_are_listed_one_per_line(tmp_path: Path) -> None:
    overrides = ["sample.size=-1", "llm.concurrency=0"]
    with pytest.raises(ConfigError) as caught:
        load_config(REPO / "configs" / "wiki-sts.yaml", overrides)
    lines = str(caught.value).splitlines()
    assert len(lines) == 3 and lines[1].startswith("  - sample.size")


def test_cleaning_settings_are_validated() -> None:
    path = REPO / "configs" / "wiki-sts.yaml"
    assert load_config(path).corpus.invisible_characters == "remove"
    assert (
        load_config(
            path, ["cleaning.prompt_echo_max_overlap=null"]
        ).cleaning.prompt_echo_max_overlap
        is None
    )
    for bad in (
        "corpus.invisible_characters=strip",
        "corpus.special_tokens=remove",
        "cleaning.prompt_echo_max_overlap=0",
    ):
        with pytest.raises(ConfigError, match=bad.split("=")[0].replace(".", r"\.")):
            load_config(path, [bad])


@pytest.mark.parametrize(
    ("method", "setting", "expected"),
    [("sts", None, 0.1), ("nli", None, 0.1), ("ski", None, 0.0), ("osscse", None, 0.0),
     ("generate_cse", None, 0.0), ("ski", 0.2, 0.2), ("sts", 0.0, 0.0)],
)  # fmt: skip
def test_heldout_fraction_defaults_per_method(method: str, setting, expected: float) -> None:
    data = {"name": "x", "method": method, "corpus": {"path": "c.txt"},
            "llm": {"backend": "openai", "model": "m"}, "patterns": {"source": "paper"},
            "output": {"heldout_fraction": setting}}  # fmt: skip
    if method == "nli":
        data["patterns"] = {"source": "nli_csv", "path": "n.csv"}
    assert RunConfig.model_validate(data).heldout_fraction == expected


def test_unset_heldout_fraction_fingerprints_as_its_resolved_value() -> None:
    base = {"name": "x", "method": "ski", "corpus": {"path": "c.txt"},
            "llm": {"backend": "openai", "model": "m"}}  # fmt: skip
    unset = RunConfig.model_validate(base)
    explicit = RunConfig.model_validate({**base, "output": {"heldout_fraction": 0.0}})
    other = RunConfig.model_validate({**base, "output": {"heldout_fraction": 0.1}})
    assert config_fingerprint(unset) == config_fingerprint(explicit) != config_fingerprint(other)


def test_exports_take_a_format_name_or_a_format_and_layout() -> None:
    cfg = RunConfig.model_validate(
        {"name": "x", "method": "osscse", "corpus": {"path": "c.txt"},
         "output": {"exports": ["ngcse", {"format": "sentence_transformers", "layout": "hybrid"}]}}
    )  # fmt: skip
    assert [(e.format, e.layout) for e in cfg.output.exports] == [
        ("ngcse", "auto"),
        ("sentence-transformers", "hybrid"),
    ]
    with pytest.raises(ValueError, match="layout"):
        RunConfig.model_validate(
            {"name": "x", "method": "osscse", "corpus": {"path": "c.txt"},
             "output": {"exports": [{"format": "simcse", "layout": "sideways"}]}}
        )  # fmt: skip


@pytest.mark.parametrize(
    ("override", "suggestion"),
    [
        ("sampel.size=3", "sampel: unknown key; did you mean 'sample'"),
        ("sample.sise=3", "sample.sise: unknown key; did you mean 'size'"),
        (
            "llm.vllm.max_num_seq=3",
            r"llm\.vllm\.max_num_seq: unknown key; did you mean 'max_num_seqs'",
        ),
        (
            "output.exports=[{format: jsonl, layot: pair}]",
            "layot: unknown key; did you mean 'layout'",
        ),
    ],
)
def test_an_unknown_key_gets_the_closest_known_key_at_any_depth(
    override: str, suggestion: str
) -> None:
    """Proves 11.1: a typo'd key, at the top, in a section, two sections down or inside a
    list item, is answered with the known key it was probably meant to be."""
    with pytest.raises(ConfigError, match=suggestion):
        load_config(REPO / "configs" / "wiki-sts.yaml", [override])


def test_an_unknown_key_far_from_every_known_key_gets_no_guess() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(REPO / "configs" / "wiki-sts.yaml", ["sample.zzzzqqq=1"])
    assert "did you mean" not in str(caught.value)


@pytest.mark.parametrize("override", ["name=evil name", "output.dataset_name=../escape"])
def test_a_bad_dataset_name_fails_with_the_config_and_speaks_of_the_dataset_name(
    override: str,
) -> None:
    """Proves 9.8: the name is checked when the config is validated (before any request is
    paid), and the message speaks of the dataset name, not of a run id."""
    with pytest.raises(ConfigError, match=r"dataset name .* is not allowed") as caught:
        load_config(REPO / "configs" / "demo.yaml", [override])
    assert "run id" not in str(caught.value)


def test_the_publish_gate_setting_is_validated_and_not_fingerprinted() -> None:
    base = load_config(REPO / "configs" / "demo.yaml")
    assert base.publish.min_generated_share == 0.5
    gated = load_config(REPO / "configs" / "demo.yaml", ["publish.min_generated_share=0"])
    assert config_fingerprint(gated) == config_fingerprint(base)
    with pytest.raises(ConfigError, match=r"publish\.min_generated_share"):
        load_config(REPO / "configs" / "demo.yaml", ["publish.min_generated_share=1.5"])


@pytest.mark.parametrize("spelling", ["sentence_transformers", "sentence-transformers"])
def test_a_config_takes_either_spelling_of_sentence_transformers(spelling: str) -> None:
    """Proves 11.6: the command line's ``sentence-transformers`` is accepted in a config too."""
    cfg = load_config(REPO / "configs" / "demo.yaml", [f"output.exports=[{spelling}]"])
    assert cfg.output.exports[0].format == "sentence-transformers"
    with pytest.raises(ConfigError, match="unknown export format 'infersent'"):
        load_config(REPO / "configs" / "demo.yaml", ["output.exports=[infersent]"])


def test_the_cosine_similarity_sample_default_is_the_measured_one() -> None:
    """3,000 rows keep each view's quartiles within half a histogram bin (p95 0.0116 on SNLI
    triples; 2,000 rows: 0.0136), benchmarks/bench_cs_sample.py, docs/performance.md."""
    from cseaug.config import DiagnosticsConfig

    cfg = DiagnosticsConfig()
    assert cfg.cs_sample == 3_000
    assert (2.0 / cfg.cs_bins) > 2 * 0.0116  # half a bin of the default histogram
