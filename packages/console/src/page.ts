/**
 * The console's one HTML page. Every view is drawn by the script (routes live in the URL's
 * fragment, so the server serves this same page for `/` only). The page carries no inline script
 * or style, so the server's Content-Security-Policy can forbid both.
 */

export const CONSOLE_SCRIPT_PATH = '/console/app.js';
export const CONSOLE_STYLES_PATH = '/console/app.css';

/** The HTML of `/`. */
export function consolePage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Styx console</title>
<link rel="stylesheet" href="${CONSOLE_STYLES_PATH}">
<script type="module" src="${CONSOLE_SCRIPT_PATH}"></script>
</head>
<body><div id="app"><noscript>The Styx console needs JavaScript.</noscript></div></body>
</html>
`;
}
