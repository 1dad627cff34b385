// The GPU catalogue the perf model, the engine simulator and (later) sizing share: one entry per
// berth GPU id (`<vendor>-<model>-<memory>`), holding only vendor-published facts, each with its
// source. Efficiency factors are not facts of a GPU: they live in perf-model.ts with their evidence.

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
  /** Where the three numbers come from. */
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
 */
export const GPU_PROFILES: Readonly<Record<GpuType, GpuFacts>> = {
  "nvidia-h100-80gb": { id: "nvidia-h100-80gb", vendor: "nvidia", memoryGb: 80, hbmBandwidthGBs: 3350, bf16Tflops: 989, source: "https://www.nvidia.com/en-us/data-center/h100/" },
  "nvidia-h100-pcie-80gb": { id: "nvidia-h100-pcie-80gb", vendor: "nvidia", memoryGb: 80, hbmBandwidthGBs: 2000, bf16Tflops: 756, source: "https://www.nvidia.com/en-us/data-center/h100/" },
  "nvidia-h200-141gb": { id: "nvidia-h200-141gb", vendor: "nvidia", memoryGb: 141, hbmBandwidthGBs: 4800, bf16Tflops: 989, source: "https://www.nvidia.com/en-us/data-center/h200/" },
  "nvidia-b200-180gb": { id: "nvidia-b200-180gb", vendor: "nvidia", memoryGb: 180, hbmBandwidthGBs: 8000, bf16Tflops: 2250, source: "https://www.nvidia.com/en-us/data-center/hgx/" },
  "nvidia-a100-40gb": { id: "nvidia-a100-40gb", vendor: "nvidia", memoryGb: 40, hbmBandwidthGBs: 1555, bf16Tflops: 312, source: "https://www.nvidia.com/en-us/data-center/a100/" },
  "nvidia-a100-80gb": { id: "nvidia-a100-80gb", vendor: "nvidia", memoryGb: 80, hbmBandwidthGBs: 2039, bf16Tflops: 312, source: "https://www.nvidia.com/en-us/data-center/a100/" },
  "nvidia-l40s-48gb": { id: "nvidia-l40s-48gb", vendor: "nvidia", memoryGb: 48, hbmBandwidthGBs: 864, bf16Tflops: 362, source: "https://www.nvidia.com/en-us/data-center/l40s/" },
  "nvidia-l4-24gb": { id: "nvidia-l4-24gb", vendor: "nvidia", memoryGb: 24, hbmBandwidthGBs: 300, bf16Tflops: 121, source: "https://www.nvidia.com/en-us/data-center/l4/" },
  "nvidia-a10g-24gb": { id: "nvidia-a10g-24gb", vendor: "nvidia", memoryGb: 24, hbmBandwidthGBs: 600, bf16Tflops: 125, source: "https://aws.amazon.com/ec2/instance-types/g5/ (compute assumed equal to the A10's)" },
  "amd-mi300x-192gb": { id: "amd-mi300x-192gb", vendor: "amd", memoryGb: 192, hbmBandwidthGBs: 5300, bf16Tflops: 1307, source: "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html" },
};

export function isGpuType(value: string): value is GpuType {
  return (GPU_TYPES as readonly string[]).includes(value);
}

export function gpuProfile(id: GpuType): GpuFacts {
  return GPU_PROFILES[id];
}
