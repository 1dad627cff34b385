// The GPU catalogue the perf model, the engine simulator and (later) sizing share: one entry per
// berth GPU id (`<vendor>-<model>-<memory>`), holding only vendor-published facts, each with its
// source. Efficiency factors are not facts of a GPU: they live in perf-model.ts with their evidence.

import { z } from "zod";
import { LIMITS, counter } from "./limits.ts";

export const GPU_TYPES = [
  "nvidia-h100-80gb",
  "nvidia-h100-pcie-80gb",
  "nvidia-h200-141gb",
  "nvidia-b200-180gb",
  "nvidia-a100-40gb",
  "nvidia-a100-80gb",
  "nvidia-l40s-48gb",
  "nvidia-l4-24gb",
  "nvidia-a10g-24gb",
  "amd-mi300x-192gb",
] as const;

export type GpuType = (typeof GPU_TYPES)[number];

export interface GpuFacts {
  id: GpuType;
  vendor: "nvidia" | "amd";
  /** Device memory in GiB as the driver reports it (an "80GB" H100 shows 81559 MiB ≈ 80 GiB). */
  memoryGb: number;
  /** Peak memory bandwidth, GB/s (10^9 bytes per second). */
  hbmBandwidthGBs: number;
  /** Peak dense BF16 tensor throughput, TFLOPS (datasheets often quote 2× this "with sparsity"). */
  bf16Tflops: number;
  /** Peak dense FP8 tensor throughput, TFLOPS; null where the GPU has no FP8 tensor cores (Ampere). */
  fp8Tflops: number | null;
  /** How GPUs of one node talk: NVLink/Infinity Fabric, or PCIe only. Bandwidth per GPU, per direction, GB/s. */
  interconnect: { kind: "nvlink" | "infinity-fabric" | "pcie"; bandwidthGBs: number };
  /** GPUs in the usual server of this type (a TP group larger than this spans hosts). */
  gpusPerNode: number;
  /** Where the numbers come from. */
  source: string;
}

