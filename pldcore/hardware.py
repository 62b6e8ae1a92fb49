"""Cost profiles of hardware we have not measured: a roofline model of one forward, with its inputs stated.

A forward over ``k`` new tokens after ``c`` cached ones reads every weight once and the KV cache
of ``c + k`` tokens, and does ``2 x k`` FLOPs per weight plus attention's FLOPs. On a GPU it takes
about ``max(bytes / achievable bandwidth, FLOPs / achievable compute)`` plus a fixed per-forward
overhead (kernel launches, the engine's own work around the forward); split over ``N`` GPUs
(tensor parallel), each holds and reads ``1 / N`` of it and pays two all-reduces per layer. A step of
a server running ``B`` requests at once (``batch``), each verifying its own ``k`` tokens after its own
``c``, reads the weights once, ``B`` caches, and does ``B`` requests' FLOPs: its profile is that step's
time by ``k`` and ``c``, every request drafting alike (:data:`BATCH_DEPLOYMENTS`).

:class:`Gpu` and :class:`Model` hold the inputs (spec-sheet figures, the shares of them a real
engine reaches, a model's shapes), :class:`Deployment` a model on one or more GPUs and its
estimate, :data:`CALIBRATION` the published measurements the estimate is checked against, and
:data:`PROFILES` the named profiles (``cpu``, ``flat`` and the ``<gpu>-<model>`` ones) that
:func:`profile_named` returns. Every profile made here says "roofline estimate" in its model,
device and host; none of it was measured. ``docs/hardware.md`` explains each input and the
calibration table; ``python -m pldcore.hardware`` prints the tables that page shows.

Pure Python and numpy: cheap to import, nothing here runs a model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.errors import PLDError
from pldcore.names import unknown_name

GB = 1e9  # spec sheets count memory bandwidth and capacity in 10^9 bytes
TERA = 1e12

#: the engine's fixed cost per forward (CUDA-graph launch, sampling, its loop), seconds; fitted
#: together with the A100's bandwidth share on torchao's two A100 points (see CALIBRATION)
FORWARD_OVERHEAD_S = 0.8e-3
#: latency of one all-reduce between tensor-parallel GPUs (two per layer), seconds; fitted on
#: gpt-fast's Llama-3.1-70B over 4 A100s. Only its latency: the bytes it moves are not modelled
ALLREDUCE_S = 22e-6
#: the board's large-GPU forward (``flat``): one forward over up to 64 tokens costs this
FLAT_FORWARD_S = 0.025

#: forward sizes of every profile: the reference CPU profile's (1..64), and past 64 so that a
#: bigger draft is priced by the model rather than by extrapolating the 48..64 slope
SIZES = (*CPU_SMOLLM2.sizes, 96, 128, 192, 256)
#: cached tokens of every profile's grid; ``seconds`` (the one-dimensional profile) is the first row
CONTEXTS = (512, 1024, 2048, 4096, 8192)
ESTIMATE = "roofline estimate"


@dataclass(frozen=True)
class Gpu:
    """One GPU: its spec-sheet peaks and the shares of them a forward reaches in practice.

    ``bandwidth_share`` is the fraction of ``memory_gbps`` a batch-1 decoding forward's weight
    reads reach in a compiled engine (the overhead apart); ``compute_share`` the fraction of
    ``bf16_tflops`` a forward over thousands of tokens reaches. ``basis`` says where each share
    comes from: fitted on a calibration point, or borrowed from a GPU of the same generation.
    """

    key: str  # short name used in profile names ("h100")
    name: str
    memory_gbps: float  # peak memory bandwidth, 10^9 bytes/s
    bf16_tflops: float  # peak dense bf16 tensor-core throughput with fp32 accumulation (no sparsity)
    memory_gb: float  # memory capacity, 10^9 bytes
    bandwidth_share: float
    compute_share: float
    spec: str  # where the peaks come from
    basis: str  # where the shares come from


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer's shapes (Llama-style: GQA attention, gated MLP, RMSNorm).

    Weights and KV cache are ``weight_bytes`` and ``kv_bytes`` per element (bf16: 2).
    ``hidden`` is the query width (heads x head_dim, as in every Llama).
    """

    key: str  # short name used in profile names ("8b")
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    weight_bytes: float = 2.0
    kv_bytes: float = 2.0

    @property
    def embedding_params(self) -> int:
        """Parameters of the embedding table, and of the LM head (the same shape, tied or not)."""
        return self.vocab * self.hidden

    @property
    def layer_params(self) -> int:
        """Weights of one decoder layer: q, k, v, o projections, the gated MLP, two norms."""
        attention = 2 * self.hidden * self.heads * self.head_dim + 2 * self.hidden * self.kv_heads * self.head_dim
        return attention + 3 * self.hidden * self.intermediate + 2 * self.hidden

    @property
    def params(self) -> int:
        """All parameters, as a model card counts them (the embedding once if tied to the head)."""
        heads = 1 if self.tied_embeddings else 2
        return self.layers * self.layer_params + heads * self.embedding_params + self.hidden

    @property
    def read_params(self) -> int:
        """Parameters a forward reads in full: all but an untied input embedding (only k rows of it)."""
        return self.params - (0 if self.tied_embeddings else self.embedding_params)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per cached token: layers x kv_heads x head_dim x (K and V) x bytes."""
        return self.layers * self.kv_heads * self.head_dim * 2 * self.kv_bytes

    def flops(self, tokens: int, context: int, rows: int | None = None) -> float:
        """FLOPs of a forward over ``tokens`` new tokens after ``context`` cached ones.

        Matmuls: 2 per weight per token, the LM head on ``rows`` of them (default: all, as a
        verifying forward needs). Attention: QK^T and AV, 2 x 2 x hidden per (query, key) pair,
        each new token seeing the cache and the new tokens before it.
        """
        rows = tokens if rows is None else rows
        head = self.embedding_params
        matmuls = 2 * (self.read_params - head) * tokens + 2 * head * rows
        pairs = tokens * context + tokens * (tokens + 1) / 2
        return matmuls + 4 * self.layers * self.hidden * pairs


@dataclass(frozen=True)
class ForwardTerms:
    """One forward's estimate, term by term (seconds, on each GPU of the deployment)."""

    memory_s: float  # weights and KV cache over the achievable bandwidth
    compute_s: float  # FLOPs over the achievable compute
    overhead_s: float  # the engine's fixed cost per forward
    communication_s: float  # all-reduce latency (tensor parallel only)

    @property
    def bound(self) -> str:
        """``"memory"`` or ``"compute"``: which of the two roofline terms sets the time."""
        return "memory" if self.memory_s >= self.compute_s else "compute"

    @property
    def seconds(self) -> float:
        return max(self.memory_s, self.compute_s) + self.overhead_s + self.communication_s


