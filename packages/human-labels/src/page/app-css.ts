/** The page's style sheet, served at /app.css. */
export const APP_CSS = `
:root { color-scheme: light dark; --line: #8884; --accent: #2563eb; font-family: system-ui, sans-serif; }
body { margin: 0; line-height: 1.45; }
header { display: flex; flex-wrap: wrap; gap: 0.5rem 1.5rem; align-items: center; padding: 0.6rem 1rem; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.15rem; margin: 0; }
h2 { font-size: 1rem; margin: 0 0 0.4rem; }
h3 { font-size: 0.85rem; margin: 0.4rem 0 0.2rem; text-transform: uppercase; letter-spacing: 0.04em; opacity: 0.75; }
.name input { font: inherit; padding: 0.15rem 0.4rem; width: 10rem; }
.run { font-size: 0.9rem; opacity: 0.85; }
.curve { margin: 0 0 0 auto; display: flex; align-items: center; gap: 0.5rem; font-size: 0.8rem; }
#curve { border: 1px solid var(--line); border-radius: 4px; }
#curve-line { fill: none; stroke: var(--accent); stroke-width: 1.5; }
main { padding: 0.8rem 1rem 2rem; max-width: 110rem; margin: 0 auto; }
#message { min-height: 1.4em; margin: 0 0 0.5rem; font-weight: 600; }
#message.ok { color: #15803d; }
#message.warn { color: #b45309; }
#message.error { color: #b91c1c; }
#done, #finished { font-size: 1.2rem; text-align: center; padding: 3rem 0; }
.hint { font-size: 0.85rem; opacity: 0.7; }
.item { margin: 0 0 0.4rem; font-size: 0.85rem; opacity: 0.75; }
.prompts { border: 1px solid var(--line); border-radius: 6px; padding: 0.4rem 0.8rem; margin-bottom: 0.8rem; }
.answers { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.answer { border: 1px solid var(--line); border-radius: 6px; padding: 0.6rem 0.8rem; min-width: 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; font: 0.9rem/1.4 ui-monospace, monospace; }
.rationale-label { display: block; margin: 0.8rem 0 0.2rem; font-size: 0.9rem; }
textarea { width: 100%; box-sizing: border-box; font: inherit; }
.keys { display: flex; flex-wrap: wrap; gap: 0.5rem; margin-top: 0.6rem; }
button { font: inherit; padding: 0.35rem 0.8rem; cursor: pointer; }
kbd { border: 1px solid var(--line); border-radius: 3px; padding: 0 0.3rem; font-size: 0.85em; }
`;
