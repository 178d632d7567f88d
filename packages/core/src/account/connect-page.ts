/**
 * The connect link's page (GET {base_url}/connect#token=...): a form that completes the link by
 * POSTing JSON to api-complete-connect-link beside it. Self-contained — no external asset, no
 * framework — and served under a strict Content-Security-Policy: only this script and this style run
 * (by their SHA-256), the page may fetch only its own origin, and it may not be framed. The token
 * travels in the URL's fragment, which a browser never sends, so it reaches no server or proxy log
 * and no Referer; the script reads it from there.
 */

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1b1f24}
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem;font-weight:600}
input{box-sizing:border-box;width:100%;padding:.5rem;font:inherit;border:1px solid #8c959f;border-radius:4px}
button{margin-top:1.2rem;padding:.6rem 1.2rem;font:inherit;border:0;border-radius:4px;background:#0a66c2;color:#fff;cursor:pointer}
button:disabled{opacity:.6}#result{margin-top:1.2rem;padding:.8rem;border-radius:4px}
.ok{background:#dafbe1}.err{background:#ffebe9}code{word-break:break-all}[hidden]{display:none}
`.trim();

const SCRIPT = `
(function(){
var form=document.getElementById('connect'),out=document.getElementById('result'),tokenRow=document.getElementById('token-row');
var m=/(?:^#|&)token=([^&]+)/.exec(location.hash);var tokenField=form.elements.token;
if(m){tokenField.value=decodeURIComponent(m[1]);tokenRow.hidden=true;}
function show(ok,nodes){out.hidden=false;out.className=ok?'ok':'err';out.textContent='';nodes.forEach(function(n){out.appendChild(typeof n==='string'?document.createTextNode(n):n);});}
form.addEventListener('submit',function(e){
e.preventDefault();var f=form.elements,body={token:f.token.value.trim(),name:f.name.value,linkedin_url:f.linkedin_url.value.trim()};
if(f.title.value.trim())body.title=f.title.value;if(f.company.value.trim())body.company=f.company.value;
var button=form.querySelector('button');button.disabled=true;
fetch('api-complete-connect-link',{method:'POST',headers:{'Content-Type':'application/json'},body:JSON.stringify(body)})
.then(function(r){return r.json();}).then(function(r){
if(r.success){var id=document.createElement('code');id.textContent=r.user_id;form.hidden=true;
show(true,[r.reconnected?'Connected again. ':'Connected. ','Your user id is ',id,'.']);}
else{button.disabled=false;show(false,[String(r.error)]);}
}).catch(function(){button.disabled=false;show(false,['The server could not be reached; try again.']);});
});
})();
`.trim();

const HTML = (styleTag: string, scriptTag: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>Connect your profile</title>${styleTag}</head>
<body><h1>Connect your profile</h1>
<p>You were sent this link so messages can be sent on your behalf. Enter your details to connect.</p>
<form id="connect">
<div id="token-row"><label for="token">Link token</label><input id="token" name="token" required autocomplete="off"></div>
<label for="name">Your name</label><input id="name" name="name" required maxlength="200" autocomplete="name">
<label for="linkedin_url">Your LinkedIn profile</label><input id="linkedin_url" name="linkedin_url" required type="url" placeholder="https://www.linkedin.com/in/your-name">
<label for="title">Job title (optional)</label><input id="title" name="title" maxlength="300" autocomplete="organization-title">
<label for="company">Company (optional)</label><input id="company" name="company" maxlength="300" autocomplete="organization">
<button type="submit">Connect</button></form>
<div id="result" role="status" hidden></div>${scriptTag}</body></html>
`;

async function sha256Base64(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  let s = '';
  for (const b of digest) s += String.fromCharCode(b);
  return btoa(s);
}

export interface ConnectPage {
  body: string;
  headers: Record<string, string>;
}

let built: Promise<ConnectPage> | undefined;

async function build(): Promise<ConnectPage> {
  const [styleHash, scriptHash] = await Promise.all([sha256Base64(STYLE), sha256Base64(SCRIPT)]);
  const csp = [
    "default-src 'none'",
    `script-src 'sha256-${scriptHash}'`,
    `style-src 'sha256-${styleHash}'`,
    "connect-src 'self'",
    "form-action 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return {
    body: HTML(`<style>${STYLE}</style>`, `<script>${SCRIPT}</script>`),
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': csp,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'X-Frame-Options': 'DENY',
      // The same bytes for every link (the token is in the fragment), so it may be cached.
      'Cache-Control': 'public, max-age=3600',
    },
  };
}

/** The page, built once per process (its CSP names the digests of its own script and style). */
export function serveConnectPage(): Promise<ConnectPage> {
  built ??= build();
  return built;
}
