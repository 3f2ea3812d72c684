/**
 * The page's HTML. No inline script or style (the CSP forbids both), nothing loaded from outside;
 * the token rides on the asset URLs because every request, assets too, must carry it. The
 * server only ever passes a token of URL-safe characters (http-guard.ts checkToken), so it
 * cannot break out of the attribute.
 */
export function indexHtml(token: string): string {
  const q = `?token=${encodeURIComponent(token)}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pbrl: which joint answer is better?</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/app.css${q}">
</head>
<body>
<header>
  <h1>Which joint answer is better?</h1>
  <label class="name">Your name (<kbd>n</kbd>) <input id="name" autocomplete="off" maxlength="64" spellcheck="false"></label>
  <div class="run"><span id="run"></span> <span id="progress"></span> <span id="agreement"></span></div>
  <figure class="curve">
    <svg id="curve" viewBox="0 0 200 50" width="200" height="50" role="img" aria-label="evaluation reward by round"><polyline id="curve-line" points=""></polyline></svg>
    <figcaption id="curve-label">no evaluation yet</figcaption>
  </figure>
</header>
<main>
  <p id="message" role="status" aria-live="polite"></p>
  <section id="done" hidden><p>nothing to label now</p><p class="hint">this page checks again every few seconds</p></section>
  <section id="finished" hidden><p>this run's labelling is over: thank you</p><p class="hint">the run asks for no more picks; you can close this page</p></section>
  <section id="comparison" hidden>
    <p id="item" class="item"></p>
    <div id="prompts" class="prompts"></div>
    <div class="answers">
      <article id="left" class="answer"><h2>Left <kbd>1</kbd></h2><div class="parts"></div></article>
      <article id="right" class="answer"><h2>Right <kbd>2</kbd></h2><div class="parts"></div></article>
    </div>
    <label for="rationale" class="rationale-label">Why (optional: <kbd>r</kbd> to write, <kbd>Esc</kbd> to leave the box)</label>
    <textarea id="rationale" maxlength="8000" rows="3"></textarea>
    <div class="keys">
      <button type="button" data-verdict="left"><kbd>1</kbd> left is better</button>
      <button type="button" data-verdict="right"><kbd>2</kbd> right is better</button>
      <button type="button" data-verdict="tie"><kbd>3</kbd> tie</button>
      <button type="button" data-verdict="both_bad"><kbd>4</kbd> both bad</button>
      <button type="button" data-skip><kbd>s</kbd> skip</button>
    </div>
  </section>
</main>
<script src="/app.js${q}"></script>
</body>
</html>
`;
}
