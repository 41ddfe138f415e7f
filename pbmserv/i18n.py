"""The languages a player may read the server's mail in, and their catalogues.

Every template's words are marked for translation (``{% trans %}`` blocks, see
``pbmserv.render``); the words are looked up in a gettext catalogue of the language
being spoken: ``pbmserv/locale/<lang>/LC_MESSAGES/messages.po``, read (and compiled in
memory) the first time that language is spoken.  English is the templates' own words:
it has no catalogue, and a string a catalogue lacks (or has fuzzy, or empty) falls back
to English.

Which language is spoken is a ``ContextVar``, set with ``speaking(lang)`` around the
rendering of one reader's mail (the sender's reply, each board mail): a template needs
no language in its context, and every template it includes speaks the same.  Commands,
game names in commands and notation stay English: they are the contract.
"""

from __future__ import annotations

import gettext as _gettext
import io
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations

#: the language of the templates themselves
ENGLISH = "en"
#: the languages shipped, each by its own name (``notify ... language de``)
LANGUAGES: dict[str, str] = {
    "en": "English",
    "de": "Deutsch",
    "fr": "Français",
    "ja": "日本語",
}

_SPOKEN: ContextVar[str] = ContextVar("pbmserv_language", default=ENGLISH)


def locale_dir() -> Path:
    """The catalogues' folder: ``pbmserv/locale`` (in the source tree and the wheel)."""
    return Path(__file__).resolve().parent / "locale"


def catalogue_path(language: str) -> Path:
    return locale_dir() / language / "LC_MESSAGES" / "messages.po"


@cache
def translations(language: str) -> _gettext.NullTranslations:
    """The catalogue of ``language``, compiled from its ``.po`` file once (English, or a
    language with no catalogue: the templates' own words)."""
    path = catalogue_path(language)
    if language == ENGLISH or not path.is_file():
        return _gettext.NullTranslations()
    with path.open("rb") as po:
        catalog = read_po(po, locale=language)
    compiled = io.BytesIO()
    write_mo(compiled, catalog)  # (fuzzy entries left out: they fall back to English)
    compiled.seek(0)
    return Translations(fp=compiled)


def spoken() -> str:
    """The language being spoken now (``speaking``), English unless told."""
    return _SPOKEN.get()


@contextmanager
def speaking(language: str | None) -> Iterator[str]:
    """Render in ``language`` inside the block (None, or one not shipped: English)."""
    chosen = language if language in LANGUAGES else ENGLISH
    token = _SPOKEN.set(chosen)
    try:
        yield chosen
    finally:
        _SPOKEN.reset(token)


def switch(language: str) -> None:
    """Speak ``language`` from now on, to the end of the enclosing ``speaking`` block:
    a player who has just chosen a language reads its confirmation in it."""
    _SPOKEN.set(language if language in LANGUAGES else ENGLISH)


def gettext(message: str) -> str:
    """``message`` in the language spoken (itself where the catalogue lacks it)."""
    if not message:
        return message  # (the empty msgid is a catalogue's header)
    return translations(_SPOKEN.get()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of ``singular``/``plural`` for ``n`` in the language spoken (its own
    plural rule: one form in Japanese, ``n > 1`` in French)."""
    return translations(_SPOKEN.get()).ngettext(singular, plural, n)


def pgettext(context: str, message: str) -> str:
    return translations(_SPOKEN.get()).pgettext(context, message)


def npgettext(context: str, singular: str, plural: str, n: int) -> str:
    return translations(_SPOKEN.get()).npgettext(context, singular, plural, n)


def language_tag(header: str | None) -> str | None:
    """The first shipped language a ``Content-Language`` (or ``Accept-Language``) header
    names: ``"ja-JP"`` gives ``ja``, ``"de-CH, en"`` gives ``de``; None if it names none."""
    if not header:
        return None
    for part in header.split(","):
        tag = part.split(";")[0].strip().lower()
        primary = tag.split("-")[0].split("_")[0]
        if primary in LANGUAGES:
            return primary
    return None


def N_(message: str) -> str:
    """Mark ``message`` for translation where it is written (a command's summary): it
    is extracted into the catalogues, and looked up where a template says it (the
    ``translated`` filter)."""
    return message
