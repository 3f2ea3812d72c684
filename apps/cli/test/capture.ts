import { main, type CliIO } from "../src/index.js";

/** Runs the CLI in-process and captures what it prints. */
export async function runCli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const io: CliIO = { out: (t) => void (out += t), err: (t) => void (err += t), isTTY: false };
  const code = await main(argv, io);
  return { code, out, err };
}
