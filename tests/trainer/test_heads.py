"""The papers' pooling heads on a tiny random BERT: what trains, what is evaluated, what is saved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")

from cseaug.trainer.config import PROMPTBERT_TEMPLATES, TrainConfig, load_train_config  # noqa: E402
from cseaug.trainer.heads import (  # noqa: E402
    MaskTokenPooling,
    PromptTransformer,
    TrainingHead,
    build_encoder,
    inference_encoder,
    template_prompts,
)
from cseaug.trainer.objectives import training_sets  # noqa: E402

SENTENCES = ["a cat sat on the mat", "the dog is plain"]
CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "train"


def _encoder(tiny_bert: Path, **settings):
    cfg = TrainConfig.model_validate({"objective": "simcse-unsup", **settings})
    return build_encoder(cfg, str(tiny_bert), "cpu")


def _embed(model, texts, prompt=None):
    features = model.preprocess(texts, prompt=prompt) if prompt else model.preprocess(texts)
    return model(features)


def _saved_module_types(directory: Path) -> list[str]:
    return [entry["type"] for entry in json.loads((directory / "modules.json").read_text())]


def test_train_only_mlp_trains_and_is_absent_from_the_saved_encoder(
    tiny_bert: Path, tmp_path: Path
) -> None:
    from sentence_transformers import SentenceTransformer

    model = _encoder(tiny_bert, pooling="cls", head={"mlp": "train-only"})
    head = model[-1]
    assert isinstance(head, TrainingHead)
    before = head.dense.weight.detach().clone()
    model.train()
    trained = _embed(model, SENTENCES)["sentence_embedding"]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    trained.pow(2).sum().backward()
    optimizer.step()
    assert not torch.equal(head.dense.weight, before)  # the MLP is trained

    model.eval()
    with torch.no_grad():
        features = _embed(model, SENTENCES)
        cls = features["token_embeddings"][:, 0]
        assert torch.equal(features["sentence_embedding"], cls)  # eval mode: no MLP

    inference_encoder(model).save(str(tmp_path / "saved"))
    types = _saved_module_types(tmp_path / "saved")
    assert not any("TrainingHead" in t for t in types) and len(types) == 2
    assert "TrainingHead" not in (tmp_path / "saved" / "README.md").read_text()  # the card
    reloaded = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    assert [type(m).__name__ for m in reloaded] == ["Transformer", "Pooling"]
    got = reloaded.encode(SENTENCES, convert_to_tensor=True)
    torch.testing.assert_close(got, cls)


def test_kept_mlp_is_evaluated_and_saved(tiny_bert: Path, tmp_path: Path) -> None:
    model = _encoder(tiny_bert, pooling="cls", head={"mlp": "kept"})
    model.eval()
    with torch.no_grad():
        features = _embed(model, SENTENCES)
        dense = model[-1].linear
        expected = torch.tanh(dense(features["token_embeddings"][:, 0]))
    torch.testing.assert_close(features["sentence_embedding"], expected)
    inference_encoder(model).save(str(tmp_path / "saved"))
    assert _saved_module_types(tmp_path / "saved")[-1].endswith("Dense")


def test_evaluation_pooling_replaces_the_training_pooling(tiny_bert: Path, tmp_path: Path) -> None:
    """VAEGPT-Sim: [CLS] + MLP in training, the last layer's token mean evaluated and saved."""
    from sentence_transformers import SentenceTransformer

    model = _encoder(
        tiny_bert, pooling="cls", head={"mlp": "train-only", "evaluation_pooling": "mean"}
    )
    model.eval()
    with torch.no_grad():
        features = _embed(model, SENTENCES)
        mask = features["attention_mask"].unsqueeze(-1).float()
        mean = (features["token_embeddings"] * mask).sum(1) / mask.sum(1)
    torch.testing.assert_close(features["sentence_embedding"], mean)
    inference_encoder(model).save(str(tmp_path / "saved"))
    pooling = json.loads((tmp_path / "saved" / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode"] == "mean"
    reloaded = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    torch.testing.assert_close(reloaded.encode(SENTENCES, convert_to_tensor=True), mean)


def test_prompt_pooling_takes_the_mask_state_of_the_template(tiny_bert: Path) -> None:
    model = _encoder(tiny_bert, pooling="prompt")
    model.max_seq_length = 8  # the training length: 6 word pieces, [CLS] and [SEP] counted
    transformer, pooling = model[0], model[1]
    assert isinstance(transformer, PromptTransformer) and isinstance(pooling, MaskTokenPooling)
    tokenizer = transformer.tokenizer
    long_sentence = " ".join(["cat"] * 40)  # cut to 6 tokens; the template's [MASK] stays
    model.eval()
    for prompt in (None, PROMPTBERT_TEMPLATES[1]):
        with torch.no_grad():
            features = _embed(model, [SENTENCES[0], long_sentence], prompt=prompt)
        template = prompt or PROMPTBERT_TEMPLATES[0]
        prefix, suffix = (
            tokenizer(part.strip(), add_special_tokens=False)["input_ids"]
            for part in template.split("{sentence}")
        )
        for row, sentence in enumerate([SENTENCES[0], long_sentence]):
            ids = tokenizer(sentence, add_special_tokens=False)["input_ids"][:6]
            expected_ids = [tokenizer.cls_token_id, *prefix, *ids, *suffix, tokenizer.sep_token_id]
            length = len(expected_ids)
            assert features["input_ids"][row, :length].tolist() == expected_ids
            mask_at = expected_ids.index(tokenizer.mask_token_id)
            assert mask_at == length - 3  # `[MASK] . [SEP]`
            torch.testing.assert_close(
                features["sentence_embedding"][row], features["token_embeddings"][row, mask_at]
            )
            # and the state is BERT's own last hidden state at that position
            bert = transformer.model
            with torch.no_grad():
                hidden = bert(
                    input_ids=torch.tensor([expected_ids]),
                    attention_mask=torch.ones(1, length, dtype=torch.long),
                ).last_hidden_state
            torch.testing.assert_close(features["sentence_embedding"][row], hidden[0, mask_at])


def test_prompt_encoder_saves_its_template_and_mask_pooling(
    tiny_bert: Path, tmp_path: Path
) -> None:
    from sentence_transformers import SentenceTransformer

    model = _encoder(tiny_bert, pooling="prompt", head={"mlp": "train-only"})
    model.eval()
    expected = model.encode(SENTENCES, convert_to_tensor=True)
    inference_encoder(model).save(str(tmp_path / "saved"))
    types = _saved_module_types(tmp_path / "saved")
    assert types == [
        "cseaug.trainer.heads.PromptTransformer",
        "cseaug.trainer.heads.MaskTokenPooling",
    ]
    reloaded = SentenceTransformer(str(tmp_path / "saved"), device="cpu", trust_remote_code=True)
    assert reloaded[0].template == PROMPTBERT_TEMPLATES[0]
    torch.testing.assert_close(reloaded.encode(SENTENCES, convert_to_tensor=True), expected)


def test_second_template_goes_to_the_columns_that_repeat_the_anchor() -> None:
    cfg = TrainConfig(objective="osscse")
    columns = {s.name: list(s.columns) for s in training_sets(cfg)}
    second = PROMPTBERT_TEMPLATES[1]
    assert template_prompts(columns, second) == {
        "augmented": {"dropout_view": second},  # not the paraphrase nor the negation
        "dropout": {"positive": second},
    }
    one = {"triplets": list(training_sets(TrainConfig(objective="simcse-sup"))[0].columns)}
    assert template_prompts(one, second) == {}


def test_head_settings_that_cannot_work_are_config_errors() -> None:
    with pytest.raises(ValueError, match=r"must hold \{sentence\} once and \[MASK\]"):
        TrainConfig(objective="osscse", pooling="prompt", head={"templates": ["{sentence}", "x"]})
    with pytest.raises(ValueError, match="evaluation_pooling must be unset"):
        TrainConfig(objective="osscse", pooling="prompt", head={"evaluation_pooling": "mean"})
    with pytest.raises(ValueError, match="a kept MLP is supervised SimCSE's, with tanh"):
        TrainConfig(objective="simcse-sup", head={"mlp": "kept", "mlp_activation": "identity"})


@pytest.mark.parametrize(
    ("config", "pooling", "mlp", "activation", "init", "evaluation_pooling"),
    [
        ("simcse-unsup", "cls", "train-only", "tanh", "bert", None),  # SimCSE 6.3: MLP (train)
        ("simcse-sup", "cls", "kept", "tanh", "bert", None),  # SimCSE 6.3: [CLS] with MLP
        ("ngcse", "cls", "train-only", "identity", "ngcse", None),  # nn.Linear, with_mlp
        ("ngcse-wiki-sts-ht-final", "prompt", "train-only", "identity", "ngcse", None),  # Table 6
        ("ngcse-nli-sts-ht-final", "prompt", "train-only", "identity", "ngcse", None),
        ("osscse", "prompt", "train-only", "tanh", "bert", None),  # OssCSE 4, PromptBERT unsup
        ("skicse-unsup", "cls", "train-only", "tanh", "bert", None),  # SimCSE's code
        ("skicse-sup", "cls", "train-only", "tanh", "bert", None),
        ("generate-cse", "cls", "train-only", "tanh", "pytorch", "mean"),  # VAEGPT-Sim 4, A6
    ],
)
def test_each_config_defaults_to_its_papers_head(
    config: str,
    pooling: str,
    mlp: str,
    activation: str,
    init: str,
    evaluation_pooling: str | None,
) -> None:
    cfg = load_train_config(CONFIGS / f"{config}.yaml")
    assert (cfg.pooling, cfg.head.mlp, cfg.head.mlp_init, cfg.head.evaluation_pooling) == (
        pooling,
        mlp,
        init,
        evaluation_pooling,
    )
    if mlp == "train-only":
        assert cfg.head.mlp_activation == activation


def test_a_checkpoint_of_the_training_model_keeps_its_head(tiny_bert: Path, tmp_path: Path) -> None:
    """What the trainer's checkpoints save: the whole training model, the MLP included."""
    from sentence_transformers import SentenceTransformer

    model = _encoder(tiny_bert, pooling="cls", head={"mlp": "train-only"})
    with torch.no_grad():
        model[-1].dense.weight.add_(1.0)
    model.save(str(tmp_path / "checkpoint"))
    reloaded = SentenceTransformer(str(tmp_path / "checkpoint"), trust_remote_code=True)
    assert isinstance(reloaded[-1], TrainingHead)
    torch.testing.assert_close(reloaded[-1].dense.weight, model[-1].dense.weight)


@pytest.mark.parametrize("mlp", ["train-only", "kept"])
@pytest.mark.parametrize(
    ("init", "weight_std", "bias_std"), [("ngcse", 6e-3, 6e-3), ("bert", 0.02, 0.0)]
)
def test_the_mlp_starts_from_the_papers_initial_weights(
    tmp_path: Path, mlp: str, init: str, weight_std: float, bias_std: float
) -> None:
    """NGCSE's custom_param_init draws weight and bias from N(0, 6e-3); SimCSE's cl_init
    leaves BERT's init_weights: weight N(0, initializer_range 0.02), bias 0."""
    from tests.tiny_models import build_tiny_bert

    bert = build_tiny_bert(tmp_path, hidden_size=64)  # 4,096 weights: std within ~2%
    model = _encoder(bert, head={"mlp": mlp, "mlp_init": init})
    linear = model[-1].dense if mlp == "train-only" else model[-1].linear
    weight, bias = linear.weight.detach(), linear.bias.detach()
    assert weight.std().item() == pytest.approx(weight_std, rel=0.1)
    assert abs(weight.mean().item()) < weight_std / 10
    assert bias.std().item() == pytest.approx(bias_std, rel=0.35, abs=1e-12)
    default = _encoder(bert, head={"mlp": mlp})[-1]  # pytorch: U(-1/8, 1/8), std 0.072
    default_weight = default.dense.weight if mlp == "train-only" else default.linear.weight
    assert default_weight.std().item() == pytest.approx(64**-0.5 / 3**0.5, rel=0.1)


def test_a_sentence_transformers_model_gets_the_mlp_on_its_own_pooling() -> None:
    """ngcse.yaml on the packaged all-MiniLM-L6-v2: NGCSE's MLP trains on MiniLM's own mean
    pooling and is dropped for evaluation; a prompt or evaluation pooling is refused."""
    from sentence_transformers import SentenceTransformer

    from cseaug.encoders.minilm import model_location
    from cseaug.errors import ConfigError
    from cseaug.trainer.train import load_encoder

    said: list[str] = []
    cfg = load_train_config(CONFIGS / "ngcse.yaml", ["model=all-MiniLM-L6-v2"])
    model = load_encoder(cfg, "cpu", said.append)
    names = ["Transformer", "Pooling", "Normalize"]
    assert [type(m).__name__ for m in model] == [*names, "TrainingHead"]
    assert model[-1].dense.weight.std().item() == pytest.approx(6e-3, rel=0.1)  # ngcse init
    assert "trains its own pooling (Transformer, Pooling, Normalize, TrainingHead)" in said[0]
    plain = SentenceTransformer(model_location("all-MiniLM-L6-v2")[0], device="cpu")
    evaluated = inference_encoder(model)
    assert [type(m).__name__ for m in evaluated] == names
    torch.testing.assert_close(evaluated.encode(SENTENCES), plain.encode(SENTENCES))
    for asked, settings in (
        ("pooling 'prompt'", {"pooling": "prompt"}),
        ("head.evaluation_pooling", {"head": {"evaluation_pooling": "mean"}}),
    ):
        cfg = TrainConfig.model_validate(
            {"objective": "osscse", "model": "all-MiniLM-L6-v2", **settings}
        )
        with pytest.raises(ConfigError, match=f"sentence-transformers model .*; {asked} is the"):
            load_encoder(cfg, "cpu")


def test_a_mask_token_in_the_sentence_leaves_the_templates_the_only_one(tiny_bert: Path) -> None:
    model = _encoder(tiny_bert, pooling="prompt")
    model.eval()
    with torch.no_grad():
        features = _embed(model, ["a [MASK] sat on the mat"])
    mask = model[0].tokenizer.mask_token_id
    assert features["input_ids"][0].tolist().count(mask) == 1
    assert features["sentence_embedding"].shape == (1, 16)


@pytest.mark.parametrize(
    ("objective", "views", "method"),
    [
        ("simcse-unsup", ("positive",), "sts"),  # one training set: flat prompts
        ("osscse", ("positive", "negative"), "osscse"),  # two sets: prompts per set
        ("ngcse", ("positive", "intermediate", "negative"), "sts"),  # the mixed set
    ],
)
def test_prompt_pooling_trains_with_the_second_template_on_dropout_views(
    objective: str,
    views: tuple[str, ...],
    method: str,
    publish,
    rows_factory,
    tiny_bert: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cseaug.trainer.train import train_encoder

    templates: list[str | None] = []
    preprocess = PromptTransformer.preprocess

    def recording(self, inputs, prompt=None, **kwargs):
        templates.append(prompt)
        return preprocess(self, inputs, prompt=prompt, **kwargs)

    monkeypatch.setattr(PromptTransformer, "preprocess", recording)
    version = publish([rows_factory(6, 10, views=views, method=method)])
    cfg = TrainConfig.model_validate(
        {
            "objective": objective,
            "model": str(tiny_bert),
            "batch_size": 4,
            "max_steps": 3,
            "device": "cpu",
            "pooling": "prompt",
            "head": {"mlp": "train-only"},
            "ngcse": {"generated_per_batch": 1},
            "evaluation": {"sets": [], "dev": None},
        }
    )
    result = train_encoder(version, cfg, tmp_path / "model")
    assert result.record["steps"] == 3
    assert set(templates) == {None, PROMPTBERT_TEMPLATES[1]}  # first template, second on views
