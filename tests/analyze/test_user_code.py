"""The catch-all for script errors needs the user's own code in the traceback, with no installed
package below it raising the error; an error raised entirely inside installed tools, by a library
refusing what the script gave it, or pasted without any traceback (whose code raised it cannot be
told), is an unknown failure, shown with its lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.pipeline import diagnose

LIBRARY_ONLY = """Traceback (most recent call last):
  File "/opt/conda/bin/vllm", line 8, in <module>
    sys.exit(main())
  File "/opt/conda/lib/python3.11/site-packages/vllm/entrypoints/cli/main.py", line 54, in main
    args.dispatch_function(args)
  File "/opt/conda/lib/python3.11/site-packages/vllm/entrypoints/cli/serve.py", line 52, in cmd
    validate_parsed_serve_args(args)
KeyError: 'tool_call_parser'
"""

USER_FRAME = """Traceback (most recent call last):
  File "/home/alice/proj/train.py", line 88, in <module>
    main(cfg)
  File "/home/alice/proj/train.py", line 41, in main
    lr = cfg["optimizer"]["lr"]
KeyError: 'optimizer'
"""


def test_error_inside_installed_tools_only_is_unknown(tmp_path: Path) -> None:
    path = tmp_path / "serve.log"
    path.write_text(LIBRARY_ONLY)
    diagnosis = diagnose([str(path)])
    assert diagnosis.status.value == "unknown-failure"
    assert any("KeyError" in e.text for e in diagnosis.unknown)




def test_a_bare_error_line_is_unknown_not_the_users_code(tmp_path: Path) -> None:
    """A library refusing a model, pasted as one line: nothing shows it came from the script."""
    path = tmp_path / "paste.log"
    path.write_text("TypeError: mixtral_moe isn't supported yet.\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.status.value == "unknown-failure"
    assert any("isn't supported yet" in e.text for e in diagnosis.unknown)


LIBRARY_TYPE_FROM_SCRIPT = """Traceback (most recent call last):
  File "/home/alice/proj/train.py", line 130, in main
    weights = class_counts + smoothing
numpy.core._exceptions._UFuncNoLoopError: ufunc 'add' did not contain a loop with signature matching types \
(dtype('<U5'), dtype('int64')) -> None
"""

TRACING_ERROR_IN_USER_CODE = """Traceback (most recent call last):
  File "/home/alice/proj/train_jax.py", line 144, in <module>
    main()
  File "/home/alice/proj/train_jax.py", line 97, in loss_fn
    if logits.sum() > 0:
jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].
--------------------
For simplicity, JAX has removed its internal frames from the traceback of the following exception. Set JAX_TRACEBACK_FILTERING=off to include these.
"""

CONFIG_LACKS_A_KEY = """[2026-03-02 10:04:11,902][train][INFO] - world_size=1 out_dir=/scratch/runs/exp7
Error executing job with overrides: ['exp_name=exp7']
Traceback (most recent call last):
  File "/home/alice/proj/train.py", line 130, in main
    warmup = int(cfg.sched.warmup_steps)
                 ^^^^^^^^^^^^^^^^^^^^^^
omegaconf.errors.ConfigAttributeError: Key 'warmup_steps' is not in struct
    full_key: sched.warmup_steps
    object_type=dict

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""

LIBRARY_TYPE_FROM_LIBRARY = """Traceback (most recent call last):
  File "/home/alice/proj/train.py", line 130, in main
    shards = s3.list_objects_v2(Bucket="datasets", Prefix="tok/")
  File "/opt/conda/lib/python3.11/site-packages/botocore/client.py", line 569, in _api_call
    return self._make_api_call(operation_name, kwargs)
  File "/opt/conda/lib/python3.11/site-packages/botocore/auth.py", line 418, in add_auth
    raise NoCredentialsError()
botocore.exceptions.NoCredentialsError: Unable to locate credentials
"""


def test_error_through_user_code_points_at_the_users_frame(tmp_path: Path) -> None:
    """A built-in exception type with the user's frame in the traceback is the script's error."""
    path = tmp_path / "train.log"
    path.write_text(USER_FRAME)
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "user-code-exception"
    frame = diagnosis.root_cause.user_frame
    assert frame is not None and frame.line == 41 and frame.function == "main"


