/**
 * Edit distance for "did you mean" suggestions: insertions, deletions, substitutions and swaps of
 * two neighbouring letters each cost 1 (a swap is the commonest typo: "histroy", "mdoel").
 */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    const prev = rows[i - 1]!;
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      cur[j] = d;
    }
    rows.push(cur);
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidate nearest to `word`, if it is near enough to be a plausible typo: by default within
 * 2 edits, or a third of the word's length for long words.
 */
export function closestName(word: string, candidates: readonly string[], maxDistance = Math.max(2, Math.floor(word.length / 3))): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return best !== undefined && bestD <= maxDistance ? best : undefined;
}
