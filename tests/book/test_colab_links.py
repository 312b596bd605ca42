"""_ext/colab_links.py: every chapter page opens its learner edition and the full chapter in Colab."""

import re

import pytest
from bookfiles import ROOT, config, load_extension, resolve, toc_files

HTML = ROOT / "_build" / "html"


def test_colab_addresses_follow_the_repository():
    links = load_extension("colab_links")
    assert links.colab_url("https://github.com/Some-One/my-book", "main", "learner/05_x.ipynb") == (
        "https://colab.research.google.com/github/Some-One/my-book/blob/main/learner/05_x.ipynb"
    )
    bar = links.bar("https://github.com/a/b.git", "dev", "05_x")
    assert 'href="https://colab.research.google.com/github/a/b/blob/dev/learner/05_x.ipynb"' in bar
    assert 'href="https://colab.research.google.com/github/a/b/blob/dev/chapters/05_x.ipynb"' in bar
    words = {"intro": "Colab:", "exercises": "ex", "learner": "(l)", "full": "all"}
    bar = links.bar("https://github.com/a/b", "main", "05_x", words, "learner/ko/05_x.ipynb")
    assert 'Colab: <a href="https://colab.research.google.com/github/a/b/blob/main/learner/ko/05_x.ipynb">ex</a>' in bar
    with pytest.raises(ValueError, match="GitHub address"):
        links.colab_url("https://gitlab.com/a/b", "main", "x.ipynb")


CHAPTERS = [e for e in toc_files() if re.fullmatch(r"\d\d_\w+", resolve(e).stem)]


@pytest.mark.built_book
@pytest.mark.skipif(not (HTML / "index.html").is_file(), reason="book not built; run `make book`")
@pytest.mark.parametrize("entry", CHAPTERS, ids=lambda e: resolve(e).stem)
def test_every_chapter_page_opens_its_learner_edition_in_colab(entry):
    stem = resolve(entry).stem
    page = (HTML / "chapters" / f"{stem}.html").read_text(encoding="utf-8")
    repo = config()["repository"]["url"].removeprefix("https://github.com/")
    for folder in ("learner", "chapters"):
        url = f"https://colab.research.google.com/github/{repo}/blob/main/{folder}/{stem}.ipynb"
        assert f'href="{url}"' in page, f"{stem}.html has no Colab link to {folder}/{stem}.ipynb"
        assert (ROOT / folder / f"{stem}.ipynb").is_file()


@pytest.mark.built_book
@pytest.mark.skipif(not (HTML / "ko" / "index.html").is_file(), reason="Korean book not built; run `make book`")
@pytest.mark.parametrize("entry", CHAPTERS, ids=lambda e: resolve(e).stem)
def test_every_korean_chapter_page_opens_its_korean_learner_edition_where_there_is_one(entry):
    stem = resolve(entry).stem
    page = (HTML / "ko" / "chapters" / f"{stem}.html").read_text(encoding="utf-8")
    repo = config()["repository"]["url"].removeprefix("https://github.com/")
    folder = "learner/ko" if (ROOT / "learner" / "ko" / f"{stem}.ipynb").is_file() else "learner"
    url = f"https://colab.research.google.com/github/{repo}/blob/main/{folder}/{stem}.ipynb"
    assert f'href="{url}"' in page, f"ko/{stem}.html has no Colab link to {folder}/{stem}.ipynb"
