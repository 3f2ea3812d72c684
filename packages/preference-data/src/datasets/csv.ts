/**
 * CSV (RFC 4180) for datasets: a header row names the columns, every value stays a string (no
 * type guessing, so "007" and "1e3" reach the formatters as written). Quoted fields may hold
 * commas, doubled quotes and line breaks; records end with CRLF, LF or CR.
 */

/** One record and the line it starts on (1-based), for messages. */
export interface CsvRecord {
  line: number;
  fields: string[];
}

/** Malformed CSV; `line` is where the problem is (1-based). */
export class CsvSyntaxError extends Error {
  override name = "CsvSyntaxError";
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

const lineBreaks = (s: string): number => s.match(/\r\n|\r|\n/g)?.length ?? 0;

/**
 * Splits `text` into records. Blank lines between records are skipped (as pandas does). A quote
 * inside an unquoted field is kept as a literal character (Python's csv module does the same);
 * text after a closing quote, or a quote that is never closed, is an error naming the line.
 */
export function parseCsv(text: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  const n = text.length;
  let i = 0;
  let line = 1;
  const endOfLine = (): void => {
    // CRLF is one line break, as are a lone LF and a lone CR
    if (text[i] === "\r" && text[i + 1] === "\n") i += 2;
    else i++;
    line++;
  };
  while (i < n) {
    if (text[i] === "\n" || text[i] === "\r") {
      endOfLine();
      continue;
    }
    const start = line;
    const fields: string[] = [];
    for (;;) {
      if (text[i] === '"') {
        const opened = line;
        let value = "";
        i++;
        for (;;) {
          const q = text.indexOf('"', i);
          if (q === -1)
            throw new CsvSyntaxError(
              opened,
              `line ${opened}: a quoted field starts here and is never closed; close it with " (and write a quote inside it as "")`,
            );
          line += lineBreaks(text.slice(i, q));
          value += text.slice(i, q);
          i = q + 1;
          if (text[i] !== '"') break;
          value += '"';
          i++;
        }
        const next = text[i];
        if (next !== undefined && next !== "," && next !== "\n" && next !== "\r") {
          throw new CsvSyntaxError(
            line,
            `line ${line}: ${JSON.stringify(next)} follows the closing quote of a field; a field that holds quotes must be quoted as a whole, with each quote doubled ("say ""hi""")`,
          );
        }
        fields.push(value);
      } else {
        let j = i;
        // Stryker disable next-line EqualityOperator: with j <= n, j stops at n + 1 (text[n] is undefined), and slice(i, n + 1) is slice(i, n); i past n ends the text as i = n does
        while (j < n && text[j] !== "," && text[j] !== "\n" && text[j] !== "\r") j++;
        fields.push(text.slice(i, j));
        i = j;
      }
      if (text[i] !== ",") break;
      i++;
    }
    // The record ends at a line break (the loop's first step passes it) or at the end of the text.
    records.push({ line: start, fields });
  }
  return records;
}

/**
 * Rows of a CSV text as objects keyed by the header row. An empty header cell becomes
 * "Unnamed: <index>" (pandas' name for the index column that DataFrame.to_csv writes); a repeated
 * column name, or a row whose field count differs from the header's, is an error naming the line.
 */
export function csvRows(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  if (header === undefined) throw new CsvSyntaxError(1, "the file is empty; its first line must name the columns (e.g. id,prompt)");
  const names = header.fields.map((f, k) => (f === "" ? `Unnamed: ${k}` : f));
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name))
      throw new CsvSyntaxError(header.line, `line ${header.line}: the header names column ${JSON.stringify(name)} twice; column names must be unique`);
    seen.add(name);
  }
  return rows.map((row) => {
    if (row.fields.length !== names.length) {
      throw new CsvSyntaxError(
        row.line,
        `line ${row.line} has ${row.fields.length} field${row.fields.length === 1 ? "" : "s"}, the header (line ${header.line}) has ${names.length}; quote a field that contains commas or line breaks ("a, b")`,
      );
    }
    return Object.fromEntries(names.map((name, k) => [name, row.fields[k]!]));
  });
}
