"""The papers' sentence representations as sentence-transformers modules, and the encoder
they make; docs/trainer.md ("Sentence representation") maps each setting to its paper."""

from __future__ import annotations

from typing import Any, ClassVar

from cseaug.errors import require
from cseaug.trainer.config import TrainConfig

torch = require("torch", "hf", "Training a sentence encoder")
st = require("sentence_transformers", "hf", "Training a sentence encoder")
modules = require(
    "sentence_transformers.sentence_transformer.modules", "hf", "Training a sentence encoder"
)


class PromptTransformer(modules.Transformer):
    """A transformer that encodes each sentence inside PromptBERT's ``template`` (NGCSE
    appendix "Training Details", OssCSE section 4), the sentence cut first so that [MASK] is
    never cut (docs/trainer.md, "Sentence representation"); a mask token in the sentence
    itself is dropped."""

    config_keys: ClassVar[list[str]] = [*modules.Transformer.config_keys, "template"]

    def __init__(self, model_name_or_path: str, *, template: str, **kwargs: Any) -> None:
        super().__init__(model_name_or_path, **kwargs)
        self.template = template

    def preprocess(self, inputs: Any, prompt: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """Token ids of ``[CLS] prefix sentence suffix [SEP]`` for every text of ``inputs``;
        ``prompt`` is a column's own template (the training arguments' ``prompts``)."""
        if not inputs:
            return {}
        tokenizer = self.tokenizer
        first, last, mask = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id
        # HeadConfig checks that the template holds {sentence} once
        prefix, suffix = (
            tokenizer.encode(
                part.strip().replace("[MASK]", tokenizer.mask_token), add_special_tokens=False
            )
            for part in (prompt or self.template).split("{sentence}")
        )
        positions = self.auto_model.config.max_position_embeddings - len(prefix) - len(suffix)
        limit = min(self.max_seq_length, positions) - 2  # [CLS] and [SEP] count
        sentences = tokenizer(
            list(inputs), add_special_tokens=False, truncation=True, max_length=limit
        )["input_ids"]
        rows = [
            [first, *prefix, *(i for i in ids if i != mask), *suffix, last] for ids in sentences
        ]
        features = dict(tokenizer.pad({"input_ids": rows}, return_tensors="pt"))
        if "token_type_ids" in tokenizer.model_input_names:
            features["token_type_ids"] = torch.zeros_like(features["input_ids"])
        features["modality"] = "text"
        return features


class MaskTokenPooling(modules.Module):
    """The last hidden state of the [MASK] token (``mask_token_id``, once in each input):
    PromptBERT's sentence representation."""

    config_keys: ClassVar[list[str]] = ["mask_token_id"]

    def __init__(self, mask_token_id: int) -> None:
        super().__init__()
        self.mask_token_id = mask_token_id

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        is_mask = features["input_ids"] == self.mask_token_id
        if not bool((is_mask.sum(dim=1) == 1).all()):
            raise ValueError("every input of MaskTokenPooling must hold exactly one [MASK] token")
        features["sentence_embedding"] = features["token_embeddings"][is_mask]
        return features

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any):
        self.save_config(output_path)


class TrainingHead(modules.Module):
    """What a paper trains on and drops at evaluation (SimCSE section 6.3 "MLP (train)",
    NGCSE, SKICSE, VAEGPT-Sim section 4; docs/trainer.md, "Sentence representation"): in
    training mode the MLP on the pooled embedding, in eval mode ``evaluation_pooling``'s
    ``Pooling`` instead, if any. Never in :func:`inference_encoder`'s encoder."""

    config_keys: ClassVar[list[str]] = ["dimension", "mlp", "activation", "evaluation_pooling"]

    def __init__(
        self,
        dimension: int,
        mlp: bool = True,
        activation: str = "tanh",
        evaluation_pooling: str | None = None,
    ) -> None:
        super().__init__()
        self.dimension = dimension
        self.mlp = mlp
        self.activation = activation
        self.evaluation_pooling = evaluation_pooling
        self.dense = torch.nn.Linear(dimension, dimension) if mlp else None
        self.act = torch.nn.Tanh() if activation == "tanh" else torch.nn.Identity()
        self.eval_pooling = (
            modules.Pooling(dimension, evaluation_pooling) if evaluation_pooling else None
        )

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if self.training:
            if self.dense is not None:
                features["sentence_embedding"] = self.act(
                    self.dense(features["sentence_embedding"])
                )
            return features
        return self.eval_pooling(features) if self.eval_pooling is not None else features

    def get_embedding_dimension(self) -> int:
        return self.dimension

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any):
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", **kwargs: Any) -> TrainingHead:
        head = super().load(model_name_or_path, subfolder=subfolder)
        return cls.load_torch_weights(model_name_or_path, subfolder=subfolder, model=head)


