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


IPYTHON_7_COLAB = """---------------------------------------------------------------------------
KeyError                                  Traceback (most recent call last)
[<ipython-input-4-0d1c2b3a4f5e>](https://localhost:8080/#) in <module>()
      2 epochs = 3
----> 3 history = fit(model, loader)

2 frames
<ipython-input-2-77aa01b2c3d4> in fit(model, loader)
     11     for batch in loader:
---> 12         x = batch["pixel_values"]

[/usr/local/lib/python3.7/dist-packages/datasets/arrow_dataset.py](https://localhost:8080/#) in __getitem__(self, key)
   2164         if key not in self.column_names:
-> 2165             raise KeyError(key)
""".splitlines()

IPYTHON_8 = """---------------------------------------------------------------------------
ValueError                                Traceback (most recent call last)
Cell In[7], line 5
      3 model.compile(optimizer="adam", loss="mse")
----> 5 model.fit(x_train, y_train, epochs=2)

File /opt/conda/lib/python3.10/site-packages/keras/src/utils/traceback_utils.py:122, in filter_traceback.<locals>.error_handler(*args, **kwargs)
    119     filtered_tb = _process_traceback_frames(e.__traceback__)
--> 122     raise e.with_traceback(filtered_tb) from None
""".splitlines()


def test_ipython_7_frames_with_colab_links_give_the_cell_and_the_raising_line() -> None:
    traceback = parse_traceback(IPYTHON_7_COLAB, "KeyError: 'pixel_values'")
    assert traceback is not None
    assert [(f.file, f.line, f.function) for f in traceback.frames] == [
        ("ipython-input-4-0d1c2b3a4f5e", 3, "<module>"),
        ("ipython-input-2-77aa01b2c3d4", 12, "fit"),
        ("/usr/local/lib/python3.7/dist-packages/datasets/arrow_dataset.py", 2165, "__getitem__"),
    ]
    assert traceback.frames[-1].code == "raise KeyError(key)"
    assert traceback.user_frame == traceback.frames[1]


def test_ipython_7_prints_a_modules_frame_without_brackets() -> None:
    lines = """---------------------------------------------------------------------------
NameError                                 Traceback (most recent call last)
<ipython-input-3-5f0e9d2c1b7a> in <module>
      2 model = build_model(cfg)
----> 3 history = model.fit(train_x, train_y, epochs=epochs)
      4 plot(history)
""".splitlines()
    traceback = parse_traceback(lines, "NameError: name 'train_x' is not defined")
    assert traceback is not None
    assert [(f.file, f.line, f.function) for f in traceback.frames] == [("ipython-input-3-5f0e9d2c1b7a", 3, "<module>")]
    assert traceback.user_frame == traceback.frames[0]


def test_ipython_8_cells_are_the_users_code_and_library_files_are_not() -> None:
    traceback = parse_traceback(IPYTHON_8, "ValueError: Input 0 of layer dense is incompatible")
    assert traceback is not None
    cell, library = traceback.frames
    assert (cell.file, cell.line, cell.is_user_code) == ("Cell In[7]", 5, True)
    assert (library.line, library.function, library.is_user_code) == (122, "filter_traceback.<locals>.error_handler", False)
    assert library.code.startswith("raise e.with_traceback")


WINDOWS = r"""Traceback (most recent call last):
  File "C:\Users\ana\proj\lib\train.py", line 51, in <module>
    main()
  File "C:\Users\ana\proj\lib\train.py", line 44, in main
    logger.info(msg)
  File "C:\Users\ana\Anaconda3\envs\torch\lib\logging\__init__.py", line 1489, in info
    self._log(INFO, msg, args, **kwargs)""".splitlines()


def test_windows_standard_library_frames_are_not_the_users_code() -> None:
    traceback = parse_traceback(WINDOWS, "OSError: [Errno 22] Invalid argument: 'C:\\\\logs\\\\run:1.txt'")
    assert traceback is not None
    assert [f.is_user_code for f in traceback.frames] == [True, True, False]
    assert traceback.user_frame is not None and traceback.user_frame.line == 44


