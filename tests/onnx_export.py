"""Export a BERT-style model's last hidden state to ONNX, the layout of the hub's
``onnx/model.onnx`` files: used by the ONNX encoder's tests and its benchmark, which cannot
download the hub's own export."""

from __future__ import annotations

from pathlib import Path


def export_onnx(location: str | Path, target: Path) -> None:
    """Write ``location``'s model as ONNX to ``target`` (dynamic batch and token axes)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(location).eval()
    example = AutoTokenizer.from_pretrained(location)(
        ["a short one", "and a longer second sentence"], return_tensors="pt", padding=True
    )

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    target.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(
        Hidden(),
        tuple(example[n] for n in names),
        str(target),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
        opset_version=17,
        dynamo=False,
    )