/**
 * | id | memory | bandwidth | dense BF16 | source |
 * |---|---|---|---|---|
 * | nvidia-h100-80gb (SXM5) | 80 GB HBM3 | 3,350 GB/s | 989 TF | NVIDIA H100 datasheet, https://www.nvidia.com/en-us/data-center/h100/ (1,979 TF sparse) |
 * | nvidia-h100-pcie-80gb | 80 GB HBM2e | 2,000 GB/s | 756 TF | same datasheet, PCIe column (1,513 TF sparse) |
 * | nvidia-h200-141gb (SXM) | 141 GB HBM3e | 4,800 GB/s | 989 TF | NVIDIA H200, https://www.nvidia.com/en-us/data-center/h200/ |
 * | nvidia-b200-180gb | 180 GB HBM3e | 8,000 GB/s | 2,250 TF | NVIDIA HGX/DGX B200, https://www.nvidia.com/en-us/data-center/hgx/ (4.5 PF sparse FP16/BF16 per GPU) |
 * | nvidia-a100-40gb (SXM4) | 40 GB HBM2 | 1,555 GB/s | 312 TF | NVIDIA A100 datasheet, https://www.nvidia.com/en-us/data-center/a100/ |
 * | nvidia-a100-80gb (SXM4) | 80 GB HBM2e | 2,039 GB/s | 312 TF | same datasheet |
 * | nvidia-l40s-48gb | 48 GB GDDR6 | 864 GB/s | 362 TF | NVIDIA L40S, https://www.nvidia.com/en-us/data-center/l40s/ (733 TF sparse) |
 * | nvidia-l4-24gb | 24 GB GDDR6 | 300 GB/s | 121 TF | NVIDIA L4, https://www.nvidia.com/en-us/data-center/l4/ (242 TF sparse) |
 * | nvidia-a10g-24gb | 24 GB GDDR6 | 600 GB/s | 125 TF | AWS EC2 G5, https://aws.amazon.com/ec2/instance-types/g5/ for memory; NVIDIA publishes no A10G sheet, so compute is the A10's (https://www.nvidia.com/en-us/data-center/products/a10-gpu/, 250 TF sparse) — an assumption |
 * | amd-mi300x-192gb | 192 GB HBM3 | 5,300 GB/s | 1,307 TF | AMD Instinct MI300X, https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html |
 *
 * Dense FP8 and the intra-node link (per GPU, per direction), cross-checked against NVIDIA's
 * AIConfigurator system files (github.com/ai-dynamo/aiconfigurator @095f58a,
 * aic-core/src/aiconfigurator_core/systems/<system>.yaml: `fp8_tc_flops`, `intra_node_bw`):
 * | id | FP8 | link | source |
 * |---|---|---|---|
 * | nvidia-h100-80gb | 1,979 TF | NVLink 4, 450 GB/s | H100 datasheet (3,958 TF sparse; 900 GB/s bidirectional NVLink); AIC h100_sxm.yaml |
 * | nvidia-h100-pcie-80gb | 1,513 TF | PCIe Gen5, 64 GB/s | H100 datasheet PCIe column; AIC h100_pcie.yaml (no NVLink bridge assumed) |
 * | nvidia-h200-141gb | 1,979 TF | NVLink 4, 450 GB/s | H200 page; AIC h200_sxm.yaml |
 * | nvidia-b200-180gb | 4,500 TF | NVLink 5, 900 GB/s | HGX B200 page; AIC b200_sxm.yaml (AIC uses 7,700 GB/s HBM where NVIDIA's page says 8 TB/s: the page's figure is kept) |
 * | nvidia-a100-40gb / -80gb | none (Ampere: INT8 624 TOPS) | NVLink 3, 300 GB/s | A100 datasheet; AIC a100_sxm.yaml |
 * | nvidia-l40s-48gb | 733 TF | PCIe Gen4, 32 GB/s | L40S page (1,466 TF sparse); AIC l40s.yaml |
 * | nvidia-l4-24gb | 242 TF | PCIe Gen4, 32 GB/s | L4 page (485 TF sparse); AIC l4.yaml |
 * | nvidia-a10g-24gb | none (Ampere) | PCIe Gen4, 32 GB/s | AWS G5 (no NVLink); link speed is PCIe Gen4 x16's nominal figure, not an AWS-published one |
 * | amd-mi300x-192gb | 2,615 TF | Infinity Fabric, 7 links × 64 GB/s = 448 GB/s | MI300X page (2,614.9 TF FP8 dense; 128 GB/s bidirectional per link) — not cross-checked, AIC has no AMD systems |
 */
