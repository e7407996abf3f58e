"""Tracebacks: the raised exception, the direct cause of a chain, the user's own frame."""

from __future__ import annotations

from traintriage.parse.traceback import parse_traceback

CHAINED = """Traceback (most recent call last):
  File "/home/u/proj/data.py", line 12, in load
    return json.loads(text)
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/home/u/proj/train.py", line 88, in <module>
    main()
  File "/home/u/proj/train.py", line 40, in main
    batch = load(path)
  File "/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 631, in __next__
    data = self._next_data()""".splitlines()


def test_user_frame_is_the_innermost_frame_outside_site_packages() -> None:
    traceback = parse_traceback(CHAINED, "RuntimeError: could not load sample 17")
    assert traceback is not None
    frame = traceback.user_frame
    assert frame is not None
    assert (frame.file, frame.line, frame.function) == ("/home/u/proj/train.py", 40, "main")


def test_chained_traceback_reports_the_direct_cause() -> None:
    traceback = parse_traceback(CHAINED, "RuntimeError: could not load sample 17")
    assert traceback is not None
    assert traceback.chained_from == "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"


def test_no_traceback_header_means_no_traceback() -> None:
    assert parse_traceback(["step 10 loss 2.3"], "ValueError: x") is None


def test_each_frame_keeps_the_source_line_printed_under_it() -> None:
    traceback = parse_traceback(CHAINED, "RuntimeError: could not load sample 17")
    assert traceback is not None
    assert [f.code for f in traceback.frames] == ["main()", "batch = load(path)", "data = self._next_data()"]
    bare = parse_traceback(['Traceback (most recent call last):', '  File "<stdin>", line 1, in <module>',
                            '  File "/srv/x.py", line 3, in f'], "ValueError: x")
    assert bare is not None and [f.code for f in bare.frames] == ["", ""]
