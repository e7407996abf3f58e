"""E-mail, IPv4/IPv6 and MAC addresses, and user names."""

from __future__ import annotations

import pytest

from tests.mask.cases import Case, check_case, check_negative
from tests.mask.fakes import mask

CASES = [
    Case("email", "#SBATCH --mail-user=jane.fake42@example.net", "jane.fake42@example.net", "EMAIL"),
    Case(
        "email",
        "Job 123 finished with exit code 1; notifying jane.fake+wandb@lab.example.com",
        "jane.fake+wandb@lab.example.com",
        "EMAIL",
    ),
    Case(
        "email",
        '  "client_email": "trainer@fake-project.iam.gserviceaccount.com",',
        "trainer@fake-project.iam.gserviceaccount.com",
        "EMAIL",
    ),
    Case("ipv4", "+ export MASTER_ADDR=10.225.3.191", "10.225.3.191", "IP"),
    Case("ipv4", "node01:1:1 [0] NCCL INFO Bootstrap : Using ens5:172.31.4.7<0>", "172.31.4.7", "IP"),
    Case("ipv4", "    inet 192.168.15.251/24 brd 192.168.15.255 scope global eth0", "192.168.15.251", "IP"),
    Case(
        "ipv4",
        "[W socket.cpp:697] [c10d] The client socket has failed to connect to [54.12.200.9]:29500",
        "54.12.200.9",
        "IP",
    ),
    Case("ipv4", "SSH_CLIENT=192.0.2.25 53229 22", "192.0.2.25", "IP"),
    Case("ipv4", "\x1b[32m203.0.113.9\x1b[0m connected", "203.0.113.9", "IP"),
    Case("ipv4-in-hostname", "Connecting to ip-10-0-1-23.ec2.internal:29500", "10-0-1-23", "IP"),
    Case(
        "ipv6",
        "        inet6 2001:db8:5a5e:9cac::b037  prefixlen 64  scopeid 0x0<global>",
        "2001:db8:5a5e:9cac::b037",
        "IP",
    ),
    Case("ipv6", "    inet6 fe80::493f:53ff:fe23:c8af/64 scope link", "fe80::493f:53ff:fe23:c8af", "IP"),
    Case(
        "ipv6",
        "NCCL INFO Bootstrap : Using ens5:fe80::a607:48ff:fefe:4e50<0>",
        "fe80::a607:48ff:fefe:4e50",
        "IP",
    ),
    Case(
        "ipv6",
        "NCCL INFO Using enp1s0f0:2a05:d018:7655:d95f:cfd2:4f0c:df79:fa02<0>",
        "2a05:d018:7655:d95f:cfd2:4f0c:df79:fa02",
        "IP",
    ),
    Case(
        "ipv6",
        "server socket has failed to bind to [fd93:c5ed:583c:2b65::63fe]:23456 (errno: 98)",
        "fd93:c5ed:583c:2b65::63fe",
        "IP",
    ),
    Case(
        "mac-address",
        "        ether 98:31:7d:ee:2c:19  txqueuelen 1000  (Ethernet)",
        "98:31:7d:ee:2c:19",
        "MAC",
    ),
    Case(
        "mac-address",
        "ib0              UP             E4-31-EE-31-4B-D5 <BROADCAST,MULTICAST,UP>",
        "E4-31-EE-31-4B-D5",
        "MAC",
    ),
    Case(
        "mac-address",
        "    link/infiniband 00:00:10:87:fe:80:00:00:00:00:00:00:ec:0d:9a:03:00:12:34:56 brd x",
        "ec:0d:9a:03:00:12:34:56",
        "MAC",
    ),
    Case(
        "home-path-user", '  File "/home/jfakeuser/src/llm/train.py", line 211, in main', "jfakeuser", "USER"
    ),
    Case("home-path-user", "#SBATCH --output=/home/jane.fake/logs/%x-%j.out", "jane.fake", "USER"),
    Case(
        "home-path-user",
        r"  File C:\Users\FakeUser\miniconda3\lib\site-packages\torch\nn\modules\module.py",
        "FakeUser",
        "USER",
    ),
    Case("home-path-user", "checkpoint saved to /Users/fakeuser/ckpt", "fakeuser", "USER"),
    Case("user-field", "SLURM_JOB_USER=jfakeuser", "jfakeuser", "USER"),
    Case("user-field", "LOGNAME=jfakeuser", "jfakeuser", "USER"),
    Case("user-field", "  USER: jfakeuser", "jfakeuser", "USER"),
    Case(
        "user-field", "INFO sysinfo: host=node0027 user=jfakeuser pid=337033 python=3.10", "jfakeuser", "USER"
    ),
    Case(
        "user-field",
        "uid=1000(jfakeuser) gid=1000(jfakeuser) groups=1000(jfakeuser),27(sudo)",
        "jfakeuser",
        "USER",
    ),
    Case("ssh-user", "jfakeuser@10.136.225.105: Permission denied (publickey).", "jfakeuser", "USER"),
    Case("ssh-user", "+ ssh -o BatchMode=yes jfakeuser@node17 hostname", "jfakeuser", "USER"),
    Case("ssh-user", "(base) jfakeuser@gpu-node-01:~/src/llm$ torchrun train.py", "jfakeuser", "USER"),
]

