/** The machine a bench ran on: CPU model and features, cores, memory, load. */
import { readFileSync } from "node:fs";
import * as os from "node:os";

/** The /proc/cpuinfo flags that decide which kernels libtorch (oneDNN), OpenBLAS and PyTorch can use. */
export const CPU_FLAGS = ["avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"] as const;
export type CpuFlag = (typeof CPU_FLAGS)[number];

export interface MachineInfo {
  cpus: number;
  cpu_model: string;
  /** Each of {@link CPU_FLAGS}, from /proc/cpuinfo; null where it cannot be read (not Linux). */
  cpu_flags: Record<CpuFlag, boolean> | null;
  total_memory_gb: number;
  node_version: string;
  platform: string;
  arch: string;
  /** os.loadavg() (1, 5, 15 min) when the bench started: other work on the machine skews the rates. */
  load_average_at_start: number[];
  load_average_at_end?: number[];
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function loadAverage(): number[] {
  return os.loadavg().map((x) => round(x, 2));
}

/** The flags line of the first processor in a /proc/cpuinfo text, as the named flags. */
export function parseCpuFlags(cpuinfo: string): Record<CpuFlag, boolean> | null {
  const line = /^flags\s*:(.*)$/m.exec(cpuinfo)?.[1];
  if (line === undefined) return null;
  const present = new Set(line.trim().split(/\s+/));
  return Object.fromEntries(CPU_FLAGS.map((f) => [f, present.has(f)])) as Record<CpuFlag, boolean>;
}

function cpuFlags(): Record<CpuFlag, boolean> | null {
  try {
    return parseCpuFlags(readFileSync("/proc/cpuinfo", "utf8"));
  } catch {
    return null;
  }
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpu_model: cpus[0]?.model.trim() ?? "unknown",
    cpu_flags: cpuFlags(),
    total_memory_gb: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node_version: process.version,
    platform: process.platform,
    arch: process.arch,
    load_average_at_start: loadAverage(),
  };
}

/** The flags present, for the table's machine line ("avx2 fma avx512f …"); "" when unknown. */
export function describeCpuFlags(flags: MachineInfo["cpu_flags"]): string {
  if (flags === null) return "";
  return CPU_FLAGS.filter((f) => flags[f]).join(" ");
}
