"""The visibility pass: what a person cannot see leaves the tree; legitimate hiding is not flagged."""

from __future__ import annotations

import pytest
from selectolax.lexbor import LexborHTMLParser

from crawler import visibility
from crawler.visibility import remove_hidden

CLAIM = "Reviewed by Dr. Jane Roe, MD"


def _visible(html: str) -> tuple[str, list[str], list[bool]]:
    filler = "More visible text. " * 20
    page = f"<html><head></head><body><p>Plain visible words.</p><p>{filler}</p>{html}</body></html>"
    tree = LexborHTMLParser(page)
    hidden = remove_hidden(tree)
    text = tree.body.text(separator=" ")
    return text, hidden.kinds(), [f.chrome for f in hidden.fragments]


@pytest.mark.parametrize(
    ("markup", "kind"),
    [
        (f'<div style="display: none">{CLAIM}</div>', "display_none"),
        (f'<div style="visibility:hidden">{CLAIM}</div>', "visibility_hidden"),
        (f'<div style="opacity:0">{CLAIM}</div>', "transparent"),
        (f'<div style="font-size:0">{CLAIM}</div>', "tiny_font"),
        (f'<div style="font-size:1px">{CLAIM}</div>', "tiny_font"),
        (f'<div style="position:absolute;left:-9999px">{CLAIM}</div>', "off_screen"),
        (f'<div style="text-indent:-10000px">{CLAIM}</div>', "off_screen"),
        (f'<div style="color:#fff;background-color:#ffffff">{CLAIM}</div>', "same_colour"),
        (
            f'<div style="background:white"><span style="color:rgb(255,255,255)">{CLAIM}</span></div>',
            "same_colour",
        ),
        (f"<style>.x {{ color: #000; background: #000 }}</style><div class=x>{CLAIM}</div>", "same_colour"),
        (f"<style>.seo {{ DISPLAY: NONE }}</style><div class=seo>{CLAIM}</div>", "display_none"),
        (f"<div hidden>{CLAIM}</div>", "hidden_attribute"),
        (f'<div aria-hidden="true">{CLAIM}</div>', "aria_hidden"),
        (f"<noscript>{CLAIM}</noscript>", "noscript"),
        (
            f'<div style="position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)">'
            f"{CLAIM}</div>",
            "clipped",
        ),
    ],  # fmt: skip
)
def test_each_kind_of_hiding_is_removed(markup, kind):
    text, kinds, _ = _visible(markup)
    assert "Jane Roe" not in text and "Plain visible words." in text
    assert kinds == [kind]


def test_what_stays_visible():
    text, kinds, _ = _visible(
        '<ul style="font-size:0"><li style="font-size:16px">Menu item shown</li></ul>'  # gap trick
        "<style>@media print { .p { display:none } } .q:hover { display:none }</style>"
        '<p class="p">Printed only hidden</p><p class="q">Hover hidden</p>'
        '<p style="color:#fff">White text on a background set elsewhere</p>'
    )
    for shown in ("Menu item shown", "Printed only hidden", "Hover hidden", "White text on a background"):
        assert shown in text
    assert kinds == []


def test_parent_zero_size_hides_children_that_scale_it():
    text, kinds, _ = _visible('<div style="font-size:0"><p style="font-size:2em">Scaled zero</p></div>')
    assert "Scaled zero" not in text and kinds == ["tiny_font"]


def test_menus_dialogs_and_screen_reader_labels_are_legitimate():
    _, kinds, chrome = _visible(
        '<nav><ul class="sub-menu" style="display:none"><li><a href="/about">About us</a></li></ul></nav>'
        '<div class="cookie-consent" hidden>We use cookies. Privacy policy.</div>'
        '<span class="sr-only" style="position:absolute;width:1px;height:1px;overflow:hidden">'
        "Skip to content</span>"
    )
    assert kinds and all(chrome)


