"""Shared helpers: tiny local tokenizer, tiny GPT2/Llama models and toy datasets (nothing downloaded)."""
import os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSETS = os.path.join(ROOT, "assets")

WORDS = ("the cat dog sat on mat ran fast slow red blue green big small tree house river "
         "what is how do you make a cake answer question good bad yes no please thanks "
         "one two three four five six seven eight nine ten add plus minus equals").split()

def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))

def corpus(n=400, seed=0):
    rng = random.Random(seed)
    return [sentence(rng, rng.randint(4, 20)) for _ in range(n)]

def build_tokenizer(path=None, with_pad=True, chat_template=True):
    """Train a tiny BPE tokenizer locally and wrap it as a fast HF tokenizer."""
    from tokenizers import Tokenizer, models, trainers, pre_tokenizers, decoders
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<unk>", "<s>", "</s>", "<pad>"]
    tr = trainers.BpeTrainer(vocab_size=420, special_tokens=specials,
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), tr)
    kw = dict(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    if with_pad:
        kw["pad_token"] = "<pad>"
    hf = PreTrainedTokenizerFast(**kw)
    if chat_template:
        hf.chat_template = ("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</s>{% endfor %}"
                            "{% if add_generation_prompt %}<s>assistant: {% endif %}")
    if path:
        hf.save_pretrained(path)
    return hf

def gpt2(tok, n_positions=128, **kw):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=len(tok), n_positions=n_positions, n_layer=2, n_embd=64, n_head=2,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                     pad_token_id=tok.pad_token_id, **kw)
    return GPT2LMHeadModel(cfg)

def llama(tok, max_pos=128, **kw):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_pos,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id, **kw)
    return LlamaForCausalLM(cfg)

def text_dataset(n=64, seed=1):
    from datasets import Dataset
    return Dataset.from_dict({"text": corpus(n, seed)})

def prompt_completion(n=64, seed=2):
    from datasets import Dataset
    rng = random.Random(seed)
    P, C = [], []
    for _ in range(n):
        P.append("question: " + sentence(rng, rng.randint(3, 8)))
        C.append(" answer: " + sentence(rng, rng.randint(3, 10)))
    return Dataset.from_dict({"prompt": P, "completion": C})

def conversations(n=64, seed=3):
    from datasets import Dataset
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        rows.append([{"role": "user", "content": sentence(rng, rng.randint(3, 8))},
                     {"role": "assistant", "content": sentence(rng, rng.randint(3, 10))}])
    return Dataset.from_dict({"messages": rows})

def preferences(n=64, seed=4):
    from datasets import Dataset
    rng = random.Random(seed)
    P, C, R = [], [], []
    for _ in range(n):
        P.append("question: " + sentence(rng, rng.randint(3, 8)))
        C.append(" answer: " + sentence(rng, rng.randint(3, 8)))
        R.append(" answer: " + sentence(rng, rng.randint(3, 8)))
    return Dataset.from_dict({"prompt": P, "chosen": C, "rejected": R})