def init_mlp(linear: Any, how: str) -> None:
    """Draw the MLP's initial weights as ``head.mlp_init`` says (``pytorch``: ``nn.Linear``'s
    own): ``bert``, weight N(0, 0.02) and bias 0 (SimCSE's ``cl_init``); ``ngcse``, weight
    and bias N(0, 6e-3) (NGCSE's ``custom_param_init``)."""
    if how != "pytorch":
        with torch.no_grad():
            linear.weight.normal_(0.0, 6e-3 if how == "ngcse" else 0.02)
            linear.bias.normal_(0.0, 6e-3) if how == "ngcse" else linear.bias.zero_()


def head_modules(cfg: TrainConfig, dimension: int) -> list[Any]:
    """The modules of ``cfg.head`` on a pooled embedding: ``Dense`` (tanh) for a kept MLP
    (supervised SimCSE), :class:`TrainingHead` for a train-only MLP or an evaluation pooling."""
    head, stack = cfg.head, []
    if head.mlp == "kept":
        stack.append(modules.Dense(dimension, dimension, activation_function=torch.nn.Tanh()))
        init_mlp(stack[-1].linear, head.mlp_init)
    if head.mlp == "train-only" or head.evaluation_pooling:
        stack.append(
            TrainingHead(
                dimension,
                mlp=head.mlp == "train-only",
                activation=head.mlp_activation,
                evaluation_pooling=head.evaluation_pooling,
            )
        )
        if stack[-1].dense is not None:
            init_mlp(stack[-1].dense, head.mlp_init)
    return stack


def build_encoder(cfg: TrainConfig, location: str, device: str) -> Any:
    """A plain transformers model at ``location`` with ``cfg.pooling`` and ``cfg.head`` on top."""
    if cfg.pooling == "prompt":
        transformer = PromptTransformer(location, template=cfg.head.templates[0])
        pooling = MaskTokenPooling(transformer.tokenizer.mask_token_id)
    else:
        transformer = modules.Transformer(location)
        pooling = modules.Pooling(transformer.get_embedding_dimension(), cfg.pooling)
    head = head_modules(cfg, transformer.get_embedding_dimension())
    return st.SentenceTransformer(modules=[transformer, pooling, *head], device=device)


def with_head(model: Any, cfg: TrainConfig) -> Any:
    """A sentence-transformers model with ``cfg.head``'s MLP on its own pooled embedding
    (:func:`head_modules`, after its last module); ``model`` itself without an MLP."""
    head = head_modules(cfg, model.get_embedding_dimension())
    return (
        st.SentenceTransformer(modules=[*model, *head], device=str(model.device)) if head else model
    )


def inference_encoder(model: Any) -> Any:
    """The encoder the paper evaluates, sharing ``model``'s weights: without its
    :class:`TrainingHead` (``model`` itself when it has none), with the head's evaluation
    pooling in place of the training one."""
    stack = list(model)
    if not stack or not isinstance(stack[-1], TrainingHead):
        return model
    head = stack.pop()
    if head.eval_pooling is not None:
        stack[-1] = head.eval_pooling
    encoder = st.SentenceTransformer(modules=stack, device=str(model.device))
    encoder.model_card_data = model.model_card_data  # what the trainer recorded for the card,
    encoder.model_card_data.register_model(encoder)  # which describes this encoder's modules
    return encoder.eval()


def template_prompts(columns_by_set: dict[str, list[tuple[str, str]]], template: str) -> Any:
    """The training arguments' ``prompts``: PromptBERT's second ``template`` for every column
    that repeats its row's anchor (a dropout view), by set (``(column, source)`` pairs in
    ``columns_by_set``); ``{column: template}`` when there is one set."""
    per_set = {
        name: {column: template for column, source in columns[1:] if source == "sentence"}
        for name, columns in columns_by_set.items()
    }
    return next(iter(per_set.values())) if len(per_set) == 1 else per_set
