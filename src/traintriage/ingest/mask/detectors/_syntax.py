"""Regex pieces shared by detectors that read ``key = value`` in its many log spellings.

Covered spellings: env dumps (``KEY=v``), YAML (``key: v``), JSON and Python reprs
(``"key": "v"``, ``'key': 'v'``, ``key='v'``), escaped JSON (``\\"key\\": \\"v\\"``),
``os.environ["KEY"] = "v"``, Go (``key := v``) and Ruby (``key => v``).
"""

from __future__ import annotations

KEY_CLOSE = r"""(?:\\?["'`])?\]?"""
ASSIGN = r"""[ \t]{0,3}(?::=|=>|=|:)[ \t]{0,3}"""
OPEN = r"""(?:\\?["'`])?"""
# A bare value stops at whitespace, quotes and escape sequences such as a printed "\r\n".
BARE = r"""(?:[^\s'"`\\]|\\(?![nrt"'\\]))+"""
# A value in quotes; the quote may itself be escaped (JSON inside a string).
QUOTED = r"""(?P<q>\\?["'])(?P<s2>[^\n]{1,1000}?)(?P=q)"""

# Hyperscan flavour (no look-around, no back-references), single line.
HS_KEY_CLOSE = r"""(?:\\?["'`])?\]?"""
HS_ASSIGN = r"""[ \t]{0,3}(?::=|=>|=|:)"""
