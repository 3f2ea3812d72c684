/**
 * config.json's floats that hold whole numbers. JSON.parse reads "15.0" as 15, and JSON.stringify
 * writes it back as "15" — which transformers 5's strict config classes reject for a float field
 * (Gemma3TextConfig's final_logit_softcapping: "expected float, got int"), so a checkpoint pbrl
 * saved would not load. pbrl notes where the file it read wrote such a number with a decimal
 * point or an exponent, and writes those back as floats ("15.0").
 */

/** Paths ("final_logit_softcapping", "rope_parameters/full_attention/factor", "long_factor/3") of whole numbers written as floats. */
export function integralFloatPaths(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++;
  };
  const str = (): string => {
    const start = i;
    i++; // opening quote
    while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (path: string): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      while (text[i] !== "}") {
        const key = str();
        ws();
        i++; // colon
        value(path === "" ? key : `${path}/${key}`);
        ws();
        if (text[i] === ",") i++;
        ws();
      }
      i++;
    } else if (c === "[") {
      i++;
      ws();
      for (let k = 0; text[i] !== "]"; k++) {
        value(path === "" ? String(k) : `${path}/${k}`);
        ws();
        if (text[i] === ",") i++;
        ws();
      }
      i++;
    } else if (c === '"') {
      str();
    } else {
      const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?|^true|^false|^null/.exec(text.slice(i, i + 64))!;
      i += m[0].length;
      if ((m[1] !== undefined || m[2] !== undefined) && Number.isInteger(Number(m[0]))) out.push(path);
    }
  };
  value("");
  return out;
}

/** JSON.stringify(value, null, 2), with the numbers at `floats` written as floats ("15.0"). */
export function stringifyConfigJson(value: unknown, floats: ReadonlySet<string>): string {
  const write = (v: unknown, path: string, indent: string): string => {
    // 1e+21 is a float to Python's json already.
    if (typeof v === "number" && floats.has(path) && Number.isInteger(v) && !String(v).includes("e")) return `${v}.0`;
    if (Array.isArray(v)) {
      if (v.length === 0) return "[]";
      const inner = indent + "  ";
      return `[\n${v.map((x, k) => inner + write(x ?? null, join(path, String(k)), inner)).join(",\n")}\n${indent}]`;
    }
    if (typeof v === "object" && v !== null) {
      const entries = Object.entries(v).filter(([, x]) => x !== undefined);
      if (entries.length === 0) return "{}";
      const inner = indent + "  ";
      return `{\n${entries.map(([k, x]) => `${inner}${JSON.stringify(k)}: ${write(x, join(path, k), inner)}`).join(",\n")}\n${indent}}`;
    }
    return JSON.stringify(v) ?? "null";
  };
  return write(value, "", "");
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}/${key}`;
}