@pytest.mark.parametrize(
    ("log", "message"),
    [(LIBRARY_TYPE_FROM_SCRIPT, "numpy.core._exceptions._UFuncNoLoopError: ufunc 'add'"),
     (TRACING_ERROR_IN_USER_CODE, "jax.errors.TracerBoolConversionError: Attempted boolean conversion")],
    ids=["library-type-raised-on-a-script-line", "jax-tracing-error-on-the-users-line"],
)
def test_a_library_exception_type_on_the_scripts_line_is_unknown(tmp_path: Path, log: str, message: str) -> None:
    """A library's own exception type is no class of the KB's, even when the script's line is the
    deepest frame: the catch-all matches Python's built-in types only. Calling such errors the script's
    had named 12 tune logs, 11 of them labelled as failures the KB lacks (a JAX tracer in a Python `if`,
    a Cholesky factorisation of a matrix that is not positive-definite, a closed pipe on stdout)."""
    path = tmp_path / "train.log"
    path.write_text(log)
    diagnosis = diagnose([str(path)])
    assert diagnosis.status.value == "unknown-failure"
    assert any(line.text.startswith(message) for line in diagnosis.unknown)


def test_a_config_that_lacks_what_the_script_reads_is_not_the_scripts_error(tmp_path: Path) -> None:
    """Hydra cuts omegaconf's frames, so the script's line only looks like the raiser; the message shown is
    the exception's line, not the last line omegaconf adds to it."""
    path = tmp_path / "train.log"
    path.write_text(CONFIG_LACKS_A_KEY)
    diagnosis = diagnose([str(path)])
    assert diagnosis.status.value == "unknown-failure"
    assert diagnosis.unknown[0].text.startswith("omegaconf.errors.ConfigAttributeError: Key 'warmup_steps'")