export const GPU_PROFILES: Readonly<Record<GpuType, GpuFacts>> = {
  "nvidia-h100-80gb": { id: "nvidia-h100-80gb", vendor: "nvidia", memoryGb: 80, hbmBandwidthGBs: 3350, bf16Tflops: 989, fp8Tflops: 1979, interconnect: { kind: "nvlink", bandwidthGBs: 450 }, gpusPerNode: 8, source: "https://www.nvidia.com/en-us/data-center/h100/" },
  "nvidia-h100-pcie-80gb": { id: "nvidia-h100-pcie-80gb", vendor: "nvidia", memoryGb: 80, hbmBandwidthGBs: 2000, bf16Tflops: 756, fp8Tflops: 1513, interconnect: { kind: "pcie", bandwidthGBs: 64 }, gpusPerNode: 8, source: "https://www.nvidia.com/en-us/data-center/h100/" },
  "nvidia-h200-141gb": { id: "nvidia-h200-141gb", vendor: "nvidia", memoryGb: 141, hbmBandwidthGBs: 4800, bf16Tflops: 989, fp8Tflops: 1979, interconnect: { kind: "nvlink", bandwidthGBs: 450 }, gpusPerNode: 8, source: "https://www.nvidia.com/en-us/data-center/h200/" },
  "nvidia-b200-180gb": { id: "nvidia-b200-180gb", vendor: "nvidia", memoryGb: 180, hbmBandwidthGBs: 8000, bf16Tflops: 2250, fp8Tflops: 4500, interconnect: { kind: "nvlink", bandwidthGBs: 900 }, gpusPerNode: 8, source: "https://www.nvidia.com/en-us/data-center/hgx/" },
  "nvidia-a100-40gb": { id: "nvidia-a100-40gb", vendor: "nvidia", memoryGb: 40, hbmBandwidthGBs: 1555, bf16Tflops: 312, fp8Tflops: null, interconnect: { kind: "nvlink", bandwidthGBs: 300 }, gpusPerNode: 8, source: "https://www.nvidia.com/en-us/data-center/a100/" },
  "nvidia-a100-80gb": { id: "nvidia-a100-80gb", vendor: "nvidia", memoryGb: 80, hbmBandwidthGBs: 2039, bf16Tflops: 312, fp8Tflops: null, interconnect: { kind: "nvlink", bandwidthGBs: 300 }, gpusPerNode: 8, source: "https://www.nvidia.com/en-us/data-center/a100/" },
  "nvidia-l40s-48gb": { id: "nvidia-l40s-48gb", vendor: "nvidia", memoryGb: 48, hbmBandwidthGBs: 864, bf16Tflops: 362, fp8Tflops: 733, interconnect: { kind: "pcie", bandwidthGBs: 32 }, gpusPerNode: 8, source: "https://www.nvidia.com/en-us/data-center/l40s/" },
  "nvidia-l4-24gb": { id: "nvidia-l4-24gb", vendor: "nvidia", memoryGb: 24, hbmBandwidthGBs: 300, bf16Tflops: 121, fp8Tflops: 242, interconnect: { kind: "pcie", bandwidthGBs: 32 }, gpusPerNode: 8, source: "https://www.nvidia.com/en-us/data-center/l4/" },
  "nvidia-a10g-24gb": { id: "nvidia-a10g-24gb", vendor: "nvidia", memoryGb: 24, hbmBandwidthGBs: 600, bf16Tflops: 125, fp8Tflops: null, interconnect: { kind: "pcie", bandwidthGBs: 32 }, gpusPerNode: 8, source: "https://aws.amazon.com/ec2/instance-types/g5/ (compute assumed equal to the A10's)" },
  "amd-mi300x-192gb": { id: "amd-mi300x-192gb", vendor: "amd", memoryGb: 192, hbmBandwidthGBs: 5300, bf16Tflops: 1307, fp8Tflops: 2615, interconnect: { kind: "infinity-fabric", bandwidthGBs: 448 }, gpusPerNode: 8, source: "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html" },
};

/** A catalogue entry as served at GET /v1/catalog/gpus. */
export const GpuCatalogEntry = z
  .object({
    id: z.enum(GPU_TYPES).describe("berth GPU id (`<vendor>-<model>-<memory>`)."),
    vendor: z.enum(["nvidia", "amd"]),
    memoryGb: z.number().describe("Device memory, GiB as the driver reports it."),
    hbmBandwidthGBs: z.number().describe("Peak memory bandwidth, GB/s."),
    bf16Tflops: z.number().describe("Peak dense BF16 tensor throughput, TFLOPS."),
    fp8Tflops: z.number().nullable().describe("Peak dense FP8 tensor throughput, TFLOPS; null without FP8 tensor cores."),
    interconnect: z.object({ kind: z.enum(["nvlink", "infinity-fabric", "pcie"]), bandwidthGBs: z.number().describe("Per GPU, per direction, GB/s.") }),
    gpusPerNode: counter().describe("GPUs in the usual server of this type."),
    source: z.string().max(LIMITS.text).describe("Where the figures come from."),
  })
  .meta({ id: "GpuCatalogEntry" });

export function isGpuType(value: string): value is GpuType {
  return (GPU_TYPES as readonly string[]).includes(value);
}

export function gpuProfile(id: GpuType): GpuFacts {
  return GPU_PROFILES[id];
}
