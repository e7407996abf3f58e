"""Facts of the run, read from logs written the way the frameworks print them."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import facts_of as _facts

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of "
       "23.68 GiB of which 812.00 MiB is free. Including non-PyTorch memory, this process has 22.88 GiB memory in use.")


def test_oom_while_moving_the_model_is_the_load_phase(tmp_path: Path) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/workspace/finetune.py", line 31, in <module>\n'
            "    model = model.to(device)\n"
            '  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1355, in to\n'
            "    return self._apply(convert)\n"
            '  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 915, in _apply\n'
            "    module._apply(fn)\n"
            f"{OOM}\n")
    facts = _facts(tmp_path, text)
    assert facts.phase == "model-load"
    assert facts.step is None


def test_oom_after_logged_steps_is_a_training_step_with_its_number(tmp_path: Path) -> None:
    steps = "".join(f"{{'loss': {2.5 - i / 10:.4f}, 'grad_norm': 1.2, 'learning_rate': 2e-05, 'epoch': 0.0{i}}}\n"
                    for i in range(1, 4))
    text = ("[INFO|trainer.py:2314] >>   Total optimization steps = 900\n"
            "  0%|          | 3/900 [00:09<45:10,  3.02s/it]\n" + steps
            + "step 30 loss 2.2100\n"
            "Traceback (most recent call last):\n"
            '  File "/workspace/train.py", line 88, in <module>\n'
            "    trainer.train()\n"
            '  File "/usr/local/lib/python3.10/dist-packages/transformers/trainer.py", line 2241, in train\n'
            "    return inner_training_loop(\n"
            '  File "/usr/local/lib/python3.10/dist-packages/transformers/trainer.py", line 3698, in training_step\n'
            "    self.accelerator.backward(loss, **kwargs)\n"
            f"{OOM}\n")
    facts = _facts(tmp_path, text)
    assert facts.phase == "step" and facts.step == 30
    assert "hf-trainer" in facts.stack


def test_backend_precision_and_world_size_from_start_up_lines(tmp_path: Path) -> None:
    text = ("[rank0]: 2026-12-02 10:00:00,001 INFO trainer: world_size=8 backend=gloo bf16=True\n"
            "[rank3]: Traceback (most recent call last):\n"
            '[rank3]:   File "/workspace/train.py", line 64, in main\n'
            "[rank3]:     loss = model(batch)\n"
            "[rank3]: RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:3 and cpu!\n")
    facts = _facts(tmp_path, text)
    assert (facts.backend, facts.dtype, facts.world_size) == ("gloo", "bf16", 8)
    assert facts.all_ranks_same is False


def test_deepspeed_stage_and_launcher(tmp_path: Path) -> None:
    text = ("[2026-12-02 09:58:11,120] [INFO] [launch.py:256:main] process 4410 spawned with command: ['python', 'train.py']\n"
            "[2026-12-02 09:58:20,001] [INFO] [stage_1_and_2.py:151:__init__] Reduce bucket size 500000000\n"
            "[2026-12-02 09:58:20,002] [INFO] [config.py:1003:print] ZeRO Stage 2 enabled\n"
            "Traceback (most recent call last):\n"
            '  File "/workspace/train.py", line 40, in <module>\n'
            "    engine.backward(loss)\n"
            '  File "/opt/conda/lib/python3.11/site-packages/deepspeed/runtime/engine.py", line 2020, in backward\n'
            "    self.optimizer.backward(loss)\n"
            f"{OOM}\n")
    facts = _facts(tmp_path, text)
    assert facts.stack[0] == "deepspeed" and facts.zero_stage == 2
    assert facts.launcher == "deepspeed"
