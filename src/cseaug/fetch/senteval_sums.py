"""The sha256 of each file of SentEval's STS evaluation sets, as ``cseaug data fetch`` serves them.

The files are SentEval's layout of the SemEval STS 2012-2016 test sets and the STS
Benchmark (``get_transfer_data.bash``: Moses-tokenised, lowercased) as committed in
``amao0o0/SynWMD`` at ``59042a9`` (``data/downstream/STS/``), and SemEval-2014's SICK split
files as committed in ``a389965626/Sick-`` at ``1c9d228``. Each sha256 is that of the
committed file; ``../shared/data/senteval_sts`` and ``../shared/data/sick`` hold
byte-identical copies (their ``SOURCES.md``), which is where these values were computed.
:mod:`cseaug.fetch.catalog` builds one catalogue entry per folder from these tables.
"""

from __future__ import annotations

STS12: dict[str, str] = {
    "00-readme.txt": "d47be1641ac98ac312de6f0746b65683df392f70d843eaac9fb10ebd4cb4cb63",
    "STS.gs.MSRpar.txt": "5526be59228bc34ccb3cb6f1f56c0d7278d3419b8886713ae016fd92b151f19c",
    "STS.gs.MSRvid.txt": "9c6096c6bcfb0144c8bbddb00900ca9198c88498630cd0c8f08d18365f1d7150",
    "STS.gs.SMTeuroparl.txt": "708530c4d006d06881f3289fce35d624d7efe562dcf0fe5f8aa0eec3a135f6d4",
    "STS.gs.surprise.OnWN.txt": "088d8ca22c0aa406e4a5d2e6e308a4f38b482b8e736c2445a38ffb6e4c4fb4fd",
    "STS.gs.surprise.SMTnews.txt": "aa6dfc868db333c43dc59be14d46fa6587c7ebddc0d497e717f647bf35121cf1",
    "STS.input.MSRpar.txt": "093b36d9cc1cd26364885c0f5d5be7ed024f475bceb552384f7fd489174b3c4f",
    "STS.input.MSRvid.txt": "5a007f6882ed3398afdbb0d1ed093457c4adbac82a5b411ea356e0985650c39f",
    "STS.input.SMTeuroparl.txt": "971d76409ebd10a2285a846a20fd035e4e4ba2f85054e2869f5b41bb3182ca82",
    "STS.input.surprise.OnWN.txt": "1059c1b66fc72071881175754d3a01158e423ec6b032e1dd87b18fc7ecb1e8d9",
    "STS.input.surprise.SMTnews.txt": "048cbedbba58a136722e9d102f0416326aa04644180e031318c28caf90258585",
}
"""``senteval_sts/STS12-en-test/``: file name -> sha256."""

STS13: dict[str, str] = {
    "00-readme.txt": "531ee28a3787b11dd14dda8d809e724479d87f9705120494aad584c9cb14a6ce",
    "STS.gs.FNWN.txt": "8ca95b7228119578e2007839cf7969f22c4f1fd41fd610c4b7f9683072d98066",
    "STS.gs.OnWN.txt": "0cd497aaddb00a2fb6db25f77bccfc09e8aa012e11549b81b434bab1a27ad954",
    "STS.gs.headlines.txt": "f49f64089011436dd296ef384c07160219406feef7dc4b9fa2af52a519f32bc6",
    "STS.input.FNWN.txt": "7bcc0fc86d30c8980c9ac9735c612492abd236524bec32bed98070e225b2e023",
    "STS.input.OnWN.txt": "3c616d878f3d7bfbadce1657bcc5a78d7d429fd10fc2e31195d314543fecab1a",
    "STS.input.headlines.txt": "e60c724b4b620802f42d7696f27e6a8153205a716b142f0a051e2b2b2e99e505",
}
"""``senteval_sts/STS13-en-test/``: file name -> sha256."""

STS14: dict[str, str] = {
    "00-readme.txt": "9fe9d64362ac42ed24010d5b00f227235a660dc2466fba743f31051fd121ef73",
    "STS.gs.OnWN.txt": "1c80147df270ea4cfce14a47ed29f8a2f10d5dc016d02836077fd786ff7f535b",
    "STS.gs.deft-forum.txt": "ba6dc76696b5c93985590a325b4d142449932cdf0d715b2bab1b1743fe3c488c",
    "STS.gs.deft-news.txt": "105c5b333abd50c274efb4dae9e3e0dab36ed63eee780cfb49955b1586bd62f2",
    "STS.gs.headlines.txt": "f243c34647255cd0b994565ed4f58dd31506e7d9c9d6250d1a6dd14095625832",
    "STS.gs.images.txt": "fc994ebacc7074c332626fa9e29542d7340a48a3cdb999b47cdb59c378523a62",
    "STS.gs.tweet-news.txt": "0098c644bfeaa2d511a8297b1940771865900c372c9dd49a62726dc5ec02c9a3",
    "STS.input.OnWN.txt": "52f462f085f6920f70115761c50924f16a4fd6caec2cfccec82311619c1be326",
    "STS.input.deft-forum.txt": "7d52c9b130cf0d0291b2f2ea5324363219267ffcecf0a56f4306503adb231714",
    "STS.input.deft-news.txt": "2416e9f1a13136ac213cbfd413d98cd8504edcca21c87deef3aa5c1207bc1448",
    "STS.input.headlines.txt": "08e808b7786ec7b830badf9843c55fc7930467ae75e2cd6fe8fd518496b66730",
    "STS.input.images.txt": "3d44abc6af8d8b1c69b6e93bb386176d5896985dba91a13e5587350e92a90c83",
    "STS.input.tweet-news.txt": "6b0173393868ea87f315f32971bff68b328e466678f481d4710d8488e7cc90de",
}
"""``senteval_sts/STS14-en-test/``: file name -> sha256."""

