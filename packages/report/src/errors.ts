/** A report that cannot be made: no run at the path, or an --out file pbrl must not replace. The CLI maps it to exit code 2 (bad input). */
export class ReportError extends Error {
  override name = "ReportError";
}