def test_a_page_hidden_as_a_whole_is_kept():
    """Anti-flicker snippets hide the whole page until a script runs: not decidable statically."""
    text, _, _ = _visible(f'<div style="opacity:0"><article>{"Long article text. " * 200}</article></div>')
    assert "Long article text." in text


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_render_uses_the_browsers_computed_visibility():
    """What only the browser knows (a script-set style, layout) is marked by MARK_HIDDEN_SCRIPT in the
    rendered page (the render handler runs it before the snapshot) and removed like static hiding."""
    import asyncio
    import os

    from playwright.async_api import async_playwright

    from crawler.visibility import MARK_HIDDEN_SCRIPT

    if not os.path.exists("/usr/bin/chromium"):
        pytest.fail("Debian chromium is missing: `make setup` installs it (apt-get install chromium)")
    page_html = (
        "<html><body><p>Shown text here, long enough to be the page.</p><p id=js>Hidden by a script</p>"
        '<p style="color:rgb(250,250,250)">Pale on the white canvas</p>'
        '<div style="font-size:0">Zero size <span style="font-size:14px">Reset size</span></div>'
        "<script>document.getElementById('js').style.visibility = 'hidden'</script></body></html>"
    )

    async def render() -> str:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
            )
            page = await browser.new_page()
            await page.set_content(page_html)
            await page.evaluate(MARK_HIDDEN_SCRIPT)
            html = await page.content()
            await browser.close()
            return html

    tree = LexborHTMLParser(asyncio.run(render()))
    hidden = remove_hidden(tree)
    text = tree.body.text(separator=" ")
    assert "Shown text here" in text and "Reset size" in text
    assert "Hidden by a script" not in text and "Pale on the white" not in text and "Zero size" not in text
    assert set(hidden.kinds()) == {"visibility_hidden", "same_colour", "tiny_font"}


@pytest.mark.parametrize("unparsable", [[], ["div..broken"]])
def test_a_long_selector_list_is_cut_to_what_can_match(unparsable):
    """The selectors whose classes or ids the page lacks are left out of a long list: the same nodes,
    in the same order and repeated once per selector matched (quirks mode: the case of names ignored)."""
    page = '<div class="Promo b" id="x"><p class="a">t</p></div><span class="b a">u</span><i class="c">v</i>'
    tree = LexborHTMLParser(page)
    absent = [f".unused-{n} .a" for n in range(visibility._MANY_SELECTORS)]
    selectors = [*absent, ".promo", "div > .a", "#X", ".b.a", "[class*=c]", "i.c", *unparsable, ".missing"]
    selection = visibility._Selection(tree)
    found = [node.mem_id for node in selection.select(selectors)]
    expected = [node.mem_id for node in visibility._query(tree, list(dict.fromkeys(selectors)))]
    assert found == expected
    assert len(found) == 6
    assert ".unused-0" not in selection.names and ".promo" in selection.names


def test_a_stylesheet_is_read_once_for_the_pages_that_share_it(monkeypatch):
    """A site's pages carry the same inline stylesheet: its rules are read on the first page only, and
    each page still gets its own verdicts (the second page has another sheet of its own as well)."""
    reads = []
    read = visibility._Sheet.read.__func__
    monkeypatch.setattr(
        visibility._Sheet, "read", classmethod(lambda cls, text: reads.append(text) or read(cls, text))
    )
    monkeypatch.setattr(visibility, "_SHEETS", visibility._SheetCache(8))
    site = (
        ".promo { display: none } .fine { font-size: 0 } .big { font-size: 16px } "
        ".ink { color: #fff; background: #fff }"
    )
    first = (
        f"<style>{site}</style><div class=promo>{CLAIM}</div>"
        "<div class=fine>tiny <b class=big>shown</b></div>"
    )
    second = (
        f"<style>{site}</style><style>.seo {{ opacity: 0 }}</style>"
        f"<p class=seo>{CLAIM}</p><p class=ink>{CLAIM}</p>"
    )
    text, kinds, _ = _visible(first)
    assert CLAIM not in text and "shown" in text and "tiny" not in text
    assert kinds == ["display_none", "tiny_font"]
    text, kinds, _ = _visible(second)
    assert CLAIM not in text and kinds == ["transparent", "same_colour"]
    assert reads == [site, ".seo { opacity: 0 }"]  # the shared sheet once, the second page's own once
    _, kinds, _ = _visible(first)  # its cached rules were not changed by the second page
    assert kinds == ["display_none", "tiny_font"] and len(reads) == 2


def test_the_sheet_cache_keeps_the_latest_sheets():
    cache = visibility._SheetCache(2)
    sheets = [cache.get(css) for css in (".a{display:none}", ".b{display:none}")]
    assert cache.get(".a{display:none}") is sheets[0]  # a hit moves it to the end
    cache.get(".c{display:none}")  # evicts .b, the least recently used
    assert cache.get(".a{display:none}") is sheets[0]
    assert cache.get(".b{display:none}") is not sheets[1]
