"""A reference GPT-2 in PyTorch, independent of XAForward: reads a Hugging Face model directory (config.json,
model.safetensors, vocab.json, merges.txt) the way GPT2LMHeadModel and GPT2Tokenizer would, encodes text with the
byte-level BPE of OpenAI's encoder.py, and continues a prompt greedily.

usage: gpt2_reference.py DIR TOKENS   (stdin: JSON {"prompt": str, "texts": [str]})
prints JSON: prompt_ids, ids (prompt + continuation), text, last_logits (of the prompt), encoded (ids of each text)
"""
import json
import math
import re
import struct
import sys

import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    tensors = {}
    for name, entry in header.items():
        assert entry["dtype"] == "F32", entry
        start, end = entry["data_offsets"]
        raw = bytearray(data[8 + n + start:8 + n + end])
        tensors[name] = torch.frombuffer(raw, dtype=torch.float32).reshape(entry["shape"])
    return tensors


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) \
        + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


class Bpe:
    # encoder.py's pattern with \p{L} and \p{N} spelled for the re module (letters: word characters that are
    # neither digits nor underscore).
    PATTERN = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")

    def __init__(self, directory):
        with open(directory + "/vocab.json", encoding="utf-8") as f:
            self.encoder = json.load(f)
        self.decoder = {v: k for k, v in self.encoder.items()}
        with open(directory + "/merges.txt", encoding="utf-8") as f:
            lines = f.read().split("\n")
        assert lines[0].startswith("#version"), lines[0]
        merges = [tuple(l.split(" ")) for l in lines[1:] if l]
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}

    def bpe(self, token):
        word = list(token)
        while len(word) > 1:
            pairs = [(self.ranks.get((word[i], word[i + 1]), math.inf), i) for i in range(len(word) - 1)]
            rank, _ = min(pairs)
            if rank == math.inf:
                break
            pair = next((word[i], word[i + 1]) for r, i in pairs if r == rank)
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        return word

    def encode(self, text):
        ids = []
        for piece in self.PATTERN.findall(text):
            token = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(token))
        return ids

    def decode(self, ids):
        data = bytes(self.byte_decoder[c] for i in ids for c in self.decoder[i])
        return data.decode("utf-8", errors="replace")


class Gpt2:
    def __init__(self, directory):
        with open(directory + "/config.json") as f:
            self.config = json.load(f)
        assert self.config["architectures"] == ["GPT2LMHeadModel"], self.config
        w = read_safetensors(directory + "/model.safetensors")
        self.w = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in w.items()}
        if self.config["tie_word_embeddings"]:
            assert "lm_head.weight" not in self.w
            self.w["lm_head.weight"] = self.w["wte.weight"]
        act = self.config["activation_function"]
        # Hugging Face's ACT2FN: "gelu" is the exact erf GELU, "gelu_new" GPT-2's tanh approximation.
        self.act = {"gelu": lambda x: torch.nn.functional.gelu(x),
                    "gelu_new": lambda x: torch.nn.functional.gelu(x, approximate="tanh")}[act]

    def ln(self, x, name):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.w[name + ".weight"], self.w[name + ".bias"],
                                              self.config["layer_norm_epsilon"])

    def logits(self, ids):
        c = self.config
        n_embd, n_head = c["n_embd"], c["n_head"]
        d = n_embd // n_head
        t = len(ids)
        x = self.w["wte.weight"][torch.tensor(ids)] + self.w["wpe.weight"][:t]
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        for layer in range(c["n_layer"]):
            p = "h.%d." % layer
            h = self.ln(x, p + "ln_1")
            qkv = h @ self.w[p + "attn.c_attn.weight"] + self.w[p + "attn.c_attn.bias"]
            q, k, v = (z.reshape(t, n_head, d).transpose(0, 1) for z in qkv.split(n_embd, dim=-1))
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + mask, dim=-1)
            y = (att @ v).transpose(0, 1).reshape(t, n_embd)
            x = x + y @ self.w[p + "attn.c_proj.weight"] + self.w[p + "attn.c_proj.bias"]
            h = self.act(self.ln(x, p + "ln_2") @ self.w[p + "mlp.c_fc.weight"] + self.w[p + "mlp.c_fc.bias"])
            x = x + h @ self.w[p + "mlp.c_proj.weight"] + self.w[p + "mlp.c_proj.bias"]
        return self.ln(x, "ln_f") @ self.w["lm_head.weight"].T


def main():
    directory, tokens = sys.argv[1], int(sys.argv[2])
    request = json.load(sys.stdin)
    torch.set_num_threads(1)
    bpe = Bpe(directory)
    model = Gpt2(directory)
    prompt_ids = bpe.encode(request["prompt"])
    ids = list(prompt_ids)
    with torch.no_grad():
        last_logits = model.logits(ids)[-1].tolist()
        for _ in range(tokens):
            window = ids[-model.config["n_positions"]:]
            ids.append(int(torch.argmax(model.logits(window)[-1])))
    json.dump({"prompt_ids": prompt_ids, "ids": ids, "text": bpe.decode(ids), "last_logits": last_logits,
               "encoded": [bpe.encode(t) for t in request["texts"]]}, sys.stdout)


if __name__ == "__main__":
    main()
