/**
 * Escapes text for HTML and SVG, in element content and in quoted attribute values alike, so
 * user text (completions, prompts, config values, metric names) always renders as text.
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
