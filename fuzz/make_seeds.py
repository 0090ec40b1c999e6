"""Writes the seed inputs of each target to fuzz/seeds/TARGET/ (deterministic: fixed texts and
a seeded random.Random; run again after changing a target's input format)."""

import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

JSONL_LINES = [
    b'{"id": "a", "text": "plain ascii text"}',
    b'{"text": "no id at all"}',
    b'{"id": null, "text": "null id"}',
    b'{"id": "", "text": "empty id"}',
    b'{"id": 17, "text": "integer id"}',
    b'{"id": -0, "text": "minus zero id"}',
    b'{"id": 1234567890123456789012, "text": "huge id"}',
    b'{"id": 1.5, "text": "float id"}',
    b'{"id": ["x"], "text": "list id"}',
    b'{"id": "caf\\u00e9 \\ud83d\\ude00", "text": "escaped id"}',
    '{"id": "naïve ✓", "text": "utf-8 id"}'.encode(),
    b'{"id": "esc", "text": "line\\nbreak \\"quoted\\" back\\\\slash \\/ \\b\\f\\r\\t tab \\u0000 nul"}',
    b'{"id": "lone-hi", "text": "bad \\ud83d alone"}',
    b'{"id": "overlong", "text": "\xc0\xaf"}',
    b'{"id": "surrogate-utf8", "text": "\xed\xa0\x80"}',
    b'\xef\xbb\xbf{"id": "bom", "text": "byte order mark"}',
    b'{"id": "crlf", "text": "windows line"}\r',
    b'  {"id": "ws", "text": "surrounding white space"}  \t',
    b'[1, 2, 3]',
    b'{"id": "space-text", "text": "  \\n\\t "}',
    '{"id": "unicode-space", "text": "\u3000\u00a0\u2003x"}'.encode(),
    b'{"id": "dup-text", "text": "first", "text": "second"}',
    b'{"id": "esc-key", "t\\u0065xt": "escaped key"}',
    b'{"id": "other", "text": "fields", "n": -1.5e-7, "b": [true, false, null, {"x": [1, {}, []]}]}',
    b'{"id": "deep", "text": "nested", "d": ' + b"[" * 70 + b"]" * 70 + b"}",
    b'{"id": "inf", "text": "big exponent", "x": 1e400}',
    b'{"id": "longnum", "text": "long", "x": 123456789012345678901234567890}',
    '{"id": "nfkc", "text": "the ﬁle ﬂow: ½ and Ⅻ, fullwidth ＡＢＣ"}'.encode(),
    '{"id": "nfkc-escaped", "text": "escaped \\ufb01 ligature \\u00bd"}'.encode(),
]

#: Records of HTML pages with their URL (read with the fields "id", "text" and "url").
PAGE_LINES = [
    b'{"id": "page", "url": "https://example.org/a?b=1", "text": "<p>a page</p>"}',
    b'{"url": "https://ex\\u00e4mple.org/\\ud83d\\ude00", "text": "<p>escaped URL</p>", "id": 3}',
    b'{"id": "url-null", "url": null, "text": "<p>no URL</p>"}',
    b'{"id": "url-obj", "url": {"href": "x"}, "text": "<p>URL not a string</p>"}',
    b'{"id": "url-empty", "url": "", "text": "<p>empty URL</p>"}',
    b'{"id": "url-twice", "url": "a", "url": "b", "text": "<p>two URLs</p>"}',
    b'{"id": "url-lone", "url": "\\udc00", "text": "<p>lone surrogate in the URL</p>"}',
]

KERNEL_TEXTS = [
    "Hello World, this is the splitter's ASCII path; and some café " * 3,
    "Ünïcödé Straße ǅemal ﬁne ＡＢＣ café cafe\u0301 Ⅻ ½ x²\r\n中文字符串，日本語のテキスト。",
    "tab\there\x0bvt\x0cff\x1cfs\x1dgs\x1ers\x1fus\u2029para\u00a0nbsp\u3000ideo\u200bzw\r",
    "emoji 😀👍🏽 math 𝐀𝐁 ∑∫ ₿ € ¥ \x00nul \x7f del end",
    "dots... em—dash «quotes» (paren) [brackets] {braces} #hash @at $5.00 100% a_b a-b",
    "ΐ" * 70 + " ſ İ ı ﬃ ǰ",
]


def write(target: str, items: list[bytes]) -> None:
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    for old in os.listdir(d):
        os.remove(os.path.join(d, old))
    for i, data in enumerate(items):
        with open(os.path.join(d, f"seed-{i:03d}"), "wb") as fh:
            fh.write(data)


