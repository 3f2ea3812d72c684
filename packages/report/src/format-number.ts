/**
 * Fixed number formatting, so a report of the same run is the same bytes every time: four
 * significant digits with trailing zeros trimmed, exponential notation outside [1e-3, 1e6).
 */
export function formatNumber(x: number | null | undefined): string {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  if (x === Infinity) return "∞";
  if (x === -Infinity) return "-∞";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e6 || a < 1e-3) return trimExponential(x.toExponential(3));
  const decimals = Math.max(0, 3 - Math.floor(Math.log10(a)));
  return trimZeros(x.toFixed(decimals));
}

/** A share in [0, 1] as a percentage with one decimal. */
export function formatPercent(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return "—";
  return `${(x * 100).toFixed(1)}%`;
}

/** Seconds as `1 h 02 min`, `3 min 05 s` or `12.3 s`. */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return "—";
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  return h > 0 ? `${h} h ${String(m).padStart(2, "0")} min` : `${m} min ${String(rest).padStart(2, "0")} s`;
}

function trimZeros(s: string): string {
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

function trimExponential(s: string): string {
  const [mantissa, exponent] = s.split("e") as [string, string];
  return `${trimZeros(mantissa)}e${exponent.replace("+", "")}`;
}
