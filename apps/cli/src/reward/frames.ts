/** The first "file:line:column" of a module in a stack: where a module's top-level code threw. */
export function userFrame(stack: string | undefined): string | undefined {
  return stack
    ?.split("\n")
    .map((l) => /\(?file:\/\/([^\s()]+:\d+:\d+)\)?\s*$/.exec(l)?.[1])
    .map((f) => (f !== undefined ? decodeURI(f) : undefined))
    .find((f) => f !== undefined);
}