def test_a_library_exception_raised_inside_the_library_stays_unknown(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(LIBRARY_TYPE_FROM_LIBRARY)
    diagnosis = diagnose([str(path)])
    assert diagnosis.status.value == "unknown-failure"


BUILTIN_RAISED_BY_A_PACKAGE = """Traceback (most recent call last):
  File "/home/alice/proj/finetune.py", line 57, in main
    trainer.train()
  File "/opt/conda/lib/python3.11/site-packages/transformers/trainer.py", line 3120, in compute_loss
    raise ValueError(
ValueError: The model did not return a loss from the inputs, only the following keys: logits.
"""

BUILTIN_RAISED_BY_THE_STANDARD_LIBRARY = """Traceback (most recent call last):
  File "/home/alice/proj/finetune.py", line 88, in log_metrics
    fh.write(json.dumps(metrics))
  File "/usr/lib/python3.11/json/__init__.py", line 231, in dumps
    return _default_encoder.encode(obj)
  File "/usr/lib/python3.11/json/encoder.py", line 180, in default
    raise TypeError(f'Object of type {o.__class__.__name__} '
TypeError: Object of type Tensor is not JSON serializable
"""


def test_a_builtin_error_an_installed_package_raised_is_not_the_scripts(tmp_path: Path) -> None:
    """A library refusing what it was given names the cause in its own message: an unknown failure."""
    path = tmp_path / "train.log"
    path.write_text(BUILTIN_RAISED_BY_A_PACKAGE)
    assert diagnose([str(path)]).status.value == "unknown-failure"


RAISED_ON_A_CONTINUATION_LINE = """Traceback (most recent call last):
  File "tools/train.py", line 171, in main
    model = build_detector(cfg.model)
  File "/home/bo/envs/mm/lib/python3.7/site-packages/mmcv/utils/registry.py", line 44, in build_from_cfg
    f'{obj_type} is not in the {registry.name} registry')
KeyError: 'FancyHead is not in the models registry'
"""


def test_a_package_raise_shown_by_its_message_line_is_not_the_scripts(tmp_path: Path) -> None:
    """Python 3.7 prints the last line of a `raise` that spans lines: the message's literal."""
    path = tmp_path / "train.log"
    path.write_text(RAISED_ON_A_CONTINUATION_LINE)
    assert diagnose([str(path)]).status.value == "unknown-failure"


RAISED_IN_A_COMPILED_EXTENSION = """Traceback (most recent call last):
  File "eval_grid.py", line 64, in evaluate
    store = h5py.File(out_path, "r+")  # another rank holds it open
  File "/usr/local/lib/python3.10/site-packages/h5py/_hl/files.py", line 562, in __init__
    fid = make_fid(name, mode, userblock_size, fapl, fcpl, swmr=swmr)
  File "/usr/local/lib/python3.10/site-packages/h5py/_hl/files.py", line 241, in make_fid
    fid = h5f.open(name, h5f.ACC_RDWR, fapl=fapl)
  File "h5py/_objects.pyx", line 54, in h5py._objects.with_phil.wrapper
  File "h5py/h5f.pyx", line 102, in h5py.h5f.open
OSError: Unable to open file (unable to lock file, errno = 11, error message = 'Resource temporarily unavailable')
"""


RAISED_INSIDE_JAX = """Traceback (most recent call last):
  File "/home/alice/proj/train_jax.py", line 144, in <module>
    main()
  File "/home/alice/proj/train_jax.py", line 121, in main
    state, loss = train_step(state, batch)
jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to launch CUDA kernel: fusion_12 with block dimensions: 128x1x1
--------------------
For simplicity, JAX has removed its internal frames from the traceback of the following exception. Set JAX_TRACEBACK_FILTERING=off to include these.
"""


LIBRARY_ERROR_SHOWN_AT_A_NOTEBOOK_CELL = """---------------------------------------------------------------------------
InternalError                             Traceback (most recent call last)
Cell In[9], line 3
      1 model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", jit_compile=True)
----> 3 model.fit(train_ds, epochs=3)

InternalError: libdevice not found at ./libdevice.10.bc [Op:__inference_train_function_2518]
"""


RAISED_IN_A_CYTHON_INCLUDE = """Traceback (most recent call last):
  File "prep_shards.py", line 31, in <module>
    for batch in parquet_file.iter_batches(batch_size=200_000):
  File "pyarrow/_parquet.pyx", line 1366, in iter_batches
  File "pyarrow/error.pxi", line 91, in pyarrow.lib.check_status
pyarrow.lib.ArrowCapacityError: array cannot contain more than 2147483646 bytes, have 2147502240
"""


ASSERTED_BY_A_PACKAGE = """Traceback (most recent call last):
  File "/home/bob/finetune/run.py", line 220, in <module>
    trainer.train()
  File "/opt/conda/lib/python3.10/site-packages/torch/amp/grad_scaler.py", line 451, in step
    assert len(optimizer_state["found_inf_per_device"]) > 0, "No inf checks were recorded for this optimizer."
AssertionError: No inf checks were recorded for this optimizer.
"""


CODEC_ERROR_READING_A_FILE = """Traceback (most recent call last):
  File "C:\\Users\\li\\ner\\train.py", line 52, in <module>
    vocab = load_vocab(args.embeddings)
  File "C:\\Users\\li\\ner\\util\\vocab.py", line 18, in load_vocab
    for line in handle:
UnicodeDecodeError: 'gbk' codec can't decode byte 0x9d in position 4411: illegal multibyte sequence
"""

DEVICE_ERROR_ON_THE_SCRIPTS_CALL = """Traceback (most recent call last):
  File "/home/li/gen/train.py", line 212, in <module>
    setup(model)
  File "/home/li/gen/quant.py", line 43, in setup
    weight = weight.to(device=device)
RuntimeError: CUDA error: invalid argument
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
"""


@pytest.mark.parametrize(
    ("log", "quoted"),
    [(RAISED_IN_A_COMPILED_EXTENSION, "Unable to open file"), (RAISED_IN_A_CYTHON_INCLUDE, "ArrowCapacityError"),
     (RAISED_INSIDE_JAX, "XlaRuntimeError"), (ASSERTED_BY_A_PACKAGE, "No inf checks"),
     (LIBRARY_ERROR_SHOWN_AT_A_NOTEBOOK_CELL, "libdevice not found"), (CODEC_ERROR_READING_A_FILE, "'gbk' codec"),
     (DEVICE_ERROR_ON_THE_SCRIPTS_CALL, "CUDA error: invalid argument")],
    ids=["cython-frame", "cython-include-frame", "xla-runtime-under-filtered-frames", "a-packages-own-assert",
         "a-library-error-at-a-notebook-cell", "a-codec-error-on-the-scripts-read",
         "a-cuda-runtime-error-on-the-scripts-call"],
)
def test_an_error_raised_below_what_the_traceback_shows_is_not_the_scripts(tmp_path: Path, log: str, quoted: str) -> None:
    """Cython frames (`h5py/h5f.pyx`, `pyarrow/error.pxi`) are printed with a relative path like a
    script's, but they are the extension's own code; an `assert` in a package is its own check; a
    notebook's traceback may fold or filter the library's frames below the cell; JAX drops its own
    frames, so the user's call is the deepest frame shown while the compiled program failed in
    XLA's runtime; a CUDA runtime error is the device's, whoever's call met it. All are unknown
    failures shown with their line."""
    path = tmp_path / "train.log"
    path.write_text(log)
    diagnosis = diagnose([str(path)])
    assert diagnosis.status.value == "unknown-failure"
    assert any(quoted in e.text for e in diagnosis.unknown)




NOTEBOOK_CELL_ERROR = """---------------------------------------------------------------------------
NameError                                 Traceback (most recent call last)
Cell In[12], line 4
      2 for epoch in range(3):
      3     train_one_epoch(model, loader)
----> 4     print(f"epoch {epoch}: val acc {evaluate(model, val_loder):.3f}")

NameError: name 'val_loder' is not defined
"""


@pytest.mark.parametrize(
    ("log", "line"),
    [(BUILTIN_RAISED_BY_THE_STANDARD_LIBRARY, 88), (NOTEBOOK_CELL_ERROR, 4)],
    ids=["standard-library-on-the-scripts-value", "a-notebook-cells-own-line"],
)
def test_an_error_the_scripts_own_line_caused_is_the_scripts(tmp_path: Path, log: str, line: int) -> None:
    """The standard library refusing the script's value (`json.dumps` of a tensor) and a notebook
    cell's own line (IPython's frame format) are the script's bugs, at the script's line."""
    path = tmp_path / "train.log"
    path.write_text(log)
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "user-code-exception"
    frame = diagnosis.root_cause.user_frame
    assert frame is not None and frame.line == line


CHECK_WITH_A_MESSAGE = """Traceback (most recent call last):
  File "/home/alice/det/train.py", line 488, in <module>
    train(hyp, opt, device)
  File "/home/alice/det/train.py", line 203, in train
    assert max_label < num_classes, f'Label class {max_label} exceeds num_classes={num_classes} in {opt.data}'
AssertionError: Label class 7 exceeds num_classes=5 in data/parts.yaml
"""

RAISE_WITH_A_MESSAGE = """Traceback (most recent call last):
  File "/home/alice/llm/src/launch.py", line 41, in <module>
    run_exp()
  File "/home/alice/llm/src/hparams/parser.py", line 212, in get_train_args
    raise ValueError("Please launch distributed training with torchrun to use DeepSpeed.")
ValueError: Please launch distributed training with torchrun to use DeepSpeed.
"""

BARE_ASSERT = """Traceback (most recent call last):
  File "/home/alice/proj/train.py", line 77, in <module>
    assert batch["input_ids"].shape[1] <= 2048
AssertionError
"""


@pytest.mark.parametrize(("log", "line"), [(CHECK_WITH_A_MESSAGE, "train.py:203"), (RAISE_WITH_A_MESSAGE, "parser.py:212")],
                         ids=["assert-with-message", "raise-with-message"])
def test_a_check_the_project_explains_is_unknown_not_a_script_bug(tmp_path: Path, log: str, line: str) -> None:
    """The project's own code refused its input on purpose and says why: the message names a
    cause the KB lacks, so the run is an unknown failure shown with that message."""
    path = tmp_path / "train.log"
    path.write_text(log)
    diagnosis = diagnose([str(path)])
    assert diagnosis.status.value == "unknown-failure"
    assert any("Error: " in e.text for e in diagnosis.unknown)
    assert any(line in note for note in diagnosis.notes), "the report still says where the user's code raised it"


def test_a_bare_assert_in_the_script_stays_the_scripts_error(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(BARE_ASSERT)
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "user-code-exception"
    assert diagnosis.root_cause.user_frame is not None and diagnosis.root_cause.user_frame.line == 77


RAN_INTO = """Traceback (most recent call last):
  File "/home/alice/proj/train.py", line 175, in save_checkpoint
    os.rename(tmp, final)
OSError: [Errno 18] Invalid cross-device link: '/dev/shm/step250.pt.tmp' -> '/ckpt/step250.pt'
"""


def test_what_the_script_ran_into_is_not_a_bug_in_its_line(tmp_path: Path) -> None:
    """The operating system refused the script's call: the cause is outside the script's code."""
    path = tmp_path / "train.log"
    path.write_text(RAN_INTO)
    diagnosis = diagnose([str(path)])
    assert diagnosis.status.value == "unknown-failure"
    assert any("Invalid cross-device link" in e.text for e in diagnosis.unknown)


def test_a_programming_error_in_the_same_place_is_the_scripts(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(RAN_INTO.replace("OSError: [Errno 18] Invalid cross-device link: '/dev/shm/step250.pt.tmp' -> "
                                     "'/ckpt/step250.pt'", "NameError: name 'final' is not defined"))
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "user-code-exception"


CHECKPOINT_WITHOUT_THE_KEY = """Resuming training from runs/base/ckpt.pt
Traceback (most recent call last):
  File "/home/alice/proj/train.py", line 212, in <module>
    optimizer.load_state_dict(checkpoint["optimizer"])
KeyError: 'optimizer'
"""


def test_a_checkpoint_saved_without_the_key_the_script_reads_is_not_the_scripts_error(tmp_path: Path) -> None:
    """The file lacks the entry (a released model without its optimizer state): a cause the KB has no class for."""
    path = tmp_path / "train.log"
    path.write_text(CHECKPOINT_WITHOUT_THE_KEY)
    diagnosis = diagnose([str(path)])
    assert diagnosis.status.value == "unknown-failure"
    assert diagnosis.unknown[0].text == "KeyError: 'optimizer'"


def test_another_key_missing_on_a_checkpoint_line_is_still_the_scripts_error(tmp_path: Path) -> None:
    """The KeyError names a key the line does not read from the checkpoint: something else on that line failed."""
    path = tmp_path / "train.log"
    path.write_text(CHECKPOINT_WITHOUT_THE_KEY.replace("KeyError: 'optimizer'", "KeyError: 'lr'"))
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "user-code-exception"