STS15: dict[str, str] = {
    "00-readme.txt": "38fe35ef21a0f224b6cc51e00d138810063521cd90458a7d77e4e0aa3a79542d",
    "STS.gs.answers-forums.txt": "1644301a7540e5484da285002e9269062852efb2272be614cad99c9530f6a102",
    "STS.gs.answers-students.txt": "028db213140f8c7aef7497c4ae38b6380938f20359852231669c83dce11c3701",
    "STS.gs.belief.txt": "5736192faaccbdbecd0ef6b73ec04b24115cd2e48d55dc3b1b170da3d2a81c75",
    "STS.gs.headlines.txt": "e8e432f769c8a94ddb62ae3343890ac24a9dd78a116d56c707313bc59413dd56",
    "STS.gs.images.txt": "ed8878209098c77ca7f02ac413d3fd698f92ad3425999555e50fda89fc46012a",
    "STS.input.answers-forums.LICENSE": "65718ec23624d97933308adc08cb270db798cdd5593d35501be9bfda5ba1a28a",
    "STS.input.answers-forums.txt": "65e3f55333c53897c6791ff154a490857a827d4699bc2d1f18e53693dbfd0c39",
    "STS.input.answers-students.txt": "4893f736e84cea176c39c882250f6513d5bbcfa6ebe8d3ffabcef6056d0471a7",
    "STS.input.belief.txt": "ce09c4713480fd622afbc362d22dd7ffb4e5fc6ee676602368af6f63f9ea7cb5",
    "STS.input.headlines.txt": "91f2a6152c574e17544c5e8a856338fa8632898b44c10d2cc9c9516ddfe682c5",
    "STS.input.images.txt": "98b2f560e4a3e13253f10b7fd8855006dd327ab272559ab690f2c4e1e5aebca7",
}
"""``senteval_sts/STS15-en-test/``: file name -> sha256."""

STS16: dict[str, str] = {
    "LICENSE.txt": "94b7380d16f832ae97bcb48536f22fe9a22e8e20f8cf88a9298f65c556e3a6f2",
    "README.txt": "1b74b4c84a59f139153f0348e212bfdb33dffd3b008dfb2c4f7728c4fa27141f",
    "STS.gs.answer-answer.txt": "332efd741b0cb247d20dd2a6cec854360c921c7e6b395f328f562d8d26057214",
    "STS.gs.headlines.txt": "01e33a95996201a6e81e3cce9eda0f15048b77613ea64dce2929bb35479f7d85",
    "STS.gs.plagiarism.txt": "29984944a91aaff484f2b2e5d4d434fc8a6f5ef6f578a880cccd2786f5142fdc",
    "STS.gs.postediting.txt": "81947ed9dbe7f85b7bd249df68ed5c7b2f16f06390ad568eb5554b1e26bc5577",
    "STS.gs.question-question.txt": "cf9ebf9d140191f73620cda0560947ad9283c910735d0d541b8a401a5e64afb0",
    "STS.input.answer-answer.txt": "92e66262159e39cb623690e243179f447fb08d493ccec6e600a021b76dd6fe9a",
    "STS.input.headlines.txt": "f439e10cf28d9cb4dc7642a072f6ac9ac48922f147241af8fe5df3048f24804b",
    "STS.input.plagiarism.txt": "78f5fb0756400485676f82a47703dab0402ba273a887a6d846e9790ff9300f87",
    "STS.input.postediting.txt": "cb8e2337a17ecc60a4fb57ecb17c692e13257802d24c9bd401b4bfa574510463",
    "STS.input.question-question.txt": "0b8d495236ea8c9e9eddf529b40d8570e4b38ef29a40d194d5487613b064a4bc",
}
"""``senteval_sts/STS16-en-test/``: file name -> sha256."""

STSB: dict[str, str] = {
    "LICENSE.txt": "3dfc3217395f8c5dd05c5f8995f25fe2f8fd258e6dd770b3de480749caee8c70",
    "readme.txt": "e9488363d211c32ca5e912954f16eb9233cfed1b5b4b0475d0d812d35d7c8ef1",
    "sts-dev.csv": "fd3e4e429f32e352c7c7c76aea5c3383ee95eb98e482796b34e4e7b88a8392f3",
    "sts-test.csv": "4cde2a19c9b7232c9ce92a89e5afd99805c8f66ba432a7824e0a5bad1a0a0ea0",
    "sts-train.csv": "6466868d4b49a575530554224fe2e7d8cc03e83e1f326c90e561b81bf5031fec",
}
"""``senteval_sts/STSBenchmark/``: file name -> sha256."""

SICK_SPLITS: dict[str, str] = {
    "SICK_test_annotated.txt": "a7b22f10009c0094f213d7ad721152c5d0b63225c9e440fe1d754dbc61b0f21b",
    "SICK_train.txt": "f4d128aad59deb5f3d539a97fb8bf23ee111df99c904387b5025c69b7fc31b81",
    "SICK_trial.txt": "5e24b7fb1639e20a9c39f34dd2868e0cd05abbddce749063224a822109b9038c",
}
"""``sick/semeval2014_splits_noheader/``: file name -> sha256."""