@dataclass(frozen=True)
class Deployment:
    """A model on ``tensor_parallel`` identical GPUs, and its roofline estimate.

    Each GPU holds and reads ``1 / tensor_parallel`` of the weights and of the KV cache (heads
    are split) and does that share of the FLOPs; with more than one, each layer adds two
    all-reduces of ``allreduce_s`` each.
    """

    gpu: Gpu
    model: Model
    tensor_parallel: int = 1
    overhead_s: float = FORWARD_OVERHEAD_S
    allreduce_s: float = ALLREDUCE_S
    #: requests served in one step, each verifying its own tokens after its own cache (1: one at a time)
    batch: int = 1

    def __post_init__(self) -> None:
        if self.tensor_parallel < 1 or self.model.kv_heads % self.tensor_parallel:
            raise ValueError(f"{self.model.name} has {self.model.kv_heads} KV heads: it cannot be split "
                             f"over {self.tensor_parallel} GPUs")
        if not isinstance(self.batch, int) or isinstance(self.batch, bool) or self.batch < 1:
            raise ValueError(f"batch must be an int >= 1, got {self.batch!r}")

    @property
    def name(self) -> str:
        """The profile name: ``<gpu>-<model>``, with ``-tp<N>`` over N GPUs and ``-b<B>`` at batch B > 1."""
        tp = f"-tp{self.tensor_parallel}" if self.tensor_parallel > 1 else ""
        batch = f"-b{self.batch}" if self.batch > 1 else ""
        return f"{self.gpu.key}-{self.model.key}{tp}{batch}"

    @property
    def weight_gb_per_gpu(self) -> float:
        """Weights each GPU holds, 10^9 bytes (all of them, the input embedding too)."""
        return self.model.params * self.model.weight_bytes / self.tensor_parallel / GB

    def fits(self, context: int = CONTEXTS[-1]) -> bool:
        """Whether each GPU holds its weights and a ``context``-token KV cache for each of the
        ``batch`` requests (activations and the engine's workspace are not counted)."""
        kv = self.model.kv_bytes_per_token * context * self.batch / self.tensor_parallel / GB
        return self.weight_gb_per_gpu + kv <= self.gpu.memory_gb

    def max_context(self) -> int:
        """The longest cache each of the ``batch`` requests may hold, in tokens, beside the weights."""
        free = (self.gpu.memory_gb - self.weight_gb_per_gpu) * GB * self.tensor_parallel
        return int(free // (self.model.kv_bytes_per_token * self.batch))

    def terms(self, tokens: int, context: int, rows: int | None = None, batch: int | None = None) -> ForwardTerms:
        """The estimate of one step: ``batch`` requests (default :attr:`batch`), each over ``tokens``
        new tokens after its own ``context`` cached ones (``rows``: how many of each request's tokens
        need logits; default all). The weights are read once a step, each request's cache once, and
        each request's FLOPs are its own: nothing is padded (a ragged batch, as vLLM runs it)."""
        if tokens < 1 or context < 0:
            raise ValueError(f"a forward needs tokens >= 1 and context >= 0, got {tokens} and {context}")
        m, n = self.model, self.tensor_parallel
        b = self.batch if batch is None else batch
        weights = m.read_params * m.weight_bytes
        kv = m.kv_bytes_per_token * (context + tokens) * b  # read each cache, write the new tokens' keys and values
        memory = (weights + kv) / n / (self.gpu.memory_gbps * GB * self.gpu.bandwidth_share)
        compute = m.flops(tokens, context, rows) * b / n / (self.gpu.bf16_tflops * TERA * self.gpu.compute_share)
        communication = 2 * m.layers * self.allreduce_s if n > 1 else 0.0
        return ForwardTerms(memory, compute, self.overhead_s, communication)

    def forward_seconds(self, tokens: int, context: int) -> float:
        """Seconds of a verifying step: each of the ``batch`` requests over ``tokens`` new tokens, each
        token with its logits."""
        return self.terms(tokens, context).seconds

    def prefill_seconds(self, prompt: int, rows: bool = False) -> float:
        """Seconds to prefill a ``prompt``-token prompt: the logits of its last row only, or of
        every row with ``rows`` (for a drafter that reads the target's top-k on the prompt).

        Priced as for the request alone, at any ``batch``: a prompt of a few hundred tokens or more is
        compute-bound by itself, so riding in a step with the others' decoding it adds about its own
        FLOPs, which is what it costs alone (the weights it would read alone are read anyway)."""
        return self.terms(prompt, 0, rows=prompt if rows else 1, batch=1).seconds

    def tokens_per_second(self, context: int) -> float:
        """Plain decoding's rate of one request at ``context`` cached tokens: one one-token step per token."""
        return 1.0 / self.forward_seconds(1, context)

    def profile(self) -> CostProfile:
        """The estimate as a :class:`CostProfile` over :data:`SIZES` and :data:`CONTEXTS`: at a batch,
        a step's time by the tokens each request verifies in it (every request alike)."""
        grid = tuple(tuple(self.forward_seconds(k, c) for k in SIZES) for c in CONTEXTS)
        tp = f" x{self.tensor_parallel}, tensor parallel" if self.tensor_parallel > 1 else ""
        batch = f", batch {self.batch}" if self.batch > 1 else ""
        return CostProfile(
            sizes=SIZES, seconds=grid[0], model=f"{self.model.name} ({ESTIMATE})",
            device=f"{self.gpu.name}{tp}{batch} ({ESTIMATE})", contexts=CONTEXTS, grid=grid,
            prefill=tuple(self.prefill_seconds(c) for c in CONTEXTS),
            prefill_rows=tuple(self.prefill_seconds(c, rows=True) for c in CONTEXTS),
            host=f"{ESTIMATE} (pldcore/hardware.py)",
            drafter_scale=self.batch / DRAFT_THREADS if self.batch > 1 else 1.0,
        )


# --- the GPUs ---------------------------------------------------------------------------------
# Peaks from NVIDIA's data sheets; the shares are explained, point by point, in docs/hardware.md.
A100 = Gpu("a100", "A100 80GB SXM", memory_gbps=2039, bf16_tflops=312, memory_gb=80,
           bandwidth_share=0.76, compute_share=0.5,
           spec="NVIDIA A100 data sheet (80GB SXM: 2,039 GB/s, 312 TFLOPS bf16 dense)",
           basis="bandwidth fitted with the overhead on torchao's A100 points; compute borrowed from the H100")
H100 = Gpu("h100", "H100 SXM 80GB", memory_gbps=3352, bf16_tflops=989, memory_gb=80,
           bandwidth_share=0.63, compute_share=0.5,
           spec="NVIDIA H100 data sheet (SXM: 3.35 TB/s, 989 TFLOPS bf16 dense)",
           basis="bandwidth fitted on torchao's H100 point; compute fitted on torchao's vLLM prefill point")
H200 = Gpu("h200", "H200 SXM 141GB", memory_gbps=4800, bf16_tflops=989, memory_gb=141,
           bandwidth_share=0.63, compute_share=0.5,
           spec="NVIDIA H200 data sheet (SXM: 4.8 TB/s, 989 TFLOPS bf16 dense)",
           basis="both borrowed from the H100 (same Hopper chip, HBM3e memory): no published point")
L4 = Gpu("l4", "L4 24GB", memory_gbps=300, bf16_tflops=121, memory_gb=24,
         bandwidth_share=0.86, compute_share=0.5,
         spec="NVIDIA L4 data sheet (300 GB/s, 242 TFLOPS bf16 with sparsity: 121 dense)",
         basis="bandwidth borrowed from the RTX 4090 (same Ada generation, GDDR memory), compute from "
               "the H100: no published point")
RTX4090 = Gpu("rtx4090", "GeForce RTX 4090 24GB", memory_gbps=1008, bf16_tflops=165.2, memory_gb=24,
              bandwidth_share=0.86, compute_share=0.5,
              spec="NVIDIA Ada architecture whitepaper (1,008 GB/s; 165.2 TFLOPS bf16 dense, fp32 accumulate)",
              basis="bandwidth fitted on llama.cpp's 512-token point; compute borrowed from the H100")
GPUS = (H100, H200, A100, L4, RTX4090)
#: only for calibration: the batched A100 sweep below ran on the 40 GB card (HBM2, 1,555 GB/s)
A100_40GB = Gpu("a100-40gb", "A100 40GB SXM", memory_gbps=1555, bf16_tflops=312, memory_gb=40,
                bandwidth_share=A100.bandwidth_share, compute_share=A100.compute_share,
                spec="NVIDIA A100 data sheet (40GB SXM: 1,555 GB/s, 312 TFLOPS bf16 dense)",
                basis="both shares borrowed from the A100 80GB (same chip, HBM2 memory)")

# --- the models (shapes from each model's config.json on the Hugging Face Hub) ------------------
LLAMA_32_1B = Model("1b", "Llama-3.2-1B", layers=16, hidden=2048, heads=32, kv_heads=8, head_dim=64,
                    intermediate=8192, vocab=128256, tied_embeddings=True)
LLAMA_31_8B = Model("8b", "Llama-3.1-8B", layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128,
                    intermediate=14336, vocab=128256, tied_embeddings=False)
LLAMA_31_70B = Model("70b", "Llama-3.1-70B", layers=80, hidden=8192, heads=64, kv_heads=8, head_dim=128,
                     intermediate=28672, vocab=128256, tied_embeddings=False)
#: only for calibration: gpt-fast and torchao measured these beside the Llama-3 models
LLAMA_2_7B = Model("l2-7b", "Llama-2-7B", layers=32, hidden=4096, heads=32, kv_heads=32, head_dim=128,
                   intermediate=11008, vocab=32000, tied_embeddings=False)
LLAMA_2_70B = Model("l2-70b", "Llama-2-70B", layers=80, hidden=8192, heads=64, kv_heads=8, head_dim=128,
                    intermediate=28672, vocab=32000, tied_embeddings=False)
MODELS = (LLAMA_32_1B, LLAMA_31_8B, LLAMA_31_70B)

#: every named GPU profile: each GPU with the 1B and the 8B model; the 70B model over as few
#: GPUs as hold it (141 GB of weights: two H200s, four H100s or A100s; not on the 24 GB cards)
DEPLOYMENTS: dict[str, Deployment] = {
    d.name: d for d in (
        *(Deployment(gpu, model) for model in (LLAMA_31_8B, LLAMA_32_1B) for gpu in GPUS),
        Deployment(H100, LLAMA_31_70B, tensor_parallel=4),
        Deployment(H200, LLAMA_31_70B, tensor_parallel=2),
        Deployment(A100, LLAMA_31_70B, tensor_parallel=4),
    )
}

#: threads a server drafts a batch's requests over, each request's lookup on one of them: vLLM's n-gram
#: proposer (vllm/v1/spec_decode/ngram_proposer.py) runs its batch in numba's parallel loop over
#: min(8, physical cores) threads; so a step at a batch of B pays B / 8 of one request's drafter time
DRAFT_THREADS = 8
#: the batches a server runs at once that the batch profiles price (``<gpu>-<model>-b<B>``)
BATCHES = (32, 128)
#: the batched profiles: the 8B model on an H100 serving :data:`BATCHES` requests at a time, each step
#: priced by the tokens each request verifies in it (every request drafting alike). Their grid's long
#: contexts price batches whose caches do not fit (:meth:`Deployment.max_context`; docs/hardware.md)
BATCH_DEPLOYMENTS: dict[str, Deployment] = {
    d.name: d for d in (Deployment(H100, LLAMA_31_8B, batch=b) for b in BATCHES)
}


# --- calibration ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Calibration:
    """A published measurement and the model's estimate of it.

    ``tokens_per_s`` is plain decoding's rate at batch 1 averaged over a run whose cache held
    ``context`` tokens on average (``prompt`` = 0), or, for a prefill point, prompt tokens per
    second over ``prompt``-token prompts. ``fitted`` names the input the point set ("" when it
    is a check), ``note`` why a check is outside :data:`TOLERANCE`.
    """

    source: str
    setting: str
    deployment: Deployment
    tokens_per_s: float
    context: int = 0
    prompt: int = 0
    fitted: str = ""
    note: str = ""

    @property
    def estimate(self) -> float:
        """The model's tokens per second for this setting."""
        if self.prompt:
            return self.prompt / self.deployment.prefill_seconds(self.prompt)
        return self.deployment.tokens_per_second(self.context)

    @property
    def error(self) -> float:
        """Estimate over published, minus one (+0.10: the model says 10% faster)."""
        return self.estimate / self.tokens_per_s - 1.0


#: how far from a published point the estimate may be
TOLERANCE = 0.15

#: where each calibration point comes from: its label in the table -> the document
SOURCES = {
    "gpt-fast": "github.com/pytorch-labs/gpt-fast, README.md at commit 32971d3 (Sep 2024), tables "
                "'Benchmarks' and 'Tensor Parallelism'",
    "torchao": "github.com/pytorch/ao, torchao/quantization/README.md at commit 92dd5f5 (Oct 2024), "
               "'Benchmarks' (A100-80GB and H100 tables)",
    "torchao-vllm": "github.com/pytorch/ao, torchao/quantization/README.md at commit aa25287 (Jan 2026), "
                    "'Performance benchmarks', NVIDIA H100, bfloat16 prefill",
    "llama.cpp": "github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference, README.md at commit 00dd2bd, "
                 "'LLaMA 3', NVIDIA GPUs (May 2024 snapshot)",
    # the batched checks (BATCH_CALIBRATION)
    "musgrave": "johnmusgrave.com, 'vLLM throughput-latency sweep on NVIDIA A100' (vLLM 0.23.0, "
                "vllm bench serve, random 1,024-token prompts, 128 output tokens, --ignore-eos, concurrency 1..64)",
    "inferencebench": "yobitelcomm.github.io/bench, 'Recipe: concurrency sweep' (InferenceBench, vLLM 0.21.0, "
                      "H100-80GB-HBM3, fp16, workload llm.inference.chatbot-short, captured 2026-05-16)",
}
#: gpt-fast's and torchao's generate.py make 100 tokens after a 5-6-token prompt (their defaults,
#: which their READMEs' benchmark commands keep): ~55 cached tokens on average
SHORT_RUN = 55

CALIBRATION: tuple[Calibration, ...] = (
    Calibration("torchao", "torch.compile (gpt-fast style), A100-80GB, bf16, batch 1, 100 new tokens",
                Deployment(A100, LLAMA_31_8B), 95.64, SHORT_RUN, fitted="A100 bandwidth share and overhead"),
    Calibration("torchao", "the same, Llama-2-7B", Deployment(A100, LLAMA_2_7B), 107.38, SHORT_RUN,
                fitted="A100 bandwidth share and overhead"),
    Calibration("torchao", "torch.compile (gpt-fast style), H100, bf16, batch 1, 100 new tokens",
                Deployment(H100, LLAMA_31_8B), 126.90, SHORT_RUN, fitted="H100 bandwidth share"),
    Calibration("torchao-vllm", "vLLM 0.13, H100, bf16, 32 prompts of 4,096 tokens (+32 new tokens each)",
                Deployment(H100, LLAMA_31_8B), 30946.5, prompt=4096, fitted="compute share",
                note="the published rate also counts 32 decoding steps per prompt, which the estimate leaves out"),
    Calibration("gpt-fast", "gpt-fast, A100-80GB power-limited to 330 W, bf16, batch 1, 100 new tokens",
                Deployment(A100, LLAMA_31_8B), 93.89, SHORT_RUN),
    Calibration("gpt-fast", "the same, Llama-2-7B", Deployment(A100, LLAMA_2_7B), 104.9, SHORT_RUN),
    Calibration("gpt-fast", "the same, Llama-3.1-70B, tensor parallel over 4 GPUs",
                Deployment(A100, LLAMA_31_70B, tensor_parallel=4), 37.45, SHORT_RUN, fitted="all-reduce latency"),
    Calibration("gpt-fast", "the same, over 8 GPUs", Deployment(A100, LLAMA_31_70B, tensor_parallel=8), 58.78,
                SHORT_RUN),
    Calibration("gpt-fast", "the same, over 2 GPUs", Deployment(A100, LLAMA_31_70B, tensor_parallel=2), 16.03,
                SHORT_RUN, note="an outlier of its source: Llama-2-70B over the same 2 GPUs, with 2% less "
                                "weight per GPU, runs at 21.32 tokens/s (a check below, inside the tolerance), and "
                                "the README's own bandwidth for this row (1,130.81 GB/s) is far below that one's "
                                "(1,481.87)"),
    Calibration("gpt-fast", "the same, Llama-2-70B over 2 GPUs", Deployment(A100, LLAMA_2_70B, tensor_parallel=2),
                21.32, SHORT_RUN),
    Calibration("gpt-fast", "the same, over 4 GPUs", Deployment(A100, LLAMA_2_70B, tensor_parallel=4), 38.01,
                SHORT_RUN),
    Calibration("gpt-fast", "the same, over 8 GPUs", Deployment(A100, LLAMA_2_70B, tensor_parallel=8), 62.50,
                SHORT_RUN),
    Calibration("gpt-fast", "the same, Llama-3.1-8B over 2 GPUs", Deployment(A100, LLAMA_31_8B, tensor_parallel=2),
                149.10, SHORT_RUN),
    Calibration("gpt-fast", "the same, over 4 GPUs", Deployment(A100, LLAMA_31_8B, tensor_parallel=4), 217.21,
                SHORT_RUN),
    Calibration("gpt-fast", "the same, over 8 GPUs", Deployment(A100, LLAMA_31_8B, tensor_parallel=8), 276.01,
                SHORT_RUN),
    Calibration("llama.cpp", "llama.cpp (llama-bench tg512), RTX 4090, Llama-3-8B f16, batch 1",
                Deployment(RTX4090, LLAMA_31_8B), 54.84, 256, fitted="RTX 4090 bandwidth share"),
    Calibration("llama.cpp", "the same, tg1024", Deployment(RTX4090, LLAMA_31_8B), 54.34, 512),
    Calibration("llama.cpp", "the same, tg4096", Deployment(RTX4090, LLAMA_31_8B), 52.63, 2048),
    Calibration("llama.cpp", "the same, tg8192", Deployment(RTX4090, LLAMA_31_8B), 50.88, 4096),
)


# --- calibration of the batched model -------------------------------------------------------------
@dataclass(frozen=True)
class BatchPoint:
    """A published figure of a server decoding ``concurrency`` requests at once, and the model's
    estimate of it; every point is a check (none set an input).

    ``published`` is the median time per output token (TPOT, milliseconds) of a request decoding
    with ``context`` tokens cached on average, or, with ``gain_over`` set, the ratio of a closed-loop
    benchmark's output throughput at ``concurrency`` to that at ``gain_over`` (fixed ``prompt`` and
    ``output`` lengths per request). ``note`` says why a point is outside :data:`TOLERANCE`.
    """

    source: str
    setting: str
    deployment: Deployment  # at batch 1: the point's concurrency sets the batch
    concurrency: int
    published: float
    context: int = 0
    gain_over: int = 0
    prompt: int = 0
    output: int = 0
    note: str = ""

    def at(self, batch: int) -> Deployment:
        """The point's deployment serving ``batch`` requests at once."""
        return replace(self.deployment, batch=batch)

    def throughput(self, batch: int) -> float:
        """Output tokens per second of the closed loop at ``batch``: each request's prefill priced
        alone and, apart from it, ``output`` one-token steps at the mean context: a cycle of ``batch``
        requests takes ``batch`` prefills and ``output`` steps (the prefills stall the decoding)."""
        d = self.at(batch)
        cycle = batch * d.prefill_seconds(self.prompt) + self.output * d.forward_seconds(1, self.prompt + self.output // 2)
        return batch * self.output / cycle

    @property
    def estimate(self) -> float:
        """The model's TPOT in milliseconds, or its throughput gain (``gain_over``)."""
        if self.gain_over:
            return self.throughput(self.concurrency) / self.throughput(self.gain_over)
        return 1e3 * self.at(self.concurrency).forward_seconds(1, self.context)

    @property
    def error(self) -> float:
        """Estimate over published, minus one (a TPOT: -0.20 says the model's steps are 20% faster)."""
        return self.estimate / self.published - 1.0


#: the chatbot-short workload's lengths are not published: its points are priced at this many cached
#: tokens (docs/hardware.md gives the estimates at 128 and 2,048 too)
SHORT_CHAT = 512

BATCH_CALIBRATION: tuple[BatchPoint, ...] = (
    BatchPoint("musgrave", "one request at a time: 'about 75 tokens/sec' (TPOT 13.3 ms), A100 40GB, bf16",
               Deployment(A100_40GB, LLAMA_31_8B), 1, 1e3 / 75, context=1024 + 64),
    BatchPoint("musgrave", "throughput at concurrency 8 over concurrency 1: 'a 6.6x gain'", Deployment(A100_40GB, LLAMA_31_8B),
               8, 6.6, gain_over=1, prompt=1024, output=128),
    BatchPoint("inferencebench", "median TPOT at concurrency 1", Deployment(H100, LLAMA_31_8B), 1, 6.48,
               context=SHORT_CHAT, note="vLLM 0.21 decodes one request faster than the torchao point the H100's "
                                        "bandwidth share was fitted on (126.90 tokens/s, 7.9 ms)"),
    BatchPoint("inferencebench", "median TPOT at concurrency 4", Deployment(H100, LLAMA_31_8B), 4, 6.59,
               context=SHORT_CHAT, note="as at concurrency 1"),
    BatchPoint("inferencebench", "median TPOT at concurrency 16", Deployment(H100, LLAMA_31_8B), 16, 10.94,
               context=SHORT_CHAT, note="published TPOT grows 1.69x from concurrency 1 to 16, the model's 1.06x: "
                                        "other requests' prefills stall the decoding steps, and small-batch "
                                        "kernels fall short of the roofline"),
    BatchPoint("inferencebench", "median TPOT at concurrency 64", Deployment(H100, LLAMA_31_8B), 64, 46.91,
               context=SHORT_CHAT, note="the server saturated on something the model has not: its throughput fell "
                                        "from 1,384 tokens/s at concurrency 16 to 1,312 (p99 TTFT 465 ms)"),
)


# --- the named profiles -----------------------------------------------------------------------
def _flat() -> CostProfile:
    name = f"flat: an idealised large GPU, up to 64 tokens for one {1e3 * FLAT_FORWARD_S:.0f} ms forward"
    return CostProfile.flat(64, seconds=FLAT_FORWARD_S, name=name)


#: name -> cost profile: ``cpu`` (the measured reference profile, the very object
#: :data:`pldcore.cost.CPU_SMOLLM2`), ``flat`` (an idealisation) and the roofline estimates
PROFILES: dict[str, CostProfile] = {
    "cpu": CPU_SMOLLM2,
    "flat": _flat(),
    **{name: d.profile() for name, d in DEPLOYMENTS.items()},
    **{name: d.profile() for name, d in BATCH_DEPLOYMENTS.items()},
}


def profile_named(name: str) -> CostProfile:
    """The cost profile called ``name`` (any case) in :data:`PROFILES`; an unknown name raises
    :class:`PLDError` with the close names and all of them."""
    try:
        return PROFILES[str(name).strip().lower()]
    except KeyError:
        raise PLDError(unknown_name("cost profile", str(name).strip().lower(), PROFILES)) from None


def is_profile_file(value: str) -> bool:
    """Whether ``value`` names a profile file (``x.json``, a path) rather than a named profile."""
    return value.endswith(".json") or os.sep in value or Path(value).is_file()


def read_profile(path: str | Path, what: str = "profile") -> CostProfile:
    """A cost profile saved as JSON; PLDError naming ``what`` (``--profile``), with the reason, when
    the file is missing, not a regular file of at most ``cost.MAX_PROFILE_BYTES`` (``/dev/zero``), or
    not a profile (``cost.check_profile``: every time positive, finite, never falling)."""
    if not os.path.lexists(path):
        raise PLDError(f"{what}: no file {path} (`traces.py profile` measures and keeps this machine's)")
    try:
        return CostProfile.load(path)
    except PLDError as err:  # not a regular file, too big, not JSON, nested too deep: one line already
        raise PLDError(f"{what}: {err}") from None
    except OSError as err:
        raise PLDError(f"{what}: cannot read {path} ({err.strerror or err})") from None
    except (ValueError, KeyError, TypeError) as err:
        raise PLDError(f"{what}: {path} is not a cost profile ({type(err).__name__}: {err})") from None


def profile_from(value: str | CostProfile, what: str = "profile") -> CostProfile:
    """A profile given as a :class:`CostProfile`, a named one (:func:`profile_named`) or a file."""
    if isinstance(value, CostProfile):
        return value
    if not isinstance(value, (str, Path)):
        raise PLDError(f"{what} must be a profile name, a profile file or a CostProfile, got {value!r}")
    return read_profile(value, what) if is_profile_file(str(value)) else profile_named(str(value))


# --- the tables docs/hardware.md shows ------------------------------------------------------------
def gpu_rows() -> list[str]:
    """One markdown table row per GPU: its peaks, the shares of them used, and where each comes from."""
    return [f"| {g.name} (`{g.key}`) | {g.memory_gbps:,.0f} | {g.bf16_tflops:,.1f} | {g.memory_gb:.0f} | "
            f"{g.bandwidth_share:.2f} | {g.compute_share:.2f} | {g.spec}; {g.basis} |" for g in GPUS]


def model_rows() -> list[str]:
    """One markdown table row per model: its shapes, parameters, bytes a forward reads, KV bytes per token."""
    return [f"| {m.name} | {m.layers} | {m.hidden} | {m.heads} / {m.kv_heads} | {m.head_dim} | {m.intermediate} | "
            f"{m.vocab} | {'yes' if m.tied_embeddings else 'no'} | {m.params:,} | "
            f"{m.read_params * m.weight_bytes / GB:.2f} | {m.kv_bytes_per_token / 1024:.0f} KiB |"
            for m in (*MODELS, LLAMA_2_7B, LLAMA_2_70B)]


def calibration_rows() -> list[str]:
    """One markdown table row per calibration point: source, setting, model, cached tokens,
    published and estimated tokens per second, the error, and whether the point set an input."""
    rows = []
    for point in CALIBRATION:
        role = f"fitted: {point.fitted}" if point.fitted else "check"
        cached = f"{point.prompt:,} prompt" if point.prompt else f"~{point.context:,}"
        rows.append(f"| {point.source} | {point.setting} | {point.deployment.model.name} | {cached} | "
                    f"{point.tokens_per_s:,.2f} | {point.estimate:,.2f} | {100 * point.error:+.1f}% | {role} |")
    return rows


#: the draft sizes (tokens per forward) and contexts the profile table shows
RELATIVE_SIZES = (2, 8, 16, 64, 256)
RELATIVE_CONTEXTS = (1024, 8192)


def compute_bound_from(deployment: Deployment, context: int, up_to: int = 4096) -> int | None:
    """The fewest tokens per forward (per request, at a batch) at which ``deployment`` turns
    compute-bound (None: not up to ``up_to``)."""
    return next((k for k in range(1, up_to + 1) if deployment.terms(k, context).bound == "compute"), None)


def profile_rows() -> list[str]:
    """One markdown table row per named GPU profile: at each of :data:`RELATIVE_CONTEXTS`, its
    one-token forward and the cost of :data:`RELATIVE_SIZES` tokens relative to it; then the
    prefill of a 1,024-token prompt and the size from which a forward is compute-bound."""
    rows = []
    for name, d in DEPLOYMENTS.items():
        p = PROFILES[name]
        cells = [f"{1e3 * p.cost(1, c):.2f} ms; " + " / ".join(f"{p.relative(k, c):.3f}" for k in RELATIVE_SIZES)
                 for c in RELATIVE_CONTEXTS]
        ridge = compute_bound_from(d, RELATIVE_CONTEXTS[0])
        gpus = f" x{d.tensor_parallel}" if d.tensor_parallel > 1 else ""
        rows.append(f"| `{name}` | {d.model.name}, {d.gpu.name}{gpus} | {' | '.join(cells)} | "
                    f"{1e3 * p.prefill_cost(1024):.1f} ms | {ridge if ridge else '> 4096'} |")
    return rows


def summary() -> str:
    """How the checks (the points that set nothing) fare against :data:`TOLERANCE`."""
    checks = [p for p in CALIBRATION if not p.fitted]
    inside = sum(abs(p.error) <= TOLERANCE for p in checks)
    worst = max(checks, key=lambda p: abs(p.error))
    where = f"{worst.deployment.model.name} on {worst.deployment.tensor_parallel} x {worst.deployment.gpu.name}"
    return (f"{inside} of {len(checks)} checks within {100 * TOLERANCE:.0f}%; the farthest: "
            f"{worst.source}, {where} ({100 * worst.error:+.1f}%)")


#: the tokens per request per step, and the contexts, the batch profiles' table shows
BATCH_SIZES = (2, 4, 8, 16, 64)
BATCH_CONTEXTS = (1024, 2048)


def batch_profile_rows() -> list[str]:
    """One markdown table row per batch profile, after ``h100-8b`` (batch 1) for reference: at each of
    :data:`BATCH_CONTEXTS`, the step over one token per request and the cost of :data:`BATCH_SIZES`
    tokens per request relative to it, and the fewest tokens per request from which a step is
    compute-bound; then the longest cache per request that fits beside the weights."""
    rows = []
    for name, d in {"h100-8b": DEPLOYMENTS["h100-8b"], **BATCH_DEPLOYMENTS}.items():
        p = PROFILES[name]
        cells = [f"{1e3 * p.cost(1, c):.2f} ms; " + " / ".join(f"{p.relative(k, c):.3f}" for k in BATCH_SIZES)
                 + f"; {compute_bound_from(d, c)}" for c in BATCH_CONTEXTS]
        rows.append(f"| `{name}` | {d.batch} | {' | '.join(cells)} | {d.max_context():,} |")
    return rows


def batch_calibration_rows() -> list[str]:
    """One markdown table row per batched calibration point: source, setting, model and GPU,
    concurrency, cached tokens, published and estimated figure, the error."""
    rows = []
    for point in BATCH_CALIBRATION:
        d = point.deployment
        what = (f"throughput x (vs {point.gain_over})", "x") if point.gain_over else ("TPOT", "ms")
        cached = f"{point.prompt:,} prompt + {point.output}" if point.gain_over else f"~{point.context:,}"
        rows.append(f"| {point.source} | {point.setting} | {d.model.name}, {d.gpu.name} | {point.concurrency} | {cached} | "
                    f"{what[0]} | {point.published:,.2f} {what[1]} | {point.estimate:,.2f} {what[1]} | "
                    f"{100 * point.error:+.1f}% |")
    return rows


def batch_summary() -> str:
    """How the batched checks fare against :data:`TOLERANCE`."""
    inside = sum(abs(p.error) <= TOLERANCE for p in BATCH_CALIBRATION)
    worst = max(BATCH_CALIBRATION, key=lambda p: abs(p.error))
    return (f"{inside} of {len(BATCH_CALIBRATION)} batched checks within {100 * TOLERANCE:.0f}%; the farthest: "
            f"{worst.source}, concurrency {worst.concurrency} ({100 * worst.error:+.1f}%)")


if __name__ == "__main__":
    for rows in (gpu_rows(), model_rows(), calibration_rows(), profile_rows()):
        print("\n".join(rows), end="\n\n")
    print(summary(), end="\n\n")
    for rows in (batch_calibration_rows(), batch_profile_rows()):
        print("\n".join(rows), end="\n\n")
    print(batch_summary())
