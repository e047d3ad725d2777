"""VAEGPT-Sim synonym generator (Wang et al., "Improving Sentence Representation with Limited
Corpus Using Gradually-Denoising VAE", section 3.1).

Modules: :mod:`.model` (the network and its artifact), :mod:`.layout` (how source and target
are laid out for GPT-2), :mod:`.loss` (the frozen-GPT-2 judge and the training loss),
:mod:`.data` (SICK / MRPC training pairs), :mod:`.config` (training configuration),
:mod:`.train` (the training loop), :mod:`.generate` (batched beam search with sampling).
Only :mod:`.data` and :mod:`.config` import without the ``hf`` extra; nothing is imported
here so that ``import cseaug`` stays light.
"""