def test_rich_tracebacks_give_each_frame_and_the_line_it_marks() -> None:
    box = [
        "╭──────────────────── Traceback (most recent call last) ─────────────────────╮",
        "│ /srv/exp/train.py:88 in <module>                                            │",
        "│                                                                             │",
        "│   87 │   cfg = load_config(args.config)                                     │",
        "│ ❱ 88 │   trainer = build_trainer(cfg)                                       │",
        "│                                                                             │",
        "│ /opt/venv/lib/python3.12/site-packages/accelerate/accelerator.py:412 in     │",
        "│ __init__                                                                    │",
        "│                                                                             │",
        "│ /srv/exp/trainer.py:31 in build_trainer                                     │",
        "│                                                                             │",
        "│   30 def build_trainer(cfg):                                                │",
        "│ ❱ 31 │   return Trainer(opt=cfg['optimizer'])                               │",
        "╰─────────────────────────────────────────────────────────────────────────────╯",
    ]
    parsed = parse_traceback(box, "KeyError: 'optimizer'")
    assert parsed is not None
    assert [(f.file, f.line, f.function) for f in parsed.frames] == [
        ("/srv/exp/train.py", 88, "<module>"),
        ("/opt/venv/lib/python3.12/site-packages/accelerate/accelerator.py", 412, "__init__"),
        ("/srv/exp/trainer.py", 31, "build_trainer")]
    assert parsed.frames[0].code == "trainer = build_trainer(cfg)"
    assert parsed.user_frame is not None and parsed.user_frame.file == "/srv/exp/trainer.py"


def test_a_script_that_does_not_compile_has_its_own_line_as_the_frame() -> None:
    """Python prints no traceback header when the script itself fails to compile."""
    lines = ['  File "/home/u/proj/train.py", line 57', "    print(f'{loss:.3f')", "              ^"]
    traceback = parse_traceback(lines, "SyntaxError: f-string: expecting '}'")
    assert traceback is not None
    frame = traceback.user_frame
    assert frame is not None
    assert (frame.file, frame.line, frame.code) == ("/home/u/proj/train.py", 57, "print(f'{loss:.3f')")


def test_a_frame_line_without_a_compile_error_is_no_traceback() -> None:
    lines = ['  File "/home/u/proj/train.py", line 57', "    x = y"]
    assert parse_traceback(lines, "ValueError: bad value") is None


def test_a_traceback_escaped_into_a_json_record_is_parsed_from_its_own_line() -> None:
    from traintriage.parse.traceback import escaped_traceback

    record = ('{"level": "ERROR", "message": "failed", "exc_info": "Traceback (most recent call last):\\n'
              '  File \\"/app/train.py\\", line 9, in <module>\\n    x = cfg[\\"lr\\"]\\nKeyError: \'lr\'", "rank": 1}')
    traceback = escaped_traceback(record)
    assert traceback is not None
    assert traceback.exception == "KeyError: 'lr'"
    assert traceback.user_frame is not None and traceback.user_frame.file == "/app/train.py"
    assert escaped_traceback('{"message": "Traceback (most recent call last):\\n"}') is None
    assert escaped_traceback("Traceback (most recent call last):") is None


SACRED = """INFO - my_experiment - Started run with ID "3"
ERROR - my_experiment - Failed after 0:00:02!
Traceback (most recent calls WITHOUT Sacred internals):
  File "/home/u/rl/src/main.py", line 31, in my_main
    run(_run, config, _log)
  File "/home/u/rl/src/runners/episode.py", line 22, in __init__
    self.env = ENVS[self.args.env](**self.args.env_args)""".splitlines()


def test_a_traceback_sacred_filtered_has_its_frames() -> None:
    """Sacred prints its own header over the frames it kept; the traceback is the same Python one."""
    traceback = parse_traceback(SACRED, "KeyError: 'gridworld'")
    assert traceback is not None
    frame = traceback.user_frame
    assert frame is not None and (frame.file, frame.line) == ("/home/u/rl/src/runners/episode.py", 22)


def test_a_sacred_experiment_that_raised_in_its_own_code_is_the_scripts_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from traintriage.pipeline import diagnose

    path = tmp_path / "run.log"
    path.write_text("\n".join([*SACRED, "KeyError: 'gridworld'"]) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "user-code-exception"