def main() -> None:
    rng = random.Random(19)
    jsonl = [bytes([0, 0, 1]) + b"\n".join(JSONL_LINES) + b"\n", bytes([0, 200, 0]) + b"\n".join(JSONL_LINES)]
    for line in JSONL_LINES:
        jsonl.append(bytes([rng.randrange(6), rng.randrange(192), 1]) + line)
    jsonl.append(bytes([0, 0, 0]) + b"\n".join(PAGE_LINES) + b"\n")
    jsonl.extend(bytes([0, 0, 0]) + line for line in PAGE_LINES)  # no draw: the other seeds stay as they were
    # a "\r\n" line exactly at the limit: "\r" is not counted (the reader's measure)
    at_limit = b'{"id": "crlf", "text": "at the limit"}'
    jsonl.append(bytes([0, 192 + len(at_limit), 0]) + at_limit + b"\r\n")
    write("jsonl", jsonl)
    kernel = []
    for i, text in enumerate(KERNEL_TEXTS):
        for unit in range(3):
            head = bytes([unit, 1 + i % 5, 7 if i % 2 else 3, i % 3, 4, 0, 42, 17])
            kernel.append(head + text.encode("utf-8", "surrogatepass"))
    kernel.append(bytes([0, 2, 7, 1, 4, 0, 1, 5]) + bytes(rng.randrange(256) for _ in range(200)))
    write("kernel", kernel)
    hamming = []
    for k in range(8):
        hamming.append(bytes([k, 0, 3, 2]) + struct.pack("<QQ", rng.getrandbits(64), rng.getrandbits(64))
                       + bytes([30]) + bytes(rng.randrange(256) for _ in range(120)))
    write("hamming", hamming)
    args = [bytes([w, m]) + bytes(rng.randrange(256) for _ in range(160)) for w in range(12) for m in range(3)]
    write("kernel_args", args)
    pages = [
        b"<!doctype html><html><head><title>T &amp; x</title><style>p{}</style></head><body><nav>menu</nav>"
        b"<main><h1>Head</h1><p>Text <a href=x>link</a> more.</p></main><footer>foot</footer></body></html>",
        b"<div class='sidebar toc' id=menu hidden>n</div><article role=main><p>a<br>b</p><table><tr><td>c<td>d"
        b"</table></article><script>if (a<b) {x='</div>'}</script><!-- comment <p> -->",
        b"<p unclosed <a href='x>y'>q</a><template><p>t</p></template><div style='display:none'>h</div>",
        "<html><body><p>caf\u00e9 \u4e2d\u6587 \U0001f600</p><p aria-hidden=true>x</p></body></html>".encode(),
        b"<title>one<title>two</title><noscript>n</noscript><iframe>i</iframe><svg><p>s</p></svg>",
        b"\xff\xfe<\x00p\x00>\x00 \xc0\xaf \xed\xa0\x80 <p>invalid utf-8</p>",
        b"<" * 40 + b">" * 40 + b"<a><a><a>" + b"</a>" * 5 + b"<!--" + b"-" * 20,
        b"<DIV CLASS=NAV-BAR><LI><A HREF=#>Home</A></LI></DIV><SECTION ROLE=navigation>s</SECTION>",
        # what the whole-page fingerprint reads and skips: shown raw text, nested templates, an
        # unclosed noscript, entities, white space of every kind, a '<' that opens no tag
        b"<xmp>a <b> c</xmp><template>x<template>y</template>z</template>w<noembed>e</noembed>\t\f\r\n"
        b"<textarea>t</textarea>&amp;&#60; 1 < 2 <noscript>n<p>m<plaintext>p <q> r",
        # the svg cut: cut, nested, self-closing, and given up (a breakout tag, CDATA, a style
        # with a tag, an end tag of an element outside, an svg never closed)
        b"<p>a<svg class=nav><svg><g/></svg><title>t</title><style>s{}</style><a>l</a></svg>b</p><svg/>"
        b"<nav>n</nav><svg><div>d</div></svg><svg><![CDATA[</svg>]]></svg><svg><style>a<b></style></svg>"
        b"<div><svg><g></div></svg><SVG><G></P></G></SVG><math><svg></svg></math><svg><text>never",
        # navigation with buttons and icons: cut, a button in a button, an svg that breaks out
        b"<nav><button>m<p>x</button><a><svg><g/></svg>h</a><svg/></nav><nav><button>a<button>b</button></nav>"
        b"<button><nav>n</nav></button><nav><svg><div>d</div></svg></nav><nav><svg><title>t</svg></nav>"
        b"<nav><form><input></form></nav><form><nav><form>x</form></nav></form><nav><form><div></form></nav>",
    ]
    htmlscan = [bytes([m]) + page for page in pages for m in range(3)]
    htmlscan.append(bytes([0]) + bytes(rng.randrange(256) for _ in range(300)))
    write("htmlscan", htmlscan)
    postings = [bytes([0, 0, n, bits]) + bytes(rng.randrange(256) for _ in range(8 * n))
                for n, bits in ((1, 1), (3, 8), (40, 20), (129 - 0, 33), (200, 56), (60, 57), (70, 64))]
    postings.append(bytes([1, 0, 150]) + bytes(rng.randrange(256) for _ in range(1200)))
    raw_blocks = [bytes([7, 3, 255]), bytes([64, 2]) + bytes(range(9)), bytes([0, 1, 1]), bytes([65, 0]), b"",
                  bytes([1, 127]) + bytes(rng.randrange(256) for _ in range(16)), bytes([13, 255, 1, 2, 3])]
    for block in raw_blocks:
        # mode 2, two blocks (8 bytes of first key, a length byte, the data), no last one
        postings.append(bytes([2, 2]) + bytes(8) + bytes([len(block)]) + block
                        + bytes(rng.randrange(256) for _ in range(8)) + bytes([2, 1, 0, 0]))
    write("postings", postings)


if __name__ == "__main__":
    main()
