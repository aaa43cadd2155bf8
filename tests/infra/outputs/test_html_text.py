"""HTML to Markdown in pieces: what is kept, what is dropped, and where a big page is cut."""

from __future__ import annotations

from infra.outputs.html_text import MAX_PIECE_FACTOR, in_raw_text, markdown_blocks, safe_cut, to_markdown

PAGE = (
    "<html><head><title>t</title><style>p{}</style><script>var a = '<p>';</script></head><body>"
    "<nav><a href='/'>Home</a> Menu</nav><header>Site banner</header>"
    "<h1>Title <a class='headerlink' href='#t'>¶</a></h1>"
    "<p>See <a href='https://x.test/y' title='a tooltip'>the docs</a>.</p>"
    "<ul><li>one</li><li>two</li></ul><pre><code>print(1)</code></pre><footer>Copyright</footer></body></html>"
)


def test_headings_lists_links_and_code_are_kept_and_furniture_dropped() -> None:
    text = to_markdown(PAGE)
    for kept in ("# Title", "[the docs](https://x.test/y)", "- one", "- two", "print(1)"):
        assert kept in text
    for dropped in ("Menu", "Site banner", "Copyright", "var a", "p{}", "¶", "<", "tooltip"):
        assert dropped not in text


def test_a_page_in_pieces_keeps_every_paragraph_in_order() -> None:
    paragraphs = [f"paragraph number {n}" for n in range(200)]
    html = "<html><body>" + "".join(f"<p>{p}</p>" for p in paragraphs) + "</body></html>"
    data = html.encode()
    blocks = [data[i : i + 100] for i in range(0, len(data), 100)]
    pieces = list(markdown_blocks(blocks, piece_chars=500))
    text = b"".join(pieces).decode()
    assert len(pieces) > 5
    assert [line for line in text.splitlines() if line] == paragraphs


def test_an_empty_or_blank_page_has_no_text() -> None:
    assert list(markdown_blocks([b"  \n"])) == []
    assert b"".join(markdown_blocks([b"<html><script>x()</script></html>"])) == b""


def test_a_cut_never_falls_inside_a_script_or_style() -> None:
    text = "<p>a</p><script>if (x) { s = '</p>'; }</script><div>b"
    cut = safe_cut(text, 1000)
    assert cut == len("<p>a</p>")
    assert in_raw_text(text, text.index("</p>'")) and not in_raw_text(text, 0)
    assert not in_raw_text("<style>a{}</style><p>", len("<style>a{}</style>"))


def test_with_no_place_to_cut_it_waits_then_cuts_where_it_ends() -> None:
    assert safe_cut("<script>" + "x" * 50, 10) is None
    long = "y" * (MAX_PIECE_FACTOR * 10)
    assert safe_cut(long, 10) == len(long)


def test_a_cut_after_the_first_piece_is_taken_when_the_piece_has_none() -> None:
    text = "z" * 30 + "</p>" + "w" * 5
    assert safe_cut(text, 10) == 34


def test_a_piece_dense_with_control_characters_still_converts() -> None:
    """The converter refuses a piece with "excess control bytes" as binary (found by fuzzing): one such piece
    cost the whole page its text view. Control characters are not visible text, so they go first."""
    noisy = "<p>" + "\x01\x11\x7f" * 20 + "kept</p><p>tab\there</p>"
    assert to_markdown(noisy) == "kept\n\ntab\there\n"
    pieces = b"".join(markdown_blocks([("<p>ok</p>" * 20 + noisy * 3).encode()], piece_chars=64)).decode()
    assert pieces.count("kept") == 3 and pieces.count("ok") == 20
