#!/usr/bin/env python3
"""Writes the PyTorch reference fixtures for nn's attention and transformer
layers: one safetensors file per case under this directory.

Run from anywhere with the Debian PyTorch (torch 1.13, numpy):

    /usr/bin/python3 nn/testdata/transformer/make_fixtures.py

Each file holds, all float32 unless said otherwise:

  in.<name>            the inputs (query, key, value; src; or tgt, memory)
  mask.attn            the attention mask (bool: true = not allowed, or float)
  mask.key_padding     the key padding mask (bool: true = padding)
  mask.memory, mask.tgt_key_padding, mask.memory_key_padding
                       the decoder's memory mask and padding masks
  param.<torch name>   every parameter, under PyTorch's state_dict name
  lossw.output         the weights w of the loss  sum(output * w)
  lossw.weights        (need_weights cases) w2, the loss adds sum(weights * w2)
  out.output           the layer's output
  out.weights          (need_weights cases) the attention weights
  out.loss             the loss, a scalar
  grad.in.<name>       d loss / d input
  grad.param.<name>    d loss / d parameter

and, in the safetensors metadata, the layer's settings (the key "layer" says
which layer; the other keys are its constructor and call arguments). Dropout is
0 and the modules are in training mode, so PyTorch's inference fast paths are
not taken and the math is the plain composition of ops.

The causal cases pass PyTorch the square subsequent mask (torch 1.13 has no
is_causal argument); spore's tests call its layers with IsCausal instead.
"""
import json
import os
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def save_safetensors(path, tensors, metadata):
    """Writes tensors (name -> numpy array) in the safetensors format."""
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    blobs, off = [], 0
    for name in sorted(tensors):
        a = np.array(tensors[name], order="C")  # ascontiguousarray would make a scalar 1-D
        if a.dtype == np.bool_:
            dt = "BOOL"
        elif a.dtype == np.float32:
            dt = "F32"
        else:
            raise ValueError(f"{name}: unexpected dtype {a.dtype}")
        b = a.tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def randomise(module, gen):
    """Replaces every parameter by random values, so that biases (zero at
    PyTorch's initialisation) and norm scales take part in the check."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            r = torch.randn(p.shape, generator=gen)
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.2 * r)
            else:
                p.copy_(0.4 * r)


def np32(t):
    return t.detach().cpu().numpy().astype(np.float32) if t.dtype.is_floating_point else t.detach().cpu().numpy()


def causal(L):
    # PyTorch's generate_square_subsequent_mask: -inf above the diagonal.
    return torch.triu(torch.full((L, L), float("-inf")), diagonal=1)


def padding(N, S, gen):
    """Bool [N, S]: batch element b pads its last b keys (never key 0, so no
    query row is left with no key even under a causal mask)."""
    m = torch.zeros(N, S, dtype=torch.bool)
    for b in range(N):
        if b:
            m[b, S - min(b, S - 1):] = True
    return m


def finish(name, module, inputs, outputs, loss_terms, extra, meta):
    """Backpropagates sum(output * w) (+ sum(weights * w2)) and writes the
    fixture."""
    gen = torch.Generator().manual_seed(7 * sum(map(ord, name)))
    loss = 0
    tensors = dict(extra)
    for key, t in outputs.items():
        w = torch.rand(t.shape, generator=gen) + 0.5
        tensors["lossw." + key] = np32(w)
        tensors["out." + key] = np32(t)
        loss = loss + (t * w).sum()
    loss.backward()
    tensors["out.loss"] = np32(loss.reshape(()))
    for key, t in inputs.items():
        tensors["in." + key] = np32(t)
        tensors["grad.in." + key] = np32(t.grad)
    for pname, p in module.named_parameters():
        tensors["param." + pname] = np32(p)
        tensors["grad.param." + pname] = np32(p.grad)
    save_safetensors(os.path.join(HERE, name + ".safetensors"), tensors, meta)


def leaf(gen, *shape):
    return torch.randn(*shape, generator=gen).requires_grad_(True)


def mha_case(name, E=8, H=2, L=5, S=7, N=2, batch_first=False, bias=True, kdim=None, vdim=None,
             self_attn=False, attn_mask=None, key_padding=False, causal_mask=False,
             need_weights=False, average=True):
    gen = torch.Generator().manual_seed(sum(map(ord, name)))
    torch.manual_seed(sum(map(ord, name)))
    m = torch.nn.MultiheadAttention(E, H, dropout=0.0, bias=bias, batch_first=batch_first, kdim=kdim, vdim=vdim)
    m.train()
    randomise(m, gen)
    kd, vd = kdim or E, vdim or E
    if self_attn:
        S = L
    shape = (lambda n, d: (N, n, d)) if batch_first else (lambda n, d: (n, N, d))
    extra = {}
    if self_attn:
        x = leaf(gen, *shape(L, E))
        q = k = v = x
        inputs = {"query": x}
    else:
        q, k, v = leaf(gen, *shape(L, E)), leaf(gen, *shape(S, kd)), leaf(gen, *shape(S, vd))
        inputs = {"query": q, "key": k, "value": v}
    am = None
    if attn_mask == "float":
        am = torch.rand(L, S, generator=gen) * 2 - 1
        am[0, S - 1] = float("-inf")
    elif attn_mask == "bool3d":
        am = torch.rand(N * H, L, S, generator=gen) < 0.3
        am[:, :, 0] = False  # every row keeps a key
    elif attn_mask == "bool":
        am = torch.rand(L, S, generator=gen) < 0.3
        am[:, 0] = False
    if causal_mask:
        assert am is None and L == S
        am = causal(L)
    kpm = padding(N, S, gen) if key_padding else None
    if am is not None and not causal_mask:
        extra["mask.attn"] = np32(am)
    if kpm is not None:
        extra["mask.key_padding"] = np32(kpm)
    out, w = m(q, k, v, key_padding_mask=kpm, need_weights=need_weights, attn_mask=am, average_attn_weights=average)
    outputs = {"output": out}
    if need_weights:
        outputs["weights"] = w
    meta = dict(layer="MultiheadAttention", embed_dim=E, num_heads=H, batch_first=int(batch_first), bias=int(bias),
                kdim=kd, vdim=vd, self_attn=int(self_attn), is_causal=int(causal_mask),
                need_weights=int(need_weights), average_attn_weights=int(average))
    finish(name, m, inputs, outputs, None, extra, meta)


def encoder_case(name, d=8, H=2, dff=8, L=5, N=2, batch_first=False, norm_first=False, activation="relu",
                 eps=1e-5, mask=None, key_padding=False, layers=0, final_norm=False):
    gen = torch.Generator().manual_seed(sum(map(ord, name)))
    torch.manual_seed(sum(map(ord, name)))
    layer = torch.nn.TransformerEncoderLayer(d, H, dim_feedforward=dff, dropout=0.0, activation=activation,
                                             layer_norm_eps=eps, batch_first=batch_first, norm_first=norm_first)
    m = layer
    if layers:
        m = torch.nn.TransformerEncoder(layer, layers, norm=torch.nn.LayerNorm(d, eps=eps) if final_norm else None,
                                        enable_nested_tensor=False)
    m.train()
    randomise(m, gen)
    x = leaf(gen, *((N, L, d) if batch_first else (L, N, d)))
    extra = {}
    am = None
    if mask == "causal":
        am = causal(L)
    elif mask == "bool":
        am = torch.rand(L, L, generator=gen) < 0.3
        am[:, 0] = False
        extra["mask.attn"] = np32(am)
    elif mask == "float":
        am = torch.rand(L, L, generator=gen) * 2 - 1
        extra["mask.attn"] = np32(am)
    kpm = padding(N, L, gen) if key_padding else None
    if kpm is not None:
        extra["mask.key_padding"] = np32(kpm)
    if layers:
        out = m(x, mask=am, src_key_padding_mask=kpm)
    else:
        out = m(x, src_mask=am, src_key_padding_mask=kpm)
    meta = dict(layer="TransformerEncoder" if layers else "TransformerEncoderLayer", d_model=d, nhead=H,
                dim_feedforward=dff, batch_first=int(batch_first), norm_first=int(norm_first), activation=activation,
                layer_norm_eps=eps, is_causal=int(mask == "causal"), num_layers=layers, final_norm=int(final_norm))
    finish(name, m, {"src": x}, {"output": out}, None, extra, meta)


def decoder_case(name, d=8, H=2, dff=8, T=4, S=5, N=2, batch_first=False, norm_first=False, activation="relu",
                 eps=1e-5, layers=0, final_norm=False):
    """A decoder layer (or stack) with every mask: a causal target mask, a
    bool memory mask and both padding masks."""
    gen = torch.Generator().manual_seed(sum(map(ord, name)))
    torch.manual_seed(sum(map(ord, name)))
    layer = torch.nn.TransformerDecoderLayer(d, H, dim_feedforward=dff, dropout=0.0, activation=activation,
                                             layer_norm_eps=eps, batch_first=batch_first, norm_first=norm_first)
    m = layer
    if layers:
        m = torch.nn.TransformerDecoder(layer, layers, norm=torch.nn.LayerNorm(d, eps=eps) if final_norm else None)
    m.train()
    randomise(m, gen)
    shape = (lambda n: (N, n, d)) if batch_first else (lambda n: (n, N, d))
    tgt, mem = leaf(gen, *shape(T)), leaf(gen, *shape(S))
    mm = torch.rand(T, S, generator=gen) < 0.3
    mm[:, 0] = False
    tkpm, mkpm = padding(N, T, gen), padding(N, S, gen)
    out = m(tgt, mem, tgt_mask=causal(T), memory_mask=mm, tgt_key_padding_mask=tkpm, memory_key_padding_mask=mkpm)
    extra = {"mask.memory": np32(mm), "mask.tgt_key_padding": np32(tkpm), "mask.memory_key_padding": np32(mkpm)}
    meta = dict(layer="TransformerDecoder" if layers else "TransformerDecoderLayer", d_model=d, nhead=H,
                dim_feedforward=dff, batch_first=int(batch_first), norm_first=int(norm_first), activation=activation,
                layer_norm_eps=eps, tgt_is_causal=1, num_layers=layers, final_norm=int(final_norm))
    finish(name, m, {"tgt": tgt, "memory": mem}, {"output": out}, None, extra, meta)


def main():
    torch.set_num_threads(1)
    mha_case("mha_cross_weights", need_weights=True)
    mha_case("mha_masks_batch_first", batch_first=True, attn_mask="float", key_padding=True,
             need_weights=True, average=False)
    mha_case("mha_self_causal_padding", self_attn=True, L=6, causal_mask=True, key_padding=True)
    mha_case("mha_kvdim_nobias_bool3d", kdim=6, vdim=5, bias=False, attn_mask="bool3d", key_padding=True)
    mha_case("mha_self_bool_mask", self_attn=True, batch_first=True, attn_mask="bool", need_weights=True)
    encoder_case("enc_post_relu_padding", batch_first=True, key_padding=True)
    encoder_case("enc_pre_gelu_causal", norm_first=True, activation="gelu", mask="causal")
    encoder_case("enc_post_gelu_boolmask", activation="gelu", mask="bool", key_padding=True)
    encoder_case("enc_pre_relu_floatmask", norm_first=True, batch_first=True, mask="float")
    encoder_case("encoder_2layers_norm", norm_first=True, activation="gelu", layers=2, final_norm=True,
                 key_padding=True, mask="causal", batch_first=True)
    decoder_case("dec_post_relu")
    decoder_case("dec_pre_gelu_batch_first", norm_first=True, activation="gelu", batch_first=True)


if __name__ == "__main__":
    main()