NEGATIVES = [
    "INFO sysinfo: cuda=12.4.105 cudnn=8.9.2.26 nccl=2.19.3 gpus=8x NVIDIA H100 80GB HBM3",
    "nvidia-cublas-cu12==12.1.3.1",
    "nvidia-cudnn-cu12==9.1.0.70",
    "NCCL version 2.18.1+cuda12.4",
    "| NVIDIA-SMI 535.129.03             Driver Version: 535.129.03   CUDA Version: 12.2     |",
    "libcudnn8 (8.9.2.26-1+cuda12.1) installed",
    "CUDNN_VERSION=8.9.2.26",
    "        inet 127.0.0.1  netmask 255.255.255.0  broadcast 0.0.0.0",
    "    inet6 ::1/128 scope host",
    "Running on local URL:  http://0.0.0.0:7860",
    "frame #4: c10::cuda::CUDACachingAllocator::raw_alloc + 0x7f (0x7f8a2c1d3e4f in libc10_cuda.so)",
    "at::native::add_kernel(at::TensorIteratorBase&) std::deque<int> c10d::ProcessGroupNCCL::WorkNCCL",
    "W0515 13:14:33.479410 2282078 torch/distributed/run.py:779]",
    "|   0  NVIDIA H100 80GB HBM3          On  | 00000000:3B:00.0 Off |                    0 |",
    "[453183.754964] NVRM: Xid (PCI:0000:af:00): 79, pid=1587609, name=python, GPU has fallen off the bus.",
    "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-05a0a078-285d-c565-99a9-70c134ee7590)",
    "    link/ether brd ff:ff:ff:ff:ff:ff",
    "repo: git@github.com:fake-team/model.git",
    '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1532, in _call_impl',
    '  File "/home/ubuntu/.local/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1532',
    '  File "/root/.cache/huggingface/modules/transformers_modules/x.py", line 3',
    "USER=root",
    "torch==2.4.1+cu121 @ https://download.pytorch.org/whl/cu121",
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_personal_and_network_data_is_masked(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("line", NEGATIVES)
def test_diagnostic_look_alikes_survive(line: str) -> None:
    check_negative(line)


def test_ports_and_prefix_lengths_stay() -> None:
    assert (
        mask("rdzv_endpoint=10.225.3.191:29400 via 10.0.0.0/8") == "rdzv_endpoint=<IP-1>:29400 via <IP-2>/8"
    )


def test_same_address_same_placeholder_across_forms() -> None:
    output = mask("a 2001:db8::1:0:0:1 b 2001:DB8:0:0:1::1 c ip-10-0-1-23 d 10.0.1.23")
    assert output == "a <IP-1> b <IP-1> c ip-<IP-2> d <IP-2>"


def test_a_user_name_seen_in_a_path_is_masked_everywhere_after() -> None:
    output = mask("HOME=/home/jfakeuser\nJob submitted by jfakeuser on node01\njfakeuser2 is someone else")
    assert output == "HOME=/home/<USER-1>\nJob submitted by <USER-1> on node01\njfakeuser2 is someone else"


def test_common_word_user_names_do_not_spread() -> None:
    output = mask("cd /home/train/x\npython train.py")
    assert output == "cd /home/<USER-1>/x\npython train.py"
