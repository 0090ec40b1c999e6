import pytest

from neardup import NormalizeParams, ShingleParams, fingerprint, normalize, shingle_ids, shingles, tokenize
from neardup.errors import ConfigError
from neardup.hashing import encode, hash64


def test_nfkc_casefold_punctuation_whitespace():
    text = "Ｆｕｌｌ-width ＡＢＣ,  STRASSE\tand Straße… “quoted”!"
    assert normalize(text) == "full width abc strasse and strasse quoted"
    assert normalize(text, NormalizeParams(casefold=False)) == "Full width ABC STRASSE and Straße quoted"
    kept = normalize(text, NormalizeParams(remove_punctuation=False))
    assert "“quoted”!" in kept
    assert normalize("a \n\n b", NormalizeParams(collapse_whitespace=False)) == "a \n\n b"


def test_unicode_punctuation_is_removed_not_only_ascii():
    assert tokenize("«bonjour»—monde¿qué? 「東京」") == ["bonjour", "monde", "qué", "東", "京"]


@pytest.mark.parametrize("text, expected", [
    ("東京は晴れです", ["東", "京", "は", "晴", "れ", "で", "す"]),
    ("ภาษาไทยง่าย", list("ภาษาไทยง่าย")),
    ("カタカナ and 漢字", ["カ", "タ", "カ", "ナ", "and", "漢", "字"]),
    ("한국어 문장", ["한국어", "문장"]),  # Korean is written with spaces
])
def test_scripts_without_spaces_do_not_collapse(text, expected):
    assert tokenize(text) == expected


def test_long_chinese_text_gives_many_shingles():
    text = "我们在这里讨论近似重复文档的检测方法以及它们在网络爬虫中的应用" * 3
    ids = shingle_ids(text, ShingleParams(k=5))
    assert ids.size > 30


def test_units():
    assert tokenize("Ab, c!", "char") == list("ab c")
    assert tokenize("First line.\n\nSecond  LINE\n", "line") == ["first line", "second line"]
    assert shingles("a b c d", ShingleParams(k=2, unit="line")) == ["a b c d"]


def test_short_documents_get_one_shingle_and_empty_none():
    assert shingles("just two", ShingleParams(k=5)) == ["just two"]
    assert shingle_ids("", ShingleParams()).size == 0
    assert shingle_ids("  ...  ", ShingleParams()).size == 0


def test_multiset_option_a():
    p = ShingleParams(k=4, multiset=True)
    ids = shingle_ids("a rose is a rose is a rose", p)
    assert ids.size == 5  # 3 distinct shingles, two of them repeated once
    assert set(shingle_ids("a rose is a rose is a rose", ShingleParams(k=4)).tolist()) <= set(ids.tolist())


def test_hash_names_and_encoding():
    assert hash64("é") == hash64("é".encode())
    assert hash64("abc", "md5") == int("900150983cd24fb0", 16)
    assert hash64("abc", "sha1") == int("a9993e364706816a", 16)
    with pytest.raises(TypeError):
        encode(3)
    with pytest.raises(ConfigError):
        hash64("x", "crc")


def test_exact_fingerprint_ignores_case_and_punctuation():
    assert fingerprint("Hello,  World!") == fingerprint("hello world")
    assert fingerprint("hello world") != fingerprint("hello there world")


def test_bad_params_messages():
    with pytest.raises(ConfigError, match="The 'k' parameter of ShingleParams must be an int in the range"):
        ShingleParams(k=0)
    with pytest.raises(ConfigError, match="'unit'"):
        ShingleParams(unit="sentence")


def test_ascii_fast_path_uses_the_same_classes_as_the_table():
    import re

    from neardup.text.charclass import PUNCT, WORD, class_table

    table = class_table()
    for c in range(128):
        ch = chr(c)
        assert (table[c] == WORD) == bool(re.fullmatch(r"[0-9A-Za-z_]", ch)), c
        assert (table[c] in (WORD, PUNCT)) == bool(re.fullmatch(r"[!-~]", ch)), c


@pytest.mark.parametrize("remove", [True, False])
def test_ascii_and_unicode_paths_agree(remove):
    import re

    from neardup.text.charclass import PUNCT, SOLO, WORD, regex_sources

    src = regex_sources()
    word_re = re.compile(f"[{src[WORD] + ('' if remove else src[PUNCT])}]+|[{src[SOLO]}]")
    text = "Hello, world! x_y = 3.14; (a|b) ~ tab\there\n" * 3
    assert tokenize(text, params=NormalizeParams(remove_punctuation=remove)) == word_re.findall(text.casefold())
